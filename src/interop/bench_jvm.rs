//! Kafka's side of `seglog bench --kafka`: the harness's `bench` command in one
//! long-lived JVM ([`BenchJvm`]), and the side by side ([`run`]) that alternates
//! its rounds with seglog's (`crate::bench::kafka`, which holds the method and the
//! arithmetic).
//!
//! The JVM reads one command a line and answers each with one JSON line
//! (`interop/kafka/src/main/java/seglog/interop/Bench.java` documents them):
//! `workdir DIR`, `prepare-log FILE` (the log fixture's batches, written by
//! seglog), `prepare-clean DIR` (the compaction fixture's `.log` files, written by
//! seglog), `round WORKLOAD`, `quit`.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use seglog::error::{Error, Result};

use super::harness::{self, Harness};
use crate::bench::kafka::{
    parse_round, KafkaRow, Round, SeglogSide, Workload, KAFKA_VERSION, WARMUP_ROUNDS,
};
use crate::bench::LogFixture;

/// Bytes of the JVM's stderr kept for an error message.
const STDERR_KEPT_BYTES: usize = 4096;
/// How long the JVM may take to exit after its stdin closes.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// What to run.
#[derive(Debug, Clone)]
pub struct KafkaBenchOptions {
    /// The log fixture: records, and records to a batch.
    pub records: usize,
    pub batch_records: usize,
    /// Distinct keys of the compaction fixture.
    pub compact_keys: u64,
    /// Timed rounds of each side, per workload.
    pub iterations: usize,
    pub workloads: Vec<Workload>,
    /// An existing directory to work in.
    pub root: PathBuf,
}

/// The side by side: `seglog bench --kafka`'s added `kafka` field.
#[derive(Debug, Clone, Serialize)]
pub struct KafkaReport {
    pub kafka_version: &'static str,
    /// What the ratios are.
    pub metric: &'static str,
    pub iterations: usize,
    /// Untimed rounds of each side before the timed ones, per workload.
    pub warmup_rounds: usize,
    pub workloads: Vec<KafkaRow>,
}

/// Runs every workload of `options`, seglog's and Kafka's rounds alternately.
/// Without `java` or `mvn`, an error saying which is missing.
pub fn run(options: &KafkaBenchOptions) -> Result<KafkaReport> {
    if options.iterations == 0 {
        return Err(Error::InvalidArgument(
            "iterations must be at least 1".into(),
        ));
    }
    if let Some(reason) = harness::unavailable() {
        return Err(Error::InvalidArgument(format!(
            "Kafka's side cannot run: {reason}"
        )));
    }
    eprintln!("seglog bench --kafka: building the Java harness (Maven)");
    let harness = Harness::build().map_err(Error::InvalidArgument)?;
    let needs_log = options.workloads.iter().any(|w| *w != Workload::Compact);
    let fixture = if needs_log {
        eprintln!("seglog bench --kafka: building {} records", options.records);
        LogFixture::new(options.records, options.batch_records)
    } else {
        LogFixture::new(0, 1)
    };
    let mut seglog = SeglogSide::new(&options.root, &fixture);
    let mut kafka = BenchJvm::start(&harness)?;
    kafka.ask("workdir", &options.root.join("kafka"))?;
    if needs_log {
        let batches = options.root.join("kafka-batches.bin");
        seglog.prepare_log(&batches)?;
        let reply = kafka.ask("prepare-log", &batches)?;
        let records = reply.get("records").and_then(serde_json::Value::as_u64);
        if records != Some(fixture.records() as u64) {
            return Err(Error::InvalidArgument(format!(
                "Kafka loaded {records:?} records of the fixture's {}",
                fixture.records()
            )));
        }
    }
    if options.workloads.contains(&Workload::Compact) {
        eprintln!(
            "seglog bench --kafka: writing the compaction fixture ({} keys)",
            options.compact_keys
        );
        let dir = seglog.prepare_compaction(options.compact_keys)?;
        kafka.ask("prepare-clean", &dir)?;
    }
    let mut rows = Vec::with_capacity(options.workloads.len());
    for &workload in &options.workloads {
        // Untimed rounds of each, then the timed rounds, the first side swapping
        // every round.
        for _ in 0..WARMUP_ROUNDS {
            seglog.round(workload)?;
            kafka.round(workload)?;
        }
        let mut seglog_rounds = Vec::with_capacity(options.iterations);
        let mut kafka_rounds = Vec::with_capacity(options.iterations);
        for round in 0..options.iterations {
            if round % 2 == 0 {
                seglog_rounds.push(seglog.round(workload)?);
                kafka_rounds.push(kafka.round(workload)?);
            } else {
                kafka_rounds.push(kafka.round(workload)?);
                seglog_rounds.push(seglog.round(workload)?);
            }
        }
        let row = KafkaRow::new(workload, &seglog_rounds, &kafka_rounds)?;
        eprintln!(
            "seglog bench --kafka: {:<14} seglog {:>9.2} ms  kafka {:>9.2} ms  ratio {:.2}x ({:.2}-{:.2})",
            workload.name(),
            row.seglog_median_ms,
            row.kafka_median_ms,
            row.ratio,
            row.ratio_min,
            row.ratio_max
        );
        rows.push(row);
    }
    kafka.quit()?;
    Ok(KafkaReport {
        kafka_version: KAFKA_VERSION,
        metric: "median of the per-round ratios Kafka time / seglog time (above 1: seglog is faster), with their min..max",
        iterations: options.iterations,
        warmup_rounds: WARMUP_ROUNDS,
        workloads: rows,
    })
}

/// The harness's `bench` command, running.
#[derive(Debug)]
pub struct BenchJvm {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The tail of the JVM's stderr, read by a thread of its own (so that a full
    /// pipe never blocks it).
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl BenchJvm {
    /// Starts `java ... seglog.interop.Main bench`.
    pub fn start(harness: &Harness) -> Result<BenchJvm> {
        let mut child = harness
            .command(&["bench"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::InvalidArgument(format!("cannot start java: {e}")))?;
        let (Some(stdin), Some(stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Error::InvalidArgument(
                "the JVM was started without its pipes".into(),
            ));
        };
        let kept = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&kept);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 1024];
            while let Ok(n) = stderr.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                if let Ok(mut kept) = sink.lock() {
                    kept.extend_from_slice(&chunk[..n]);
                    let excess = kept.len().saturating_sub(STDERR_KEPT_BYTES);
                    kept.drain(..excess);
                }
            }
        });
        Ok(BenchJvm {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            stderr: kept,
        })
    }

    /// Sends `verb path` and returns the reply; an error reply is an error.
    pub fn ask(&mut self, verb: &str, path: &Path) -> Result<serde_json::Value> {
        let path = path
            .to_str()
            .filter(|p| !p.contains(['\n', '\r']))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{}: the Kafka harness takes paths of UTF-8 text on one line",
                    path.display()
                ))
            })?;
        let line = self.exchange(&format!("{verb} {path}"))?;
        let value: serde_json::Value = serde_json::from_str(&line).map_err(|e| {
            Error::InvalidArgument(format!("Kafka's bench replied `{line}` to {verb}: {e}"))
        })?;
        if let Some(error) = value.get("error") {
            return Err(Error::InvalidArgument(format!(
                "Kafka's bench failed at `{verb}`: {}",
                error.as_str().unwrap_or_default()
            )));
        }
        Ok(value)
    }

    /// One timed round of `workload`.
    pub fn round(&mut self, workload: Workload) -> Result<Round> {
        let line = self.exchange(&format!("round {}", workload.kafka_round()))?;
        parse_round(&line, workload)
    }

    /// Ends the JVM: `quit`, then waits for it to exit.
    pub fn quit(mut self) -> Result<()> {
        if let Some(mut stdin) = self.stdin.take() {
            // A JVM that already exited cannot read it; its status says why.
            let _ = writeln!(stdin, "quit");
        }
        let status = self.wait_exit()?;
        if !status.success() {
            return Err(self.ended(&format!("exited {status} at quit")));
        }
        Ok(())
    }

    /// Writes one command line and reads one reply line.
    fn exchange(&mut self, command: &str) -> Result<String> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("the Kafka harness was ended".into()))?;
        if let Err(e) = writeln!(stdin, "{command}").and_then(|()| stdin.flush()) {
            return Err(self.ended(&format!("cannot take `{command}` ({e})")));
        }
        let mut reply = String::new();
        match self.stdout.read_line(&mut reply) {
            Ok(0) => Err(self.ended(&format!("ended before answering `{command}`"))),
            Ok(_) => Ok(reply.trim_end().to_string()),
            Err(e) => Err(self.ended(&format!("cannot answer `{command}` ({e})"))),
        }
    }

    /// The error of a JVM that failed: what happened and its stderr's tail.
    fn ended(&mut self, what: &str) -> Error {
        let status = self.wait_exit().ok();
        let stderr = self
            .stderr
            .lock()
            .map(|kept| String::from_utf8_lossy(&kept).into_owned())
            .unwrap_or_default();
        let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
        Error::InvalidArgument(format!(
            "Kafka's bench (java seglog.interop.Main bench) {what}{}: {}",
            status.map_or_else(String::new, |s| format!(", {s}")),
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ))
    }

    /// Waits up to [`EXIT_WAIT`] for the JVM to exit, then kills it.
    fn wait_exit(&mut self) -> Result<std::process::ExitStatus> {
        drop(self.stdin.take());
        let started = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if started.elapsed() < EXIT_WAIT => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    return self
                        .child
                        .wait()
                        .map_err(|e| Error::io("the Kafka harness's JVM", e));
                }
                Err(e) => return Err(Error::io("the Kafka harness's JVM", e)),
            }
        }
    }
}

impl Drop for BenchJvm {
    fn drop(&mut self) {
        // Closing stdin ends the harness's command loop; a JVM still running after
        // that is killed.
        let _ = self.wait_exit();
    }
}

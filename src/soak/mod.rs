//! `seglog soak`: producers, consumers, the cleaner and retention threads of a
//! `LogManager` on the real file system for a given
//! time, and (with `kill`) a child process SIGKILLed at seeded random moments,
//! reopened and checked against what it acknowledged, round after round
//! (docs/verification.md, "The soak").
//!
//! * [`workload`]: the work (child side): threads, events, consumer checks;
//! * [`ledger`]: the acknowledged records and the checks after a reopen (pure);
//! * [`report`]: checks, latency percentiles, the report.

pub mod ledger;
pub mod report;
pub mod workload;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use seglog::error::{Error, Result};
use seglog::fs::{FileSystem, StdFs};
use seglog::manager::LogManager;
use seglog::{Clock, SystemClock};

use ledger::{digest, Found, PartitionLedger, Written};
use report::{Checks, Latency, SoakReport};
use workload::{Event, MemorySink, Rng, WorkOptions, WorkStats};

/// The hidden subcommand the parent runs as its child.
pub const CHILD_COMMAND: &str = "soak-child";

/// What a soak runs.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    pub dir: PathBuf,
    pub partitions: u32,
    pub seconds: f64,
    pub kill: bool,
    pub seed: u64,
    pub keys: u32,
    /// Test builds only: a broken cleaning swap in the workers (the soak's teeth).
    pub variant: Option<String>,
    /// The binary to run as the child (`--kill`): this one.
    pub exe: PathBuf,
}

/// The parent's state over the rounds.
#[derive(Debug, Default)]
struct Soak {
    ledgers: Vec<PartitionLedger>,
    checks: Checks,
    latencies_ns: Vec<u64>,
    records_appended: u64,
    records_acknowledged: u64,
    totals: WorkStats,
    work_seconds: f64,
}

impl Soak {
    fn apply(&mut self, event: Event, last_stats: &mut WorkStats) {
        match event {
            Event::Intent { partition, batch } => {
                self.records_appended += batch.len() as u64;
                if let Some(ledger) = self.ledgers.get_mut(partition as usize) {
                    ledger.intent(batch);
                }
            }
            Event::Ack {
                partition,
                base,
                last,
                latency_ns,
            } => {
                self.latencies_ns.push(latency_ns);
                self.records_acknowledged += u64::try_from(last - base + 1).unwrap_or(0);
                if let Some(ledger) = self.ledgers.get_mut(partition as usize) {
                    ledger.ack(base, last, &mut self.checks);
                }
            }
            Event::Stats(stats) => *last_stats = stats,
        }
    }

    /// Adds a round's last reported counters.
    fn end_round(&mut self, stats: WorkStats) {
        self.totals.records_read += stats.records_read;
        self.totals.cleanings += stats.cleanings;
        self.totals.retention_deletions += stats.retention_deletions;
        self.totals.background_errors += stats.background_errors;
        for (name, (count, failures, first)) in stats.checks {
            self.checks.merge(&name, count, failures, first);
        }
    }

    /// Reopens every partition (recovery runs), checks it against the ledger,
    /// closes the manager cleanly. An error that stops the reopen is a failed
    /// `reopen` check.
    fn check_reopened(&mut self, dir: &Path, partitions: u32) -> bool {
        self.reopen(dir, partitions, false)
    }

    /// [`Soak::check_reopened`], or with `baseline` (before the first round) the
    /// ledgers start from what the directory holds.
    fn reopen(&mut self, dir: &Path, partitions: u32, baseline: bool) -> bool {
        let result = reopen_and_read(dir, partitions);
        let ok = result.is_ok();
        self.checks.record("reopen", ok, || {
            result
                .as_ref()
                .map_or_else(ToString::to_string, |_| String::new())
        });
        let Ok(found) = result else { return false };
        for (i, (start, next, records)) in found.into_iter().enumerate() {
            let name = format!("{}-{i}", workload::TOPIC);
            if baseline {
                self.ledgers[i].adopt(start, next, &records);
            } else {
                self.ledgers[i].check_reopened(&name, start, next, &records, &mut self.checks);
            }
        }
        true
    }
}

/// Opens the soak's partitions, reads each whole, closes: per partition
/// `(log_start_offset, next_offset, records)`.
fn reopen_and_read(dir: &Path, partitions: u32) -> Result<Vec<(i64, i64, Vec<Found>)>> {
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs::new());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let manager = LogManager::new(fs, dir, workload::manager_config(0), clock)?;
    let opened = workload::open_partitions(&manager, dir, partitions)?;
    let mut out = Vec::new();
    for partition in opened {
        let (start, next) = (partition.log_start_offset(), partition.next_offset());
        let mut records = Vec::new();
        let mut position = start;
        while position < next {
            let batch = partition.read(position, 1 << 20)?;
            let Some(last) = batch.last() else { break };
            position = last.offset + 1;
            records.extend(batch.into_iter().map(|r| Found {
                offset: r.offset,
                record: Written {
                    key: String::from_utf8_lossy(r.key.as_deref().unwrap_or_default()).into_owned(),
                    digest: r.value.as_deref().map(digest),
                },
            }));
        }
        out.push((start, next, records));
    }
    manager.close()?;
    Ok(out)
}

/// Runs the soak and returns its report (`passed` false on any failed check).
pub fn run(options: &SoakOptions) -> Result<SoakReport> {
    if options.partitions == 0 {
        return Err(Error::InvalidArgument(
            "--partitions must be at least 1".into(),
        ));
    }
    StdFs::new()
        .create_dir_all(&options.dir)
        .map_err(|e| Error::io(&options.dir, e))?;
    let mut soak = Soak {
        ledgers: vec![PartitionLedger::default(); options.partitions as usize],
        ..Soak::default()
    };
    // The directory may hold an earlier soak's logs: start from what they hold.
    if !soak.reopen(&options.dir, options.partitions, true) {
        return Ok(soak.report(options, 0, 0, Duration::ZERO));
    }
    let started = Instant::now();
    let total = Duration::from_secs_f64(options.seconds.max(0.0));
    let mut rng = Rng::new(options.seed);
    let (mut rounds, mut kills) = (0u64, 0u64);
    loop {
        let remaining = total.saturating_sub(started.elapsed());
        if remaining.is_zero() && rounds > 0 {
            break;
        }
        let work = WorkOptions {
            partitions: options.partitions,
            seed: options.seed,
            round: rounds,
            keys: options.keys,
            variant: options.variant.clone(),
        };
        let round_started = Instant::now();
        let mut last_stats = WorkStats::default();
        if options.kill {
            // Killed after 0.2 to 1.5 s of the round (startup and recovery included).
            let kill_after = Duration::from_millis(200 + rng.below(1300));
            let (events, killed, exit) =
                run_child(&options.exe, &options.dir, &work, remaining, kill_after)?;
            for event in events {
                soak.apply(event, &mut last_stats);
            }
            soak.checks
                .record("child_exit", killed || exit.is_none(), || {
                    exit.clone().unwrap_or_default()
                });
            kills += u64::from(killed);
        } else {
            let sink = Arc::new(MemorySink::default());
            let result = workload::work(&options.dir, &work, remaining, sink.clone());
            soak.checks.record("work", result.is_ok(), || {
                result
                    .as_ref()
                    .map_or_else(ToString::to_string, |_| String::new())
            });
            let events = std::mem::take(&mut *sink.0.lock().unwrap_or_else(|e| e.into_inner()));
            for event in events {
                soak.apply(event, &mut last_stats);
            }
        }
        soak.work_seconds += round_started.elapsed().as_secs_f64();
        soak.end_round(last_stats);
        rounds += 1;
        if !soak.check_reopened(&options.dir, options.partitions) {
            break;
        }
        if !options.kill {
            break;
        }
    }
    Ok(soak.report(options, rounds, kills, started.elapsed()))
}

impl Soak {
    fn report(
        &mut self,
        options: &SoakOptions,
        rounds: u64,
        kills: u64,
        elapsed: Duration,
    ) -> SoakReport {
        let records_acknowledged = self.records_acknowledged;
        let secs = self.work_seconds.max(1e-9);
        SoakReport {
            passed: self.checks.failures() == 0,
            first_failure: self.checks.first_failure().map(str::to_string),
            seed: options.seed,
            partitions: options.partitions,
            seconds: elapsed.as_secs_f64(),
            kill: options.kill,
            rounds,
            kills,
            records_appended: self.records_appended,
            records_acknowledged,
            records_read: self.totals.records_read,
            append_records_per_sec: records_acknowledged as f64 / secs,
            read_records_per_sec: self.totals.records_read as f64 / secs,
            append_latency: Latency::of(std::mem::take(&mut self.latencies_ns)),
            cleanings: self.totals.cleanings,
            retention_deletions: self.totals.retention_deletions,
            background_errors: self.totals.background_errors,
            checks: self.checks.clone(),
        }
    }
}

/// Runs one child round: its events (in order), whether the parent killed it, and
/// its exit described if it failed (`None`: killed, or exited 0).
fn run_child(
    exe: &Path,
    dir: &Path,
    work: &WorkOptions,
    run_for: Duration,
    kill_after: Duration,
) -> Result<(Vec<Event>, bool, Option<String>)> {
    let mut command = Command::new(exe);
    command
        .arg(CHILD_COMMAND)
        .arg(dir)
        .args(["--partitions", &work.partitions.to_string()])
        .args(["--seed", &work.seed.to_string()])
        .args(["--round", &work.round.to_string()])
        .args(["--keys", &work.keys.to_string()])
        .args(["--millis", &run_for.as_millis().to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(variant) = &work.variant {
        command.args(["--variant", variant]);
    }
    let mut child = command
        .spawn()
        .map_err(|e| Error::InvalidArgument(format!("cannot run {}: {e}", exe.display())))?;
    let stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || read_events(stdout));
    let started = Instant::now();
    let mut killed = false;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| Error::io(exe, e))? {
            break status;
        }
        if started.elapsed() >= kill_after {
            // SIGKILL: no destructor, no flush, no clean shutdown.
            child.kill().map_err(|e| Error::io(exe, e))?;
            killed = true;
            break child.wait().map_err(|e| Error::io(exe, e))?;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let events = reader.join().unwrap_or_default();
    // A child that exited on its own before the kill must have exited 0.
    let exit = (!killed && !status.success()).then(|| format!("the child exited with {status}"));
    Ok((events, killed, exit))
}

/// The events on the child's stdout; a last line without its newline (the kill
/// cut it) is not an event.
fn read_events(stdout: std::process::ChildStdout) -> Vec<Event> {
    let mut reader = BufReader::new(stdout);
    let mut events = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return events,
            Ok(_) if line.last() != Some(&b'\n') => return events,
            Ok(_) => match serde_json::from_slice(&line) {
                Ok(event) => events.push(event),
                Err(_) => return events,
            },
        }
    }
}

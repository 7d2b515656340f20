//! `seglog bench --kafka`: the workloads seglog's bench shares with Apache Kafka
//! 4.4's own log layer, seglog's side of each, and the arithmetic of the side by
//! side. The Kafka side runs in one long-lived JVM (the harness's `bench` command,
//! `interop/kafka/.../Bench.java`), driven from `interop::bench_jvm`, which
//! alternates the two sides' rounds.
//!
//! Method:
//! - both sides work on the same fixture bytes: the log fixture's batches as
//!   seglog encodes them for a producer ([`ProducedFixture`], which Kafka appends
//!   as produce requests), and the compaction fixture's `.log` files as seglog
//!   writes them;
//! - each workload runs [`WARMUP_ROUNDS`] untimed rounds of each side (the JVM's
//!   JIT compiles Kafka's hot paths during them, as a broker's long-running JVM
//!   has), then `--iterations` rounds of each, alternately, the first side
//!   swapping every round so that the drift of a shared machine hits both alike;
//! - a round's paired ratio is Kafka's time / seglog's (above 1: seglog is
//!   faster), the figure the median of the paired ratios, with their min..max;
//! - every round of both sides must report the same record count, or the bench
//!   fails (each side proves it did the whole workload).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use seglog::error::{Error, Result};
use seglog::fs::{FileSystem, StdFs};
use seglog::log::{Log, LogConfig};

use super::compaction::CompactionFixture;
use super::compare::{self, median, Spread};
use super::raw::ProducedFixture;
use super::LogFixture;

/// The Kafka release the harness builds against (`interop/kafka/pom.xml`).
pub const KAFKA_VERSION: &str = "4.4.0";

/// Untimed rounds of each side before the timed ones, per workload: Kafka's round
/// times fall over its first few rounds while the JIT compiles its hot paths.
pub const WARMUP_ROUNDS: usize = 5;

/// A workload both sides run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// Open, append every batch, close: seglog's `append/log`.
    Append,
    /// Open, append every producer batch as bytes, close: seglog's
    /// `append/raw_open_close`.
    AppendRaw,
    /// The whole log fetched in 1 MiB steps: seglog's `read/fetch`.
    Fetch,
    /// The same fetches, every record decoded, key and value touched: seglog's
    /// `read/fetch_records`.
    FetchRecords,
    /// One cleaning of the compaction fixture's closed region: seglog's
    /// `compact/build`.
    Compact,
}

impl Workload {
    /// Every workload, in the order the bench runs them.
    pub const ALL: [Workload; 5] = [
        Workload::Append,
        Workload::AppendRaw,
        Workload::Fetch,
        Workload::FetchRecords,
        Workload::Compact,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::Append => "append",
            Workload::AppendRaw => "append_raw",
            Workload::Fetch => "fetch",
            Workload::FetchRecords => "fetch_records",
            Workload::Compact => "compact",
        }
    }

    /// The `seglog bench` row whose timed part seglog's side runs.
    pub fn seglog_row(self) -> &'static str {
        match self {
            Workload::Append => "append/log",
            Workload::AppendRaw => "append/raw_open_close",
            Workload::Fetch => "read/fetch",
            Workload::FetchRecords => "read/fetch_records",
            Workload::Compact => "compact/build",
        }
    }

    /// The harness's round (`round WORKLOAD`): both appends are one Kafka round,
    /// since Kafka appends encoded batches either way.
    pub fn kafka_round(self) -> &'static str {
        match self {
            Workload::Append | Workload::AppendRaw => "append",
            Workload::Fetch => "fetch",
            Workload::FetchRecords => "fetch_records",
            Workload::Compact => "compact",
        }
    }

    /// What seglog's side times.
    pub fn seglog_times(self) -> &'static str {
        match self {
            Workload::Append => "Log::open, Log::append of every batch's records (encoded and checksummed by the log), Log::close (fsync)",
            Workload::AppendRaw => "Log::open, Log::append_batches of every producer batch's bytes, Log::close (fsync)",
            Workload::Fetch => "Log::fetch of the whole log in 1 MiB steps (checked batches, no copy)",
            Workload::FetchRecords => "Log::fetch in 1 MiB steps, every record decoded in place, key and value touched",
            Workload::Compact => "install step 1: offset map, rewrite of the closed region, copy of the active segment, fsyncs",
        }
    }

    /// What Kafka's side times.
    pub fn kafka_times(self) -> &'static str {
        match self {
            Workload::Append | Workload::AppendRaw => "UnifiedLog.create, appendAsLeader of every batch (one produce request each), flush, close",
            Workload::Fetch => "UnifiedLog.read of the whole log in 1 MiB steps, each step's batch headers read from the file for the next offset",
            Workload::FetchRecords => "UnifiedLog.read in 1 MiB steps, every record of every batch iterated, key and value touched",
            Workload::Compact => "Cleaner.doClean of every closed segment (offset map, cleaned segments, flush, swap)",
        }
    }
}

/// One round of one side: its time and the work it proves it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    pub took: Duration,
    /// Records the round went through (for `compact`: the records the cleaning read).
    pub records: u64,
    /// Bytes the round moved (`fetch_records`: key and value bytes).
    pub bytes: u64,
    /// `compact`: the records the cleaning kept.
    pub records_kept: Option<u64>,
}

/// A reply line of the harness's `bench` command, for a round of `workload`:
/// `{"workload", "nanos", "records", "bytes"}` (and `records_kept`), or
/// `{"error"}`.
pub fn parse_round(line: &str, workload: Workload) -> Result<Round> {
    let bad = |why: String| Error::InvalidArgument(format!("Kafka's bench round: {why}: {line}"));
    let value: serde_json::Value =
        serde_json::from_str(line.trim()).map_err(|e| bad(format!("not JSON ({e})")))?;
    if let Some(error) = value.get("error") {
        return Err(Error::InvalidArgument(format!(
            "Kafka's `round {}` failed: {}",
            workload.kafka_round(),
            error.as_str().unwrap_or_default()
        )));
    }
    let name = value.get("workload").and_then(serde_json::Value::as_str);
    if name != Some(workload.kafka_round()) {
        return Err(bad(format!(
            "a reply for `{}` expected",
            workload.kafka_round()
        )));
    }
    let count = |key: &str| {
        value
            .get(key)
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| bad(format!("no count `{key}`")))
    };
    let nanos = count("nanos")?;
    if nanos == 0 {
        return Err(bad("a round of no time".into()));
    }
    let records_kept = match value.get("records_kept") {
        None => None,
        Some(_) => Some(count("records_kept")?),
    };
    Ok(Round {
        took: Duration::from_nanos(nanos),
        records: count("records")?,
        bytes: count("bytes")?,
        records_kept,
    })
}

/// The paired figure of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Paired {
    /// The median of the per-round ratios Kafka time / seglog time (above 1:
    /// seglog is faster).
    pub ratio: f64,
    /// Their min..max.
    pub spread: Spread,
    pub seglog_median_ms: f64,
    pub kafka_median_ms: f64,
}

/// Kafka's time / seglog's, round by round ([`compare::paired_ratios`] with
/// Kafka's rounds as the build compared).
pub fn paired_ratios(seglog_ms: &[f64], kafka_ms: &[f64]) -> Vec<f64> {
    compare::paired_ratios(kafka_ms, seglog_ms)
}

/// The figure of rounds paired by index; `None` without rounds.
pub fn paired(seglog_ms: &[f64], kafka_ms: &[f64]) -> Option<Paired> {
    if seglog_ms.is_empty() || seglog_ms.len() != kafka_ms.len() {
        return None;
    }
    let ratios = paired_ratios(seglog_ms, kafka_ms);
    Some(Paired {
        ratio: median(&ratios),
        spread: Spread::of(&ratios),
        seglog_median_ms: median(seglog_ms),
        kafka_median_ms: median(kafka_ms),
    })
}

/// One workload of the report.
#[derive(Debug, Clone, Serialize)]
pub struct KafkaRow {
    pub workload: Workload,
    pub seglog_row: &'static str,
    pub seglog_times: &'static str,
    pub kafka_times: &'static str,
    /// Records each round of either side went through (the same on both).
    pub records: u64,
    /// `compact`: records each cleaning kept (the same on both).
    pub records_kept: Option<u64>,
    pub seglog_bytes: u64,
    pub kafka_bytes: u64,
    pub seglog_median_ms: f64,
    pub kafka_median_ms: f64,
    /// Median of the per-round ratios Kafka / seglog time: above 1, seglog is faster.
    pub ratio: f64,
    pub ratio_min: f64,
    pub ratio_max: f64,
    pub seglog_ms: Vec<f64>,
    pub kafka_ms: Vec<f64>,
}

impl KafkaRow {
    /// The row of `workload` from its rounds, paired by index; an error when a pair
    /// did different work (records, or records kept), or there are no rounds.
    pub fn new(workload: Workload, seglog: &[Round], kafka: &[Round]) -> Result<KafkaRow> {
        for (round, (s, k)) in seglog.iter().zip(kafka).enumerate() {
            if s.records != k.records || s.records_kept != k.records_kept {
                return Err(Error::InvalidArgument(format!(
                    "{} round {round}: seglog went through {} records (kept {:?}), Kafka {} (kept {:?})",
                    workload.name(),
                    s.records,
                    s.records_kept,
                    k.records,
                    k.records_kept
                )));
            }
        }
        let ms = |rounds: &[Round]| -> Vec<f64> {
            rounds.iter().map(|r| r.took.as_secs_f64() * 1e3).collect()
        };
        let (seglog_ms, kafka_ms) = (ms(seglog), ms(kafka));
        let figure = paired(&seglog_ms, &kafka_ms).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{}: {} seglog rounds and {} Kafka rounds: nothing to pair",
                workload.name(),
                seglog.len(),
                kafka.len()
            ))
        })?;
        let (first_seglog, first_kafka) = (seglog[0], kafka[0]);
        Ok(KafkaRow {
            workload,
            seglog_row: workload.seglog_row(),
            seglog_times: workload.seglog_times(),
            kafka_times: workload.kafka_times(),
            records: first_seglog.records,
            records_kept: first_seglog.records_kept,
            seglog_bytes: first_seglog.bytes,
            kafka_bytes: first_kafka.bytes,
            seglog_median_ms: figure.seglog_median_ms,
            kafka_median_ms: figure.kafka_median_ms,
            ratio: figure.ratio,
            ratio_min: figure.spread.min,
            ratio_max: figure.spread.max,
            seglog_ms,
            kafka_ms,
        })
    }
}

/// The side by side as text: a line per workload, then what each side times.
pub fn table(rows: &[KafkaRow], iterations: usize) -> String {
    let mut out = format!(
        "seglog vs Apache Kafka {KAFKA_VERSION}, {iterations} rounds each; ratio = Kafka time / seglog time (above 1: seglog is faster), median of the paired ratios (min-max)\n"
    );
    for row in rows {
        out.push_str(&format!(
            "{:<14} seglog {:>9.2} ms  kafka {:>9.2} ms  ratio {:.2}x ({:.2}-{:.2})  {} records\n",
            row.workload.name(),
            row.seglog_median_ms,
            row.kafka_median_ms,
            row.ratio,
            row.ratio_min,
            row.ratio_max,
            row.records
        ));
    }
    for row in rows {
        out.push_str(&format!(
            "{:<14} seglog ({}): {}; kafka: {}\n",
            row.workload.name(),
            row.seglog_row,
            row.seglog_times,
            row.kafka_times
        ));
    }
    out
}

/// seglog's side of every workload, on fixtures it writes under a directory.
#[derive(Debug)]
pub struct SeglogSide<'a> {
    root: PathBuf,
    fixture: &'a LogFixture,
    produced: ProducedFixture,
    read_log: Option<Log>,
    compaction: Option<CompactionFixture>,
}

impl<'a> SeglogSide<'a> {
    /// seglog's side over `fixture`, working in the existing directory `root`.
    pub fn new(root: &Path, fixture: &'a LogFixture) -> Self {
        SeglogSide {
            root: root.to_path_buf(),
            fixture,
            produced: ProducedFixture::new(fixture),
            read_log: None,
            compaction: None,
        }
    }

    /// Writes the fixture's batches as a producer sends them (seglog's encoding at
    /// base offset 0, [`ProducedFixture`]) to `batches_path`, one after the other:
    /// what the Kafka side appends. Then seglog's log of them for the read rounds.
    pub fn prepare_log(&mut self, batches_path: &Path) -> Result<()> {
        let fs = StdFs::new();
        fs.write_new(batches_path, &self.produced.requests.concat())
            .map_err(|e| Error::io(batches_path, e))?;
        let dir = self.root.join("kafka-seglog-read");
        super::append_log(&dir, self.fixture)?;
        let (log, _) = Log::open(&dir, LogConfig::default())?;
        self.read_log = Some(log);
        Ok(())
    }

    /// Writes the compaction fixture of `keys` keys (its `.log` files are what the
    /// Kafka side cleans); its directory.
    pub fn prepare_compaction(&mut self, keys: u64) -> Result<PathBuf> {
        let dir = self.root.join("kafka-seglog-compact");
        let fixture = CompactionFixture::write(&StdFs::new(), &dir, keys, false)?;
        self.compaction = Some(fixture);
        Ok(dir)
    }

    /// One timed round of `workload`.
    pub fn round(&mut self, workload: Workload) -> Result<Round> {
        let records = self.fixture.records() as u64;
        let bytes = self.fixture.bytes.len() as u64;
        let round = |took, records, bytes| Round {
            took,
            records,
            bytes,
            records_kept: None,
        };
        match workload {
            Workload::Append => {
                let took = self.in_new_dir("kafka-seglog-append", |dir, fixture, _| {
                    super::append_log(dir, fixture)
                })?;
                Ok(round(took, records, bytes))
            }
            Workload::AppendRaw => {
                let took = self.in_new_dir("kafka-seglog-append-raw", |dir, _, produced| {
                    super::raw::append_raw_log(dir, produced)
                })?;
                Ok(round(took, records, bytes))
            }
            Workload::Fetch => {
                let log = self.read_log()?;
                let start = super::Stopwatch::start();
                let fetched = super::fetch_bytes(log)?;
                let took = start.stop();
                let covered = u64::try_from(log.next_offset() - log.log_start_offset())
                    .map_err(|_| Error::InvalidArgument("a log ending before its start".into()))?;
                if fetched as u64 != bytes {
                    return Err(Error::InvalidArgument(format!(
                        "seglog fetched {fetched} bytes of {bytes}"
                    )));
                }
                Ok(round(took, covered, fetched as u64))
            }
            Workload::FetchRecords => {
                let log = self.read_log()?;
                let start = super::Stopwatch::start();
                let (read, payload) = super::fetch_records(log)?;
                let took = start.stop();
                Ok(round(took, read as u64, payload as u64))
            }
            Workload::Compact => {
                let fixture = self.compaction.as_ref().ok_or_else(|| {
                    Error::InvalidArgument("no compaction fixture prepared".into())
                })?;
                let (took, built) = fixture.build(&StdFs::new())?;
                Ok(Round {
                    took,
                    records: built.report.records_before,
                    bytes: fixture.input_bytes,
                    records_kept: Some(built.report.records_after),
                })
            }
        }
    }

    fn read_log(&self) -> Result<&Log> {
        self.read_log
            .as_ref()
            .ok_or_else(|| Error::InvalidArgument("no read log prepared".into()))
    }

    /// Runs `run` in the new directory `root/name`, then removes it.
    fn in_new_dir(
        &self,
        name: &str,
        run: impl FnOnce(&Path, &LogFixture, &ProducedFixture) -> Result<Duration>,
    ) -> Result<Duration> {
        let fs = StdFs::new();
        let dir = self.root.join(name);
        fs.create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let took = run(&dir, self.fixture, &self.produced)?;
        fs.remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        Ok(took)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(ms: u64, records: u64) -> Round {
        Round {
            took: Duration::from_millis(ms),
            records,
            bytes: 1,
            records_kept: None,
        }
    }

    #[test]
    fn the_figure_is_the_median_of_the_paired_ratios_with_their_spread() {
        // Kafka / seglog per round: 2.0, 0.5, 3.0 -> median 2.0, spread 0.5..3.0;
        // not the ratio of the medians (30 / 20 = 1.5).
        let seglog = [10.0, 40.0, 20.0];
        let kafka = [20.0, 20.0, 60.0];
        assert_eq!(paired_ratios(&seglog, &kafka), vec![2.0, 0.5, 3.0]);
        let figure = paired(&seglog, &kafka).unwrap();
        assert_eq!(figure.ratio, 2.0);
        assert_eq!((figure.spread.min, figure.spread.max), (0.5, 3.0));
        assert_eq!(figure.seglog_median_ms, 20.0);
        assert_eq!(figure.kafka_median_ms, 20.0);
        // An even count: the mean of the middle two ratios.
        let figure = paired(&[10.0, 10.0], &[10.0, 30.0]).unwrap();
        assert_eq!(figure.ratio, 2.0);
        assert_eq!((figure.spread.min, figure.spread.max), (1.0, 3.0));
        // Nothing to pair.
        assert!(paired(&[], &[]).is_none());
        assert!(paired(&[1.0], &[1.0, 2.0]).is_none());
    }

    #[test]
    fn a_row_refuses_pairs_that_did_different_work() {
        let row = KafkaRow::new(
            Workload::Fetch,
            &[round(10, 500), round(20, 500)],
            &[round(30, 500), round(20, 500)],
        )
        .unwrap();
        assert_eq!(row.records, 500);
        assert_eq!((row.ratio, row.ratio_min, row.ratio_max), (2.0, 1.0, 3.0));
        assert_eq!(row.seglog_ms, vec![10.0, 20.0]);
        assert_eq!(row.kafka_ms, vec![30.0, 20.0]);
        let short = KafkaRow::new(Workload::Fetch, &[round(10, 500)], &[round(10, 499)]);
        assert!(short.unwrap_err().to_string().contains("499"));
        let mut kept = round(10, 500);
        kept.records_kept = Some(250);
        assert!(KafkaRow::new(Workload::Compact, &[kept], &[round(10, 500)]).is_err());
        assert!(KafkaRow::new(Workload::Compact, &[kept], &[kept]).is_ok());
        assert!(KafkaRow::new(Workload::Fetch, &[], &[]).is_err());
        let text = table(&[row], 2);
        assert!(text.contains("fetch"), "{text}");
        assert!(text.contains("2.00x (1.00-3.00)"), "{text}");
        assert!(text.contains(Workload::Fetch.kafka_times()), "{text}");
    }

    #[test]
    fn a_reply_line_parses_or_says_what_is_wrong() {
        let line = r#"{"workload":"compact","nanos":1500000,"records":2000,"bytes":99,"records_kept":1000}"#;
        let round = parse_round(line, Workload::Compact).unwrap();
        assert_eq!(round.took, Duration::from_micros(1500));
        assert_eq!((round.records, round.bytes), (2000, 99));
        assert_eq!(round.records_kept, Some(1000));
        // Both appends are Kafka's one `append` round.
        let append = r#"{"workload":"append","nanos":7,"records":3,"bytes":4}"#;
        assert_eq!(
            parse_round(append, Workload::AppendRaw)
                .unwrap()
                .records_kept,
            None
        );
        assert!(parse_round(append, Workload::Append).is_ok());
        for (bad, says) in [
            (r#"{"error":"round fetch: boom"}"#, "boom"),
            ("not json", "not JSON"),
            (
                r#"{"workload":"fetch","nanos":7,"records":3,"bytes":4}"#,
                "expected",
            ),
            (r#"{"workload":"append","records":3,"bytes":4}"#, "nanos"),
            (
                r#"{"workload":"append","nanos":0,"records":3,"bytes":4}"#,
                "no time",
            ),
            (
                r#"{"workload":"append","nanos":5,"records":-3,"bytes":4}"#,
                "records",
            ),
            (
                r#"{"workload":"append","nanos":5,"records":3,"bytes":4,"records_kept":"x"}"#,
                "records_kept",
            ),
        ] {
            let error = parse_round(bad, Workload::Append).unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn seglogs_rounds_report_the_fixtures_work() {
        let tmp = tempfile::tempdir().unwrap();
        let fixture = LogFixture::new(1_000, 100);
        let mut side = SeglogSide::new(tmp.path(), &fixture);
        assert!(side.round(Workload::Fetch).is_err(), "no read log yet");
        side.prepare_log(&tmp.path().join("batches.bin")).unwrap();
        let written = std::fs::read(tmp.path().join("batches.bin")).unwrap();
        assert_eq!(written.len(), fixture.bytes.len());
        assert_eq!(written, ProducedFixture::new(&fixture).requests.concat());
        for workload in [
            Workload::Append,
            Workload::AppendRaw,
            Workload::Fetch,
            Workload::FetchRecords,
        ] {
            let round = side.round(workload).unwrap();
            assert_eq!(round.records, 1_000, "{workload:?}");
            assert_eq!(round.records_kept, None);
        }
        assert_eq!(
            side.round(Workload::FetchRecords).unwrap().bytes,
            1_000 * (16 + super::super::VALUE_BYTES as u64)
        );
        side.prepare_compaction(300).unwrap();
        let round = side.round(Workload::Compact).unwrap();
        assert_eq!((round.records, round.records_kept), (600, Some(300)));
    }
}

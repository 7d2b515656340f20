//! The interop stage against Apache Kafka itself (`seglog verify` stage
//! `kafka_interop`, `tests/kafka_interop.rs`, docs/design.md section 8).
//!
//! Invariants checked, with Kafka 4.4's own storage classes (the Java harness in
//! `interop/kafka/`, [`harness`]):
//! * seglog -> Kafka: a directory seglog wrote and closed opens with Kafka's
//!   `FileRecords` (every batch valid), `OffsetIndex`/`TimeIndex` `sanityCheck`,
//!   `LogSegment` and `UnifiedLog` loaded as cleanly shut down; every segment's max
//!   timestamp as Kafka reads it from the time index is the max of its batches;
//!   Kafka reads every record with seglog's offset, timestamp, key, value and
//!   headers; Kafka's offset -> position lookups land on the batch seglog wrote the
//!   offset in, and its `ListOffsets` answers equal `Log::offset_for_timestamp`.
//!   Also after a second seglog session (reopen, append, close).
//! * Kafka -> seglog, per case (a codec, or LogAppendTime): a directory Kafka wrote
//!   with `UnifiedLog.appendAsLeader` in two broker sessions (headers, idempotent
//!   batches, rolls, and two-batch appends through `appendAsFollower`) and closed
//!   as a broker does opens in seglog truncating nothing
//!   and rewriting no index; seglog reads every record as Kafka does and answers
//!   every timestamp lookup as Kafka does; seglog appends and closes, and Kafka reads
//!   the whole directory back as seglog does.
//! * twin: the same appends, closes and reopens done by seglog and by Kafka leave
//!   the same `.log` bytes (but the broker's partitionLeaderEpoch, outside the CRC)
//!   and the same `.index` and `.timeindex` bytes.
//!
//! * cleaner differential ([`differential`]): seeded workloads cleaned round after
//!   round by Kafka's own `Cleaner` and by seglog's `kafka` policy leave the same
//!   records, clean point and segments, and each side reads the other's directory;
//!   transactional workloads also the same markers, last stable offset, aborted
//!   transactions (`.txnindex`) and read_committed offsets ([`txn_view`]).
//!
//! * crash recording ([`crash`]): Kafka's own appends, flushes, roll, cleaner
//!   round and retention traced under strace, parsed and replayed on `SimFs` to
//!   the directory Kafka left (`tests/kafka_crash_recording.rs`); every
//!   power-loss image of the trace under both persistence models loaded by Kafka
//!   as after a power loss and held to an oracle of the workload's
//!   acknowledgments.
//!
//! Beside the stage, [`bench_jvm`] runs Kafka's side of `seglog bench --kafka`
//! (Kafka's log layer timed on seglog's bench fixtures, in one long-lived JVM).
//!
//! Every case is required (the codecs and LogAppendTime included); a
//! case left out of [`REQUIRED_CASES`] would be reported `pending`, not `passed`.

pub mod bench_jvm;
pub mod cases;
pub mod crash;
pub mod differential;
pub mod harness;
mod run;
pub mod txn_view;

use serde::Serialize;

pub use run::run_cases;

/// Every case the harness can write: the codecs Kafka has, and LogAppendTime.
pub const ALL_CASES: &[&str] = &["none", "gzip", "snappy", "lz4", "zstd", "logappendtime"];

/// The cases that must pass: all of [`ALL_CASES`] (a case left out would be
/// reported as `pending` when it fails).
pub const REQUIRED_CASES: &[&str] = ALL_CASES;

/// How one case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    Passed,
    Failed,
    /// A case not yet required failed (the reason is in `detail`).
    Pending,
}

/// One case of the stage.
#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    pub case: String,
    pub direction: &'static str,
    pub status: CaseStatus,
    /// Records compared field by field.
    pub records: u64,
    /// Index lookups compared (offset -> position, timestamp -> offset).
    pub lookups: u64,
    pub detail: String,
}

/// The stage's report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct InteropReport {
    /// Why the stage did not run (no `java` or `mvn`), if it did not.
    pub skipped: Option<String>,
    pub cases: Vec<CaseReport>,
    /// Counts of `cases` by status (named apart from the stage report's `passed`).
    pub cases_passed: u64,
    pub cases_failed: u64,
    pub cases_pending: u64,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct InteropOptions {
    /// Kafka -> seglog cases to write (a codec name or `logappendtime`).
    pub cases: Vec<String>,
    /// Those of `cases` whose failure fails the stage.
    pub required: Vec<String>,
}

impl Default for InteropOptions {
    fn default() -> Self {
        InteropOptions {
            cases: ALL_CASES.iter().map(|c| (*c).to_string()).collect(),
            required: REQUIRED_CASES.iter().map(|c| (*c).to_string()).collect(),
        }
    }
}

/// Runs the stage: skipped (with the reason) where `java` or `mvn` is missing.
pub fn run(options: &InteropOptions) -> InteropReport {
    if let Some(reason) = harness::unavailable() {
        return InteropReport {
            skipped: Some(reason),
            ..InteropReport::default()
        };
    }
    let mut report = InteropReport::default();
    match harness::Harness::build() {
        Ok(harness) => report.cases = run_cases(&harness, options),
        Err(e) => report.cases.push(CaseReport {
            case: "build".into(),
            direction: "harness",
            status: CaseStatus::Failed,
            records: 0,
            lookups: 0,
            detail: e,
        }),
    }
    for case in &report.cases {
        match case.status {
            CaseStatus::Passed => report.cases_passed += 1,
            CaseStatus::Failed => report.cases_failed += 1,
            CaseStatus::Pending => report.cases_pending += 1,
        }
    }
    report
}

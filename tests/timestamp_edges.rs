//! Regression (a conformance test case, `tests/conformance.rs`): timestamps at
//! the edges of the valid range.
//!
//! What failed: (1) an append with a timestamp below -1 (proptest shrank it to one
//! record at `i64::MIN`) was rejected by the engine with `InvalidArgument` but
//! accepted by the spec, and the workload adapter reported the engine's rejection as
//! an IO-level error; (2) a batch whose timestamps span more than `i64::MAX` (first
//! record at -1 = NO_TIMESTAMP, a later one at `i64::MAX`) made the engine panic
//! with "attempt to subtract with overflow" while encoding the timestamp delta (and
//! the spec's size formula likewise).
//!
//! Invariant: engine and spec agree on every append (same offsets, or both reject),
//! and every stored timestamp reads back exactly.
//!
//! Fix: the contract (docs/design.md section 1) now says a timestamp below -1 is
//! `InvalidArgument`, in the spec as in the engine, and the adapter maps it to
//! `Rejected`; timestamp deltas use wrapping arithmetic, as Kafka's Java `long`s do,
//! so `base + (ts - base)` gives back `ts` for every pair of valid timestamps.

use seglog::{Log, LogConfig, NewRecord};
use seglog_suite::conformance::{run_case, Backend, Step};
use seglog_suite::workload::{Op, RecordSpec};

fn rec(ts: i64) -> RecordSpec {
    RecordSpec {
        key: Some("k".into()),
        value: Some("v".into()),
        ts,
    }
}

#[test]
fn a_timestamp_below_minus_one_is_rejected_by_both() {
    let steps = vec![
        Step::Op(Op::Append {
            records: vec![rec(i64::MIN)],
            codec: None,
            log_append_time: None,
        }),
        Step::Op(Op::Append {
            records: vec![rec(3), rec(-2)],
            codec: None,
            log_append_time: None,
        }),
        Step::Op(Op::Append {
            records: vec![rec(-1)],
            codec: None,
            log_append_time: None,
        }),
    ];
    for backend in [Backend::Sim, Backend::Disk] {
        run_case(&steps, backend, "manifest").unwrap_or_else(|d| panic!("{d}"));
    }
}

#[test]
fn timestamps_spanning_more_than_i64_max_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 1 << 20,
        index_interval_bytes: 64,
        ..LogConfig::default()
    };
    let (mut log, _) = Log::open(dir.path().join("p0"), config.clone()).unwrap();
    let stamps = [-1, i64::MAX, 0, i64::MAX - 1, -1];
    let records: Vec<NewRecord> = stamps
        .iter()
        .map(|&ts| NewRecord::new(Some(b"k".to_vec()), None, ts))
        .collect();
    log.append(&records).unwrap();
    log.close().unwrap();
    let (log, report) = Log::open(dir.path().join("p0"), config).unwrap();
    assert!(report.is_clean(), "{report:?}");
    let read: Vec<i64> = log
        .read(0, usize::MAX)
        .unwrap()
        .iter()
        .map(|r| r.timestamp)
        .collect();
    assert_eq!(read, stamps);
    assert_eq!(log.segments()[0].max_timestamp, i64::MAX);
    // And in lockstep with the spec, through compaction, retention and a crash.
    let steps = vec![
        Step::Op(Op::Append {
            records: vec![rec(-1), rec(i64::MAX), rec(0)],
            codec: None,
            log_append_time: None,
        }),
        Step::Op(Op::Append {
            records: vec![rec(i64::MAX), rec(-1)],
            codec: None,
            log_append_time: None,
        }),
        Step::Op(Op::Roll),
        Step::Op(Op::Compact {
            now: i64::MAX,
            delete_retention_ms: 0,
            segment_bytes: None,
        }),
        Step::Op(Op::Retain {
            now: i64::MAX,
            retention_ms: Some(0),
            retention_bytes: None,
        }),
        Step::CrashReopen { image: 2 },
    ];
    for backend in [Backend::Sim, Backend::Disk] {
        run_case(&steps, backend, "manifest").unwrap_or_else(|d| panic!("{d}"));
    }
}

/// A tombstone's age is `now - timestamp` exactly (no saturation), in the
/// engine as in the spec, at the edges of i64: `now` at `i64::MAX` or `i64::MIN`,
/// `now` smaller than the retention, a timestamp of -1, a retention of `i64::MAX`.
#[test]
fn tombstone_ages_agree_at_the_edges_of_i64() {
    let tombstone = |ts: i64| RecordSpec {
        key: Some("k".into()),
        value: None,
        ts,
    };
    let nows = [i64::MIN, -1, 0, 5, i64::MAX - 1, i64::MAX];
    let retentions = [0, 1, 10, i64::MAX - 1, i64::MAX];
    for now in nows {
        for delete_retention_ms in retentions {
            let steps = vec![
                Step::Op(Op::Append {
                    records: vec![tombstone(-1), tombstone(0), rec(i64::MAX)],
                    codec: None,
                    log_append_time: None,
                }),
                Step::Op(Op::Append {
                    records: vec![tombstone(-1)],
                    codec: None,
                    log_append_time: None,
                }),
                Step::Op(Op::Roll),
                Step::Op(Op::Compact {
                    now,
                    delete_retention_ms,
                    segment_bytes: None,
                }),
            ];
            run_case(&steps, Backend::Sim, "manifest").unwrap_or_else(|d| {
                panic!("now {now}, delete_retention_ms {delete_retention_ms}: {d}")
            });
        }
    }
}

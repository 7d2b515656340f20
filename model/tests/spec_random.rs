//! Invariants checked: every named invariant in `seglog_model::invariants` holds after
//! every operation of random sequences that the exhaustive log model cannot reach:
//! multi-record batches, non-monotonic timestamps, larger key and value domains,
//! random segment sizes and retention/compaction parameters; and every state the spec
//! reaches is structurally valid (`SpecLog::from_parts` accepts it).
//!
//! Boundary values are drawn on purpose, resolved against the current state: retention
//! with `now - retention_ms` equal to a closed segment's `max_timestamp` and
//! `retention_bytes` equal to the bytes of a suffix of the log; compaction with a
//! latest tombstone's age equal to `delete_retention_ms`; timestamps -1, `i64::MAX`
//! and below -1 (`i64::MIN`, -2: rejected, the log unchanged).

use proptest::prelude::*;
use seglog_model::invariants::{check_step, Grace, StepKind};
use seglog_model::spec::{edges, SpecError, SpecLog, SpecRecordInput};

#[derive(Clone, Debug)]
enum Op {
    Append(Vec<(Option<u8>, Option<u8>, i64)>),
    Control(bool, i64),
    Roll,
    Retain(i64, Option<i64>, Option<i64>),
    Compact(i64, i64, Option<u64>),
    /// Retention at `now` at a boundary of the current log (see [`retain_edge`]).
    RetainEdge(i64, usize, bool),
    /// Compaction at `now` at a latest tombstone's age (see [`tombstone_edge`]).
    CompactEdge(i64, usize),
}

/// `(retention_ms, retention_bytes)` on a boundary of `log`
/// (`spec::edges`): time retention at a reached segment's `max_timestamp`, or (`bytes`)
/// a limit equal to the bytes of a suffix of the log.
fn retain_edge(log: &SpecLog, now: i64, pick: usize, bytes: bool) -> (Option<i64>, Option<i64>) {
    if bytes {
        (
            None,
            Some(edges::retention_bytes_edge(log, pick).unwrap_or(1)),
        )
    } else {
        (
            Some(edges::retention_ms_edge(log, now, pick).unwrap_or(0)),
            None,
        )
    }
}

/// `delete_retention_ms` equal to the age at `now` of latest tombstone `pick` of the
/// closed region (`pick * 10` if there is none).
fn tombstone_edge(log: &SpecLog, now: i64, pick: usize) -> i64 {
    edges::delete_retention_edge(log, now, pick).unwrap_or(pick as i64 * 10)
}

fn op() -> impl Strategy<Value = Op> {
    let record = (
        prop::option::weighted(0.8, 0u8..4),
        prop::option::weighted(0.7, 0u8..3),
        prop_oneof![
            30 => 0i64..1000,
            1 => Just(-1i64),
            1 => Just(0i64),
            1 => Just(i64::MAX),
            1 => Just(i64::MIN),
            1 => Just(-2i64),
        ],
    );
    prop_oneof![
        4 => prop::collection::vec(record, 1..4).prop_map(Op::Append),
        1 => (any::<bool>(), 0i64..1000).prop_map(|(c, t)| Op::Control(c, t)),
        2 => Just(Op::Roll),
        1 => (0i64..2000, prop::option::of(0i64..500), prop::option::of(1i64..400))
            .prop_map(|(n, ms, b)| Op::Retain(n, ms, b)),
        2 => (0i64..2000, 0i64..500, prop::option::of(60u64..400))
            .prop_map(|(n, d, s)| Op::Compact(n, d, s)),
        1 => (0i64..2000, 0usize..8, any::<bool>()).prop_map(|(n, p, b)| Op::RetainEdge(n, p, b)),
        2 => (0i64..2000, 0usize..8).prop_map(|(n, p)| Op::CompactEdge(n, p)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn spec_keeps_every_invariant(segment_bytes in 70u64..300, ops in prop::collection::vec(op(), 1..40)) {
        let mut log = SpecLog::new(segment_bytes);
        for op in ops {
            let before = log.clone();
            let kind = match &op {
                Op::Append(records) => {
                    let input: Vec<SpecRecordInput> = records
                        .iter()
                        .map(|(k, v, t)| SpecRecordInput {
                            key: k.map(|k| vec![b'k', k]),
                            value: v.map(|v| vec![b'v'; usize::from(v)]),
                            timestamp: *t,
                        })
                        .collect();
                    if input.iter().any(|r| r.timestamp < -1) {
                        // Below NO_TIMESTAMP: rejected, nothing changes.
                        let rejected = log.append(&input);
                        prop_assert!(matches!(rejected, Err(SpecError::InvalidArgument(_))));
                        prop_assert_eq!(&log, &before);
                        continue;
                    }
                    let (first, last) = log.append(&input).unwrap();
                    prop_assert_eq!(first, before.next_offset());
                    prop_assert_eq!(last - first + 1, input.len() as i64);
                    StepKind::Append
                }
                Op::Control(commit, t) => {
                    log.append_control(*commit, *t);
                    StepKind::Append
                }
                Op::Roll => {
                    log.roll();
                    StepKind::Roll
                }
                Op::Retain(now, ms, bytes) => {
                    let deleted = log.retain(*now, *ms, *bytes).unwrap();
                    prop_assert!(deleted.len() < before.raw_segments().len());
                    StepKind::Retain
                }
                Op::RetainEdge(now, pick, bytes) => {
                    let (ms, limit) = retain_edge(&log, *now, *pick, *bytes);
                    let deleted = log.retain(*now, ms, limit).unwrap();
                    prop_assert!(deleted.len() < before.raw_segments().len());
                    let segments = before.raw_segments();
                    if let Some(ms) = ms {
                        // Strictly older than the horizon goes; the first kept closed
                        // segment is at or after it.
                        let horizon = now - ms;
                        prop_assert!(segments[..deleted.len()].iter().all(|s| s.max_timestamp() < horizon));
                        if deleted.len() < segments.len() - 1 {
                            prop_assert!(segments[deleted.len()].max_timestamp() >= horizon);
                        }
                    }
                    if let Some(limit) = limit {
                        // Remaining bytes at most the limit (or nothing closed left), and
                        // not reached before the last deletion.
                        let remaining = |k: usize| segments[k..].iter().map(|s| s.bytes()).sum::<u64>();
                        let k = deleted.len();
                        prop_assert!(remaining(k) <= limit as u64 || k == segments.len() - 1);
                        prop_assert!(k == 0 || remaining(k - 1) > limit as u64);
                    }
                    StepKind::Retain
                }
                Op::CompactEdge(now, pick) => {
                    let d = tombstone_edge(&log, *now, *pick);
                    log.compact(*now, d, None).unwrap();
                    StepKind::Compact(Grace { now: *now, delete_retention_ms: d })
                }
                Op::Compact(now, d, s) => {
                    let summary = log.compact(*now, *d, *s).unwrap();
                    prop_assert!(summary.records_after <= summary.records_before);
                    prop_assert!(summary.bytes_after <= summary.bytes_before);
                    StepKind::Compact(Grace { now: *now, delete_retention_ms: *d })
                }
            };
            let violations = check_step(&before, &log, kind);
            prop_assert!(violations.is_empty(), "{:?} after {:?}", violations, op);
            let rebuilt = SpecLog::from_parts(
                segment_bytes,
                log.log_start_offset(),
                log.raw_segments().to_vec(),
            )
            .and_then(|mut rebuilt| rebuilt.set_clean_point(log.clean_point()).map(|()| rebuilt));
            prop_assert_eq!(rebuilt.as_ref(), Ok(&log));
            let views = log.segments();
            prop_assert!(!views.last().unwrap().closed);
            prop_assert!(views[..views.len() - 1].iter().all(|v| v.closed));
        }
    }
}

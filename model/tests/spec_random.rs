//! Invariants checked: every named invariant in `seglog_model::invariants` holds after
//! every operation of random sequences that the exhaustive log model cannot reach:
//! multi-record batches, non-monotonic timestamps, larger key and value domains,
//! random segment sizes and retention/compaction parameters; and every state the spec
//! reaches is structurally valid (`SpecLog::from_parts` accepts it).

use proptest::prelude::*;
use seglog_model::invariants::{check_step, Grace, StepKind};
use seglog_model::spec::{SpecLog, SpecRecordInput};

#[derive(Clone, Debug)]
enum Op {
    Append(Vec<(Option<u8>, Option<u8>, i64)>),
    Control(bool, i64),
    Roll,
    Retain(i64, Option<i64>, Option<i64>),
    Compact(i64, i64, Option<u64>),
}

fn op() -> impl Strategy<Value = Op> {
    let record = (
        prop::option::weighted(0.8, 0u8..4),
        prop::option::weighted(0.7, 0u8..3),
        0i64..1000,
    );
    prop_oneof![
        4 => prop::collection::vec(record, 1..4).prop_map(Op::Append),
        1 => (any::<bool>(), 0i64..1000).prop_map(|(c, t)| Op::Control(c, t)),
        2 => Just(Op::Roll),
        1 => (0i64..2000, prop::option::of(0i64..500), prop::option::of(1i64..400))
            .prop_map(|(n, ms, b)| Op::Retain(n, ms, b)),
        2 => (0i64..2000, 0i64..500, prop::option::of(60u64..400))
            .prop_map(|(n, d, s)| Op::Compact(n, d, s)),
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
            );
            prop_assert_eq!(rebuilt.as_ref(), Ok(&log));
            let views = log.segments();
            prop_assert!(!views.last().unwrap().closed);
            prop_assert!(views[..views.len() - 1].iter().all(|v| v.closed));
        }
    }
}

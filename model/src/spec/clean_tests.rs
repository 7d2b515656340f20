//! The clean point, the dirty ratio and the bounded map: worked examples, and the
//! multi-pass property (enough bounded passes equal one unbounded compaction, every
//! intermediate log keeping every invariant).

use proptest::prelude::*;

use super::*;
use crate::invariants::{check_step, Grace, StepKind};

const BIG: u64 = 1 << 20;

fn put(log: &mut SpecLog, key: &str, value: Option<&str>, timestamp: i64) {
    log.append(&[SpecRecordInput {
        key: Some(key.as_bytes().to_vec()),
        value: value.map(|v| v.as_bytes().to_vec()),
        timestamp,
    }])
    .unwrap();
}

fn keys_of(log: &SpecLog) -> Vec<(i64, String)> {
    log.read(log.log_start_offset())
        .unwrap()
        .into_iter()
        .map(|r| (r.offset, String::from_utf8(r.key.unwrap()).unwrap()))
        .collect()
}

fn budget(keys: u64) -> CleanKnobs {
    CleanKnobs {
        dedupe_buffer_bytes: Some(keys * MAP_ENTRY_BYTES),
        min_compaction_lag_ms: 0,
        ..CleanKnobs::default()
    }
}

/// a b c | a b c | d (active): one record per batch, one segment per three.
fn abc_log() -> SpecLog {
    let mut log = SpecLog::new(BIG);
    for (i, key) in ["a", "b", "c", "a", "b", "c"].into_iter().enumerate() {
        put(&mut log, key, Some("v"), i as i64);
        if i % 3 == 2 {
            log.roll();
        }
    }
    put(&mut log, "d", Some("v"), 6);
    log
}

#[test]
fn a_two_key_map_cleans_in_passes_and_ends_where_the_full_compaction_does() {
    let mut log = abc_log();
    let mut full = log.clone();
    full.compact_full(10, 1000, None).unwrap();
    // Pass 1 maps a@0 b@1 and stops before c@2: nothing is superseded yet.
    log.clean(10, 1000, None, budget(2)).unwrap();
    assert_eq!(log.clean_point(), 2);
    assert_eq!(keys_of(&log).len(), 7);
    // Pass 2 maps c@2 a@3 (b@4 would be a third key): a@0 goes.
    log.clean(10, 1000, None, budget(2)).unwrap();
    assert_eq!(log.clean_point(), 4);
    assert_eq!(
        keys_of(&log),
        [(1, "b"), (2, "c"), (3, "a"), (4, "b"), (5, "c"), (6, "d")]
            .map(|(o, k)| (o, k.to_string()))
    );
    // Pass 3 maps b@4 c@5, then d@6 would be a third key: b@1 and c@2 go.
    log.clean(10, 1000, None, budget(2)).unwrap();
    assert_eq!(log.clean_point(), 6);
    assert_eq!(keys_of(&log), keys_of(&full));
    // Nothing is dirty below the active segment any more; a pass changes nothing.
    let before = log.clone();
    log.clean(10, 1000, None, budget(2)).unwrap();
    assert_eq!(log, before);
    assert_eq!(log.raw_segments(), full.raw_segments());
}

#[test]
fn a_batch_that_alone_exceeds_the_map_is_rejected() {
    let mut log = SpecLog::new(BIG);
    let records: Vec<SpecRecordInput> = ["a", "b", "c"]
        .iter()
        .map(|k| SpecRecordInput {
            key: Some(k.as_bytes().to_vec()),
            value: Some(b"v".to_vec()),
            timestamp: 0,
        })
        .collect();
    log.append(&records).unwrap();
    log.roll();
    let before = log.clone();
    assert!(matches!(
        log.clean(0, 0, None, budget(2)),
        Err(SpecError::InvalidArgument(_))
    ));
    assert_eq!(log, before);
    // Three keys fit: the pass runs and reaches the active segment.
    log.clean(0, 0, None, budget(3)).unwrap();
    assert_eq!(log.clean_point(), 3);
}

#[test]
fn clean_records_survive_unless_a_dirty_record_supersedes_them() {
    let mut log = abc_log();
    log.compact(10, 1000, None).unwrap();
    assert_eq!(log.clean_point(), 6);
    // Dirty: a@7 (new value), then roll; b and c stay clean.
    put(&mut log, "a", Some("w"), 7);
    log.roll();
    let mut full = log.clone();
    full.compact_full(10, 1000, None).unwrap();
    log.compact(10, 1000, None).unwrap();
    assert_eq!(keys_of(&log), keys_of(&full));
    assert_eq!(
        keys_of(&log),
        [(4, "b"), (5, "c"), (6, "d"), (7, "a")].map(|(o, k)| (o, k.to_string()))
    );
}

#[test]
fn a_clean_tombstone_still_expires() {
    let mut log = SpecLog::new(BIG);
    put(&mut log, "a", Some("v"), 0);
    put(&mut log, "a", None, 100);
    log.roll();
    put(&mut log, "b", Some("v"), 200);
    log.compact(500, 1000, None).unwrap();
    assert_eq!(log.clean_point(), 2);
    assert_eq!(keys_of(&log), vec![(1, "a".into()), (2, "b".into())]);
    // Later, nothing dirty maps key a: the tombstone is in the clean section and
    // is dropped by age alone (100 + 1000 < 1101).
    log.roll();
    log.compact(1101, 1000, None).unwrap();
    assert_eq!(keys_of(&log), vec![(2, "b".into())]);
    assert_eq!(log.clean_point(), 3);
}

#[test]
fn the_lag_holds_back_young_segments_and_the_clean_point() {
    let mut log = abc_log(); // segments [0..3) max ts 2, [3..6) max ts 5
    let knobs = CleanKnobs {
        dedupe_buffer_bytes: None,
        min_compaction_lag_ms: 6,
        ..CleanKnobs::default()
    };
    // now 10, lag 6: a segment with a timestamp above 4 is too young: [3..6).
    assert_eq!(log.first_uncleanable_offset(10, 6), 3);
    let cleanable = log.cleanable(10, 6);
    assert_eq!(cleanable.cleanable_bytes, log.raw_segments()[0].bytes());
    assert_eq!(cleanable.clean_bytes, 0);
    assert!((cleanable.dirty_ratio - 1.0).abs() < f64::EPSILON);
    log.clean(10, 1000, None, knobs).unwrap();
    // The map covered every dirty record: a@0 b@1 c@2 are superseded and go; the
    // young segment stays as it was, and the clean point stops before it.
    assert_eq!(log.clean_point(), 3);
    assert_eq!(
        keys_of(&log),
        [(3, "a"), (4, "b"), (5, "c"), (6, "d")].map(|(o, k)| (o, k.to_string()))
    );
    // Without the lag's hold (now 12: 5 <= 12 - 6), the rest is cleaned.
    assert_eq!(log.first_uncleanable_offset(12, 6), 6);
    log.clean(12, 1000, None, knobs).unwrap();
    assert_eq!(log.clean_point(), 6);
}

#[test]
fn the_dirty_ratio_counts_whole_segments() {
    let mut log = abc_log();
    let fresh = log.cleanable(0, 0);
    assert_eq!(fresh.clean_bytes, 0);
    assert_eq!(fresh.first_uncleanable_offset, 6);
    assert!((fresh.dirty_ratio - 1.0).abs() < f64::EPSILON);
    assert!(fresh.should_clean(0.5));
    log.compact(10, 1000, None).unwrap();
    let cleaned = log.cleanable(10, 0);
    assert_eq!(cleaned.cleanable_bytes, 0);
    assert!(cleaned.dirty_ratio.abs() < f64::EPSILON);
    assert!(!cleaned.should_clean(0.0));
    put(&mut log, "a", Some("w"), 7);
    log.roll();
    let dirty = log.cleanable(10, 0);
    let total = dirty.clean_bytes + dirty.cleanable_bytes;
    assert!(dirty.clean_bytes > 0 && dirty.cleanable_bytes > 0);
    assert!((dirty.dirty_ratio - dirty.cleanable_bytes as f64 / total as f64).abs() < 1e-12);
    assert_eq!(dirty.should_clean(0.99), dirty.dirty_ratio > 0.99);
}

#[test]
fn a_clean_point_over_a_duplicate_is_refused() {
    let mut log = abc_log();
    assert!(log.set_clean_point(3).is_ok());
    assert!(matches!(
        log.set_clean_point(6),
        Err(SpecError::Inconsistent(_))
    ));
    assert_eq!(log.clean_point(), 3);
    assert!(log.set_clean_point(7).is_err());
}

#[derive(Clone, Debug)]
enum Step {
    Append(Vec<(u8, bool, i64)>),
    Roll,
    Clean { keys: u64, now: i64 },
    Retain(i64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        5 => prop::collection::vec((0u8..6, prop::bool::weighted(0.8), 0i64..100), 1..4)
            .prop_map(Step::Append),
        2 => Just(Step::Roll),
        2 => (1u64..5, 0i64..200).prop_map(|(keys, now)| Step::Clean { keys, now }),
        1 => (0i64..100).prop_map(Step::Retain),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Invariants checked: after any history of appends, rolls, retention and bounded
    /// cleaning passes, every pass keeps every invariant (clean section deduplicated,
    /// latest view, tombstone grace, offsets), and bounded passes run until the clean
    /// point reaches the active segment read exactly what one unbounded compaction
    /// reads, with the same offsets, segments aside.
    #[test]
    fn bounded_passes_reach_the_unbounded_compaction(
        steps in prop::collection::vec(step(), 1..30),
        keys in 1u64..4,
        now in 0i64..300,
        delete_retention_ms in 0i64..150,
    ) {
        let mut log = SpecLog::new(120);
        for step in steps {
            let before = log.clone();
            let kind = match step {
                Step::Append(records) => {
                    let input: Vec<SpecRecordInput> = records
                        .iter()
                        .map(|&(k, value, t)| SpecRecordInput {
                            key: Some(vec![b'k', k]),
                            value: value.then(|| b"v".to_vec()),
                            timestamp: t,
                        })
                        .collect();
                    log.append(&input).unwrap();
                    StepKind::Append
                }
                Step::Roll => {
                    log.roll();
                    StepKind::Roll
                }
                Step::Retain(ms) => {
                    log.retain(100, Some(ms), None).unwrap();
                    StepKind::Retain
                }
                Step::Clean { keys, now } => {
                    if log.clean(now, 50, None, budget(keys)).is_err() {
                        prop_assert_eq!(&log, &before);
                        continue;
                    }
                    StepKind::Clean(Grace { now, delete_retention_ms: 50 })
                }
            };
            let violations = check_step(&before, &log, kind);
            prop_assert!(violations.is_empty(), "{:?}", violations);
        }
        let mut full = log.clone();
        full.compact_full(now, delete_retention_ms, None).unwrap();
        let mut passes = 0;
        loop {
            let before = log.clone();
            let Ok(map) = log.dirty_map(Some(keys)) else {
                // Some batch holds more distinct keys than the budget: a larger one.
                return Ok(());
            };
            let at_active = log.clean_point() == log.active().base_offset;
            if at_active && map.mapped_end < log.next_offset() {
                // The active segment alone holds more keys than the map: the records
                // they supersede wait for a roll (the clean point never enters it).
                return Ok(());
            }
            log.clean(now, delete_retention_ms, None, budget(keys)).unwrap();
            passes += 1;
            let grace = Grace { now, delete_retention_ms };
            let violations = check_step(&before, &log, StepKind::Clean(grace));
            prop_assert!(violations.is_empty(), "{:?}", violations);
            prop_assert!(log.clean_point() >= before.clean_point());
            if map.mapped_end == log.next_offset() {
                prop_assert_eq!(log.clean_point(), log.active().base_offset);
                break;
            }
            prop_assert!(log.clean_point() > before.clean_point() || at_active);
            prop_assert!(passes < 100);
        }
        prop_assert_eq!(log.read(log.log_start_offset()).unwrap(), full.read(full.log_start_offset()).unwrap());
        prop_assert_eq!(log.next_offset(), full.next_offset());
        prop_assert_eq!(log.clean_point(), full.clean_point());
    }
}

/// A log with an open transaction in its closed segment: a@0, an open transaction's b@1, a@2 in one closed segment, c@3
/// in the active one. The last stable offset (1) lies in the closed segment.
fn open_txn_log() -> SpecLog {
    let mut log = SpecLog::new(1 << 20);
    put(&mut log, "a", Some("1"), 1);
    log.append_transactional(
        7,
        &[SpecRecordInput {
            key: Some(b"b".to_vec()),
            value: Some(b"2".to_vec()),
            timestamp: 2,
        }],
    )
    .unwrap();
    put(&mut log, "a", Some("3"), 3);
    log.roll();
    put(&mut log, "c", Some("4"), 4);
    log
}

#[test]
fn the_cleanable_section_ends_at_the_segment_holding_the_last_stable_offset() {
    let mut log = open_txn_log();
    assert_eq!(log.last_stable_offset(), 1);
    let held = log.cleanable(100, 0);
    assert_eq!(
        held.first_uncleanable_offset, 0,
        "the base of the segment holding 1"
    );
    assert_eq!(held.cleanable_bytes, 0);
    assert!(held.dirty_ratio.abs() < f64::EPSILON);
    assert!(!held.should_clean(0.0));
    // Committed, the bound lifts: the closed segment is cleanable again.
    log.append_control_of(7, true, 5);
    log.roll();
    put(&mut log, "d", Some("6"), 6);
    let free = log.cleanable(100, 0);
    assert_eq!(free.first_uncleanable_offset, 5);
    assert!(free.cleanable_bytes > 0);
    assert!(free.should_clean(0.5));
    // An open transaction in a later segment holds only that segment back.
    log.append_transactional(
        8,
        &[SpecRecordInput {
            key: Some(b"e".to_vec()),
            value: None,
            timestamp: 7,
        }],
    )
    .unwrap();
    log.roll();
    put(&mut log, "f", Some("8"), 8);
    let partial = log.cleanable(100, 0);
    assert_eq!(partial.first_uncleanable_offset, 5);
    assert_eq!(partial.cleanable_bytes, free.cleanable_bytes);
}

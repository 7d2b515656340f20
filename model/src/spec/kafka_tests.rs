//! The `kafka` policy's worked examples, each beside what the `seed` policy does
//! with the same log (so a policy that ignored the knob fails them).

use super::*;

const BIG: u64 = 1 << 20;

fn kafka() -> CleanKnobs {
    CleanKnobs {
        policy: CompactionPolicy::Kafka,
        ..CleanKnobs::default()
    }
}

fn put(log: &mut SpecLog, key: Option<&str>, value: Option<&str>, timestamp: i64) {
    log.append(&[SpecRecordInput {
        key: key.map(|k| k.as_bytes().to_vec()),
        value: value.map(|v| v.as_bytes().to_vec()),
        timestamp,
    }])
    .unwrap();
}

fn offsets(log: &SpecLog) -> Vec<i64> {
    log.read(log.log_start_offset())
        .unwrap()
        .into_iter()
        .map(|r| r.offset)
        .collect()
}

#[test]
fn the_active_segment_never_supersedes_and_keyless_records_go() {
    // closed: a=1 @0, (keyless) @1, b=1 @2 | active: a=2 @3
    let mut log = SpecLog::new(BIG);
    put(&mut log, Some("a"), Some("1"), 0);
    put(&mut log, None, Some("e"), 1);
    put(&mut log, Some("b"), Some("1"), 2);
    log.roll();
    put(&mut log, Some("a"), Some("2"), 3);
    let mut seed = log.clone();
    seed.clean(10, 1000, None, CleanKnobs::default()).unwrap();
    assert_eq!(offsets(&seed), vec![1, 2, 3]);
    let summary = log.clean(10, 1000, None, kafka()).unwrap();
    assert_eq!(offsets(&log), vec![0, 2, 3]);
    assert_eq!(summary.keyless_dropped, 1);
    assert_eq!(summary.records_before, 3);
    assert_eq!(summary.records_after, 2);
    assert_eq!(log.clean_point(), 3);
}

#[test]
fn a_tombstone_is_stamped_with_a_delete_horizon_then_dropped_past_it() {
    // a=1 @0 (ts 0), a=null @1 (ts 100) | active x @2
    let mut log = SpecLog::new(BIG);
    put(&mut log, Some("a"), Some("1"), 0);
    put(&mut log, Some("a"), None, 100);
    log.roll();
    put(&mut log, Some("x"), Some("1"), 200);
    let mut seed = log.clone();
    // The seed policy drops the tombstone by its own age: 5000 - 100 > 1000.
    seed.clean(5_000, 1_000, None, CleanKnobs::default())
        .unwrap();
    assert_eq!(offsets(&seed), vec![2]);
    // Kafka keeps it on the first cleaning that sees it and stamps its batch.
    log.clean(5_000, 1_000, None, kafka()).unwrap();
    assert_eq!(offsets(&log), vec![1, 2]);
    let stamped = &log.closed_segments()[0].batches[0];
    assert_eq!(stamped.delete_horizon, Some(6_000));
    assert_eq!(stamped.base_timestamp, 6_000);
    assert_eq!(stamped.records[0].timestamp, 100, "record timestamps stay");
    // New dirty data (y @3 in a closed segment) so that the next pass cleans.
    log.roll();
    put(&mut log, Some("y"), Some("1"), 300);
    log.roll();
    put(&mut log, Some("z"), Some("1"), 400);
    // Before the horizon: kept, and not stamped again.
    log.clean(5_999, 1_000, None, kafka()).unwrap();
    assert_eq!(offsets(&log), vec![1, 2, 3, 4]);
    assert_eq!(
        log.closed_segments()[0].batches[0].delete_horizon,
        Some(6_000)
    );
    log.roll();
    put(&mut log, Some("w"), Some("1"), 500);
    // At the horizon: gone.
    log.clean(6_000, 1_000, None, kafka()).unwrap();
    assert_eq!(offsets(&log), vec![2, 3, 4, 5]);
}

#[test]
fn grouping_counts_source_bytes_not_compacted_bytes() {
    // Three closed segments of one batch with one record of key "a" each.
    let mut log = SpecLog::new(BIG);
    for i in 0..3 {
        put(&mut log, Some("a"), Some("v"), i);
        log.roll();
    }
    put(&mut log, Some("b"), Some("v"), 9);
    let one = log.closed_segments()[0].bytes();
    // Room for two source segments: seed groups by compacted bytes (two are empty
    // after compaction, so all three fit), kafka by source bytes.
    let mut seed = log.clone();
    seed.clean(10, 1000, Some(2 * one), CleanKnobs::default())
        .unwrap();
    assert_eq!(seed.closed_segments().len(), 1);
    log.clean(10, 1000, Some(2 * one), kafka()).unwrap();
    let bases: Vec<i64> = log
        .closed_segments()
        .iter()
        .map(|s| s.base_offset)
        .collect();
    assert_eq!(bases, vec![0, 2]);
    assert_eq!(offsets(&log), vec![2, 3]);
}

#[test]
fn a_lag_holds_back_the_map_and_the_cleaned_segments() {
    // [a @0 ts 0] [a @1 ts 50] | active; lag 20 at now 60: [1..2) is too young.
    let mut log = SpecLog::new(BIG);
    put(&mut log, Some("a"), Some("1"), 0);
    log.roll();
    put(&mut log, Some("a"), Some("2"), 50);
    log.roll();
    put(&mut log, Some("c"), Some("1"), 55);
    let knobs = CleanKnobs {
        min_compaction_lag_ms: 20,
        ..kafka()
    };
    log.clean(60, 1000, None, knobs).unwrap();
    assert_eq!(offsets(&log), vec![0, 1, 2]);
    assert_eq!(log.clean_point(), 1);
    log.clean(100, 1000, None, knobs).unwrap();
    assert_eq!(offsets(&log), vec![1, 2]);
    assert_eq!(log.clean_point(), 2);
}

#[test]
fn nothing_dirty_below_the_active_segment_changes_nothing() {
    let mut log = SpecLog::new(BIG);
    put(&mut log, None, Some("e"), 0);
    log.roll();
    put(&mut log, Some("a"), Some("1"), 1);
    log.clean(10, 1000, None, kafka()).unwrap();
    assert_eq!(offsets(&log), vec![1]);
    let before = log.clone();
    let summary = log.clean(10, 1000, None, kafka()).unwrap();
    assert_eq!(log, before);
    assert_eq!(summary.records_after, summary.records_before);
}

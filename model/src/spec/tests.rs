//! The seeds' worked example and exercises, and the section 1 edge cases.

use super::*;

const BIG: u64 = 1 << 20;

fn input(key: Option<&str>, value: Option<&str>, timestamp: i64) -> SpecRecordInput {
    SpecRecordInput {
        key: key.map(|k| k.as_bytes().to_vec()),
        value: value.map(|v| v.as_bytes().to_vec()),
        timestamp,
    }
}

fn triples(log: &SpecLog, from: i64) -> Vec<(i64, Option<String>, Option<String>)> {
    let text = |b: &Option<Vec<u8>>| b.as_ref().map(|b| String::from_utf8_lossy(b).into_owned());
    log.read(from)
        .unwrap()
        .iter()
        .map(|r| (r.offset, text(&r.key), text(&r.value)))
        .collect()
}

fn seed_retention_log(maxima: [i64; 3]) -> SpecLog {
    let mut log = SpecLog::new(BIG);
    for ts in maxima {
        log.append(&[input(None, Some("x"), ts)]).unwrap();
        log.roll();
    }
    log.append(&[input(None, Some("250"), 250)]).unwrap();
    log
}

#[test]
fn seed_retention_at_300_with_100_ms_deletes_bases_0_1_2() {
    let mut log = seed_retention_log([0, 50, 150]);
    assert_eq!(log.retain(300, Some(100), None).unwrap(), vec![0, 1, 2]);
    assert_eq!(log.log_start_offset(), 3);
    assert_eq!(log.next_offset(), 4);
    assert_eq!(log.segments().len(), 1);
    assert!(!log.segments()[0].closed);
    assert!(matches!(
        log.read(2),
        Err(SpecError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn seed_non_monotonic_maxima_delete_nothing() {
    let mut log = seed_retention_log([250, 0, 0]);
    assert_eq!(log.retain(300, Some(100), None).unwrap(), Vec::<i64>::new());
    assert_eq!(log.log_start_offset(), 0);
    // The negative space: with the first segment expired the prefix would go.
    let mut expired = seed_retention_log([0, 0, 0]);
    assert_eq!(expired.retain(300, Some(100), None).unwrap(), vec![0, 1, 2]);
}

#[test]
fn seed_compaction_4_to_3_keeps_offsets() {
    let mut log = SpecLog::new(BIG);
    log.append(&[
        input(Some("a"), Some("1"), 0),
        input(Some("b"), Some("x"), 1),
    ])
    .unwrap();
    log.roll();
    log.append(&[
        input(Some("a"), Some("2"), 2),
        input(None, Some("event"), 3),
    ])
    .unwrap();
    log.roll();
    log.append(&[input(Some("active"), Some("keep"), 4)])
        .unwrap();
    let summary = log.compact(10, 1000, None).unwrap();
    assert_eq!(summary.records_before, 4);
    assert_eq!(summary.records_after, 3);
    assert_eq!(summary.segments_before, 2);
    assert_eq!(summary.segments_after, 1);
    // Keyless "event": body 1+1+1+1+6+1 = 11, + 1 = 12; the others take 9.
    assert_eq!(summary.bytes_before, 2 * 61 + 9 + 9 + 9 + 12);
    assert_eq!(summary.bytes_after, 2 * 61 + 9 + 9 + 12);
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        triples(&log, 0),
        vec![
            (1, s("b"), s("x")),
            (2, s("a"), s("2")),
            (3, None, s("event")),
            (4, s("active"), s("keep")),
        ]
    );
    // The partly kept first batch keeps base offset 0, delta 1 and base timestamp 0.
    let first = &log.raw_segments()[0].batches[0];
    assert_eq!((first.base_offset, first.last_offset_delta), (0, 1));
    assert_eq!((first.base_timestamp, first.max_timestamp), (0, 1));
    assert_eq!(log.log_start_offset(), 0);
    assert_eq!(log.next_offset(), 5);
}

fn tombstone_log() -> SpecLog {
    let mut log = SpecLog::new(BIG);
    log.append(&[input(Some("a"), Some("1"), 0)]).unwrap();
    log.append(&[input(Some("a"), None, 100)]).unwrap();
    log.roll();
    log
}

#[test]
fn seed_tombstone_kept_at_500_gone_at_2000() {
    let mut young = tombstone_log();
    young.compact(500, 1000, None).unwrap();
    let records = young.read(0).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].offset, 1);
    assert_eq!(records[0].value, None);

    let mut old = tombstone_log();
    let summary = old.compact(2000, 1000, None).unwrap();
    assert!(old.read(0).unwrap().is_empty());
    assert_eq!(summary.records_after, 0);
    // The emptied source segment stays as an empty output segment at its base.
    assert_eq!(old.segments()[0].base_offset, 0);
    assert_eq!(old.segments()[0].bytes, 0);
    assert_eq!(old.segments()[0].max_timestamp, NO_TIMESTAMP);
    assert_eq!(old.next_offset(), 2);
}

#[test]
fn active_segment_counts_for_latest_but_is_copied_unchanged() {
    let mut log = SpecLog::new(BIG);
    log.append(&[input(Some("a"), Some("old"), 0)]).unwrap();
    log.roll();
    log.append(&[
        input(Some("a"), Some("new"), 1),
        input(Some("a"), Some("newer"), 2),
    ])
    .unwrap();
    let active_before = log.active().clone();
    log.compact(10, 1000, None).unwrap();
    assert_eq!(log.active(), &active_before);
    assert_eq!(triples(&log, 0).len(), 2);
}

#[test]
fn control_batches_pass_through_and_are_not_keys() {
    let mut log = SpecLog::new(BIG);
    assert_eq!(log.append_control(true, 0), (0, 0));
    // A data record whose key equals the control key is not superseded by the marker.
    log.append(&[input(Some("\0\0\0\u{1}"), Some("v"), 1)])
        .unwrap();
    log.roll();
    log.compact(10, 1000, None).unwrap();
    let records = log.read(0).unwrap();
    assert_eq!(records.len(), 2);
    assert!(records[0].control);
    assert!(!records[1].control);
    // Marker: 61 + 17. Data: key 4 bytes, value 1 byte: body 1+1+1+5+2+1 = 11, + 1.
    assert_eq!(log.segments()[0].bytes, 78 + 73);
}

#[test]
fn auto_roll_and_roll_rules() {
    // Two 70-byte batches fit in 140 bytes, a third does not.
    let mut log = SpecLog::new(140);
    log.roll();
    assert_eq!(
        log.segments().len(),
        1,
        "roll on an empty active segment is a no-op"
    );
    for ts in 0..3 {
        log.append(&[input(Some("a"), Some("1"), ts)]).unwrap();
    }
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    assert_eq!(bases, vec![0, 2]);
    // A batch larger than segment_bytes goes alone into an empty segment.
    let mut tiny = SpecLog::new(10);
    tiny.append(&[input(None, Some("x"), 0)]).unwrap();
    tiny.append(&[input(None, Some("y"), 0)]).unwrap();
    assert_eq!(tiny.segments().len(), 2);
    assert_eq!(tiny.segments()[0].records, 1);
    assert!(matches!(
        tiny.append(&[]),
        Err(SpecError::InvalidArgument(_))
    ));
}

#[test]
fn read_range_and_gaps() {
    let mut log = tombstone_log();
    log.append(&[input(Some("b"), Some("2"), 3)]).unwrap();
    log.compact(500, 1000, None).unwrap();
    assert_eq!(log.read(0).unwrap().first().map(|r| r.offset), Some(1));
    assert_eq!(
        log.read(3).unwrap().len(),
        0,
        "from == next_offset is empty"
    );
    assert!(log.read(4).is_err());
    assert!(log.read(-1).is_err());
}

#[test]
fn size_retention_continues_after_time() {
    let mut log = SpecLog::new(BIG);
    for ts in [0, 1000, 1000] {
        log.append(&[input(None, Some("x"), ts)]).unwrap();
        log.roll();
    }
    log.append(&[input(None, Some("x"), 1000)]).unwrap();
    // Each segment is 61 + 8 = 69 bytes. Time selects base 0; size then keeps two.
    assert_eq!(log.retain(1050, Some(100), Some(138)).unwrap(), vec![0, 1]);
    assert_eq!(log.retain(1050, None, Some(1)).unwrap(), vec![2]);
    assert!(log.retain(0, Some(-1), None).is_err());
    assert!(log.retain(0, None, Some(0)).is_err());
    assert!(
        log.delete_prefix(&[3]).is_err(),
        "the active segment is never deleted"
    );
}

#[test]
fn compaction_groups_by_compacted_bytes() {
    let mut log = SpecLog::new(BIG);
    for key in ["a", "b", "c"] {
        log.append(&[input(Some(key), Some("1"), 0)]).unwrap();
        log.roll();
    }
    // 70 bytes each: with 140 the first two merge and the third starts a new group.
    let summary = log.compact(0, 1000, Some(140)).unwrap();
    assert_eq!(summary.segments_after, 2);
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    assert_eq!(bases, vec![0, 2, 3]);
}

#[test]
fn from_parts_round_trips_and_rejects_broken_structure() {
    let mut log = tombstone_log();
    log.append(&[input(Some("b"), Some("2"), 3)]).unwrap();
    let rebuilt =
        SpecLog::from_parts(BIG, log.log_start_offset(), log.raw_segments().to_vec()).unwrap();
    assert_eq!(rebuilt, log);
    assert!(SpecLog::from_parts(BIG, 1, log.raw_segments().to_vec()).is_err());
    assert!(SpecLog::from_parts(BIG, 0, Vec::new()).is_err());
    let mut overlapping = log.raw_segments().to_vec();
    overlapping[1].base_offset = 1;
    assert!(SpecLog::from_parts(BIG, 0, overlapping).is_err());
}

#[test]
fn read_max_returns_whole_batches_and_at_least_one() {
    let mut log = SpecLog::new(BIG);
    log.append(&[
        input(Some("a"), Some("1"), 0),
        input(Some("b"), Some("2"), 0),
    ])
    .unwrap();
    log.append(&[input(Some("c"), Some("3"), 0)]).unwrap();
    // Batch sizes: 61 + 9 + 9 = 79, then 70.
    assert_eq!(
        log.read_max(0, 1).unwrap().len(),
        2,
        "one whole batch even if too big"
    );
    assert_eq!(log.read_max(0, 148).unwrap().len(), 2);
    assert_eq!(log.read_max(0, 149).unwrap().len(), 3);
    // From inside the first batch: only its records >= from.
    let from_1 = log.read_max(1, 1).unwrap();
    assert_eq!(from_1.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![1]);
    assert_eq!(log.read_max(3, 10).unwrap().len(), 0);
}

#[test]
fn json_round_trip_validates_structure() {
    let mut log = tombstone_log();
    log.append_control(false, 200);
    let json = serde_json::to_string(&log).unwrap();
    let back: SpecLog = serde_json::from_str(&json).unwrap();
    assert_eq!(back, log);
    // Overlapping segments are refused on the way in.
    let mut value: serde_json::Value = serde_json::from_str(&json).unwrap();
    value["segments"][1]["base_offset"] = serde_json::json!(0);
    assert!(serde_json::from_value::<SpecLog>(value).is_err());
}

/// Two closed segments compacted so that batch [0, 2] keeps only offset 0 (its end
/// is a gap) and a foreign batch [6, 9] holding only offset 7 ends the active segment.
fn gap_log() -> SpecLog {
    let mut log = SpecLog::new(BIG);
    log.append(&[
        input(Some("a"), Some("1"), 10),
        input(Some("b"), Some("1"), 10),
        input(Some("c"), Some("1"), 10),
    ])
    .unwrap();
    log.roll();
    log.append(&[
        input(Some("b"), Some("2"), 11),
        input(Some("c"), Some("2"), 11),
    ])
    .unwrap();
    log.roll();
    log.append(&[input(None, Some("x"), 12)]).unwrap();
    // A 1-byte grouping bound: every compacted segment stays alone.
    log.compact(20, 100, Some(1)).unwrap();
    let batch = Batch {
        base_offset: 6,
        last_offset_delta: 3,
        control: false,
        base_timestamp: 13,
        max_timestamp: 14,
        records: vec![Rec::new(7, Some(b"d"), Some(b"4"), 14)],
        codec: 0,
        log_append_time: false,
        delete_horizon: None,
        producer_id: -1,
        producer_epoch: -1,
        transactional: false,
    };
    assert_eq!(log.append_foreign(batch), Ok((6, 9)));
    log
}

#[test]
fn fetch_returns_a_batch_that_ends_in_a_gap() {
    let log = gap_log();
    assert_eq!(log.next_offset(), 10);
    let first = &log.raw_segments()[0].batches[0];
    assert_eq!((first.base_offset, first.last_offset()), (0, 2));
    assert_eq!(first.records.len(), 1);
    // From inside the gap: the batch still ends at 2, so it is returned, though no
    // record of it is >= 1 (a record read skips it).
    let fetched = log.fetch(1, 1).unwrap();
    assert_eq!(fetched.batches, vec![first.clone()]);
    assert_eq!(fetched.next_offset, 3);
    assert!(log.read_max(1, 1).unwrap().iter().all(|r| r.offset >= 3));
    // From 3: the next segment; a fetch never spans two segments, read_raw does.
    let fetched = log.fetch(0, u64::MAX).unwrap();
    assert_eq!(fetched.batches.len(), 1);
    assert_eq!(fetched.next_offset, 3);
    let raw = log.read_raw(0, u64::MAX).unwrap();
    assert_eq!(raw.batches.len(), 4);
    assert_eq!(raw.next_offset, 10);
    // The foreign batch: from its gap at 8 and 9 it is returned; from 10 nothing.
    let fetched = log.fetch(9, 1).unwrap();
    assert_eq!(fetched.batches[0].base_offset, 6);
    assert_eq!(fetched.next_offset, 10);
    let empty = log.fetch(10, u64::MAX).unwrap();
    assert!(empty.batches.is_empty());
    assert_eq!(empty.next_offset, 10);
    assert!(matches!(
        log.fetch(11, 1),
        Err(SpecError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn read_raw_stops_at_the_first_batch_over_the_bound() {
    let log = gap_log();
    let all = log.read_raw(0, u64::MAX).unwrap().batches;
    let two: u64 = all[..2].iter().map(Batch::bytes).sum();
    assert_eq!(log.read_raw(0, two).unwrap().batches, all[..2].to_vec());
    assert_eq!(log.read_raw(0, two - 1).unwrap().batches, all[..1].to_vec());
    assert_eq!(log.read_raw(0, two - 1).unwrap().next_offset, 3);
}

#[test]
fn an_append_after_a_foreign_batch_starts_after_its_gap() {
    let mut log = gap_log();
    assert_eq!(log.append(&[input(None, Some("y"), 15)]).unwrap(), (10, 10));
    // A foreign batch may not overlap what is there.
    let overlapping = Batch {
        base_offset: 10,
        last_offset_delta: 0,
        control: false,
        base_timestamp: 1,
        max_timestamp: 1,
        records: vec![Rec::new(10, None, Some(b"z"), 1)],
        codec: 0,
        log_append_time: false,
        delete_horizon: None,
        producer_id: -1,
        producer_epoch: -1,
        transactional: false,
    };
    assert!(matches!(
        log.append_foreign(overlapping),
        Err(SpecError::InvalidArgument(_))
    ));
}

/// A LogAppendTime log's clock stamps every data batch (plain, a produce request's,
/// transactional): each record reads as the stamp, the batch's and the segment's
/// `max_timestamp` is it, and the batch keeps the create times it was given. A
/// marker keeps its own timestamp.
#[test]
fn log_append_time_stamps_plain_raw_and_transactional_batches() {
    let mut log = SpecLog::new(BIG);
    let stamp = Some(500);
    log.append_with(&[input(Some("a"), Some("1"), 7)], 0, stamp)
        .unwrap();
    let raw = SpecRawBatch {
        records: vec![input(Some("b"), Some("2"), 9), input(None, Some("3"), 900)],
        codec: 0,
        valid: true,
    };
    assert_eq!(log.append_batches(&[raw], stamp), Ok((1, 2)));
    assert_eq!(
        log.append_transactional_with(TXN_PRODUCER_ID, &[input(Some("c"), Some("4"), 11)], stamp),
        Ok((3, 3))
    );
    log.append_control(true, 12);
    let batches: Vec<&Batch> = log.batches().collect();
    for batch in &batches[..3] {
        assert!(batch.log_append_time, "{batch:?}");
        assert_eq!(batch.max_timestamp, 500);
    }
    assert!(batches[2].is_transactional_data());
    assert_eq!(batches[1].records[1].stored_timestamp(), 900);
    assert!(!batches[3].log_append_time);
    assert_eq!(batches[3].max_timestamp, 12);
    let read: Vec<(i64, i64)> = log
        .read(0)
        .unwrap()
        .iter()
        .map(|r| (r.offset, r.timestamp))
        .collect();
    assert_eq!(read, [(0, 500), (1, 500), (2, 500), (3, 500), (4, 12)]);
    assert_eq!(log.segments()[0].max_timestamp, 500);
    // The committed transaction's stamped batch reads committed as it is.
    assert_eq!(log.read_committed(3).unwrap()[0].timestamp, 500);
}

use super::*;
use crate::format::index::{encode_offset_entries, encode_time_entries};

/// Base 100: batches at 0 (100..=102, max 10), 100 (103..=105, max 5),
/// 200 (106..=109, max 20), 300 (110, max 20); 380 valid bytes.
fn segment() -> SegmentBatches {
    let mark = |position, last_offset, max_timestamp| BatchMark {
        position,
        last_offset,
        max_timestamp,
    };
    SegmentBatches {
        base_offset: 100,
        valid_bytes: 380,
        batches: vec![
            mark(0, 102, 10),
            mark(100, 105, 5),
            mark(200, 109, 20),
            mark(300, 110, 20),
        ],
    }
}

fn offsets(entries: &[(u32, u32)]) -> Vec<u8> {
    let entries: Vec<OffsetEntry> = entries
        .iter()
        .map(|&(relative_offset, position)| OffsetEntry {
            relative_offset,
            position,
        })
        .collect();
    encode_offset_entries(&entries)
}

fn times(entries: &[(i64, u32)]) -> Vec<u8> {
    let entries: Vec<TimeEntry> = entries
        .iter()
        .map(|&(timestamp, relative_offset)| TimeEntry {
            timestamp,
            relative_offset,
        })
        .collect();
    encode_time_entries(&entries)
}

fn offset_rule(bytes: &[u8]) -> Option<(IndexRule, u64)> {
    match validate_offset_index(bytes, &segment()) {
        Verdict::Valid(_) => None,
        Verdict::Invalid(i) => Some((i.rule, i.position)),
    }
}

fn time_rule(bytes: &[u8]) -> Option<(IndexRule, u64)> {
    match validate_time_index(bytes, &segment()) {
        Verdict::Valid(_) => None,
        Verdict::Invalid(i) => Some((i.rule, i.position)),
    }
}

#[test]
fn offset_indexes_kafka_can_write_are_valid() {
    assert_eq!(offset_rule(&[]), None);
    // One entry per batch (seglog's and Kafka's single-batch appends).
    assert_eq!(
        offset_rule(&offsets(&[(5, 100), (9, 200), (10, 300)])),
        None
    );
    // One entry per append of several batches: the last offset of the append at
    // the position of its first batch.
    assert_eq!(offset_rule(&offsets(&[(5, 0), (10, 200)])), None);
    let Verdict::Valid(entries) = validate_offset_index(&offsets(&[(9, 100)]), &segment()) else {
        panic!("valid")
    };
    assert_eq!(
        entries,
        vec![OffsetEntry {
            relative_offset: 9,
            position: 100
        }]
    );
}

#[test]
fn offset_index_rules_each_reject_their_case() {
    let partial = offsets(&[(5, 100)])[..7].to_vec();
    assert_eq!(offset_rule(&partial), Some((IndexRule::PartialEntry, 0)));
    assert_eq!(
        offset_rule(&offsets(&[(9, 200), (5, 100)])),
        Some((IndexRule::NotIncreasing, 8))
    );
    assert_eq!(
        offset_rule(&offsets(&[(5, 100), (9, 100)])),
        Some((IndexRule::NotIncreasing, 8))
    );
    assert_eq!(
        offset_rule(&offsets(&[(5, 50)])),
        Some((IndexRule::NotAtBatch, 0))
    );
    assert_eq!(
        offset_rule(&offsets(&[(5, 100), (12, 380)])),
        Some((IndexRule::BeyondLog, 8))
    );
    // Offset 105 ends the batch at 100, not one of the append starting at 0 that
    // the next entry (at 100) bounds.
    assert_eq!(
        offset_rule(&offsets(&[(5, 0), (9, 100)])),
        Some((IndexRule::WrongOffset, 0))
    );
    // An offset inside a batch is not a batch's last offset.
    assert_eq!(
        offset_rule(&offsets(&[(4, 100)])),
        Some((IndexRule::WrongOffset, 0))
    );
}

#[test]
fn time_indexes_kafka_can_write_are_valid() {
    assert_eq!(time_rule(&[]), None);
    assert_eq!(time_rule(&times(&[(10, 2)])), None);
    // With the close-time entry (max so far, its batch's last offset).
    assert_eq!(time_rule(&times(&[(10, 2), (20, 9)])), None);
    assert_eq!(time_rule(&times(&[(20, 9)])), None);
}

#[test]
fn time_index_rules_each_reject_their_case() {
    assert_eq!(
        time_rule(&times(&[(10, 2)])[..11]),
        Some((IndexRule::PartialEntry, 0))
    );
    assert_eq!(
        time_rule(&times(&[(20, 9), (10, 2)])),
        Some((IndexRule::NotIncreasing, 12))
    );
    assert_eq!(
        time_rule(&times(&[(-1, 2)])),
        Some((IndexRule::NotIncreasing, 0))
    );
    assert_eq!(
        time_rule(&times(&[(10, 1)])),
        Some((IndexRule::NotAtBatch, 0))
    );
    // Batch 103..=105 has max 5, but a batch before it reached 10 already.
    assert_eq!(
        time_rule(&times(&[(5, 5)])),
        Some((IndexRule::WrongTimestamp, 0))
    );
    // The batch at 110 has max 20, but the one before reached 20 first.
    assert_eq!(
        time_rule(&times(&[(10, 2), (20, 10)])),
        Some((IndexRule::WrongTimestamp, 12))
    );
    assert_eq!(
        time_rule(&times(&[(11, 2)])),
        Some((IndexRule::WrongTimestamp, 0))
    );
    assert_eq!(
        time_rule(&times(&[(10, 2), (30, 20)])),
        Some((IndexRule::BeyondLog, 12))
    );
}

#[test]
fn zeros_after_the_entries_are_an_untrimmed_preallocation() {
    let mut bytes = offsets(&[(5, 100)]);
    bytes.extend_from_slice(&[0; 64]);
    assert_eq!(offset_rule(&bytes), Some((IndexRule::Untrimmed, 8)));
    let mut bytes = times(&[(10, 2)]);
    bytes.extend_from_slice(&[0; 36]);
    assert_eq!(time_rule(&bytes), Some((IndexRule::Untrimmed, 12)));
    // A zero entry that is itself valid (offset 100 at position 0 is not: the first
    // batch ends at 102) is still judged by the rules, not by its bytes.
    assert_eq!(offset_rule(&[0; 8]), Some((IndexRule::Untrimmed, 0)));
}

use super::*;
use crate::error::CorruptKind;
use crate::format::batch::{LAST_OFFSET_DELTA_OFFSET, PRODUCER_ID_OFFSET, RECORD_COUNT_OFFSET};
use crate::format::{NewRecord, RecordBatch};

fn records(n: usize, ts: i64) -> Vec<NewRecord> {
    (0..n)
        .map(|i| {
            NewRecord::new(
                Some(format!("k{i}").into_bytes()),
                Some(vec![i as u8; i % 7]),
                ts + i as i64,
            )
        })
        .collect()
}

/// A batch as a producer sends it: base offset 0, CreateTime.
fn produced(n: usize, ts: i64) -> Vec<u8> {
    RecordBatch::build(0, &records(n, ts)).encode()
}

/// Recomputes the CRC after a deliberate change, so only the rule under test breaks.
fn fix_crc(batch: &mut [u8]) {
    let crc = crate::format::crc::crc32c(&batch[ATTRIBUTES_OFFSET..]);
    batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

/// The rejection of `bad` placed second, after a valid batch.
fn rejection_of(bad: &[u8]) -> Rejection {
    let mut request = produced(2, 10);
    let position = request.len();
    request.extend_from_slice(bad);
    let rejection = check(&request, 1 << 20).unwrap_err();
    assert_eq!(rejection.batch, 1);
    assert_eq!(rejection.position, position);
    rejection
}

#[test]
fn concatenated_producer_batches_pass_with_their_positions() {
    let parts = [produced(1, 5), produced(3, 7), produced(40, -1)];
    let request: Vec<u8> = parts.concat();
    let batches = check(&request, 1 << 20).unwrap();
    assert_eq!(batches.len(), 3);
    assert_eq!(batches[0].position, 0);
    assert_eq!(batches[1].position, parts[0].len());
    assert_eq!(batches[2].position, parts[0].len() + parts[1].len());
    assert_eq!(batches.iter().map(|b| b.size).sum::<usize>(), request.len());
    assert_eq!(
        batches.iter().map(|b| b.record_count).collect::<Vec<_>>(),
        vec![1, 3, 40]
    );
    assert_eq!(batches[1].max_record_timestamp, 9);
    assert_eq!(batches[2].max_record_timestamp, 38);
}

#[test]
fn empty_request_is_no_batches() {
    let rejection = check(&[], 1 << 20).unwrap_err();
    assert_eq!(rejection.rule, BatchRule::NoBatches);
}

#[test]
fn each_rule_names_itself() {
    // CRC-32C.
    let mut bad = produced(2, 1);
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert!(matches!(
        rejection_of(&bad).rule,
        BatchRule::Format {
            kind: CorruptKind::ChecksumMismatch { .. },
            ..
        }
    ));
    // Magic.
    let mut bad = produced(2, 1);
    bad[crate::format::batch::MAGIC_OFFSET] = 1;
    assert!(matches!(rejection_of(&bad).rule, BatchRule::Unsupported(_)));
    // Cut short.
    let bad = produced(2, 1);
    assert!(matches!(
        rejection_of(&bad[..bad.len() - 3]).rule,
        BatchRule::Format {
            kind: CorruptKind::Truncated { .. },
            ..
        }
    ));
    // Control bit.
    let mut bad = produced(1, 1);
    bad[ATTRIBUTES_OFFSET + 1] |= ATTR_CONTROL as u8;
    fix_crc(&mut bad);
    assert_eq!(rejection_of(&bad).rule, BatchRule::ControlBatch);
    // Unknown codec.
    let mut bad = produced(1, 1);
    bad[ATTRIBUTES_OFFSET + 1] |= 6;
    fix_crc(&mut bad);
    assert!(matches!(
        rejection_of(&bad).rule,
        BatchRule::Format {
            kind: CorruptKind::UnknownCodec { id: 6 },
            ..
        }
    ));
    // lastOffsetDelta beyond the count.
    let mut bad = produced(2, 1);
    bad[LAST_OFFSET_DELTA_OFFSET..LAST_OFFSET_DELTA_OFFSET + 4]
        .copy_from_slice(&2i32.to_be_bytes());
    fix_crc(&mut bad);
    assert_eq!(
        rejection_of(&bad).rule,
        BatchRule::RecordCount {
            record_count: 2,
            last_offset_delta: 2
        }
    );
    // An idempotent producer without a sequence.
    let mut bad = produced(1, 1);
    bad[PRODUCER_ID_OFFSET..PRODUCER_ID_OFFSET + 8].copy_from_slice(&7i64.to_be_bytes());
    fix_crc(&mut bad);
    assert_eq!(
        rejection_of(&bad).rule,
        BatchRule::Sequence {
            producer_id: 7,
            base_sequence: -1
        }
    );
    // A timestamp below -1.
    let bad = RecordBatch::build(0, &records(3, -4)).encode();
    assert_eq!(
        rejection_of(&bad).rule,
        BatchRule::Timestamp {
            record: 0,
            timestamp: -4
        }
    );
    // Offset deltas with a gap: two records, lastOffsetDelta 2.
    let mut gapped = RecordBatch::build(0, &records(3, 1));
    gapped.records[1].offset_delta = 2;
    gapped.records.pop();
    gapped.last_offset_delta = 2;
    assert_eq!(
        rejection_of(&gapped.encode()).rule,
        BatchRule::RecordCount {
            record_count: 2,
            last_offset_delta: 2
        }
    );
    // Too large for the log.
    let big = produced(50, 1);
    let rejection = check(&big, 100).unwrap_err();
    assert_eq!(
        rejection.rule,
        BatchRule::TooLarge {
            size_bytes: big.len() as u64,
            max_bytes: 100
        }
    );
    // Record count 0 (lastOffsetDelta -1 is corrupt already; 0 with count 0 is not).
    let mut empty = produced(1, 1);
    empty[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4].copy_from_slice(&0i32.to_be_bytes());
    fix_crc(&mut empty);
    assert_eq!(
        rejection_of(&empty).rule,
        BatchRule::RecordCount {
            record_count: 0,
            last_offset_delta: 0
        }
    );
}

#[test]
fn a_first_offset_delta_other_than_zero_is_refused() {
    // Deltas 0 then 0: the decoder's strictly-increasing rule; 1 then 2: ours.
    let mut batch = RecordBatch::build(0, &records(2, 1));
    batch.records[1].offset_delta = 0;
    let rule = rejection_of(&batch.encode()).rule;
    assert!(
        matches!(
            rule,
            BatchRule::Format {
                kind: CorruptKind::OffsetDelta { .. },
                ..
            }
        ),
        "{rule:?}"
    );
    let mut batch = RecordBatch::build(0, &records(2, 1));
    batch.records[0].offset_delta = 1;
    batch.records[1].offset_delta = 2;
    assert_eq!(
        rejection_of(&batch.encode()).rule,
        BatchRule::OffsetDelta {
            record: 0,
            delta: 1
        }
    );
}

#[test]
fn assign_gives_the_bytes_of_a_structured_append() {
    let recs = records(5, 100);
    let mut batch = produced(5, 100);
    let (max, recomputed) = assign(&mut batch, 1 << 33, 104, None);
    assert_eq!(max, 104);
    assert!(!recomputed, "a producer's correct batch keeps its CRC");
    assert_eq!(batch, RecordBatch::build(1 << 33, &recs).encode());
    // LogAppendTime: bit, maxTimestamp, CRC.
    let mut stamped = produced(5, 100);
    let (max, recomputed) = assign(&mut stamped, 9, 104, Some(77_000));
    assert_eq!(max, 77_000);
    assert!(recomputed);
    assert_eq!(
        stamped,
        RecordBatch::build(9, &recs)
            .with_log_append_time(77_000)
            .encode()
    );
    // A wrong maxTimestamp is corrected (Kafka's setMaxTimestamp) and the CRC follows.
    let mut wrong = produced(5, 100);
    wrong[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8].copy_from_slice(&5i64.to_be_bytes());
    fix_crc(&mut wrong);
    assert!(check(&wrong, 1 << 20).is_ok());
    let (_, recomputed) = assign(&mut wrong, 3, 104, None);
    assert!(recomputed);
    assert_eq!(wrong, RecordBatch::build(3, &recs).encode());
}

#[cfg(feature = "compression")]
#[test]
fn compressed_producer_batches_pass_and_keep_their_codec() {
    use crate::format::Compression;
    for codec in Compression::ALL {
        let recs = records(9, 50);
        let batch = RecordBatch::build(0, &recs).with_compression(codec);
        let mut bytes = batch.encode();
        let checked = check(&bytes, 1 << 20).unwrap();
        assert_eq!(checked[0].record_count, 9);
        assert_eq!(checked[0].max_record_timestamp, 58);
        assign(&mut bytes, 40, 58, None);
        let want = RecordBatch::build(40, &recs)
            .with_compression(codec)
            .encode();
        assert_eq!(bytes, want, "{codec}");
    }
}

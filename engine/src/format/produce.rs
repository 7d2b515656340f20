//! Producer-encoded batches as a broker takes them: Kafka's produce-request rules
//! ([`check`]) and the in-place offset assignment ([`assign`]). Pure: no IO.
//!
//! A producer sends finished v2 batches; the broker checks them, writes the base
//! offset and partition leader epoch into each header (both outside the CRC-32C,
//! [`super::batch`]'s layout), and stores the bytes as they came. Only a change of
//! `attributes` or `maxTimestamp` (LogAppendTime, or a producer's `maxTimestamp`
//! that is not its records' maximum, which Kafka's `setMaxTimestamp` corrects too)
//! touches the CRC region, and then the CRC is recomputed.
//!
//! The rules, in the order [`check`] applies them to each batch (docs/design.md
//! section 1c): the log overhead and length, magic 2, the size within
//! `max_batch_bytes`, the bytes there, CRC-32C, a known codec, the control bit
//! clear, `recordCount > 0` and `== lastOffsetDelta + 1`, a producer id only with a
//! base sequence, then every record (decompressed for a compressed batch):
//! well-formed, offset delta equal to its index, timestamp >= -1, and no bytes
//! after the last one.
//!
//! `walk`: that short record walk, which checks the records without building a
//! record view.
//!
//! # The rules
//!
//! Each rule with the `BatchRule` a batch that breaks it gets (`engine/src/error.rs`) and
//! Kafka's exception for it:
//!
//! | # | rule | `BatchRule` | Kafka's exception |
//! |---|---|---|---|
//! | 0 | the request holds at least one byte | `NoBatches` | |
//! | 1 | 12 bytes of log overhead, `batchLength` in `[49, 64 MiB]`, magic 2 (0 and 1 are `Unsupported`) | `Format` / `Unsupported` | `CorruptRecordException` / `UnsupportedVersion` |
//! | 2 | size (overhead included) <= `LogConfig::max_batch_bytes` (Kafka's `max.message.bytes`, default 1048588) | `TooLarge` | `RecordTooLargeException` |
//! | 3 | the declared bytes are there, CRC-32C matches, codec id 0-4 | `Format` | `CorruptRecordException` |
//! | 4 | control bit clear | `ControlBatch` | "Clients are not allowed to write control records" |
//! | 5 | `recordCount > 0` and `== lastOffsetDelta + 1` | `RecordCount` | `InvalidRecordException` |
//! | 6 | a producer id (`>= 0`) comes with a base sequence (`>= 0`) | `Sequence` | `InvalidRecordException` |
//! | 7 | every record (decompressed first for a compressed batch, within 64 MiB; a codec this build lacks is `Unsupported`) well-formed, offset deltas strictly increasing, no bytes after the last | `Format` | `CorruptRecordException` |
//! | 8 | record `i` has offset delta `i` | `OffsetDelta` | `InvalidRecordException` |
//! | 9 | every timestamp (`baseTimestamp + delta`) >= -1 | `Timestamp` | (the engine's rule for every append) |
//!
//! Rules 7-9 are checked by a short walk first (`format::produce::walk::accepts`); what
//! it does not accept goes through the full walk, which names the rule, and a
//! differential proptest holds the two to the same answers. Not checked (no state for
//! them here): producer sequence numbers, Kafka's timestamp-skew limits. Then, per
//! batch, in place (`format::produce::assign`): `baseOffset` = the next offset,
//! `partitionLeaderEpoch` = -1, and `maxTimestamp` as the timestamp type says (the CRC
//! recomputed only if a byte changed); the producer's codec is kept.

use crate::error::BatchRule;

use super::batch::RECORDS_OFFSET;
use super::batch::{
    decode_header, ATTRIBUTES_OFFSET, ATTR_CONTROL, BASE_OFFSET_OFFSET, CRC_OFFSET, HEADER_LEN,
    MAX_TIMESTAMP_OFFSET, NO_PARTITION_LEADER_EPOCH, NO_TIMESTAMP, PARTITION_LEADER_EPOCH_OFFSET,
};
use super::batch_view::BatchView;
use super::timestamp_type::ATTR_LOG_APPEND_TIME;
use super::FormatError;

mod walk;

/// One batch of a produce request that passed [`check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducedBatch {
    /// Byte position of the batch in the request.
    pub position: usize,
    /// Bytes of the batch, log overhead included.
    pub size: usize,
    /// Its records (`lastOffsetDelta + 1`).
    pub record_count: usize,
    /// The largest of its records' timestamps (base + delta), or -1.
    pub max_record_timestamp: i64,
}

/// A batch that broke a rule: its index, its position in the request, the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// Index of the batch in the request (0 = the first).
    pub batch: usize,
    /// Byte position of the batch in the request.
    pub position: usize,
    /// The rule it broke.
    pub rule: BatchRule,
}

impl From<Rejection> for crate::error::Error {
    fn from(r: Rejection) -> Self {
        crate::error::Error::InvalidBatch {
            batch: r.batch,
            position: r.position as u64,
            rule: r.rule,
        }
    }
}

fn rule_of(error: FormatError) -> BatchRule {
    match error {
        FormatError::Corrupt { position, kind } => BatchRule::Format { position, kind },
        FormatError::Unsupported(what) => BatchRule::Unsupported(what),
    }
}

/// Checks every batch of `request` (one or more v2 batches back to back) by Kafka's
/// produce-request rules; the first batch that breaks one rejects the request.
pub fn check(request: &[u8], max_batch_bytes: usize) -> Result<Vec<ProducedBatch>, Rejection> {
    check_walking(request, max_batch_bytes, Walk::Short)
}

/// [`check`] into `batches`, cleared first, so that a caller that keeps the vector
/// between requests (the log's raw append) allocates nothing per request. After a
/// rejection it holds the batches before the rejected one.
pub fn check_into(
    request: &[u8],
    max_batch_bytes: usize,
    batches: &mut Vec<ProducedBatch>,
) -> Result<(), Rejection> {
    check_walking_into(request, max_batch_bytes, Walk::Short, batches)
}

/// How [`check`] walks a batch's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// [`walk::accepts`] first; the full walk only for what it does not accept.
    Short,
    /// Every record decoded as a [`RecordView`](super::record::RecordView) (the
    /// reference the short walk is tested against).
    #[cfg_attr(not(test), expect(dead_code, reason = "the tests' reference walk"))]
    Full,
}

fn check_walking(
    request: &[u8],
    max_batch_bytes: usize,
    mode: Walk,
) -> Result<Vec<ProducedBatch>, Rejection> {
    let mut batches = Vec::new();
    check_walking_into(request, max_batch_bytes, mode, &mut batches)?;
    Ok(batches)
}

fn check_walking_into(
    request: &[u8],
    max_batch_bytes: usize,
    mode: Walk,
    batches: &mut Vec<ProducedBatch>,
) -> Result<(), Rejection> {
    batches.clear();
    let mut position = 0;
    if request.is_empty() {
        return Err(Rejection {
            batch: 0,
            position: 0,
            rule: BatchRule::NoBatches,
        });
    }
    while position < request.len() {
        let rest = request.get(position..).unwrap_or_default();
        let batch = check_one(rest, max_batch_bytes, mode)
            .map(|b| ProducedBatch { position, ..b })
            .map_err(|rule| Rejection {
                batch: batches.len(),
                position,
                rule,
            })?;
        assert!(batch.size > 0);
        position += batch.size;
        batches.push(batch);
    }
    assert_eq!(position, request.len());
    Ok(())
}

/// The rules for the batch at the front of `rest` (its `position` left 0).
fn check_one(rest: &[u8], max_batch_bytes: usize, mode: Walk) -> Result<ProducedBatch, BatchRule> {
    let header = decode_header(rest).map_err(rule_of)?;
    if header.size > max_batch_bytes {
        return Err(BatchRule::TooLarge {
            size_bytes: header.size as u64,
            max_bytes: max_batch_bytes as u64,
        });
    }
    let (view, size) = BatchView::decode(rest).map_err(rule_of)?;
    if view.is_control() {
        return Err(BatchRule::ControlBatch);
    }
    let count = i64::try_from(view.record_count).unwrap_or(i64::MAX);
    if count == 0 || count != i64::from(view.last_offset_delta) + 1 {
        return Err(BatchRule::RecordCount {
            record_count: count,
            last_offset_delta: i64::from(view.last_offset_delta),
        });
    }
    if view.producer_id >= 0 && view.base_sequence < 0 {
        return Err(BatchRule::Sequence {
            producer_id: view.producer_id,
            base_sequence: view.base_sequence,
        });
    }
    let inflated = view.inflate().map_err(rule_of)?;
    let records = match &inflated {
        Some(inflated) => inflated.as_slice(),
        None => view.bytes().get(RECORDS_OFFSET..).unwrap_or_default(),
    };
    if mode == Walk::Short {
        if let Some(max_record_timestamp) =
            walk::accepts(records, view.record_count, view.base_timestamp)
        {
            return Ok(ProducedBatch {
                position: 0,
                size,
                record_count: view.record_count,
                max_record_timestamp,
            });
        }
    }
    let mut max_record_timestamp = NO_TIMESTAMP;
    let records = match &inflated {
        Some(inflated) => view.records_in(inflated),
        None => view.records(),
    };
    for (index, record) in records.enumerate() {
        let record = record.map_err(rule_of)?;
        if i64::from(record.offset_delta) != index as i64 {
            return Err(BatchRule::OffsetDelta {
                record: index as u64,
                delta: i64::from(record.offset_delta),
            });
        }
        let timestamp = view.base_timestamp.wrapping_add(record.timestamp_delta);
        if timestamp < NO_TIMESTAMP {
            return Err(BatchRule::Timestamp {
                record: index as u64,
                timestamp,
            });
        }
        max_record_timestamp = max_record_timestamp.max(timestamp);
    }
    Ok(ProducedBatch {
        position: 0,
        size,
        record_count: view.record_count,
        max_record_timestamp,
    })
}

/// Assigns the checked batch `batch` (exactly its bytes) its place in the log, as a
/// broker's `appendAsLeader` does: `baseOffset` and `partitionLeaderEpoch` (-1: the
/// engine has no leader) written in place, and the timestamp fields made what the
/// log's timestamp type says: with `log_append_time` the LogAppendTime bit and
/// `maxTimestamp` = the stamp, else the bit clear and `maxTimestamp` =
/// `max_record_timestamp`. The CRC-32C is recomputed only if that changed a byte
/// of its region; returns whether it was. Returns the batch's `maxTimestamp`.
pub fn assign(
    batch: &mut [u8],
    base_offset: i64,
    max_record_timestamp: i64,
    log_append_time: Option<i64>,
) -> (i64, bool) {
    assert!(batch.len() >= HEADER_LEN);
    let (header, records) = batch.split_at_mut(HEADER_LEN);
    assign_header(
        header,
        records,
        base_offset,
        max_record_timestamp,
        log_append_time,
    )
}

/// [`assign`] of a batch held in two pieces: `header`, a copy of its first
/// [`HEADER_LEN`] bytes, changed in place, and `records`, the rest, read only (every
/// field `assign` writes is in the header, so the records can be written from the
/// producer's buffer as they came, without a copy).
#[expect(
    clippy::indexing_slicing,
    reason = "the header is HEADER_LEN bytes, asserted, and holds every field named"
)]
pub fn assign_header(
    header: &mut [u8],
    records: &[u8],
    base_offset: i64,
    max_record_timestamp: i64,
    log_append_time: Option<i64>,
) -> (i64, bool) {
    assert_eq!(header.len(), HEADER_LEN);
    header[BASE_OFFSET_OFFSET..BASE_OFFSET_OFFSET + 8].copy_from_slice(&base_offset.to_be_bytes());
    header[PARTITION_LEADER_EPOCH_OFFSET..PARTITION_LEADER_EPOCH_OFFSET + 4]
        .copy_from_slice(&NO_PARTITION_LEADER_EPOCH.to_be_bytes());
    let attributes = i16::from_be_bytes([header[ATTRIBUTES_OFFSET], header[ATTRIBUTES_OFFSET + 1]]);
    assert_eq!(
        attributes & ATTR_CONTROL,
        0,
        "check refuses control batches"
    );
    let (want_attributes, want_max) = match log_append_time {
        Some(stamp) => (attributes | ATTR_LOG_APPEND_TIME, stamp),
        None => (attributes & !ATTR_LOG_APPEND_TIME, max_record_timestamp),
    };
    let mut max_bytes = [0u8; 8];
    max_bytes.copy_from_slice(&header[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]);
    if want_attributes == attributes && i64::from_be_bytes(max_bytes) == want_max {
        return (want_max, false);
    }
    header[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2]
        .copy_from_slice(&want_attributes.to_be_bytes());
    header[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8].copy_from_slice(&want_max.to_be_bytes());
    let mut crc = super::crc::Crc32c::new();
    crc.update(&header[ATTRIBUTES_OFFSET..]);
    crc.update(records);
    header[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.finish().to_be_bytes());
    (want_max, true)
}

#[cfg(test)]
mod tests;

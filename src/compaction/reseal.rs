//! The write side's batch rebuilds: the header patch of a batch whose records were
//! cut, written at the end of an output buffer (its length, `maxTimestamp`, record
//! count and CRC anew; everything else in its header stays the source's), a marker
//! stamped with a delete horizon ([`stamp_batch`]), and an empty batch kept for an
//! active producer ([`write_empty`]).

use crate::format::batch::{
    ATTRIBUTES_OFFSET, ATTR_DELETE_HORIZON, BASE_TIMESTAMP_OFFSET, CRC_OFFSET, HEADER_LEN,
    LENGTH_OFFSET, LOG_OVERHEAD, MAX_TIMESTAMP_OFFSET, RECORDS_OFFSET, RECORD_COUNT_OFFSET,
};
use crate::format::{crc, RecordBatch, TimestampType};

use super::rules::retain_empty::EMPTY_KEEPS;

/// Finishes a partly kept batch written at `out[start..]` (the source's header, then
/// the kept records, compressed or not): its length, `maxTimestamp` and record count
/// in the header, then the CRC over everything after it. Base offset and last offset
/// delta stay the source's.
pub(super) fn seal_kept_batch(out: &mut [u8], start: usize, max_timestamp: i64, count: i32) {
    let length = i32::try_from(out.len() - start - LOG_OVERHEAD).expect("a batch's size fits");
    let header = &mut out[start..start + RECORDS_OFFSET];
    header[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
    header[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
        .copy_from_slice(&max_timestamp.to_be_bytes());
    header[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4].copy_from_slice(&count.to_be_bytes());
    let crc = crate::format::crc::crc32c(&out[start + ATTRIBUTES_OFFSET..]);
    out[start + CRC_OFFSET..start + CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

/// A marker stamped with delete horizon `horizon` (Kafka's `filterTo` rebuilding a
/// batch with `containsMarkerForEmptyTxn`): attribute bit 6, `base_timestamp` the
/// horizon, every record kept with its timestamp (delta recomputed), the max
/// timestamp its records' (LogAppendTime: the batch's).
pub fn stamp_batch(batch: &RecordBatch, horizon: i64) -> RecordBatch {
    let stored = |r: &crate::format::Record| batch.base_timestamp.wrapping_add(r.timestamp_delta);
    let max_timestamp = match batch.timestamp_type() {
        TimestampType::LogAppendTime => batch.max_timestamp,
        TimestampType::CreateTime => batch.records.iter().map(stored).max().unwrap_or(horizon),
    };
    RecordBatch {
        attributes: batch.attributes | ATTR_DELETE_HORIZON,
        base_timestamp: horizon,
        max_timestamp,
        records: batch
            .records
            .iter()
            .map(|r| crate::format::Record {
                timestamp_delta: stored(r).wrapping_sub(horizon),
                ..r.clone()
            })
            .collect(),
        ..batch.clone()
    }
}

/// [`empty_batch`](crate::compaction::rules::retain_empty::empty_batch) from a
/// stored batch's header bytes, appended to `out`: the
/// header with its length, attributes, base timestamp, count and CRC-32C rewritten.
pub fn write_empty(stored: &[u8], out: &mut Vec<u8>) {
    assert!(
        stored.len() >= HEADER_LEN,
        "a stored batch holds its header"
    );
    let start = out.len();
    out.extend_from_slice(&stored[..HEADER_LEN]);
    let header = &mut out[start..];
    let length = (HEADER_LEN - LOG_OVERHEAD) as i32;
    header[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
    let attributes = i16::from_be_bytes(
        header[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2]
            .try_into()
            .expect("two bytes"),
    );
    header[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2]
        .copy_from_slice(&(attributes & EMPTY_KEEPS).to_be_bytes());
    header[BASE_TIMESTAMP_OFFSET..BASE_TIMESTAMP_OFFSET + 8]
        .copy_from_slice(&(-1i64).to_be_bytes());
    header[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4].copy_from_slice(&0i32.to_be_bytes());
    let crc_offset = crate::format::batch::CRC_OFFSET;
    let sum = crc::crc32c(&header[ATTRIBUTES_OFFSET..]);
    header[crc_offset..crc_offset + 4].copy_from_slice(&sum.to_be_bytes());
}

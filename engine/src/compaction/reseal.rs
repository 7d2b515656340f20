//! The write side's batch bytes: one header patch and CRC ([`reseal`]) for every
//! batch a pass writes other than as stored: a spliced batch (some records cut,
//! [`seal_kept_batch`]), a rebuilt one (records re-encoded, a delete horizon
//! stamped: [`rebuild`]), an empty batch kept for an active producer
//! ([`write_empty`]). A compressed marker stamped with a horizon is re-encoded whole
//! ([`stamp_batch`]).

use crate::format::batch::{
    ATTRIBUTES_OFFSET, ATTR_DELETE_HORIZON, BASE_TIMESTAMP_OFFSET, CRC_OFFSET, HEADER_LEN,
    LENGTH_OFFSET, LOG_OVERHEAD, MAX_TIMESTAMP_OFFSET, RECORDS_OFFSET, RECORD_COUNT_OFFSET,
};
use crate::format::batch_view::BatchView;
use crate::format::record::RecordView;
use crate::format::{crc, RecordBatch, TimestampType};
use crate::segment::BatchFacts;

use super::rules::retain_empty::EMPTY_KEEPS;

/// The header fields a rewritten batch changes; `None` keeps the source's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Patch {
    /// The attributes (a delete horizon stamped, an empty batch's codec cleared).
    pub attributes: Option<i16>,
    /// The base timestamp (a delete horizon, a rebuilt batch's first record, an
    /// empty batch's -1).
    pub base_timestamp: Option<i64>,
    /// The max timestamp of what stays.
    pub max_timestamp: Option<i64>,
    /// The records that stay.
    pub record_count: i32,
}

/// The one header patch of the write side: the batch written at `out[start..]`,
/// the end of `out` (the source's header, then its records, compressed or not),
/// gets its length, the fields of `patch` and its record count, then the CRC-32C
/// over everything after the CRC field. Base offset, last offset delta and the
/// producer fields stay the source's. Spliced, rebuilt, horizon-stamped and empty
/// batches all end here.
pub(super) fn reseal(out: &mut [u8], start: usize, patch: Patch) {
    let length = i32::try_from(out.len() - start - LOG_OVERHEAD).expect("a batch's size fits");
    let header = &mut out[start..start + RECORDS_OFFSET];
    header[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
    if let Some(attributes) = patch.attributes {
        header[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    }
    if let Some(base_timestamp) = patch.base_timestamp {
        header[BASE_TIMESTAMP_OFFSET..BASE_TIMESTAMP_OFFSET + 8]
            .copy_from_slice(&base_timestamp.to_be_bytes());
    }
    if let Some(max_timestamp) = patch.max_timestamp {
        header[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
            .copy_from_slice(&max_timestamp.to_be_bytes());
    }
    header[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4]
        .copy_from_slice(&patch.record_count.to_be_bytes());
    let sum = crc::crc32c(&out[start + ATTRIBUTES_OFFSET..]);
    out[start + CRC_OFFSET..start + CRC_OFFSET + 4].copy_from_slice(&sum.to_be_bytes());
}

/// Finishes a partly kept batch written at `out[start..]` (the source's header, then
/// the kept records, compressed or not): its length, `maxTimestamp` and record count
/// ([`reseal`]). Base offset and last offset delta stay the source's.
pub(super) fn seal_kept_batch(out: &mut [u8], start: usize, max_timestamp: i64, count: i32) {
    reseal(
        out,
        start,
        Patch {
            max_timestamp: Some(max_timestamp),
            record_count: count,
            ..Patch::default()
        },
    );
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
    let attributes = i16::from_be_bytes(
        stored[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2]
            .try_into()
            .expect("two bytes"),
    );
    reseal(
        out,
        start,
        Patch {
            attributes: Some(attributes & EMPTY_KEEPS),
            base_timestamp: Some(-1),
            max_timestamp: None,
            record_count: 0,
        },
    );
}

/// Kafka's rebuilt batch (what `rules::kafka::clean_batch` and `RecordBatch::encode`
/// give), resealed by [`reseal`]:
/// the source header with `horizon` stamped (attribute bit 6 and base timestamp;
/// without one, the first kept record's stored timestamp), the kept records'
/// max timestamp (LogAppendTime: the batch's), count, length and CRC-32C; then the
/// kept records, each re-encoded with its delta to the new base timestamp.
pub(super) fn rebuild(
    view: &BatchView<'_>,
    records: &[RecordView<'_>],
    keep: &[bool],
    horizon: Option<i64>,
    out: &mut Vec<u8>,
) -> BatchFacts {
    let stored = |r: &RecordView<'_>| view.base_timestamp.wrapping_add(r.timestamp_delta);
    let kept = || {
        records
            .iter()
            .zip(keep)
            .filter(|(_, k)| **k)
            .map(|(r, _)| r)
    };
    let first = kept().next().expect("a rebuilt batch keeps a record");
    let base_timestamp = horizon.unwrap_or_else(|| stored(first));
    let max_timestamp = match view.timestamp_type() {
        TimestampType::LogAppendTime => view.max_timestamp,
        TimestampType::CreateTime => kept().map(stored).max().unwrap_or(base_timestamp),
    };
    let attributes = if horizon.is_some() {
        view.attributes | ATTR_DELETE_HORIZON
    } else {
        view.attributes
    };
    let start = out.len();
    out.extend_from_slice(&view.bytes()[..RECORDS_OFFSET]);
    let mut count = 0i32;
    for record in kept() {
        record.encode_with_timestamp_delta(stored(record).wrapping_sub(base_timestamp), out);
        count += 1;
    }
    reseal(
        out,
        start,
        Patch {
            attributes: Some(attributes),
            base_timestamp: Some(base_timestamp),
            max_timestamp: Some(max_timestamp),
            record_count: count,
        },
    );
    BatchFacts {
        base_offset: view.base_offset,
        last_offset: view.base_offset + i64::from(view.last_offset_delta),
        size_bytes: (out.len() - start) as u64,
        records: count as u64,
        max_timestamp,
    }
}

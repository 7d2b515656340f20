//! The fixed header of a Kafka v2 record batch: its field offsets and flags
//! (the layout in [`super::batch`]'s docs), and [`decode_header`], which reads the
//! header without decoding the records. The lowest layer of the batch codecs:
//! [`super::batch_view`] (the zero-copy view) and [`super::batch`] (the owned
//! batch, which re-exports all of this) build on it.

use crate::error::CorruptKind;

use super::FormatError;

/// Byte position of `baseOffset` (int64) in a batch.
pub const BASE_OFFSET_OFFSET: usize = 0;
/// Byte position of `batchLength` (int32): the bytes after this field.
pub const LENGTH_OFFSET: usize = BASE_OFFSET_OFFSET + 8;
/// Byte position of `partitionLeaderEpoch` (int32).
pub const PARTITION_LEADER_EPOCH_OFFSET: usize = LENGTH_OFFSET + 4;
/// Byte position of `magic` (int8).
pub const MAGIC_OFFSET: usize = PARTITION_LEADER_EPOCH_OFFSET + 4;
/// Byte position of the CRC-32C (uint32) over everything from `attributes` on.
pub const CRC_OFFSET: usize = MAGIC_OFFSET + 1;
/// Byte position of `attributes` (int16).
pub const ATTRIBUTES_OFFSET: usize = CRC_OFFSET + 4;
/// Byte position of `lastOffsetDelta` (int32).
pub const LAST_OFFSET_DELTA_OFFSET: usize = ATTRIBUTES_OFFSET + 2;
/// Byte position of `baseTimestamp` (int64).
pub const BASE_TIMESTAMP_OFFSET: usize = LAST_OFFSET_DELTA_OFFSET + 4;
/// Byte position of `maxTimestamp` (int64).
pub const MAX_TIMESTAMP_OFFSET: usize = BASE_TIMESTAMP_OFFSET + 8;
/// Byte position of `producerId` (int64).
pub const PRODUCER_ID_OFFSET: usize = MAX_TIMESTAMP_OFFSET + 8;
/// Byte position of `producerEpoch` (int16).
pub const PRODUCER_EPOCH_OFFSET: usize = PRODUCER_ID_OFFSET + 8;
/// Byte position of `baseSequence` (int32).
pub const BASE_SEQUENCE_OFFSET: usize = PRODUCER_EPOCH_OFFSET + 2;
/// Byte position of the record count (int32).
pub const RECORD_COUNT_OFFSET: usize = BASE_SEQUENCE_OFFSET + 4;
/// Byte position of the first record.
pub const RECORDS_OFFSET: usize = RECORD_COUNT_OFFSET + 4;
/// Bytes before the first record.
pub const HEADER_LEN: usize = RECORDS_OFFSET;
/// Bytes of the `baseOffset` and `batchLength` fields (the "log overhead").
pub const LOG_OVERHEAD: usize = LENGTH_OFFSET + 4;
/// The only magic this engine reads and writes.
pub const MAGIC_V2: i8 = 2;
/// Largest batch we accept when decoding (Kafka's default message.max.bytes is ~1 MiB;
/// this leaves ample room while bounding allocations on corrupt input).
pub const BATCH_BYTES_MAX: usize = 64 * 1024 * 1024;

const _: () = assert!(HEADER_LEN == 61);
const _: () = assert!(LOG_OVERHEAD == 12);

/// The `attributes` bits holding the compression codec (0 = none).
pub const ATTR_COMPRESSION_MASK: i16 = 0x07;
/// The `attributes` bit of a transactional batch.
pub const ATTR_TRANSACTIONAL: i16 = 1 << 4;
/// The `attributes` bit of a control batch (a transaction marker).
pub const ATTR_CONTROL: i16 = 1 << 5;
/// The `attributes` bit of a batch whose `baseTimestamp` is its delete horizon
/// (Kafka's `DELETE_HORIZON_FLAG`, KIP-534): set by a `kafka`-policy cleaning that
/// keeps a tombstone of the batch.
pub const ATTR_DELETE_HORIZON: i16 = 1 << 6;

/// "No producer" as Kafka writes it for non-idempotent producers.
pub const NO_PRODUCER_ID: i64 = -1;
/// "No producer epoch" as Kafka writes it for non-idempotent producers.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// "No sequence number" as Kafka writes it for non-idempotent producers.
pub const NO_SEQUENCE: i32 = -1;
/// "No partition leader epoch" (the engine has no leader; it writes this).
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
/// Kafka's "no timestamp".
pub const NO_TIMESTAMP: i64 = -1;

/// The fixed header fields of a batch, read without decoding its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// Offset of the batch's first record.
    pub base_offset: i64,
    /// Total bytes of the batch, log overhead included.
    pub size: usize,
    /// Kafka's attribute bits (see [`super::batch::RecordBatch::attributes`]).
    pub attributes: i16,
    /// `last_offset - base_offset`.
    pub last_offset_delta: i32,
    /// The largest record timestamp in the batch.
    pub max_timestamp: i64,
    /// The number of records in the batch.
    pub record_count: i32,
}

impl BatchHeader {
    /// The batch's last offset (base offset + lastOffsetDelta).
    pub fn last_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta)
    }
}

/// The offset after a batch at `base_offset` with `last_offset_delta`, `None` when
/// its last offset or the offset after it is beyond `i64::MAX` (or below `i64::MIN`).
/// [`decode_header`] refuses such a header, so the offsets of every decoded batch
/// add up.
pub fn offset_after(base_offset: i64, last_offset_delta: i32) -> Option<i64> {
    base_offset
        .checked_add(i64::from(last_offset_delta))?
        .checked_add(1)
}

pub(super) fn be_i16(buf: &[u8], at: usize) -> Result<i16, FormatError> {
    let bytes = buf
        .get(at..at + 2)
        .ok_or_else(|| truncated(at + 2, buf.len()))?;
    let mut a = [0u8; 2];
    a.copy_from_slice(bytes);
    Ok(i16::from_be_bytes(a))
}

pub(super) fn be_i32(buf: &[u8], at: usize) -> Result<i32, FormatError> {
    let bytes = buf
        .get(at..at + 4)
        .ok_or_else(|| truncated(at + 4, buf.len()))?;
    let mut a = [0u8; 4];
    a.copy_from_slice(bytes);
    Ok(i32::from_be_bytes(a))
}

pub(super) fn be_i64(buf: &[u8], at: usize) -> Result<i64, FormatError> {
    let bytes = buf
        .get(at..at + 8)
        .ok_or_else(|| truncated(at + 8, buf.len()))?;
    let mut a = [0u8; 8];
    a.copy_from_slice(bytes);
    Ok(i64::from_be_bytes(a))
}

pub(super) fn truncated(needed: usize, available: usize) -> FormatError {
    FormatError::Corrupt {
        position: 0,
        kind: CorruptKind::Truncated {
            needed: needed as u64,
            available: available as u64,
        },
    }
}

/// Reads and checks the fixed header at the front of `buf` (length bounds and magic;
/// not the CRC). Positions in errors are relative to the start of `buf`.
pub fn decode_header(buf: &[u8]) -> Result<BatchHeader, FormatError> {
    let base_offset = be_i64(buf, BASE_OFFSET_OFFSET)?;
    let length = be_i32(buf, LENGTH_OFFSET)?;
    let min_length = (HEADER_LEN - LOG_OVERHEAD) as i64;
    if i64::from(length) < min_length || length as usize > BATCH_BYTES_MAX {
        return Err(FormatError::Corrupt {
            position: LENGTH_OFFSET as u64,
            kind: CorruptKind::BadLength {
                length: i64::from(length),
            },
        });
    }
    let size = length as usize + LOG_OVERHEAD;
    let magic = *buf
        .get(MAGIC_OFFSET)
        .ok_or_else(|| truncated(MAGIC_OFFSET + 1, buf.len()))? as i8;
    if magic != MAGIC_V2 {
        if (0..MAGIC_V2).contains(&magic) {
            return Err(FormatError::Unsupported(format!(
                "message format magic {magic}"
            )));
        }
        return Err(FormatError::Corrupt {
            position: MAGIC_OFFSET as u64,
            kind: CorruptKind::BadMagic {
                got: i64::from(magic),
                expected: i64::from(MAGIC_V2),
            },
        });
    }
    let attributes = be_i16(buf, ATTRIBUTES_OFFSET)?;
    let last_offset_delta = be_i32(buf, LAST_OFFSET_DELTA_OFFSET)?;
    let max_timestamp = be_i64(buf, MAX_TIMESTAMP_OFFSET)?;
    let record_count = be_i32(buf, RECORD_COUNT_OFFSET)?;
    // The base offset is outside the CRC: a damaged one may be anything. Its last
    // offset and the offset after it must be offsets, or every `last_offset()` and
    // `next_offset()` of this header would overflow.
    if offset_after(base_offset, last_offset_delta).is_none() {
        return Err(FormatError::Corrupt {
            position: BASE_OFFSET_OFFSET as u64,
            kind: CorruptKind::OffsetOverflow {
                base_offset,
                last_offset_delta: i64::from(last_offset_delta),
            },
        });
    }
    // Never valid, under any CRC: a walk that skips a batch by its header alone
    // (a read from a later offset, a trusted segment) would otherwise take a
    // negative delta's "last offset" below the base and skip the batch's records
    // silently.
    if last_offset_delta < 0 {
        return Err(FormatError::Corrupt {
            position: LAST_OFFSET_DELTA_OFFSET as u64,
            kind: CorruptKind::OffsetDelta {
                delta: i64::from(last_offset_delta),
                last: i64::from(last_offset_delta),
            },
        });
    }
    if record_count < 0 || i64::from(record_count) > i64::from(last_offset_delta) + 1 {
        return Err(FormatError::Corrupt {
            position: RECORD_COUNT_OFFSET as u64,
            kind: CorruptKind::RecordCount {
                declared: i64::from(record_count),
                actual: -1,
            },
        });
    }
    Ok(BatchHeader {
        base_offset,
        size,
        attributes,
        last_offset_delta,
        max_timestamp,
        record_count,
    })
}

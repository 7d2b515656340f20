//! [`BatchView`]: a record batch checked in place, its records decoded one at a
//! time as [`RecordView`]s that borrow the batch's bytes (no allocation per record).
//! [`super::batch::decode`] is this plus owned copies, so both apply exactly the
//! same checks.
//!
//! Every number read from disk is untrusted: offsets, deltas and lengths are combined
//! with checked arithmetic (`engine/src/segment` and `format::{batch_view, checkpoint,
//! index}` deny `clippy::arithmetic_side_effects`), a header whose `baseOffset +
//! lastOffsetDelta + 1` is not an `i64` is `Corrupt` (`OffsetOverflow`), and an append
//! whose offsets would pass `i64::MAX` is `InvalidArgument`. The checks live in one
//! place, `engine/src/format/batch_view.rs`: `BatchView::decode` checks a batch in
//! place and its `records()` iterator checks each record as it decodes it into a
//! borrowed `RecordView`.

#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

use crate::error::CorruptKind;

use super::batch_header::{
    be_i16, be_i32, be_i64, decode_header, truncated, ATTRIBUTES_OFFSET, ATTR_COMPRESSION_MASK,
    ATTR_CONTROL, BASE_SEQUENCE_OFFSET, BASE_TIMESTAMP_OFFSET, CRC_OFFSET,
    LAST_OFFSET_DELTA_OFFSET, PARTITION_LEADER_EPOCH_OFFSET, PRODUCER_EPOCH_OFFSET,
    PRODUCER_ID_OFFSET, RECORDS_OFFSET, RECORD_COUNT_OFFSET,
};
use super::compression::{CodecError, Compression};
use super::record::{RecordKey, RecordView};
use super::timestamp_type::TimestampType;
use super::FormatError;

/// The most bytes a compressed batch's records may decompress to: what an
/// uncompressed batch may hold ([`super::batch_header::BATCH_BYTES_MAX`]). A payload that
/// would inflate beyond it is corrupt (`DecompressedTooLarge`), found before more
/// is allocated.
pub const INFLATED_BYTES_MAX: usize = super::batch_header::BATCH_BYTES_MAX;

/// The smallest encoded record: length, attributes, timestamp delta, offset delta,
/// key length, value length and header count, one byte each.
pub const RECORD_BYTES_MIN: usize = 7;

/// A batch whose header fields, length, magic, CRC-32C and compression are checked;
/// its records are checked as [`BatchView::records`] decodes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchView<'a> {
    /// See [`RecordBatch::base_offset`](super::RecordBatch::base_offset).
    pub base_offset: i64,
    /// See [`RecordBatch::partition_leader_epoch`](super::RecordBatch::partition_leader_epoch).
    pub partition_leader_epoch: i32,
    /// See [`RecordBatch::attributes`](super::RecordBatch::attributes).
    pub attributes: i16,
    /// See [`RecordBatch::last_offset_delta`](super::RecordBatch::last_offset_delta).
    pub last_offset_delta: i32,
    /// See [`RecordBatch::base_timestamp`](super::RecordBatch::base_timestamp).
    pub base_timestamp: i64,
    /// See [`RecordBatch::max_timestamp`](super::RecordBatch::max_timestamp).
    pub max_timestamp: i64,
    /// See [`RecordBatch::producer_id`](super::RecordBatch::producer_id).
    pub producer_id: i64,
    /// See [`RecordBatch::producer_epoch`](super::RecordBatch::producer_epoch).
    pub producer_epoch: i16,
    /// See [`RecordBatch::base_sequence`](super::RecordBatch::base_sequence).
    pub base_sequence: i32,
    /// The declared record count, checked to be in `0..=last_offset_delta + 1`.
    pub record_count: usize,
    /// The whole batch.
    bytes: &'a [u8],
}

impl<'a> BatchView<'a> {
    /// Checks the batch at the front of `buf`; returns it and its size.
    ///
    /// Checks, in order: enough bytes for the header and the declared length; length
    /// bounds; magic; CRC-32C; compression (an `Unsupported` error); last offset
    /// delta non-negative; record count in `0..=last_offset_delta + 1`. The records
    /// are checked by [`BatchView::records`].
    pub fn decode(buf: &'a [u8]) -> Result<(BatchView<'a>, usize), FormatError> {
        Self::decode_checking(buf, true)
    }

    /// [`BatchView::decode`] of a batch whose CRC-32C the caller has already checked
    /// in these very bytes (which cannot change: a shared immutable buffer).
    pub(crate) fn decode_crc_checked(buf: &'a [u8]) -> Result<(BatchView<'a>, usize), FormatError> {
        Self::decode_checking(buf, false)
    }

    fn decode_checking(
        buf: &'a [u8],
        check_crc: bool,
    ) -> Result<(BatchView<'a>, usize), FormatError> {
        let header = decode_header(buf)?;
        let bytes = buf
            .get(..header.size)
            .ok_or_else(|| truncated(header.size, buf.len()))?;
        if check_crc {
            check_batch_crc(bytes)?;
        }
        Self::decode_fields(header, bytes)
    }

    fn decode_fields(
        header: super::batch_header::BatchHeader,
        bytes: &'a [u8],
    ) -> Result<(BatchView<'a>, usize), FormatError> {
        let codec = header.attributes & ATTR_COMPRESSION_MASK;
        if Compression::from_id(codec).is_none() {
            return Err(FormatError::Corrupt {
                position: ATTRIBUTES_OFFSET as u64,
                kind: CorruptKind::UnknownCodec {
                    id: i64::from(codec),
                },
            });
        }
        if header.last_offset_delta < 0 {
            return Err(FormatError::Corrupt {
                position: LAST_OFFSET_DELTA_OFFSET as u64,
                kind: CorruptKind::OffsetDelta {
                    delta: i64::from(header.last_offset_delta),
                    last: i64::from(header.last_offset_delta),
                },
            });
        }
        // Every record takes at least RECORD_BYTES_MIN bytes, so a count the batch's
        // length cannot hold is corrupt before anything is allocated for it (the
        // decode_batch fuzzer's case: a CRC-valid batch declaring 421 million records).
        // Compressed records are held to the same rule once inflated.
        let records_bytes = if codec == 0 {
            header.size.saturating_sub(RECORDS_OFFSET)
        } else {
            INFLATED_BYTES_MAX
        };
        if header.record_count < 0
            || i64::from(header.record_count)
                > i64::from(header.last_offset_delta).saturating_add(1)
            || header.record_count as usize > records_bytes / RECORD_BYTES_MIN
        {
            return Err(FormatError::Corrupt {
                position: RECORD_COUNT_OFFSET as u64,
                kind: CorruptKind::RecordCount {
                    declared: i64::from(header.record_count),
                    actual: -1,
                },
            });
        }
        let view = BatchView {
            base_offset: header.base_offset,
            partition_leader_epoch: be_i32(bytes, PARTITION_LEADER_EPOCH_OFFSET)?,
            attributes: header.attributes,
            last_offset_delta: header.last_offset_delta,
            base_timestamp: be_i64(bytes, BASE_TIMESTAMP_OFFSET)?,
            max_timestamp: header.max_timestamp,
            producer_id: be_i64(bytes, PRODUCER_ID_OFFSET)?,
            producer_epoch: be_i16(bytes, PRODUCER_EPOCH_OFFSET)?,
            base_sequence: be_i32(bytes, BASE_SEQUENCE_OFFSET)?,
            record_count: header.record_count as usize,
            bytes,
        };
        Ok((view, header.size))
    }

    /// Bytes of the whole batch.
    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    /// The absolute offset of `record`, one of this batch's records.
    #[inline]
    pub fn offset_of(&self, record: &RecordView<'_>) -> i64 {
        // Inside the batch's offsets (the deltas are checked against
        // lastOffsetDelta, and `decode_header` that those offsets add up).
        self.base_offset
            .saturating_add(i64::from(record.offset_delta))
    }

    /// True for a control batch (a transaction's commit or abort marker).
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    /// The batch's codec (checked by the decode to be one of Kafka's).
    pub fn compression(&self) -> Compression {
        Compression::from_id(self.attributes & ATTR_COMPRESSION_MASK).unwrap_or_default()
    }

    /// True unless the codec is [`Compression::None`].
    pub fn is_compressed(&self) -> bool {
        self.compression() != Compression::None
    }

    /// The batch's timestamp type (attribute bit 3).
    pub fn timestamp_type(&self) -> TimestampType {
        TimestampType::of_attributes(self.attributes)
    }

    /// The timestamp `record` (one of this batch's) reads as: the batch's
    /// `maxTimestamp` under LogAppendTime, its own otherwise.
    #[inline]
    pub fn timestamp_of(&self, record: &RecordView<'_>) -> i64 {
        self.timestamp_at(record.timestamp_delta)
    }

    /// The timestamp a record of this batch with `timestamp_delta` reads as
    /// ([`BatchView::timestamp_of`] of a [`RecordKey`]).
    #[inline]
    pub fn timestamp_at(&self, timestamp_delta: i64) -> i64 {
        self.timestamp_type().record_timestamp(
            self.base_timestamp,
            timestamp_delta,
            self.max_timestamp,
        )
    }

    /// The whole encoded batch, as stored.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The compressed records of a compressed batch, decompressed (at most
    /// [`INFLATED_BYTES_MAX`] bytes); `None` for an uncompressed batch, whose
    /// records [`BatchView::records`] reads in place. A payload that does not
    /// decompress, or would inflate beyond the bound, is corrupt at the payload's
    /// first byte ([`RECORDS_OFFSET`]).
    pub fn inflate(&self) -> Result<Option<Vec<u8>>, FormatError> {
        let codec = self.compression();
        if codec == Compression::None {
            return Ok(None);
        }
        let payload = self.bytes.get(RECORDS_OFFSET..).unwrap_or_default();
        match codec.decompress(payload, INFLATED_BYTES_MAX) {
            Ok(inflated) => Ok(Some(inflated)),
            Err(e) => Err(inflate_error(codec, e)),
        }
    }

    /// [`BatchView::inflate`] into `buf`, kept between calls
    /// ([`Compression::decompress_reusing`]): the records are `buf[..length]` for
    /// the returned `Some(length)`; `None` (and `buf` untouched) for an
    /// uncompressed batch. The same bytes and errors as `inflate`.
    pub fn inflate_reusing(&self, buf: &mut Vec<u8>) -> Result<Option<usize>, FormatError> {
        let codec = self.compression();
        if codec == Compression::None {
            return Ok(None);
        }
        let payload = self.bytes.get(RECORDS_OFFSET..).unwrap_or_default();
        match codec.decompress_reusing(payload, INFLATED_BYTES_MAX, buf) {
            Ok(len) => Ok(Some(len)),
            Err(e) => Err(inflate_error(codec, e)),
        }
    }

    /// The records, decoded one at a time. The batch is valid only if the iterator
    /// ends without yielding an error: it checks every record's length, offset
    /// deltas strictly increasing from >= 0 and <= lastOffsetDelta, the declared
    /// record count and that no bytes trail the last record. It stops after the
    /// first error.
    ///
    /// The records of a compressed batch are not in its bytes: for one, the
    /// iterator yields a single `Unsupported` error; use [`BatchView::records_in`]
    /// with [`BatchView::inflate`]'s bytes, or [`BatchView::records_with`].
    pub fn records(&self) -> RecordViews<'a> {
        let mut records = RecordViews {
            batch: self.bytes.get(RECORDS_OFFSET..).unwrap_or_default(),
            record_count: self.record_count,
            last_offset_delta: i64::from(self.last_offset_delta),
            position: 0,
            inflated: false,
            previous_delta: -1,
            decoded: 0,
            done: false,
            misuse: false,
            yields: std::marker::PhantomData,
        };
        if self.is_compressed() {
            records.misuse = true;
        }
        records
    }

    /// The records of this (compressed) batch in `inflated`, the bytes
    /// [`BatchView::inflate`] returned for it, with every check of
    /// [`BatchView::records`]. Errors inside them are reported at the payload's
    /// first byte: a position in the compressed stream cannot be named.
    pub fn records_in<'b>(&self, inflated: &'b [u8]) -> RecordViews<'b> {
        RecordViews {
            batch: inflated,
            record_count: self.record_count,
            last_offset_delta: i64::from(self.last_offset_delta),
            position: 0,
            inflated: true,
            previous_delta: -1,
            decoded: 0,
            done: false,
            misuse: false,
            yields: std::marker::PhantomData,
        }
    }

    /// The records of any batch: in place for an uncompressed one, decompressed
    /// into `scratch` (replacing its content) for a compressed one.
    pub fn records_with<'b>(&self, scratch: &'b mut Vec<u8>) -> Result<RecordViews<'b>, FormatError>
    where
        'a: 'b,
    {
        match self.inflate()? {
            None => Ok(self.records()),
            Some(inflated) => {
                *scratch = inflated;
                Ok(self.records_in(scratch))
            }
        }
    }
}

/// The error of a payload that `codec` could not decompress: corrupt at the
/// payload's first byte ([`RECORDS_OFFSET`]), or unsupported by this build.
fn inflate_error(codec: Compression, error: CodecError) -> FormatError {
    let kind = match error {
        CodecError::Invalid(detail) => CorruptKind::Decompress {
            codec: codec.name().to_string(),
            detail,
        },
        CodecError::TooLarge { limit_bytes } => CorruptKind::DecompressedTooLarge {
            codec: codec.name().to_string(),
            limit_bytes: limit_bytes as u64,
        },
        CodecError::Unsupported(codec) => {
            return FormatError::Unsupported(format!(
                "{codec}-compressed batch (seglog built without the `compression` feature)"
            ))
        }
    };
    FormatError::Corrupt {
        position: RECORDS_OFFSET as u64,
        kind,
    }
}

/// Checks the stored CRC-32C of one whole batch (`bytes` holds exactly the batch)
/// against the one computed over attributes to end, as Kafka does.
pub fn check_batch_crc(bytes: &[u8]) -> Result<(), FormatError> {
    let stored_crc = be_i32(bytes, CRC_OFFSET)? as u32;
    let crc_region = bytes
        .get(ATTRIBUTES_OFFSET..)
        .ok_or_else(|| truncated(ATTRIBUTES_OFFSET, bytes.len()))?;
    let computed = crate::format::crc::crc32c(crc_region);
    if computed != stored_crc {
        return Err(FormatError::Corrupt {
            position: CRC_OFFSET as u64,
            kind: CorruptKind::ChecksumMismatch {
                got: computed,
                expected: stored_crc,
            },
        });
    }
    Ok(())
}

/// A record as a walk over a batch's records ([`RecordViews`]) yields it:
/// decoded from the front of the bytes with every check of [`RecordView::decode`].
pub trait DecodedRecord<'a>: Sized {
    /// The record at the front of `buf` and the bytes it takes.
    fn decode(buf: &'a [u8]) -> Result<(Self, usize), CorruptKind>;
    /// Its offset delta (the walk checks that they increase).
    fn offset_delta(&self) -> i32;
}

impl<'a> DecodedRecord<'a> for RecordView<'a> {
    #[inline(always)]
    fn decode(buf: &'a [u8]) -> Result<(Self, usize), CorruptKind> {
        RecordView::decode(buf)
    }

    fn offset_delta(&self) -> i32 {
        self.offset_delta
    }
}

impl<'a> DecodedRecord<'a> for RecordKey<'a> {
    #[inline(always)]
    fn decode(buf: &'a [u8]) -> Result<(Self, usize), CorruptKind> {
        RecordKey::decode(buf)
    }

    fn offset_delta(&self) -> i32 {
        self.offset_delta
    }
}

/// Iterator over the records of a [`BatchView`], as [`RecordView`]s, or as
/// [`RecordKey`]s ([`RecordViews::keys`]) with the same checks.
#[derive(Debug, Clone)]
#[must_use = "a batch is checked only as far as its records are iterated"]
pub struct RecordViews<'a, R = RecordView<'a>> {
    /// The records' bytes: the batch's after its header, or the inflated payload.
    batch: &'a [u8],
    record_count: usize,
    last_offset_delta: i64,
    /// Position in `batch` of the next record.
    position: usize,
    /// `batch` is a decompressed payload: errors name the payload's first byte.
    inflated: bool,
    previous_delta: i64,
    decoded: usize,
    done: bool,
    /// [`BatchView::records`] of a compressed batch: yield that error.
    misuse: bool,
    yields: std::marker::PhantomData<fn() -> R>,
}

impl<'a> RecordViews<'a> {
    /// The same walk, with the same checks and errors, yielding each record's
    /// [`RecordKey`] only: nothing is built for the fields a key walk does not
    /// read (its headers are checked, not kept).
    pub fn keys(self) -> RecordViews<'a, RecordKey<'a>> {
        RecordViews {
            batch: self.batch,
            record_count: self.record_count,
            last_offset_delta: self.last_offset_delta,
            position: self.position,
            inflated: self.inflated,
            previous_delta: self.previous_delta,
            decoded: self.decoded,
            done: self.done,
            misuse: self.misuse,
            yields: std::marker::PhantomData,
        }
    }
}

impl<'a, R: DecodedRecord<'a>> RecordViews<'a, R> {
    /// Bytes of the records decoded so far: where the next record starts in the
    /// records' bytes (the batch's after its header, or the inflated payload).
    pub fn consumed_bytes(&self) -> usize {
        self.position
    }

    /// The position in the batch to report an error at `position` of `batch` at.
    fn error_position(&self, position: usize) -> u64 {
        if self.inflated {
            RECORDS_OFFSET as u64
        } else {
            RECORDS_OFFSET.saturating_add(position) as u64
        }
    }

    #[inline(always)]
    fn step(&mut self) -> Option<Result<R, FormatError>> {
        if self.misuse {
            return Some(Err(FormatError::Unsupported(
                "records() of a compressed batch: inflate it first".into(),
            )));
        }
        let size = self.batch.len();
        if self.position >= size {
            if self.decoded != self.record_count || self.position != size {
                return Some(Err(self.count_mismatch()));
            }
            return None;
        }
        let position = self.position;
        let rest = self.batch.get(position..).unwrap_or_default();
        let (record, used) = match R::decode(rest) {
            Ok(decoded) => decoded,
            Err(kind) => {
                return Some(Err(FormatError::Corrupt {
                    position: self.error_position(position),
                    kind,
                }))
            }
        };
        let delta = i64::from(record.offset_delta());
        if delta <= self.previous_delta || delta > self.last_offset_delta {
            return Some(Err(FormatError::Corrupt {
                position: self.error_position(position),
                kind: CorruptKind::OffsetDelta {
                    delta,
                    last: self.last_offset_delta,
                },
            }));
        }
        self.previous_delta = delta;
        self.position = self.position.saturating_add(used);
        self.decoded = self.decoded.saturating_add(1);
        if self.decoded > self.record_count {
            return Some(Err(self.count_mismatch()));
        }
        Some(Ok(record))
    }

    fn count_mismatch(&self) -> FormatError {
        FormatError::Corrupt {
            position: RECORD_COUNT_OFFSET as u64,
            kind: CorruptKind::RecordCount {
                declared: self.record_count as i64,
                actual: self.decoded as i64,
            },
        }
    }
}

impl<'a, R: DecodedRecord<'a>> Iterator for RecordViews<'a, R> {
    type Item = Result<R, FormatError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.step();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        // A corrupt batch may yield one error after its declared records.
        let left = self.record_count.saturating_sub(self.decoded);
        (0, Some(left.saturating_add(1)))
    }
}

impl<'a, R: DecodedRecord<'a>> std::iter::FusedIterator for RecordViews<'a, R> {}

#[cfg(test)]
mod tests;

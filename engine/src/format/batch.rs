//! Kafka record batches, magic 2, byte for byte as Kafka writes them.
//!
//! ```text
//! offset  size  field                 notes
//!      0     8  baseOffset            i64
//!      8     4  batchLength           i32: bytes after this field
//!     12     4  partitionLeaderEpoch  i32
//!     16     1  magic                 i8 = 2
//!     17     4  crc                   u32, CRC-32C of bytes [21, end)
//!     21     2  attributes            i16: bits 0-2 compression (0-4, see
//!                                     [`super::compression`]), bit 3 timestamp
//!                                     type (1 = LogAppendTime), bit 4 transactional,
//!                                     bit 5 control, bit 6 delete horizon
//!     23     4  lastOffsetDelta       i32
//!     27     8  baseTimestamp         i64
//!     35     8  maxTimestamp          i64
//!     43     8  producerId            i64
//!     51     2  producerEpoch         i16
//!     53     4  baseSequence          i32
//!     57     4  recordCount           i32
//!     61     .  records               see [`super::record`]; for a compressed
//!                                     batch, one compressed stream of them
//! ```
//! All integers big-endian.

use super::batch_view::BatchView;
use super::compression::Compression;
use super::record::{ControlKind, NewRecord, Record};
use super::timestamp_type::{TimestampType, ATTR_LOG_APPEND_TIME};
use super::FormatError;

pub use super::batch_header::*;

/// A decoded record batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordBatch {
    /// Offset of the first record (the batch's first offset, even if compaction removed that record).
    pub base_offset: i64,
    /// The leader epoch the batch was written in (`-1`: none).
    pub partition_leader_epoch: i32,
    /// Kafka's attribute bits: compression ([`ATTR_COMPRESSION_MASK`]), timestamp type, [`ATTR_TRANSACTIONAL`], [`ATTR_CONTROL`].
    pub attributes: i16,
    /// `last_offset - base_offset`; kept when compaction removes the last record, so offsets stay stable.
    pub last_offset_delta: i32,
    /// Timestamp of the first record; records store theirs as a delta from it.
    pub base_timestamp: i64,
    /// The largest record timestamp in the batch.
    pub max_timestamp: i64,
    /// The producer id (`-1`: none).
    pub producer_id: i64,
    /// The producer epoch (`-1`: none).
    pub producer_epoch: i16,
    /// The first record's sequence number (`-1`: none).
    pub base_sequence: i32,
    /// The records, in offset order.
    pub records: Vec<Record>,
}

impl RecordBatch {
    /// Builds a data batch at `base_offset` with consecutive offsets.
    /// Panics on an empty `records` (the log API rejects those first).
    pub fn build(base_offset: i64, records: &[NewRecord]) -> RecordBatch {
        assert!(!records.is_empty(), "a batch needs at least one record");
        let base_timestamp = records.first().map_or(NO_TIMESTAMP, |r| r.timestamp);
        let max_timestamp = records
            .iter()
            .map(|r| r.timestamp)
            .max()
            .unwrap_or(NO_TIMESTAMP);
        let records: Vec<Record> = records
            .iter()
            .enumerate()
            .map(|(i, r)| Record {
                attributes: 0,
                timestamp_delta: r.timestamp.wrapping_sub(base_timestamp),
                offset_delta: i32::try_from(i).expect("batch too large"),
                key: r.key.clone(),
                value: r.value.clone(),
                headers: r.headers.clone(),
            })
            .collect();
        RecordBatch {
            base_offset,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            attributes: 0,
            last_offset_delta: i32::try_from(records.len() - 1).expect("batch too large"),
            base_timestamp,
            max_timestamp,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            records,
        }
    }

    /// Builds a transactional control batch (one COMMIT or ABORT marker).
    pub fn control(
        base_offset: i64,
        kind: ControlKind,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        timestamp: i64,
    ) -> RecordBatch {
        RecordBatch {
            base_offset,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            attributes: ATTR_TRANSACTIONAL | ATTR_CONTROL,
            last_offset_delta: 0,
            base_timestamp: timestamp,
            max_timestamp: timestamp,
            producer_id,
            producer_epoch,
            base_sequence: NO_SEQUENCE,
            records: vec![Record::control(kind, coordinator_epoch)],
        }
    }

    /// True for a control batch (a transaction's commit or abort marker).
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    /// True for a batch written by a transactional producer.
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    /// The delete horizon ([`ATTR_DELETE_HORIZON`]): `base_timestamp` when the bit is set.
    pub fn delete_horizon(&self) -> Option<i64> {
        (self.attributes & ATTR_DELETE_HORIZON != 0).then_some(self.base_timestamp)
    }

    /// The codec of the attributes; `None` for an id no codec has.
    pub fn compression(&self) -> Compression {
        Compression::from_id(self.attributes & ATTR_COMPRESSION_MASK).unwrap_or_default()
    }

    /// The batch's timestamp type (attribute bit 3).
    pub fn timestamp_type(&self) -> TimestampType {
        TimestampType::of_attributes(self.attributes)
    }

    /// This batch encoded with `compression` (its records unchanged).
    pub fn with_compression(mut self, compression: Compression) -> RecordBatch {
        self.attributes = (self.attributes & !ATTR_COMPRESSION_MASK) | compression.id();
        self
    }

    /// This batch stamped LogAppendTime at `now_ms`, as Kafka's broker stamps a
    /// batch it appends: the timestamp-type bit set and `maxTimestamp = now_ms`;
    /// base timestamp and record deltas stay as the producer wrote them (every
    /// record then reads as `now_ms`).
    pub fn with_log_append_time(mut self, now_ms: i64) -> RecordBatch {
        self.attributes |= ATTR_LOG_APPEND_TIME;
        self.max_timestamp = now_ms;
        self
    }

    /// Offset of the last offset this batch covers (kept even if records were compacted away).
    pub fn last_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta)
    }

    /// The offset after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset() + 1
    }

    /// Absolute offset and timestamp of each record.
    pub fn offset_of(&self, record: &Record) -> i64 {
        self.base_offset + i64::from(record.offset_delta)
    }

    /// The timestamp `record` reads as: its own under CreateTime, the batch's
    /// `max_timestamp` under LogAppendTime.
    pub fn timestamp_of(&self, record: &Record) -> i64 {
        self.timestamp_type().record_timestamp(
            self.base_timestamp,
            record.timestamp_delta,
            self.max_timestamp,
        )
    }

    /// A copy that keeps only the records `keep` accepts, with the same base offset,
    /// last offset delta, base timestamp, attributes (codec, timestamp type) and
    /// header fields (Kafka's rule for a partly cleaned batch). Under CreateTime
    /// `max_timestamp` is recomputed from the kept records; under LogAppendTime it
    /// stays (it *is* every record's timestamp). `None` if nothing is kept.
    pub fn retain(&self, mut keep: impl FnMut(&Record) -> bool) -> Option<RecordBatch> {
        let records: Vec<Record> = self.records.iter().filter(|r| keep(r)).cloned().collect();
        if records.is_empty() {
            return None;
        }
        let max_timestamp = match self.timestamp_type() {
            TimestampType::LogAppendTime => self.max_timestamp,
            TimestampType::CreateTime => records
                .iter()
                .map(|r| self.base_timestamp.wrapping_add(r.timestamp_delta))
                .max()
                .unwrap_or(NO_TIMESTAMP),
        };
        Some(RecordBatch {
            records,
            max_timestamp,
            ..self.clone()
        })
    }

    /// Bytes this batch takes when encoded. For a compressed batch this compresses
    /// the records (as [`RecordBatch::encode_into`] does).
    pub fn encoded_len(&self) -> usize {
        match self.compression() {
            Compression::None => self.uncompressed_len(),
            codec => HEADER_LEN + codec.compress(&self.encoded_records()).len(),
        }
    }

    /// Bytes of the batch with its records uncompressed.
    pub fn uncompressed_len(&self) -> usize {
        HEADER_LEN + self.records.iter().map(Record::encoded_len).sum::<usize>()
    }

    /// The records, encoded back to back (a compressed batch's payload before
    /// compression).
    pub fn encoded_records(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.uncompressed_len() - HEADER_LEN);
        for record in &self.records {
            record.encode_into(&mut out);
        }
        out
    }

    /// Appends the encoded batch to `out`: for a compressed batch, its records as
    /// one stream of its codec.
    #[expect(
        clippy::indexing_slicing,
        reason = "the CRC region and field were written just above, so they exist"
    )]
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let codec = Compression::from_id(self.attributes & ATTR_COMPRESSION_MASK)
            .expect("attributes name one of Kafka's codecs");
        let payload = match codec {
            Compression::None => None,
            codec => Some(codec.compress(&self.encoded_records())),
        };
        let total = HEADER_LEN
            + payload.as_ref().map_or_else(
                || self.uncompressed_len() - HEADER_LEN,
                |payload| payload.len(),
            );
        let start = out.len();
        let length = i32::try_from(total - LOG_OVERHEAD).expect("batch too large");
        out.extend_from_slice(&self.base_offset.to_be_bytes());
        out.extend_from_slice(&length.to_be_bytes());
        out.extend_from_slice(&self.partition_leader_epoch.to_be_bytes());
        out.push(MAGIC_V2 as u8);
        out.extend_from_slice(&[0; 4]); // crc, filled below
        out.extend_from_slice(&self.attributes.to_be_bytes());
        out.extend_from_slice(&self.last_offset_delta.to_be_bytes());
        out.extend_from_slice(&self.base_timestamp.to_be_bytes());
        out.extend_from_slice(&self.max_timestamp.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.base_sequence.to_be_bytes());
        let count = i32::try_from(self.records.len()).expect("batch too large");
        out.extend_from_slice(&count.to_be_bytes());
        match payload {
            Some(payload) => out.extend_from_slice(&payload),
            None => {
                for record in &self.records {
                    record.encode_into(out);
                }
            }
        }
        let crc = crate::format::crc::crc32c(&out[start + ATTRIBUTES_OFFSET..]);
        out[start + CRC_OFFSET..start + CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(out.len() - start, total);
    }

    /// Encodes the batch as it is stored on disk, CRC included.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.uncompressed_len());
        self.encode_into(&mut out);
        out
    }
}

/// Appends to `out` the encoded *uncompressed* batch `batch` re-framed with codec
/// `codec` (its records' bytes compressed as one stream) and, when
/// `log_append_time` is given, stamped LogAppendTime (attribute bit 3,
/// `maxTimestamp` = the stamp): byte for byte what decoding it, `with_compression`,
/// `with_log_append_time` and encoding give, without decoding a record (the append
/// and compaction hot paths). Panics if `batch` is compressed or shorter than a
/// header.
#[expect(
    clippy::indexing_slicing,
    reason = "the header was copied just above, so its fields exist"
)]
pub fn reframe(batch: &[u8], codec: Compression, log_append_time: Option<i64>, out: &mut Vec<u8>) {
    let (header, records) = batch.split_at(HEADER_LEN);
    let start = out.len();
    out.extend_from_slice(header);
    let mut attributes =
        i16::from_be_bytes([header[ATTRIBUTES_OFFSET], header[ATTRIBUTES_OFFSET + 1]]);
    assert_eq!(
        attributes & ATTR_COMPRESSION_MASK,
        0,
        "an uncompressed batch"
    );
    attributes |= codec.id();
    codec.compress_into(records, out);
    let length = i32::try_from(out.len() - start - LOG_OVERHEAD).expect("batch too large");
    let header = &mut out[start..start + HEADER_LEN];
    header[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
    if let Some(stamp) = log_append_time {
        attributes |= ATTR_LOG_APPEND_TIME;
        header[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
            .copy_from_slice(&stamp.to_be_bytes());
    }
    header[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    let crc = crate::format::crc::crc32c(&out[start + ATTRIBUTES_OFFSET..]);
    out[start + CRC_OFFSET..start + CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Decodes and validates the batch at the front of `buf`; returns it and its size.
///
/// Checks, in order: enough bytes for the header and the declared length; length
/// bounds; magic; CRC-32C; codec id; record count non-negative; for a compressed
/// batch, that its payload decompresses within [`super::batch_view::INFLATED_BYTES_MAX`];
/// the record count equal to the records decoded; every record's length; offset
/// deltas strictly increasing from >= 0 and <= lastOffsetDelta; no trailing bytes.
/// The checks are [`BatchView`]'s; this copies the records out.
pub fn decode(buf: &[u8]) -> Result<(RecordBatch, usize), FormatError> {
    let (view, size) = BatchView::decode(buf)?;
    let inflated = view.inflate()?;
    let (records_iter, capacity) = match &inflated {
        None => (view.records(), view.record_count),
        Some(inflated) => (
            view.records_in(inflated),
            view.record_count
                .min(inflated.len() / super::batch_view::RECORD_BYTES_MIN),
        ),
    };
    let mut records = Vec::with_capacity(capacity);
    for record in records_iter {
        records.push(record?.into_record());
    }
    assert_eq!(records.len(), view.record_count);
    let batch = RecordBatch {
        base_offset: view.base_offset,
        partition_leader_epoch: view.partition_leader_epoch,
        attributes: view.attributes,
        last_offset_delta: view.last_offset_delta,
        base_timestamp: view.base_timestamp,
        max_timestamp: view.max_timestamp,
        producer_id: view.producer_id,
        producer_epoch: view.producer_epoch,
        base_sequence: view.base_sequence,
        records,
    };
    // No `encoded_len() == size` here: like Kafka, the decoder accepts varints
    // written longer than they need to be, which the encoder never writes, so a
    // valid batch may re-encode shorter (a CRC-valid batch with such varints, as
    // the decode_batch fuzzer forges them, must not panic a debug build).
    Ok((batch, size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::CorruptKind;
    use crate::format::record::Header;

    /// A CRC-valid batch (the decode_batch fuzzer's input, resealed) whose record
    /// holds a varint one byte longer than needed: it decodes, its records are
    /// read, and it re-encodes one byte shorter, without a panic in any build.
    #[test]
    fn a_non_minimal_varint_decodes_and_re_encodes_shorter() {
        let hex = "00e30000000094000000003affffffff02716a618906000000000000000000000003e8\
                   00000000000003e8ffffffffffffffffffffffffffff0000000110dcfafd0000000000\
                   026bfe89ffff012000000008000000010c00000000000000";
        let hex: String = hex.split_whitespace().collect();
        let mut bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let end = LOG_OVERHEAD + 0x3a;
        let crc = crate::format::crc::crc32c(&bytes[ATTRIBUTES_OFFSET..end]);
        bytes[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        let (batch, size) = decode(&bytes).expect("a CRC-valid batch with a long varint");
        assert_eq!(size, end);
        assert_eq!(batch.records.len(), 1);
        assert_eq!(batch.encoded_len(), end - 1);
        let (again, used) = decode(&batch.encode()).unwrap();
        assert_eq!((again, used), (batch, end - 1));
    }

    fn sample() -> RecordBatch {
        RecordBatch::build(
            42,
            &[
                NewRecord::new(Some(b"k".to_vec()), Some(b"v".to_vec()), 1000),
                NewRecord::new(None, Some(b"keyless".to_vec()), 990),
                NewRecord {
                    key: Some(b"t".to_vec()),
                    value: None,
                    timestamp: 1005,
                    headers: vec![Header {
                        key: "h".into(),
                        value: Some(b"x".to_vec()),
                    }],
                },
            ],
        )
    }

    #[test]
    fn encode_decode_round_trip() {
        let batch = sample();
        let bytes = batch.encode();
        assert_eq!(bytes.len(), batch.encoded_len());
        let (decoded, used) = decode(&bytes).unwrap();
        assert_eq!(used, bytes.len());
        assert_eq!(decoded, batch);
        assert_eq!(decoded.last_offset(), 44);
        assert_eq!(decoded.max_timestamp, 1005);
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x40;
            // baseOffset and partitionLeaderEpoch are outside Kafka's CRC by design;
            // the segment checks base offsets, and the epoch is not interpreted.
            if i < LENGTH_OFFSET || (PARTITION_LEADER_EPOCH_OFFSET..MAGIC_OFFSET).contains(&i) {
                continue;
            }
            assert!(decode(&damaged).is_err(), "flip at {i} went unnoticed");
        }
    }

    #[test]
    fn every_truncation_is_detected() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            let err = decode(&bytes[..cut]).unwrap_err();
            assert!(
                matches!(err, FormatError::Corrupt { .. }),
                "cut {cut}: {err:?}"
            );
        }
    }

    #[test]
    #[cfg(feature = "compression")]
    fn compressed_batches_round_trip_with_every_codec() {
        for codec in Compression::ALL {
            let batch = sample().with_compression(codec);
            let bytes = batch.encode();
            assert_eq!(bytes.len(), batch.encoded_len());
            assert_eq!(bytes[ATTRIBUTES_OFFSET + 1] & 0x07, codec.id() as u8);
            let (decoded, used) = decode(&bytes).unwrap();
            assert_eq!(used, bytes.len());
            assert_eq!(decoded, batch, "{codec}");
            if codec != Compression::None {
                // The payload is the codec's stream of the records, nothing else.
                let inflated = codec.decompress(&bytes[RECORDS_OFFSET..], 1 << 20).unwrap();
                assert_eq!(inflated, batch.encoded_records());
            }
        }
    }

    #[test]
    #[cfg(feature = "compression")]
    fn reframe_is_decode_compress_stamp_encode() {
        for codec in Compression::ALL {
            for stamp in [None, Some(9_999)] {
                let mut want = sample().with_compression(codec);
                if let Some(stamp) = stamp {
                    want = want.with_log_append_time(stamp);
                }
                let mut got = vec![7u8; 3];
                reframe(&sample().encode(), codec, stamp, &mut got);
                assert_eq!(&got[..3], &[7, 7, 7]);
                assert_eq!(got[3..], want.encode()[..], "{codec} {stamp:?}");
            }
        }
    }

    #[test]
    fn unknown_codec_ids_are_corrupt() {
        for id in 5..8u8 {
            let mut bytes = sample().encode();
            bytes[ATTRIBUTES_OFFSET + 1] |= id;
            let crc = crate::format::crc::crc32c(&bytes[ATTRIBUTES_OFFSET..]);
            bytes[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
            assert_eq!(
                decode(&bytes),
                Err(FormatError::Corrupt {
                    position: ATTRIBUTES_OFFSET as u64,
                    kind: CorruptKind::UnknownCodec { id: i64::from(id) }
                })
            );
        }
    }

    #[test]
    fn log_append_time_reads_max_timestamp_and_survives_retain() {
        let batch = sample().with_log_append_time(5_000);
        assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
        assert!(batch.records.iter().all(|r| batch.timestamp_of(r) == 5_000));
        let (decoded, _) = decode(&batch.encode()).unwrap();
        assert_eq!(decoded, batch);
        let kept = batch.retain(|r| r.offset_delta == 1).unwrap();
        assert_eq!(
            kept.max_timestamp, 5_000,
            "LogAppendTime is kept, not recomputed"
        );
        assert_eq!(kept.attributes, batch.attributes);
    }

    #[test]
    fn retain_keeps_base_offset_and_last_delta() {
        let batch = sample();
        let kept = batch.retain(|r| r.offset_delta == 1).unwrap();
        assert_eq!(kept.base_offset, 42);
        assert_eq!(kept.last_offset_delta, 2);
        assert_eq!(kept.records.len(), 1);
        assert_eq!(kept.max_timestamp, 990);
        let (decoded, _) = decode(&kept.encode()).unwrap();
        assert_eq!(decoded, kept);
        assert!(batch.retain(|_| false).is_none());
    }

    #[test]
    fn control_batch_round_trips() {
        let batch = RecordBatch::control(7, ControlKind::Commit, 5, 1, 3, 77);
        assert!(batch.is_control());
        assert!(batch.is_transactional());
        let (decoded, _) = decode(&batch.encode()).unwrap();
        assert_eq!(decoded, batch);
        assert_eq!(decoded.records[0].control_kind(), Some(ControlKind::Commit));
    }
}

#[cfg(test)]
mod offset_bounds {
    use super::*;
    use crate::error::CorruptKind;

    /// `sample_at(base, delta)`: a CRC-valid one-record batch with these fields.
    fn sample_at(base_offset: i64, last_offset_delta: i32) -> Vec<u8> {
        let mut batch = RecordBatch::build(0, &[NewRecord::new(None, Some(b"v".to_vec()), 1)]);
        batch.base_offset = base_offset;
        batch.last_offset_delta = last_offset_delta;
        batch.encode()
    }

    #[test]
    fn last_offsets_past_i64_max_are_corrupt() {
        for (base, delta) in [
            (i64::MAX, 0),
            (i64::MAX - 1, 1),
            (i64::MAX - 5, i32::MAX),
            (i64::MIN, -1),
        ] {
            assert_eq!(offset_after(base, delta), None);
            let want = FormatError::Corrupt {
                position: BASE_OFFSET_OFFSET as u64,
                kind: CorruptKind::OffsetOverflow {
                    base_offset: base,
                    last_offset_delta: i64::from(delta),
                },
            };
            let bytes = sample_at(base, delta);
            assert_eq!(decode_header(&bytes), Err(want.clone()));
            assert_eq!(decode(&bytes).map(|(b, _)| b), Err(want));
        }
    }

    #[test]
    fn last_offsets_up_to_i64_max_minus_one_decode() {
        for (base, delta) in [
            (i64::MAX - 1, 0),
            (i64::MAX - 1 - i64::from(i32::MAX), i32::MAX),
            (0, 0),
        ] {
            assert_eq!(offset_after(base, delta), Some(base + i64::from(delta) + 1));
            let header = decode_header(&sample_at(base, delta)).unwrap();
            assert_eq!(header.last_offset(), base + i64::from(delta));
        }
    }
}

#[cfg(test)]
mod fuzz_regressions {
    use super::*;
    use crate::error::CorruptKind;

    /// A regression case from the `decode_batch` fuzzer: a CRC-valid batch whose
    /// `lastOffsetDelta` and `recordCount` are 0x19191919 must not make `decode`
    /// reserve 37 GB and abort. A count the batch's length cannot hold is
    /// `RecordCount` corruption.
    #[test]
    fn huge_record_count_is_corrupt_not_an_allocation() {
        let b64 = "AAAAAAAAACoAAABC/////wLjI8ORAAAZGRkZGRkZGRkZGRkZGRkZGRlvyWgSGRkZGRkZGRkZGRkZGRkZGRkZGRkZGRkAAAACAAAAAAAAAAphAQA=";
        let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b64)
            .expect("valid base64");
        let err = decode(&bytes).expect_err("must not decode");
        assert!(
            matches!(
                err,
                FormatError::Corrupt {
                    kind: CorruptKind::RecordCount { .. },
                    ..
                }
            ),
            "{err:?}"
        );
    }
}

//! Reads: records from an offset, the offset for a timestamp, a segment's batches.

use bytes::Bytes;

use crate::error::{CorruptKind, Error, Result};
use crate::format::batch::{
    self, decode_header, RecordBatch, ATTRIBUTES_OFFSET, CRC_OFFSET, HEADER_LEN,
};
use crate::format::{BatchView, FormatError};
use crate::segment::reader::{BatchReader, CHUNK_BYTES};
use crate::segment::region::RegionReader;
use crate::segment::Segment;

use super::{Log, ReadRecord};

/// Smallest read-ahead of one read call.
const READ_CHUNK_BYTES_MIN: usize = 16 * 1024;
/// Largest buffer `read` reads a segment into at once (more are read as needed).
const READ_CHUNK_BYTES_MAX: usize = 8 * 1024 * 1024;

impl Log {
    /// Stored records with offset >= `from`, in offset order: whole batches while
    /// their total stays within `max_bytes`, and always at least one batch that has
    /// a record >= `from` (if any exists). `from` in a compaction gap starts at the
    /// next stored offset.
    pub fn read(&self, from: i64, max_bytes: usize) -> Result<Vec<ReadRecord>> {
        self.check_usable()?;
        let (start, next) = (self.log_start_offset(), self.next_offset());
        if from < start || from > next {
            return Err(Error::OffsetOutOfRange {
                offset: from,
                log_start_offset: start,
                next_offset: next,
            });
        }
        // A record takes at least 8 bytes in a batch; reserving for the common case up
        // front avoids repeated reallocations of a large result.
        let mut out = Vec::with_capacity((max_bytes / 64).min(1 << 16));
        let mut taken_bytes = 0usize;
        for segment in self.segments.iter().skip(self.segment_index_for(from)) {
            if segment.next_offset <= from {
                continue;
            }
            let position = segment.index.lookup_position(from);
            let path = &segment.paths.log;
            let mut reader = RegionReader::new(
                self.fs.as_ref(),
                path,
                position,
                segment.bytes,
                self.read_chunk_bytes(max_bytes.saturating_sub(taken_bytes)),
            );
            while let Some((position, raw)) = reader.next_batch()? {
                let header = decode_header(&raw).map_err(|e| e.at(path, position))?;
                if header.base_offset + i64::from(header.last_offset_delta) < from {
                    continue;
                }
                if !out.is_empty() && taken_bytes + raw.len() > max_bytes {
                    return Ok(out);
                }
                let before = out.len();
                push_records(&raw, from, &mut out).map_err(|e| e.at(path, position))?;
                if out.len() > before {
                    taken_bytes += raw.len();
                }
            }
        }
        Ok(out)
    }

    /// Bytes of the first read of a segment when up to `budget_bytes` of batches may
    /// be returned from it: the budget, plus the batches the sparse index makes us
    /// skip (about one index interval), plus the next batch's header (to see that it
    /// does not fit), so that one read usually suffices.
    fn read_chunk_bytes(&self, budget_bytes: usize) -> usize {
        let interval_bytes =
            usize::try_from(self.config.index_interval_bytes).unwrap_or(usize::MAX);
        budget_bytes
            .saturating_add(interval_bytes)
            .saturating_add(HEADER_LEN)
            .clamp(READ_CHUNK_BYTES_MIN, READ_CHUNK_BYTES_MAX)
    }

    /// Whole encoded batches, as Kafka's fetch returns them: every batch whose last
    /// offset is >= `from`, in order, while their total stays within `max_bytes`
    /// (always at least one if any exists). Records are not decoded, but each
    /// batch's length bounds, magic and CRC-32C are checked. A batch may hold records
    /// below `from` (the caller skips them, as a Kafka consumer does).
    pub fn read_raw(&self, from: i64, max_bytes: usize) -> Result<Vec<u8>> {
        self.check_usable()?;
        let (start, next) = (self.log_start_offset(), self.next_offset());
        if from < start || from > next {
            return Err(Error::OffsetOutOfRange {
                offset: from,
                log_start_offset: start,
                next_offset: next,
            });
        }
        let mut out = Vec::with_capacity(max_bytes.min(8 * CHUNK_BYTES));
        let chunk_bytes = max_bytes.clamp(READ_CHUNK_BYTES_MIN, CHUNK_BYTES);
        for segment in self.segments.iter().skip(self.segment_index_for(from)) {
            if segment.next_offset <= from {
                continue;
            }
            let position = segment.index.lookup_position(from);
            let path = &segment.paths.log;
            let mut reader = BatchReader::with_chunk(
                self.fs.as_ref(),
                path,
                position,
                segment.bytes,
                chunk_bytes,
            );
            while let Some((position, raw)) = reader.next_raw()? {
                let header = decode_header(raw).map_err(|e| e.at(path, position))?;
                if header.base_offset + i64::from(header.last_offset_delta) < from {
                    continue;
                }
                if !out.is_empty() && out.len() + raw.len() > max_bytes {
                    return Ok(out);
                }
                check_crc(raw)
                    .map_err(|kind| Error::corrupt(path, position + CRC_OFFSET as u64, kind))?;
                out.extend_from_slice(raw);
            }
        }
        Ok(out)
    }

    /// The first offset whose record has a timestamp >= `timestamp`, found through
    /// the time and offset indexes; `None` if no record is that recent.
    pub fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<i64>> {
        self.check_usable()?;
        for segment in &self.segments {
            if segment.max_timestamp < timestamp || segment.is_empty() {
                continue;
            }
            let start_offset = segment.index.lookup_timestamp(timestamp);
            let position = segment.index.lookup_position(start_offset);
            let path = &segment.paths.log;
            let mut reader = BatchReader::new(self.fs.as_ref(), path, position, segment.bytes);
            while let Some((position, raw)) = reader.next_raw()? {
                let header = decode_header(raw).map_err(|e| e.at(path, position))?;
                if header.max_timestamp < timestamp {
                    continue;
                }
                let (decoded, _) = batch::decode(raw).map_err(|e| e.at(path, position))?;
                let found = decoded
                    .records
                    .iter()
                    .find(|r| decoded.timestamp_of(r) >= timestamp)
                    .map(|r| decoded.offset_of(r));
                if found.is_some() {
                    return Ok(found);
                }
            }
        }
        Ok(None)
    }

    /// Every batch of the segment at `base_offset`, decoded and validated.
    pub fn segment_batches(&self, base_offset: i64) -> Result<Vec<RecordBatch>> {
        self.check_usable()?;
        let segment = self
            .segments
            .iter()
            .find(|s| s.base_offset == base_offset)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("no segment at base offset {base_offset}"))
            })?;
        read_batches(self, segment)
    }

    /// Index in `self.segments` of the segment holding `offset` (the last one whose
    /// base offset is <= `offset`), or 0.
    fn segment_index_for(&self, offset: i64) -> usize {
        self.segments
            .partition_point(|s| s.base_offset <= offset)
            .saturating_sub(1)
    }
}

fn read_batches(log: &Log, segment: &Segment) -> Result<Vec<RecordBatch>> {
    let path = &segment.paths.log;
    let mut reader = BatchReader::new(log.fs.as_ref(), path, 0, segment.bytes);
    let mut batches = Vec::with_capacity(segment.batches as usize);
    while let Some((position, raw)) = reader.next_raw()? {
        let (decoded, _) = batch::decode(raw).map_err(|e| e.at(path, position))?;
        batches.push(decoded);
    }
    assert_eq!(batches.len() as u64, segment.batches);
    Ok(batches)
}

/// Checks the CRC-32C of one whole batch (`raw` has passed `decode_header`).
fn check_crc(raw: &[u8]) -> std::result::Result<(), CorruptKind> {
    let stored = raw
        .get(CRC_OFFSET..CRC_OFFSET + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_be_bytes)
        .ok_or(CorruptKind::Field("crc"))?;
    let computed = crc32c::crc32c(raw.get(ATTRIBUTES_OFFSET..).unwrap_or_default());
    if computed != stored {
        return Err(CorruptKind::ChecksumMismatch {
            got: computed,
            expected: stored,
        });
    }
    Ok(())
}

/// Checks and decodes `raw` (one whole batch) and appends its records with offset
/// >= `from` to `out`, their keys and values as slices of `raw` (no copies).
/// On an error, `out` may hold some of the batch's records.
fn push_records(raw: &Bytes, from: i64, out: &mut Vec<ReadRecord>) -> Result<(), FormatError> {
    let (batch, size) = BatchView::decode(raw)?;
    assert_eq!(size, raw.len());
    let control = batch.is_control();
    out.reserve(batch.record_count);
    for record in batch.records() {
        let record = record?;
        let offset = batch.base_offset + i64::from(record.offset_delta);
        if offset < from {
            continue;
        }
        if let Some(last) = out.last() {
            assert!(offset > last.offset, "offsets must increase");
        }
        out.push(ReadRecord {
            offset,
            timestamp: batch.base_timestamp + record.timestamp_delta,
            key: record.key.map(|key| raw.slice_ref(key)),
            value: record.value.map(|value| raw.slice_ref(value)),
            headers: record.headers,
            control,
        });
    }
    Ok(())
}

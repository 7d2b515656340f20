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
    /// The log is usable and `from` is in `[log_start_offset, next_offset]`.
    fn check_read_from(&self, from: i64) -> Result<()> {
        self.check_usable()?;
        let (start, next) = (self.log_start_offset(), self.next_offset());
        if from < start || from > next {
            return Err(Error::OffsetOutOfRange {
                offset: from,
                log_start_offset: start,
                next_offset: next,
            });
        }
        Ok(())
    }

    /// Stored records with offset >= `from`, in offset order: whole batches while
    /// their total stays within `max_bytes`, and always at least one batch that has
    /// a record >= `from` (if any exists). `from` in a compaction gap starts at the
    /// next stored offset.
    pub fn read(&self, from: i64, max_bytes: usize) -> Result<Vec<ReadRecord>> {
        self.check_read_from(from)?;
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
            if let Some(spare) = self.take_read_buffer() {
                reader = reader.reusing(spare);
            }
            let full = self.read_segment(
                &mut reader,
                path,
                from,
                max_bytes,
                &mut taken_bytes,
                &mut out,
            );
            self.keep_read_buffer(reader.into_chunk());
            if full? {
                break;
            }
        }
        Ok(out)
    }

    /// The records of one segment for [`Log::read`]; true once `max_bytes` is reached.
    fn read_segment(
        &self,
        reader: &mut RegionReader<'_>,
        path: &std::path::Path,
        from: i64,
        max_bytes: usize,
        taken_bytes: &mut usize,
        out: &mut Vec<ReadRecord>,
    ) -> Result<bool> {
        while let Some((position, raw)) = reader.next_batch()? {
            let header = decode_header(&raw).map_err(|e| e.at(path, position))?;
            if header.base_offset + i64::from(header.last_offset_delta) < from {
                continue;
            }
            if !out.is_empty() && *taken_bytes + raw.len() > max_bytes {
                return Ok(true);
            }
            let before = out.len();
            push_records(&raw, from, out).map_err(|e| e.at(path, position))?;
            if out.len() > before {
                *taken_bytes += raw.len();
            }
        }
        Ok(false)
    }

    /// The buffer of an earlier read, unless another thread is reading.
    fn take_read_buffer(&self) -> Option<Bytes> {
        let mut slot = self.read_buffer.try_lock().ok()?;
        Some(std::mem::take(&mut *slot))
    }

    /// Keeps `chunk` for the next read (the larger of it and the one kept).
    fn keep_read_buffer(&self, chunk: Bytes) {
        if let Ok(mut slot) = self.read_buffer.try_lock() {
            if chunk.len() >= slot.len() {
                *slot = chunk;
            }
        }
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
        self.check_read_from(from)?;
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
    let computed = crate::format::crc::crc32c(raw.get(ATTRIBUTES_OFFSET..).unwrap_or_default());
    if computed != stored {
        return Err(CorruptKind::ChecksumMismatch {
            got: computed,
            expected: stored,
        });
    }
    Ok(())
}

/// Checks and decodes `raw` (one whole batch) and appends its records with an
/// offset at or after `from` to `out`, their keys and values as slices of `raw`.
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
            timestamp: batch.base_timestamp.wrapping_add(record.timestamp_delta),
            key: record.key.map(|key| raw.slice_ref(key)),
            value: record.value.map(|value| raw.slice_ref(value)),
            headers: record.headers,
            control,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use crate::format::{filename, ControlKind, Header, NewRecord};
    use crate::fs::sim::SimFs;
    use crate::fs::FileSystem;
    use crate::log::{Log, LogConfig};

    use super::*;

    /// A record as the pre-zero-copy `read` returned it (owned bytes).
    type Owned = (
        i64,
        i64,
        Option<Vec<u8>>,
        Option<Vec<u8>>,
        Vec<Header>,
        bool,
    );

    fn new_record(i: i64) -> NewRecord {
        let mut record = NewRecord::new(
            (i % 5 != 0).then(|| format!("key-{}", i % 3).into_bytes()),
            (i % 7 != 0).then(|| vec![i as u8; (i % 4) as usize * 9]),
            1_000 + (i * 31) % 17,
        );
        if i % 6 == 1 {
            record.headers = vec![Header {
                key: format!("h{i}"),
                value: Some(vec![1, 2]),
            }];
        }
        record
    }

    /// Two segments of batches with gaps: records dropped inside batches and whole
    /// batches missing, as compaction leaves them; one control batch.
    fn segments() -> Vec<(i64, Vec<u8>)> {
        let mut segments = Vec::new();
        let mut next = 0i64;
        for _ in 0..2 {
            let base = next;
            let mut bytes = Vec::new();
            for b in 0..6 {
                let records: Vec<NewRecord> = (0..5).map(|i| new_record(next + i)).collect();
                let built = RecordBatch::build(next, &records);
                next = built.next_offset();
                let kept = match b {
                    1 => None, // a whole batch compacted away
                    2 => built.retain(|r| r.offset_delta % 2 == 0),
                    // Its last offsets hold no record: a read from there skips it.
                    3 => built.retain(|r| r.offset_delta <= 1),
                    4 => built.retain(|r| r.offset_delta >= 3),
                    _ => Some(built),
                };
                if let Some(batch) = kept {
                    batch.encode_into(&mut bytes);
                }
            }
            let control = RecordBatch::control(next, ControlKind::Commit, 3, 0, 1, 1_020);
            next = control.next_offset();
            control.encode_into(&mut bytes);
            segments.push((base, bytes));
        }
        segments
    }

    /// The old `read`: every batch decoded with `batch::decode`, records copied out.
    fn read_by_decode(segments: &[(i64, Vec<u8>)], from: i64, max_bytes: usize) -> Vec<Owned> {
        let mut out: Vec<Owned> = Vec::new();
        let mut taken_bytes = 0;
        for (_, bytes) in segments {
            let mut at = 0;
            while at < bytes.len() {
                let (decoded, size) = batch::decode(&bytes[at..]).unwrap();
                at += size;
                if decoded.last_offset() < from {
                    continue;
                }
                if !out.is_empty() && taken_bytes + size > max_bytes {
                    return out;
                }
                let before = out.len();
                for r in &decoded.records {
                    let offset = decoded.offset_of(r);
                    if offset >= from {
                        out.push((
                            offset,
                            decoded.timestamp_of(r),
                            r.key.clone(),
                            r.value.clone(),
                            r.headers.clone(),
                            decoded.is_control(),
                        ));
                    }
                }
                if out.len() > before {
                    taken_bytes += size;
                }
            }
        }
        out
    }

    fn owned(records: &[ReadRecord]) -> Vec<Owned> {
        records
            .iter()
            .map(|r| {
                (
                    r.offset,
                    r.timestamp,
                    r.key.as_deref().map(<[u8]>::to_vec),
                    r.value.as_deref().map(<[u8]>::to_vec),
                    r.headers.clone(),
                    r.control,
                )
            })
            .collect()
    }

    #[test]
    fn read_returns_what_batch_decode_returns() {
        let segments = segments();
        let fs = Arc::new(SimFs::new());
        let dir = Path::new("/p0");
        fs.create_dir_all(dir).unwrap();
        for (base, bytes) in &segments {
            fs.write_new(&dir.join(filename::build(*base, ".log")), bytes)
                .unwrap();
        }
        let config = LogConfig {
            segment_bytes: 1 << 20,
            index_interval_bytes: 150,
        };
        let (log, _) = Log::open_with(fs, dir, config).unwrap();
        assert_eq!(log.segments().len(), 2);
        let next_offset = log.next_offset();
        let all = read_by_decode(&segments, 0, usize::MAX);
        assert!(all.len() > 20);
        assert!(all.iter().any(|r| !r.4.is_empty()), "headers are covered");
        assert!(all.iter().any(|r| r.5), "control records are covered");
        assert!(
            all.windows(2).any(|w| w[1].0 > w[0].0 + 1),
            "gaps are covered"
        );
        // Offsets that start a read inside a batch whose earlier records are skipped.
        let mut partial_froms = Vec::new();
        for (_, bytes) in &segments {
            let mut at = 0;
            while at < bytes.len() {
                let (decoded, size) = batch::decode(&bytes[at..]).unwrap();
                at += size;
                let first = decoded.offset_of(&decoded.records[0]);
                partial_froms.extend(first + 1..=decoded.last_offset());
            }
        }
        assert!(partial_froms.len() > 10);
        for from in 0..=next_offset {
            for max_bytes in [0, 1, 120, 400, 1_000, usize::MAX] {
                let got = log.read(from, max_bytes).unwrap();
                let want = read_by_decode(&segments, from, max_bytes);
                assert_eq!(owned(&got), want, "from {from}, max_bytes {max_bytes}");
            }
        }
        // Keeping a read's records alive while reading again must not change them.
        let first = log.read(0, 400).unwrap();
        let second = log.read(first.len() as i64, 400).unwrap();
        assert_eq!(owned(&first), read_by_decode(&segments, 0, 400));
        assert!(!second.is_empty());
    }

    #[test]
    fn read_buffer_is_reused_only_when_no_record_shares_it() {
        let fs = Arc::new(SimFs::new());
        let (mut log, _) = Log::open_with(fs, "/p0", LogConfig::default()).unwrap();
        for b in 0..10 {
            let records: Vec<NewRecord> = (0..10).map(|i| new_record(b * 10 + i)).collect();
            log.append(&records).unwrap();
        }
        let value_at = |records: &[ReadRecord]| {
            let value = records[3].value.as_ref().unwrap();
            assert!(!value.is_empty());
            value.as_ptr()
        };
        let first = log.read(0, 1 << 20).unwrap();
        let kept = value_at(&first);
        let second = log.read(0, 1 << 20).unwrap();
        assert_ne!(
            value_at(&second),
            kept,
            "the first read's buffer is still shared"
        );
        assert_eq!(first, second);
        drop(first);
        let reused = value_at(&second);
        drop(second);
        let third = log.read(0, 1 << 20).unwrap();
        assert_eq!(
            value_at(&third),
            reused,
            "no record shares the buffer any more"
        );
    }
}

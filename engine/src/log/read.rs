//! Reads: records from an offset, the offset for a timestamp, a segment's batches.
//!
//! ## The read path (`engine/src/log/read.rs`, `engine/src/log/fetch.rs`, `engine/src/segment/view.rs`)
//! Every read goes through a `SegmentView`: the segment's `.log` bytes as one shared,
//! immutable `bytes::Bytes` from `FileSystem::map` (`StdFs` maps the file read-only, so
//! reading copies nothing out of the page cache; `SimFs` and `StdFs::without_mmap()` read
//! it). The log keeps the views of the 64 segments read last (no resource grows with the
//! number of segments) and never maps a segment no batch of which can fit the read's
//! budget; the active segment's view is made again only when a read needs bytes appended
//! since. Retention and compaction replace whole files without reopening the log, and a
//! view keeps the old file's bytes alive until dropped. A segment truncated *by another
//! process* while mapped faults (SIGBUS) instead of returning an error; the engine never
//! truncates a file it has mapped.
//!
//! The descriptors behind those views and every other call are `StdFs`'s handle cache
//! (`engine/src/fs/handles.rs`): at most a budget of open files (`StdFs::with_open_files_max`,
//! 256 for `StdFs::new`), the least recently used closed to make room, so a log of any
//! number of segments runs within a fixed number of descriptors and a closed file costs an
//! `open` when next used. A handle with writes not yet synced is never closed to make room
//! (closing the last descriptor of a file with unsynced pages can lose the write-back
//! error its `fsync` would report), so the budget is exceeded only by the files being
//! written at once. An open that finds the process or the system out of descriptors
//! (`EMFILE`, `ENFILE`) closes the cached handles it may and tries once more, so a process
//! limit below the budget costs reopens, not failures. Closing a handle invalidates
//! nothing a reader holds: a view owns its mapping, which the kernel keeps after the
//! descriptor it was made from is closed, and mappings do not count against the
//! descriptor limit. Outside the cache a writable log holds one descriptor, its writer
//! lock's (section 6e); a directory fsync, a listing and a file creation close theirs at
//! once. `tests/open_files.rs` runs every log command on a 400-segment log under a limit of
//! 64 descriptors and compares it with an unlimited run.
//!
//! The budget is a log's setting, `LogConfig::max_open_files` (at least 1, default
//! `OPEN_FILES_MAX_DEFAULT`, 256): `Log::open` builds its `StdFs` with it, and every log
//! command takes it as `--max-open-files N` (`seglog dump L --max-open-files 8` reads a log
//! of any size within 8 cached descriptors). A log opened through a file system it is given
//! (`Log::open_with`) lives within that file system's budget instead. A `LogManager` opens
//! every partition through the one file system it is given, so its budget is manager-wide:
//! between calls the manager holds at most the budget, one writer lock per partition and
//! each active segment's unsynced files (`.log`, `.index`, `.timeindex`), whatever the
//! number of partitions and segments; `tests/manager_open_files.rs` counts `/proc/self/fd`
//! through appends, reads, a cleaning round and a retention round on 40 partitions and
//! holds it to that bound.
//!
//! Three reads over one walk (the sparse index gives the start; every returned batch's
//! CRC-32C is checked): `Log::fetch` (Kafka's fetch: whole batches of **one** segment as a
//! slice of the view, no copy; `Fetch::records()` decodes them in place as borrowed
//! `RecordRef`s), `Log::read_raw` (the same batches across segments, copied out) and
//! `Log::read` (`ReadRecords`: owned records whose keys and values are slices of one
//! shared buffer per batch, the view's bytes or the batch's decompressed records).
//! CRC-32C has one seam, `format::crc` (the `crc-fast` crate; a proptest holds it to the
//! `crc32c` crate). The figures of every read path are in docs/performance.md.

use bytes::Bytes;

use crate::error::{CorruptKind, Error, Result};
use crate::format::batch::{self, decode_header, RecordBatch, HEADER_LEN};
use crate::format::batch_view::check_batch_crc;
use crate::format::{BatchView, FormatError};
use crate::segment::reader::BatchReader;
use crate::segment::view::SegmentView;
use crate::segment::Segment;

use super::records::{ReadRecords, RecordRef};
use super::Log;

/// Segment views a log keeps (see [`Log::segment_view`]).
pub(super) const MAPPED_SEGMENTS_MAX: usize = 64;

impl Log {
    /// The log is usable and `from` is in `[log_start_offset, next_offset]`.
    pub(super) fn check_read_from(&self, from: i64) -> Result<()> {
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

    /// The bytes of `segment` as a [`SegmentView`]: a shared mapping of its `.log`
    /// ([`crate::fs::FileSystem::map`]). The log keeps the views of the
    /// [`MAPPED_SEGMENTS_MAX`] segments read last (a mapping costs an mmap call and
    /// page faults to make, and an entry of the process's map count to keep). The
    /// active segment only grows while the log is open, so its view is made again
    /// only when a read needs bytes appended after it was made.
    pub(super) fn segment_view<'s>(&self, segment: &'s Segment) -> Result<SegmentView<'s>> {
        let path = &segment.paths.log;
        let needed = usize::try_from(segment.bytes).expect("a segment fits in memory");
        let mut mapped = self.mapped.lock().unwrap_or_else(|e| e.into_inner());
        let cached = mapped
            .iter()
            .position(|(base, _)| *base == segment.base_offset)
            .map(|i| mapped.remove(i).1);
        let bytes = match cached {
            Some(bytes) if bytes.len() >= needed => bytes,
            _ => {
                let bytes = self.fs.map(path).map_err(|e| Error::io(path, e))?;
                if bytes.len() < needed {
                    // The file is shorter than what was appended or recovered: it
                    // was cut behind the log's back.
                    return Err(Error::corrupt(
                        path,
                        bytes.len() as u64,
                        CorruptKind::Truncated {
                            needed: needed as u64,
                            available: bytes.len() as u64,
                        },
                    ));
                }
                bytes
            }
        };
        if mapped.len() >= MAPPED_SEGMENTS_MAX {
            mapped.remove(0);
        }
        mapped.push((segment.base_offset, bytes.clone()));
        Ok(SegmentView::new(path, bytes.slice(..needed))
            .with_offsets(segment.base_offset, segment.next_offset))
    }

    /// The segments that may hold offsets >= `from`, with the position in each to
    /// start walking at (the sparse index's entry at or before `from`; the start of
    /// a segment whose base offset is not below `from`, without its index). A
    /// vouched index is read at its first lookup (`crate::segment::vouched`), so an
    /// item may be that load's error.
    pub(super) fn segments_from(
        &self,
        from: i64,
    ) -> impl Iterator<Item = Result<(&Segment, usize)>> + '_ {
        self.segments
            .iter()
            .skip(self.segment_index_for(from))
            .filter(move |segment| segment.next_offset > from && !segment.is_empty())
            .map(move |segment| {
                if from <= segment.base_offset {
                    return Ok((segment, 0));
                }
                let position = segment.index(self.fs.as_ref())?.lookup_position(from);
                let position = usize::try_from(position).expect("a position fits in memory");
                Ok((segment, position))
            })
    }

    /// Stored records with offset >= `from`, in offset order: whole batches while
    /// their total stays within `max_bytes`, and always at least one batch that has
    /// a record >= `from` (if any exists). `from` in a compaction gap starts at the
    /// next stored offset. Keys and values are slices of the segment's mapping (of
    /// the batch's decompressed records, for a compressed batch), not copies, one
    /// shared buffer per batch ([`ReadRecords`]); every batch's CRC-32C is checked.
    pub fn read(&self, from: i64, max_bytes: usize) -> Result<ReadRecords> {
        let mut out = ReadRecords::new();
        self.read_into(from, max_bytes, &mut out)?;
        Ok(out)
    }

    /// The records [`Log::read`] returns, in the same order and with every check of
    /// it, handed to `visit` one at a time and borrowed rather than owned: keys and
    /// values are slices of the segment's mapping, or of the batch's decompressed
    /// records (valid during the call only). Nothing is allocated per record (no
    /// entry, no reference counts), and a compressed batch's records are
    /// read while its decompressed buffer is still in the cache. Returns the number
    /// of records visited. On an error, `visit` may have seen some of the records
    /// of the batch that failed.
    pub fn read_each(
        &self,
        from: i64,
        max_bytes: usize,
        visit: impl FnMut(RecordRef<'_>),
    ) -> Result<usize> {
        let mut sink = Visitor {
            visit,
            visited: 0,
            last_offset: None,
            inflated: Vec::new(),
        };
        self.read_into(from, max_bytes, &mut sink)?;
        Ok(sink.visited)
    }

    /// The walk [`Log::read`] and [`Log::read_each`] share: which batches they
    /// take, and the checks of each.
    fn read_into<S: ReadSink>(&self, from: i64, max_bytes: usize, out: &mut S) -> Result<()> {
        self.check_read_from(from)?;
        let mut taken_bytes = 0usize;
        for found in self.segments_from(from) {
            let (segment, mut position) = found?;
            if out.taken() > 0 && taken_bytes + HEADER_LEN > max_bytes {
                break; // no batch fits any more: do not map the next segment
            }
            let view = self.segment_view(segment)?;
            let first = out.taken() == 0;
            if S::RESERVES {
                out.reserve(read_records_max(
                    &view,
                    position,
                    from,
                    max_bytes,
                    taken_bytes,
                    first,
                ));
            }
            // The offset after the previous batch walked in this segment.
            let mut walked_next: Option<i64> = None;
            while position < view.len() {
                let (header, raw) = view.batch_at(position)?;
                let batch_position = position;
                position += header.size;
                check_follows(&view, batch_position, &header, walked_next)?;
                walked_next = Some(header.last_offset() + 1);
                if header.last_offset() < from {
                    continue;
                }
                if out.taken() > 0 && taken_bytes + raw.len() > max_bytes {
                    return Ok(());
                }
                let before = out.taken();
                out.take_batch(view.bytes(), raw, from)
                    .map_err(|e| e.at(view.path(), batch_position as u64))?;
                if out.taken() > before {
                    taken_bytes += raw.len();
                }
            }
        }
        Ok(())
    }

    /// Whole encoded batches, as Kafka's fetch returns them: every batch whose last
    /// offset is >= `from`, in order, while their total stays within `max_bytes`
    /// (always at least one if any exists). Records are not decoded, but each
    /// batch's length bounds, magic and CRC-32C are checked. A batch may hold records
    /// below `from` (the caller skips them, as a Kafka consumer does). Copies the
    /// batches out; [`Log::fetch`] hands out one segment's batches without a copy.
    pub fn read_raw(&self, from: i64, max_bytes: usize) -> Result<Vec<u8>> {
        self.check_read_from(from)?;
        let mut out = Vec::new();
        for found in self.segments_from(from) {
            let (segment, position) = found?;
            if !out.is_empty() && out.len() + HEADER_LEN > max_bytes {
                break; // no batch fits any more: do not map the next segment
            }
            let view = self.segment_view(segment)?;
            let Checked { start, end, .. } = checked_batches(
                &view,
                position,
                from,
                max_bytes.saturating_sub(out.len()),
                out.is_empty(),
            )?;
            out.extend_from_slice(&view.bytes()[start..end]);
            if end < view.len() {
                break;
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
            let index = segment.index(self.fs.as_ref())?;
            let start_offset = index.lookup_timestamp(timestamp);
            let position = index.lookup_position(start_offset);
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
    pub(super) fn segment_index_for(&self, offset: i64) -> usize {
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
    if batches.len() as u64 != segment.batches {
        return Err(Error::corrupt(
            path,
            segment.bytes,
            CorruptKind::Other(format!(
                "{} batches, {} expected (the segment's summary)",
                batches.len(),
                segment.batches
            )),
        ));
    }
    Ok(batches)
}

/// The records (at most) of the batches [`Log::read`] takes from `view`, walking
/// from `position` with `taken_bytes` of its `max_bytes` taken (`first`: none yet),
/// from their headers alone: what its result is sized for up front. Sizing it by
/// doubling from a guess (1 MiB / 64 records) copied the records so far once per
/// read of a compressed log, which holds more records per stored byte, and
/// over-reserved for an uncompressed one. A batch that does not decode ends the
/// walk; the read itself reports it.
fn read_records_max(
    view: &SegmentView<'_>,
    mut position: usize,
    from: i64,
    max_bytes: usize,
    mut taken_bytes: usize,
    first: bool,
) -> usize {
    let mut records = 0usize;
    while position < view.len() {
        let Ok((header, raw)) = view.batch_at(position) else {
            break;
        };
        position += header.size;
        if header.last_offset() < from {
            continue;
        }
        if !(first && records == 0) && taken_bytes + raw.len() > max_bytes {
            break;
        }
        // Unchecked yet (the CRC is the read's): bounded, so that a damaged count
        // cannot reserve more than a few MiB.
        let declared = usize::try_from(header.record_count).unwrap_or(0);
        let last_delta = usize::try_from(header.last_offset_delta).unwrap_or(0);
        records += declared.min(last_delta + 1);
        taken_bytes += raw.len();
        if records >= READ_RESERVED_RECORDS_MAX {
            break;
        }
    }
    records.min(READ_RESERVED_RECORDS_MAX)
}

/// The most records [`read_records_max`] sizes a read's result for (6 MiB of
/// entries); a larger read grows it as it goes.
const READ_RESERVED_RECORDS_MAX: usize = 1 << 17;

/// The whole batches of a view a fetch returns: bytes `[start, end)`, and the
/// offset after the last of them (`None` when there are none).
pub(super) struct Checked {
    pub start: usize,
    pub end: usize,
    pub next_offset: Option<i64>,
}

/// The batches a fetch from `from` returns: the whole batches from `position` on
/// whose last offset is >= `from`, while their total stays within `budget_bytes`
/// (at least one if `need_one`). Each is checked (length bounds, magic, CRC-32C).
pub(super) fn checked_batches(
    view: &SegmentView<'_>,
    mut position: usize,
    from: i64,
    budget_bytes: usize,
    need_one: bool,
) -> Result<Checked> {
    let mut start = None;
    let mut next_offset = None;
    while position < view.len() {
        let (header, raw) = view.batch_at(position)?;
        if header.last_offset() < from {
            position += header.size;
            continue;
        }
        let first = *start.get_or_insert(position);
        let taken_bytes = position - first;
        if (taken_bytes > 0 || !need_one) && taken_bytes + raw.len() > budget_bytes {
            break;
        }
        check_batch_crc(raw).map_err(|e| e.at(view.path(), position as u64))?;
        check_follows(view, position, &header, next_offset)?;
        next_offset = Some(header.last_offset() + 1);
        position += header.size;
    }
    Ok(Checked {
        start: start.unwrap_or(position),
        end: position,
        next_offset,
    })
}

/// Where the batches [`Log::read_into`] takes go.
trait ReadSink {
    /// Whether [`ReadSink::reserve`] is worth the walk over the headers that
    /// sizes it.
    const RESERVES: bool;
    /// Records taken so far.
    fn taken(&self) -> usize;
    /// About `records` more are coming (a sizing hint).
    fn reserve(&mut self, records: usize);
    /// Checks and decodes `raw` (one whole batch, a slice of `view`) and takes its
    /// records with an offset at or after `from`, their keys and values slices of
    /// `view` (of the decompressed records, for a compressed batch). Under
    /// LogAppendTime every record's timestamp is the batch's `maxTimestamp`.
    fn take_batch(&mut self, view: &Bytes, raw: &[u8], from: i64) -> Result<(), FormatError>;
}

/// [`Log::read`]'s sink: owned records, one shared buffer per batch.
impl ReadSink for ReadRecords {
    const RESERVES: bool = true;

    fn taken(&self) -> usize {
        self.len()
    }

    fn reserve(&mut self, records: usize) {
        ReadRecords::reserve(self, records);
    }

    fn take_batch(&mut self, view: &Bytes, raw: &[u8], from: i64) -> Result<(), FormatError> {
        let (batch, size) = BatchView::decode(raw)?;
        assert_eq!(size, raw.len());
        let bytes = match batch.inflate()? {
            None => view.slice_ref(raw),
            Some(inflated) => Bytes::from(inflated),
        };
        let records = if batch.compression() == crate::format::Compression::None {
            batch.records()
        } else {
            batch.records_in(&bytes)
        };
        self.reserve(batch.record_count);
        self.push_batch(bytes.clone());
        let mut last_offset = self.last_offset();
        let control = batch.is_control();
        batch_records(
            &batch,
            records,
            from,
            &mut last_offset,
            |offset, timestamp, record| {
                self.push_fields(
                    offset,
                    timestamp,
                    record.key,
                    record.value,
                    record.headers,
                    control,
                );
            },
        )
    }
}

/// [`Log::read_each`]'s sink: each record borrowed, handed to `visit`.
struct Visitor<F> {
    visit: F,
    visited: usize,
    last_offset: Option<i64>,
    /// The arena compressed batches are decompressed into
    /// ([`BatchView::inflate_reusing`]).
    inflated: Vec<u8>,
}

impl<F: FnMut(RecordRef<'_>)> ReadSink for Visitor<F> {
    const RESERVES: bool = false;

    fn taken(&self) -> usize {
        self.visited
    }

    fn reserve(&mut self, _records: usize) {}

    fn take_batch(&mut self, _view: &Bytes, raw: &[u8], from: i64) -> Result<(), FormatError> {
        let (batch, size) = BatchView::decode(raw)?;
        assert_eq!(size, raw.len());
        // A compressed batch's records are decompressed into the visitor's arena,
        // reused batch after batch (no allocation or copy per batch).
        let records = match batch.inflate_reusing(&mut self.inflated)? {
            None => batch.records(),
            Some(len) => batch.records_in(self.inflated.get(..len).unwrap_or_default()),
        };
        let visited = &mut self.visited;
        let visit = &mut self.visit;
        let control = batch.is_control();
        batch_records(
            &batch,
            records,
            from,
            &mut self.last_offset,
            |offset, timestamp, record| {
                *visited += 1;
                visit(RecordRef {
                    offset,
                    timestamp,
                    key: record.key,
                    value: record.value,
                    headers: record.headers,
                    control,
                });
            },
        )
    }
}

/// The records of `batch` (`records`) from `from` on, each handed to `take` with
/// its absolute offset and read timestamp. `last_offset` is the offset of the
/// record taken before (of any batch), updated as records are taken: each must be
/// above it.
#[inline]
fn batch_records<'a>(
    batch: &BatchView<'_>,
    records: crate::format::RecordViews<'a>,
    from: i64,
    last_offset: &mut Option<i64>,
    mut take: impl FnMut(i64, i64, crate::format::RecordView<'a>),
) -> Result<(), FormatError> {
    let log_append_time = batch.timestamp_type() == crate::format::TimestampType::LogAppendTime;
    for record in records {
        let record = record?;
        let offset = batch.offset_of(&record);
        if offset < from {
            continue;
        }
        if let Some(last) = *last_offset {
            // Checked by every scan; a trusted segment was not scanned, so a damaged
            // base offset (outside the CRC) shows up here.
            if offset <= last {
                return Err(FormatError::Corrupt {
                    position: 0,
                    kind: CorruptKind::BaseOffset {
                        got: batch.base_offset,
                        previous: last,
                    },
                });
            }
        }
        *last_offset = Some(offset);
        let timestamp = if log_append_time {
            batch.max_timestamp
        } else {
            batch.base_timestamp.wrapping_add(record.timestamp_delta)
        };
        take(offset, timestamp, record);
    }
    Ok(())
}

/// The batch at `position` of `view` must start at or after `next`, the offset
/// after the batch walked before it in the same segment: a damaged base offset
/// (outside the CRC) in a segment no scan checked would overlap that batch.
fn check_follows(
    view: &SegmentView<'_>,
    position: usize,
    header: &batch::BatchHeader,
    next: Option<i64>,
) -> Result<()> {
    match next.filter(|next| header.base_offset < *next) {
        Some(next) => Err(Error::corrupt(
            view.path(),
            position as u64,
            CorruptKind::BaseOffset {
                got: header.base_offset,
                previous: next - 1,
            },
        )),
        None => Ok(()),
    }
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
    use crate::log::ReadRecord;

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
    /// batches missing, as compaction leaves them; one control batch. Every data
    /// batch compressed with `codec`.
    fn segments_with(codec: crate::format::Compression) -> Vec<(i64, Vec<u8>)> {
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
                    if codec == crate::format::Compression::None {
                        batch.encode_into(&mut bytes);
                    } else {
                        batch::reframe(&batch.encode(), codec, None, &mut bytes);
                    }
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
        for codec in crate::format::Compression::ALL {
            if codec.is_available() {
                check_read_returns_what_batch_decode_returns(codec);
            }
        }
    }

    fn check_read_returns_what_batch_decode_returns(codec: crate::format::Compression) {
        let segments = segments_with(codec);
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
            ..LogConfig::default()
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
                assert_eq!(
                    owned(&got.to_vec()),
                    want,
                    "from {from}, max_bytes {max_bytes}"
                );
                // read_each visits exactly what read returns.
                let mut each = Vec::new();
                let visited = log
                    .read_each(from, max_bytes, |r| {
                        each.push((
                            r.offset,
                            r.timestamp,
                            r.key.map(<[u8]>::to_vec),
                            r.value.map(<[u8]>::to_vec),
                            r.headers,
                            r.control,
                        ));
                    })
                    .unwrap();
                assert_eq!(visited, each.len());
                assert_eq!(each, want, "read_each from {from}, max_bytes {max_bytes}");
            }
        }
        // Fetch: one segment's checked batches, zero-copy. Its bytes are what
        // read_raw returns first, and its records are what the old decoder finds
        // in those bytes.
        for from in 0..=next_offset {
            for max_bytes in [0, 1, 120, 400, 1_000, usize::MAX] {
                let fetch = log.fetch(from, max_bytes).unwrap();
                let raw = log.read_raw(from, max_bytes).unwrap();
                assert!(
                    raw.starts_with(fetch.bytes()),
                    "from {from}, max {max_bytes}"
                );
                assert_eq!(fetch.is_empty(), raw.is_empty());
                let got: Vec<ReadRecord> = fetch
                    .records()
                    .map(|r| ReadRecord::from_ref(fetch.bytes(), r.unwrap()))
                    .collect();
                let want = read_by_decode(&[(0, fetch.bytes().to_vec())], from, usize::MAX);
                assert_eq!(owned(&got), want, "from {from}, max_bytes {max_bytes}");
                let batches: Vec<_> = fetch.batches().map(|b| b.unwrap()).collect();
                assert_eq!(
                    batches.iter().map(|b| b.size()).sum::<usize>(),
                    fetch.bytes().len()
                );
                if let Some(last) = batches.last() {
                    assert_eq!(
                        fetch.next_offset(),
                        last.base_offset + i64::from(last.last_offset_delta) + 1
                    );
                    assert!(batches.len() == 1 || fetch.bytes().len() <= max_bytes);
                }
            }
        }
        // Fetching on from each fetch's next offset walks the whole log.
        for max_bytes in [1, 120, usize::MAX] {
            let mut walked = Vec::new();
            let mut from = 0;
            loop {
                let fetch = log.fetch(from, max_bytes).unwrap();
                if fetch.is_empty() {
                    break;
                }
                assert!(fetch.next_offset() > from);
                walked.extend(
                    fetch
                        .records()
                        .map(|r| ReadRecord::from_ref(fetch.bytes(), r.unwrap())),
                );
                from = fetch.next_offset();
            }
            assert_eq!(owned(&walked), all, "max_bytes {max_bytes}");
        }
        // Keeping a read's records alive while reading again must not change them.
        let first = log.read(0, 400).unwrap();
        let second = log.read(first.len() as i64, 400).unwrap();
        assert_eq!(owned(&first.to_vec()), read_by_decode(&segments, 0, 400));
        assert!(!second.is_empty());
    }

    #[test]
    fn the_log_keeps_the_views_of_the_segments_read_last() {
        let fs = Arc::new(SimFs::new());
        let config = LogConfig {
            segment_bytes: 100,
            index_interval_bytes: 100,
            ..LogConfig::default()
        };
        let (mut log, _) = Log::open_with(fs, "/p0", config).unwrap();
        let segments = MAPPED_SEGMENTS_MAX + 6;
        for i in 0..segments as i64 {
            log.append(&[new_record(i)]).unwrap();
            log.roll().unwrap();
        }
        let all = log.read(0, usize::MAX).unwrap();
        assert_eq!(all.len(), segments);
        let kept: Vec<i64> = log.mapped.lock().unwrap().iter().map(|(b, _)| *b).collect();
        let newest: Vec<i64> = (segments - MAPPED_SEGMENTS_MAX..segments)
            .map(|b| b as i64)
            .collect();
        // The active (empty) segment holds nothing >= its base to read.
        assert_eq!(kept, newest);
        // Reading an evicted segment maps it again, as the most recent.
        assert_eq!(log.read(0, 1).unwrap().first().unwrap().offset, 0);
        let kept = log.mapped.lock().unwrap();
        assert_eq!(kept.len(), MAPPED_SEGMENTS_MAX);
        assert_eq!(kept.last().unwrap().0, 0);
    }

    #[test]
    fn reads_follow_appends_and_records_outlive_their_segment() {
        let tmp = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_bytes: 700,
            index_interval_bytes: 100,
            ..LogConfig::default()
        };
        let (mut log, _) = Log::open(tmp.path(), config.clone()).unwrap();
        let mut appended = Vec::new();
        for b in 0..20 {
            let records: Vec<NewRecord> = (0..6).map(|i| new_record(b * 6 + i)).collect();
            log.append(&records).unwrap();
            appended.extend(records);
            // Every read sees everything appended so far: the active segment's
            // mapping is made again once it no longer covers the segment.
            let all = log.read(0, usize::MAX).unwrap();
            assert_eq!(all.len(), appended.len());
            for (got, want) in all.iter().zip(&appended) {
                assert_eq!(got.key, want.key.as_deref());
                assert_eq!(got.value, want.value.as_deref());
            }
        }
        assert!(log.segments().len() > 2, "closed segments are covered");
        let first = log.read(0, usize::MAX).unwrap();
        let first_owned = owned(&first.to_vec());
        // Retention deletes the closed segments and reopens the log; the records
        // read before keep their bytes (the mapping outlives the file's removal).
        let deleted = log
            .retain(i64::MAX / 2, Some(0), None)
            .unwrap()
            .deleted_segments;
        assert!(!deleted.is_empty());
        log.close().unwrap();
        assert_eq!(owned(&first.to_vec()), first_owned);
        assert!(first_owned
            .iter()
            .any(|r| r.3.as_ref().is_some_and(|v| !v.is_empty())));
    }
}

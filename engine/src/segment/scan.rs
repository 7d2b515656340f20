//! The full validation of one `.log` on open.
//!
//! Every batch is decoded (length bounds, magic, CRC-32C, record count, offset
//! deltas: see [`crate::format::batch::decode`]) and checked against the segment:
//! the first batch's base offset is >= the segment's base offset, each batch's base
//! offset is > the previous batch's last offset, every last offset is below the next
//! segment's base offset, and relative offsets and positions fit the 32-bit index
//! fields. The scan stops at the first invalid batch and says where; it never
//! modifies anything (the caller decides: truncate the active tail, or fail).

use std::path::Path;

use crate::error::{CorruptKind, Error, Result};
use crate::format::batch;
use crate::fs::FileSystem;

use super::reader::BatchReader;
use super::validate::{BatchMark, SegmentBatches};
use super::{BatchFacts, Segment};

/// What a scan found.
#[derive(Debug)]
pub struct ScanOutcome {
    /// Metadata and indexes of the valid prefix.
    pub segment: Segment,
    /// Length of the `.log` file.
    pub file_bytes: u64,
    /// The first invalid batch (an [`Error::Corrupt`] naming file and position).
    pub invalid: Option<Error>,
    /// Batches (whole or partial) after the valid prefix, counted by walking the
    /// declared lengths until they stop making sense; at least 1 if `invalid`.
    pub invalid_batches: u64,
    /// The valid batches, what the index files are validated against (for a scan
    /// that continued a trusted prefix, only those past it).
    pub batches: SegmentBatches,
    /// Opened from a checkpoint's summary, not scanned: its index files were just
    /// checked against the summary's checksums and need no validation.
    pub trusted: bool,
}

impl ScanOutcome {
    /// A segment opened from its summary (`file_bytes` long), none of it scanned.
    pub fn trusted(segment: Segment, file_bytes: u64) -> Self {
        ScanOutcome {
            segment,
            file_bytes,
            invalid: None,
            invalid_batches: 0,
            batches: SegmentBatches::default(),
            trusted: true,
        }
    }

    /// Bytes of the valid prefix of the `.log`.
    pub fn valid_bytes(&self) -> u64 {
        self.segment.bytes
    }
}

/// Scans the segment at `base_offset` in `dir`. `upper_bound` is the next segment's
/// base offset, if any. IO errors, unsupported batches and a compressed batch whose
/// payload is bad (see `is_compressed_payload_error`) are returned as `Err`;
/// other corruption is returned in [`ScanOutcome::invalid`].
pub fn scan_segment(
    fs: &dyn FileSystem,
    dir: &Path,
    base_offset: i64,
    upper_bound: Option<i64>,
    index_interval_bytes: u64,
) -> Result<ScanOutcome> {
    let segment = Segment::empty(dir, base_offset, index_interval_bytes);
    scan_from(fs, segment, upper_bound)
}

/// Scans the bytes of `segment`'s `.log` past `segment.bytes`, continuing its
/// metadata and indexes: the whole file for an empty `segment`, or what was
/// appended after a checkpoint vouched for its first `segment.bytes` bytes.
pub fn scan_from(
    fs: &dyn FileSystem,
    mut segment: Segment,
    upper_bound: Option<i64>,
) -> Result<ScanOutcome> {
    let base_offset = segment.base_offset;
    let path = segment.paths.log.clone();
    let file_bytes = fs.len(&path).map_err(|e| Error::io(&path, e))?;
    assert!(segment.bytes <= file_bytes);
    let mut reader = BatchReader::new(fs, &path, segment.bytes, file_bytes);
    let mut invalid = None;
    let mut marks = Vec::new();
    loop {
        let (position, raw) = match reader.next_raw() {
            Ok(Some(next)) => next,
            Ok(None) => break,
            Err(e) if e.is_corrupt() => {
                invalid = Some(e);
                break;
            }
            Err(e) => return Err(e),
        };
        let facts = match batch::decode(raw) {
            Ok((decoded, size)) => BatchFacts {
                base_offset: decoded.base_offset,
                last_offset: decoded.last_offset(),
                size_bytes: size as u64,
                records: decoded.records.len() as u64,
                max_timestamp: decoded.max_timestamp,
            },
            Err(e) => {
                let e = e.at(&path, position);
                if !e.is_corrupt() || is_compressed_payload_error(raw) {
                    return Err(e);
                }
                invalid = Some(e);
                break;
            }
        };
        if let Some(kind) = check_placement(&segment, &facts, upper_bound, position) {
            invalid = Some(Error::corrupt(&path, position, kind));
            break;
        }
        marks.push(BatchMark {
            position,
            last_offset: facts.last_offset,
            max_timestamp: facts.max_timestamp,
        });
        segment.on_batch(&facts);
        debug_assert_eq!(segment.bytes, reader.position());
    }
    let invalid_batches = if invalid.is_some() {
        count_batches(fs, &path, segment.bytes, file_bytes)?
    } else {
        0
    };
    if invalid.is_none() {
        assert_eq!(segment.bytes, file_bytes);
    }
    let batches = SegmentBatches {
        base_offset,
        valid_bytes: segment.bytes,
        batches: marks,
    };
    Ok(ScanOutcome {
        segment,
        file_bytes,
        invalid,
        invalid_batches,
        batches,
        trusted: false,
    })
}

/// True when `raw` (a batch that failed to decode) is whole, CRC-valid and
/// compressed: then its payload (or a header field the CRC covers) is bad: it does
/// not decompress, inflates beyond the bound, or holds other records than its
/// header declares. That is not a torn
/// write (a crash cannot produce a matching CRC over the wrong bytes) but bad data
/// a writer produced: an error even in the active segment, never truncated.
fn is_compressed_payload_error(raw: &[u8]) -> bool {
    use crate::format::batch::{ATTRIBUTES_OFFSET, ATTR_COMPRESSION_MASK};
    let whole = batch::decode_header(raw).is_ok_and(|header| header.size == raw.len());
    let compressed = raw
        .get(ATTRIBUTES_OFFSET + 1)
        .is_some_and(|low| i16::from(*low) & ATTR_COMPRESSION_MASK != 0);
    whole && compressed && crate::format::batch_view::check_batch_crc(raw).is_ok()
}

/// The segment-level checks of one decoded batch.
fn check_placement(
    segment: &Segment,
    batch: &BatchFacts,
    upper_bound: Option<i64>,
    position: u64,
) -> Option<CorruptKind> {
    let previous = segment.next_offset.saturating_sub(1);
    let misplaced = CorruptKind::BaseOffset {
        got: batch.base_offset,
        previous,
    };
    if batch.base_offset < segment.next_offset {
        return Some(misplaced);
    }
    if let Some(upper) = upper_bound {
        if batch.last_offset >= upper {
            return Some(misplaced);
        }
    }
    let span = batch.last_offset.checked_sub(segment.base_offset);
    if span.is_none_or(|span| span > i64::from(u32::MAX)) {
        return Some(misplaced);
    }
    if position > u64::from(u32::MAX) {
        return Some(CorruptKind::Other(format!(
            "batch position {position} does not fit a 32-bit index entry"
        )));
    }
    None
}

/// Counts the (possibly partial) batches in `[from, to)` by their declared lengths.
fn count_batches(fs: &dyn FileSystem, path: &Path, from: u64, to: u64) -> Result<u64> {
    let mut reader = BatchReader::new(fs, path, from, to);
    let mut count = 0;
    loop {
        match reader.next_raw() {
            Ok(Some(_)) => count = u64::saturating_add(count, 1),
            Ok(None) => return Ok(count),
            Err(e) if e.is_corrupt() => return Ok(count.saturating_add(1)),
            Err(e) => return Err(e),
        }
    }
}

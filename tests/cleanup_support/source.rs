//! A log directory read straight from its segment files with `seglog::format`,
//! independent of the engine's own reads: every batch decoded and checked, and each
//! segment's metadata computed from its batches (the tests' oracle for what a
//! directory holds).

use std::path::Path;

use seglog::error::CorruptKind;
use seglog::format::{batch, filename, RecordBatch};
use seglog::fs::FileSystem;
use seglog::{Error, Result};

pub use seglog::segment::{list_segments, segment_path, SegmentMeta};

/// Decodes every batch of the `.log` file at `path`, checking what the segment
/// layer checks: first base >= segment base, each base after the previous last offset.
pub fn read_batches(
    fs: &dyn FileSystem,
    path: &Path,
    base_offset: i64,
) -> Result<Vec<RecordBatch>> {
    let bytes = fs.read_all(path).map_err(|e| Error::io(path, e))?;
    decode_segment(path, base_offset, &bytes)
}

/// Decodes a whole segment held in memory (see `read_batches`).
pub fn decode_segment(path: &Path, base_offset: i64, bytes: &[u8]) -> Result<Vec<RecordBatch>> {
    let mut batches = Vec::new();
    let mut position = 0usize;
    let mut previous_last = base_offset - 1;
    while position < bytes.len() {
        let rest = bytes.get(position..).unwrap_or_default();
        let (decoded, used) = batch::decode(rest).map_err(|e| e.at(path, position as u64))?;
        if decoded.base_offset <= previous_last {
            return Err(Error::corrupt(
                path,
                position as u64,
                CorruptKind::BaseOffset {
                    got: decoded.base_offset,
                    previous: previous_last,
                },
            ));
        }
        previous_last = decoded.last_offset();
        position += used;
        batches.push(decoded);
    }
    assert_eq!(position, bytes.len());
    Ok(batches)
}

/// Metadata of one segment from its decoded batches.
pub fn meta_of(base_offset: i64, closed: bool, bytes: u64, batches: &[RecordBatch]) -> SegmentMeta {
    SegmentMeta {
        base_offset,
        closed,
        bytes,
        records: batches.iter().map(|b| b.records.len() as u64).sum(),
        max_timestamp: batches
            .iter()
            .map(|b| b.max_timestamp)
            .max()
            .unwrap_or(batch::NO_TIMESTAMP),
        next_offset: batches.last().map_or(base_offset, RecordBatch::next_offset),
    }
}

/// Metadata of every segment of `dir` (reads and checks every batch).
pub fn scan(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<SegmentMeta>> {
    let bases = list_segments(fs, dir)?;
    let mut out = Vec::with_capacity(bases.len());
    for (i, &base) in bases.iter().enumerate() {
        let path = segment_path(dir, base, filename::LOG_SUFFIX);
        let batches = read_batches(fs, &path, base)?;
        let bytes = fs.len(&path).map_err(|e| Error::io(&path, e))?;
        out.push(meta_of(base, i + 1 < bases.len(), bytes, &batches));
    }
    Ok(out)
}

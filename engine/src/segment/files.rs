//! A log directory's segment files by name: the list of segments, their paths,
//! the metadata retention plans on, their mapped bytes and the check that every
//! closed segment ends below the next one's base offset.
//!
//! Compaction and retention work on directories through `&dyn FileSystem`, so they
//! run the same on a live log (after a flush) and in recovery, with no `Log` handle.

use std::path::{Path, PathBuf};

use crate::error::{CorruptKind, Error, Result};
use crate::format::{batch, filename};
use crate::fs::FileSystem;

/// What retention and compaction need to know about one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentMeta {
    /// The segment's base offset.
    pub base_offset: i64,
    /// Every segment but the last is closed.
    pub closed: bool,
    /// Length of the `.log` file.
    pub bytes: u64,
    /// Records stored (control records included).
    pub records: u64,
    /// Max of the batches' `maxTimestamp`, or -1 for an empty segment.
    pub max_timestamp: i64,
    /// `last_offset + 1` of the last batch, or the base offset when empty.
    pub next_offset: i64,
}

/// The `.log` bytes of the segments `bases` of `dir` ([`FileSystem::map`]): what a
/// pass's header walk, map pass and rewrite all read, mapped once.
pub fn map_segments(fs: &dyn FileSystem, dir: &Path, bases: &[i64]) -> Result<Vec<bytes::Bytes>> {
    bases
        .iter()
        .map(|&base| {
            let path = segment_path(dir, base, filename::LOG_SUFFIX);
            fs.map(&path).map_err(|e| Error::io(&path, e))
        })
        .collect()
}

/// Base offsets of the `.log` files in `dir`, ascending.
pub fn list_segments(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<i64>> {
    let names = fs.list_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut bases: Vec<i64> = names
        .iter()
        .filter_map(|name| filename::parse(name))
        .filter(|(_, suffix)| *suffix == filename::LOG_SUFFIX)
        .map(|(base, _)| base)
        .collect();
    bases.sort_unstable();
    Ok(bases)
}

/// Path of a segment file.
pub fn segment_path(dir: &Path, base_offset: i64, suffix: &str) -> PathBuf {
    dir.join(filename::build(base_offset, suffix))
}

/// Checks, from the batch headers alone, that every closed segment's batches end
/// below the next segment's base offset (`bases`: every segment, the active one
/// last). A base offset lies outside the CRC: a damaged one can move a batch into
/// the next segment's offsets, which no per-segment check sees. A header that does
/// not decode, or runs past its file, ends the walk of its segment: the pass that
/// reads the segment reports it.
/// `closed`: the closed segments' bytes as the build mapped them ([`map_segments`]).
pub fn check_segment_ends(dir: &Path, bases: &[i64], closed: &[bytes::Bytes]) -> Result<()> {
    assert_eq!(closed.len(), bases.len().saturating_sub(1));
    for (pair, bytes) in bases.windows(2).zip(closed) {
        let [base, end] = *pair else { continue };
        let path = segment_path(dir, base, filename::LOG_SUFFIX);
        let mut position = 0usize;
        while let Some(rest) = bytes.get(position..).filter(|rest| !rest.is_empty()) {
            let Ok(header) = batch::decode_header(rest) else {
                break;
            };
            if header.size > rest.len() {
                break;
            }
            if header.last_offset() >= end {
                return Err(Error::corrupt(
                    &path,
                    position as u64,
                    CorruptKind::PastSegmentEnd {
                        offset: header.last_offset(),
                        end,
                    },
                ));
            }
            // At most the bytes left: `header.size <= rest.len()`.
            position = position.saturating_add(header.size);
        }
    }
    Ok(())
}

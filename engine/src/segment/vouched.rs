//! A segment's sparse indexes, in memory or vouched for and read at the first
//! lookup that needs them.
//!
//! An open that trusts a recovery point's summary of a closed segment checks at the
//! open only that both index files are there with the length the summary gives
//! them (`crate::log::recovery`, one `stat` each): reading, checksumming and
//! decoding them waits for the first read or time lookup in that segment. So an
//! open after a clean close reads no closed segment's file and holds none of their
//! descriptors, whatever the segment count (docs/design.md, section 3b).
//!
//! At the load the files must match the summary's checksums and the entry rules of
//! [`SegmentIndex::restore`], as they had to at the open before. If they do not
//! (changed behind the log's back since the roll that summarized them), the
//! segment's `.log` is scanned in full, so damage there is an error naming the file
//! and position, and the index is rebuilt from it in memory; the reason is kept
//! ([`IndexCell::rebuilt`], `Log::rebuilt_indexes`). The files on disk are left as
//! they are: they are derived, and the recovery point still names their checksums,
//! so a later open finds them wrong again, until a checked open (`seglog recover`)
//! rewrites them.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::{CorruptKind, Error, Result};
use crate::format::index::{
    decode_offset_entries, decode_time_entries, OFFSET_ENTRY_BYTES, TIME_ENTRY_BYTES,
};
use crate::format::recovery_point::SegmentSummary;
use crate::fs::FileSystem;

use super::index::SegmentIndex;
use super::SegmentPaths;

/// A segment's indexes: in memory, or vouched for by a summary and loaded once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexCell {
    loaded: OnceLock<SegmentIndex>,
    vouched: Option<Vouched>,
    rebuilt: OnceLock<(PathBuf, String)>,
}

/// What loading a vouched index needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Vouched {
    summary: SegmentSummary,
    /// The next segment's base offset (the scan's bound if the files are wrong).
    upper: Option<i64>,
    index_interval_bytes: u64,
}

impl IndexCell {
    /// Indexes held in memory from the start.
    pub fn loaded(index: SegmentIndex) -> Self {
        IndexCell {
            loaded: OnceLock::from(index),
            vouched: None,
            rebuilt: OnceLock::new(),
        }
    }

    /// Indexes `summary` vouches for, read at the first [`IndexCell::get`].
    pub fn vouched(summary: SegmentSummary, upper: Option<i64>, index_interval_bytes: u64) -> Self {
        IndexCell {
            loaded: OnceLock::new(),
            vouched: Some(Vouched {
                summary,
                upper,
                index_interval_bytes,
            }),
            rebuilt: OnceLock::new(),
        }
    }

    /// The indexes if they are in memory.
    pub fn if_loaded(&self) -> Option<&SegmentIndex> {
        self.loaded.get()
    }

    /// The indexes if they are in memory, to change.
    pub fn if_loaded_mut(&mut self) -> Option<&mut SegmentIndex> {
        self.loaded.get_mut()
    }

    /// The indexes, for a segment that is written to (the active one, or one being
    /// built): those are always in memory.
    pub fn get_mut(&mut self) -> &mut SegmentIndex {
        self.loaded
            .get_mut()
            .expect("a segment that is written to holds its indexes in memory")
    }

    /// The summary that vouches for indexes not yet loaded.
    pub fn unloaded_summary(&self) -> Option<&SegmentSummary> {
        match (self.loaded.get(), &self.vouched) {
            (None, Some(vouched)) => Some(&vouched.summary),
            _ => None,
        }
    }

    /// The vouched index file that was found wrong, and why, once a load has
    /// rebuilt the index from the `.log` instead.
    pub fn rebuilt(&self) -> Option<(&Path, &str)> {
        self.rebuilt
            .get()
            .map(|(path, why)| (path.as_path(), why.as_str()))
    }

    /// The indexes, loaded from the files of `paths` at the first call.
    pub fn get(&self, fs: &dyn FileSystem, paths: &SegmentPaths) -> Result<&SegmentIndex> {
        if let Some(index) = self.loaded.get() {
            return Ok(index);
        }
        let vouched = self
            .vouched
            .as_ref()
            .expect("an index not in memory is vouched for");
        let index = match read(fs, paths, &vouched.summary, vouched.index_interval_bytes)? {
            Ok(index) => index,
            Err(why) => {
                let index = rebuild(fs, paths, vouched)?;
                // Every reason `read` gives names the index it is about.
                let path = if why.contains("time index") {
                    &paths.time_index
                } else {
                    &paths.index
                };
                // Two readers may load at once: the first reason stands.
                let _ = self.rebuilt.set((path.clone(), why));
                index
            }
        };
        // Two readers may load at once: both loaded the same files.
        let _ = self.loaded.set(index);
        Ok(self.loaded.get().expect("set above"))
    }
}

/// The index files of `paths` as `summary` vouches for them (checksums, then the
/// entry rules of [`SegmentIndex::restore`]), or why not. IO errors are errors.
pub fn read(
    fs: &dyn FileSystem,
    paths: &SegmentPaths,
    summary: &SegmentSummary,
    index_interval_bytes: u64,
) -> Result<std::result::Result<SegmentIndex, String>> {
    // The summary says how many entries each file holds: a larger file is not read.
    let read = |path: &Path, entries: u32, entry_bytes: usize| -> Result<Option<Vec<u8>>> {
        let bytes_max = u64::from(entries).saturating_mul(entry_bytes as u64);
        match crate::fs::read_bounded(fs, path, bytes_max) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            read => read.map_err(|e| Error::io(path, e)),
        }
    };
    let offsets = read(
        &paths.index,
        summary.offset_index_entries,
        OFFSET_ENTRY_BYTES,
    )?;
    let times = read(
        &paths.time_index,
        summary.time_index_entries,
        TIME_ENTRY_BYTES,
    )?;
    let (offsets, times) = match (offsets, times) {
        (Some(offsets), Some(times)) => (offsets, times),
        (None, _) => {
            return Ok(Err(format!(
                "offset index missing or longer than the summary's {} entries",
                summary.offset_index_entries
            )))
        }
        (_, None) => {
            return Ok(Err(format!(
                "time index missing or longer than the summary's {} entries",
                summary.time_index_entries
            )))
        }
    };
    for (what, bytes, crc) in [
        ("offset index", &offsets, summary.offset_index_crc),
        ("time index", &times, summary.time_index_crc),
    ] {
        let computed = crate::format::crc::crc32c(bytes);
        if computed != crc {
            return Ok(Err(format!(
                "{what} checksum {computed:#010x}, the summary says {crc:#010x}"
            )));
        }
    }
    let offsets = match decode_offset_entries(&offsets) {
        Ok(entries) => entries,
        Err(e) => return Ok(Err(format!("offset index: {e:?}"))),
    };
    let times = match decode_time_entries(&times) {
        Ok(entries) => entries,
        Err(e) => return Ok(Err(format!("time index: {e:?}"))),
    };
    Ok(SegmentIndex::restore(
        summary.base_offset,
        index_interval_bytes,
        offsets,
        times,
        summary,
    ))
}

/// The index of the segment's `.log` as a scan builds it, which must hold the
/// summary's batches: a damaged `.log` is the scan's error, one that no longer
/// holds what the summary vouched for is [`CorruptKind::SegmentsLost`]'s kind of
/// loss, named with the file.
fn rebuild(fs: &dyn FileSystem, paths: &SegmentPaths, vouched: &Vouched) -> Result<SegmentIndex> {
    let summary = &vouched.summary;
    let dir = paths.log.parent().unwrap_or(Path::new(""));
    let mut scan = super::scan::scan_segment(
        fs,
        dir,
        summary.base_offset,
        vouched.upper,
        vouched.index_interval_bytes,
    )?;
    if let Some(invalid) = scan.invalid.take() {
        return Err(invalid);
    }
    let segment = &mut scan.segment;
    if segment.bytes != summary.bytes || segment.next_offset != summary.next_offset {
        return Err(Error::corrupt(
            &paths.log,
            segment.bytes,
            CorruptKind::Other(format!(
                "the segment holds {} bytes up to offset {}, its summary {} bytes up to offset {}",
                segment.bytes, segment.next_offset, summary.bytes, summary.next_offset
            )),
        ));
    }
    // The final time entry, as recovery's scan gives a closed segment.
    let index = segment.index.get_mut();
    index.on_roll();
    index.on_open();
    Ok(index.clone())
}

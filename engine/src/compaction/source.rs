//! The active segment's bytes as a compaction pass reads them (the closed
//! segments' files are `crate::segment::files`).

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::filename;
use crate::fs::FileSystem;
use crate::segment::files::segment_path;

/// The active segment's bytes as a pass sees them (a snapshot's: its first
/// `active_len` bytes; what was appended after it is the tail's), checked the same
/// way under both policies: split into CRC-checked batches, then every batch as a
/// full decode checks it (a compressed one inflated, every record walked), an
/// error naming the batch's position. A pass copies these bytes into the new
/// directory, so it never copies a batch it could not read.
pub fn read_active(
    fs: &dyn FileSystem,
    dir: &Path,
    active_base: i64,
    active_len: Option<u64>,
) -> Result<Vec<u8>> {
    let path = segment_path(dir, active_base, filename::LOG_SUFFIX);
    let mut bytes = fs.read_all(&path).map_err(|e| Error::io(&path, e))?;
    if let Some(len) = active_len {
        assert!(
            bytes.len() as u64 >= len,
            "the snapshot's active bytes stay"
        );
        bytes.truncate(len as usize);
    }
    let mut walker = super::walker::Walker::default();
    for batch in super::view::batches(&path, active_base, &bytes)? {
        walker.each(&path, &batch, |_| {})?;
    }
    Ok(bytes)
}

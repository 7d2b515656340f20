//! Deleting a retention prefix, checkpoint first.
//!
//! Order (each step closes a crash window, docs/design.md section 5):
//! 1. re-check that the requested bases are exactly the first closed segments;
//! 2. write `log-start-offset.checkpoint.tmp`, sync it, rename it over the
//!    checkpoint, sync the directory: the new `log_start_offset` is durable;
//! 3. remove the segments' files oldest first, indexes first; no directory sync
//!    after them (none is needed: see `delete_prefix_remove`).
//!
//! A crash or power loss after step 2 may leave any subset of the prefix's files
//! (directory removals are not ordered until synced); recovery removes every segment
//! wholly below the checkpoint, so no hole can survive an open.

use std::path::Path;

#[cfg(feature = "serde")]
use serde::Serialize;

use crate::error::{Error, Result};
use crate::fail_point;
use crate::format::{checkpoint, filename};
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint as fp;
use crate::fs::FileSystem;
use crate::segment::files::{list_segments, segment_path};

/// Test-only: the order of checkpoint and deletion. `DeleteFirst` is the broken
/// order the teeth checks must catch.
#[cfg(any(test, feature = "test-variants"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RetentionOrder {
    /// Kafka's order: the checkpoint holds the new start before any file goes.
    #[default]
    CheckpointFirst,
    /// Broken: files go first, so a crash between leaves a hole.
    DeleteFirst,
}

/// What [`delete_prefix`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct DeleteOutcome {
    /// Base offsets of the segments deleted, ascending.
    pub deleted_segments: Vec<i64>,
    /// The log start offset after the deletion.
    pub log_start_offset: i64,
}

/// Deletes the segments with base offsets `bases` from `dir`, which must be exactly
/// the first `bases.len()` segments and never the last (active) one.
pub fn delete_prefix(fs: &dyn FileSystem, dir: &Path, bases: &[i64]) -> Result<DeleteOutcome> {
    delete_prefix_steps(fs, dir, bases, false)
}

/// [`delete_prefix`] in a chosen (possibly broken) order. Test builds only.
#[cfg(any(test, feature = "test-variants"))]
pub fn delete_prefix_with(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    order: RetentionOrder,
) -> Result<DeleteOutcome> {
    delete_prefix_steps(fs, dir, bases, order == RetentionOrder::DeleteFirst)
}

fn delete_prefix_steps(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    delete_first: bool,
) -> Result<DeleteOutcome> {
    let current = list_segments(fs, dir)?;
    let log_start_offset = delete_prefix_check(&current, bases)?;
    if bases.is_empty() {
        return Ok(DeleteOutcome {
            deleted_segments: Vec::new(),
            log_start_offset,
        });
    }
    if delete_first {
        delete_prefix_remove(fs, dir, bases)?;
        write_checkpoint(fs, dir, log_start_offset)?;
    } else {
        write_checkpoint(fs, dir, log_start_offset)?;
        delete_prefix_remove(fs, dir, bases)?;
    }
    Ok(DeleteOutcome {
        deleted_segments: bases.to_vec(),
        log_start_offset,
    })
}

/// The deletion API's own check: `bases` must equal the first `bases.len()` segments,
/// leaving at least one. Returns the new log start offset.
pub fn delete_prefix_check(current: &[i64], bases: &[i64]) -> Result<i64> {
    if bases.len() >= current.len() {
        return Err(Error::InvalidArgument(format!(
            "cannot delete {} of {} segments: the active segment is never deleted",
            bases.len(),
            current.len()
        )));
    }
    if current[..bases.len()] != *bases {
        return Err(Error::InvalidArgument(format!(
            "segments {bases:?} are not the first closed segments {:?}",
            &current[..bases.len()]
        )));
    }
    Ok(current[bases.len()])
}

fn delete_prefix_remove(fs: &dyn FileSystem, dir: &Path, bases: &[i64]) -> Result<()> {
    for &base in bases {
        // Indexes first: a crash between leaves a `.log` without index (rebuilt, or
        // removed by recovery below the checkpoint), never an orphan index.
        for suffix in [
            filename::KEYS_SUFFIX,
            filename::TXN_INDEX_SUFFIX,
            filename::TIME_INDEX_SUFFIX,
            filename::INDEX_SUFFIX,
            filename::LOG_SUFFIX,
        ] {
            let path = segment_path(dir, base, suffix);
            if fs.exists(&path) {
                fail_point!(fp::RETENTION_DELETE_REMOVE_FILE);
                fs.remove_file(&path).map_err(|e| Error::io(&path, e))?;
            }
        }
    }
    // No directory sync: the checkpoint is durable, so a removal a power loss undoes
    // brings back a segment wholly below it, which recovery removes again (the sync
    // ablation found this sync redundant; the retention model holds without it).
    Ok(())
}

/// Makes `log_start_offset` durable in `dir/log-start-offset.checkpoint`:
/// write temp, sync, rename, sync dir.
pub fn write_checkpoint(fs: &dyn FileSystem, dir: &Path, log_start_offset: i64) -> Result<()> {
    let tmp = dir.join(checkpoint::CHECKPOINT_TMP_NAME);
    let target = dir.join(checkpoint::CHECKPOINT_NAME);
    fs.write_new(&tmp, &checkpoint::encode(log_start_offset))
        .map_err(|e| Error::io(&tmp, e))?;
    // The data must be durable before the name points at it, or a power loss could
    // leave a checkpoint file with no (or torn) content.
    fail_point!(fp::RETENTION_CHECKPOINT_SYNC_TMP);
    fs.sync_file(&tmp).map_err(|e| Error::io(&tmp, e))?;
    fail_point!(fp::RETENTION_CHECKPOINT_RENAME);
    fs.rename(&tmp, &target)
        .map_err(|e| Error::io(&target, e))?;
    // The rename is durable only once the directory is synced; segment files are
    // removed only after this.
    fail_point!(fp::RETENTION_CHECKPOINT_SYNC_DIR);
    fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

/// Reads the checkpoint of `dir`, if there is one. A damaged checkpoint is an error.
pub fn read_checkpoint(fs: &dyn FileSystem, dir: &Path) -> Result<Option<i64>> {
    let path = dir.join(checkpoint::CHECKPOINT_NAME);
    if !fs.exists(&path) {
        return Ok(None);
    }
    // Authoritative, so a file larger than its format is corruption (not read).
    let bytes_max = checkpoint::CHECKPOINT_LEN as u64;
    let Some(bytes) =
        crate::fs::read_bounded(fs, &path, bytes_max).map_err(|e| Error::io(&path, e))?
    else {
        let bytes = fs.len(&path).map_err(|e| Error::io(&path, e))?;
        return Err(Error::corrupt(
            &path,
            bytes_max,
            crate::error::CorruptKind::TooLarge { bytes, bytes_max },
        ));
    };
    checkpoint::decode(&bytes)
        .map(Some)
        .map_err(|e| e.at(&path, 0))
}

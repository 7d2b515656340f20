//! Retention recovery, run by `Log::open` before any segment is opened.
//!
//! 1. A leftover `log-start-offset.checkpoint.tmp` is removed (it is never the
//!    commit point).
//! 2. Every segment *wholly below* the checkpoint is removed: a segment is wholly
//!    below checkpoint `C` when a later segment has a base offset `<= C`. The
//!    segment holding `C` and everything after it stay, so no hole can appear, and
//!    the active segment is never removed.
//! 3. Nothing more: the open's phase 9 syncs the directory, which makes the
//!    removals durable (see [`recover`]).
//!
//! Orphan `.index` / `.timeindex` files (which a power loss can leave when a `.log`
//! removal persisted and an index removal did not) are removed by the log's own
//! recovery phase right after this one, once its read-only scan has passed.
//!
//! A damaged checkpoint is an `Error::Corrupt` and nothing is removed; so is one
//! whose start is past the log's end (the last segment's valid prefix): the file is
//! authoritative, so its meaning is checked, not only its checksum, before anything
//! is removed on its word.

use std::path::Path;

#[cfg(feature = "serde")]
use serde::Serialize;

use crate::error::{CorruptKind, Error, Result};
use crate::fail_point;
use crate::format::{checkpoint, filename};
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint as fp;
use crate::fs::FileSystem;
use crate::segment::files::{list_segments, segment_path};

use super::executor::read_checkpoint;

/// What retention recovery found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct RetentionRecovery {
    /// The checkpointed log start offset, if a checkpoint exists.
    pub checkpoint: Option<i64>,
    /// Base offsets of segments removed because they were wholly below the checkpoint.
    pub removed_segments: Vec<i64>,
    /// Names of every file removed (segment files, checkpoint temp file).
    pub removed_files: Vec<String>,
}

/// Runs retention recovery on `dir` (see the module docs). Its removals are not
/// synced here: the caller syncs `dir` before anything depends on them, as the log's
/// open does (phase 9 always fsyncs the log directory before the open returns). A
/// removal lost before that brings back a segment below the durable checkpoint,
/// which the next recovery removes again. A directory sync here would run right
/// before phase 9's: the sync ablation proves it redundant (no crash image needs
/// it), and model (d)'s recovery ends with the one directory sync that phase 9 is.
pub fn recover(fs: &dyn FileSystem, dir: &Path) -> Result<RetentionRecovery> {
    let mut report = RetentionRecovery::default();
    if !fs.is_dir(dir) {
        return Ok(report);
    }
    let checkpoint = read_checkpoint(fs, dir)?;
    report.checkpoint = checkpoint;
    let tmp = dir.join(checkpoint::CHECKPOINT_TMP_NAME);
    let bases = list_segments(fs, dir)?;
    if let Some(start) = checkpoint {
        recover_check_start(fs, dir, &bases, start)?;
    }
    let below = checkpoint.map_or(0, |start| keep_from(&bases, start));
    if fs.exists(&tmp) || below > 0 {
        // Before removing anything: make the crashed process's directory operations
        // (the checkpoint rename above all) durable, so a power loss during recovery
        // cannot keep a removal and lose the checkpoint that justified it (a hole).
        fail_point!(fp::RETENTION_RECOVER_SYNC_DIR_FIRST);
        fs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    }
    if fs.exists(&tmp) {
        recover_remove(fs, dir, checkpoint::CHECKPOINT_TMP_NAME, &mut report)?;
    }
    if checkpoint.is_some() {
        for &base in &bases[..below] {
            for suffix in [
                filename::KEYS_SUFFIX,
                filename::TXN_INDEX_SUFFIX,
                filename::TIME_INDEX_SUFFIX,
                filename::INDEX_SUFFIX,
                filename::LOG_SUFFIX,
            ] {
                if fs.exists(&segment_path(dir, base, suffix)) {
                    recover_remove(fs, dir, &filename::build(base, suffix), &mut report)?;
                }
            }
            report.removed_segments.push(base);
        }
    }
    Ok(report)
}

/// Index of the first segment to keep under checkpoint `start`: the last segment
/// whose base is `<= start` holds `start`; every segment before it is wholly below.
fn keep_from(bases: &[i64], start: i64) -> usize {
    bases.iter().rposition(|&base| base <= start).unwrap_or(0)
}

/// The bases of `bases` that recovery would remove as wholly below the checkpoint
/// of `dir` (read-only; for read-only opens).
pub fn wholly_below(fs: &dyn FileSystem, dir: &Path, bases: &[i64]) -> Result<Vec<i64>> {
    Ok(match read_checkpoint(fs, dir)? {
        Some(start) => {
            recover_check_start(fs, dir, bases, start)?;
            bases[..keep_from(bases, start)].to_vec()
        }
        None => Vec::new(),
    })
}

/// Bytes between index entries of the scan below (which only wants the offsets).
const END_SCAN_INDEX_INTERVAL_BYTES: u64 = 4096;

/// The checkpoint's start `start` must be an offset of the log: at most its end, the
/// next offset of the last segment's valid prefix. Retention writes the base of a
/// segment it keeps and always keeps the last one, so a start up to the last base
/// needs no read; only a start past it costs a scan of the last segment. A start
/// past the end is `Corrupt` naming the checkpoint: a checksum-valid file that no
/// retention wrote deletes nothing.
fn recover_check_start(fs: &dyn FileSystem, dir: &Path, bases: &[i64], start: i64) -> Result<()> {
    let Some(&last) = bases.last() else {
        return Ok(());
    };
    if start <= last {
        return Ok(());
    }
    let end =
        crate::segment::scan::scan_segment(fs, dir, last, None, END_SCAN_INDEX_INTERVAL_BYTES)?
            .segment
            .next_offset;
    if start <= end {
        return Ok(());
    }
    Err(Error::corrupt(
        dir.join(checkpoint::CHECKPOINT_NAME),
        checkpoint::LOG_START_OFFSET_OFFSET as u64,
        CorruptKind::PastLogEnd { offset: start, end },
    ))
}

fn recover_remove(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
    report: &mut RetentionRecovery,
) -> Result<()> {
    let path = dir.join(name);
    fail_point!(fp::RETENTION_RECOVER_REMOVE_FILE);
    fs.remove_file(&path).map_err(|e| Error::io(&path, e))?;
    report.removed_files.push(name.to_string());
    Ok(())
}

//! Recovery of a log directory on open, as a sequence of separate phases.
//!
//! Each phase takes `(&dyn FileSystem, &Path, &mut RecoveryReport)` (plus what the
//! earlier phases found), so directory-level recoveries owned by other modules
//! (`install::recover`, the retention checkpoint) run first, in [`recover`].
//!
//! Corruption policy (see docs/design.md section 3):
//! * a torn or invalid tail of the *last* segment is truncated at the first invalid
//!   batch (only the active segment is ever appended to without an fsync);
//! * invalid data in any other segment is [`crate::Error::Corrupt`] naming file and
//!   byte position, and recovery modifies nothing (all reading happens first);
//! * index files are rewritten when missing, short or inconsistent with the `.log`;
//! * orphan `.index` / `.timeindex` files (no `.log`) are removed;
//! * every other entry of the directory is listed in the report and left alone.

#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::filename;
use crate::format::index::{encode_offset_entries, encode_time_entries};
// The fail point names are only referenced when the `failpoints` feature is on.
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint::*;
use crate::fs::FileSystem;
use crate::segment::scan::{scan_segment, ScanOutcome};
use crate::segment::{Segment, SegmentPaths};

use super::report::{RebuildReason, RebuiltIndex, RecoveryReport};
use super::LogConfig;

/// The segment files of a directory, classified by name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Listing {
    /// Base offsets that have a `.log`, ascending.
    pub bases: Vec<i64>,
    /// Index files whose `.log` does not exist.
    pub orphans: Vec<String>,
}

/// An index file that must be rewritten, with its bytes.
#[derive(Debug, Clone)]
pub struct IndexRewrite {
    pub path: std::path::PathBuf,
    pub bytes: Vec<u8>,
    pub reason: RebuildReason,
}

/// Runs every phase in order and returns the segments (the last one active).
pub fn recover(
    fs: &dyn FileSystem,
    dir: &Path,
    config: &LogConfig,
    report: &mut RecoveryReport,
) -> Result<Vec<Segment>> {
    // Directory-level recoveries first: the install protocol decides what `dir` is
    // (it may not even exist after a crash mid-swap), then retention finishes a
    // checkpointed deletion. Both fail closed on anything they cannot parse.
    report.install = crate::install::recover(fs, dir)?;
    report.retention = crate::retention::recover(fs, dir)?;
    let existed = fs.exists(dir);
    recovery_ensure_dir(fs, dir, report)?;
    let listing = recovery_list(fs, dir, report)?;
    // Read-only phases: nothing is modified if any of them fails.
    let mut scans = recovery_scan(fs, dir, &listing, config)?;
    let rewrites = recovery_check_indexes(fs, &scans)?;
    crate::compaction::cleaner::check_clean_point(fs, dir, &listing.bases)?;
    // Modifying phases.
    let mut dir_dirty = recovery_remove_orphans(fs, dir, &listing, report)?;
    recovery_truncate_tail(fs, &mut scans, report)?;
    dir_dirty |= recovery_rebuild_indexes(fs, &rewrites, report)?;
    let mut segments: Vec<Segment> = scans.into_iter().map(|s| s.segment).collect();
    if segments.is_empty() {
        segments.push(recovery_create_first_segment(fs, dir, config, report)?);
        dir_dirty = true;
    }
    recovery_sync_dir(fs, dir, dir_dirty, report)?;
    if existed && segments.iter().all(Segment::is_empty) {
        recovery_sync_path(fs, dir)?;
    }
    summarize(&segments, report);
    Ok(segments)
}

/// The read-only phases only: what [`recover`] would find, without creating,
/// truncating, rewriting or removing anything. The last segment's invalid tail
/// (if any) is left out of the returned segments; the report's truncation and
/// rebuild fields describe what a writable open would do.
pub fn inspect(
    fs: &dyn FileSystem,
    dir: &Path,
    config: &LogConfig,
    report: &mut RecoveryReport,
) -> Result<Vec<Segment>> {
    report.read_only = true;
    crate::install::recovery::pending(fs, dir)?;
    if !fs.is_dir(dir) {
        return Err(Error::io(
            dir,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no log directory here"),
        ));
    }
    let mut listing = recovery_list(fs, dir, report)?;
    // What retention recovery would remove is not shown.
    let below = crate::retention::recovery::wholly_below(fs, dir, &listing.bases)?;
    listing.bases.retain(|base| !below.contains(base));
    if listing.bases.is_empty() {
        return Err(Error::io(
            dir,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no segment files here"),
        ));
    }
    let mut scans = recovery_scan(fs, dir, &listing, config)?;
    crate::compaction::cleaner::check_clean_point(fs, dir, &listing.bases)?;
    for rewrite in recovery_check_indexes(fs, &scans)? {
        report.rebuilt_indexes.push(RebuiltIndex {
            file: file_name(&rewrite.path),
            reason: rewrite.reason,
        });
    }
    report.removed_files.clone_from(&listing.orphans);
    if let Some(last) = scans.last_mut() {
        if let Some(invalid) = last.invalid.take() {
            report.truncated_bytes = last.file_bytes - last.valid_bytes();
            report.truncated_batches = last.invalid_batches;
            report.truncated_segment = Some(last.segment.base_offset);
            report.truncated_reason = Some(invalid.to_string());
        }
    }
    let segments: Vec<Segment> = scans.into_iter().map(|s| s.segment).collect();
    summarize(&segments, report);
    Ok(segments)
}

fn summarize(segments: &[Segment], report: &mut RecoveryReport) {
    report.segments = segments.len() as u64;
    report.batches = segments.iter().map(|s| s.batches).sum();
    report.log_start_offset = segments.first().map_or(0, |s| s.base_offset);
    report.next_offset = segments.last().map_or(0, |s| s.next_offset);
}

/// Phase 1: a missing directory is created (its first segment comes later).
pub fn recovery_ensure_dir(
    fs: &dyn FileSystem,
    dir: &Path,
    report: &mut RecoveryReport,
) -> Result<()> {
    if fs.exists(dir) {
        if !fs.is_dir(dir) {
            return Err(Error::io(
                dir,
                std::io::Error::other("log path exists and is not a directory"),
            ));
        }
        return Ok(());
    }
    // Every directory this creates must be durable in its parent, up to the first
    // ancestor that already existed: otherwise a power loss can take the whole log
    // path away after a flush "made everything durable" (found by the crash sweep).
    let mut created = Vec::new();
    let mut missing = Some(dir);
    while let Some(path) = missing {
        if path.as_os_str().is_empty() || fs.exists(path) {
            break;
        }
        created.push(path);
        missing = path.parent();
    }
    fs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    for path in created.iter().rev() {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            crate::fail_point!(crate::fs::failpoint::LOG_RECOVERY_SYNC_DIR);
            fs.sync_dir(parent).map_err(|e| Error::io(parent, e))?;
        }
    }
    report.created = true;
    Ok(())
}

/// Phase 2: classify the directory's entries by name. Unknown ones go to the report.
pub fn recovery_list(
    fs: &dyn FileSystem,
    dir: &Path,
    report: &mut RecoveryReport,
) -> Result<Listing> {
    let names = fs.list_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut logs = BTreeSet::new();
    let mut indexes = Vec::new();
    for name in names {
        match filename::parse(&name) {
            Some((base, filename::LOG_SUFFIX)) if !fs.is_dir(&dir.join(&name)) => {
                logs.insert(base);
            }
            Some((base, _)) if !fs.is_dir(&dir.join(&name)) => indexes.push((base, name)),
            _ if name == crate::format::checkpoint::CHECKPOINT_NAME
                || name == crate::format::checkpoint::CLEAN_POINT_NAME => {}
            _ => report.unknown_files.push(name),
        }
    }
    let orphans = indexes
        .into_iter()
        .filter(|(base, _)| !logs.contains(base))
        .map(|(_, name)| name)
        .collect();
    Ok(Listing {
        bases: logs.into_iter().collect(),
        orphans,
    })
}

/// Phase 3 (read-only): scan every segment. Corruption anywhere but in the last
/// segment is an error; the last segment's invalid tail is kept in its outcome.
/// Closed segments get the final time index entry of their roll.
pub fn recovery_scan(
    fs: &dyn FileSystem,
    dir: &Path,
    listing: &Listing,
    config: &LogConfig,
) -> Result<Vec<ScanOutcome>> {
    let mut scans = Vec::with_capacity(listing.bases.len());
    for (i, base) in listing.bases.iter().enumerate() {
        let upper = listing.bases.get(i + 1).copied();
        let mut scan = scan_segment(fs, dir, *base, upper, config.index_interval_bytes)?;
        if upper.is_some() {
            if let Some(err) = scan.invalid.take() {
                return Err(err);
            }
            scan.segment.index.on_roll();
        }
        scans.push(scan);
    }
    Ok(scans)
}

/// Phase 4 (read-only): compare each index file with what its scan computed.
pub fn recovery_check_indexes(
    fs: &dyn FileSystem,
    scans: &[ScanOutcome],
) -> Result<Vec<IndexRewrite>> {
    let mut rewrites = Vec::new();
    for scan in scans {
        let segment = &scan.segment;
        let expected = [
            (
                &segment.paths.index,
                encode_offset_entries(segment.index.offset_entries()),
            ),
            (
                &segment.paths.time_index,
                encode_time_entries(segment.index.time_entries()),
            ),
        ];
        for (path, bytes) in expected {
            let reason = if !fs.exists(path) {
                Some(RebuildReason::Missing)
            } else {
                let actual = fs.read_all(path).map_err(|e| Error::io(path, e))?;
                if actual == bytes {
                    None
                } else if bytes.starts_with(&actual) {
                    Some(RebuildReason::Short)
                } else {
                    Some(RebuildReason::Inconsistent)
                }
            };
            if let Some(reason) = reason {
                rewrites.push(IndexRewrite {
                    path: path.clone(),
                    bytes,
                    reason,
                });
            }
        }
    }
    Ok(rewrites)
}

/// Phase 5: remove orphan index files. Returns true if the directory changed.
pub fn recovery_remove_orphans(
    fs: &dyn FileSystem,
    dir: &Path,
    listing: &Listing,
    report: &mut RecoveryReport,
) -> Result<bool> {
    for name in &listing.orphans {
        let path = dir.join(name);
        crate::fail_point!(LOG_RECOVERY_REMOVE_ORPHAN);
        fs.remove_file(&path).map_err(|e| Error::io(&path, e))?;
        report.removed_files.push(name.clone());
    }
    Ok(!listing.orphans.is_empty())
}

/// Phase 6: cut the last segment's invalid tail and make the cut durable.
pub fn recovery_truncate_tail(
    fs: &dyn FileSystem,
    scans: &mut [ScanOutcome],
    report: &mut RecoveryReport,
) -> Result<()> {
    let Some(last) = scans.last_mut() else {
        return Ok(());
    };
    let Some(invalid) = last.invalid.take() else {
        return Ok(());
    };
    let valid_bytes = last.valid_bytes();
    assert!(valid_bytes < last.file_bytes);
    let path = &last.segment.paths.log;
    crate::fail_point!(LOG_RECOVERY_TRUNCATE_TAIL);
    fs.set_len(path, valid_bytes)
        .map_err(|e| Error::io(path, e))?;
    crate::fail_point!(LOG_RECOVERY_SYNC_TAIL);
    fs.sync_file(path).map_err(|e| Error::io(path, e))?;
    report.truncated_bytes = last.file_bytes - valid_bytes;
    report.truncated_batches = last.invalid_batches;
    report.truncated_segment = Some(last.segment.base_offset);
    report.truncated_reason = Some(invalid.to_string());
    last.file_bytes = valid_bytes;
    Ok(())
}

/// Phase 7: rewrite the index files found wanting, durably. Returns true if a
/// file was created (the directory changed).
pub fn recovery_rebuild_indexes(
    fs: &dyn FileSystem,
    rewrites: &[IndexRewrite],
    report: &mut RecoveryReport,
) -> Result<bool> {
    let mut created = false;
    for rewrite in rewrites {
        let path = &rewrite.path;
        crate::fail_point!(LOG_RECOVERY_REBUILD_INDEX);
        fs.write_new(path, &rewrite.bytes)
            .map_err(|e| Error::io(path, e))?;
        crate::fail_point!(LOG_RECOVERY_SYNC_INDEX);
        fs.sync_file(path).map_err(|e| Error::io(path, e))?;
        created |= rewrite.reason == RebuildReason::Missing;
        report.rebuilt_indexes.push(RebuiltIndex {
            file: file_name(path),
            reason: rewrite.reason,
        });
    }
    Ok(created)
}

/// Phase 8: a directory without segments gets one empty active segment at 0.
pub fn recovery_create_first_segment(
    fs: &dyn FileSystem,
    dir: &Path,
    config: &LogConfig,
    report: &mut RecoveryReport,
) -> Result<Segment> {
    let segment = Segment::empty(dir, 0, config.index_interval_bytes);
    crate::fail_point!(LOG_RECOVERY_CREATE_SEGMENT);
    create_segment_files(fs, &segment.paths)?;
    report.created = true;
    Ok(segment)
}

/// Phase 9: make the directory's entries durable, and a created directory's own
/// entry in its parent.
pub fn recovery_sync_dir(
    fs: &dyn FileSystem,
    dir: &Path,
    dir_dirty: bool,
    report: &RecoveryReport,
) -> Result<()> {
    if dir_dirty {
        crate::fail_point!(LOG_RECOVERY_SYNC_DIR);
        fs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    }
    if report.created {
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        crate::fail_point!(LOG_RECOVERY_SYNC_PARENT);
        fs.sync_dir(parent).map_err(|e| Error::io(parent, e))?;
    }
    Ok(())
}

/// Phase 9b, for a log that holds no data yet and that this open did not create: an
/// earlier open may have failed (an IO error, or a crash) after creating the
/// directories and the first segment and before syncing them; this open finds them
/// and cannot tell, so it makes the directory and every ancestor's entry durable.
/// Without it a power loss could take the whole log path away after a later flush
/// reported everything durable (found by the I/O-error sweep: `sync_dir` of `/`
/// failing in the first open, then a retried open, appends and a flush).
pub fn recovery_sync_path(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let mut path = Some(dir);
    while let Some(here) = path {
        let here = if here.as_os_str().is_empty() {
            Path::new(".")
        } else {
            here
        };
        crate::fail_point!(LOG_RECOVERY_SYNC_PARENT);
        fs.sync_dir(here).map_err(|e| Error::io(here, e))?;
        path = here.parent();
    }
    Ok(())
}

/// Creates the three (empty) files of a new segment. Not durable by itself.
pub fn create_segment_files(fs: &dyn FileSystem, paths: &SegmentPaths) -> Result<()> {
    for path in [&paths.log, &paths.index, &paths.time_index] {
        fs.create_file(path).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

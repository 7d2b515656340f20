//! Recovery of a log directory on open, as a sequence of separate phases.
//!
//! Each phase takes `(&dyn FileSystem, &Path, &mut RecoveryReport)` (plus what the
//! earlier phases found), so directory-level recoveries owned by other modules
//! (`install::recover`, the retention checkpoint) run first, in [`recover`].
//!
//! Corruption policy (see docs/design.md section 3):
//! * a torn or invalid tail of the *last* segment is truncated at the first invalid
//!   batch (only the active segment is ever appended to without an fsync); the
//!   report says whether CRC-valid batches followed the damage, and
//!   [`super::RecoveryMode::Strict`] refuses, modifying nothing, when they did;
//! * invalid data in any other segment is [`crate::Error::Corrupt`] naming file and
//!   byte position, and recovery modifies nothing (all reading happens first);
//! * index files are rewritten when missing, short or inconsistent with the `.log`;
//! * orphan `.index` / `.timeindex` files (no `.log`) are removed;
//! * every other entry of the directory is listed in the report and left alone.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::filename;
use crate::format::index::{OFFSET_ENTRY_BYTES, TIME_ENTRY_BYTES};
use crate::format::recovery_point::SegmentSummary;
// The fail point names are only referenced when the `failpoints` feature is on.
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint::*;
use crate::fs::FileSystem;
use crate::segment::scan::{scan_from, scan_segment, ScanOutcome};
use crate::segment::{Segment, SegmentPaths};

use super::index_check::file_name;
pub use super::index_check::IndexRewrite;
use super::report::{RebuildReason, RecoveryReport};
use super::trust::Trust;
use super::LogConfig;

/// The segment files of a directory, classified by name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Listing {
    /// Base offsets that have a `.log`, ascending.
    pub bases: Vec<i64>,
    /// Index files whose `.log` does not exist.
    pub orphans: Vec<String>,
    /// The lengths of `.log` files phase 2b asked for, by base offset (nothing
    /// modifies the directory before phase 3 asks again).
    pub log_bytes: BTreeMap<i64, u64>,
    /// Kafka's leftovers (`.swap`, `.cleaned`, `.deleted`; [`super::leftovers`]).
    pub leftovers: Vec<(String, super::leftovers::Leftover)>,
}

/// Runs every phase in order and returns the segments (the last one active).
pub fn recover(
    fs: &dyn FileSystem,
    dir: &Path,
    config: &LogConfig,
    report: &mut RecoveryReport,
) -> Result<Vec<Segment>> {
    recover_with(fs, dir, config, true, report)
}

/// [`recover`]; `trust: false` ignores the recovery point and the marker and checks
/// every segment (what `seglog recover` runs).
pub fn recover_with(
    fs: &dyn FileSystem,
    dir: &Path,
    config: &LogConfig,
    trust: bool,
    report: &mut RecoveryReport,
) -> Result<Vec<Segment>> {
    // Directory-level recoveries first: the install protocol decides what `dir` is
    // (it may not even exist after a crash mid-swap), then retention finishes a
    // checkpointed deletion. Both fail closed on anything they cannot parse.
    report.install = crate::install::recover(fs, dir)?;
    // Its removals become durable with phase 9's directory sync.
    report.retention = crate::retention::recover(fs, dir)?;
    // A directory the open created before recovery (the writer lock's, for a new
    // log whose parent was missing: `report.created` already set) did not exist.
    let existed = fs.exists(dir) && !report.created;
    recovery_ensure_dir(fs, dir, report)?;
    let mut listing = recovery_list(fs, dir, report)?;
    // Read-only phases: nothing is modified if any of them fails.
    let leftovers = super::leftovers::plan(dir, &listing.leftovers)?;
    let mut found = Trust::read(fs, dir, &listing.bases, report)?;
    found.check_cover(&listing.bases, report);
    // Evidence before hints: closed segments the recovery point summarizes at or
    // above the durable start (the checkpoint retention recovery just read) that
    // are gone are refused here, before anything of the log is modified.
    let start = report.retention.checkpoint;
    let lost = recovery_find_lost(fs, dir, &found, start, &mut listing, config, report)?;
    found.check_listing(&listing.bases, report);
    found.check_marker(&listing.bases, report);
    let trusted = if trust {
        found.clone()
    } else {
        Trust::default()
    };
    let mut scans = recovery_scan(fs, dir, &listing, config, &trusted, report)?;
    recovery_judge_tail(fs, &scans, config, true, report)?;
    let rewrites = recovery_check_indexes(fs, &mut scans, report)?;
    let scanned: Vec<i64> = scans
        .iter()
        .filter(|scan| !scan.trusted)
        .map(|scan| scan.segment.base_offset)
        .collect();
    crate::compaction::section::check_clean_point(
        fs,
        dir,
        &listing.bases,
        &mut report.ignored_checkpoints,
    )?;
    // Modifying phases.
    recovery_remove_orphans(fs, dir, &listing, report)?;
    recovery_remove_leftovers(fs, dir, &leftovers, report)?;
    recovery_truncate_tail(fs, &mut scans, report)?;
    let created_indexes = recovery_rebuild_indexes(fs, &rewrites, report)?;
    recovery_sync_active(fs, &scans)?;
    let mut segments: Vec<Segment> = scans.into_iter().map(|s| s.segment).collect();
    if segments.is_empty() {
        segments.push(recovery_create_first_segment(fs, dir, config, report)?);
    }
    // Lost segments accepted: the point that summarizes them is replaced by a fresh
    // one, so the next open does not ask again.
    // The marker vouched for the active segment as it is: kept, so a close that
    // changes nothing need not write it again (model (e)).
    let keep_marker = trust
        && report.clean_shutdown
        && found.marker.is_some_and(|marker| {
            segments
                .last()
                .is_some_and(|s| s.base_offset == marker.base_offset && s.bytes == marker.bytes)
        });
    let settled = if !lost {
        found
    } else {
        Trust {
            point: None,
            ..found
        }
    };
    let settled_changed = super::trust::settle(
        fs,
        dir,
        &settled,
        &segments,
        &scanned,
        created_indexes,
        keep_marker,
    )?;
    // An open that trusted every segment by the marker a clean close left and
    // changed nothing issues nothing: that close fsynced the directory after every
    // entry but possibly its own rename, whose loss costs the next open a scan,
    // never data (model (e)).
    if !(keep_marker && !settled_changed && report.is_clean()) {
        recovery_sync_dir(fs, dir, report)?;
    }
    report.marker_kept = keep_marker;
    if existed && segments.iter().all(Segment::is_empty) {
        recovery_sync_path(fs, dir)?;
    }
    summarize(&segments, report);
    Ok(segments)
}

/// The read-only phases only: what [`recover`] would find, without creating,
/// truncating, rewriting or removing anything. The last segment's invalid tail
/// (if any) is left out of the returned segments; the report's truncation and
/// rebuild fields describe what a writable open would do. With `trust`, the
/// segments the recovery point and the marker vouch for are opened from their
/// summaries as by [`recover`] (no data read); without, every segment is scanned.
pub fn inspect(
    fs: &dyn FileSystem,
    dir: &Path,
    config: &LogConfig,
    trust: bool,
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
    let leftovers = super::leftovers::plan(dir, &listing.leftovers)?;
    // What retention recovery would remove is not shown.
    let below = crate::retention::recovery::wholly_below(fs, dir, &listing.bases)?;
    listing.bases.retain(|base| !below.contains(base));
    if listing.bases.is_empty() {
        return Err(Error::io(
            dir,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no segment files here"),
        ));
    }
    // Lost summarized segments are refused as by a writable open. The hints are
    // reported as a writable open reports them when trusted; a diagnostic that
    // checks every segment reads them into a scratch report.
    let start = crate::retention::executor::read_checkpoint(fs, dir)?;
    let mut hints = RecoveryReport::default();
    let found = {
        let hints = if trust { &mut *report } else { &mut hints };
        let mut found = Trust::read(fs, dir, &listing.bases, hints)?;
        found.check_cover(&listing.bases, hints);
        found
    };
    recovery_find_lost(fs, dir, &found, start, &mut listing, config, report)?;
    let trusted = if trust {
        let mut trusted = found;
        trusted.check_listing(&listing.bases, report);
        trusted.check_marker(&listing.bases, report);
        trusted
    } else {
        Trust::default()
    };
    let mut scans = recovery_scan(fs, dir, &listing, config, &trusted, report)?;
    recovery_judge_tail(fs, &scans, config, false, report)?;
    for rewrite in recovery_check_indexes(fs, &mut scans, report)? {
        report.rebuilt_indexes.push(rewrite.report());
    }
    report.removed_files.clone_from(&listing.orphans);
    report.removed_files.extend(leftovers);
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

/// Creates `dir` and its missing ancestors. Every directory this creates must be
/// durable in its parent, up to the first ancestor that already existed: otherwise
/// a power loss can take the whole log path away after a flush "made everything
/// durable" (a crash sweep case). `dir`'s own entry is synced only if
/// `sync_own_entry`.
pub(crate) fn create_dirs(fs: &dyn FileSystem, dir: &Path, sync_own_entry: bool) -> Result<()> {
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
    for path in created
        .iter()
        .rev()
        .filter(|path| sync_own_entry || **path != dir)
    {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            crate::fail_point!(crate::fs::failpoint::LOG_RECOVERY_SYNC_DIR);
            fs.sync_dir(parent).map_err(|e| Error::io(parent, e))?;
        }
    }
    Ok(())
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
    // The log directory's own entry is left to phase 9, which syncs its parent after
    // the directory itself and before the open returns: syncing it here too was a
    // second fsync of the same parent with nothing acknowledged in between (the sync
    // ablation found it uncaught; docs/design.md section 8).
    create_dirs(fs, dir, false)?;
    report.created = true;
    Ok(())
}

/// Phase 2: classify the directory's entries by name. Unknown ones go to the report.
pub fn recovery_list(
    fs: &dyn FileSystem,
    dir: &Path,
    report: &mut RecoveryReport,
) -> Result<Listing> {
    let entries = fs.list_dir_kinds(dir).map_err(|e| Error::io(dir, e))?;
    let mut logs = BTreeSet::new();
    let mut indexes = Vec::new();
    let mut leftovers = Vec::new();
    for (name, is_dir) in entries {
        match filename::parse(&name) {
            Some((base, filename::LOG_SUFFIX)) if !is_dir => {
                logs.insert(base);
            }
            Some((base, _)) if !is_dir => indexes.push((base, name)),
            _ if name == crate::format::checkpoint::CHECKPOINT_NAME
                || name == crate::format::checkpoint::CLEAN_POINT_NAME => {}
            _ if crate::format::recovery_point::NAMES.contains(&name.as_str()) => {}
            _ => match super::leftovers::classify(&name) {
                Some(kind) if !is_dir => leftovers.push((name, kind)),
                _ => report.unknown_files.push(name),
            },
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
        log_bytes: BTreeMap::new(),
        leftovers,
    })
}

/// Phase 3 (read-only): open every segment. A segment a checkpoint vouches for
/// (see [`super::trust`]) is opened from its summary and its index files, reading
/// none of its data, unless the index files fail their checks (then it is scanned
/// and the report says why); every other segment is scanned. Corruption anywhere but
/// in the last segment is an error; the last segment's invalid tail is kept in its
/// outcome. Every segment's computed index gets the final time entry (Kafka's
/// `LogSegment.recover`), and its byte count since the last entry starts at 0.
pub fn recovery_scan(
    fs: &dyn FileSystem,
    dir: &Path,
    listing: &Listing,
    config: &LogConfig,
    trust: &Trust,
    report: &mut RecoveryReport,
) -> Result<Vec<ScanOutcome>> {
    let mut scans = Vec::with_capacity(listing.bases.len());
    for (i, base) in listing.bases.iter().enumerate() {
        let upper = listing.bases.get(i + 1).copied();
        if let Some((summary, source)) = trust.summary(*base, upper.is_none()) {
            match open_trusted(fs, dir, summary, source, upper, listing, config)? {
                Ok(outcome) => {
                    report.trusted_segments += 1;
                    report.clean_shutdown |= upper.is_none();
                    let extended = outcome.file_bytes > outcome.segment.bytes;
                    let mut scan = if extended {
                        // Appended after the checkpoint (another Kafka-format writer
                        // after a clean close): the vouched prefix stands, the rest is
                        // scanned like any unchecked data, and the index files are
                        // compared with the result.
                        report.scanned_bytes += outcome.file_bytes - outcome.segment.bytes;
                        scan_from(fs, outcome.segment, upper)?
                    } else {
                        outcome
                    };
                    if upper.is_some() {
                        if let Some(err) = scan.invalid.take() {
                            return Err(err);
                        }
                    }
                    // A closed segment's vouched index is not in memory yet (its
                    // load does the same).
                    if let Some(index) = scan.segment.index.if_loaded_mut() {
                        if extended {
                            index.on_roll();
                        }
                        index.on_open();
                    }
                    scans.push(scan);
                    continue;
                }
                Err(why) => {
                    let why = format!("{}: {why}", filename::build(*base, filename::LOG_SUFFIX));
                    if why.ends_with(HINT_WRONG) {
                        // A summary the file contradicts: the hint itself is wrong.
                        report.ignored_checkpoints.push(why.clone());
                    }
                    report.rescanned.push(why);
                }
            }
        }
        let mut scan = scan_segment(fs, dir, *base, upper, config.index_interval_bytes)?;
        report.scanned_segments += 1;
        report.scanned_bytes += scan.file_bytes;
        if upper.is_some() {
            if let Some(err) = scan.invalid.take() {
                return Err(err);
            }
        }
        // The final time entry, as Kafka's `LogSegment.recover` builds it (a closed
        // segment got it on roll or close), and the byte count since the last entry
        // starts at 0, as in a loaded Kafka segment.
        let index = scan.segment.index.get_mut();
        index.on_roll();
        index.on_open();
        scans.push(scan);
    }
    Ok(scans)
}

/// Phase 2b (read-only): the closed segments the recovery point summarizes at or
/// above the durable log start `start` whose `.log` is missing, shorter than its
/// summary or not a regular file ([`super::evidence`]). Refused with
/// [`crate::CorruptKind::SegmentsLost`] unless the mode is
/// [`super::RecoveryMode::AcceptLoss`], which lists them in the report. Returns
/// true if segments were lost (and accepted).
pub fn recovery_find_lost(
    fs: &dyn FileSystem,
    dir: &Path,
    trust: &Trust,
    start: Option<i64>,
    listing: &mut Listing,
    config: &LogConfig,
    report: &mut RecoveryReport,
) -> Result<bool> {
    let Some((_, summaries)) = &trust.point else {
        return Ok(false);
    };
    let lost = super::evidence::find_lost(
        fs,
        dir,
        summaries,
        start,
        &listing.bases,
        config.index_interval_bytes,
        &mut listing.log_bytes,
    )?;
    if lost.is_empty() {
        return Ok(false);
    }
    if config.recovery_mode != super::RecoveryMode::AcceptLoss {
        return Err(super::evidence::refusal(dir, lost));
    }
    report.lost = lost.into_iter().map(|(segment, _)| segment).collect();
    Ok(true)
}

/// How [`open_trusted`] ends a reason that blames the summary, not the segment.
const HINT_WRONG: &str = "ignored for it";

/// Phase 3b (read-only): classify the active segment's invalid tail, if it has one:
/// a torn tail, or corruption followed by CRC-valid batches
/// ([`crate::segment::salvage`]). The report gets the finding; with `enforce` (a
/// writable open) the configured [`super::RecoveryMode`] decides whether phase 6
/// may truncate it, and a refusal returns here, before anything is modified.
pub fn recovery_judge_tail(
    fs: &dyn FileSystem,
    scans: &[ScanOutcome],
    config: &LogConfig,
    enforce: bool,
    report: &mut RecoveryReport,
) -> Result<()> {
    let Some(last) = scans.last() else {
        return Ok(());
    };
    let Some(invalid) = &last.invalid else {
        return Ok(());
    };
    let found = crate::segment::salvage::valid_after(
        fs,
        &last.segment.paths.log,
        last.valid_bytes(),
        last.file_bytes,
        last.segment.next_offset,
    )?;
    let tail = super::TailTruncation::new(config.recovery_mode, found);
    if enforce {
        tail.judge(invalid)?;
    }
    report.truncated_tail = Some(tail);
    Ok(())
}

/// A segment opened from `summary` without reading its `.log`. The outer error is
/// fatal (IO); the inner one sends the segment to a scan (its index files do not
/// match the summary, its `.log` length is not a closed segment's summary, or the
/// active segment is shorter than the marker says).
fn open_trusted(
    fs: &dyn FileSystem,
    dir: &Path,
    summary: &SegmentSummary,
    source: &str,
    upper: Option<i64>,
    listing: &Listing,
    config: &LogConfig,
) -> Result<std::result::Result<ScanOutcome, String>> {
    let paths = SegmentPaths::new(dir, summary.base_offset);
    let bytes = match listing.log_bytes.get(&summary.base_offset) {
        Some(bytes) => *bytes,
        None => fs.len(&paths.log).map_err(|e| Error::io(&paths.log, e))?,
    };
    if upper.is_none() && bytes < summary.bytes {
        // The active segment lost bytes the marker vouched for (cut behind the log's
        // back, or a crash the protocol should have prevented): the marker is wrong,
        // so the segment is recovered as after a crash, and the report says so.
        return Ok(Err(format!(
            "the file holds {bytes} bytes but {source} vouches for {}: marker ignored",
            summary.bytes
        )));
    }
    if upper.is_some() && bytes != summary.bytes {
        // The recovery point is a hint: wrong about this segment, it is ignored for
        // it (and reported), and the segment is scanned like any unvouched one (a
        // cut inside a batch of a closed segment is then `Corrupt`).
        return Ok(Err(format!(
            "the file holds {bytes} bytes but {source} vouches for {}: {source} {HINT_WRONG}",
            summary.bytes
        )));
    }
    if upper.is_some_and(|next| summary.next_offset > next) {
        return Ok(Err(format!(
            "its summary ends at offset {} past the next segment",
            summary.next_offset
        )));
    }
    if let Err(why) = summary.check() {
        return Ok(Err(format!("{why}: {source} {HINT_WRONG}")));
    }
    if upper.is_some() {
        // A closed segment's index files are read at the first lookup that needs
        // them (`crate::segment::vouched`, which rebuilds them in memory if they
        // are wrong); here only their lengths are checked, so a missing one, or
        // one a power loss cut (index files a crashed open rebuilt without an
        // fsync: model (e)'s `trusted_needs_no_rescan`, the `drop-indexes`
        // scenario), is rebuilt by this open and reported.
        for (path, entries, entry_bytes) in [
            (
                &paths.index,
                summary.offset_index_entries,
                OFFSET_ENTRY_BYTES,
            ),
            (
                &paths.time_index,
                summary.time_index_entries,
                TIME_ENTRY_BYTES,
            ),
        ] {
            let expected = u64::from(entries).saturating_mul(entry_bytes as u64);
            match fs.len(path) {
                Ok(len) if len == expected => {}
                Ok(len) => {
                    return Ok(Err(format!(
                        "{} holds {len} bytes, the summary's entries {expected}",
                        file_name(path)
                    )))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(Err(format!("{} is missing", file_name(path))))
                }
                Err(e) => return Err(Error::io(path, e)),
            }
        }
        let segment = Segment::vouched(dir, summary, upper, config.index_interval_bytes);
        return Ok(Ok(ScanOutcome::trusted(segment, bytes)));
    }
    let segment =
        match crate::segment::vouched::read(fs, &paths, summary, config.index_interval_bytes)? {
            Ok(index) => Segment::restore(dir, summary, index),
            Err(why) => return Ok(Err(why)),
        };
    if upper.is_none() {
        // The offset the log hands out next comes from the batches, not the marker
        // (`crate::segment::tail`).
        let position = segment
            .index
            .if_loaded()
            .expect("restored above")
            .offset_entries()
            .last()
            .map_or(0, |entry| u64::from(entry.position));
        let found = crate::segment::tail::next_offset_from(
            fs,
            &paths.log,
            position,
            summary.bytes,
            summary.base_offset,
        )?;
        match found {
            Ok(next) if next == summary.next_offset => {}
            Ok(next) => {
                return Ok(Err(format!(
                    "its summary ends at offset {}, its batches from byte {position} at {next}: {source} {HINT_WRONG}",
                    summary.next_offset
                )))
            }
            Err(why) => return Ok(Err(format!("{why}: {source} {HINT_WRONG}"))),
        }
    }
    Ok(Ok(ScanOutcome::trusted(segment, bytes)))
}

/// Phase 4 (read-only): judge each scanned segment's index files by Kafka's rules;
/// keep (and adopt) the valid ones, return the rewrites of the others
/// (`super::index_check`). A trusted segment's files were checked against its
/// summary's checksums in phase 3.
pub fn recovery_check_indexes(
    fs: &dyn FileSystem,
    scans: &mut [ScanOutcome],
    report: &mut RecoveryReport,
) -> Result<Vec<IndexRewrite>> {
    let check = super::index_check::check_indexes(fs, scans)?;
    report.kept_indexes = check.kept_differing;
    let active = scans.last().map(|scan| scan.segment.paths.clone());
    let mut rewrites = check.rewrites;
    for rewrite in &mut rewrites {
        rewrite.closed = active
            .as_ref()
            .is_none_or(|p| rewrite.path != p.index && rewrite.path != p.time_index);
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

/// Phase 5b: remove Kafka's `.cleaned` and `.deleted` leftovers, as Kafka's
/// `LogLoader` does (a `.swap` was refused before anything was modified). Their
/// removal becomes durable with phase 9's directory sync; one lost to a power loss
/// is removed again by the next open.
pub fn recovery_remove_leftovers(
    fs: &dyn FileSystem,
    dir: &Path,
    names: &[String],
    report: &mut RecoveryReport,
) -> Result<()> {
    for name in names {
        let path = dir.join(name);
        fs.remove_file(&path).map_err(|e| Error::io(&path, e))?;
        report.removed_files.push(name.clone());
    }
    Ok(())
}

/// Phase 6: cut the last segment's invalid tail. No fsync of its own: phase 7b
/// fsyncs the untrusted active `.log` anyway, and every later acknowledgement
/// (flush, roll, close) fsyncs that file first; a cut lost to a power loss before
/// then brings back only the torn bytes, which the next open cuts again. (The
/// fsync this phase had was the same file's twice; the sync ablation by step found
/// it uncaught with 311 skipped pending calls, and model (e) has no such step.)
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
    report.truncated_bytes = last.file_bytes - valid_bytes;
    report.truncated_batches = last.invalid_batches;
    report.truncated_segment = Some(last.segment.base_offset);
    report.truncated_reason = Some(invalid.to_string());
    last.file_bytes = valid_bytes;
    Ok(())
}

/// Phase 7: rewrite the index files found wanting. Returns true if a closed
/// segment's index file was created (a recovery point must not vouch for it before
/// its directory entry is durable; the active segment's are never vouched for). No fsync here: the index files are derived, an
/// open checks them against the `.log` before using them, and a recovery point
/// vouches for a rebuilt closed segment only after `Trust::settle` fsyncs all three
/// of its files (`log::recovery::sync_scanned`). Model (e) rebuilds without an
/// fsync; the sync ablation by step skipped 44,808 pending calls of the fsync this
/// phase had and the sweep found nothing.
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
        created |= rewrite.closed && rewrite.reason == RebuildReason::Missing;
        report.rebuilt_indexes.push(rewrite.report());
    }
    Ok(created)
}

/// Phase 7b: fsync the active segment's `.log` unless the marker vouched for it.
/// The bytes found may never have been synced (a crashed process's page cache, or
/// this process's own appends before an error poisoned the log): the log treats
/// them as durable from here on (`Log::synced_log_bytes`), so they must be. Without
/// this a later failed fsync dooms their pages (fsyncgate), its cut-back spares them
/// as "synced", and the next roll's recovery point vouches for bytes a power loss
/// turns into zeros (an I/O-error conformance case:
/// `tests/open_syncs_found_bytes.rs`).
pub fn recovery_sync_active(fs: &dyn FileSystem, scans: &[ScanOutcome]) -> Result<()> {
    let Some(active) = scans.last().filter(|scan| !scan.trusted) else {
        return Ok(());
    };
    if active.segment.bytes == 0 {
        return Ok(());
    }
    let path = &active.segment.paths.log;
    crate::fail_point!(LOG_RECOVERY_SYNC_ACTIVE);
    fs.sync_file(path).map_err(|e| Error::io(path, e))
}

/// Phase 8: a directory without segments gets one empty active segment at 0, or at
/// the checkpointed log start offset when a checkpoint survives its segments.
pub fn recovery_create_first_segment(
    fs: &dyn FileSystem,
    dir: &Path,
    config: &LogConfig,
    report: &mut RecoveryReport,
) -> Result<Segment> {
    // Offsets below a checkpointed start were handed out once: a directory whose
    // segments are all gone starts at the checkpoint, never below it (Kafka's
    // loader does the same with its log start offset).
    let base = report.retention.checkpoint.unwrap_or(0).max(0);
    let segment = Segment::empty(dir, base, config.index_interval_bytes);
    crate::fail_point!(LOG_RECOVERY_CREATE_SEGMENT);
    create_segment_files(fs, &segment.paths)?;
    report.created = true;
    Ok(segment)
}

/// Phase 9: make the directory's entries durable, and a created directory's own
/// entry in its parent. Always, not only after a change: after a process crash the
/// entries this open found may not be durable yet (a roll's new segment before the
/// roll's directory fsync), and flush fsyncs only the `.log` (model (e), variant
/// `no-open-dir-sync`).
pub fn recovery_sync_dir(fs: &dyn FileSystem, dir: &Path, report: &RecoveryReport) -> Result<()> {
    crate::fail_point!(LOG_RECOVERY_SYNC_LOG_DIR);
    fs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
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
/// reported everything durable (an I/O-error sweep case: `sync_dir` of `/`
/// failing in the first open, then a retried open, appends and a flush).
///
/// A relative `dir` ends at the working directory, synced as `.` once (its own
/// ancestors are outside the log's path). `Path::new(".").parent()` is `Some("")`:
/// mapping that back to `.` would loop forever on every open of an empty log by a
/// relative path (`tests::a_relative_path_ends_at_the_working_directory`).
pub fn recovery_sync_path(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let mut path = Some(dir);
    while let Some(here) = path {
        let last = here.as_os_str().is_empty() || here == Path::new(".");
        let here = if last { Path::new(".") } else { here };
        crate::fail_point!(LOG_RECOVERY_SYNC_PARENT);
        fs.sync_dir(here).map_err(|e| Error::io(here, e))?;
        if last {
            break;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::sim::SimFs;
    use std::path::PathBuf;

    /// The directories phase 9b syncs, in order, for `dir`; the 16th call fails so
    /// a loop that never ends shows as an error.
    fn synced(dir: &str) -> Result<Vec<PathBuf>> {
        let sim = SimFs::new();
        // SimFs reads a relative path from its root.
        sim.create_dir_all(Path::new("/a/b")).unwrap();
        sim.create_dir_all(Path::new("/work/a/b")).unwrap();
        let first = sim.mutating_ops();
        sim.fail_nth(first + 16);
        recovery_sync_path(&sim, Path::new(dir))?;
        Ok(sim.syncs().into_iter().map(|(_, call)| call.path).collect())
    }

    /// An open that accepts lost segments replaces the recovery point that
    /// summarizes them: the next open (after a crash, no close) finds nothing lost
    /// and needs no `AcceptLoss`.
    #[test]
    fn accepted_loss_is_not_asked_again() {
        use crate::log::{Log, LogConfig, RecoveryMode};
        use crate::NewRecord;
        use std::sync::Arc;
        let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
        let dir = Path::new("/log");
        let (mut log, _) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
        for ts in 0..3 {
            let record = NewRecord::new(None, Some(b"v".to_vec()), ts);
            log.append(std::slice::from_ref(&record)).unwrap();
            log.roll().unwrap();
        }
        drop(log);
        // The first segment: a middle one makes the point contradict the listing,
        // which ignores it whatever the loss (`Trust::check_listing`).
        let first = SegmentPaths::new(dir, 0);
        for path in [&first.log, &first.index, &first.time_index] {
            fs.remove_file(path).unwrap();
        }
        let refused = Log::open_with(fs.clone(), dir, LogConfig::default());
        assert!(refused.is_err(), "a summarized segment is gone");
        let accept = LogConfig {
            recovery_mode: RecoveryMode::AcceptLoss,
            ..LogConfig::default()
        };
        let (log, report) = Log::open_with(fs.clone(), dir, accept).unwrap();
        assert_eq!(report.lost.len(), 1, "{report:?}");
        drop(log);
        let (_, report) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
        assert!(report.lost.is_empty(), "{report:?}");
    }

    #[test]
    fn a_relative_path_ends_at_the_working_directory() {
        let paths = |names: &[&str]| names.iter().map(PathBuf::from).collect::<Vec<_>>();
        assert_eq!(synced("a/b").unwrap(), paths(&["a/b", "a", "."]));
        assert_eq!(synced(".").unwrap(), paths(&["."]));
        assert_eq!(synced("./a").unwrap(), paths(&["./a", "."]));
        assert_eq!(
            synced("/work/a/b").unwrap(),
            paths(&["/work/a/b", "/work/a", "/work", "/"])
        );
    }
}

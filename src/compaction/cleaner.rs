//! The IO half of compaction: build the offset map, then write the compacted closed
//! segments and an unchanged copy of the active segment into `D.compact-tmp`
//! (install step 1), and describe the result in a [`Manifest`].

use std::path::Path;

#[cfg(feature = "serde")]
use serde::Serialize;

use crate::error::{Error, Result};
use crate::fail_point;
use crate::format::checkpoint;
use crate::format::filename::{self, LOG_SUFFIX};
use crate::format::index::{encode_offset_entries, encode_time_entries};
use crate::format::manifest::{Manifest, ManifestFile};
use crate::format::recovery_point::{self, SummaryFile, SummaryKind};
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint as fp;
use crate::fs::FileSystem;
use crate::install::InstallPaths;
use crate::segment::{BatchFacts, Segment};

use super::dirty::{scan_dirty_bounded, CleanOptions};
use super::output::{write_closed, ClosedRegion, Written};
use super::planner::Horizon;
use super::scan::{scan_with, Scan};
use super::source::{list_segments, segment_path};
use super::view;

/// Compaction report (records, segments and bytes cover the closed region only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct CompactionReport {
    /// Records in the closed segments before compaction.
    pub records_before: u64,
    /// Records in the closed segments after compaction.
    pub records_after: u64,
    /// Closed segments before compaction.
    pub segments_before: u64,
    /// Closed segments after compaction.
    pub segments_after: u64,
    /// Bytes of the closed segments' `.log` files before compaction.
    pub bytes_before: u64,
    /// Bytes of the closed segments' `.log` files after compaction.
    pub bytes_after: u64,
    /// Distinct keys in the latest-offset map.
    pub map_keys: u64,
    /// Bytes the map held once built.
    pub map_bytes: u64,
    /// Most bytes the map held while being built.
    pub map_bytes_peak: u64,
    /// The clean point the pass started from (the log start when the log directory
    /// has no `cleaner-offset.checkpoint`).
    pub clean_point_before: i64,
    /// The clean point the pass installed: the end of what it cleaned.
    pub clean_point_after: i64,
    /// The first offset the map did not cover (`next_offset` when it covered all).
    pub mapped_end_offset: i64,
    /// Closed segments carried unchanged: no key of the map and no expired
    /// tombstone could touch them, so they were hard-linked into the new directory
    /// instead of rewritten (issue 11; 0 for a full compaction).
    pub segments_carried: u64,
    /// Their bytes: what the pass neither read for its map nor wrote.
    pub bytes_carried: u64,
    /// Keyless records the pass dropped (the `kafka` policy; 0 under `seed`).
    pub keyless_dropped: u64,
    /// Empty batches (record count 0) in the segments the pass cleaned: batches
    /// kept for an active producer's state (the `kafka` policy, Kafka's
    /// `RETAIN_EMPTY`; 0 under `seed`).
    pub empty_batches: u64,
}

/// The parameters of one compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactOptions {
    /// The time compaction runs at (ms since the epoch): tombstones older than `delete_retention_ms` before it go.
    pub now: i64,
    /// How long a tombstone is kept after its timestamp (Kafka's `delete.retention.ms`).
    pub delete_retention_ms: i64,
    /// Output segments are grouped up to this many compacted bytes.
    pub segment_bytes: u64,
}

/// A built temp directory, ready for [`crate::install::install`].
#[derive(Debug, Clone)]
pub struct Built {
    /// The manifest the install will write: the new directory's exact content.
    pub manifest: Manifest,
    /// What the compaction did.
    pub report: CompactionReport,
    /// The new directory's segments, oldest first, the active one last, with their
    /// paths in the live directory and their index entries as the temp dir holds
    /// them: what an open log adopts after the install instead of reopening.
    pub segments: Vec<Segment>,
}

/// Install step 1: writes the compacted log into `D.compact-tmp` and syncs it.
/// `None` when there is no closed segment (nothing to do). One cleaning pass with an
/// unbounded map and no lag ([`build_with`]).
pub fn build(fs: &dyn FileSystem, dir: &Path, options: CompactOptions) -> Result<Option<Built>> {
    build_with(fs, dir, options, CleanOptions::default())
}

/// Bytes between index entries of the segments [`build_with`] writes (the default
/// `LogConfig::index_interval_bytes`; [`build_indexed`] takes the log's own).
pub const INDEX_INTERVAL_BYTES_DEFAULT: u64 = 4096;

/// [`build`] with the cleaner's knobs: one cleaning pass from the directory's clean
/// point (docs/design.md section 1, "Incremental cleaning"). The new clean point is
/// written into the temp dir (`cleaner-offset.checkpoint`), so the install's commit
/// point makes it durable together with the segments it describes.
pub fn build_with(
    fs: &dyn FileSystem,
    dir: &Path,
    options: CompactOptions,
    clean: CleanOptions,
) -> Result<Option<Built>> {
    build_indexed(fs, dir, options, clean, INDEX_INTERVAL_BYTES_DEFAULT)
}

/// [`build_with`], indexing the new segments every `index_interval_bytes` (the
/// log's `LogConfig::index_interval_bytes`). Besides the `.log` files the temp dir
/// receives every segment's `.index` and `.timeindex` and a recovery point
/// (`recovery-point.checkpoint`) vouching for the new closed segments, all synced
/// before the install's commit point; the manifest leaves these derived files out
/// (a damaged one is rebuilt or ignored, never trusted: `install::validate`), and
/// the new directory opens without reading its closed segments (docs/design.md
/// section 6).
pub fn build_indexed(
    fs: &dyn FileSystem,
    dir: &Path,
    options: CompactOptions,
    clean: CleanOptions,
    index_interval_bytes: u64,
) -> Result<Option<Built>> {
    build_inner(
        fs,
        dir,
        options,
        clean,
        index_interval_bytes,
        true,
        &BuildFrom::LIVE,
    )
}

/// What a build reads: the live directory as it is (the single-threaded
/// [`build_indexed`]), or a cleaner's snapshot of it ([`super::snapshot`]): the
/// snapshot's segments, the first `active_len` bytes of its active segment, and no
/// copy of the active segment (the swap links the tail, docs/design.md section 6).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BuildFrom<'a> {
    /// The segments (the last one active); `None`: list the directory.
    pub bases: Option<&'a [i64]>,
    /// The active segment's bytes the map covers; `None`: all of it.
    pub active_len: Option<u64>,
    /// Copy the active segment into the temp dir (the single-threaded build, and
    /// the broken `stale-tail-copy`).
    pub copy_active: bool,
}

impl BuildFrom<'_> {
    const LIVE: BuildFrom<'static> = BuildFrom {
        bases: None,
        active_len: None,
        copy_active: true,
    };
}

/// [`build_indexed`] from a cleaner's snapshot (see [`BuildFrom`]).
pub(crate) fn build_from(
    fs: &dyn FileSystem,
    dir: &Path,
    options: CompactOptions,
    clean: CleanOptions,
    index_interval_bytes: u64,
    from: &BuildFrom<'_>,
) -> Result<Option<Built>> {
    build_inner(fs, dir, options, clean, index_interval_bytes, true, from)
}

/// Test builds only: [`build_indexed`] as it was before issue 11's "no reopen after
/// cleanup", the broken variant `point-on-reopen` of model (b): the temp dir gets
/// the `.log` files but neither index files nor a recovery point.
#[cfg(any(test, feature = "test-variants"))]
pub fn build_bare(
    fs: &dyn FileSystem,
    dir: &Path,
    options: CompactOptions,
    clean: CleanOptions,
    index_interval_bytes: u64,
) -> Result<Option<Built>> {
    build_inner(
        fs,
        dir,
        options,
        clean,
        index_interval_bytes,
        false,
        &BuildFrom::LIVE,
    )
}

fn build_inner(
    fs: &dyn FileSystem,
    dir: &Path,
    options: CompactOptions,
    clean: CleanOptions,
    index_interval_bytes: u64,
    carry_point: bool,
    from: &BuildFrom<'_>,
) -> Result<Option<Built>> {
    clean.validate()?;
    InstallPaths::new(dir)?.check_names_fit()?;
    if options.delete_retention_ms < 0 {
        return Err(Error::InvalidArgument(format!(
            "delete_retention_ms must be >= 0, got {}",
            options.delete_retention_ms
        )));
    }
    if options.segment_bytes == 0 {
        return Err(Error::InvalidArgument("segment_bytes must be > 0".into()));
    }
    let bases = match from.bases {
        Some(bases) => bases.to_vec(),
        None => list_segments(fs, dir)?,
    };
    let Some((&active_base, closed)) = bases.split_last() else {
        return Err(Error::InvalidArgument(format!(
            "{} holds no segment",
            dir.display()
        )));
    };
    if closed.is_empty() {
        return Ok(None);
    }
    let paths = InstallPaths::new(dir)?;
    if fs.exists(&paths.tmp) {
        return Err(Error::Ambiguous {
            reason: "a compaction temp dir is left over; reopen the log to recover".into(),
            dirs: vec![paths.tmp.clone()],
        });
    }
    if fs.exists(&paths.trash) {
        // A finished install's old content whose removal did not happen (step 7):
        // never authoritative.
        crate::install::Trash::left_over(paths.clone()).remove(fs)?;
    }
    carried_files(fs, dir)?;
    super::source::check_segment_ends(fs, dir, &bases)?;
    let log_start_offset = bases[0];
    let clean_point_before = read_clean_point(fs, dir, log_start_offset, active_base)?;
    if clean.policy == super::CompactionPolicy::Kafka {
        let inputs = super::kafka::BuildInputs {
            paths: &paths,
            bases: &bases,
            clean_point_before,
            index_interval_bytes,
            carry_point,
            from,
        };
        // The tuned pass applies the transaction rules too (`super::kafka_txn`).
        return super::kafka_pass::build(fs, dir, options, clean, inputs).map(Some);
    }
    // The transaction rules (`super::txn`): a log holding transactional data is
    // cleaned in full (the incremental dirty map does not apply them), nothing at
    // or past its last stable offset cleaned, and its clean point stays at the log
    // start. So the segments wholly below a later clean point were cleaned by a
    // pass that found no transactional data (appends only add at the end): only
    // the others are read to find out.
    let txn_horizon = Horizon {
        now: options.now,
        delete_retention_ms: options.delete_retention_ms,
    };
    let dirty_first = bases
        .iter()
        .rposition(|&base| base <= clean_point_before)
        .unwrap_or(0);
    let txn = if dirty_first == 0 || super::txn::gather(fs, dir, &bases[dirty_first..])?.is_some() {
        super::txn::plan(fs, dir, &bases, txn_horizon)?
    } else {
        None
    };
    let from_scratch = (clean_point_before == log_start_offset && clean == CleanOptions::default())
        || txn.is_some();
    let (scan, keep_from, clean_point_after, mapped_end_offset, keys) = if from_scratch {
        // Everything is dirty and the map unbounded: the full two-thread scan (no
        // key summaries: the next, incremental pass writes them).
        let keep_from = txn.as_ref().map_or(i64::MAX, |t| t.last_stable_offset);
        let clean_point_after = if txn.is_some() {
            log_start_offset
        } else {
            active_base
        };
        (
            scan_with(fs, dir, &bases, from.active_len, txn.as_ref())?,
            keep_from,
            clean_point_after,
            None,
            None,
        )
    } else {
        let horizon = Horizon {
            now: options.now,
            delete_retention_ms: options.delete_retention_ms,
        };
        let dirty = scan_dirty_bounded(
            fs,
            dir,
            &bases,
            clean_point_before,
            horizon,
            clean,
            from.active_len,
        )?;
        let after = clean_point_before.max(dirty.horizon);
        let keys = Some(dirty.keys);
        (
            dirty.scan,
            dirty.horizon,
            after,
            Some(dirty.mapped_end),
            keys,
        )
    };
    assert!(clean_point_after <= active_base);
    let Scan {
        superseded,
        closed: closed_bytes,
        active: active_bytes,
        plain,
    } = scan;
    let horizon = Horizon {
        now: options.now,
        delete_retention_ms: options.delete_retention_ms,
    };
    let mut report = CompactionReport {
        segments_before: closed.len() as u64,
        map_keys: superseded.keys as u64,
        map_bytes: superseded.map_bytes as u64,
        map_bytes_peak: superseded.map_bytes_peak as u64,
        clean_point_before,
        clean_point_after,
        ..CompactionReport::default()
    };
    fs.create_dir_all(&paths.tmp)
        .map_err(|e| Error::io(&paths.tmp, e))?;
    assert_eq!(closed_bytes.len(), closed.len());
    let Written {
        files,
        totals,
        segments,
        carried_segments,
        carried_bytes,
        carried_bases,
    } = write_closed(
        fs,
        dir,
        &paths.tmp,
        ClosedRegion {
            bases: closed,
            bytes: closed_bytes,
            superseded: &superseded,
            plain: &plain,
            horizon,
            segment_bytes: options.segment_bytes,
            keep_from,
            index_interval_bytes,
            keys,
            txn: txn.as_ref(),
        },
    )?;
    report.segments_carried = carried_segments;
    report.bytes_carried = carried_bytes;
    report.bytes_before = totals.bytes_before;
    report.bytes_after = totals.counts.bytes_after;
    report.records_before = totals.counts.records_before;
    report.records_after = totals.counts.records_after;
    report.segments_after = files.len() as u64;
    finish_build(
        fs,
        dir,
        Tail {
            paths: &paths,
            active_base,
            active_bytes: &active_bytes,
            index_interval_bytes,
            report,
            mapped_end_offset,
            files,
            segments,
            carried_bases,
            clean_point_after,
            carry_point,
            log_start_offset,
            from,
            txn: txn.as_ref(),
        },
    )
    .map(Some)
}

/// What the end of a build needs: the closed region is written into the temp dir.
pub(super) struct Tail<'a> {
    pub paths: &'a InstallPaths,
    pub active_base: i64,
    /// The active segment's bytes, checked by the caller's read.
    pub active_bytes: &'a [u8],
    pub index_interval_bytes: u64,
    pub report: CompactionReport,
    pub mapped_end_offset: Option<i64>,
    /// The closed region's `.log` files as written, oldest first.
    pub files: Vec<ManifestFile>,
    /// The closed region's segments, closed, without pending index entries.
    pub segments: Vec<Segment>,
    /// Bases of closed segments hard-linked from the live directory, ascending.
    pub carried_bases: Vec<i64>,
    pub clean_point_after: i64,
    pub carry_point: bool,
    pub log_start_offset: i64,
    /// Where the build read from (a concurrent cleaning's snapshot copies no active
    /// segment: the swap links the tail).
    pub from: &'a BuildFrom<'a>,
    /// The transaction rules, when the log holds transactional data.
    pub txn: Option<&'a super::txn::TxnPlan>,
}

/// The end of install step 1, whatever the policy: the active segment copied, the
/// files the log does not own, the new clean point, the index files and recovery
/// point, the temp dir synced; the manifest describing it all.
pub(super) fn finish_build(fs: &dyn FileSystem, dir: &Path, tail: Tail<'_>) -> Result<Built> {
    let Tail {
        paths,
        active_base,
        active_bytes,
        index_interval_bytes,
        mut report,
        mapped_end_offset,
        mut files,
        mut segments,
        carried_bases,
        clean_point_after,
        carry_point,
        log_start_offset,
        from,
        txn,
    } = tail;
    // The active segment, byte for byte, as the scan read and checked it.
    let active_source = segment_path(dir, active_base, LOG_SUFFIX);
    let mut active = Segment::empty(dir, active_base, index_interval_bytes);
    for batch in view::batches_verified(&active_source, active_base, active_bytes)? {
        assert!(batch.header.record_count >= 0);
        active.on_batch(&BatchFacts {
            base_offset: batch.header.base_offset,
            last_offset: batch.last_offset(),
            size_bytes: batch.header.size as u64,
            records: batch.header.record_count as u64,
            max_timestamp: batch.header.max_timestamp,
        });
    }
    assert_eq!(active.bytes, active_bytes.len() as u64);
    active.pending_index.clear();
    active.pending_time_index.clear();
    let next_offset = active.next_offset;
    report.mapped_end_offset = mapped_end_offset.unwrap_or(next_offset);
    if from.copy_active {
        let active_name = filename::build(active_base, LOG_SUFFIX);
        let active_path = paths.tmp.join(&active_name);
        fs.write_new(&active_path, active_bytes)
            .map_err(|e| Error::io(&active_path, e))?;
        build_sync_file(fs, &active_path)?;
        files.push(ManifestFile {
            name: active_name,
            bytes: active_bytes.len() as u64,
            crc32c: crate::format::crc::crc32c(active_bytes),
        });
    }
    // Files the log does not own (and the retention checkpoint) move with the log,
    // unchanged; index files are not copied (the next open rebuilds them).
    for name in carried_files(fs, dir)? {
        let bytes = fs
            .read_all(&dir.join(&name))
            .map_err(|e| Error::io(dir.join(&name), e))?;
        let path = paths.tmp.join(&name);
        fs.write_new(&path, &bytes)
            .map_err(|e| Error::io(&path, e))?;
        build_sync_file(fs, &path)?;
        files.push(ManifestFile {
            name,
            bytes: bytes.len() as u64,
            crc32c: crate::format::crc::crc32c(&bytes),
        });
    }
    // The new clean point travels with the segments it describes: the install's
    // commit point makes both durable at once (docs/design.md section 6).
    let clean_point_path = paths.tmp.join(checkpoint::CLEAN_POINT_NAME);
    let clean_point_bytes = checkpoint::encode_clean_point(clean_point_after);
    fs.write_new(&clean_point_path, &clean_point_bytes)
        .map_err(|e| Error::io(&clean_point_path, e))?;
    fail_point!(fp::COMPACTION_BUILD_SYNC_CLEAN_POINT);
    fs.sync_file(&clean_point_path)
        .map_err(|e| Error::io(&clean_point_path, e))?;
    files.push(ManifestFile {
        name: checkpoint::CLEAN_POINT_NAME.to_string(),
        bytes: clean_point_bytes.len() as u64,
        crc32c: crate::format::crc::crc32c(&clean_point_bytes),
    });
    segments.push(active);
    if let Some(txn) = txn {
        let bases: Vec<i64> = segments.iter().map(|s| s.base_offset).collect();
        // Without a copy of the active segment its `.txnindex` comes with the tail
        // at the swap (`install::tail::link`).
        let written = if from.copy_active {
            bases.len()
        } else {
            bases.len() - 1
        };
        super::txn::write_indexes(fs, &paths.tmp, &bases, written, txn)?;
    }
    if carry_point {
        // Derived files: synced with the rest, not listed (`install::validate`).
        // Without a copy of the active segment its index files come with the tail
        // at the swap; the recovery point still ends at the snapshot's active base.
        let indexed = if from.copy_active {
            &segments[..]
        } else {
            &segments[..segments.len() - 1]
        };
        write_indexes(fs, &paths.tmp, indexed, &carried_bases, from.copy_active)?;
        if from.bases.is_none() || from.copy_active {
            write_recovery_point(fs, &paths.tmp, &segments)?;
        }
        // A snapshot's build leaves the recovery point to the swap (step b): it
        // must vouch for the tail's closed segments too, rolled during the build.
    }
    if !from.copy_active {
        // The tail (this active segment and what follows) is linked at the swap.
        segments.pop();
    }
    fail_point!(fp::COMPACTION_BUILD_SYNC_TMP_DIR);
    fs.sync_dir(&paths.tmp)
        .map_err(|e| Error::io(&paths.tmp, e))?;
    if from.copy_active {
        assert_eq!(files[0].name, filename::build(log_start_offset, LOG_SUFFIX));
    }
    assert!(report.records_after <= report.records_before);
    files.sort();
    Ok(Built {
        manifest: Manifest {
            log_start_offset,
            next_offset,
            files,
        },
        report,
        segments,
    })
}

/// Writes every segment's `.index` and `.timeindex` into `tmp`. A closed segment's
/// are synced before the commit point: the recovery point vouches for them by
/// checksum, so a power loss must not tear them. The active segment's are not: it
/// is never trusted without a clean-shutdown marker (an open after a crash scans it
/// and rebuilds them), and the next roll or close syncs them (model (e)).
/// A carried segment's (`carried`, ascending bases) whose live files hold exactly
/// these bytes are hard-linked instead (nothing written; synced, which costs
/// nothing when they were durable already).
fn write_indexes(
    fs: &dyn FileSystem,
    tmp: &Path,
    segments: &[Segment],
    carried: &[i64],
    last_is_active: bool,
) -> Result<()> {
    let last = if last_is_active {
        segments.len() - 1
    } else {
        usize::MAX
    };
    for (i, segment) in segments.iter().enumerate() {
        assert!(segment.pending_index.is_empty() && segment.pending_time_index.is_empty());
        let entries = [
            (
                &segment.paths.index,
                encode_offset_entries(segment.index.offset_entries()),
            ),
            (
                &segment.paths.time_index,
                encode_time_entries(segment.index.time_entries()),
            ),
        ];
        for (live, bytes) in entries {
            let name = live
                .file_name()
                .and_then(|n| n.to_str())
                .expect("segment file names are ASCII");
            let path = tmp.join(name);
            let linkable = carried.binary_search(&segment.base_offset).is_ok()
                && fs.read_all(live).is_ok_and(|old| old == bytes);
            if linkable {
                assert_ne!(i, last, "the active segment is never carried");
                super::output::write_link(fs, live, &path)?;
                // An open may have rebuilt it without a sync: the recovery point
                // vouches for these bytes, so they must be durable (cheap if they are).
                build_sync_file(fs, &path)?;
                continue;
            }
            fs.write_new(&path, &bytes)
                .map_err(|e| Error::io(&path, e))?;
            if i != last {
                build_sync_file(fs, &path)?;
            }
        }
    }
    Ok(())
}

/// Writes the new directory's recovery point into `tmp` (synced): the closed
/// segments, with the checksums of the index files [`write_indexes`] wrote. It
/// travels under the install's commit point, so it is never durable without them.
pub(crate) fn write_recovery_point(
    fs: &dyn FileSystem,
    tmp: &Path,
    segments: &[Segment],
) -> Result<()> {
    let (active, closed) = segments.split_last().expect("the active segment is built");
    let file = SummaryFile {
        point: active.base_offset,
        summaries: closed.iter().map(Segment::summary).collect(),
    };
    let bytes = recovery_point::encode(SummaryKind::RecoveryPoint, &file);
    let path = tmp.join(recovery_point::RECOVERY_POINT_NAME);
    fs.write_new(&path, &bytes)
        .map_err(|e| Error::io(&path, e))?;
    fail_point!(fp::COMPACTION_BUILD_SYNC_RECOVERY_POINT);
    fs.sync_file(&path).map_err(|e| Error::io(&path, e))
}

/// Names in `dir` that are not segment files (nor the recovery point and marker):
/// copied into the new directory as they are. A subdirectory is refused before anything is written (the install swaps
/// whole directories and must not lose what it does not understand).
fn carried_files(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for name in fs.list_dir(dir).map_err(|e| Error::io(dir, e))? {
        if fs.is_dir(&dir.join(&name)) {
            return Err(Error::InvalidArgument(format!(
                "{} holds a directory {name:?}; compaction would not carry it over",
                dir.display()
            )));
        }
        // The recovery point and the marker describe the old segments; the new
        // directory starts without them (its first open scans it and writes a fresh
        // recovery point). The clean point is written anew by the pass, never copied.
        let describes_old = crate::log::trust::NAMES.contains(&name.as_str())
            || name == checkpoint::CLEAN_POINT_NAME;
        if filename::parse(&name).is_none() && !describes_old {
            out.push(name);
        }
    }
    Ok(out)
}

/// The clean point of `dir`: its `cleaner-offset.checkpoint`, or the log start when
/// there is none, and never below the log start (retention moves the start past
/// it). The file is a hint a pass rebuilds, so one that is ignored (see
/// [`judge_clean_point`]) gives the log start: the next pass cleans from there and
/// writes a fresh one.
pub fn read_clean_point(
    fs: &dyn FileSystem,
    dir: &Path,
    log_start_offset: i64,
    active_base: i64,
) -> Result<i64> {
    Ok(judge_clean_point(fs, dir, log_start_offset, active_base)?.0)
}

/// [`read_clean_point`], and why the file was ignored when it was: it does not
/// decode (damaged, a bad size, another version), or its clean point is past the
/// active segment's base, which no pass writes. IO errors are errors.
pub fn judge_clean_point(
    fs: &dyn FileSystem,
    dir: &Path,
    log_start_offset: i64,
    active_base: i64,
) -> Result<(i64, Option<String>)> {
    let path = dir.join(checkpoint::CLEAN_POINT_NAME);
    if !fs.exists(&path) {
        return Ok((log_start_offset, None));
    }
    let bytes = crate::fs::read_bounded(fs, &path, checkpoint::CHECKPOINT_LEN as u64)
        .map_err(|e| Error::io(&path, e))?;
    let Some(bytes) = bytes else {
        let why = format!(
            "{}: larger than the {} bytes of its format: ignored",
            path.display(),
            checkpoint::CHECKPOINT_LEN
        );
        return Ok((log_start_offset, Some(why)));
    };
    let clean_point = match checkpoint::decode_clean_point(&bytes) {
        Ok(clean_point) => clean_point,
        Err(e) => {
            return Ok((
                log_start_offset,
                Some(format!("{}: ignored", e.at(&path, 0))),
            ))
        }
    };
    if clean_point > active_base {
        let why = format!(
            "{}: clean point {clean_point} is past the active segment's base {active_base}: ignored",
            path.display()
        );
        return Ok((log_start_offset, Some(why)));
    }
    Ok((clean_point.max(log_start_offset), None))
}

/// The open's read-only check of the clean point file (a recovery phase): a file
/// [`judge_clean_point`] ignores is reported in `ignored_checkpoints`, never a
/// reason to refuse the open. `bases` are the segment files found, ascending.
pub fn check_clean_point(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    ignored_checkpoints: &mut Vec<String>,
) -> Result<()> {
    if let (Some(&start), Some(&active)) = (bases.first(), bases.last()) {
        if let (_, Some(why)) = judge_clean_point(fs, dir, start, active)? {
            ignored_checkpoints.push(why);
        }
    }
    Ok(())
}

pub(super) fn build_sync_file(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    fail_point!(fp::COMPACTION_BUILD_SYNC_FILE);
    fs.sync_file(path).map_err(|e| Error::io(path, e))
}

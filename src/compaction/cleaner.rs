//! The IO half of compaction: build the offset map, then write the compacted closed
//! segments and an unchanged copy of the active segment into `D.compact-tmp`
//! (install step 1), and describe the result in a
//! [`Manifest`](crate::format::manifest::Manifest).

use std::path::Path;

use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::install::InstallPaths;

use super::dirty::scan_dirty_bounded;
use super::finish::{carried_files, finish_build, Tail};
use super::options::{BuildFrom, Built, CleanOptions, CompactOptions, CompactionReport};
use super::output::{write_closed, ClosedRegion, Written};
use super::rules::seed::Horizon;
use super::scan::{scan_with, Scan};
use super::section::read_clean_point;
use super::source::list_segments;

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
        let inputs = super::options::BuildInputs {
            paths: &paths,
            bases: &bases,
            clean_point_before,
            index_interval_bytes,
            carry_point,
            from,
        };
        // The tuned pass applies the transaction rules too (`super::rules::txn`).
        return super::kafka_pass::build(fs, dir, options, clean, inputs).map(Some);
    }
    // The transaction rules (`super::rules::txn`): a log holding transactional data
    // anywhere (below the clean point too: a marker there goes only under the
    // rules) is cleaned in full (the incremental dirty map does not apply them),
    // nothing at or past its last stable offset cleaned, and its clean point moves
    // to the first offset the pass did not clean. So every segment is read to find
    // out.
    let horizon = Horizon {
        now: options.now,
        delete_retention_ms: options.delete_retention_ms,
    };
    let txn = super::headers::plan(fs, dir, &bases, horizon)?;
    // Only the options that change the seed pass choose it (not
    // `producer_id_expiration_ms`, which only the kafka policy reads).
    let unbounded_without_lag =
        clean.dedupe_buffer_bytes.is_none() && clean.min_compaction_lag_ms == 0;
    let from_scratch =
        (clean_point_before == log_start_offset && unbounded_without_lag) || txn.is_some();
    let (scan, keep_from, clean_point_after, mapped_end_offset, keys) = if from_scratch {
        // Everything is dirty and the map unbounded: the full two-thread scan (no
        // key summaries: the next, incremental pass writes them).
        let keep_from = txn.as_ref().map_or(i64::MAX, |t| t.last_stable_offset);
        // The first offset not cleaned: the active base, or the last stable offset
        // below it (Kafka's cleaner moves its clean point there); never back.
        let clean_point_after = clean_point_before.max(active_base.min(keep_from));
        assert!(clean_point_after >= log_start_offset);
        (
            scan_with(fs, dir, &bases, from.active_len, txn.as_ref())?,
            keep_from,
            clean_point_after,
            None,
            None,
        )
    } else {
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

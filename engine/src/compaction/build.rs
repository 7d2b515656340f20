//! The IO half of compaction: build the offset map, then write the compacted closed
//! segments into `D.compact-tmp` (install step 1), with an unchanged copy of the
//! active segment for a directory's compaction (a cleaner's build leaves the tail
//! to the swap, which hard-links it), and describe the result in a
//! [`Manifest`](crate::format::manifest::Manifest).

use std::path::Path;

use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::install::InstallPaths;

use super::finish::{carried_files, finish_pass};
use super::options::{
    BuildFrom, BuildInputs, Built, CleanOptions, CompactOptions, CompactionPolicy,
};
use super::section::read_clean_point;
use crate::segment::files::list_segments;

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

/// Test builds only: [`build_indexed`] without "no reopen after cleanup", the
/// broken variant `point-on-reopen` of model (b): the temp dir gets
/// the `.log` files but neither index files nor a recovery point.
#[cfg(feature = "test-variants")]
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
    // Mapped once: every read of the build (the segment ends, the header walk, the
    // map pass, the rewrite) goes through these bytes.
    let closed_bytes = crate::segment::files::map_segments(fs, dir, closed)?;
    crate::segment::files::check_segment_ends(dir, &bases, &closed_bytes)?;
    let log_start_offset = bases[0];
    let clean_point_before = read_clean_point(fs, dir, log_start_offset, active_base)?;
    let inputs = BuildInputs {
        paths: &paths,
        bases: &bases,
        clean_point_before,
        index_interval_bytes,
        carry_point,
        from,
    };
    let pass = match clean.policy {
        // The tuned pass applies the transaction rules too (`super::rules::txn`).
        CompactionPolicy::Kafka => {
            super::pass::kafka::run(fs, dir, options, clean, &inputs, closed_bytes)?
        }
        CompactionPolicy::Seed => {
            super::pass::seed::run(fs, dir, options, clean, &inputs, closed_bytes)?
        }
    };
    finish_pass(fs, dir, &inputs, pass).map(Some)
}

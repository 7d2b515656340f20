//! The end of install step 1, whatever the policy: the active segment copied, the
//! files the log does not own carried, the new clean point, the index files, the
//! `.txnindex` files and the recovery point written into the temp dir and synced,
//! and the [`Manifest`] describing it all.

use std::path::Path;

use crate::error::{Error, Result};
use crate::fail_point;
use crate::format::checkpoint;
use crate::format::filename::{self, LOG_SUFFIX, TXN_INDEX_SUFFIX};
use crate::format::index::{encode_offset_entries, encode_time_entries};
use crate::format::manifest::{Manifest, ManifestFile};
use crate::format::recovery_point::{self, SummaryFile, SummaryKind};
use crate::format::txn_index::{self, AbortedTxn};
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint as fp;
use crate::fs::FileSystem;
use crate::install::InstallPaths;
use crate::segment::{BatchFacts, Segment};

use super::files::{build_sync_file, write_link};
use super::options::{BuildFrom, BuildInputs, Built, CompactionReport};
use super::rules::txn::TxnPlan;
use super::view;
use crate::segment::files::segment_path;

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
    pub txn: Option<&'a TxnPlan>,
}

/// What a pass (`super::pass`) leaves for the finish.
pub(super) struct Pass {
    /// The report so far (the finish adds the active segment and the totals).
    pub report: CompactionReport,
    /// The active segment's bytes, checked by the pass's read.
    pub active_bytes: Vec<u8>,
    pub mapped_end_offset: Option<i64>,
    /// The closed region's `.log` files as written, oldest first.
    pub files: Vec<ManifestFile>,
    /// The closed region's segments, closed, without pending index entries.
    pub segments: Vec<Segment>,
    /// Bases of closed segments hard-linked from the live directory, ascending.
    pub carried_bases: Vec<i64>,
    pub clean_point_after: i64,
    /// The transaction rules, when the log holds transactional data.
    pub txn: Option<TxnPlan>,
}

/// [`finish_build`] after the pass over `inputs`.
pub(super) fn finish_pass(
    fs: &dyn FileSystem,
    dir: &Path,
    inputs: &BuildInputs<'_>,
    pass: Pass,
) -> Result<Built> {
    let (&active_base, _) = inputs.bases.split_last().expect("a log has a segment");
    finish_build(
        fs,
        dir,
        Tail {
            paths: inputs.paths,
            active_base,
            active_bytes: &pass.active_bytes,
            index_interval_bytes: inputs.index_interval_bytes,
            report: pass.report,
            mapped_end_offset: pass.mapped_end_offset,
            files: pass.files,
            segments: pass.segments,
            carried_bases: pass.carried_bases,
            clean_point_after: pass.clean_point_after,
            carry_point: inputs.carry_point,
            log_start_offset: inputs.bases[0],
            from: inputs.from,
            txn: pass.txn.as_ref(),
        },
    )
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
    // unchanged; index files are not copied: the build writes them (below).
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
        write_txn_indexes(fs, &paths.tmp, &bases, written, txn)?;
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
/// A built segment's indexes: computed as its batches were written, in memory.
fn built_index(segment: &Segment) -> &crate::segment::SegmentIndex {
    segment
        .index
        .if_loaded()
        .expect("a built segment's indexes are in memory")
}

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
                encode_offset_entries(built_index(segment).offset_entries()),
            ),
            (
                &segment.paths.time_index,
                encode_time_entries(built_index(segment).time_entries()),
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
                write_link(fs, live, &path)?;
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
pub(super) fn carried_files(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for name in fs.list_dir(dir).map_err(|e| Error::io(dir, e))? {
        if fs.is_dir(&dir.join(&name)) {
            return Err(Error::InvalidArgument(format!(
                "{} holds a directory {name:?}; compaction would not carry it over",
                dir.display()
            )));
        }
        // The recovery point and the marker describe the old segments, so neither is
        // copied: the build writes a recovery point of its own segments (or the
        // swap does, for a snapshot's build), and the new directory has no marker.
        // The clean point is written anew by the pass, never copied.
        let describes_old = crate::format::recovery_point::NAMES.contains(&name.as_str())
            || name == checkpoint::CLEAN_POINT_NAME;
        if filename::parse(&name).is_none() && !describes_old {
            out.push(name);
        }
    }
    Ok(out)
}

/// Writes the `.txnindex` of every output segment (`bases` ascending, the active
/// one last) that holds an entry of `plan` into `tmp`: derived files like the
/// indexes, not listed in the manifest; a closed segment's synced before the
/// commit point, the active one's not (an open checks them all against the
/// batches before use, `log::txn`). Only the first `written` of `bases` get
/// theirs: the rest come with a concurrent cleaning's tail (`install::tail`).
pub(super) fn write_txn_indexes(
    fs: &dyn FileSystem,
    tmp: &Path,
    bases: &[i64],
    written: usize,
    plan: &TxnPlan,
) -> Result<()> {
    for (i, &base) in bases.iter().enumerate().take(written) {
        let end = bases.get(i + 1).copied().unwrap_or(i64::MAX);
        let entries: Vec<AbortedTxn> = plan
            .entries
            .iter()
            .filter(|e| e.last_offset >= base && e.last_offset < end)
            .copied()
            .collect();
        if entries.is_empty() {
            continue;
        }
        let path = tmp.join(filename::build(base, TXN_INDEX_SUFFIX));
        fs.write_new(&path, &txn_index::encode(&entries))
            .map_err(|e| Error::io(&path, e))?;
        if i + 1 < bases.len() {
            build_sync_file(fs, &path)?;
        }
    }
    Ok(())
}

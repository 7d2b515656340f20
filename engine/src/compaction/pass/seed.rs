//! The `seed` policy's pass (docs/design.md section 1, "Compaction" and
//! "Incremental cleaning"): the transaction facts from the header walk, the full
//! map ([`super::full`]) or the incremental one ([`super::incremental`]), then the
//! rewrite of the closed region (`crate::compaction::output::write_closed`).

use std::path::Path;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::fs::FileSystem;

use crate::compaction::options::{BuildInputs, CleanOptions, CompactOptions, CompactionReport};
use crate::compaction::output::{write_closed, ClosedRegion, Written};
use crate::compaction::rewrite::Lookups;
use crate::compaction::rules::seed::Horizon;

use super::full::{scan_mapped, Scan};
use super::incremental::scan_dirty_bounded;
use crate::compaction::finish::Pass;

/// The pass over `inputs` (at least one closed segment; the temp dir is created
/// here, after the reads), `closed_bytes` the closed segments' bytes as the build
/// mapped them (`crate::segment::files::map_segments`): the header walk, the
/// map pass and the rewrite read them, and the rewrite drops each once written.
pub(crate) fn run(
    fs: &dyn FileSystem,
    dir: &Path,
    options: CompactOptions,
    clean: CleanOptions,
    inputs: &BuildInputs<'_>,
    closed_bytes: Vec<Bytes>,
) -> Result<Pass> {
    let BuildInputs {
        paths,
        bases,
        clean_point_before,
        index_interval_bytes,
        from,
        ..
    } = *inputs;
    let (&active_base, closed) = bases.split_last().expect("a log has a segment");
    let log_start_offset = bases[0];
    // The transaction rules (`crate::compaction::rules::txn`): a log holding transactional data
    // anywhere (below the clean point too: a marker there goes only under the
    // rules) is cleaned in full (the incremental dirty map does not apply them),
    // nothing at or past its last stable offset cleaned, and its clean point moves
    // to the first offset the pass did not clean. So every segment is read to find
    // out.
    let horizon = Horizon {
        now: options.now,
        delete_retention_ms: options.delete_retention_ms,
    };
    let txn = crate::compaction::headers::plan(fs, dir, bases, &closed_bytes, horizon)?;
    // Only the options that change the seed pass choose it (not
    // `producer_id_expiration_ms`, which only the kafka policy reads).
    let unbounded_without_lag =
        clean.dedupe_buffer_bytes.is_none() && clean.min_compaction_lag_ms == 0;
    let from_scratch =
        (clean_point_before == log_start_offset && unbounded_without_lag) || txn.is_some();
    let (scan, keep_from, clean_point_after, mapped_end_offset, keys, lookups) = if from_scratch {
        // Everything is dirty and the map unbounded: the full two-thread scan (no
        // key summaries: the next, incremental pass writes them).
        let keep_from = txn.as_ref().map_or(i64::MAX, |t| t.last_stable_offset);
        // The first offset not cleaned: the active base, or the last stable offset
        // below it (Kafka's cleaner moves its clean point there); never back.
        let clean_point_after = clean_point_before.max(active_base.min(keep_from));
        assert!(clean_point_after >= log_start_offset);
        (
            scan_mapped(fs, dir, bases, closed_bytes, from.active_len, txn.as_ref())?,
            keep_from,
            clean_point_after,
            None,
            None,
            None,
        )
    } else {
        let dirty = scan_dirty_bounded(
            fs,
            dir,
            bases,
            closed_bytes,
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
            dirty.lookups,
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
            lookups: lookups.as_ref().map(|(map, dirty)| Lookups {
                until: clean_point_before,
                map,
                dirty,
            }),
        },
    )?;
    report.segments_carried = carried_segments;
    report.bytes_carried = carried_bytes;
    report.bytes_before = totals.bytes_before;
    report.bytes_after = totals.counts.bytes_after;
    report.records_before = totals.counts.records_before;
    report.records_after = totals.counts.records_after;
    report.segments_after = files.len() as u64;
    Ok(Pass {
        report,
        active_bytes,
        mapped_end_offset,
        files,
        segments,
        carried_bases,
        clean_point_after,
        txn,
    })
}

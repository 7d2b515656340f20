//! What an open may trust without reading segment data: the recovery point
//! (`recovery-point.checkpoint`, written by every roll) vouches for the closed
//! segments below it, the clean-shutdown marker (`clean-shutdown`, written by a
//! clean close) for the active segment. Model (e), `seglog model check --model
//! durability`, checks the orderings; docs/design.md section 3b has the crash windows.
//!
//! A file that fails to decode is ignored (the open scans instead, and the report
//! says why): neither file is ever needed for correctness, only for speed. A
//! CRC-valid recovery point that describes this directory is evidence, though: a
//! summarized segment that is gone is lost data (`super::evidence`), refused unless
//! the recovery mode accepts the loss.
//!
//! # What an open trusts, and how
//!
//! Phase 3 of the open (`recovery_scan`; docs/design.md section 3b has the orders and
//! the properties).
//!
//! A closed segment below the recovery point, or the last segment named by the marker,
//! is *trusted* when its `.log` length equals the summary and its index files match the
//! summary; it is built from the summary without reading its `.log` (else scanned,
//! `report.rescanned`). For the active segment the index files are read and held to the
//! summary's counts and checksums at the open. For a closed one the open only asks both
//! files' lengths (a `stat` each: a missing or cut file sends the segment to the scan,
//! which rewrites it); reading, checksumming and decoding them waits for the first read
//! or time lookup that starts inside that segment (`segment::vouched`; a read that
//! starts at a segment's base offset needs no index). An open after a clean close
//! therefore reads no closed segment's file and holds no descriptor on one, whatever
//! the segment count (`tests/vouched_indexes.rs`). If the lookup finds the files wrong
//! (damaged or replaced since the roll that summarized them, which no crash does: the
//! roll fsyncs them before the point names them), the segment's `.log` is scanned then,
//! damage there is an error naming the file and position, and the index is rebuilt from
//! it in memory and named by `Log::rebuilt_indexes` (`seglog dump` warns and lists it
//! under `indexes_rebuilt`). The files stay as they are until a checked open (`seglog
//! recover`) rewrites them: they are derived, and the point's checksums keep every
//! later open from trusting them. The active segment is held to one more fact, its end:
//! the batch headers from its offset index's last entry to the summary's length must
//! chain to exactly that length and end at the summary's next offset (`segment::tail`,
//! Kafka's `LogSegment.readNextOffset`; one header per batch, never a record). A seal
//! says the marker is whole, not that its numbers describe this file: a forged or
//! foreign marker, or a batch whose base offset (outside the CRC) moved, makes the two
//! disagree, and the marker is ignored for the segment and reported with both offsets,
//! the segment scanned as after a crash. A summary whose fields contradict each other
//! (`SegmentSummary::check`: an empty `.log` with records, more batches than headers
//! fit, more records than offsets) or whose largest timestamp is not where the time
//! index ends (a roll and a close end it there) describes no segment and is ignored for
//! it the same way. The next offset the log hands out comes from the batches. A closed
//! `.log` missing, shorter than its summary or not a regular file is lost data
//! (docs/design.md section 3c); a longer one is scanned and the point reported ignored for it
//! (`report.ignored_checkpoints`). Files are read only up to the length their summaries
//! allow. A file that fails to decode is ignored and reported: neither file is needed
//! for correctness.
//!
//! A plain read-only open (`seglog dump`) trusts as a writable open does: it takes no
//! lock and needs no write permission (`StdFs` opens a file it may not write, another
//! user's log or one on a read-only mount, for reading; `tests/read_only_files.rs`),
//! and a writer beside it may remove the marker or replace the recovery point between
//! its reads; a summary the files no longer match is ignored for its segment and the
//! segment scanned (`tests/read_only_beside_writer.rs` stops the open at every
//! file-system call).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::recovery_point::{self, SegmentSummary, SummaryFile, SummaryKind};
// The fail point names are only referenced when the `failpoints` feature is on.
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint::*;
use crate::fs::FileSystem;

use super::report::RecoveryReport;

/// The checkpoints an open found, decoded.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// The recovery point and the summaries of the segments below it.
    pub point: Option<(i64, BTreeMap<i64, SegmentSummary>)>,
    /// The marker's summary of the active segment.
    pub marker: Option<SegmentSummary>,
    /// Which of [`recovery_point::NAMES`] exist (to be removed or replaced by the open).
    pub present: Vec<&'static str>,
}

impl Trust {
    /// Reads both files of `dir`, whose segment files have base offsets `bases`
    /// (ascending). IO errors are errors; damage is reported and the file ignored,
    /// and so is a file larger than its summaries can be, which is not read (see
    /// [`recovery_point_summaries_max`]; the marker holds one).
    pub fn read(
        fs: &dyn FileSystem,
        dir: &Path,
        bases: &[i64],
        report: &mut RecoveryReport,
    ) -> Result<Trust> {
        let segments = recovery_point_summaries_max(bases);
        let mut trust = Trust {
            present: recovery_point::NAMES
                .into_iter()
                .filter(|name| fs.exists(&dir.join(name)))
                .collect(),
            ..Trust::default()
        };
        if let Some(file) = read_file(fs, dir, SummaryKind::RecoveryPoint, segments, report)? {
            let summaries = file
                .summaries
                .into_iter()
                .filter(|s| s.base_offset < file.point)
                .map(|s| (s.base_offset, s))
                .collect();
            report.recovery_point = Some(file.point);
            trust.point = Some((file.point, summaries));
        }
        if let Some(file) = read_file(fs, dir, SummaryKind::CleanShutdown, 1, report)? {
            match file.summaries.as_slice() {
                [active] if active.base_offset == file.point => trust.marker = Some(*active),
                _ => report.ignored_checkpoints.push(format!(
                    "{}: {} summaries for active base {}, expected one",
                    recovery_point::CLEAN_SHUTDOWN_NAME,
                    file.summaries.len(),
                    file.point
                )),
            }
        }
        Ok(trust)
    }

    /// Ignores (and reports) a recovery point that does not summarize every segment
    /// file below its point (`bases`: the segment files left after retention
    /// recovery): every roll summarizes all of them, so such a point does not
    /// describe this directory (a forged summary, or files from elsewhere). It is a
    /// hint then, not evidence of lost segments (`super::evidence`).
    pub fn check_cover(&mut self, bases: &[i64], report: &mut RecoveryReport) {
        let Some((point, summaries)) = &self.point else {
            return;
        };
        let unsummarized = bases
            .iter()
            .take_while(|base| *base < point)
            .find(|base| !summaries.contains_key(base));
        if let Some(base) = unsummarized {
            report.ignored_checkpoints.push(format!(
                "{}: does not summarize segment {base} below its point {point}: ignored",
                recovery_point::RECOVERY_POINT_NAME
            ));
            report.recovery_point = None;
            self.point = None;
        }
    }

    /// Ignores (and reports) a recovery point that summarizes a closed segment whose
    /// `.log` is not there although segments below and above it are: no crash
    /// leaves that (retention removes a prefix, and its recovery runs before this;
    /// a roll adds at the end; a compaction's new directory has no point), so the
    /// hint is wrong. The open then scans every closed segment and writes a fresh
    /// point. A summary below the first segment (a retention's leftover) is fine.
    pub fn check_listing(&mut self, bases: &[i64], report: &mut RecoveryReport) {
        let (Some(first), Some(last)) = (bases.first(), bases.last()) else {
            return;
        };
        let Some((_, summaries)) = &self.point else {
            return;
        };
        let missing = summaries
            .keys()
            .find(|base| (*first..*last).contains(*base) && bases.binary_search(base).is_err());
        if let Some(missing) = missing {
            report.ignored_checkpoints.push(format!(
                "{}: summarizes segment {missing}, whose .log does not exist: ignored",
                recovery_point::RECOVERY_POINT_NAME
            ));
            report.recovery_point = None;
            self.point = None;
        }
    }

    /// Ignores (and reports) a marker that vouches for a segment other than the
    /// last one (`bases`, the segment files left): a roll that removed it lost the
    /// removal to a crash, or the files are from elsewhere.
    pub fn check_marker(&mut self, bases: &[i64], report: &mut RecoveryReport) {
        let Some(marker) = &self.marker else {
            return;
        };
        if bases.last() != Some(&marker.base_offset) {
            report.ignored_checkpoints.push(format!(
                "{}: vouches for segment {}, the last segment is {:?}: ignored",
                recovery_point::CLEAN_SHUTDOWN_NAME,
                marker.base_offset,
                bases.last()
            ));
            self.marker = None;
        }
    }

    /// The summary vouching for the segment at `base`, if any: the marker's for the
    /// last segment, the recovery point's for one below it.
    pub fn summary(&self, base: i64, last: bool) -> Option<(&SegmentSummary, &'static str)> {
        if last {
            return self
                .marker
                .as_ref()
                .filter(|m| m.base_offset == base)
                .map(|m| (m, recovery_point::CLEAN_SHUTDOWN_NAME));
        }
        let (point, summaries) = self.point.as_ref()?;
        if base >= *point {
            return None;
        }
        summaries
            .get(&base)
            .map(|s| (s, recovery_point::RECOVERY_POINT_NAME))
    }
}

/// The most summaries a recovery point of a log with segment files `bases` holds:
/// one per segment file, and one per segment retention removed since the last roll
/// (only a roll writes the point), each below the first base at a distinct base
/// offset, so at most the first base of them.
pub fn recovery_point_summaries_max(bases: &[i64]) -> usize {
    let first = bases.first().copied().unwrap_or(0).max(0);
    let removed_max = u64::try_from(first)
        .unwrap_or(0)
        .min(u64::from(recovery_point::SUMMARIES_MAX));
    bases
        .len()
        .saturating_add(usize::try_from(removed_max).unwrap_or(usize::MAX))
}

fn read_file(
    fs: &dyn FileSystem,
    dir: &Path,
    kind: SummaryKind,
    summaries_max: usize,
    report: &mut RecoveryReport,
) -> Result<Option<SummaryFile>> {
    let (name, _) = kind.names();
    let path = dir.join(name);
    if !fs.exists(&path) {
        return Ok(None);
    }
    let bytes_max = recovery_point::file_bytes_max(summaries_max);
    // Gone since `exists`: a writer beside a read-only open (which holds no lock)
    // removed it. Both files are hints: absent, the open scans.
    let gone = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
    let read = match crate::fs::read_bounded(fs, &path, bytes_max) {
        Err(e) if gone(&e) => return Ok(None),
        read => read.map_err(|e| Error::io(&path, e))?,
    };
    let Some(bytes) = read else {
        let bytes = match fs.len(&path) {
            Err(e) if gone(&e) => return Ok(None),
            len => len.map_err(|e| Error::io(&path, e))?,
        };
        let kind = crate::error::CorruptKind::TooLarge { bytes, bytes_max };
        report
            .ignored_checkpoints
            .push(format!("{}", Error::corrupt(&path, bytes_max, kind)));
        return Ok(None);
    };
    match recovery_point::decode(kind, &bytes) {
        Ok(file) => Ok(Some(file)),
        Err(e) => {
            report
                .ignored_checkpoints
                .push(format!("{}", e.at(&path, 0)));
            Ok(None)
        }
    }
}

/// Fail points of one write of a summary file.
pub struct WritePoints {
    /// Before the temp file's fsync.
    pub sync: &'static str,
    /// Before the rename over the file.
    pub rename: &'static str,
}

/// Writes `file` to its temp name, fsyncs it and renames it over the file of `kind`.
/// Not durable until the caller fsyncs `dir` (a roll's one directory fsync covers its
/// new segment and this rename).
pub fn write(
    fs: &dyn FileSystem,
    dir: &Path,
    kind: SummaryKind,
    file: &SummaryFile,
    points: &WritePoints,
) -> Result<()> {
    let (name, tmp_name) = kind.names();
    let (target, tmp) = (dir.join(name), dir.join(tmp_name));
    fs.write_new(&tmp, &recovery_point::encode(kind, file))
        .map_err(|e| Error::io(&tmp, e))?;
    // The data must be durable before the name points at it: a torn checkpoint is
    // ignored (safe), but a torn marker would cost a clean open its speed.
    crate::fail_point!(points.sync);
    fs.sync_file(&tmp).map_err(|e| Error::io(&tmp, e))?;
    crate::fail_point!(points.rename);
    fs.rename(&tmp, &target).map_err(|e| Error::io(&target, e))
}

/// The recovery point a roll (or an open) writes: every segment but the active one.
pub fn recovery_point_of(segments: &[crate::segment::Segment]) -> SummaryFile {
    let (active, closed) = segments
        .split_last()
        .expect("a log always has an active segment");
    SummaryFile {
        point: active.base_offset,
        summaries: closed
            .iter()
            .map(crate::segment::Segment::summary)
            .collect(),
    }
}

/// The marker a clean close writes: the active segment.
pub fn marker_of(segments: &[crate::segment::Segment]) -> SummaryFile {
    let active = segments.last().expect("a log always has an active segment");
    SummaryFile {
        point: active.base_offset,
        summaries: vec![active.summary()],
    }
}

#[cfg(feature = "test-variants")]
thread_local! {
    static SETTLE_ONLY_FOR_NEW_POINT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Test-only (feature `test-variants`): runs `f` with opens on this thread settling
/// as the engine did before the sweep's `drop-indexes` workload (model (e), variant
/// `sync-scanned-only-for-new-point`): when the current recovery point vouches for
/// every closed segment, the index files the open rebuilt are neither fsynced nor
/// summarized in a new point.
#[cfg(feature = "test-variants")]
pub fn with_settle_only_for_new_point<T>(f: impl FnOnce() -> T) -> T {
    SETTLE_ONLY_FOR_NEW_POINT.with(|flag| flag.set(true));
    let result = f();
    SETTLE_ONLY_FOR_NEW_POINT.with(|flag| flag.set(false));
    result
}

fn settles_only_for_new_point() -> bool {
    #[cfg(feature = "test-variants")]
    {
        SETTLE_ONLY_FOR_NEW_POINT.with(std::cell::Cell::get)
    }
    #[cfg(not(feature = "test-variants"))]
    {
        false
    }
}

/// Recovery's last phase for the checkpoints: removes any temp, and the marker
/// unless it vouched for the active segment as it is (`keep_marker`: it still
/// describes the segment, which appends only extend, and an open trusts only the
/// vouched prefix of a longer file; a roll removes it), and brings the
/// recovery point up to the active segment (or removes one that vouches for it: the
/// roll that wrote it lost its next segment). `created_indexes`: this open created
/// index files of a closed segment (ones that were missing). Returns true if the directory changed.
pub fn settle(
    fs: &dyn FileSystem,
    dir: &Path,
    trust: &Trust,
    segments: &[crate::segment::Segment],
    scanned: &[i64],
    created_indexes: bool,
    keep_marker: bool,
) -> Result<bool> {
    let mut changed = false;
    for name in [
        recovery_point::RECOVERY_POINT_TMP_NAME,
        recovery_point::CLEAN_SHUTDOWN_TMP_NAME,
        recovery_point::CLEAN_SHUTDOWN_NAME,
    ] {
        let kept = keep_marker && name == recovery_point::CLEAN_SHUTDOWN_NAME;
        if trust.present.contains(&name) && !kept {
            let path = dir.join(name);
            crate::fail_point!(LOG_RECOVERY_REMOVE_MARKER);
            fs.remove_file(&path).map_err(|e| Error::io(&path, e))?;
            changed = true;
        }
    }
    let active_base = segments.last().map_or(0, |s| s.base_offset);
    let current = trust.point.as_ref().is_some_and(|(p, _)| *p == active_base);
    // What this open scanned of a closed segment may be a crashed process's page
    // cache (index files a crashed open rebuilt, say) or index files it rebuilt
    // itself: durable before a recovery point vouches for it, and, when the
    // current one already does (an operator deleted the index files of a trusted
    // segment while the log was down, model (e)'s `DropIndexes`), before the open
    // returns: else a power loss after the open leaves a trusted segment to rescan
    // (model (e), variant `sync-scanned-only-for-new-point`; the sweep's
    // `drop-indexes` workload).
    let closed = &segments[..segments.len().saturating_sub(1)];
    let closed = if current && settles_only_for_new_point() {
        &[]
    } else {
        closed
    };
    for segment in closed.iter().filter(|s| scanned.contains(&s.base_offset)) {
        let paths = &segment.paths;
        for path in [&paths.log, &paths.index, &paths.time_index] {
            crate::fail_point!(LOG_RECOVERY_SYNC_SCANNED);
            fs.sync_file(path).map_err(|e| Error::io(path, e))?;
        }
    }
    // And their entries, if this open created a closed segment's index files: a
    // point's rename must not become durable without them, nor may the open return
    // with them pending under the current point. The entries of every other closed
    // segment file were made durable by the roll that created the next segment.
    // (Unconditional before: the sync ablation by step skipped 7,877 pending calls
    // of it in opens that created nothing, and the sweep found nothing.)
    if created_indexes && !closed.is_empty() {
        crate::fail_point!(LOG_RECOVERY_SYNC_SCANNED_DIR);
        fs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    }
    // Rebuilt index files need not equal the ones a point summarized (a sparse
    // index depends on where the writer's entry interval started: an open after a
    // clean close restarts it, as Kafka's does, and a rebuild counts from the
    // segment's start), so a point that vouched for a rescanned segment is
    // rewritten with their checksums (the sweep's `drop-indexes` workload).
    let rescanned = !closed.is_empty() && closed.iter().any(|s| scanned.contains(&s.base_offset));
    if segments.len() > 1 && (!current || rescanned) {
        write(
            fs,
            dir,
            SummaryKind::RecoveryPoint,
            &recovery_point_of(segments),
            &WritePoints {
                sync: LOG_RECOVERY_SYNC_RECOVERY_POINT,
                rename: LOG_RECOVERY_RENAME_RECOVERY_POINT,
            },
        )?;
        changed = true;
    } else if segments.len() <= 1 && trust.present.contains(&recovery_point::RECOVERY_POINT_NAME) {
        // One segment: nothing to vouch for; a point at or past it is stale.
        let path = dir.join(recovery_point::RECOVERY_POINT_NAME);
        crate::fail_point!(LOG_RECOVERY_REMOVE_MARKER);
        fs.remove_file(&path).map_err(|e| Error::io(&path, e))?;
        changed = true;
    }
    Ok(changed)
}

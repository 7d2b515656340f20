//! The verdict on one damaged image: a structured error naming the damaged file, or
//! a correct recovery; never a silent acceptance, never a deletion beyond the torn
//! tail of the active segment, and never an unchecked temp dir trusted.
//!
//! Rules (docs/design.md sections 3, 5, 6):
//! * a failed open leaves every file as it was, or exactly as the protocol
//!   recoveries (install, retention checkpoint), which run before the segment scan
//!   and are documented to survive its failure, leave it;
//! * the error is `Corrupt` naming the damaged file (or where recovery legitimately
//!   moved it) at a position inside it, `Unsupported` for a file with a format
//!   version, or `Ambiguous` when an install is pending;
//! * a successful open keeps every `.log` and the checkpoint of the content it
//!   chose byte for byte, except a reported cut of the active segment's tail at a
//!   batch boundary before the damage; a damaged temp dir is never rolled forward;
//!   a damaged index is rewritten, or kept only if it is still valid by Kafka's
//!   rules, which this judge checks by its lookups (every offset read through it
//!   starts at its record, every timestamp lookup equals a scan); damaged manifest or checkpoint bytes are never
//!   accepted; damaged `.log` bytes are served only where the format is blind; the
//!   log equals the spec (or a whole-batch prefix of it after a reported cut); a
//!   second open changes nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::sweep::{self, LOG_DIR};
use crate::workload::{engine, LogView};
use seglog::compaction::{CleanOptions, CompactionPolicy};
use seglog::error::{CorruptKind, Error};
use seglog::format::{checkpoint, filename};
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::install::InstallCase;
use seglog::log::{Log, LogConfig, RecoveryMode, RecoveryReport, TailKind};
use seglog::panics::panic_message;

use super::case::{
    blind_holds, changes, check_error, check_failed_open, dir_of, is_prefix, origin, Case, Outcome,
};
use super::kind::{install_paths, is_index, is_log, is_trust, last_log, FileKind, Role};
use super::plan::batch_ranges;

/// Opens the damaged image and judges the outcome; `Err` is a violation.
pub fn judge(case: &Case<'_>) -> Result<Outcome, String> {
    let fs = Arc::new(case.image()?);
    let read_only = super::opens::read_only(case, &fs)?;
    let before = fs.snapshot();
    let dirs_before = fs.snapshot_dirs();
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let opened = Log::open_with(dyn_fs.clone(), LOG_DIR, case.config.clone());
    let after = fs.snapshot();
    check_temp_not_trusted(case, &before, &after)?;
    match opened {
        Err(e) => {
            check_failed_open(
                case,
                &before,
                &after,
                dirs_before == fs.snapshot_dirs(),
                &fs,
            )?;
            check_error(case, &e)?;
            check_fails_again(case, dyn_fs, &fs, &e)?;
            super::opens::check(case, read_only, None)?;
            Ok(Outcome::Error)
        }
        Ok((log, report)) => {
            // The open scanned every batch it did not trust: a read that then fails
            // means the open accepted bytes it should have rejected, unless the
            // damage is in a trusted segment, which only a read looks at.
            let view = match engine::view(&log) {
                Ok(view) => view,
                Err(e) => {
                    check_read_error(case, &after, &report, &e)?;
                    drop(log);
                    check_cleanings(case, &fs)?;
                    super::opens::check(case, read_only, None)?;
                    return Ok(Outcome::ReadError);
                }
            };
            let lookups = check_lookups(&log, &view);
            drop(log);
            let outcome = check_recovery(case, &before, &after, &view, &report, lookups)?;
            super::hints::check_reported(&before, &dir_of(origin(&report)), &report, &view)?;
            check_strict(case, &report, &view)?;
            let paths = install_paths();
            let stray: Vec<PathBuf> = fs
                .snapshot_dirs()
                .into_iter()
                .filter(|d| !paths.live.starts_with(d) && !d.starts_with(&paths.live))
                .collect();
            if !stray.is_empty() {
                return Err(format!("directories left after recovery: {stray:?}"));
            }
            check_second_open(case, dyn_fs.clone(), &fs, &view)?;
            check_cleanings(case, &fs)?;
            super::opens::check(case, read_only, Some(&view))?;
            Ok(outcome)
        }
    }
}

/// Runs a cleaning, turning a panic (on the calling thread or re-raised from one
/// of the cleaner's scoped threads by [`seglog::panics::join_scoped`]) into a
/// violation that carries the panic's message.
fn catch_cleaning<T>(policy: CompactionPolicy, clean: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(clean))
        .map_err(|panic| format!("a {policy:?} cleaning panicked: {}", panic_message(&*panic)))
}

/// A log that opened from a damaged image is cleaned, by each policy in turn (on
/// its own copy of the image): the cleaning succeeds, or fails with a structured
/// corruption error and changes no `.log` file. Never a panic: damage the open
/// does not look at (a trusted segment, a base offset outside the CRC) reaches the
/// cleaner's own checks.
fn check_cleanings(case: &Case<'_>, fs: &SimFs) -> Result<(), String> {
    if !cleaner_reads(case.kind) {
        return Ok(());
    }
    for (i, policy) in CLEAN_POLICIES.into_iter().enumerate() {
        let image = Arc::new(sweep::duplicate(fs));
        let dyn_fs: Arc<dyn FileSystem> = image.clone();
        let Ok((mut log, _)) = Log::open_with(dyn_fs, LOG_DIR, case.config.clone()) else {
            return Err(format!("{policy:?} cleaning: the image no longer opens"));
        };
        let logs_before = log_files(&image);
        let knobs = CleanOptions {
            policy,
            ..CleanOptions::default()
        };
        let cleaned = catch_cleaning(policy, || log.clean(CLEAN_NOW, 1000, None, knobs));
        if case.kind == FileKind::KeySummary {
            let cleaned = match cleaned {
                Err(violation) => return Err(violation),
                Ok(Err(e)) => {
                    return Err(format!(
                        "a {policy:?} cleaning failed on a damaged key summary: {e}"
                    ))
                }
                Ok(Ok(_)) => engine::view(&log)
                    .map_err(|e| format!("read after a {policy:?} cleaning failed: {e}"))?,
            };
            drop(log);
            check_cleaned_as_undamaged(case, i, policy, &cleaned)?;
            continue;
        }
        drop(log);
        match cleaned {
            Err(violation) => return Err(violation),
            Ok(Ok(_)) => {}
            Ok(Err(Error::Corrupt { .. })) => {
                if log_files(&image) != logs_before {
                    return Err(format!(
                        "a {policy:?} cleaning failed on the damage and changed a .log file"
                    ));
                }
            }
            Ok(Err(e)) => {
                return Err(format!(
                    "a {policy:?} cleaning failed with a non-corruption error: {e}"
                ))
            }
        }
    }
    Ok(())
}

/// The policies [`check_cleanings`] cleans by, in turn.
const CLEAN_POLICIES: [CompactionPolicy; 2] = [CompactionPolicy::Seed, CompactionPolicy::Kafka];

/// What a cleaning by `policy` gives on a copy of `image` (opened first).
fn cleaned_view(
    config: &LogConfig,
    image: &SimFs,
    policy: CompactionPolicy,
) -> Result<LogView, String> {
    let fs: Arc<dyn FileSystem> = Arc::new(sweep::duplicate(image));
    let (mut log, _) = Log::open_with(fs, LOG_DIR, config.clone())
        .map_err(|e| format!("the undamaged image does not open: {e}"))?;
    let knobs = CleanOptions {
        policy,
        ..CleanOptions::default()
    };
    catch_cleaning(policy, || log.clean(CLEAN_NOW, 1000, None, knobs))?
        .map_err(|e| format!("a {policy:?} cleaning of the undamaged image failed: {e}"))?;
    engine::view(&log).map_err(|e| format!("the undamaged image's cleaning does not read: {e}"))
}

/// A key summary is derived: a cleaning (the `i`th of [`CLEAN_POLICIES`]) of an
/// image with a damaged one keeps exactly what a cleaning of the undamaged image
/// keeps. A summary trusted despite its damage (a hidden key, a later tombstone
/// bound) carries a segment whose records the pass must drop, and differs here.
fn check_cleaned_as_undamaged(
    case: &Case<'_>,
    i: usize,
    policy: CompactionPolicy,
    cleaned: &LogView,
) -> Result<(), String> {
    let expected = case.point.cleaned.get_or_init(|| {
        CLEAN_POLICIES
            .into_iter()
            .map(|p| cleaned_view(case.config, &case.point.image, p))
            .collect()
    });
    let expected = expected
        .get(i)
        .ok_or_else(|| format!("no undamaged {policy:?} cleaning"))?
        .as_ref()
        .map_err(Clone::clone)?;
    if expected != cleaned {
        return Err(format!(
            "a {policy:?} cleaning trusted a damaged key summary: it keeps what a \
             cleaning of the undamaged image drops: {}",
            expected.diff(cleaned).join(", ")
        ));
    }
    Ok(())
}

/// Damage the cleaner can meet after a successful open: a segment file or another
/// file the log carries (the clean point, `cleaner-offset.checkpoint`, is one),
/// live or where recovery may bring it back from (the temp dir, the backup), or
/// the log start checkpoint, or a live key summary (its carry decision reads it).
/// Index files and the derived trust files are rebuilt or ignored by the open, and
/// the cleaner reads neither.
fn cleaner_reads(kind: FileKind) -> bool {
    matches!(
        kind,
        FileKind::ClosedLog
            | FileKind::ActiveLog
            | FileKind::TempLog
            | FileKind::TempOther
            | FileKind::BackupLog
            | FileKind::BackupOther
            | FileKind::Checkpoint
            | FileKind::CheckpointTmp
            | FileKind::Other
            | FileKind::KeySummary
    )
}

/// The clock of [`check_cleanings`]: past every workload's timestamps.
const CLEAN_NOW: i64 = 1_000_000;

/// Every `.log` file of the live directory with its bytes.
fn log_files(fs: &SimFs) -> BTreeMap<PathBuf, Vec<u8>> {
    fs.snapshot()
        .into_iter()
        .filter(|(path, _)| path.parent() == Some(Path::new(LOG_DIR)) && is_log(path))
        .collect()
}

/// A read error after a successful open: only for damage the open was entitled not
/// to look at (a `.log` of a segment it trusted), naming that file, with every
/// `.log` left as it was.
fn check_read_error(
    case: &Case<'_>,
    after: &BTreeMap<PathBuf, Vec<u8>>,
    report: &RecoveryReport,
    error: &Error,
) -> Result<(), String> {
    let fail = |why: &str| {
        Err(format!(
            "the open succeeded but reading the log fails ({why}): {error}"
        ))
    };
    if report.trusted_segments == 0 {
        return fail("no segment was trusted, so the open should have seen it");
    }
    if is_trust(case.path) && case.damage.blind {
        // A CRC-valid lie about a trusted segment (its next offset): the open read
        // none of its data, and the first read that meets its batches refuses them
        // by the summary, naming the segment.
        return match error {
            Error::Corrupt { path, .. }
                if path.parent() == Some(Path::new(LOG_DIR)) && is_log(path) =>
            {
                Ok(())
            }
            _ => fail("a lie in a summary, not a corruption error naming a segment"),
        };
    }
    let Error::Corrupt { path, .. } = error else {
        return fail("not a corruption error");
    };
    let mut named = vec![case.final_path(Role::Live), Some(case.path.to_path_buf())];
    if !case.aliases.is_empty() {
        // Shared with the old content: wherever recovery put that, the damage is there.
        named.push(case.path.file_name().map(|n| Path::new(LOG_DIR).join(n)));
    }
    if !named.iter().flatten().any(|p| p == path) {
        return fail("the error names another file");
    }
    // The damaged bytes are where recovery put them, untouched (no cut, no repair).
    let kept = named
        .iter()
        .flatten()
        .any(|p| after.get(p).map(Vec::as_slice) == Some(case.damaged));
    if !kept {
        return fail("the open changed the damaged file");
    }
    // A trusted segment is trusted for its bytes, not its length: a file whose
    // length no longer matches its summary is seen at open (one `len`), so it is
    // an error or a scan there, never accepted to fail a later read.
    if case.damaged.len() != case.original.len() {
        return fail("the file's length no longer matches its summary, yet the open trusted it");
    }
    if case.damage.blind {
        // Blind to the format's rules (an LSB of `baseOffset` that keeps the
        // ordering): a scan may accept it; the read that refused it looked closer.
        return Ok(());
    }
    check_full_scan_refuses(case)
}

/// The damage the open was entitled not to look at (a trusted segment's bytes):
/// an open that looks (`Log::open_checked`, what `seglog recover` runs: no
/// recovery point, no marker) refuses it with a structured error naming the file,
/// and changes nothing beyond the protocol recoveries. A closed segment is never
/// cut like the active segment's torn tail.
fn check_full_scan_refuses(case: &Case<'_>) -> Result<(), String> {
    let fs = Arc::new(case.image()?);
    let before = fs.snapshot();
    let dirs_before = fs.snapshot_dirs();
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    match Log::open_checked(dyn_fs, LOG_DIR, case.config.clone()) {
        // The active segment, trusted from the marker by the open: a checked open
        // ignores the marker and holds the segment to the active segment's rule,
        // so it cuts from the first invalid batch, before the damage, and reports
        // the cut (a strict open refuses it: `check_strict`).
        Ok((_, report)) if case.kind == FileKind::ActiveLog && cut_before_damage(case, &report) => {
            Ok(())
        }
        Ok((_, report)) => Err(format!(
            "a full-scan open accepted the damaged trusted segment (truncated {} bytes of segment {:?})",
            report.truncated_bytes, report.truncated_segment
        )),
        Err(e) => {
            let after = fs.snapshot();
            check_failed_open(case, &before, &after, dirs_before == fs.snapshot_dirs(), &fs)
                .map_err(|d| format!("full-scan open: {d}"))?;
            check_error(case, &e).map_err(|d| format!("full-scan open: {d}"))
        }
    }
}

/// The open cut the damaged file's tail, reported, from a position at or before
/// the damage.
fn cut_before_damage(case: &Case<'_>, report: &RecoveryReport) -> bool {
    let base = case
        .path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(filename::parse)
        .map(|(base, _)| base);
    let kept = (case.damaged.len() as u64).checked_sub(report.truncated_bytes);
    report.truncated_bytes > 0
        && report.truncated_segment == base
        && kept.is_some_and(|kept| kept <= case.damage.change.start())
}

/// A damaged temp file never becomes live content.
fn check_temp_not_trusted(
    case: &Case<'_>,
    before: &BTreeMap<PathBuf, Vec<u8>>,
    after: &BTreeMap<PathBuf, Vec<u8>>,
) -> Result<(), String> {
    // A derived file (outside the manifest) may become live: the open checks it
    // where it is used, and `check_recovery` holds a kept one to its lookups.
    if case.role != Role::Temp || case.kind == FileKind::TempDerived {
        return Ok(());
    }
    if !case.aliases.is_empty() {
        // A carried segment: the old content holds the same (damaged) inode, so
        // live content holding it says nothing about trusting the temp dir.
        return Ok(());
    }
    let Some(live) = case.final_path(Role::Temp) else {
        return Ok(());
    };
    let now = after.get(&live).map(Vec::as_slice);
    if now == Some(case.damaged) && before.get(&live).map(Vec::as_slice) != Some(case.damaged) {
        return Err(format!(
            "the damaged temp file became {}: an unchecked temp dir was trusted",
            live.display()
        ));
    }
    Ok(())
}

fn check_recovery(
    case: &Case<'_>,
    before: &BTreeMap<PathBuf, Vec<u8>>,
    after: &BTreeMap<PathBuf, Vec<u8>>,
    view: &LogView,
    report: &RecoveryReport,
    lookups: Result<(), String>,
) -> Result<Outcome, String> {
    let origin = origin(report);
    // Derived files are outside the manifest: rolling forward past a damaged one is
    // right, as long as the open did not trust it (checked below: a kept index must
    // give right lookups, a kept recovery point must have been ignored).
    if case.role == Role::Temp && origin == Role::Temp && case.kind != FileKind::TempDerived {
        return Err("recovery rolled forward to a damaged temp dir".into());
    }
    if case.kind == FileKind::Manifest {
        // A forged manifest whose file list no longer matches the temp dir is what
        // a damaged temp dir looks like to recovery (either may be wrong; the
        // checksums of both hold): rolling back to the old content, whole, loses
        // nothing and is allowed. Rolling forward on it, or accepting any other
        // damage, is not.
        let rolled_back = matches!(
            report.install.case,
            InstallCase::RolledBack | InstallCase::RolledBackFromBackup
        );
        let forged = matches!(case.damage.change, super::plan::Change::Forge { .. });
        let old = *view == case.point.baseline || case.point.allowed.contains(view);
        if !(forged && rolled_back && old) {
            return Err(format!(
                "a damaged manifest was accepted (install case {:?})",
                report.install.case
            ));
        }
    }
    let kept = check_kept_files(origin, before, after, report)?;
    let final_path = case.final_path(origin);
    let served = final_path
        .as_ref()
        .and_then(|p| after.get(p))
        .is_some_and(|bytes| bytes.as_slice() == case.damaged);
    if served {
        if case.kind == FileKind::Checkpoint {
            return Err("a damaged checkpoint was accepted".into());
        }
        if case.kind == FileKind::TempDerived
            && is_trust(case.path)
            && report.ignored_checkpoints.is_empty()
            && !case.damage.blind
        {
            return Err("a damaged recovery point from the temp dir was trusted".into());
        }
        let index = matches!(case.kind, FileKind::OffsetIndex | FileKind::TimeIndex);
        if index || (case.kind == FileKind::TempDerived && is_index(case.path)) {
            // Kept: it must still be valid, which its lookups show.
            lookups
                .map_err(|e| format!("a damaged index was kept and gives wrong lookups: {e}"))?;
        }
        if is_log(case.path) {
            if case.damage.blind && blind_holds(case, before) {
                return Ok(Outcome::Undetectable);
            }
            return Err("damaged .log bytes are served without an error".into());
        }
    }
    // A live file with another name in the temp dir (a carried segment, or a
    // concurrent cleaning's tail linked at its swap) is damaged there too: the temp
    // dir then fails its manifest and recovery may rightly roll back past it.
    let expected: Vec<&LogView> = if case.role == Role::Live && case.aliases.is_empty() {
        vec![&case.point.baseline]
    } else {
        std::iter::once(&case.point.baseline)
            .chain(&case.point.allowed)
            .collect()
    };
    if expected.contains(&view) {
        return Ok(Outcome::Recovered);
    }
    if is_trust(case.path) && case.damage.blind && expected.iter().any(|e| same_records(e, view)) {
        // A CRC-valid lie about what a trusted segment holds (its record count,
        // its largest timestamp): the open reads no segment data to see it, and
        // every record is still served at its offset.
        return Ok(Outcome::Undetectable);
    }
    if clean_point_reset(case, view, report) {
        // The clean point is a hint: an open that ignored the damaged one (and said
        // so) reads the log start in its place, and the next pass rebuilds it.
        let reset = |e: &&LogView| LogView {
            clean_point: view.log_start_offset,
            ..(*e).clone()
        };
        if expected.iter().map(reset).any(|e| e == *view) {
            return Ok(Outcome::Recovered);
        }
    }
    if let Some(cut) = kept.cut {
        let damaged_here = final_path.as_deref() == Some(cut.path.as_path());
        // A blind damage (valid by every rule of the format on its own, like a
        // lastOffsetDelta above the record count) that makes the *next* batch
        // impossible: recovery keeps the batch the format accepts and cuts from the
        // first it cannot, at a boundary, and reports the cut. Which of the two is
        // wrong the format cannot tell.
        if damaged_here
            && case.damage.blind
            && report.truncated_bytes > 0
            && batch_ranges(case.damaged)
                .iter()
                .any(|(_, end)| *end == cut.kept_bytes)
            && expected.iter().any(|e| {
                e.log_start_offset == view.log_start_offset && e.records.starts_with(&view.records)
            })
        {
            return Ok(Outcome::Undetectable);
        }
        if damaged_here && cut.kept_bytes > case.damage.change.start() {
            return Err(format!(
                "the cut at {} keeps damaged bytes from {}",
                cut.kept_bytes,
                case.damage.change.start()
            ));
        }
        if expected.iter().any(|e| is_prefix(view, e)) {
            return Ok(Outcome::Recovered);
        }
    }
    Err(format!(
        "silent acceptance: the log differs from the spec without an error: {}",
        case.point.baseline.diff(view).join(", ")
    ))
}

/// `view` serves what `expected` serves: the same start, next offset, clean point,
/// records and segment files; only what a summary says of a segment (its record
/// count, its largest timestamp) may differ.
fn same_records(expected: &LogView, view: &LogView) -> bool {
    let files = |v: &LogView| -> Vec<(i64, bool, u64)> {
        v.segments
            .iter()
            .map(|s| (s.base_offset, s.closed, s.bytes))
            .collect()
    };
    expected.log_start_offset == view.log_start_offset
        && expected.next_offset == view.next_offset
        && expected.clean_point == view.clean_point
        && expected.records == view.records
        && files(expected) == files(view)
}

/// True when the damaged file is the live clean point, the open reported it
/// ignored, and the log reads the log start as its clean point.
fn clean_point_reset(case: &Case<'_>, view: &LogView, report: &RecoveryReport) -> bool {
    let is_clean_point = case
        .path
        .file_name()
        .is_some_and(|name| name == checkpoint::CLEAN_POINT_NAME);
    let reported = report
        .ignored_checkpoints
        .iter()
        .any(|ignored| ignored.contains(checkpoint::CLEAN_POINT_NAME));
    is_clean_point && reported && view.clean_point == view.log_start_offset
}

/// Every lookup through the log's indexes is right: a read from each record's
/// offset starts at that record, and the offset for each timestamp (each record's,
/// and one above) is that of the first record at or above it, by a scan of `view`.
fn check_lookups(log: &Log, view: &LogView) -> Result<(), String> {
    for record in &view.records {
        let read = log
            .read(record.offset, 1)
            .map_err(|e| format!("read from {}: {e}", record.offset))?;
        let first = read.first().map(|r| r.offset);
        if first != Some(record.offset) {
            return Err(format!("a read from {} starts at {first:?}", record.offset));
        }
    }
    for timestamp in view
        .records
        .iter()
        .flat_map(|r| [r.ts, r.ts.saturating_add(1)])
    {
        let want = view
            .records
            .iter()
            .find(|r| r.ts >= timestamp)
            .map(|r| r.offset);
        let got = log
            .offset_for_timestamp(timestamp)
            .map_err(|e| format!("offset for timestamp {timestamp}: {e}"))?;
        if got != want {
            return Err(format!(
                "offset for timestamp {timestamp} is {got:?}, a scan gives {want:?}"
            ));
        }
    }
    Ok(())
}

/// A reported cut of the active segment.
struct Cut {
    path: PathBuf,
    kept_bytes: u64,
}

struct Kept {
    cut: Option<Cut>,
}

/// Every `.log` and non-index file of the chosen content survives byte for byte in
/// the live dir (retention recovery may remove whole segments below the
/// checkpoint); only the last `.log` may lose a reported tail, at a batch
/// boundary; nothing else is left next to the log.
fn check_kept_files(
    origin: Role,
    before: &BTreeMap<PathBuf, Vec<u8>>,
    after: &BTreeMap<PathBuf, Vec<u8>>,
    report: &RecoveryReport,
) -> Result<Kept, String> {
    let from = dir_of(origin);
    let live = Path::new(LOG_DIR);
    let active = last_log(before, &from);
    let removed: Vec<String> = report.retention.removed_files.clone();
    let mut cut = None;
    for (path, bytes) in before.iter().filter(|(p, _)| p.parent() == Some(&from)) {
        let Some(name) = path.file_name() else {
            continue;
        };
        let name_str = name.to_string_lossy().into_owned();
        if is_index(path) || is_trust(path) || name_str == checkpoint::CHECKPOINT_TMP_NAME {
            continue;
        }
        let target = live.join(name);
        match after.get(&target) {
            None if removed.contains(&name_str) => {}
            None => return Err(format!("recovery deleted {}", path.display())),
            Some(now) if now == bytes => {}
            Some(now) if active.as_deref() == Some(path.as_path()) && bytes.starts_with(now) => {
                let cut_bytes = (bytes.len() - now.len()) as u64;
                let base = filename::parse(&name_str).map(|(b, _)| b);
                if report.truncated_bytes != cut_bytes || report.truncated_segment != base {
                    return Err(format!(
                        "the active segment lost {cut_bytes} bytes but the report says {} bytes of {:?}",
                        report.truncated_bytes, report.truncated_segment
                    ));
                }
                let kept_bytes = now.len() as u64;
                let boundary =
                    kept_bytes == 0 || batch_ranges(bytes).iter().any(|r| r.1 == kept_bytes);
                if !boundary {
                    return Err(format!(
                        "the active segment was cut at {kept_bytes}, not at a batch boundary"
                    ));
                }
                cut = Some(Cut {
                    path: target,
                    kept_bytes,
                });
            }
            Some(now) => {
                return Err(format!(
                    "recovery changed {} ({} -> {} bytes){}",
                    path.display(),
                    bytes.len(),
                    now.len(),
                    if is_log(path) {
                        ": only the active segment's torn tail may be cut"
                    } else {
                        ""
                    }
                ))
            }
        }
    }
    for path in after.keys() {
        let new = path.parent() == Some(live)
            && !is_index(path)
            && !is_trust(path)
            && !before.contains_key(&from.join(path.file_name().unwrap_or_default()));
        if new {
            return Err(format!("recovery created {}", path.display()));
        }
    }
    let left = after
        .keys()
        .filter(|p| !p.starts_with(live))
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>();
    if !left.is_empty() {
        return Err(format!("leftovers after recovery: {left:?}"));
    }
    Ok(Kept { cut })
}

fn check_second_open(
    case: &Case<'_>,
    dyn_fs: Arc<dyn FileSystem>,
    fs: &SimFs,
    view: &LogView,
) -> Result<(), String> {
    let before = fs.snapshot();
    let (log, report) = Log::open_with(dyn_fs, LOG_DIR, case.config.clone())
        .map_err(|e| format!("the second open failed: {e}"))?;
    let again = engine::view(&log).map_err(|e| format!("read after second open failed: {e}"))?;
    if !report.is_clean() {
        return Err(format!(
            "the second open still repaired something (indexes not rebuilt?): {report:?}"
        ));
    }
    if again != *view || fs.snapshot() != before {
        return Err("the second open changed the log".into());
    }
    Ok(())
}

/// The strict recovery mode on the same damaged image: where the default open cut
/// an active segment's tail with CRC-valid batches after its damage, a strict open
/// refuses with `BeforeValidBatches` at the first invalid batch (in the tail the
/// default open cut) and changes nothing but what any failed open may; where it cut a torn tail, the strict open
/// recovers the same log.
fn check_strict(case: &Case<'_>, report: &RecoveryReport, view: &LogView) -> Result<(), String> {
    // Only a cut tail tells the modes apart.
    if case.config.recovery_mode != RecoveryMode::TornTail || report.truncated_tail.is_none() {
        return Ok(());
    }
    let fs = Arc::new(case.image()?);
    let before = fs.snapshot();
    let dirs_before = fs.snapshot_dirs();
    let strict = LogConfig {
        recovery_mode: RecoveryMode::Strict,
        ..case.config.clone()
    };
    check_tail_kind(case, report, view)?;
    let opened = Log::open_with(fs.clone() as Arc<dyn FileSystem>, LOG_DIR, strict);
    let refuses = report
        .truncated_tail
        .as_ref()
        .is_some_and(|t| t.kind == TailKind::CorruptionBeforeValidBatches);
    match opened {
        Err(Error::Corrupt {
            path,
            position,
            kind: CorruptKind::BeforeValidBatches { .. },
        }) if refuses => {
            // As any failed open: nothing changed but what the protocol
            // recoveries that run before the segment scan leave.
            let after = fs.snapshot();
            let dirs_same = dirs_before == fs.snapshot_dirs();
            check_failed_open(case, &before, &after, dirs_same, &fs)
                .map_err(|e| format!("a strict open that refused: {e}"))?;
            let segment = report.truncated_segment.expect("a cut names its segment");
            let cut = Path::new(LOG_DIR).join(filename::build(segment, filename::LOG_SUFFIX));
            let len = fs.len(&cut).map_err(|e| format!("{}: {e}", cut.display()))?;
            let at = len - report.truncated_bytes;
            // The damage's own position in the first invalid batch (a CRC
            // mismatch names the CRC field): in the tail the default open cut.
            if path != cut || !(at..len).contains(&position) {
                return Err(format!(
                    "a strict open refused at {}:{position}, outside the tail the default open cut at {}:{at}",
                    path.display(),
                    cut.display()
                ));
            }
            Ok(())
        }
        Err(e) if refuses => Err(format!(
            "a strict open of a tail with CRC-valid batches after its damage failed with {e}, not BeforeValidBatches"
        )),
        Ok(_) if refuses => Err(format!(
            "a strict open accepted a tail with CRC-valid batches after its damage (the default open cut {} bytes of segment {:?})",
            report.truncated_bytes, report.truncated_segment
        )),
        Ok((log, strict_report)) => {
            let strict_view =
                engine::view(&log).map_err(|e| format!("read after a strict open failed: {e}"))?;
            if strict_view != *view || strict_report.truncated_bytes != report.truncated_bytes {
                return Err(format!(
                    "a strict open recovered another log than the default open (cut {} bytes, not {})",
                    strict_report.truncated_bytes, report.truncated_bytes
                ));
            }
            Ok(())
        }
        Err(e) => Err(format!(
            "a strict open failed where the default open cut a torn tail: {e}"
        )),
    }
}

/// The judge's own answer to "do CRC-valid batches follow the damage", from the
/// undamaged file rather than the engine's classification: where the damaged file
/// is the one whose tail the default open cut, the batches
/// of the undamaged file that lie wholly past the cut, hold records, end at or past
/// the recovered log's next offset and that the damage left byte for byte intact
/// are batches the search past the tail must find. Any such batch makes the tail
/// corruption before valid batches, and the report must count at least those;
/// none, and the damage itself may still have left a CRC-valid batch (the engine
/// may count more), so only the first direction is checked.
fn check_tail_kind(case: &Case<'_>, report: &RecoveryReport, view: &LogView) -> Result<(), String> {
    let Some(segment) = report.truncated_segment else {
        return Ok(());
    };
    let cut = Path::new(LOG_DIR).join(filename::build(segment, filename::LOG_SUFFIX));
    let damaged_is_cut = case.final_path(origin(report)).as_deref() == Some(cut.as_path())
        || case.aliases.contains(&cut);
    if !damaged_is_cut {
        return Ok(());
    }
    // The image before recovery holds the damaged bytes whole; the cut keeps a prefix.
    let at = (case.damaged.len() as u64).saturating_sub(report.truncated_bytes);
    let intact = batch_ranges(case.original)
        .into_iter()
        .filter(|&(start, end)| {
            let range = start as usize..end as usize;
            start >= at
                && case.damaged.get(range.clone()) == case.original.get(range.clone())
                && seglog::format::batch::decode_header(&case.original[range])
                    .is_ok_and(|h| h.record_count > 0 && h.last_offset() >= view.next_offset)
        })
        .count() as u64;
    let found = report
        .truncated_tail
        .as_ref()
        .map_or(0, |t| t.valid_after.batches);
    if intact > found {
        return Err(format!(
            "the default open cut {}:{at} and found {found} CRC-valid batches after it, but {intact} batches of the undamaged file lie past the cut untouched by the damage",
            cut.display()
        ));
    }
    Ok(())
}

/// A failed open is stable: opening again fails the same way and changes nothing
/// (the protocol recoveries of the first attempt left a state they accept as is).
fn check_fails_again(
    case: &Case<'_>,
    dyn_fs: Arc<dyn FileSystem>,
    fs: &SimFs,
    first: &Error,
) -> Result<(), String> {
    let before = fs.snapshot();
    match Log::open_with(dyn_fs, LOG_DIR, case.config.clone()) {
        Ok(_) => Err(format!(
            "a second open succeeds after the first failed with: {first}"
        )),
        Err(again) if again.to_string() != first.to_string() => Err(format!(
            "a second open fails differently: {again} (first: {first})"
        )),
        Err(_) if fs.snapshot() != before => Err(format!(
            "a second failed open changed files: {}",
            changes(&before, &fs.snapshot())
        )),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seglog::panics::join_scoped;

    /// A cleaner thread's panic reaches the violation with its own message, not
    /// the join's.
    #[test]
    fn a_panicking_cleaner_thread_names_its_message_in_the_violation() {
        let violation = catch_cleaning(CompactionPolicy::Kafka, || {
            std::thread::scope(|scope| {
                let reader = scope.spawn(|| -> u32 { panic!("batch at {} has no records", 12) });
                join_scoped(reader, "the map reader")
            })
        })
        .expect_err("the cleaning panicked");
        assert_eq!(
            violation,
            "a Kafka cleaning panicked: the map reader panicked: batch at 12 has no records"
        );
        let fine = catch_cleaning(CompactionPolicy::Seed, || 5);
        assert_eq!(fine, Ok(5));
    }
}

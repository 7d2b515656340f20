//! The crash sweep: for a workload, crash before every mutating file-system operation,
//! enumerate the disk images a crash can leave (process crash and power loss, on
//! [`SimFs`]), recover each with `Log::open`, and hold the result against the spec.
//!
//! What is checked for every image (docs/design.md section 8):
//! * recovery succeeds (no error, no panic);
//! * the recovered log equals the one spec state the image's durable content dictates
//!   (`oracle.rs`): among the states from the last durability point before the
//!   interrupted operation up to the state right after it, the side of a commit point
//!   the image is on (manifest, checkpoint) and the appends whose batches it holds whole
//!   (so nothing flushed is lost, an interrupted retention or compaction is exactly old
//!   or exactly new, and it is the right one of the two);
//! * no leftovers: no temp/backup directory, manifest or temp file remains;
//! * the checkpoints of model (e) held: no crash leaves a recovery point or marker
//!   that fails to decode, nor a trusted segment whose indexes must be rebuilt, and
//!   the open of an image taken right after a clean close reads no segment data,
//!   nor, of one an install's recovery rolled forward, any closed segment's;
//! * recovery is idempotent: a second open changes no byte and gives the same view;
//! * after recovering a process-crash image, a record appended and flushed survives
//!   every power loss (recovery leaves what it found durable).

pub mod ablation;
mod allowed;
pub mod io_errors;
pub mod oracle;
mod workloads;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::workload::engine::{self, Variant};
use crate::workload::LogView;
use seglog::fs::failpoint::{self, Recorder};
use seglog::fs::sim::{CrashImage, CrashMode, Persistence, SimFs};
use seglog::fs::FileSystem;
use seglog::log::Log;

pub use allowed::{Allowed, States};
pub use workloads::{named_workloads, Workload};

/// Where the sweep keeps the log inside the simulated file system.
pub const LOG_DIR: &str = "/data/log";
/// The parent of [`LOG_DIR`]: where the install protocol's siblings live.
pub const PARENT_DIR: &str = "/data";

/// How hard to look.
#[derive(Debug, Clone, Serialize)]
pub struct SweepOptions {
    /// Disk images enumerated per crash point under power loss (process crash adds one).
    pub images_per_point: usize,
    /// Also crash during recovery of the first `recovery_crash_images` images of each
    /// point, at every recovery operation, and recover again.
    pub recovery_crash_images: usize,
    /// Which directory operations a power loss may take (every image, recovery's
    /// own crash images included).
    pub persistence: Persistence,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            images_per_point: 32,
            // The "everything completed" and the "only durable" image of each point:
            // the second is where recovery has work to do (truncation, index rebuilds).
            recovery_crash_images: 2,
            persistence: Persistence::AnySubset,
        }
    }
}

/// One failed check, with everything needed to reproduce it.
#[derive(Debug, Clone, Serialize)]
pub struct Violation {
    pub workload: String,
    /// The crash happened before this mutating file-system operation (0-based).
    pub crash_before_op: u64,
    /// Index of the workload operation that was running, `None` for the initial open.
    pub interrupted_op: Option<usize>,
    /// `process` or `power_loss`.
    pub mode: String,
    /// What the crash took away (directory operations, file bytes).
    pub lost: Vec<String>,
    /// When the crash was nested in recovery: the recovery operation it came before.
    pub recovery_crash_before_op: Option<u64>,
    /// What the nested crash (a power loss during recovery) took away.
    pub recovery_lost: Vec<String>,
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "workload {} crash before fs op {} (during op {}) {} lost [{}]{}: {}",
            self.workload,
            self.crash_before_op,
            self.interrupted_op
                .map_or_else(|| "open".to_string(), |i| i.to_string()),
            self.mode,
            self.lost.join("; "),
            self.recovery_crash_before_op
                .map(|k| format!(
                    " then power loss during recovery before op {k} lost [{}]",
                    self.recovery_lost.join("; ")
                ))
                .unwrap_or_default(),
            self.detail
        )
    }
}

/// Per-workload numbers.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadReport {
    pub workload: String,
    /// Mutating file-system operations of an uninterrupted run.
    pub operations: u64,
    pub crash_points: u64,
    pub disk_images: u64,
    pub violations: Vec<Violation>,
    pub seconds: f64,
}

/// Runs `workload` on `fs` until the end or until the simulated crash. Returns the
/// index of the interrupted operation (`Some(None)` when the initial open crashed,
/// `None` when the run completed), or an error description for a non-crash failure.
pub fn run_until_crash(
    workload: &Workload,
    fs: &Arc<SimFs>,
) -> Result<Option<Option<usize>>, String> {
    let variant = Variant::parse(&workload.variant)?;
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let mut log = match Log::open_with(dyn_fs, LOG_DIR, workload.config.clone()) {
        Ok((log, _)) => log,
        Err(_) if fs.is_crashed() => return Ok(Some(None)),
        Err(e) => return Err(format!("initial open failed: {e}")),
    };
    for (i, op) in workload.ops.iter().enumerate() {
        match engine::apply_with(&mut log, op, variant) {
            Ok(_) => {}
            Err(_) if fs.is_crashed() => return Ok(Some(Some(i))),
            Err(e) => return Err(format!("op {i} {op} failed: {e}")),
        }
    }
    Ok(None)
}

/// Runs `workload` to the end on `fs` (no crash expected).
pub fn run_to_end(workload: &Workload, fs: &Arc<SimFs>) -> Result<(), String> {
    match run_until_crash(workload, fs)? {
        None => Ok(()),
        Some(_) => Err("the run crashed without a crash point".into()),
    }
}

/// Counts the mutating file-system operations of an uninterrupted run.
pub fn count_operations(workload: &Workload) -> Result<u64, String> {
    count_operations_with(workload, &|_| {})
}

/// [`count_operations`] on a file system prepared by `setup`.
fn count_operations_with(workload: &Workload, setup: &dyn Fn(&SimFs)) -> Result<u64, String> {
    Ok(run_counted(workload, setup)?.operations)
}

/// What an uninterrupted run tells the sweep about its crash points.
struct Counted {
    /// Mutating operations of the run.
    operations: u64,
    /// The crash points right after each clean close completed (before the reopen's
    /// first operation), where recovery must read no segment data.
    clean_points: Vec<u64>,
    /// The operation numbers of the recovery-point renames of opens that follow a
    /// clean close in the same workload operation (the open of `drop_indexes`),
    /// each with the number of that close's last operation.
    reopen_point_renames: Vec<(u64, u64)>,
}

impl Counted {
    /// The recovery-point rename of the reopen the crash before operation `k`
    /// interrupted after its rename, if any.
    fn reopen_rename_before(&self, k: u64) -> Option<u64> {
        self.reopen_point_renames
            .iter()
            .filter(|(close, rename)| *close < k && *rename < k)
            .map(|(_, rename)| *rename)
            .next_back()
            .filter(|rename| {
                // Only if no later close started another operation in between.
                !self.clean_points.iter().any(|c| *c > *rename && *c <= k)
            })
    }
}

/// An uninterrupted run on a file system prepared by `setup` ([`Counted`]).
fn run_counted(workload: &Workload, setup: &dyn Fn(&SimFs)) -> Result<Counted, String> {
    let fs = Arc::new(SimFs::new());
    setup(&fs);
    let probe = Arc::clone(&fs);
    let recorder = Recorder::start_with_probe(move || probe.mutating_ops());
    let run = run_until_crash(workload, &fs);
    let hits = recorder.hits_with_probe();
    drop(recorder);
    match run? {
        None => {}
        Some(_) => return Err("uninterrupted run crashed".into()),
    }
    // The close's directory fsync is operation k; the crash before k + 1 finds the
    // closed log.
    let clean_points: Vec<u64> = hits
        .iter()
        .filter(|(name, _)| *name == failpoint::LOG_CLOSE_SYNC_DIR)
        .map(|(_, k)| k + 1)
        .collect();
    let mut reopen_point_renames = Vec::new();
    let mut last_close = None;
    for (name, k) in &hits {
        match *name {
            failpoint::LOG_CLOSE_SYNC_DIR => last_close = Some(*k),
            failpoint::LOG_RECOVERY_RENAME_RECOVERY_POINT => {
                if let Some(close) = last_close.take() {
                    reopen_point_renames.push((close, *k));
                }
            }
            _ => {}
        }
    }
    Ok(Counted {
        operations: fs.mutating_ops(),
        clean_points,
        reopen_point_renames,
    })
}

/// True if `lost` holds the rename that makes a recovery point current.
fn lost_point_rename(lost: &[seglog::fs::sim::LostItem]) -> bool {
    let rename = format!(
        "rename {} -> {}",
        seglog::format::recovery_point::RECOVERY_POINT_TMP_NAME,
        seglog::format::recovery_point::RECOVERY_POINT_NAME
    );
    lost.iter()
        .any(|item| matches!(item, seglog::fs::sim::LostItem::DirOp { op, .. } if *op == rename))
}

/// Transactions (workloads with `Op::AppendTxn`): no `.txnindex` survives recovery
/// without its segment, and the transaction state pass (the first transactional
/// call) builds and, where a crash tore or lost one, rewrites every `.txnindex`;
/// after it, each holds exactly the entries a second pass expects.
fn check_txn_indexes(workload: &Workload, log: &Log, fs: &SimFs) -> Result<(), String> {
    use seglog::format::filename::{self, TXN_INDEX_SUFFIX};
    if !workload
        .ops
        .iter()
        .any(|op| matches!(op, crate::workload::Op::AppendTxn { .. }))
    {
        return Ok(());
    }
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    for name in fs.list_dir(Path::new(LOG_DIR)).unwrap_or_default() {
        if let Some((base, TXN_INDEX_SUFFIX)) = filename::parse(&name) {
            if !bases.contains(&base) {
                return Err(format!("an orphan {name} survived recovery"));
            }
        }
    }
    log.txn_index_rebuilds()
        .map_err(|e| format!("the transaction state pass failed: {e}"))?;
    // A fresh handle checks the files the first pass left.
    let (again, _) = Log::open_read_only(Arc::new(duplicate(fs)), LOG_DIR, log.config().clone())
        .map_err(|e| format!("reopen failed: {e}"))?;
    let rebuilt = again
        .txn_index_rebuilds()
        .map_err(|e| format!("the transaction state pass failed: {e}"))?;
    if !rebuilt.is_empty() {
        return Err(format!(
            "the state pass left wrong .txnindex files: {rebuilt:?}"
        ));
    }
    Ok(())
}

/// A crash image with an install's temp dir, backup or manifest beside the log:
/// a read-only open (no writer lock, so it cannot tell a live writer's install
/// from one a crash cut short) must refuse it as `Ambiguous`, naming exactly those
/// paths, and change nothing; the writable open after it decides the install.
/// True if one was pending.
fn read_only_refuses_a_pending_install(
    workload: &Workload,
    fs: &Arc<SimFs>,
) -> Result<bool, String> {
    let pending = seglog::install::InstallPaths::new(Path::new(LOG_DIR))
        .map_err(|e| e.to_string())?
        .pending(&**fs);
    if pending.is_empty() {
        return Ok(false);
    }
    let before = fs.mutating_ops();
    let opened = Log::open_read_only(
        Arc::clone(fs) as Arc<dyn FileSystem>,
        LOG_DIR,
        workload.config.clone(),
    );
    match opened {
        Err(seglog::Error::Ambiguous { dirs, .. }) if dirs == pending => {}
        Err(e) => {
            return Err(format!(
                "a read-only open with an install pending ({pending:?}) failed otherwise: {e}"
            ))
        }
        Ok(_) => {
            return Err(format!(
                "a read-only open served the log with an install pending ({pending:?})"
            ))
        }
    }
    if fs.mutating_ops() != before {
        return Err("a read-only open changed the image".into());
    }
    Ok(true)
}

/// Names in the log's parent and the log dir that must not survive recovery.
pub fn leftovers(fs: &dyn FileSystem) -> Vec<String> {
    let mut out = Vec::new();
    let log_name = Path::new(LOG_DIR)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lock_name = format!("{log_name}{}", seglog::log::LOCK_SUFFIX);
    if let Ok(names) = fs.list_dir(Path::new(PARENT_DIR)) {
        out.extend(
            names
                .into_iter()
                .filter(|n| *n != log_name)
                // The writer lock's file stays, empty (docs/design.md section 6e).
                .filter(|n| {
                    *n != lock_name
                        || fs
                            .len(&Path::new(PARENT_DIR).join(n))
                            .map_or(true, |l| l > 0)
                })
                .map(|n| format!("{PARENT_DIR}/{n}")),
        );
    }
    if let Ok(names) = fs.list_dir(Path::new(LOG_DIR)) {
        out.extend(
            names
                .into_iter()
                .filter(|n| {
                    n.ends_with(".tmp") || n.contains(".compact-") || n.ends_with(".deleted")
                })
                .map(|n| format!("{LOG_DIR}/{n}")),
        );
    }
    out
}

/// Recovers one disk image and checks it. Returns the recovered view.
pub fn check_image(
    workload: &Workload,
    allowed: &Allowed,
    image: &SimFs,
) -> Result<LogView, String> {
    check_image_with(workload, allowed, image, false)
}

/// [`check_image`]; `after_clean_close`: the image was taken right after a clean
/// close, so recovery must trust every segment and read no segment data.
pub fn check_image_with(
    workload: &Workload,
    allowed: &Allowed,
    image: &SimFs,
    after_clean_close: bool,
) -> Result<LogView, String> {
    let fs = Arc::new(duplicate(image));
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    // A read-only open first (it changes nothing): it refuses a pending install,
    // and otherwise reports the tail a writable open cuts (before the log's first
    // segment exists there is nothing to inspect; the writable open creates it).
    let inspected = if read_only_refuses_a_pending_install(workload, &fs)?
        || seglog::segment::list_segments(&*fs, Path::new(LOG_DIR))
            .map_or(true, |bases| bases.is_empty())
    {
        None
    } else {
        let (_, inspected) = Log::open_read_only(dyn_fs.clone(), LOG_DIR, workload.config.clone())
            .map_err(|e| format!("the read-only open failed: {e}"))?;
        Some(inspected)
    };
    let (log, report) = Log::open_with(dyn_fs.clone(), LOG_DIR, workload.config.clone())
        .map_err(|e| format!("recovery failed: {e}"))?;
    if let Some(inspected) = inspected {
        let cut = |r: &seglog::log::RecoveryReport| {
            (r.truncated_segment, r.truncated_bytes, r.truncated_batches)
        };
        if cut(&inspected) != cut(&report) {
            return Err(format!(
                "the read-only open reported the cut (segment, bytes, batches) {:?}, the \
                 writable open made {:?}",
                cut(&inspected),
                cut(&report)
            ));
        }
    }
    // A crash alone never damages a checkpoint (each is fsynced before its rename)
    // nor leaves a trusted segment whose index files must be rebuilt (they are
    // fsynced before the recovery point or marker vouches for them).
    if !report.ignored_checkpoints.is_empty() {
        return Err(format!(
            "a crash left a damaged checkpoint: {:?}",
            report.ignored_checkpoints
        ));
    }
    // The exception: the crash interrupted an operator's deletion of index files
    // (`Op::DropIndexes`) or the open rebuilding them (derived files, written
    // without an fsync until a recovery point vouches for them).
    if !report.rescanned.is_empty() && !allowed.index_files_dropped() {
        return Err(format!(
            "a crash left trusted segments to rescan: {:?}",
            report.rescanned
        ));
    }
    // An install recovered forward finds the new directory exactly as built: its
    // recovery point (model (b), `installed_content_trusted`) vouches for every
    // closed segment, so only the active one is read.
    let committed = matches!(
        report.install.case,
        seglog::install::InstallCase::CommittedLiveIsNew
            | seglog::install::InstallCase::CommittedRollForward
    );
    if committed && report.trusted_segments + 1 != report.segments {
        return Err(format!(
            "the new content of a committed install opened with {} of {} closed segments \
             trusted (its recovery point is missing or stale)",
            report.trusted_segments,
            report.segments.saturating_sub(1)
        ));
    }
    if after_clean_close && (!report.clean_shutdown || report.scanned_segments > 0) {
        return Err(format!(
            "the open after a clean close scanned {} segments ({} bytes), clean shutdown \
             marker {}",
            report.scanned_segments,
            report.scanned_bytes,
            if report.clean_shutdown {
                "found"
            } else {
                "missing"
            }
        ));
    }
    let view = engine::view(&log).map_err(|e| format!("read after recovery failed: {e}"))?;
    check_txn_indexes(workload, &log, &fs)?;
    drop(log);
    if let Some(diff) = allowed.mismatch(&view) {
        return Err(format!("recovered log is not an allowed state: {diff}"));
    }
    let left = leftovers(&*dyn_fs);
    if !left.is_empty() {
        return Err(format!("leftovers after recovery: {left:?}"));
    }
    let before = fs.snapshot();
    let (log, _) = Log::open_with(dyn_fs, LOG_DIR, workload.config.clone())
        .map_err(|e| format!("second open failed: {e}"))?;
    let again = engine::view(&log).map_err(|e| format!("read after second open failed: {e}"))?;
    drop(log);
    if again != view {
        return Err(format!(
            "second open changed the log: {:?}",
            view.diff(&again)
        ));
    }
    if fs.snapshot() != before {
        return Err("second open modified files: recovery is not idempotent".into());
    }
    Ok(view)
}

/// Recovers a process-crash image, appends one record and flushes it, then holds
/// every power-loss image of that to the flush: the record must be there. A process
/// crash leaves the crashed run's directory entries in the page cache; recovery must
/// make what it found durable before the log builds on it (model (e), variant
/// `no-open-dir-sync`: a roll's new segment whose entry never reached the disk).
pub fn check_append_after_recovery(
    workload: &Workload,
    image: &SimFs,
    images_per_point: usize,
) -> Result<u64, String> {
    let fs = Arc::new(duplicate(image));
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let (mut log, _) = Log::open_with(dyn_fs, LOG_DIR, workload.config.clone())
        .map_err(|e| format!("recovery failed: {e}"))?;
    let probe = seglog::format::NewRecord::new(
        Some(b"recovery-probe".to_vec()),
        Some(b"flushed".to_vec()),
        0,
    );
    let appended = log
        .append(std::slice::from_ref(&probe))
        .and_then(|info| log.flush().map(|()| info))
        .map_err(|e| format!("append and flush after recovery failed: {e}"))?;
    std::mem::forget(log); // a crash: no destructor runs
    let mut checked = 0;
    for lost in fs.crash_images(CrashMode::PowerLoss, images_per_point.max(1)) {
        checked += 1;
        let again: Arc<dyn FileSystem> = Arc::new(lost.fs);
        let found = Log::open_with(again, LOG_DIR, workload.config.clone())
            .and_then(|(log, _)| log.read(appended.base_offset, usize::MAX))
            .map_err(|e| {
                format!(
                    "a record flushed after recovery is gone (lost {:?}): {e}",
                    lost.lost
                )
            })?;
        let kept = found
            .first()
            .is_some_and(|r| r.offset == appended.base_offset && r.value == Some(&b"flushed"[..]));
        if !kept {
            return Err(format!(
                "a record flushed after recovery is gone (lost {:?})",
                lost.lost
            ));
        }
    }
    Ok(checked)
}

/// Crashes recovery of `image` before each of its operations, then recovers again.
fn check_recovery_crashes(
    workload: &Workload,
    expected: &dyn Fn(&SimFs) -> Allowed,
    image: &SimFs,
    images_per_point: usize,
    mut on_violation: impl FnMut(u64, Vec<String>, String),
) -> u64 {
    // How many operations does a clean recovery of this image take?
    let probe = Arc::new(duplicate(image));
    let start = probe.mutating_ops();
    let dyn_probe: Arc<dyn FileSystem> = probe.clone();
    if Log::open_with(dyn_probe, LOG_DIR, workload.config.clone()).is_err() {
        return 0; // reported by check_image
    }
    let recovery_ops = probe.mutating_ops() - start;
    let mut images = 0;
    for k in 0..recovery_ops {
        let fs = Arc::new(duplicate(image));
        fs.set_crash_before(fs.mutating_ops() + k);
        let dyn_fs: Arc<dyn FileSystem> = fs.clone();
        if Log::open_with(dyn_fs, LOG_DIR, workload.config.clone()).is_ok() {
            continue; // the crash point was not reached (recovery took another path)
        }
        for nested in crash_images(&fs, images_per_point) {
            images += 1;
            if let Err(detail) = check_image(workload, &expected(&nested.fs), &nested.fs) {
                on_violation(
                    k,
                    nested.lost.iter().map(ToString::to_string).collect(),
                    detail,
                );
            }
        }
    }
    images
}

/// The images of one crash point: first what a process crash leaves (everything
/// completed, unsynced directory operations and data still pending, so a later power
/// loss, e.g. during recovery, can still lose them), then the power-loss images.
fn crash_images(fs: &SimFs, images_per_point: usize) -> Vec<CrashImage> {
    let mut images = fs.crash_images(CrashMode::Process, 1);
    images.extend(fs.crash_images(CrashMode::PowerLoss, images_per_point.max(1)));
    images
}

/// A copy of a (settled) image, to open without changing the original.
pub fn duplicate(fs: &SimFs) -> SimFs {
    fs.crash_images(CrashMode::Process, 1)
        .into_iter()
        .next()
        .map(|image| image.fs)
        .unwrap_or_default()
}

/// Sweeps one workload.
pub fn sweep(
    workload: &Workload,
    options: &SweepOptions,
    progress: impl FnMut(u64, u64),
) -> WorkloadReport {
    sweep_with(workload, options, &|_| {}, progress)
}

/// [`sweep`] with every run of the workload on a file system prepared by `setup`
/// (the sync ablation makes one sync call a no-op there). Recovery runs on the
/// images as they are.
pub fn sweep_with(
    workload: &Workload,
    options: &SweepOptions,
    setup: &dyn Fn(&SimFs),
    progress: impl FnMut(u64, u64),
) -> WorkloadReport {
    sweep_selected(workload, options, setup, &|_| true, progress)
}

/// [`sweep_with`] at the crash points `select` accepts only (`k` = before mutating
/// operation `k`, `operations` = after the last): a shard of the sweep
/// (`seglog sweep --shard K/N`). The points of disjoint selections that together
/// accept every `k` add up to the whole sweep.
pub fn sweep_selected(
    workload: &Workload,
    options: &SweepOptions,
    setup: &dyn Fn(&SimFs),
    select: &dyn Fn(u64) -> bool,
    mut progress: impl FnMut(u64, u64),
) -> WorkloadReport {
    sweep_selected_dyn(workload, options, setup, select, &mut progress)
}

/// [`sweep_selected`]'s body, not generic, so that it is compiled (and optimised)
/// with the library rather than in each caller's crate.
fn sweep_selected_dyn(
    workload: &Workload,
    options: &SweepOptions,
    setup: &dyn Fn(&SimFs),
    select: &dyn Fn(u64) -> bool,
    progress: &mut dyn FnMut(u64, u64),
) -> WorkloadReport {
    let started = Instant::now();
    let mut report = WorkloadReport {
        workload: workload.name.clone(),
        operations: 0,
        crash_points: 0,
        disk_images: 0,
        violations: Vec::new(),
        seconds: 0.0,
    };
    let setup = &|fs: &SimFs| {
        fs.set_persistence(options.persistence);
        setup(fs);
    };
    let states = Allowed::states(workload);
    let counted = match run_counted(workload, setup) {
        Ok(counted) => counted,
        Err(detail) => {
            report.violations.push(violation(
                workload,
                0,
                None,
                "setup",
                Vec::new(),
                None,
                detail,
            ));
            return report;
        }
    };
    let total = counted.operations;
    report.operations = total;
    // Before every operation, and once after the last: a power loss after the
    // workload returned may still take what its last operation left unsynced.
    for k in (0..=total).filter(|k| select(*k)) {
        progress(k, total);
        let fs = Arc::new(SimFs::new());
        setup(&fs);
        fs.set_crash_before(k);
        let interrupted = match run_until_crash(workload, &fs) {
            Ok(Some(interrupted)) => interrupted,
            // The crash after the last operation: nothing was running.
            Ok(None) if k == total => Some(workload.ops.len()),
            Ok(None) => continue,
            Err(detail) => {
                report.violations.push(violation(
                    workload,
                    k,
                    None,
                    "run",
                    Vec::new(),
                    None,
                    detail,
                ));
                continue;
            }
        };
        report.crash_points += 1;
        for (n, image) in crash_images(&fs, options.images_per_point)
            .into_iter()
            .enumerate()
        {
            // Exact: what this image holds durably decides the one state it must
            // recover to; a crash during its recovery must still end there.
            let mut allowed = states.exact_after_crash(workload, interrupted, &image.fs);
            // The open after an operator dropped index files wrote its recovery point
            // and the image kept it: that point vouches for what it names, so no
            // rescan is forgiven (model (e), `sync_scanned_dir` and `sync_scanned`).
            if counted.reopen_rename_before(k).is_some() && !lost_point_rename(&image.lost) {
                allowed.forbid_index_rescans();
            }
            report.disk_images += 1;
            let mode = if image.lost.is_empty() {
                "process"
            } else {
                "power_loss"
            };
            let lost: Vec<String> = image.lost.iter().map(ToString::to_string).collect();
            let after_clean_close = counted.clean_points.contains(&k);
            if let Err(detail) = check_image_with(workload, &allowed, &image.fs, after_clean_close)
            {
                report.violations.push(violation(
                    workload,
                    k,
                    interrupted,
                    mode,
                    lost.clone(),
                    None,
                    detail,
                ));
                continue;
            }
            if n == 0 {
                // The process-crash image: recovery must leave a durable base.
                match check_append_after_recovery(workload, &image.fs, 8) {
                    Ok(checked) => report.disk_images += checked,
                    Err(detail) => {
                        report.violations.push(violation(
                            workload,
                            k,
                            interrupted,
                            mode,
                            lost.clone(),
                            None,
                            detail,
                        ));
                        continue;
                    }
                }
            }
            if n < options.recovery_crash_images {
                let mut nested_violations = Vec::new();
                // A power-loss image is durable as a whole: its facts decide, and recovery
                // crashed anywhere must still end there. The process image still holds
                // unsynced data and directory operations, so what a power loss during
                // its recovery leaves decides.
                let process = n == 0;
                let expected = |nested: &SimFs| {
                    if process {
                        states.exact_after_crash(workload, interrupted, nested)
                    } else {
                        allowed.clone()
                    }
                };
                report.disk_images += check_recovery_crashes(
                    workload,
                    &expected,
                    &image.fs,
                    options.images_per_point.min(4),
                    |rk, nested_lost, detail| nested_violations.push((rk, nested_lost, detail)),
                );
                for (rk, nested_lost, detail) in nested_violations {
                    let mut v = violation(
                        workload,
                        k,
                        interrupted,
                        mode,
                        lost.clone(),
                        Some(rk),
                        detail,
                    );
                    v.recovery_lost = nested_lost;
                    report.violations.push(v);
                }
            }
        }
    }
    // Smallest reproduction first: earliest crash point, fewest lost items.
    report.violations.sort_by_key(|v| {
        (
            v.crash_before_op,
            v.recovery_crash_before_op.is_some(),
            v.lost.len(),
        )
    });
    report.seconds = started.elapsed().as_secs_f64();
    report
}

fn violation(
    workload: &Workload,
    k: u64,
    interrupted: Option<usize>,
    mode: &str,
    lost: Vec<String>,
    recovery_crash_before_op: Option<u64>,
    detail: String,
) -> Violation {
    Violation {
        workload: workload.name.clone(),
        crash_before_op: k,
        interrupted_op: interrupted,
        mode: mode.to_string(),
        lost,
        recovery_crash_before_op,
        recovery_lost: Vec::new(),
        detail,
    }
}

/// The path of the log inside the simulated file system.
pub fn log_dir() -> PathBuf {
    PathBuf::from(LOG_DIR)
}

//! The I/O-error sweep: make file-system call `k` fail with a real error (`EIO`,
//! `ENOSPC`, or a short append that leaves a prefix behind: [`FaultKind`]) for every
//! `k` of a workload's clean run, let the workload carry on (reopening the log after
//! the error, as a restarted process would, on the same simulated disk), then take
//! power-loss images and recover each.
//!
//! Invariants checked, per workload, call `k` and error kind:
//! * the operation whose call failed returns an error: never `Ok` after a failed
//!   call (an engine that swallows a failed fsync reports durable what is not);
//! * after an error in append, roll, flush, retain or compact the log is poisoned
//!   (docs/design.md sections 1 and 5): every later append, roll, flush, retain and
//!   compact returns `Error::Poisoned` until it is reopened;
//! * reopening recovers: `Log::open` succeeds, the log equals the spec state before
//!   the failed operation, after it (it may have taken effect), or any state back
//!   to the last durability point that returned `Ok`, and no temp file, temp or
//!   backup directory or manifest is left;
//! * nothing reported successful is lost: power-loss images taken right after the
//!   error and at the end of the workload each recover (`Log::open` succeeds, no
//!   leftovers) to a spec state no older than the last durability point (flush,
//!   roll, retain, compact) that returned `Ok`: every append that returned `Ok`
//!   before it is there, and a retention or compaction that returned `Ok` is in effect;
//! * every error point was reached: the fault at call `k` fired (the first `k` calls
//!   of a faulty run are those of the clean run).
//!
//! A short write is tried only where the clean run's call `k` is an `append` (on any
//! other call it would be the `ENOSPC` point again).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use seglog_model::spec::SpecLog;

use crate::workload::engine::{self, Variant};
use crate::workload::{new_records, spec, LogView, Op, OpOutcome, RecordSpec};
use seglog::error::Error;
use seglog::fs::sim::{Call, CrashMode, FaultKind, SimFs};
use seglog::fs::FileSystem;
use seglog::log::Log;

use super::{count_operations, leftovers, Workload, LOG_DIR};

/// How hard to look.
#[derive(Debug, Clone, Serialize)]
pub struct IoErrorOptions {
    /// Power-loss images recovered right after the error and again at the end of
    /// the workload (each).
    pub images_per_point: usize,
    /// The error kinds injected at every call.
    pub kinds: Vec<FaultKind>,
    /// Only this call (to reproduce one point); `None`: every call.
    pub only_call: Option<u64>,
}

impl Default for IoErrorOptions {
    fn default() -> Self {
        IoErrorOptions {
            images_per_point: 8,
            kinds: FaultKind::SWEPT.to_vec(),
            only_call: None,
        }
    }
}

/// One failed check, with what reproduces it: `seglog sweep --errors --workload W`
/// and the (call, kind) pair.
#[derive(Debug, Clone, Serialize)]
pub struct IoErrorViolation {
    pub workload: String,
    /// The failing file-system call (0-based, as `SimFs::mutating_ops` counts).
    pub fs_call: u64,
    pub kind: FaultKind,
    /// What the failing call was (`sync_file /data/log/...`), once it fired.
    pub call: Option<String>,
    /// The workload operation running when the check failed (`open` for the
    /// initial open, `end` for the final images).
    pub during: String,
    /// When the check is on a power-loss image: what the image lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_lost: Option<Vec<String>>,
    pub detail: String,
}

impl IoErrorViolation {
    /// The command that runs exactly this error point again.
    pub fn replay_command(&self) -> String {
        format!(
            "seglog sweep --errors --workload {} --error-kind {} --error-call {}",
            self.workload, self.kind, self.fs_call
        )
    }
}

impl std::fmt::Display for IoErrorViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "workload {} {} at fs call {}{} during {}: {}",
            self.workload,
            self.kind,
            self.fs_call,
            self.call
                .as_ref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default(),
            self.during,
            self.detail
        )?;
        if let Some(lost) = &self.image_lost {
            write!(f, " [power-loss image lost: {}]", lost.join("; "))?;
        }
        Ok(())
    }
}

/// Per-workload numbers.
#[derive(Debug, Clone, Serialize)]
pub struct IoErrorReport {
    pub workload: String,
    /// Mutating file-system calls of a clean run.
    pub operations: u64,
    /// (call, kind) pairs run whose fault fired.
    pub error_points: u64,
    /// Error points per kind.
    pub error_points_by_kind: BTreeMap<String, u64>,
    /// Error points whose fault never fired (each is also a violation).
    pub not_reached: u64,
    /// Error points where the failing operation returned an error and the log was
    /// then reopened (the rest hit the initial open, or a call whose error the
    /// engine may not see, which is itself reported).
    pub reopened: u64,
    /// `disk_full` points: reopens while the disk was still full that recovered,
    /// and that were refused with `ENOSPC` (the disk then freed).
    pub full_disk_reopened: u64,
    pub full_disk_refused: u64,
    /// `disk_full` points not run: call `k` needs no space, so the run is that of
    /// the next call that does (or, after the last one, nothing is refused).
    pub full_disk_unneeded: u64,
    pub disk_images: u64,
    pub violations: Vec<IoErrorViolation>,
    pub seconds: f64,
}

/// Sweeps every error point of `workload`. `progress(k, total)` before each call `k`.
pub fn sweep_errors(
    workload: &Workload,
    options: &IoErrorOptions,
    mut progress: impl FnMut(u64, u64),
) -> IoErrorReport {
    sweep_errors_dyn(workload, options, &mut progress)
}

/// [`sweep_errors`]' body, not generic, so that it is compiled (and optimised) with
/// the library rather than in each caller's crate.
fn sweep_errors_dyn(
    workload: &Workload,
    options: &IoErrorOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> IoErrorReport {
    let started = Instant::now();
    let mut report = IoErrorReport {
        workload: workload.name.clone(),
        operations: 0,
        error_points: 0,
        error_points_by_kind: BTreeMap::new(),
        not_reached: 0,
        reopened: 0,
        full_disk_reopened: 0,
        full_disk_refused: 0,
        full_disk_unneeded: 0,
        disk_images: 0,
        violations: Vec::new(),
        seconds: 0.0,
    };
    let total = match count_operations(workload) {
        Ok(total) => total,
        Err(detail) => {
            report.violations.push(IoErrorViolation {
                workload: workload.name.clone(),
                fs_call: 0,
                kind: FaultKind::Eio,
                call: None,
                during: "setup".into(),
                image_lost: None,
                detail,
            });
            return report;
        }
    };
    report.operations = total;
    for k in 0..total {
        if options.only_call.is_some_and(|only| only != k) {
            continue;
        }
        progress(k, total);
        let mut call_k = None;
        for &kind in &options.kinds {
            if kind == FaultKind::ShortWrite && call_k.is_some_and(|c| c != Call::Append) {
                continue;
            }
            if kind == FaultKind::Emfile && call_k.is_some_and(|c: Call| !c.opens_descriptor()) {
                continue; // a rename, link, removal or truncation opens no descriptor
            }
            if kind == FaultKind::DiskFull && call_k.is_some_and(|c: Call| !c.needs_space()) {
                // A disk that fills before a call needing no space refuses its
                // first call at the next one that does: the same run as that point.
                report.full_disk_unneeded += 1;
                continue;
            }
            let mut point = Point::new(workload, k, kind, options);
            // An engine assertion that trips on the error path is a finding too, not
            // the end of the sweep.
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| point.run()));
            if let Err(panic) = run {
                point.violation("run", None, format!("panicked: {}", panic_message(&*panic)));
            }
            if let Some(fired) = point.fs.fired_faults().first() {
                call_k = Some(fired.call);
                if kind == FaultKind::ShortWrite && fired.call != Call::Append {
                    continue; // the ENOSPC point again, when short_write runs alone
                }
                report.error_points += 1;
                *report
                    .error_points_by_kind
                    .entry(kind.name().to_string())
                    .or_default() += 1;
            } else if kind == FaultKind::DiskFull {
                // The disk filled after the last call that needed space: nothing
                // to refuse (not a missed point).
                report.full_disk_unneeded += 1;
            } else {
                report.not_reached += 1;
            }
            report.reopened += point.reopened;
            report.full_disk_reopened += point.reopened_on_full;
            report.full_disk_refused += point.refused_on_full;
            report.disk_images += point.disk_images;
            report.violations.extend(point.violations);
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    report
}

/// One run of a workload with call `k` failing with `kind`.
struct Point<'a> {
    workload: &'a Workload,
    k: u64,
    kind: FaultKind,
    images_per_point: usize,
    fs: Arc<SimFs>,
    /// The spec state of the engine's log (after the last operation).
    spec: SpecLog,
    /// The states a power loss now may recover to: from the state at the last
    /// durability point that returned `Ok` (first) to `spec` (last).
    chain: Vec<SpecLog>,
    reopened: u64,
    /// Reopens on a full disk that succeeded, and that were refused with `ENOSPC`.
    reopened_on_full: u64,
    refused_on_full: u64,
    disk_images: u64,
    violations: Vec<IoErrorViolation>,
}

impl<'a> Point<'a> {
    fn new(workload: &'a Workload, k: u64, kind: FaultKind, options: &IoErrorOptions) -> Self {
        let fs = Arc::new(SimFs::new());
        fs.fail_nth_with(k, kind);
        let spec = SpecLog::new(workload.config.segment_bytes);
        Point {
            workload,
            k,
            kind,
            images_per_point: options.images_per_point,
            fs,
            chain: vec![spec.clone()],
            spec,
            reopened: 0,
            reopened_on_full: 0,
            refused_on_full: 0,
            disk_images: 0,
            violations: Vec::new(),
        }
    }

    fn violation(&mut self, during: &str, image_lost: Option<Vec<String>>, detail: String) {
        let call = self
            .fs
            .fired_faults()
            .first()
            .map(|f| format!("{} {}", f.call, f.path));
        self.violations.push(IoErrorViolation {
            workload: self.workload.name.clone(),
            fs_call: self.k,
            kind: self.kind,
            call,
            during: during.to_string(),
            image_lost,
            detail,
        });
    }

    fn fired(&self) -> usize {
        self.fs.fired_faults().len()
    }

    fn open(&self) -> seglog::Result<Log> {
        let fs: Arc<dyn FileSystem> = self.fs.clone();
        Log::open_with(fs, LOG_DIR, self.workload.config.clone()).map(|(log, _)| log)
    }

    /// Runs the workload, checking as it goes; stops at the first violation.
    fn run(&mut self) {
        let variant = match Variant::parse(&self.workload.variant) {
            Ok(variant) => variant,
            Err(e) => return self.violation("setup", None, e),
        };
        let log = match self.open() {
            Ok(log) => log,
            Err(e) if self.fired() > 0 => {
                // The fault hit the initial open: it failed, as it must; open again
                // (while a full disk stays full first, then freed).
                let candidates = self.chain.clone();
                if self.fs.is_full() {
                    match self.reopen_on_full_disk("open", &candidates) {
                        Ok(Some(log)) => return self.run_ops(variant, log),
                        Ok(None) => self.fs.clear_faults(),
                        Err(()) => return,
                    }
                }
                match self.reopen("open", &e, &candidates) {
                    Some(log) => log,
                    None => return,
                }
            }
            Err(e) => return self.violation("open", None, format!("open failed: {e}")),
        };
        self.run_ops(variant, log);
    }

    /// The workload's operations on the opened `log`, then the final images.
    fn run_ops(&mut self, variant: Variant, mut log: Log) {
        let workload = self.workload;
        for (i, op) in workload.ops.iter().enumerate() {
            let during = format!("op {i} ({op})");
            let fired_before = self.fired();
            let result = engine::apply_with(&mut log, op, variant);
            let fired_now = self.fired() > fired_before;
            match result {
                Ok(outcome) => {
                    if fired_now {
                        // Keep going as if it had worked: the images below then
                        // show what the lie costs.
                        self.violation(
                            &during,
                            None,
                            format!(
                                "returned Ok ({outcome:?}) although a file-system call it made failed"
                            ),
                        );
                    }
                    let before = self.spec.clone();
                    let expected = spec::apply(&mut self.spec, op);
                    if outcome != expected {
                        return self.violation(
                            &during,
                            None,
                            format!("outcome: engine {outcome:?} spec {expected:?}"),
                        );
                    }
                    if op.is_mutation() && expected != OpOutcome::Rejected {
                        self.after_ok(op, &before);
                    }
                    if fired_now {
                        // What the `Ok` claimed must hold in every image now.
                        let chain = self.chain.clone();
                        self.check_images(&format!("{during} (after its Ok)"), &chain);
                    }
                }
                Err(e) if !fired_now => {
                    return self.violation(
                        &during,
                        None,
                        format!("failed without an injected fault: {e}"),
                    );
                }
                Err(e) => {
                    if let Err(detail) = check_poisoned(&mut log) {
                        return self.violation(&during, None, detail);
                    }
                    let candidates = self.candidates_after_error(op);
                    drop(log);
                    if !self.check_images(&during, &candidates) {
                        return;
                    }
                    if self.fs.is_full() {
                        // The disk stays full: a restarted process opens it as it is.
                        match self.reopen_on_full_disk(&during, &candidates) {
                            Ok(Some(reopened)) => {
                                log = reopened;
                                continue;
                            }
                            Ok(None) => {} // refused for want of space: freed below
                            Err(()) => return,
                        }
                        // The operator frees space.
                        self.fs.clear_faults();
                    }
                    log = match self.reopen(&during, &e, &candidates) {
                        Some(log) => log,
                        None => return,
                    };
                }
            }
        }
        drop(log);
        if self.fired() == 0 && self.kind != FaultKind::DiskFull {
            return self.violation("end", None, "the fault never fired".into());
        }
        let chain = self.chain.clone();
        self.check_images("end", &chain);
    }

    /// Bookkeeping after an operation that returned `Ok` (as in conformance).
    fn after_ok(&mut self, op: &Op, before: &SpecLog) {
        if op.is_durability_point() {
            self.chain = vec![self.spec.clone()];
        } else if op.is_append() {
            // Each batch's auto-roll made everything before it durable.
            spec::extend_chain(&mut self.chain, before, op, &self.spec);
        } else {
            self.chain.push(self.spec.clone());
        }
    }

    fn candidates_after_error(&self, op: &Op) -> Vec<SpecLog> {
        states_after_error(&self.chain, &self.spec, op)
    }

    /// Reopens after the error `error` of `during`; the recovered log must be one of
    /// `candidates`. Resets the spec and the chain to what was recovered.
    fn reopen(&mut self, during: &str, error: &Error, candidates: &[SpecLog]) -> Option<Log> {
        self.reopened += 1;
        let log = match self.open() {
            Ok(log) => log,
            Err(e) => {
                self.violation(
                    during,
                    None,
                    format!("reopen after the error ({error}) failed: {e}"),
                );
                return None;
            }
        };
        self.adopt(during, log, candidates)
    }

    /// A reopened `log` must be one of `candidates` with no leftovers; the spec and
    /// the chain become what was recovered.
    fn adopt(&mut self, during: &str, log: Log, candidates: &[SpecLog]) -> Option<Log> {
        let recovered = match matching(&log, candidates) {
            Ok(m) => m,
            Err(detail) => {
                self.violation(during, None, format!("after reopen: {detail}"));
                return None;
            }
        };
        let left = leftovers(self.fs.as_ref());
        if !left.is_empty() {
            self.violation(during, None, format!("leftovers after reopen: {left:?}"));
            return None;
        }
        self.spec = candidates[recovered].clone();
        if recovered < self.chain.len() {
            // What recovery found unsynced stays unsynced.
            self.chain.truncate(recovered + 1);
        } else {
            self.chain.push(self.spec.clone());
        }
        Some(log)
    }

    /// A reopen while the disk is still full ([`FaultKind::DiskFull`]): it succeeds
    /// (a recovery that needs no space) and the log is one of `candidates`, or it
    /// fails with `ENOSPC` itself (never another error, never a panic) and every
    /// power-loss image of the disk it leaves still recovers to one of them: a
    /// failed open loses nothing. `Ok(None)` after such a refusal; `Err` after a
    /// violation.
    fn reopen_on_full_disk(
        &mut self,
        during: &str,
        candidates: &[SpecLog],
    ) -> Result<Option<Log>, ()> {
        let during = format!("{during} (reopen on the full disk)");
        let fired_before = self.fired();
        match self.open() {
            Ok(_) if self.fired() > fired_before => {
                self.violation(
                    &during,
                    None,
                    "the open returned Ok although a call it made failed".into(),
                );
                Err(())
            }
            Ok(log) => {
                self.reopened_on_full += 1;
                self.reopened += 1;
                self.adopt(&during, log, candidates).map(Some).ok_or(())
            }
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::StorageFull => {
                self.refused_on_full += 1;
                if self.check_images(&during, candidates) {
                    Ok(None)
                } else {
                    Err(())
                }
            }
            Err(other) => {
                self.violation(
                    &during,
                    None,
                    format!("the open on a full disk failed with {other}, not ENOSPC"),
                );
                Err(())
            }
        }
    }

    /// Recovers power-loss images of the current disk; each must open, be one of
    /// `allowed` and leave nothing behind. False after a violation.
    fn check_images(&mut self, during: &str, allowed: &[SpecLog]) -> bool {
        for image in self
            .fs
            .crash_images(CrashMode::PowerLoss, self.images_per_point.max(1))
        {
            self.disk_images += 1;
            let lost = Some(image.lost.iter().map(ToString::to_string).collect());
            let fs: Arc<dyn FileSystem> = Arc::new(image.fs);
            let log = match Log::open_with(fs.clone(), LOG_DIR, self.workload.config.clone()) {
                Ok((log, _)) => log,
                Err(e) => {
                    self.violation(during, lost, format!("recovery failed: {e}"));
                    return false;
                }
            };
            if let Err(detail) = matching(&log, allowed) {
                self.violation(during, lost, detail);
                return false;
            }
            drop(log);
            let left = leftovers(fs.as_ref());
            if !left.is_empty() {
                self.violation(during, lost, format!("leftovers after recovery: {left:?}"));
                return false;
            }
        }
        true
    }
}

/// The states a log may be in after `op` failed: anything in `chain` (from the last
/// durability point that returned `Ok` to `current`), or `op` done (it may have taken
/// effect before the error), or, for an append that would roll first, the roll done
/// alone.
pub fn states_after_error(chain: &[SpecLog], current: &SpecLog, op: &Op) -> Vec<SpecLog> {
    states_after_error_stamped(chain, current, op, None)
}

/// [`states_after_error`] on a log stamping LogAppendTime at `log_append_time` when
/// given (`workload::spec::apply_stamped`).
pub fn states_after_error_stamped(
    chain: &[SpecLog],
    current: &SpecLog,
    op: &Op,
    log_append_time: Option<i64>,
) -> Vec<SpecLog> {
    let mut candidates = chain.to_vec();
    let mut done = current.clone();
    spec::apply_stamped(&mut done, op, log_append_time);
    // An append may have written a prefix of its batches, each after its roll.
    let walk = spec::append_walk_stamped(current, op, log_append_time);
    let walked = !walk.is_empty();
    candidates.extend(walk.into_iter().map(|(_, state)| state));
    // A concurrent cleaning that failed before its commit point: the appends it
    // made between its build and its swap, uncleaned.
    candidates.extend(
        spec::clean_appends_walk_stamped(current, op, log_append_time)
            .into_iter()
            .map(|(_, state)| state),
    );
    if !walked {
        candidates.push(done);
    }
    candidates
}

/// The message of a caught panic.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(ToString::to_string))
        .unwrap_or_else(|| "(no message)".into())
}

/// The index of the last of `allowed` the log equals, or how it differs.
fn matching(log: &Log, allowed: &[SpecLog]) -> Result<usize, String> {
    let view = engine::view(log).map_err(|e| format!("read failed: {e}"))?;
    let views: Vec<LogView> = allowed.iter().map(spec::view).collect();
    if let Some(m) = views.iter().rposition(|v| *v == view) {
        return Ok(m);
    }
    let closest = views
        .iter()
        .enumerate()
        .min_by_key(|(_, v)| v.diff(&view).len())
        .map(|(j, v)| format!("closest allowed state {j}: {}", v.diff(&view).join(", ")))
        .unwrap_or_default();
    Err(format!(
        "recovered log is none of the {} allowed states (back to the last durability point that returned Ok); {closest}",
        views.len()
    ))
}

/// After an IO error every writing call must return `Error::Poisoned` (and so do
/// nothing) until the log is reopened.
pub fn check_poisoned(log: &mut Log) -> Result<(), String> {
    if !log.is_poisoned() {
        return Err("the log is not poisoned after an io error".into());
    }
    let record = new_records(&[RecordSpec {
        key: Some("k".into()),
        value: Some("v".into()),
        ts: 0,
    }]);
    let calls: [(&str, seglog::Result<()>); 5] = [
        ("append", log.append(&record).map(drop)),
        ("roll", log.roll().map(drop)),
        ("flush", log.flush()),
        ("retain", log.retain(i64::MAX, Some(0), None).map(drop)),
        ("compact", log.compact(0, 0, None).map(drop)),
    ];
    for (name, result) in calls {
        match result {
            Err(Error::Poisoned) => {}
            other => return Err(format!("{name} on the poisoned log returned {other:?}")),
        }
    }
    Ok(())
}

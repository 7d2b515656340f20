//! The checks of the `crash_recovery` fuzz target. Shared with `tests/fuzz_corpus.rs` (included
//! by path), so `cargo test` replays the committed seeds through exactly what the
//! fuzzer runs. The function panics with a description when an invariant breaks.

use std::sync::Arc;

use seglog::fs::sim::{CrashMode, SimFs};
use seglog::fs::FileSystem;
use seglog::Log;
use seglog_suite::scenario::Scenario;
use seglog_suite::sweep::{
    check_image, count_operations, duplicate, run_until_crash, Allowed, Violation, Workload,
};

use crate::common::{ops_json, CrashInput, CrashKind, FuzzOp, LOG_DIR};

/// Picks the disk image a crash of `kind` leaves on `fs`.
fn crash_image(fs: &SimFs, kind: CrashKind) -> (SimFs, Vec<String>, &'static str) {
    let (mode, index, name) = match kind {
        CrashKind::Process => (CrashMode::Process, 0, "process"),
        CrashKind::PowerLoss { image } => (CrashMode::PowerLoss, usize::from(image), "power_loss"),
    };
    let mut images = fs.crash_images(mode, index + 1);
    let pick = index.min(images.len() - 1);
    let image = images.swap_remove(pick);
    let lost = image.lost.iter().map(ToString::to_string).collect();
    (image.fs, lost, name)
}

/// Runs an arbitrary workload, crashes it before an arbitrary file-system call,
/// takes one of the disk images the crash may leave (optionally crashes recovery
/// too) and recovers.
///
/// Invariants checked (the crash sweep's `check_image`):
/// - recovery succeeds, no panic;
/// - the recovered log equals the one spec state the image's durable content
///   dictates (`States::exact_after_crash`: the side of the manifest / checkpoint it
///   is on, the appends whose batches it holds whole), also after a crash during
///   recovery;
/// - no install or checkpoint leftovers remain;
/// - a second open changes no byte and gives the same view.
pub fn crash_recovery(input: &CrashInput) -> CrashOutcome {
    let workload = Workload {
        name: "fuzz".into(),
        description: "crash_recovery fuzz input".into(),
        config: input.config.log_config(),
        ops: input.ops.0.iter().map(FuzzOp::op).collect(),
        variant: "manifest".into(),
    };
    let ops_json = ops_json(&workload.ops);
    let states = Allowed::states(&workload);
    let total = count_operations(&workload)
        .unwrap_or_else(|e| panic!("uninterrupted run failed: {e}\nops {ops_json}"));
    let k = u64::from(input.crash_before) % total.max(1);
    let fs = Arc::new(SimFs::new());
    fs.set_crash_before(k);
    let interrupted = match run_until_crash(&workload, &fs) {
        Ok(Some(interrupted)) => interrupted,
        Ok(None) => panic!("crash before fs op {k} of {total} was never reached\nops {ops_json}"),
        Err(e) => panic!("run failed: {e}\nops {ops_json}"),
    };
    let (image, lost, semantics) = crash_image(&fs, input.crash);
    // Exact: the image's durable state decides the one state it must recover to,
    // also after a crash during its recovery.
    let allowed = states.exact_after_crash(&workload, interrupted, &image);
    let scenario = || {
        format!(
            "config {:?}\nops {ops_json}\ncrash before_fs_op = {k} (during op {interrupted:?}), \
             semantics = {semantics}, lost = {lost:?}",
            workload.config
        )
    };
    let violation = |detail: String, rk: Option<u64>, recovery_lost: Vec<String>| Violation {
        workload: workload.name.clone(),
        crash_before_op: k,
        interrupted_op: interrupted,
        mode: semantics.to_string(),
        lost: lost.clone(),
        recovery_crash_before_op: rk,
        recovery_lost,
        detail,
    };
    if let Err(detail) = check_image(&workload, &allowed, &image) {
        let v = violation(detail, None, Vec::new());
        panic!(
            "{v}\n{}\n--- crash scenario (save under crash-scenarios/, check with `seglog replay`):\n{}",
            scenario(),
            Scenario::from_violation(&workload, &v, Default::default()).to_toml()
        );
    }
    let mut outcome = CrashOutcome {
        interrupted,
        lost_items: lost.len(),
        recovery_crashed: false,
    };
    if let Some((rk, kind)) = input.recovery_crash {
        // How many calls does a clean recovery of this image take?
        let probe = Arc::new(duplicate(&image));
        let start = probe.mutating_ops();
        let dyn_probe: Arc<dyn FileSystem> = probe.clone();
        drop(Log::open_with(dyn_probe, LOG_DIR, workload.config.clone()).expect("checked above"));
        let recovery_ops = probe.mutating_ops() - start;
        if recovery_ops > 0 {
            let rk = u64::from(rk) % recovery_ops;
            let nested = Arc::new(duplicate(&image));
            nested.set_crash_before(nested.mutating_ops() + rk);
            let dyn_nested: Arc<dyn FileSystem> = nested.clone();
            let crashed = Log::open_with(dyn_nested, LOG_DIR, workload.config.clone()).is_err();
            assert!(
                crashed,
                "recovery did not reach its call {rk} of {recovery_ops}\n{}",
                scenario()
            );
            let (again, nested_lost, nested_semantics) = crash_image(&nested, kind);
            // A process image still holds unsynced state: the image after the power loss
            // during its recovery decides. A power-loss image decided already.
            let allowed = match input.crash {
                CrashKind::Process => states.exact_after_crash(&workload, interrupted, &again),
                CrashKind::PowerLoss { .. } => allowed.clone(),
            };
            if let Err(detail) = check_image(&workload, &allowed, &again) {
                // A scenario's `recovery_lost` names the power-loss image; empty is a
                // process crash.
                let recovery_lost = match kind {
                    CrashKind::Process => Vec::new(),
                    CrashKind::PowerLoss { .. } => nested_lost.clone(),
                };
                let v = violation(detail, Some(rk), recovery_lost);
                panic!(
                    "{v}\n{}\nthen recovery_crash_before_op = {rk}, semantics = \
                     {nested_semantics}, lost = {nested_lost:?}\n--- crash scenario \
                     (save under crash-scenarios/, check with `seglog replay`):\n{}",
                    scenario(),
                    Scenario::from_violation(&workload, &v, Default::default()).to_toml()
                );
            }
            outcome.recovery_crashed = true;
        }
    }
    outcome
}

/// What [`crash_recovery`] exercised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashOutcome {
    /// The workload op the crash interrupted (`None`: the initial open).
    pub interrupted: Option<usize>,
    pub lost_items: usize,
    pub recovery_crashed: bool,
}

//! Sync ablation: is every fsync the protocol issues needed, and does the sweep know?
//!
//! For each `sync_file` / `sync_dir` call of a workload's uninterrupted run, the
//! whole crash sweep runs again with exactly that call made a no-op (it still counts
//! as a file-system operation, so crash points line up). The ablation is *caught* when
//! the sweep then reports a violation. One that is not caught is either redundant
//! (nothing any crash image can show depends on it) or a blind spot of the sweep; the
//! protocol model decides which (`seglog_model::check::sync_needed`): a sync the model
//! needs but the sweep misses is a gap in the sweep, one the model can drop is a
//! latency saving, to be removed from the protocol (model first).
//!
//! Each sync call is named by the fail point right before it (every sync call site
//! carries one), which is also how it maps onto a step of the protocol models.

use std::sync::Arc;

use serde::Serialize;

use seglog::fs::failpoint::Recorder;
use seglog::fs::sim::{SimFs, SyncCall};

use super::{run_to_end, sweep_with, SweepOptions, Workload};

/// What ablating one sync call did.
#[derive(Debug, Clone, Serialize)]
pub struct AblationRow {
    pub workload: String,
    /// The sync's mutating-call number in the uninterrupted run.
    pub sync_op: u64,
    pub kind: &'static str,
    pub path: String,
    /// The fail point right before the call (its protocol step), if any.
    pub failpoint: Option<&'static str>,
    /// Violations the sweep found with this sync made a no-op.
    pub violations: u64,
    pub verdict: Verdict,
    /// The first violation, for `caught`; the model's counterexample property or
    /// reason otherwise.
    pub detail: String,
}

/// What ablating a sync showed (printed in snake case in the JSON table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The sweep reported violations without it.
    Caught,
    /// The sweep found nothing and the model holds every property without it.
    Redundant,
    /// The sweep found nothing but the model needs it: a blind spot of the sweep.
    Uncaught,
    /// The sweep found nothing and no protocol model has this step.
    Unmodelled,
    /// Nothing was pending for the call in this run (`SyncCall::idle`): skipping it
    /// changes no crash image, so this run cannot judge it (not swept). Another
    /// workload, where the same sync has work to do, must.
    Idle,
}

impl Verdict {
    /// The name the JSON table uses.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Caught => "caught",
            Verdict::Redundant => "redundant",
            Verdict::Uncaught => "uncaught",
            Verdict::Unmodelled => "unmodelled",
            Verdict::Idle => "idle",
        }
    }
}

/// One sync call of a run: its mutating-call number, what it syncs, and the fail
/// point right before it.
pub type TracedSync = (u64, SyncCall, Option<&'static str>);

/// The sync calls of `workload`'s uninterrupted run, each with the fail point right
/// before it.
pub fn sync_calls(workload: &Workload) -> Result<Vec<TracedSync>, String> {
    let fs = Arc::new(SimFs::new());
    let probe = Arc::clone(&fs);
    let recorder = Recorder::start_with_probe(move || probe.mutating_ops());
    run_to_end(workload, &fs)?;
    let hits = recorder.hits_with_probe();
    drop(recorder);
    Ok(fs
        .syncs()
        .into_iter()
        .map(|(k, call)| {
            let failpoint = hits.iter().rev().find(|(_, at)| *at == k).map(|(n, _)| *n);
            (k, call, failpoint)
        })
        .collect())
}

/// Ablates every sync call of `workload` in turn. `model_verdict` judges a sync the
/// sweep did not catch, by its fail point: `Ok(reason)` redundant, `Err(reason)`
/// needed (the sweep's blind spot), `None` no model covers it.
/// Only the sync calls whose fail point `only` accepts are ablated.
pub fn ablate(
    workload: &Workload,
    options: &SweepOptions,
    model_verdict: &dyn Fn(&str) -> Option<Result<String, String>>,
    only: &dyn Fn(Option<&str>) -> bool,
) -> Result<Vec<AblationRow>, String> {
    let mut rows = Vec::new();
    for (k, call, failpoint) in sync_calls(workload)? {
        if !only(failpoint) {
            continue;
        }
        if call.idle {
            rows.push(AblationRow {
                workload: workload.name.clone(),
                sync_op: k,
                kind: call.kind,
                path: call.path.display().to_string(),
                failpoint,
                violations: 0,
                verdict: Verdict::Idle,
                detail: "nothing was pending: no crash image of this run depends on it".into(),
            });
            continue;
        }
        let report = sweep_with(workload, options, &|fs| fs.skip_sync(k), |_, _| {});
        let violations = report.violations.len() as u64;
        let (verdict, detail) = if let Some(first) = report.violations.first() {
            (Verdict::Caught, first.to_string())
        } else {
            match failpoint.and_then(model_verdict) {
                Some(Ok(reason)) => (Verdict::Redundant, reason),
                Some(Err(reason)) => (Verdict::Uncaught, reason),
                None => (
                    Verdict::Unmodelled,
                    "the sweep found nothing and no protocol model has this step".into(),
                ),
            }
        };
        rows.push(AblationRow {
            workload: workload.name.clone(),
            sync_op: k,
            kind: call.kind,
            path: call.path.display().to_string(),
            failpoint,
            violations,
            verdict,
            detail,
        });
    }
    Ok(rows)
}

/// The protocol models' verdict on a sync the sweep did not catch, by its fail point.
pub fn model_verdict(failpoint: &str) -> Option<Result<String, String>> {
    seglog_model::check::sync_verdict(failpoint)
}

/// True for the syncs of the cleanup protocols (install, compaction build,
/// retention), the ones a protocol model has steps for and the sweep can reach in
/// every context that needs them. The log's own syncs (model (e)) are judged by the
/// model too ([`model_verdict`]), but some are needed only after a process crash
/// that the sweep's single crash per image cannot put before them (docs/design.md
/// section 8, "Sync ablation").
pub fn is_protocol_sync(failpoint: Option<&str>) -> bool {
    failpoint.is_some_and(|name| {
        ["install::", "compaction::", "retention::"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
    })
}

/// What ablating one sync *step* did: the fail point's sync made a no-op everywhere
/// it runs (every call of the workload, of every recovery of every crash image, and
/// of the work that continues after a recovery), across workloads in turn until one
/// catches it.
#[derive(Debug, Clone, Serialize)]
pub struct StepRow {
    /// The sync step, named by the fail point right before its call sites.
    pub failpoint: &'static str,
    /// The workloads swept, in order, then the catchers run (the conformance
    /// regressions: `regression NAME`); the last one caught it, for `caught`.
    pub workloads: Vec<String>,
    /// Skipped calls that had something pending, over every workload swept. Zero
    /// means no workload gave the step any work: `idle`, nothing could judge it.
    pub pending_skipped: u64,
    /// Violations of the workload that caught it (0 otherwise).
    pub violations: u64,
    pub verdict: Verdict,
    /// The first violation, for `caught`; the model's verdict or reason otherwise.
    pub detail: String,
}

/// Every sync step of the engine: the fail points right before a `sync_file` or
/// `sync_dir` call.
pub fn sync_steps() -> Vec<&'static str> {
    seglog::fs::failpoint::ALL
        .iter()
        .copied()
        .filter(|name| {
            name.rsplit("::")
                .next()
                .is_some_and(|step| step.starts_with("sync"))
        })
        .collect()
}

/// `workloads` in the order the sweep should try them for `failpoint`: those whose
/// uninterrupted run gives the step the most work first (one cheap run each), the
/// rest (a step only recoveries of crash images reach) in their given order. Only
/// the cost changes: every workload is still swept until one catches the step.
fn by_pending_work<'w>(failpoint: &'static str, workloads: &'w [Workload]) -> Vec<&'w Workload> {
    let mut ranked: Vec<(u64, usize, &Workload)> = workloads
        .iter()
        .enumerate()
        .map(|(i, workload)| {
            let ablation = seglog::fs::failpoint::Ablation::of(failpoint);
            // A run that fails without the sync is for the sweep to report.
            let _ = run_to_end(workload, &Arc::new(SimFs::new()));
            (ablation.pending_skipped(), i, workload)
        })
        .collect();
    ranked.sort_by_key(|&(pending, i, _)| (std::cmp::Reverse(pending), i));
    ranked
        .into_iter()
        .map(|(_, _, workload)| workload)
        .collect()
}

/// A run beyond the sweep's workloads that can catch an ablated step: one that
/// reaches what one crash per image cannot (a run of I/O errors and reopens).
pub struct Catcher {
    /// Its name in [`StepRow::workloads`].
    pub name: String,
    /// Runs it: `Err` says what diverged.
    pub run: Box<dyn Fn() -> Result<(), String>>,
}

/// Ablates the sync step `failpoint` everywhere (see [`StepRow`]), sweeping
/// `workloads` (likeliest first, see `by_pending_work`), then running `catchers`,
/// until one reports a violation. A step none catches
/// is judged by `model_verdict` (as in [`ablate`]), or `idle` if no skipped call
/// had anything pending and the model does not call it redundant.
pub fn ablate_step(
    failpoint: &'static str,
    workloads: &[Workload],
    options: &SweepOptions,
    model_verdict: &dyn Fn(&str) -> Option<Result<String, String>>,
    catchers: &[Catcher],
) -> StepRow {
    let mut row = StepRow {
        failpoint,
        workloads: Vec::new(),
        pending_skipped: 0,
        violations: 0,
        verdict: Verdict::Idle,
        detail: String::new(),
    };
    for workload in by_pending_work(failpoint, workloads) {
        let ablation = seglog::fs::failpoint::Ablation::of(failpoint);
        let report = sweep_with(workload, options, &|_| {}, |_, _| {});
        row.pending_skipped += ablation.pending_skipped();
        drop(ablation);
        row.workloads.push(workload.name.clone());
        if let Some(first) = report.violations.first() {
            row.violations = report.violations.len() as u64;
            row.verdict = Verdict::Caught;
            row.detail = first.to_string();
            return row;
        }
    }
    for catcher in catchers {
        let ablation = seglog::fs::failpoint::Ablation::of(failpoint);
        let outcome = (catcher.run)();
        row.pending_skipped += ablation.pending_skipped();
        drop(ablation);
        row.workloads.push(catcher.name.clone());
        if let Err(divergence) = outcome {
            row.violations = 1;
            row.verdict = Verdict::Caught;
            row.detail = format!("{}: {divergence}", catcher.name);
            return row;
        }
    }
    (row.verdict, row.detail) = match (model_verdict(failpoint), row.pending_skipped) {
        (Some(Ok(reason)), _) => (Verdict::Redundant, reason),
        (Some(Err(reason)), 0) => (
            Verdict::Idle,
            format!("no workload gave this step anything to do, and {reason}"),
        ),
        (None, 0) => (
            Verdict::Idle,
            "no workload gave this step anything to do, and no protocol model has it".into(),
        ),
        (Some(Err(reason)), _) => (Verdict::Uncaught, reason),
        (None, _) => (
            Verdict::Unmodelled,
            "the sweep found nothing and no protocol model has this step".into(),
        ),
    };
    row
}

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

use crate::fs::failpoint::Recorder;
use crate::fs::sim::{SimFs, SyncCall};

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
}

impl Verdict {
    /// The name the JSON table uses.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Caught => "caught",
            Verdict::Redundant => "redundant",
            Verdict::Uncaught => "uncaught",
            Verdict::Unmodelled => "unmodelled",
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

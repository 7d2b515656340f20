//! `seglog sweep`: the crash sweep on its own (also a stage of `seglog verify`).

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::Outcome;
use crate::scenario::{files, Scenario};
use crate::sweep::ablation::Verdict;
use crate::sweep::io_errors::{sweep_errors, IoErrorOptions};
use crate::sweep::{self, SweepOptions, Workload};
use crate::verify::junit::{junit_xml, JunitCase};
use crate::verify::Shard;
use seglog::fs::sim::FaultKind;
use seglog::fs::sim::Persistence;
use seglog::fs::StdFs;
use seglog::{Error, Result};

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Only the workloads with these names (default: all).
    #[arg(long = "workload")]
    pub workloads: Vec<String>,
    /// Protocol variant (the broken ones need `--features test-variants`).
    #[arg(long, default_value = "manifest")]
    pub variant: String,
    /// Power-loss disk images per crash point.
    #[arg(long, default_value_t = SweepOptions::default().images_per_point)]
    pub images_per_point: usize,
    /// Images per crash point whose recovery is crashed again at every operation.
    #[arg(long, default_value_t = SweepOptions::default().recovery_crash_images)]
    pub recovery_crash_images: usize,
    /// Write the first violation of each workload as a crash-scenario file here.
    #[arg(long)]
    pub emit_scenario: Option<PathBuf>,
    /// Sync ablation: sweep again with each sync call of each workload made a no-op,
    /// and print the table (caught by the sweep, redundant per the model, idle, or
    /// not); a fail point with a call neither caught nor redundant is judged again as
    /// a step (see `--ablate-steps`), and the run fails if that step is not caught
    /// or redundant either.
    #[arg(long, conflicts_with = "errors")]
    pub ablate: bool,
    /// Sync ablation by step: each sync fail point's call made a no-op everywhere it
    /// runs (the workload, every recovery, the work after a recovery), the workloads
    /// swept in turn until one catches it; one row per step. Fails on a step neither
    /// caught nor proven redundant by a protocol model (a step no workload gave work
    /// is listed as idle). With `--persistence ordered-metadata` the models (which
    /// assume any-subset) do not judge: the rows say which steps the sweep still
    /// catches, and the run does not fail.
    #[arg(long, conflicts_with_all = ["errors", "ablate"])]
    pub ablate_steps: bool,
    /// With `--ablate-steps`: only these steps (fail point names, see `seglog failpoints`).
    #[arg(long = "step", requires = "ablate_steps")]
    pub steps: Vec<String>,
    /// Run the I/O-error sweep instead of the crash sweep: every file-system call
    /// fails in turn with an error (see `--error-kind`); the operation must fail,
    /// poison the log, and lose nothing reported durable in any power-loss image.
    #[arg(long)]
    pub errors: bool,
    /// With `--errors`: only these error kinds (eio, enospc, short_write, disk_full: the disk stays full until a reopen is refused for want of space; emfile: out of file descriptors on a call that opens one; default all).
    #[arg(long = "error-kind", requires = "errors")]
    pub error_kinds: Vec<FaultKind>,
    /// With `--errors`: only this file-system call (0-based), to reproduce one point.
    #[arg(long, requires = "errors")]
    pub error_call: Option<u64>,
    /// Run only shard K of N (1-based) of the crash points: crash point `k` of the
    /// `i`-th selected workload belongs to shard `(i + k) % N + 1`. The shards are
    /// disjoint and together are the unsharded sweep; the JSON lists the points run
    /// in `shard_units` (`"WORKLOAD k"`).
    #[arg(long, value_name = "K/N", conflicts_with_all = ["errors", "ablate", "ablate_steps"])]
    pub shard: Option<Shard>,
    /// Which directory operations a power loss may take: any-subset (any unsynced
    /// one, short of a dependency: what POSIX allows) or ordered-metadata (a prefix
    /// of them in issue order, as a journaled file system such as ext4 or xfs keeps
    /// them). File data needs its fsync under both.
    #[arg(long, default_value_t = Persistence::AnySubset, value_name = "any-subset|ordered-metadata")]
    pub persistence: Persistence,
    /// Also write the result as JUnit XML here: one test case per workload.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["ablate", "ablate_steps"])]
    pub junit: Option<PathBuf>,
}

pub fn sweep(args: SweepArgs) -> Result<Outcome> {
    crate::workload::engine::Variant::parse(&args.variant).map_err(Error::InvalidArgument)?;
    if args.errors {
        return sweep_io_errors(&args);
    }
    let options = SweepOptions {
        images_per_point: args.images_per_point,
        recovery_crash_images: args.recovery_crash_images,
        persistence: args.persistence,
    };
    let workloads = selected_workloads(&args.workloads)?;
    if args.ablate {
        return ablate(&workloads, &args.variant, &options);
    }
    if args.ablate_steps {
        return ablate_steps(&workloads, &args.variant, &args.steps, &options);
    }
    let mut reports = Vec::new();
    let mut emitted = Vec::new();
    let shard = args.shard.unwrap_or(Shard::ALL);
    let units = std::cell::RefCell::new(Vec::new());
    for (i, mut workload) in workloads.into_iter().enumerate() {
        workload.variant = args.variant.clone();
        let select = |k: u64| {
            let owned = shard.owns(i as u64 + k);
            if owned {
                units.borrow_mut().push(format!("{} {k}", workload.name));
            }
            owned
        };
        let report = sweep::sweep_selected(&workload, &options, &|_| {}, &select, |_, _| {});
        eprintln!(
            "{}: {} crash points, {} disk images, {} violations, {:.2}s",
            report.workload,
            report.crash_points,
            report.disk_images,
            report.violations.len(),
            report.seconds
        );
        if let Some(first) = report.violations.first() {
            eprintln!("  first: {first}");
            if let Some(dir) = &args.emit_scenario {
                let path = files::save(
                    &StdFs::new(),
                    dir,
                    &Scenario::from_violation(&workload, first, options.persistence),
                )?;
                eprintln!("  replay with: seglog replay {}", path.display());
                emitted.push(path.display().to_string());
            }
        }
        reports.push(report);
    }
    let violations: usize = reports.iter().map(|r| r.violations.len()).sum();
    if let Some(path) = &args.junit {
        let cases: Vec<JunitCase> = reports
            .iter()
            .map(|r| JunitCase {
                name: r.workload.clone(),
                seconds: r.seconds,
                failure: r
                    .violations
                    .first()
                    .map(|first| format!("{} violations; first: {first}", r.violations.len())),
                skipped: None,
                output: format!(
                    "{} crash points, {} disk images, {} violations",
                    r.crash_points,
                    r.disk_images,
                    r.violations.len()
                ),
            })
            .collect();
        write_report(path, &junit_xml("seglog sweep", &cases))?;
    }
    let mut value = json!({
        "workloads": reports.len(),
        "persistence": args.persistence.name(),
        "crash_points": reports.iter().map(|r| r.crash_points).sum::<u64>(),
        "disk_images": reports.iter().map(|r| r.disk_images).sum::<u64>(),
        "violations": violations,
        "seconds": reports.iter().map(|r| r.seconds).sum::<f64>(),
        "per_workload": reports,
        "emitted": emitted,
    });
    if let Some(shard) = args.shard {
        value["shard"] = json!(shard);
        value["shard_units"] = json!(units.into_inner());
    }
    Ok(if violations == 0 {
        Outcome::Ok(value)
    } else {
        Outcome::CheckFailed(value)
    })
}

/// Writes a report file (JUnit XML, HTML) at `path`, replacing an older one.
pub(super) fn write_report(path: &std::path::Path, text: &str) -> Result<()> {
    use seglog::fs::FileSystem;
    let fs = StdFs::new();
    fs.write_new(path, text.as_bytes())
        .map_err(|e| Error::io(path, e))?;
    fs.sync_file(path).map_err(|e| Error::io(path, e))
}

/// The named workloads, or the ones `--workload` names.
pub(super) fn selected_workloads(names: &[String]) -> Result<Vec<Workload>> {
    let mut workloads = sweep::named_workloads();
    if !names.is_empty() {
        let known: Vec<String> = workloads.iter().map(|w| w.name.clone()).collect();
        for name in names {
            if !known.contains(name) {
                return Err(Error::InvalidArgument(format!(
                    "unknown workload {name:?}; known: {}",
                    known.join(", ")
                )));
            }
        }
        workloads.retain(|w| names.contains(&w.name));
    }
    Ok(workloads)
}

/// `seglog sweep --errors`: the I/O-error sweep (also the `io_errors` stage of verify).
fn sweep_io_errors(args: &SweepArgs) -> Result<Outcome> {
    let defaults = IoErrorOptions::default();
    let options = IoErrorOptions {
        images_per_point: args.images_per_point,
        kinds: if args.error_kinds.is_empty() {
            defaults.kinds
        } else {
            args.error_kinds.clone()
        },
        only_call: args.error_call,
    };
    let mut reports = Vec::new();
    for mut workload in selected_workloads(&args.workloads)? {
        workload.variant = args.variant.clone();
        let report = sweep_errors(&workload, &options, |_, _| {});
        eprintln!(
            "{}: {} calls, {} error points, {} disk images, {} violations, {:.2}s",
            report.workload,
            report.operations,
            report.error_points,
            report.disk_images,
            report.violations.len(),
            report.seconds
        );
        if let Some(first) = report.violations.first() {
            eprintln!("  first: {first}");
            eprintln!("  replay with: {}", first.replay_command());
        }
        reports.push(report);
    }
    let violations: usize = reports.iter().map(|r| r.violations.len()).sum();
    let not_reached: u64 = reports.iter().map(|r| r.not_reached).sum();
    let value = json!({
        "mode": "io_errors",
        "workloads": reports.len(),
        "error_points": reports.iter().map(|r| r.error_points).sum::<u64>(),
        "not_reached": not_reached,
        "disk_images": reports.iter().map(|r| r.disk_images).sum::<u64>(),
        "violations": violations,
        "seconds": reports.iter().map(|r| r.seconds).sum::<f64>(),
        "per_workload": reports,
    });
    Ok(if violations == 0 && not_reached == 0 {
        Outcome::Ok(value)
    } else {
        Outcome::CheckFailed(value)
    })
}

/// `seglog sweep --ablate`: one row per sync call per workload.
fn ablate(workloads: &[sweep::Workload], variant: &str, options: &SweepOptions) -> Result<Outcome> {
    let mut rows = Vec::new();
    for workload in workloads {
        let mut workload = workload.clone();
        workload.variant = variant.to_string();
        let table =
            sweep::ablation::ablate(&workload, options, &sweep::ablation::model_verdict, &|_| {
                true
            })
            .map_err(Error::InvalidArgument)?;
        for row in &table {
            eprintln!(
                "{:<24} op {:>3} {:<9} {:<44} {:<40} {}",
                row.workload,
                row.sync_op,
                row.kind,
                row.path,
                row.failpoint.unwrap_or("-"),
                row.verdict.name()
            );
        }
        rows.extend(table);
    }
    let count = |verdict: Verdict| rows.iter().filter(|r| r.verdict == verdict).count();
    // A call its own run cannot judge (an effect that only a recovery, a later
    // crash or another workload shows) is judged again as a step: that fail point's
    // calls skipped everywhere, over every selected workload.
    let mut misses: Vec<&'static str> = rows
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Uncaught | Verdict::Unmodelled))
        .filter_map(|r| r.failpoint)
        .collect();
    misses.sort_unstable();
    misses.dedup();
    let judged: Vec<sweep::Workload> = workloads
        .iter()
        .cloned()
        .map(|mut w| {
            w.variant = variant.to_string();
            w
        })
        .collect();
    let catchers = crate::conformance::regressions::catchers();
    let steps: Vec<_> = misses
        .into_iter()
        .map(|step| {
            let row = sweep::ablation::ablate_step(
                step,
                &judged,
                options,
                &sweep::ablation::model_verdict,
                &catchers,
            );
            eprintln!(
                "as a step: {:<44} {} ({} workload(s))",
                row.failpoint,
                row.verdict.name(),
                row.workloads.len()
            );
            row
        })
        .collect();
    let bad = steps
        .iter()
        .filter(|r| !matches!(r.verdict, Verdict::Caught | Verdict::Redundant))
        .count();
    let value = json!({
        "syncs": rows.len(),
        "caught": count(Verdict::Caught),
        "redundant": count(Verdict::Redundant),
        "uncaught": count(Verdict::Uncaught),
        "unmodelled": count(Verdict::Unmodelled),
        "idle": count(Verdict::Idle),
        "rows": rows,
        "steps_judged": steps,
        "steps_failed": bad,
    });
    Ok(if bad == 0 {
        Outcome::Ok(value)
    } else {
        Outcome::CheckFailed(value)
    })
}

/// `seglog sweep --ablate-steps`: one row per sync step.
fn ablate_steps(
    workloads: &[sweep::Workload],
    variant: &str,
    only: &[String],
    options: &SweepOptions,
) -> Result<Outcome> {
    let all = sweep::ablation::sync_steps();
    if let Some(unknown) = only.iter().find(|name| !all.contains(&name.as_str())) {
        return Err(Error::InvalidArgument(format!(
            "--step {unknown}: not a sync step; the sync steps are: {}",
            all.join(", ")
        )));
    }
    let workloads: Vec<sweep::Workload> = workloads
        .iter()
        .cloned()
        .map(|mut w| {
            w.variant = variant.to_string();
            w
        })
        .collect();
    let catchers = crate::conformance::regressions::catchers();
    // The protocol models assume any-subset persistence: under another model they
    // do not judge, and a step the sweep does not catch is reported, not failed.
    let judged = options.persistence == Persistence::AnySubset;
    let unjudged = |_: &str| None;
    let model_verdict: &dyn Fn(&str) -> Option<Result<String, String>> = if judged {
        &sweep::ablation::model_verdict
    } else {
        &unjudged
    };
    let mut rows = Vec::new();
    for step in all
        .into_iter()
        .filter(|step| only.is_empty() || only.iter().any(|name| name == step))
    {
        let row = sweep::ablation::ablate_step(step, &workloads, options, model_verdict, &catchers);
        eprintln!(
            "{:<44} {:<10} {:>3} workload(s), {:>4} pending skips  {}",
            row.failpoint,
            row.verdict.name(),
            row.workloads.len(),
            row.pending_skipped,
            row.workloads.last().map_or("-", String::as_str)
        );
        rows.push(row);
    }
    let count = |verdict: Verdict| rows.iter().filter(|r| r.verdict == verdict).count();
    // An idle step is reported (`idle`, and its row) but is not a failure: nothing
    // selected gave it work, which says more about the workloads than the step.
    let bad = if judged {
        count(Verdict::Uncaught) + count(Verdict::Unmodelled)
    } else {
        0
    };
    let value = json!({
        "persistence": options.persistence.name(),
        "steps": rows.len(),
        "caught": count(Verdict::Caught),
        "redundant": count(Verdict::Redundant),
        "uncaught": count(Verdict::Uncaught),
        "unmodelled": count(Verdict::Unmodelled),
        "idle": count(Verdict::Idle),
        "rows": rows,
    });
    Ok(if bad == 0 {
        Outcome::Ok(value)
    } else {
        Outcome::CheckFailed(value)
    })
}

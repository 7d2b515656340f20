//! Sync ablation (`seglog sweep --ablate`, `--ablate-steps`): every fsync is needed
//! and the crash sweep alone notices when it is skipped, or a protocol model proves
//! it redundant. By call: each sync call of the cleanup protocols (compaction build,
//! install, retention) in two workloads. By step: every sync fail point of the
//! engine, its calls skipped everywhere (recoveries included), over every workload.
//! An ablation that is neither caught nor redundant is a blind spot and fails here.

use seglog_suite::sweep::ablation::{
    ablate, ablate_step, is_protocol_sync, model_verdict, sync_steps, StepRow, Verdict,
};
use seglog_suite::sweep::{named_workloads, SweepOptions};

#[test]
fn every_protocol_sync_is_caught_or_proven_redundant() {
    let options = SweepOptions::default();
    let mut rows = Vec::new();
    for workload in named_workloads()
        .into_iter()
        .filter(|w| ["seed-compaction", "retain-prefix"].contains(&w.name.as_str()))
    {
        rows.extend(ablate(&workload, &options, &model_verdict, &is_protocol_sync).unwrap());
    }
    let failpoints: std::collections::BTreeSet<_> =
        rows.iter().filter_map(|r| r.failpoint).collect();
    // Every sync step of both protocols (recovery's own excluded) was ablated.
    let protocol_syncs: std::collections::BTreeSet<_> = seglog::fs::failpoint::ALL
        .iter()
        .copied()
        .filter(|name| is_protocol_sync(Some(name)))
        .filter(|name| name.contains("::sync") && !name.contains("::recover::"))
        .collect();
    assert_eq!(failpoints, protocol_syncs);
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| !matches!(r.verdict, Verdict::Caught | Verdict::Redundant))
        .map(|r| {
            format!(
                "{} op {} {:?}: {} ({})",
                r.workload,
                r.sync_op,
                r.failpoint,
                r.verdict.name(),
                r.detail
            )
        })
        .collect();
    assert!(
        bad.is_empty(),
        "ablations neither caught nor proven redundant:\n{}",
        bad.join("\n")
    );
    // The commit points' syncs are caught by the sweep itself, not only by the model.
    for needed in [
        "install::manifest::sync_parent",
        "install::manifest::sync_temp_entry",
        "retention::checkpoint::sync_dir",
        "install::tail::sync_tmp",
    ] {
        assert!(
            rows.iter()
                .any(|r| r.failpoint == Some(needed) && r.verdict == Verdict::Caught),
            "{needed} not caught by the sweep"
        );
    }
}

/// The ablation by step: each sync fail point's calls made no-ops everywhere they
/// run, recoveries and the work after them included. Every step of the engine, the
/// log's own (flush, roll, close, open) with the cleanup protocols', must be caught
/// by the sweep or proven redundant by its model; an idle step (no workload gave it
/// work) fails too, as a gap in the workloads.
#[test]
#[ignore = "nightly tier (.ci/nightly): the sync ablation in full (every step over every workload)"]
fn every_sync_step_is_caught_or_proven_redundant() {
    let workloads = named_workloads();
    // Fewer images than the default sweep, for the test's time: `seglog sweep
    // --ablate-steps` gives every step the same verdict with both (docs/design.md
    // section 8).
    let options = SweepOptions {
        images_per_point: 8,
        recovery_crash_images: 1,
        ..SweepOptions::default()
    };
    let steps = sync_steps();
    assert!(
        steps.len() >= 30,
        "the fail point list lost its sync steps: {steps:?}"
    );
    // A step the cheap sweep does not catch is swept again at the default options
    // (32 images per point, 2 recovery crash images) before it counts as a blind
    // spot: `log::recovery::sync_scanned_dir` needs a single lost directory entry
    // among six pending ones, which the 9th to 16th images of a point hold.
    let catchers = seglog_suite::conformance::regressions::catchers();
    let rows: Vec<StepRow> = steps
        .iter()
        .map(|step| {
            let row = ablate_step(step, &workloads, &options, &model_verdict, &catchers);
            if matches!(row.verdict, Verdict::Caught | Verdict::Redundant) {
                row
            } else {
                ablate_step(
                    step,
                    &workloads,
                    &SweepOptions::default(),
                    &model_verdict,
                    &catchers,
                )
            }
        })
        .collect();
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| !matches!(r.verdict, Verdict::Caught | Verdict::Redundant))
        .map(|r| format!("{}: {} ({})", r.failpoint, r.verdict.name(), r.detail))
        .collect();
    assert!(
        bad.is_empty(),
        "sync steps neither caught nor proven redundant:\n{}",
        bad.join("\n")
    );
    // The steps the per-call ablation could not judge (needed only after a crash,
    // or idle in the run it skipped) are caught by the sweep itself now.
    for needed in [
        "log::flush::sync_log",
        "log::roll::sync_index",
        "log::close::sync_dir",
        "log::recovery::sync_log_dir",
        "log::recovery::sync_parent",
        // Work only when an open rebuilds a closed segment's index files: the
        // `drop-indexes` workload (an operator deletes them while the log is down).
        "log::recovery::sync_scanned",
        "log::recovery::sync_scanned_dir",
    ] {
        let row = rows.iter().find(|r| r.failpoint == needed).unwrap();
        assert_eq!(row.verdict, Verdict::Caught, "{needed}: {}", row.detail);
    }
}

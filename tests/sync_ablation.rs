//! Sync ablation (`seglog sweep --ablate`): every fsync of the cleanup protocols
//! (compaction build, install, retention) is needed and the crash sweep alone notices
//! when it is skipped, or the protocol model proves it redundant. An ablation that is
//! neither is a blind spot of the sweep and fails here.
#![cfg(feature = "suite")] // the suite, its binary or seglog-model

use seglog::sweep::ablation::{ablate, is_protocol_sync, model_verdict, Verdict};
use seglog::sweep::{named_workloads, SweepOptions};

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
        "compaction::build::sync_tmp_dir",
    ] {
        assert!(
            rows.iter()
                .any(|r| r.failpoint == Some(needed) && r.verdict == Verdict::Caught),
            "{needed} not caught by the sweep"
        );
    }
}

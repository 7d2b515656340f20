//! The default (CI) crash sweep over every named workload: zero violations, and at
//! least 10,000 disk images checked in total (a count, never a time).
//!
//! Invariants checked for every image (src/sweep): recovery succeeds; the recovered
//! log is a state between the last durability point and the state after the
//! interrupted operation (an interrupted retention or compaction is exactly old or
//! exactly new); no temporary or backup files survive; a second open changes nothing.

use seglog_suite::sweep::{named_workloads, sweep, sweep_selected, SweepOptions};

/// The pull-request tier's share: every eighth crash point of every named
/// workload, in the debug build (debug assertions and overflow checks on). The whole
/// sweep runs in release in `seglog verify --budget quick` (the same workloads and
/// options: its `crash_sweep` stage) and in debug in the nightly tier (below).
#[test]
fn every_eighth_crash_point_of_every_named_workload_finds_no_violation() {
    sweep_every_named_workload(8, 1_000);
}

#[test]
#[ignore = "nightly tier (.ci/nightly): every crash point, debug build"]
fn default_sweep_finds_no_violation_in_at_least_10000_images() {
    sweep_every_named_workload(1, 10_000);
}

/// Sweeps crash points `0, every, 2 * every, ...` (and the end) of every named
/// workload at the default options: no violation, and at least `min_images` disk
/// images in all.
fn sweep_every_named_workload(every: u64, min_images: u64) {
    let options = SweepOptions::default();
    let mut disk_images = 0;
    let mut crash_points = 0;
    let mut violations = Vec::new();
    let workloads = named_workloads();
    assert!(workloads.len() >= 6, "the named workloads went missing");
    for workload in &workloads {
        let report = if every == 1 {
            sweep(workload, &options, |_, _| {})
        } else {
            sweep_selected(workload, &options, &|_| {}, &|k| k % every == 0, |_, _| {})
        };
        // Every mutating file-system operation of the run is a crash point, and so
        // is the end of the run.
        assert!(
            report.operations > 0,
            "{}: no file-system operation",
            workload.name
        );
        if every == 1 {
            assert_eq!(
                report.crash_points,
                report.operations + 1,
                "{}: a crash point was not reached",
                workload.name
            );
        } else {
            assert!(
                report.crash_points >= (report.operations + 1) / every,
                "{}: {} of {} crash points swept",
                workload.name,
                report.crash_points,
                report.operations + 1
            );
        }
        assert!(
            report.disk_images > report.crash_points,
            "{}: power loss added no image",
            workload.name
        );
        disk_images += report.disk_images;
        crash_points += report.crash_points;
        violations.extend(report.violations.into_iter().map(|v| v.to_string()));
    }
    assert!(
        violations.is_empty(),
        "{} violations, first: {}",
        violations.len(),
        violations[0]
    );
    assert!(
        disk_images >= min_images,
        "only {disk_images} disk images over {crash_points} crash points"
    );
}

/// A `crash_recovery` fuzzer case: the engine rejects a compaction or retention with
/// bad arguments before it flushes anything, so an earlier unflushed append may still
/// be torn away; a sweep that counted the *rejected* operation as a durability point
/// would report that allowed state as a violation. Rejected operations are no
/// durability points.
#[test]
fn a_rejected_operation_is_no_durability_point() {
    use seglog_suite::sweep::{sweep, SweepOptions, Workload};
    use seglog_suite::workload::{Op, RecordSpec};
    let append = |key: &str, ts| Op::Append {
        records: vec![RecordSpec {
            key: Some(key.into()),
            value: Some("v".into()),
            ts,
        }],
        codec: None,
        log_append_time: None,
    };
    for rejected in [
        Op::Compact {
            now: 10,
            delete_retention_ms: -1,
            segment_bytes: None,
        },
        Op::Retain {
            now: 10,
            retention_ms: Some(-1),
            retention_bytes: None,
        },
    ] {
        let workload = Workload {
            name: "rejected-op".into(),
            description: "append, a rejected operation, append".into(),
            config: seglog::LogConfig::default(),
            ops: vec![append("a", 0), rejected, append("b", 1)],
            variant: "manifest".into(),
        };
        let report = sweep(&workload, &SweepOptions::default(), |_, _| {});
        assert!(report.disk_images > 0);
        assert!(
            report.violations.is_empty(),
            "{:?}",
            report.violations.first()
        );
    }
}

/// The oracle is exact: for a crash right after the manifest's rename became
/// durable, the image must recover to the new log and the old one is refused; just
/// before the rename, the reverse. (A recovery that rolls back after the commit point
/// recovers to a state the old "old or new" check accepted.)
#[test]
fn exact_oracle_picks_the_side_of_the_commit_point() {
    use std::sync::Arc;

    use seglog::fs::failpoint::{
        Recorder, INSTALL_MANIFEST_RENAME, INSTALL_SWAP_RENAME_LIVE_BACKUP,
    };
    use seglog::fs::sim::{CrashMode, SimFs};
    use seglog_suite::sweep::{run_to_end, run_until_crash, Allowed};

    let workload = named_workloads()
        .into_iter()
        .find(|w| w.name == "seed-compaction")
        .expect("the seeds' compaction workload");
    let compact = workload.ops.len() - 1;
    let probe_fs = Arc::new(SimFs::new());
    let counter = Arc::clone(&probe_fs);
    let recorder = Recorder::start_with_probe(move || counter.mutating_ops());
    run_to_end(&workload, &probe_fs).unwrap();
    let hits = recorder.hits_with_probe();
    drop(recorder);
    let at = |name: &str| {
        hits.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, k)| *k)
            .unwrap()
    };
    let states = Allowed::states(&workload);
    let old = states.old_view(Some(compact));
    let new = states.new_view(Some(compact)).unwrap();
    assert_ne!(old, new, "the workload's compaction changes the log");
    for (crash_before, want, refused) in [
        (at(INSTALL_MANIFEST_RENAME), &old, &new),
        (at(INSTALL_SWAP_RENAME_LIVE_BACKUP), &new, &old),
    ] {
        let fs = Arc::new(SimFs::new());
        fs.set_crash_before(crash_before);
        assert_eq!(
            run_until_crash(&workload, &fs).unwrap(),
            Some(Some(compact))
        );
        for image in fs.crash_images(CrashMode::PowerLoss, 64) {
            let exact = states.exact_after_crash(&workload, Some(compact), &image.fs);
            assert_eq!(exact.exact_view(), Some(want), "lost {:?}", image.lost);
            assert!(exact.mismatch(refused).is_some());
        }
    }
}

/// A raw append of several batches is no atomic unit on disk: a crash may keep any
/// prefix of its batches, each after the roll before it. The oracle's candidates
/// for a crash during the `raw-append` workload's first request name every prefix
/// (`S0+k`) and the rolls between them, and the sweep of that workload finds no
/// violation (without those candidates it finds 138, measured when written).
#[test]
fn raw_append_candidates_walk_every_prefix_of_the_request() {
    use seglog_suite::sweep::Allowed;

    let workload = named_workloads()
        .into_iter()
        .find(|w| w.name == "raw-append")
        .expect("the raw-append workload");
    let states = Allowed::states(&workload);
    let names = states.allowed_after_crash(&workload, Some(0)).names();
    assert_eq!(
        names,
        ["S0", "S0+1", "S0+2", "roll(S0+2)", "S0+3", "S1"],
        "{names:?}"
    );
    // The refused request (op 1) stores nothing: no walk, S2 == S1.
    assert_eq!(states.old_view(Some(1)), states.new_view(Some(1)).unwrap());
    let report = sweep(&workload, &SweepOptions::default(), |_, _| {});
    assert!(report.crash_points > 20);
    assert!(
        report.violations.is_empty(),
        "{:?}",
        report.violations.first()
    );
}

/// The sweep runs under either persistence model: the same crash points, no
/// violation under either, and under `ordered-metadata` only images that keep a
/// prefix of the pending directory operations, so fewer than under `any-subset`
/// for a workload whose operations span directories (the install's renames in the
/// parent beside the log directory's own).
#[test]
fn the_sweep_runs_under_both_persistence_models() {
    use seglog::fs::sim::Persistence;
    let workload = named_workloads()
        .into_iter()
        .find(|w| w.name == "seed-compaction")
        .expect("the seed-compaction workload");
    let report = |persistence| {
        let options = SweepOptions {
            persistence,
            ..SweepOptions::default()
        };
        sweep_selected(&workload, &options, &|_| {}, &|k| k % 4 == 0, |_, _| {})
    };
    let any = report(Persistence::AnySubset);
    let ordered = report(Persistence::OrderedMetadata);
    assert!(any.violations.is_empty(), "{:#?}", any.violations);
    assert!(ordered.violations.is_empty(), "{:#?}", ordered.violations);
    assert_eq!(any.crash_points, ordered.crash_points);
    assert!(
        ordered.disk_images < any.disk_images,
        "ordered-metadata {} images, any-subset {}",
        ordered.disk_images,
        any.disk_images
    );
}

//! The default (CI) crash sweep over every named workload: zero violations, and at
//! least 10,000 disk images checked in total (a count, never a time).
//!
//! Invariants checked for every image (src/sweep): recovery succeeds; the recovered
//! log is a state between the last durability point and the state after the
//! interrupted operation (an interrupted retention or compaction is exactly old or
//! exactly new); no temporary or backup files survive; a second open changes nothing.

use seglog::sweep::{named_workloads, sweep, SweepOptions};

#[test]
fn default_sweep_finds_no_violation_in_at_least_10000_images() {
    let options = SweepOptions::default();
    let mut disk_images = 0;
    let mut crash_points = 0;
    let mut violations = Vec::new();
    let workloads = named_workloads();
    assert!(workloads.len() >= 6, "the named workloads went missing");
    for workload in &workloads {
        let report = sweep(workload, &options, |_, _| {});
        // Every mutating file-system operation of the run is a crash point.
        assert!(
            report.operations > 0,
            "{}: no file-system operation",
            workload.name
        );
        assert_eq!(
            report.crash_points, report.operations,
            "{}: a crash point was not reached",
            workload.name
        );
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
        disk_images >= 10_000,
        "only {disk_images} disk images over {crash_points} crash points"
    );
}

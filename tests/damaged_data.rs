//! The damaged-data stage (`seglog_suite::damage`, `seglog verify` stage `damaged_data`)
//! on every named sweep workload.
//!
//! Invariants checked: for every bit flip, truncation and zeroed range of every
//! file (closed and active `.log`, `.index`, `.timeindex`, the checkpoint and its
//! temp file, the install's temp dir, backup, manifest and manifest temp file) at
//! each workload's end and at its protocol crash points, opening the log gives a
//! structured error naming the damaged file, or a recovery equal to the spec (a
//! reported whole-batch prefix when the active segment's tail was damaged); never a
//! silent acceptance, never a deletion beyond the active segment's torn tail, never
//! a damaged temp dir rolled forward; a failed open changes nothing beyond the
//! protocol recoveries.
//!
//! The lower bounds pin how much is tried per file kind, so a plan or a point
//! selection that silently shrinks fails here.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seglog_suite::damage::{self, DamageOptions, KindCount};
use seglog_suite::sweep::named_workloads;

/// The stage runs once for all tests of this file (tests run on threads).
fn run() -> &'static damage::DamageReport {
    static REPORT: OnceLock<damage::DamageReport> = OnceLock::new();
    REPORT.get_or_init(|| damage::run(&named_workloads(), &DamageOptions::quick(), |_, _, _| {}))
}

/// The pull-request tier's share, in the debug build: every workload's end and its
/// first protocol points (`SAMPLE_POINTS`), every planned damage of each. The whole
/// quick plan runs in release in `seglog verify --budget quick` (its
/// `damaged_data` stage) and in debug in the nightly tier (`run`).
fn sample() -> &'static damage::DamageReport {
    static REPORT: OnceLock<damage::DamageReport> = OnceLock::new();
    REPORT.get_or_init(|| {
        let options = DamageOptions {
            protocol_points: SAMPLE_POINTS,
            ..DamageOptions::quick()
        };
        damage::run(&named_workloads(), &options, |_, _, _| {})
    })
}

const SAMPLE_POINTS: usize = 4;

#[test]
fn every_damage_of_every_named_workload_is_an_error_or_a_correct_recovery_sampled() {
    every_damage_of_every_named_workload_is_an_error_or_a_correct_recovery_in(sample());
}

#[test]
#[ignore = "nightly tier (.ci/nightly): the whole quick plan, debug build"]
fn every_damage_of_every_named_workload_is_an_error_or_a_correct_recovery() {
    every_damage_of_every_named_workload_is_an_error_or_a_correct_recovery_in(run());
}

fn every_damage_of_every_named_workload_is_an_error_or_a_correct_recovery_in(
    report: &damage::DamageReport,
) {
    for workload in &report.per_workload {
        assert!(
            workload.violations.is_empty(),
            "{}: {} violations, first: {}",
            workload.workload,
            workload.violations.len(),
            workload.violations[0]
        );
        assert!(workload.points >= 1, "{}", workload.workload);
        assert!(workload.damages > 0, "{}", workload.workload);
    }
    assert_eq!(report.workloads, named_workloads().len());
    assert_eq!(report.violations, 0);
    assert_eq!(
        report.damages,
        report.errors + report.recovered + report.undetectable + report.read_errors
    );
}

#[test]
#[ignore = "nightly tier (.ci/nightly): the floors are the whole quick plan's"]
fn every_file_kind_is_damaged_often_enough() {
    let report = run();
    // Measured: 9707 damages at 70 points; the bounds leave ~10% room.
    // Measured 2026-11-30 after the sync ablation cut the install's syncs after its
    // two renames (fewer crash points hold a backup): 62 points, 8,251 damages.
    let minimum: BTreeMap<&str, u64> = [
        ("closed_log", 3_200),
        ("active_log", 1_100),
        // 77: after a reopen the byte count since the last
        // offset entry restarts at 0, as in Kafka, so the workloads that reopen hold
        // fewer offset entries; the close-time entry adds time entries (725 -> 767).
        ("offset_index", 70),
        ("time_index", 650),
        ("checkpoint", 140),
        ("checkpoint_tmp", 20),
        ("temp_log", 1_500),
        ("temp_other", 40),
        // With no reopen after cleanup, the temp dir holds each new
        // segment's index files and a recovery point (1,344 damages here).
        ("temp_derived", 1_000),
        ("backup_log", 650),
        // 168, for the same reason (indexes in the backup).
        ("backup_other", 150),
        ("manifest", 160),
        ("manifest_tmp", 20),
        ("trust_checkpoint", 100),
        // 1,323 in the whole quick plan: generic and lying flips of the live `.keys`.
        ("key_summary", 1_000),
    ]
    .into_iter()
    .collect();
    for (kind, at_least) in &minimum {
        let tried = report.per_kind.get(*kind).map_or(0, |c| c.damages);
        assert!(tried >= *at_least, "{kind}: {tried} damages < {at_least}");
    }
    assert!(report.points >= 60, "{} points", report.points);
    assert!(report.damages >= 8_200, "{} damages", report.damages);
}

#[test]
fn outcomes_are_where_the_design_puts_them_sampled() {
    outcomes_are_where_the_design_puts_them_in(sample());
}

#[test]
#[ignore = "nightly tier (.ci/nightly): the whole quick plan, debug build"]
fn outcomes_are_where_the_design_puts_them() {
    outcomes_are_where_the_design_puts_them_in(run());
}

fn outcomes_are_where_the_design_puts_them_in(report: &damage::DamageReport) {
    let kind = |name: &str| -> KindCount { report.per_kind.get(name).cloned().unwrap_or_default() };
    // Checksummed files of our own: damage is an error wherever the file is live.
    assert_eq!(kind("manifest").recovered, 0);
    assert_eq!(kind("manifest").errors, kind("manifest").damages);
    assert!(kind("checkpoint").errors > 0);
    // Derived data is rebuilt, never an error.
    for index in ["offset_index", "time_index"] {
        assert_eq!(kind(index).errors, 0, "{index}");
        assert_eq!(kind(index).recovered, kind(index).damages, "{index}");
    }
    // A damaged temp dir is dropped (rolled back), never an error, never trusted.
    assert_eq!(kind("temp_log").recovered, kind("temp_log").damages);
    // A damaged derived file of the temp dir (outside the manifest) is rolled
    // forward past and rebuilt or ignored by the open: never an error, never trusted.
    // Only a CRC-valid lie in its recovery point about what a trusted closed
    // segment holds is blind (see trust_checkpoint below).
    let derived = kind("temp_derived");
    assert_eq!(derived.errors, 0);
    let blind = derived.undetectable + derived.read_errors;
    assert!(blind * 10 < derived.damages, "{derived:?}");
    assert_eq!(derived.recovered + blind, derived.damages);
    // Closed segments fail closed: at the open, or (trusted from the recovery point,
    // so not read by the open) at the first read of the damaged bytes; the active
    // one is cut.
    let closed = kind("closed_log");
    assert!(closed.errors + closed.read_errors > closed.damages / 2);
    assert!(closed.read_errors > 0, "no trusted segment was damaged");
    // A damaged key summary is derived data: never an error, and a cleaning keeps
    // what it keeps without the damage (the summary is not trusted, the segment is
    // rewritten).
    let summaries = kind("key_summary");
    assert!(summaries.damages > 0, "no key summary was damaged");
    assert_eq!(summaries.errors, 0);
    assert_eq!(summaries.recovered, summaries.damages);
    // A damaged recovery point or marker is ignored (the open scans) and rewritten.
    // Only a CRC-valid forgery does otherwise: one whose next offset counts a
    // segment retention removed is refused as a lost segment (a point is
    // evidence), and one about what a trusted closed segment holds (its records,
    // its timestamps, a next offset inside a gap) is blind at open: undetectable,
    // or refused by the first read that meets it. A small share of the damages.
    let trust = kind("trust_checkpoint");
    let forged = trust.errors + trust.undetectable + trust.read_errors;
    assert!(forged * 10 < trust.damages, "{trust:?}");
    assert_eq!(trust.recovered + forged, trust.damages);
    assert!(kind("active_log").recovered > kind("active_log").errors);
    // The format's blind spots are exercised and counted, not hidden: baseOffset
    // and partitionLeaderEpoch are outside the CRC, and a cut at a batch boundary
    // leaves whole batches.
    assert!(kind("closed_log").undetectable > 0);
    assert!(kind("active_log").undetectable > 0);
    for other in [
        "manifest",
        "checkpoint",
        "offset_index",
        "time_index",
        "temp_log",
        "temp_derived",
    ] {
        assert_eq!(kind(other).undetectable, 0, "{other}");
    }
}

fn seglog_damage(args: &[&str]) -> (i32, String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_seglog"))
        .arg("damage")
        .args(args)
        .output()
        .expect("run seglog damage");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn seglog_damage_prints_the_numbers_and_exits_0() {
    let (code, stdout, stderr) = seglog_damage(&["--workload", "append-flush"]);
    assert_eq!(code, 0, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(report["workloads"], 1);
    assert_eq!(report["violations"], 0);
    for key in [
        "points",
        "damages",
        "errors",
        "recovered",
        "undetectable",
        "seconds",
        "per_kind",
    ] {
        assert!(report.get(key).is_some(), "no {key}: {report}");
    }
    assert!(report["damages"].as_u64().unwrap() > 100);
}

#[test]
fn seglog_damage_rejects_an_unknown_workload_with_exit_2() {
    let (code, stdout, stderr) = seglog_damage(&["--workload", "no-such-workload"]);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no-such-workload"), "{stderr}");
}

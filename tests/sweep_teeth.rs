//! The crash sweep has teeth: run against deliberately broken protocols, it must
//! report violations. A checker that finds nothing wrong in a broken engine is not a
//! checker.
//!
//! Invariants at stake: `install_atomic` (an interrupted compaction recovers to exactly
//! the old or exactly the new log), `prefix_only_deletion` with a durable
//! `log_start_offset` (an interrupted retention never leaves a log with a hole or a
//! start offset that moved back), and nothing flushed is ever lost.
//!
//! The broken variants (feature `test-variants`, never in normal builds):
//! * `no-dir-sync`: the install skips the parent-directory sync after a rename;
//! * `backup-before-manifest`: the install renames live -> backup before the
//!   manifest is durable;
//! * `delete-first`: retention removes segment files before the log-start
//!   checkpoint is durable;
//! * `two-rename`: the seeds' swap by two renames without a manifest;
//! * `no-temp-entry-sync`: the install before the exact oracle: the temp dir's entry
//!   is not synced before the manifest names it. Only the exact oracle catches it: a
//!   power loss keeps the manifest and loses the temp dir, and recovery rolls back
//!   to the old log, an outcome the "old or new" range accepted;
//! * `recovery-point-before-flush`: a roll writes the recovery point before it
//!   fsyncs the segment it closes;
//! * `clean-point-first` (model (c)): the new clean point is made durable in the live
//!   directory before the install commits. A crash in between recovers the old
//!   segments under the new clean point; only the clean point in the compared state
//!   (the exact oracle's `clean_point`) tells it from the old log.
//! * `point-on-reopen` (model (b)): the compacted directory is installed
//!   without its index files and recovery point and the log reopens after the
//!   install. A crash between the commit point and that reopen leaves new content
//!   whose open must scan every segment.
//!
//! * `sync-scanned-only-for-new-point` (model (e)): the open after an
//!   operator deleted closed segments' index files rebuilds them but, since the
//!   current recovery point already vouches for those segments, neither fsyncs them
//!   nor rewrites the point. The violations come after that open (a power loss takes
//!   the rebuilt index and the next open must rescan a trusted segment).
//!
//! * `stale-tail-copy`: a concurrent cleaning copies the active segment
//!   at its snapshot instead of linking the tail at the swap: the appends made
//!   during the build are lost;
//! * `unlocked-swap`: appends and a roll run between the tail's links and
//!   the renames: the segment rolled in the old directory goes with the trash.
//! * `unflushed-swap`: the swap writes a recovery point naming the tail's
//!   bytes without flushing the appends made since the snapshot.
//!
//! For each, the sweep over the named workloads must report at least one violation,
//! only in the operations the variant changes, and every violation must replay from
//! its scenario file as a violation.

use seglog_suite::scenario::{replay_expecting, Outcome, Scenario};
use seglog_suite::sweep::{named_workloads, sweep_selected, SweepOptions, Workload};
use seglog_suite::workload::Op;

/// Sweeps every named workload that runs `touches` against `variant`; returns the
/// workloads with their violations.
/// The pull-request tier's sample: crash points `0, SAMPLE, 2 * SAMPLE, ...` of each
/// workload (each variant above is caught there too).
const SAMPLE: u64 = 3;

fn sweep_variant(
    variant: &str,
    touches: fn(&Op) -> bool,
    every: u64,
) -> Vec<(Workload, Vec<seglog_suite::sweep::Violation>)> {
    let options = SweepOptions::default();
    named_workloads()
        .into_iter()
        .filter(|w| w.ops.iter().any(touches))
        .map(|mut workload| {
            workload.variant = variant.to_string();
            let report =
                sweep_selected(&workload, &options, &|_| {}, &|k| k % every == 0, |_, _| {});
            (workload, report.violations)
        })
        .collect()
}

fn is_compact(op: &Op) -> bool {
    matches!(op, Op::Compact { .. })
}

fn is_cleaning(op: &Op) -> bool {
    matches!(op, Op::Compact { .. } | Op::Clean { .. })
}

fn is_retain(op: &Op) -> bool {
    matches!(op, Op::Retain { .. })
}

fn assert_caught(variant: &str, touches: fn(&Op) -> bool, every: u64) {
    let results = sweep_variant(variant, touches, every);
    assert!(!results.is_empty(), "no named workload exercises {variant}");
    let total: usize = results.iter().map(|(_, v)| v.len()).sum();
    assert!(
        total > 0,
        "the sweep found nothing wrong with the broken variant {variant}"
    );
    for (workload, violations) in &results {
        for violation in violations {
            // Only the operation the variant changes can be interrupted into a violation.
            let op = violation
                .interrupted_op
                .and_then(|i| workload.ops.get(i))
                .unwrap_or_else(|| {
                    panic!("{variant}: violation outside any operation: {violation}")
                });
            assert!(
                touches(op),
                "{variant}: violation during an operation the variant does not change: {violation}"
            );
        }
        assert_first_replays(variant, workload, violations);
    }
}

#[test]
fn no_dir_sync_after_rename_is_caught() {
    no_dir_sync_after_rename_is_caught_at(SAMPLE);
}

fn no_dir_sync_after_rename_is_caught_at(every: u64) {
    assert_caught("no-dir-sync", is_compact, every);
}

#[test]
fn backup_before_durable_manifest_is_caught() {
    backup_before_durable_manifest_is_caught_at(SAMPLE);
}

fn backup_before_durable_manifest_is_caught_at(every: u64) {
    assert_caught("backup-before-manifest", is_compact, every);
}

#[test]
fn delete_before_durable_checkpoint_is_caught() {
    delete_before_durable_checkpoint_is_caught_at(SAMPLE);
}

fn delete_before_durable_checkpoint_is_caught_at(every: u64) {
    assert_caught("delete-first", is_retain, every);
}

#[test]
fn two_rename_swap_is_caught() {
    two_rename_swap_is_caught_at(SAMPLE);
}

fn two_rename_swap_is_caught_at(every: u64) {
    assert_caught("two-rename", is_compact, every);
}

#[test]
fn unsynced_temp_entry_under_a_durable_manifest_is_caught() {
    unsynced_temp_entry_under_a_durable_manifest_is_caught_at(SAMPLE);
}

fn unsynced_temp_entry_under_a_durable_manifest_is_caught_at(every: u64) {
    assert_caught("no-temp-entry-sync", is_compact, every);
}

fn is_roll(op: &Op) -> bool {
    // A roll, or an append that rolls first (a concurrent cleaning rolls between
    // its build and its swap).
    matches!(
        op,
        Op::Roll | Op::Append { .. } | Op::AppendRaw { .. } | Op::CleanWithAppends { .. }
    )
}

/// Model (e), variant `recovery-point-before-flush`: the roll writes the recovery point
/// before it fsyncs the segment it closes; a power loss in between keeps a point that
/// vouches for bytes the disk lost, and the open refuses the log.
#[test]
fn recovery_point_before_flush_is_caught() {
    recovery_point_before_flush_is_caught_at(SAMPLE);
}

fn recovery_point_before_flush_is_caught_at(every: u64) {
    assert_caught("recovery-point-before-flush", is_roll, every);
}

#[test]
fn clean_point_before_the_install_commits_is_caught() {
    clean_point_before_the_install_commits_is_caught_at(SAMPLE);
}

fn clean_point_before_the_install_commits_is_caught_at(every: u64) {
    assert_caught("clean-point-first", is_cleaning, every);
}

#[test]
fn new_content_without_its_recovery_point_is_caught() {
    new_content_without_its_recovery_point_is_caught_at(SAMPLE);
}

fn new_content_without_its_recovery_point_is_caught_at(every: u64) {
    assert_caught("point-on-reopen", is_cleaning, every);
}

fn is_concurrent_clean(op: &Op) -> bool {
    matches!(op, Op::CleanWithAppends { .. })
}

/// The broken swaps lose records inside the operation; the log they leave then
/// diverges in the operations after it, so a violation may come at or after the
/// first concurrent cleaning, never before.
fn assert_caught_from_first_concurrent_clean(variant: &str, every: u64) {
    let results = sweep_variant(variant, is_concurrent_clean, every);
    assert!(!results.is_empty(), "no named workload cleans concurrently");
    let total: usize = results.iter().map(|(_, v)| v.len()).sum();
    assert!(total > 0, "the sweep found nothing wrong with {variant}");
    for (workload, violations) in &results {
        let first = workload
            .ops
            .iter()
            .position(is_concurrent_clean)
            .expect("filtered on clean_with_appends");
        let during = violations
            .iter()
            .filter(|v| v.interrupted_op == Some(first))
            .count();
        assert!(
            during > 0,
            "{variant}: nothing caught during the operation itself"
        );
        for violation in violations {
            let at = violation.interrupted_op.unwrap_or(0);
            assert!(
                at >= first,
                "{variant}: violation before the operation: {violation}"
            );
        }
        assert_first_replays(variant, workload, violations);
    }
}

#[test]
fn tail_copied_at_the_snapshot_is_caught() {
    tail_copied_at_the_snapshot_is_caught_at(SAMPLE);
}

fn tail_copied_at_the_snapshot_is_caught_at(every: u64) {
    assert_caught_from_first_concurrent_clean("stale-tail-copy", every);
}

#[test]
fn appends_not_held_during_the_swap_are_caught() {
    appends_not_held_during_the_swap_are_caught_at(SAMPLE);
}

fn appends_not_held_during_the_swap_are_caught_at(every: u64) {
    assert_caught_from_first_concurrent_clean("unlocked-swap", every);
}

/// `unflushed-swap`: the swap's recovery point names the tail's bytes
/// before the appends made since the snapshot are flushed; a power loss keeps the
/// point and loses the bytes it vouches for.
#[test]
fn a_swap_that_does_not_flush_the_tail_first_is_caught() {
    a_swap_that_does_not_flush_the_tail_first_is_caught_at(SAMPLE);
}

fn a_swap_that_does_not_flush_the_tail_first_is_caught_at(every: u64) {
    assert_caught_from_first_concurrent_clean("unflushed-swap", every);
}

fn is_interleaved_clean(op: &Op) -> bool {
    matches!(
        op,
        Op::CleanWithAppends {
            appends_at: Some(_),
            ..
        }
    )
}

/// `unbounded-map`: the build maps records appended after its snapshot. Only a
/// workload whose appends run during the build can show it (`concurrent_clean.rs`
/// shows the after-the-build order cannot); the sweep catches it there, never
/// before the first such cleaning, and the first violation replays.
#[test]
fn a_build_mapping_past_its_snapshot_is_caught() {
    a_build_mapping_past_its_snapshot_is_caught_at(SAMPLE);
}

fn a_build_mapping_past_its_snapshot_is_caught_at(every: u64) {
    let variant = "unbounded-map";
    let results = sweep_variant(variant, is_interleaved_clean, every);
    assert!(
        !results.is_empty(),
        "no named workload appends during a build"
    );
    let total: usize = results.iter().map(|(_, v)| v.len()).sum();
    assert!(total > 0, "the sweep found nothing wrong with {variant}");
    for (workload, violations) in &results {
        let first = workload
            .ops
            .iter()
            .position(is_interleaved_clean)
            .expect("filtered on it");
        for violation in violations {
            let at = violation.interrupted_op.unwrap_or(0);
            assert!(
                at >= first,
                "{variant}: violation before the operation: {violation}"
            );
        }
        if !violations.is_empty() {
            assert_first_replays(variant, workload, violations);
        }
    }
}

/// The damage is done by the open inside `drop_indexes` and shows after it: every
/// violation comes from a crash at or after the first `drop_indexes`.
#[test]
fn rebuilt_indexes_left_unsynced_under_the_current_point_are_caught() {
    rebuilt_indexes_left_unsynced_under_the_current_point_are_caught_at(SAMPLE);
}

fn rebuilt_indexes_left_unsynced_under_the_current_point_are_caught_at(every: u64) {
    let variant = "sync-scanned-only-for-new-point";
    let results = sweep_variant(variant, |op| matches!(op, Op::DropIndexes), every);
    assert!(!results.is_empty(), "no named workload drops index files");
    let total: usize = results.iter().map(|(_, v)| v.len()).sum();
    assert!(total > 0, "the sweep found nothing wrong with {variant}");
    for (workload, violations) in &results {
        let first_drop = workload
            .ops
            .iter()
            .position(|op| matches!(op, Op::DropIndexes))
            .expect("filtered on drop_indexes");
        for violation in violations {
            let at = violation.interrupted_op.unwrap_or(0);
            assert!(
                at >= first_drop,
                "{variant}: violation before any index file was dropped: {violation}"
            );
        }
        assert_first_replays(variant, workload, violations);
    }
}

/// The smallest reproduction replays from its scenario file as a violation.
fn assert_first_replays(
    variant: &str,
    workload: &Workload,
    violations: &[seglog_suite::sweep::Violation],
) {
    if let Some(first) = violations.first() {
        let scenario = Scenario::from_violation(workload, first, Default::default());
        let reparsed = Scenario::parse(&scenario.to_toml()).expect("scenario round-trips");
        let replayed = replay_expecting(&reparsed, variant, Outcome::Violation);
        assert!(
            replayed.passed,
            "{variant}: {first} does not replay as a violation: {:?}",
            replayed.diff
        );
    }
}

/// The pull-request tier sweeps every `SAMPLE`-th crash point of each workload (the
/// crash sweep of `seglog verify --budget quick` sweeps every one, on our protocol);
/// this runs every check above at every crash point.
#[test]
#[ignore = "nightly tier (.ci/nightly): every crash point of every variant"]
fn every_variant_is_caught_at_every_crash_point() {
    no_dir_sync_after_rename_is_caught_at(1);
    backup_before_durable_manifest_is_caught_at(1);
    delete_before_durable_checkpoint_is_caught_at(1);
    two_rename_swap_is_caught_at(1);
    unsynced_temp_entry_under_a_durable_manifest_is_caught_at(1);
    recovery_point_before_flush_is_caught_at(1);
    clean_point_before_the_install_commits_is_caught_at(1);
    new_content_without_its_recovery_point_is_caught_at(1);
    tail_copied_at_the_snapshot_is_caught_at(1);
    appends_not_held_during_the_swap_are_caught_at(1);
    a_build_mapping_past_its_snapshot_is_caught_at(1);
    a_swap_that_does_not_flush_the_tail_first_is_caught_at(1);
    rebuilt_indexes_left_unsynced_under_the_current_point_are_caught_at(1);
}

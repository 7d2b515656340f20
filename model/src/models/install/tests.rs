//! The install model: ours holds, a crash during recovery is explored, power loss
//! enumerates every subset.

use super::fs::{crash, power_losses, run_step};
use super::*;
use stateright::Checker;

#[test]
fn manifest_protocol_is_crash_safe() {
    let checker = InstallModel::new(InstallVariant::Manifest)
        .checker()
        .spawn_bfs()
        .join();
    checker.assert_properties();
    // Pinned: a change means the explored space changed; review before updating.
    // 322 includes the swap's tail link and its temp-dir sync.
    assert_eq!(checker.unique_state_count(), 322);
}

#[test]
fn crash_during_recovery_is_explored() {
    let checker = InstallModel::new(InstallVariant::Manifest)
        .checker()
        .spawn_bfs()
        .join();
    let path = checker.assert_any_discovery("recovered_after_crash_in_recovery");
    let crashes = path
        .into_actions()
        .iter()
        .filter(|a| matches!(a, InstallAction::Crash { .. }))
        .count();
    assert_eq!(crashes, 2);
}

#[test]
fn power_loss_enumerates_every_subset_of_unsynced_items() {
    let mut fs = FsState::initial();
    run_step(&mut fs, InstallOp::BuildTemp);
    // One pending create plus the temp dir's unsynced data: 4 subsets.
    assert_eq!(power_losses(&fs).len(), 4);
    run_step(&mut fs, InstallOp::SyncTempFiles);
    run_step(&mut fs, InstallOp::SyncTempDir);
    assert_eq!(power_losses(&fs).len(), 2);
    run_step(&mut fs, InstallOp::SyncParent);
    assert_eq!(power_losses(&fs).len(), 1);
    let mut lost = fs.clone();
    crash(&mut lost, CrashSemantics::PowerLoss, &[]);
    assert_eq!(lost.content(Name::Temp), Some(Content::New));
    assert_eq!(lost.content(Name::Live), Some(Content::Old));
}

#[test]
fn a_durable_manifest_must_name_a_durable_temp_dir() {
    // The protocol before the exact oracle: the temp dir's entry was not synced
    // before the manifest's rename, so a power loss could keep the manifest and lose
    // the temp dir, and recovery rolled back past the commit point.
    let checker = InstallModel::new(InstallVariant::NoTempEntrySync)
        .checker()
        .spawn_bfs()
        .join();
    let path = checker.assert_any_discovery("committed_means_new");
    let lost_temp = path.into_actions().iter().any(|a| {
        matches!(a, InstallAction::Crash { semantics: CrashSemantics::PowerLoss, lost }
            if lost.iter().any(|l| matches!(l, Lost::DirOp { op: DirOp::Create(Name::Temp, _), .. })))
    });
    assert!(lost_temp, "the counterexample loses the temp dir's entry");
}

#[test]
fn new_content_without_its_recovery_point_is_refuted() {
    // The protocol without "no reopen after cleanup": the temp dir holds no
    // recovery point and the open after the install writes one. A crash between the
    // commit point and that write rolls forward to new content nothing vouches for:
    // the next open scans every segment.
    let checker = InstallModel::new(InstallVariant::PointOnReopen)
        .checker()
        .spawn_bfs()
        .join();
    let path = checker.assert_any_discovery("installed_content_trusted");
    let actions = path.into_actions();
    let committed = actions.iter().position(|a| {
        matches!(
            a,
            InstallAction::Step {
                op: InstallOp::RenameManifest,
                ..
            }
        )
    });
    let crashed = actions
        .iter()
        .position(|a| matches!(a, InstallAction::Crash { .. }));
    assert!(
        committed < crashed,
        "the crash comes after the commit: {actions:?}"
    );
}

/// The first counterexample's actions for `property` in `variant`.
fn counterexample(variant: InstallVariant, property: &'static str) -> Vec<InstallAction> {
    let checker = InstallModel::new(variant).checker().spawn_bfs().join();
    checker.assert_any_discovery(property).into_actions()
}

#[test]
fn carried_segment_by_rename_is_refuted() {
    // Carried segments: renaming one out of `D` (no copy) leaves the old
    // content without it; a process crash before the commit point recovers a log
    // with a hole.
    let actions = counterexample(InstallVariant::CarryByRename, "live_is_old_or_new");
    assert!(actions.iter().any(|a| matches!(
        a,
        InstallAction::Step {
            op: InstallOp::MoveCarried,
            ..
        }
    )));
    let committed = actions.iter().any(|a| {
        matches!(
            a,
            InstallAction::Step {
                op: InstallOp::RenameManifest,
                ..
            }
        )
    });
    assert!(!committed, "refuted before the commit point: {actions:?}");
}

#[test]
fn carried_segment_linked_after_the_temp_sync_is_refuted() {
    // The link is a directory entry of the temp dir: made after its fsync, the
    // manifest can commit while a power loss still takes the link away.
    let actions = counterexample(InstallVariant::LinkWithoutDirSync, "committed_means_new");
    let lost_temp_entries = actions.iter().any(|a| {
        matches!(a, InstallAction::Crash { semantics: CrashSemantics::PowerLoss, lost }
            if lost.contains(&Lost::Data(Obj::NewDir)))
    });
    assert!(
        lost_temp_entries,
        "the temp dir's link is lost: {actions:?}"
    );
}

#[test]
fn removing_the_backup_keeps_the_linked_copy() {
    // Both contents name the carried inode; removing one name (the backup, or the
    // temp dir on a roll back) leaves the other whole.
    let mut fs = FsState::initial();
    for op in InstallVariant::Manifest.steps() {
        run_step(&mut fs, op);
    }
    assert_eq!(fs.content(Name::Live), Some(Content::New));
    assert!(fs.carried.contains(&Obj::NewDir));
    let mut without = fs.clone();
    without.carried.remove(&Obj::NewDir);
    assert_eq!(without.content(Name::Live), Some(Content::Torn));
}

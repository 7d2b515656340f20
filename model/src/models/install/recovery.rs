//! The recovery decision table of the install protocol (docs/design.md section 6), as
//! a pure function of what `Log::open` sees next to the live directory `D`, and the
//! operations of its plans as they run on the file system.

use serde::{Deserialize, Serialize};

use super::fs::{Content, FsState, Name};
use crate::models::dir::DirOp;

/// One recovery action; every mutation is followed by a [`RecoveryOp::SyncParent`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RecoveryOp {
    Remove(Name),
    Rename { from: Name, to: Name },
    SyncParent,
}

/// Which row of the table applied (the engine's recovery report says the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RecoveryCase {
    /// Nothing next to `D`: nothing to do.
    Clean,
    /// No valid manifest: the compaction never committed; `D` is authoritative.
    NotCommitted,
    /// Valid manifest and a directory that validates: the new content becomes `D`.
    RollForward,
    /// Valid manifest, nothing validates: the old content becomes `D`.
    RollBack,
}

/// The decision: a case and its plan, or fail closed (delete nothing) with a reason.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Decision {
    Recover {
        case: RecoveryCase,
        plan: Vec<RecoveryOp>,
    },
    FailClosed(&'static str),
}

/// Runs one recovery operation on `fs`.
pub(super) fn run_recovery_op(fs: &mut FsState, op: &RecoveryOp) {
    match op {
        RecoveryOp::Remove(name) => fs.parent.run(DirOp::Remove(*name)),
        RecoveryOp::Rename { from, to } => fs.parent.run(DirOp::Rename {
            from: *from,
            to: *to,
        }),
        RecoveryOp::SyncParent => fs.parent.sync(),
    }
}

fn remove_each(fs: &FsState, names: &[Name], plan: &mut Vec<RecoveryOp>) {
    for name in names {
        if fs.content(*name).is_some() {
            plan.push(RecoveryOp::Remove(*name));
            plan.push(RecoveryOp::SyncParent);
        }
    }
}

/// The decision table. Every plan starts with a parent-directory sync: after a process
/// crash, the crashed process's last directory operations may still be unsynced, and
/// acting on them before they are durable lets a later power loss bring back a state
/// that was never seen (this model's `no-recovery-sync` variant).
pub fn decide(fs: &FsState) -> Decision {
    let mut decision = decide_unsynced(fs);
    if let Decision::Recover { plan, .. } = &mut decision {
        plan.insert(0, RecoveryOp::SyncParent);
    }
    decision
}

/// The decision table without the leading parent sync (the `no-recovery-sync` variant).
pub fn decide_unsynced(fs: &FsState) -> Decision {
    let live = fs.content(Name::Live);
    let temp = fs.content(Name::Temp);
    let backup = fs.content(Name::Backup);
    let mut plan = Vec::new();
    if !fs.manifest_valid() {
        if backup.is_some() {
            return Decision::FailClosed("backup without a valid manifest is ambiguous");
        }
        if live.is_none() {
            return Decision::FailClosed("no live directory and no valid manifest");
        }
        remove_each(
            fs,
            &[Name::Temp, Name::ManifestTemp, Name::Manifest],
            &mut plan,
        );
        let case = if plan.is_empty() {
            RecoveryCase::Clean
        } else {
            RecoveryCase::NotCommitted
        };
        return Decision::Recover { case, plan };
    }
    let case = if live == Some(Content::New) {
        remove_each(fs, &[Name::Temp, Name::Backup], &mut plan);
        RecoveryCase::RollForward
    } else if temp == Some(Content::New) {
        if live.is_some() {
            if backup.is_some() {
                return Decision::FailClosed("live, temp and backup all present");
            }
            plan.push(RecoveryOp::Rename {
                from: Name::Live,
                to: Name::Backup,
            });
            plan.push(RecoveryOp::SyncParent);
        }
        plan.push(RecoveryOp::Rename {
            from: Name::Temp,
            to: Name::Live,
        });
        plan.push(RecoveryOp::SyncParent);
        if live.is_some() || backup.is_some() {
            plan.push(RecoveryOp::Remove(Name::Backup));
            plan.push(RecoveryOp::SyncParent);
        }
        RecoveryCase::RollForward
    } else if live == Some(Content::Old) {
        remove_each(fs, &[Name::Temp, Name::Backup], &mut plan);
        RecoveryCase::RollBack
    } else if backup == Some(Content::Old) {
        remove_each(fs, &[Name::Live], &mut plan);
        plan.push(RecoveryOp::Rename {
            from: Name::Backup,
            to: Name::Live,
        });
        plan.push(RecoveryOp::SyncParent);
        remove_each(fs, &[Name::Temp], &mut plan);
        RecoveryCase::RollBack
    } else {
        return Decision::FailClosed("a valid manifest but neither new nor old content");
    };
    remove_each(fs, &[Name::ManifestTemp], &mut plan);
    plan.push(RecoveryOp::Remove(Name::Manifest));
    plan.push(RecoveryOp::SyncParent);
    Decision::Recover { case, plan }
}

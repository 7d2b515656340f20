//! Model (d): the order of a retention deletion. Segments `00..0.log` (offsets 0..10),
//! `10` (10..20) and the active `20`; retention deletes the first two, so the new
//! `log_start_offset` is 20. The checkpoint `log-start-offset.checkpoint` holds 0.
//!
//! - `checkpoint-first` (ours): write the checkpoint temp, sync it, rename it over the
//!   checkpoint, sync the log directory; only then unlink the segments and sync.
//! - `delete-first`: unlink, sync, then the checkpoint. A power loss that keeps the
//!   unlink of `10` but loses the unlink of `0` leaves segments 0 and 20 with a
//!   checkpoint of 0: a hole at 10..20 that recovery cannot tell from data loss.
//!
//! Recovery (on open), one operation at a time so crashes during it are explored too:
//! sync the log directory, remove the checkpoint temp, read the checkpoint, unlink every
//! segment wholly below it, sync the directory.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use super::dir::{subsets, Dir, DirOp};

/// Offsets each closed segment covers.
pub const SEGMENT_OFFSETS: i64 = 10;
const BASES: [i64; 3] = [0, 10, 20];
const ACTIVE_BASE: i64 = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RName {
    Segment(i64),
    Checkpoint,
    CheckpointTemp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RObj {
    Segment(i64),
    /// A checkpoint file holding this log_start_offset.
    Checkpoint(i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RetentionOp {
    WriteCheckpointTemp,
    SyncCheckpointTemp,
    RenameCheckpoint,
    SyncDir,
    Unlink(i64),
    /// Recovery: remove a leftover checkpoint temp.
    RemoveCheckpointTemp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RetentionVariant {
    CheckpointFirst,
    DeleteFirst,
    /// Checkpoint first, but recovery unlinks before syncing the directory it found.
    NoRecoverySync,
    /// Ours without the steps whose bits are set in the mask (bit `n`: step `n`;
    /// syncs, for the sync ablation's judge).
    WithoutSteps(u32),
}

impl RetentionVariant {
    pub fn steps(self) -> Vec<RetentionOp> {
        use RetentionOp::*;
        let checkpoint = [
            WriteCheckpointTemp,
            SyncCheckpointTemp,
            RenameCheckpoint,
            SyncDir,
        ];
        // No sync after the unlinks: a lost unlink brings back a segment below the
        // durable checkpoint, which recovery removes (proved redundant by the sync
        // ablation and this model).
        let unlink = [Unlink(0), Unlink(10)];
        match self {
            RetentionVariant::CheckpointFirst | RetentionVariant::NoRecoverySync => {
                checkpoint.into_iter().chain(unlink).collect()
            }
            RetentionVariant::WithoutSteps(mask) => {
                crate::models::without_steps(checkpoint.into_iter().chain(unlink).collect(), mask)
            }
            RetentionVariant::DeleteFirst => unlink.into_iter().chain(checkpoint).collect(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RetentionAction {
    Step {
        n: usize,
        op: RetentionOp,
    },
    /// Power loss dropping the listed unsynced directory operations (and the checkpoint
    /// temp's data if `temp_data_lost`); an empty list with `process` is a process crash.
    Crash {
        process: bool,
        lost_dir_ops: Vec<usize>,
        temp_data_lost: bool,
    },
    /// Open: read the checkpoint and plan the cleanup.
    Recover,
    RecoverStep {
        n: usize,
        op: RetentionOp,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RPhase {
    Running(usize),
    Crashed,
    Recovering { plan: Vec<RetentionOp>, done: usize },
    Recovered,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RetentionState {
    pub dir: Dir<RName, RObj>,
    /// The new checkpoint's data (the only unsynced file data here): synced, or torn
    /// by a power loss (the file then fails its checksum).
    pub temp_synced: bool,
    pub temp_torn: bool,
    /// The highest log_start_offset the durable directory ever implied: what a reader
    /// could have been told before a crash.
    pub durable_start_max: i64,
    pub crashes: u8,
    pub phase: RPhase,
}

impl RetentionState {
    fn segments(&self) -> Vec<i64> {
        self.dir
            .entries
            .keys()
            .filter_map(|n| match n {
                RName::Segment(b) => Some(*b),
                _ => None,
            })
            .collect()
    }

    /// The checkpointed log_start_offset in `entries` (0 if the file is missing or torn:
    /// fail safe, keep every segment).
    fn checkpoint_in(&self, entries: &BTreeMap<RName, RObj>) -> i64 {
        match entries.get(&RName::Checkpoint) {
            // The new checkpoint (value ACTIVE_BASE) is the temp file renamed.
            Some(RObj::Checkpoint(v)) if !(self.temp_torn && *v == ACTIVE_BASE) => *v,
            _ => 0,
        }
    }

    fn checkpoint(&self) -> i64 {
        self.checkpoint_in(&self.dir.entries)
    }

    /// The log_start_offset the durable entries imply.
    fn durable_start(&self) -> i64 {
        let first = self.dir.durable.keys().find_map(|n| match n {
            RName::Segment(b) => Some(*b),
            _ => None,
        });
        first
            .unwrap_or(ACTIVE_BASE)
            .max(self.checkpoint_in(&self.dir.durable))
    }

    /// The log_start_offset a reopened log reports.
    pub fn log_start_offset(&self) -> Option<i64> {
        self.segments().first().map(|b| (*b).max(self.checkpoint()))
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RetentionModel {
    pub variant: RetentionVariant,
    /// Crashes per behaviour; 2 covers a crash during recovery.
    pub crashes_max: u8,
}

impl RetentionModel {
    pub fn new(variant: RetentionVariant) -> RetentionModel {
        RetentionModel {
            variant,
            crashes_max: 2,
        }
    }
}

fn run_op(state: &mut RetentionState, op: RetentionOp) {
    match op {
        RetentionOp::WriteCheckpointTemp => state.dir.run(DirOp::Create(
            RName::CheckpointTemp,
            RObj::Checkpoint(ACTIVE_BASE),
        )),
        RetentionOp::SyncCheckpointTemp => state.temp_synced = true,
        RetentionOp::RenameCheckpoint => state.dir.run(DirOp::Rename {
            from: RName::CheckpointTemp,
            to: RName::Checkpoint,
        }),
        RetentionOp::SyncDir => state.dir.sync(),
        RetentionOp::Unlink(base) => state.dir.run(DirOp::Remove(RName::Segment(base))),
        RetentionOp::RemoveCheckpointTemp => state.dir.run(DirOp::Remove(RName::CheckpointTemp)),
    }
    state.durable_start_max = state.durable_start_max.max(state.durable_start());
}

/// Recovery's plan: sync the directory first (what the crashed process did may still
/// be unsynced, and acting on it first lets a power loss undo the base of the
/// decision), remove the checkpoint temp, unlink every segment wholly below the
/// checkpoint, sync.
fn recovery_plan(state: &RetentionState, variant: RetentionVariant) -> Vec<RetentionOp> {
    let mut plan = Vec::new();
    if variant != RetentionVariant::NoRecoverySync {
        plan.push(RetentionOp::SyncDir);
    }
    if state.dir.get(&RName::CheckpointTemp).is_some() {
        plan.push(RetentionOp::RemoveCheckpointTemp);
    }
    let checkpoint = state.checkpoint();
    for base in state.segments() {
        if base + SEGMENT_OFFSETS <= checkpoint && base != ACTIVE_BASE {
            plan.push(RetentionOp::Unlink(base));
        }
    }
    // In the engine this last sync is the log open's phase 9 (its directory sync
    // before the open returns), not a step of retention's own recovery.
    plan.push(RetentionOp::SyncDir);
    plan
}

impl Model for RetentionModel {
    type State = RetentionState;
    type Action = RetentionAction;

    fn init_states(&self) -> Vec<RetentionState> {
        let mut entries: BTreeMap<RName, RObj> = BASES
            .iter()
            .map(|b| (RName::Segment(*b), RObj::Segment(*b)))
            .collect();
        entries.insert(RName::Checkpoint, RObj::Checkpoint(0));
        vec![RetentionState {
            dir: Dir::synced(entries),
            temp_synced: false,
            temp_torn: false,
            durable_start_max: 0,
            crashes: 0,
            phase: RPhase::Running(0),
        }]
    }

    fn actions(&self, state: &RetentionState, actions: &mut Vec<RetentionAction>) {
        let steps = self.variant.steps();
        match &state.phase {
            RPhase::Running(n) => {
                if let Some(op) = steps.get(*n) {
                    actions.push(RetentionAction::Step { n: *n, op: *op });
                }
            }
            RPhase::Recovering { plan, done } => actions.push(RetentionAction::RecoverStep {
                n: *done,
                op: plan[*done],
            }),
            RPhase::Crashed => actions.push(RetentionAction::Recover),
            RPhase::Recovered => {}
        }
        let running = matches!(state.phase, RPhase::Running(_) | RPhase::Recovering { .. });
        if !running || state.crashes >= self.crashes_max {
            return;
        }
        actions.push(RetentionAction::Crash {
            process: true,
            lost_dir_ops: Vec::new(),
            temp_data_lost: false,
        });
        let temp_exists = state.dir.get(&RName::CheckpointTemp).is_some()
            || state.dir.get(&RName::Checkpoint) == Some(&RObj::Checkpoint(ACTIVE_BASE));
        let temp_choices: &[bool] = if temp_exists && !state.temp_synced && !state.temp_torn {
            &[false, true]
        } else {
            &[false]
        };
        for lost_dir_ops in subsets(state.dir.pending.len()) {
            for temp_data_lost in temp_choices {
                actions.push(RetentionAction::Crash {
                    process: false,
                    lost_dir_ops: lost_dir_ops.clone(),
                    temp_data_lost: *temp_data_lost,
                });
            }
        }
    }

    fn next_state(
        &self,
        state: &RetentionState,
        action: RetentionAction,
    ) -> Option<RetentionState> {
        let mut next = state.clone();
        match action {
            RetentionAction::Step { n, op } => {
                run_op(&mut next, op);
                next.phase = RPhase::Running(n + 1);
            }
            RetentionAction::Crash {
                process,
                lost_dir_ops,
                temp_data_lost,
            } => {
                if !process {
                    next.dir.power_loss(&lost_dir_ops);
                    next.temp_torn |= temp_data_lost;
                    // After the reboot, whatever survived is on disk.
                    next.temp_synced = true;
                }
                next.crashes += 1;
                next.phase = RPhase::Crashed;
            }
            RetentionAction::Recover => {
                let plan = recovery_plan(&next, self.variant);
                next.phase = RPhase::Recovering { plan, done: 0 };
            }
            RetentionAction::RecoverStep { n, op } => {
                run_op(&mut next, op);
                let RPhase::Recovering { plan, .. } = &state.phase else {
                    unreachable!("RecoverStep is only offered while recovering");
                };
                next.phase = if n + 1 == plan.len() {
                    RPhase::Recovered
                } else {
                    RPhase::Recovering {
                        plan: plan.clone(),
                        done: n + 1,
                    }
                };
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::<Self>::always("no_hole", |_, s| {
                // The surviving segments are a suffix of the original ones and the log
                // starts at the first of them.
                let segments = s.segments();
                s.phase != RPhase::Recovered
                    || (BASES.ends_with(&segments)
                        && s.log_start_offset() == segments.first().copied())
            }),
            Property::<Self>::always("log_start_offset_never_decreases", |_, s| {
                s.phase != RPhase::Recovered || s.log_start_offset() >= Some(s.durable_start_max)
            }),
            Property::<Self>::always("recovery_idempotent", |m, s| {
                s.phase != RPhase::Recovered
                    || recovery_plan(s, m.variant)
                        .iter()
                        .all(|op| *op == RetentionOp::SyncDir)
            }),
            Property::<Self>::always("active_survives", |_, s| {
                s.segments().contains(&ACTIVE_BASE)
            }),
            Property::<Self>::always("no_leftovers", |_, s| {
                s.phase != RPhase::Recovered
                    || (s.dir.get(&RName::CheckpointTemp).is_none() && s.dir.is_durable())
            }),
            Property::<Self>::sometimes("recovered_with_retention_done", |_, s| {
                s.phase == RPhase::Recovered && s.segments() == [ACTIVE_BASE]
            }),
            Property::<Self>::sometimes("recovered_with_nothing_deleted", |_, s| {
                s.phase == RPhase::Recovered && s.segments() == BASES
            }),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stateright::Checker;

    #[test]
    fn checkpoint_first_leaves_no_hole() {
        let checker = RetentionModel::new(RetentionVariant::CheckpointFirst)
            .checker()
            .spawn_bfs()
            .join();
        checker.assert_properties();
        assert_eq!(checker.unique_state_count(), 121);
    }

    #[test]
    fn delete_first_can_leave_a_hole() {
        let checker = RetentionModel::new(RetentionVariant::DeleteFirst)
            .checker()
            .spawn_bfs()
            .join();
        let path = checker.assert_any_discovery("no_hole");
        let last = path.last_state();
        assert_eq!(last.segments(), vec![0, ACTIVE_BASE]);
        assert_eq!(checker.unique_state_count(), 267);
    }
}

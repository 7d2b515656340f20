//! Model (b): the install protocol of compacted segments, step by step, with `Crash`
//! at any point under process-crash and power-loss semantics, then `Recover` running
//! the decision table of [`recovery`] one operation at a time (so a
//! crash during recovery is explored too).
//!
//! Abstraction: the live directory `D` holds the *old* content, the temp directory the
//! *new* content; both have the same latest view, so either is a correct outcome. A
//! directory whose files or entries were not synced when power was lost is `Torn`.

mod fs;
mod protocol;
pub mod recovery;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

pub use fs::{Content, Data, FsState, Name, Obj};
pub use protocol::{InstallOp, InstallVariant};
pub use recovery::{decide, decide_unsynced, Decision, RecoveryCase, RecoveryOp};

use crate::models::dir::DirOp;
use fs::{crash, power_losses, run_step};
use recovery::run_recovery_op;

/// Process crash: completed operations persist. Power loss: unsynced ones may not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CrashSemantics {
    Process,
    PowerLoss,
}

/// What a power loss dropped.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Lost {
    /// The n-th unsynced parent-directory operation.
    DirOp { n: usize, op: DirOp<Name, Obj> },
    /// The unsynced data (files or entries) of this object.
    Data(Obj),
}

/// One action of the install model; a trace of these is a crash scenario.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum InstallAction {
    Step {
        n: usize,
        op: InstallOp,
    },
    Crash {
        semantics: CrashSemantics,
        lost: Vec<Lost>,
    },
    /// `Log::open`: run the decision table.
    Recover,
    RecoverStep {
        n: usize,
        op: RecoveryOp,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Phase {
    /// The next protocol step to run (== steps.len() when the install completed).
    Installing(usize),
    Crashed,
    Recovering {
        case: RecoveryCase,
        plan: Vec<RecoveryOp>,
        done: usize,
    },
    Recovered(RecoveryCase),
    FailedClosed(&'static str),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct InstallState {
    pub fs: FsState,
    pub phase: Phase,
    pub crashes: u8,
    pub crashed_in_recovery: bool,
    /// A crash found the manifest's rename durable: the install committed, and
    /// recovery must end with the new content (the crash sweep's exact oracle says
    /// the same of an engine image holding the manifest).
    pub committed: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InstallModel {
    pub variant: InstallVariant,
    /// Crashes per behaviour; 2 covers a crash during recovery.
    pub crashes_max: u8,
}

impl InstallModel {
    pub fn new(variant: InstallVariant) -> InstallModel {
        InstallModel {
            variant,
            crashes_max: 2,
        }
    }
}

fn start_recovery(fs: &FsState, variant: InstallVariant) -> Phase {
    let decision = match variant {
        InstallVariant::NoRecoverySync => decide_unsynced(fs),
        _ => decide(fs),
    };
    match decision {
        Decision::FailClosed(why) => Phase::FailedClosed(why),
        Decision::Recover { case, plan } if plan.is_empty() => Phase::Recovered(case),
        Decision::Recover { case, plan } => Phase::Recovering {
            case,
            plan,
            done: 0,
        },
    }
}

impl Model for InstallModel {
    type State = InstallState;
    type Action = InstallAction;

    fn init_states(&self) -> Vec<InstallState> {
        vec![InstallState {
            fs: FsState::initial(),
            phase: Phase::Installing(0),
            crashes: 0,
            crashed_in_recovery: false,
            committed: false,
        }]
    }

    fn actions(&self, state: &InstallState, actions: &mut Vec<InstallAction>) {
        let steps = self.variant.steps();
        let can_crash = state.crashes < self.crashes_max;
        match &state.phase {
            Phase::Installing(n) => match steps.get(*n) {
                Some(op) => actions.push(InstallAction::Step { n: *n, op: *op }),
                None => actions.push(InstallAction::Recover),
            },
            Phase::Crashed => actions.push(InstallAction::Recover),
            Phase::Recovering { plan, done, .. } => actions.push(InstallAction::RecoverStep {
                n: *done,
                op: plan[*done].clone(),
            }),
            Phase::Recovered(_) | Phase::FailedClosed(_) => return,
        }
        if can_crash && state.phase != Phase::Crashed {
            actions.push(InstallAction::Crash {
                semantics: CrashSemantics::Process,
                lost: Vec::new(),
            });
            for lost in power_losses(&state.fs) {
                actions.push(InstallAction::Crash {
                    semantics: CrashSemantics::PowerLoss,
                    lost,
                });
            }
        }
    }

    fn next_state(&self, state: &InstallState, action: InstallAction) -> Option<InstallState> {
        let mut next = state.clone();
        match action {
            InstallAction::Step { n, op } => {
                run_step(&mut next.fs, op);
                next.phase = Phase::Installing(n + 1);
            }
            InstallAction::Crash { semantics, lost } => {
                crash(&mut next.fs, semantics, &lost);
                next.committed |= next.fs.parent.durable.get(&Name::Manifest)
                    == Some(&Obj::ManifestFile)
                    && next.fs.manifest_valid();
                next.crashed_in_recovery |= matches!(state.phase, Phase::Recovering { .. });
                next.crashes += 1;
                next.phase = Phase::Crashed;
            }
            InstallAction::Recover => next.phase = start_recovery(&next.fs, self.variant),
            InstallAction::RecoverStep { n, op } => {
                run_recovery_op(&mut next.fs, &op);
                let Phase::Recovering { case, plan, .. } = &state.phase else {
                    unreachable!("RecoverStep is only offered while recovering");
                };
                next.phase = if n + 1 == plan.len() {
                    Phase::Recovered(*case)
                } else {
                    Phase::Recovering {
                        case: *case,
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
            Property::<Self>::always("recovery_succeeds", |_, s| {
                !matches!(s.phase, Phase::FailedClosed(_))
            }),
            Property::<Self>::always("live_is_old_or_new", |_, s| {
                !matches!(s.phase, Phase::Recovered(_))
                    || matches!(s.fs.content(Name::Live), Some(Content::Old | Content::New))
            }),
            Property::<Self>::always("committed_means_new", |_, s| {
                !matches!(s.phase, Phase::Recovered(_))
                    || !s.committed
                    || s.fs.content(Name::Live) == Some(Content::New)
            }),
            Property::<Self>::always("no_flushed_record_lost", |_, s| {
                [Name::Live, Name::Backup, Name::Temp]
                    .iter()
                    .any(|n| matches!(s.fs.content(*n), Some(Content::Old | Content::New)))
            }),
            Property::<Self>::always("recovered_state_durable", |_, s| {
                !matches!(s.phase, Phase::Recovered(_))
                    || (s.fs.parent.is_durable()
                        && s.fs
                            .parent
                            .get(&Name::Live)
                            .is_some_and(|o| s.fs.data.get(o).is_some_and(Data::durable)))
            }),
            Property::<Self>::always("installed_content_trusted", |_, s| {
                // No reopen after cleanup: new content recovered (after any crash) opens without a
                // scan: the recovery point came with it through the commit point.
                !matches!(s.phase, Phase::Recovered(_))
                    || s.fs.content(Name::Live) != Some(Content::New)
                    || s.fs.trusted(Name::Live)
            }),
            Property::<Self>::always("no_leftovers", |_, s| {
                !matches!(s.phase, Phase::Recovered(_))
                    || s.fs.parent.entries.keys().all(|n| *n == Name::Live)
            }),
            Property::<Self>::always("recovery_idempotent", |_, s| {
                !matches!(s.phase, Phase::Recovered(_))
                    || matches!(
                        decide(&s.fs),
                        Decision::Recover { case: RecoveryCase::Clean, plan }
                            if plan == [RecoveryOp::SyncParent]
                    )
            }),
            Property::<Self>::sometimes("recovered_not_committed", |_, s| {
                s.phase == Phase::Recovered(RecoveryCase::NotCommitted)
            }),
            Property::<Self>::sometimes("recovered_roll_forward", |_, s| {
                s.phase == Phase::Recovered(RecoveryCase::RollForward)
            }),
            Property::<Self>::sometimes("recovered_after_crash_in_recovery", |_, s| {
                s.crashed_in_recovery && matches!(s.phase, Phase::Recovered(_))
            }),
            Property::<Self>::sometimes("installed_then_clean_open", |_, s| {
                s.crashes == 0 && s.phase == Phase::Recovered(RecoveryCase::Clean)
            }),
        ]
    }
}

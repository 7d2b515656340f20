//! Which recovered states are allowed after a crash during a workload.
//!
//! With `S_j` the spec state after the first `j` operations and `d` the state right
//! after the last durability point (roll, flush, retain, compact) before the
//! interrupted operation `i`, the allowed states are `S_d ..= S_i`, `S_{i+1}`, and,
//! when the interrupted operation is an append that auto-rolls first, `roll(S_i)`
//! (the roll is durable before the batch is written); a raw append of several
//! batches adds the state after each prefix of them (`S_i+k`) and each roll
//! between them.
//!
//! That range is what *some* image may recover to. For one given image the durable
//! state decides exactly one of them ([`States::exact_after_crash`], the rules in
//! `oracle.rs`): the checks hold a recovery to that one, so a recovery that picks the
//! wrong side of a commit point, or cuts a batch the image held whole, fails.

use seglog_model::spec::SpecLog;

use crate::workload::{spec, LogView, Op, OpOutcome};
use seglog::fs::FileSystem;

use super::oracle::ImageFacts;
use super::Workload;

/// The spec states of a workload, computed once per sweep.
#[derive(Debug, Clone)]
pub struct States {
    logs: Vec<SpecLog>,
    /// `rejected[j]`: operation `j` was rejected (bad arguments); it changes nothing
    /// and, rejected before any IO, is no durability point.
    rejected: Vec<bool>,
}

/// The set of views a recovery may produce.
#[derive(Debug, Clone)]
pub struct Allowed {
    views: Vec<(String, LogView)>,
    /// Why an exact expectation is what it is (which durable fact decided it), or why
    /// no state fits the image at all.
    reason: Option<String>,
    /// The crash interrupted an [`Op::DropIndexes`]: the operator's deletion, or the
    /// open's rebuild of the deleted files (derived, unsynced until a recovery point
    /// vouches for them), may have left segments the recovery point vouches for
    /// without valid index files, so recovery rescanning them is expected. Anywhere
    /// else a crash alone never leaves a trusted segment to rescan.
    index_files_dropped: bool,
}

impl Allowed {
    /// The spec states `S_0 ..= S_n` of `workload`.
    pub fn states(workload: &Workload) -> States {
        let mut log = SpecLog::new(workload.config.segment_bytes);
        let mut logs = vec![log.clone()];
        let mut rejected = Vec::with_capacity(workload.ops.len());
        for op in &workload.ops {
            rejected.push(spec::apply(&mut log, op) == OpOutcome::Rejected);
            logs.push(log.clone());
        }
        States { logs, rejected }
    }

    /// The first difference from the closest allowed view, or `None` if `view` is allowed.
    pub fn mismatch(&self, view: &LogView) -> Option<String> {
        if self.views.iter().any(|(_, v)| v == view) {
            return None;
        }
        let closest = self
            .views
            .iter()
            .min_by_key(|(_, v)| v.diff(view).len())
            .map(|(name, v)| format!("closest allowed {name}: {}", v.diff(view).join(", ")));
        let mut out = closest.unwrap_or_else(|| "no allowed state".into());
        if let Some(reason) = &self.reason {
            out = format!("{out} ({reason})");
        }
        Some(out)
    }

    /// The single view an exact expectation holds, if it holds one.
    pub fn exact_view(&self) -> Option<&LogView> {
        match self.views.as_slice() {
            [(_, view)] => Some(view),
            _ => None,
        }
    }

    /// True if recovery may rescan trusted segments whose index files are missing or
    /// damaged (the crash interrupted an operator's [`Op::DropIndexes`]).
    pub fn index_files_dropped(&self) -> bool {
        self.index_files_dropped
    }

    /// Withdraws [`Allowed::index_files_dropped`]: the image holds the recovery
    /// point the open after the drop wrote, which vouches only for durable files.
    pub fn forbid_index_rescans(&mut self) {
        self.index_files_dropped = false;
    }

    /// Names of the allowed states, for reports.
    pub fn names(&self) -> Vec<String> {
        self.views.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The allowed views, for replaying a scenario's "old"/"new" expectation.
    pub fn views(&self) -> &[(String, LogView)] {
        &self.views
    }
}

impl States {
    /// Spec state after the first `j` operations.
    pub fn after(&self, j: usize) -> &SpecLog {
        &self.logs[j.min(self.logs.len() - 1)]
    }

    /// The states append `p` passed through from `S_p` (one per batch, each after
    /// its auto-roll), named; the last is `S_{p+1}`. Empty unless `p` appended.
    fn walk(&self, workload: &Workload, p: usize) -> Vec<(String, SpecLog)> {
        let Some(op) = workload.ops.get(p) else {
            return Vec::new();
        };
        let walk = spec::append_walk(self.after(p), op);
        let batches = walk
            .iter()
            .filter(|(step, _)| *step == spec::WalkStep::Batch)
            .count();
        let mut done = 0;
        walk.into_iter()
            .map(|(step, state)| {
                let name = match step {
                    spec::WalkStep::Rolled if done == 0 => format!("roll(S{p})"),
                    spec::WalkStep::Rolled => format!("roll(S{p}+{done})"),
                    spec::WalkStep::Batch => {
                        done += 1;
                        if done == batches {
                            format!("S{}", p + 1)
                        } else {
                            format!("S{p}+{done}")
                        }
                    }
                };
                (name, state)
            })
            .collect()
    }

    /// The states an [`Op::CleanWithAppends`] at `i` passes through before its swap
    /// commits (`spec::clean_appends_walk`), named `S{i}+a{k}`. `None` for any other
    /// operation.
    fn clean_walk(&self, workload: &Workload, i: usize) -> Option<Vec<(String, SpecLog)>> {
        let op = workload.ops.get(i)?;
        if !matches!(op, Op::CleanWithAppends { .. }) {
            return None;
        }
        Some(
            spec::clean_appends_walk(self.after(i), op)
                .into_iter()
                .map(|(name, log)| match name.strip_prefix("roll(") {
                    Some(rest) => (format!("roll(S{i}{rest}"), log),
                    None => (format!("S{i}{name}"), log),
                })
                .collect(),
        )
    }

    /// The view before the interrupted operation (`None`: the initial open).
    pub fn old_view(&self, interrupted: Option<usize>) -> LogView {
        spec::view(self.after(interrupted.unwrap_or(0)))
    }

    /// The view after the interrupted operation (`None` for the initial open).
    pub fn new_view(&self, interrupted: Option<usize>) -> Option<LogView> {
        interrupted.map(|i| spec::view(self.after(i + 1)))
    }

    /// Exactly the state after the first `j` operations (a run without a crash).
    pub fn exactly(&self, j: usize) -> Allowed {
        Allowed {
            views: vec![(format!("S{j}"), spec::view(self.after(j)))],
            reason: None,
            index_files_dropped: false,
        }
    }

    /// The candidate states after a crash during operation `interrupted`, in the
    /// order they happen: `roll(S_p)` when the floor is an auto-roll, `S_d ..= S_i`,
    /// `roll(S_i)` when `i` is an append that rolls first, and `S_{i+1}`.
    fn candidates(&self, workload: &Workload, i: usize) -> Vec<(String, SpecLog)> {
        // The floor: the last durability point before `i`. An append that auto-rolled
        // is one too: the roll made everything before its batch durable.
        let mut out = Vec::new();
        let mut d = 0;
        for p in (0..i.min(workload.ops.len())).rev() {
            if workload.ops[p].is_durability_point() && !self.rejected[p] {
                d = p + 1;
                break;
            }
            let walk = self.walk(workload, p);
            if let Some(last_roll) = walk.iter().rposition(|(name, _)| name.starts_with("roll(")) {
                // From the last roll it made on, without `S_{p+1}` (pushed below).
                let end = walk.len() - 1;
                out.extend(walk.into_iter().take(end).skip(last_roll));
                d = p + 1;
                break;
            }
        }
        for j in d..=i {
            out.push((format!("S{j}"), self.after(j).clone()));
        }
        if let Some(walk) = self.clean_walk(workload, i) {
            // Before its commit point a concurrent cleaning is the old log plus the
            // appends made between its build and its swap.
            out.extend(walk);
            out.push((format!("S{}", i + 1), self.after(i + 1).clone()));
            return out;
        }
        let walk = self.walk(workload, i);
        if walk.is_empty() {
            out.push((format!("S{}", i + 1), self.after(i + 1).clone()));
        } else {
            out.extend(walk);
        }
        out
    }

    /// Allowed recovered views when operation `interrupted` was running
    /// (`None`: the initial open): every state some image may recover to.
    pub fn allowed_after_crash(&self, workload: &Workload, interrupted: Option<usize>) -> Allowed {
        let Some(i) = interrupted else {
            return self.exactly(0);
        };
        Allowed {
            views: self
                .candidates(workload, i)
                .into_iter()
                .map(|(name, log)| (name, spec::view(&log)))
                .collect(),
            reason: None,
            index_files_dropped: drops_indexes(workload, i),
        }
    }

    /// The one state `image` must recover to, decided by what is durable in it
    /// (module docs). When no candidate fits the image (it lost a durable file or
    /// bytes the protocol had already made durable), the result allows nothing and
    /// says so: no recovery can be right.
    pub fn exact_after_crash(
        &self,
        workload: &Workload,
        interrupted: Option<usize>,
        image: &dyn FileSystem,
    ) -> Allowed {
        let Some(i) = interrupted else {
            return self.exactly(0);
        };
        let facts = ImageFacts::read(image);
        let mut candidates = self.candidates(workload, i);
        let (new_name, new) = candidates.pop().expect("S_{i+1} is always a candidate");
        let old = self.after(i);
        let rejected = self.rejected.get(i).copied().unwrap_or(false);
        let committed = match workload.ops.get(i) {
            Some(
                Op::Compact { .. }
                | Op::CompactClosed { .. }
                | Op::Clean { .. }
                | Op::CleanWithAppends { .. },
            ) if !rejected => facts.install_committed(&new).map(str::to_string),
            Some(Op::Retain { .. }) if !rejected => facts.retention_committed(old, &new),
            _ => {
                // No commit point: S_{i+1} is one more candidate of the append walk.
                candidates.push((new_name.clone(), new.clone()));
                None
            }
        };
        let index_files_dropped = drops_indexes(workload, i);
        if let Some(reason) = committed {
            return Allowed {
                views: vec![(new_name, spec::view(&new))],
                reason: Some(reason),
                index_files_dropped,
            };
        }
        match candidates.iter().rposition(|(_, log)| facts.holds(log)) {
            Some(at) => {
                let (name, log) = &candidates[at];
                let later = candidates.len() - 1 - at;
                Allowed {
                    views: vec![(name.clone(), spec::view(log))],
                    reason: Some(format!(
                        "the image holds every segment file of {name} whole{}",
                        if later > 0 {
                            format!(" and not those of the {later} later candidate(s)")
                        } else {
                            String::new()
                        }
                    )),
                    index_files_dropped,
                }
            }
            None => Allowed {
                views: Vec::new(),
                reason: Some(format!(
                    "the image lost durable data: no state from {} on fits its segment files {:?}",
                    candidates.first().map_or("S0", |(n, _)| n.as_str()),
                    facts.segments
                )),
                index_files_dropped,
            },
        }
    }
}

/// True if operation `i` of `workload` is an operator's [`Op::DropIndexes`].
fn drops_indexes(workload: &Workload, i: usize) -> bool {
    matches!(workload.ops.get(i), Some(Op::DropIndexes))
}

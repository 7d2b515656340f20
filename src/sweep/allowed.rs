//! Which recovered states are allowed after a crash during a workload.
//!
//! With `S_j` the spec state after the first `j` operations and `d` the state right
//! after the last durability point (roll, flush, retain, compact) before the
//! interrupted operation `i`, the allowed states are `S_d ..= S_i`, `S_{i+1}`, and,
//! when the interrupted operation is an append that auto-rolls first, `roll(S_i)`
//! (the roll is durable before the batch is written).

use seglog_model::spec::SpecLog;

use crate::workload::{spec, LogView, Op, OpOutcome};

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
        Some(closest.unwrap_or_else(|| "no allowed state".into()))
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

    /// True if operation `p` is an append that rolled the log before writing.
    fn auto_rolled(&self, workload: &Workload, p: usize) -> bool {
        let is_append = matches!(
            workload.ops.get(p),
            Some(Op::Append { .. } | Op::AppendControl { .. })
        );
        is_append && self.after(p + 1).segments().len() > self.after(p).segments().len()
    }

    /// `S_p` rolled.
    fn rolled(&self, p: usize) -> SpecLog {
        let mut rolled = self.after(p).clone();
        rolled.roll();
        rolled
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
        }
    }

    /// Allowed recovered views when operation `interrupted` was running
    /// (`None`: the initial open).
    pub fn allowed_after_crash(&self, workload: &Workload, interrupted: Option<usize>) -> Allowed {
        let Some(i) = interrupted else {
            return Allowed {
                views: vec![("S0".into(), spec::view(&self.logs[0]))],
            };
        };
        // The floor: the last durability point before `i`. An append that auto-rolled
        // is one too: the roll made everything before its batch durable.
        let mut views = Vec::new();
        let mut d = 0;
        for p in (0..i.min(workload.ops.len())).rev() {
            if workload.ops[p].is_durability_point() && !self.rejected[p] {
                d = p + 1;
                break;
            }
            if self.auto_rolled(workload, p) {
                views.push((format!("roll(S{p})"), spec::view(&self.rolled(p))));
                d = p + 1;
                break;
            }
        }
        for j in d..=i + 1 {
            views.push((format!("S{j}"), spec::view(self.after(j))));
        }
        if self.auto_rolled(workload, i) {
            views.push((format!("roll(S{i})"), spec::view(&self.rolled(i))));
        }
        Allowed { views }
    }
}

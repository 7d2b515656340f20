//! [`Divergence::to_scenario`]: a conformance failure as a crash-scenario file.

use std::sync::Arc;

use crate::scenario::{CrashSpec, Expectation, Outcome, Scenario, ScenarioConfig, Semantics};
use crate::sweep::{self, Workload};
use seglog::fs::sim::SimFs;

use super::runner::crash_images;
use super::{case_config, Divergence, Step};

impl Divergence {
    /// The scenario that replays this divergence: the operations up to the failing
    /// step; if that step is a crash, a crash after them (`before_fs_op` = the
    /// file-system operations they take, the chosen image's semantics and lost items)
    /// expecting an allowed state; otherwise no crash, expecting the spec's state.
    /// Crashes, reopens and foreign batches before the failing step are not part of
    /// the file format; the description says how many were left out.
    pub fn to_scenario(&self, variant: &str) -> Scenario {
        let upto = self.steps.get(..=self.step).unwrap_or(&self.steps);
        let ops: Vec<_> = upto
            .iter()
            .filter_map(|step| match step {
                Step::Op(op) => Some(op.clone()),
                _ => None,
            })
            .collect();
        // A foreign batch has no scenario form even as the failing step.
        let earlier_restarts = upto
            .iter()
            .enumerate()
            .filter(|(i, s)| match s {
                Step::Foreign(_) => true,
                Step::CrashReopen { .. } | Step::Reopen => *i < self.step,
                _ => false,
            })
            .count();
        let config = case_config();
        let scenario_config = ScenarioConfig {
            segment_bytes: config.segment_bytes,
            index_interval_bytes: config.index_interval_bytes,
        };
        let crash = match upto.last() {
            Some(Step::CrashReopen { image }) => {
                let workload = Workload {
                    name: "conformance".into(),
                    description: String::new(),
                    config,
                    ops: ops.clone(),
                    variant: variant.to_string(),
                };
                crash_spec(&workload, *image)
            }
            _ => None,
        };
        let mut description = format!(
            "found by the conformance test (seed {}, {:?}, step {}): {}",
            self.seed, self.backend, self.step, self.detail
        );
        if super::is_log_append_time(&self.steps) {
            // The scenario format has no timestamp type: its replay is CreateTime.
            description
                .push_str(" [the case's log is LogAppendTime, which the scenario does not carry]");
        }
        if earlier_restarts > 0 {
            description.push_str(&format!(
                " [{earlier_restarts} crash/reopen/foreign-batch step(s) are not replayed]"
            ));
        }
        Scenario {
            name: format!("conformance-seed-{}-step-{}", self.seed, self.step),
            description,
            invariant: "the engine equals the spec after every step; after a crash, a state between the last durability point and the state before it".into(),
            variant: variant.to_string(),
            config: scenario_config,
            expect: Expectation {
                outcome: if crash.is_some() {
                    Outcome::Allowed
                } else {
                    Outcome::New
                },
                log_start_offset: None,
                next_offset: None,
                records: None,
                variants: Default::default(),
            },
            crash,
            ops,
        }
    }
}

/// The crash after the whole workload, with the image `image` picks.
fn crash_spec(workload: &Workload, image: u32) -> Option<CrashSpec> {
    let fs = Arc::new(SimFs::new());
    sweep::run_to_end(workload, &fs).ok()?;
    let mut images = crash_images(&fs);
    let index = image as usize % images.len();
    let chosen = images.swap_remove(index);
    Some(CrashSpec {
        failpoint: None,
        hit: None,
        before_fs_op: Some(fs.mutating_ops()),
        semantics: if index == 0 {
            Semantics::Process
        } else {
            Semantics::PowerLoss
        },
        persistence: fs.persistence(),
        lost: chosen.lost.iter().map(ToString::to_string).collect(),
        recovery_crash_before_op: None,
        recovery_lost: Vec::new(),
    })
}

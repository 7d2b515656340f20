//! Conformance with injected IO errors: seeded cases of the ordinary generator with
//! [`Step::FailNext`] steps woven in before some operations, run on SimFs only (the
//! real disk cannot fail on demand; `engine/tests/fs_contract.rs` covers its errors).
//!
//! Invariants checked, on top of the ordinary conformance checks after every step:
//! the operation that meets the injected error returns it (an `Ok` is a divergence),
//! the log is poisoned (every writing call returns `Error::Poisoned`), and the
//! reopened log equals the spec at a state between the last durability point that
//! returned `Ok` and the operation done; the case then goes on from that state.

use std::time::Instant;

use serde::Serialize;

use crate::sweep::io_errors::panic_message;
use crate::workload::Op;
use seglog::fs::sim::FaultKind;

use super::{
    case_seed, case_steps, run_case, shrink, Backend, CaseStats, ConformanceOptions, Divergence,
    Step,
};

/// One in this many mutating operations gets a `FailNext` before it.
const FAIL_ONE_IN: u64 = 5;

/// `steps` with a `FailNext` before about one in `FAIL_ONE_IN` (5) mutating operations,
/// the kind and the places drawn from `seed` (deterministic).
pub fn with_faults(steps: Vec<Step>, seed: u64) -> Vec<Step> {
    let mut out = Vec::with_capacity(steps.len() + steps.len() / 4);
    for (i, step) in steps.into_iter().enumerate() {
        let draw = case_seed(seed ^ 0xFA17_FA17, i as u64);
        let mutation = matches!(&step, Step::Op(op) if !matches!(op, Op::Read { .. }));
        if mutation && draw.is_multiple_of(FAIL_ONE_IN) {
            let kinds = FaultKind::ALL;
            let kind = kinds[((draw >> 8) % kinds.len() as u64) as usize];
            out.push(Step::FailNext { kind });
        }
        out.push(step);
    }
    out
}

/// [`run_case`] on SimFs, with a panic of the engine (an assertion tripping on an
/// error path) reported as a divergence at the last step.
fn run_caught(steps: &[Step], variant: &str) -> Result<CaseStats, Divergence> {
    let run = std::panic::catch_unwind(|| run_case(steps, Backend::Sim, variant));
    run.unwrap_or_else(|panic| {
        Err(Divergence {
            seed: 0,
            backend: Backend::Sim,
            steps: steps.to_vec(),
            step: steps.len().saturating_sub(1),
            detail: format!("panicked: {}", panic_message(&*panic)),
            crash_lost: None,
        })
    })
}

/// The totals of [`run_random_faults`].
#[derive(Debug, Clone, Default, Serialize)]
pub struct FaultConformanceReport {
    pub cases: u64,
    pub steps: u64,
    /// Operations that met an injected error (and were reopened after).
    pub io_errors: u64,
    pub crashes: u64,
    pub seconds: f64,
    pub failures: Vec<Divergence>,
}

/// Runs `options.cases` seeded cases with faults woven in, on SimFs; stops at the
/// first divergence, which it shrinks. `progress` gets the number of cases done.
pub fn run_random_faults(
    options: &ConformanceOptions,
    progress: impl FnMut(u64),
) -> FaultConformanceReport {
    run_random_faults_selected(options, &|_| true, progress)
}

/// [`run_random_faults`] over the case numbers `select` accepts (a shard).
pub fn run_random_faults_selected(
    options: &ConformanceOptions,
    select: &dyn Fn(u64) -> bool,
    mut progress: impl FnMut(u64),
) -> FaultConformanceReport {
    let started = Instant::now();
    let cases: Vec<u64> = (0..options.cases).filter(|c| select(*c)).collect();
    // On `jobs` threads, stopping at the first divergence as a sequential run does.
    let outcomes = crate::jobs::map_until(
        &cases,
        options.jobs,
        |_, case| {
            let seed = case_seed(options.seed, *case);
            run_caught(
                &with_faults(case_steps(seed, options.ops_per_case), seed),
                &options.variant,
            )
        },
        Result::is_err,
        |done, _| progress(done as u64),
    );
    let mut report = FaultConformanceReport::default();
    for (case, outcome) in cases.iter().zip(outcomes) {
        report.cases += 1;
        match outcome {
            Ok(stats) => {
                report.steps += stats.steps;
                report.io_errors += stats.io_errors;
                report.crashes += stats.crashes;
            }
            Err(divergence) => {
                let divergence = shrink(divergence, |steps| {
                    run_caught(steps, &options.variant).err()
                });
                let seed = case_seed(options.seed, *case);
                report.failures.push(Divergence { seed, ..divergence });
            }
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    report
}

//! `seglog verify`: the whole suite at a chosen budget, one stage after another,
//! with a report a person reads at a glance and a JSON report for machines.
//!
//! Stages (docs/design.md section 8): `model` (stateright, exhaustive), `conformance`
//! (engine vs spec on random operation sequences, with crashes), `crash_sweep` (every
//! crash point of the named workloads, every enumerated disk image), `io_errors`
//! (every file-system call of the named workloads fails with EIO, ENOSPC or a short
//! write; the engine must report it, poison, recover and lose nothing it reported
//! durable), `damaged_data` (bit flips, truncations and zeroed ranges in every file,
//! see `crate::damage`), `replay` (every file in crash-scenarios/), `schedules`
//! (the shuttle tests with more schedules; standard and overnight) and `fuzz`
//! (overnight only).

pub mod html;
pub mod junit;
pub mod mutants;
mod progress;
pub mod schedules;
pub mod shard;
mod stages;

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

pub use progress::Progress;
pub use shard::Shard;

/// How much work each stage does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    /// The pull-request gate: under 45 s on 2 cores.
    Quick,
    /// Nightly, and before merging a protocol change: tens of minutes (shardable).
    Standard,
    /// Hours, fuzzing included.
    Overnight,
}

/// Every knob of a run; [`VerifyOptions::for_budget`] fills them from a budget.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyOptions {
    pub budget: Budget,
    /// Protocol variant under test: `manifest` (ours) or a broken one.
    pub variant: String,
    /// Log-model bound: offsets that may be appended.
    pub model_records: Option<i64>,
    pub conformance_cases: u64,
    pub conformance_ops: usize,
    pub seed: u64,
    pub images_per_point: usize,
    pub recovery_crash_images: usize,
    /// The crash sweep's persistence model (which directory operations a power
    /// loss may take).
    pub persistence: seglog::fs::sim::Persistence,
    pub scenarios_dir: PathBuf,
    /// Seconds per fuzz target; 0 skips the fuzz stage.
    pub fuzz_seconds: u64,
    /// Where failing stages write their counterexample as a scenario file.
    pub emit_scenario_dir: PathBuf,
    /// Run the `kafka_interop` stage (standard and overnight budgets; quick skips it:
    /// building the Java harness and starting a JVM per case takes about a minute).
    pub kafka_interop: bool,
    /// The stage's Kafka -> seglog cases and those of them that must pass.
    pub kafka_cases: Vec<String>,
    pub kafka_required: Vec<String>,
    /// Run only this shard of every stage (`--shard K/N`); each stage's report then
    /// lists the units it ran in `shard_units`.
    pub shard: Option<Shard>,
    /// Run the `mutants` stage (overnight): cargo-mutants over the protocol and IO
    /// modules with the quick suite's tests, reporting the survivors.
    pub mutants: bool,
    /// Schedules per scheduler of the `schedules` stage (the shuttle tests,
    /// `super::schedules`); 0 skips it (the quick budget).
    pub shuttle_iterations: u64,
    /// Threads the stages' units run on (`--jobs`; the machine's cores by
    /// default). Every report but its `seconds` is the same for any number.
    pub jobs: usize,
    /// The named workloads the crash sweep, the I/O-error sweep and the damage
    /// stage run (`--workload`; empty: every named workload).
    pub workloads: Vec<String>,
    /// Protocol crash points per workload the damage stage damages besides the
    /// workload's end (`--damage-points`).
    pub damage_points: usize,
}

/// The quick budget's damage points per workload: the first protocol states of
/// each workload (standard and overnight damage up to 64, every state the named
/// workloads pass through).
pub const QUICK_DAMAGE_POINTS: usize = 6;

impl VerifyOptions {
    /// The named workloads this run's workload stages take, in their usual order.
    pub fn selected_workloads(&self) -> Vec<crate::sweep::Workload> {
        let mut workloads = crate::sweep::named_workloads();
        if !self.workloads.is_empty() {
            workloads.retain(|w| self.workloads.contains(&w.name));
        }
        workloads
    }

    pub fn for_budget(budget: Budget) -> VerifyOptions {
        let (model_records, cases, ops, images, recovery, fuzz) = match budget {
            // The pull-request gate: at most 45 s on 2 cores. Standard runs 37 times
            // the cases, 8 times the images per point and 4 times the crashed
            // recoveries.
            Budget::Quick => (None, 80, 40, 16, 1, 0),
            Budget::Standard => (Some(4), 3_000, 40, 128, 4, 0),
            Budget::Overnight => (Some(4), 50_000, 60, 1_024, 16, 3_600),
        };
        VerifyOptions {
            budget,
            variant: "manifest".into(),
            model_records,
            conformance_cases: cases,
            conformance_ops: ops,
            seed: 0x5e6_106,
            images_per_point: images,
            recovery_crash_images: recovery,
            persistence: seglog::fs::sim::Persistence::AnySubset,
            scenarios_dir: PathBuf::from("crash-scenarios"),
            fuzz_seconds: fuzz,
            emit_scenario_dir: PathBuf::from("target/seglog-counterexamples"),
            kafka_interop: budget != Budget::Quick,
            kafka_cases: crate::interop::ALL_CASES
                .iter()
                .map(|c| (*c).to_string())
                .collect(),
            kafka_required: crate::interop::REQUIRED_CASES
                .iter()
                .map(|c| (*c).to_string())
                .collect(),
            shard: None,
            mutants: budget == Budget::Overnight,
            shuttle_iterations: match budget {
                Budget::Quick => 0,
                Budget::Standard => 10_000,
                Budget::Overnight => 100_000,
            },
            jobs: crate::jobs::default_jobs(),
            workloads: Vec::new(),
            damage_points: match budget {
                Budget::Quick => QUICK_DAMAGE_POINTS,
                Budget::Standard | Budget::Overnight => 64,
            },
        }
    }
}

/// One stage's result. `details` carries the stage's own keys (the crash sweep's:
/// `workloads`, `crash_points`, `disk_images`, `violations`, `seconds`).
#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    pub stage: &'static str,
    pub passed: bool,
    pub seconds: f64,
    /// One line for the human summary.
    pub summary: String,
    #[serde(flatten)]
    pub details: serde_json::Map<String, serde_json::Value>,
    /// A failing stage's counterexample file and the command that replays it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counterexample: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_command: Option<String>,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub passed: bool,
    pub budget: Budget,
    pub variant: String,
    pub seconds: f64,
    /// The shard this run was (`--shard K/N`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// One object per stage, keyed by stage name.
    pub stages: serde_json::Map<String, serde_json::Value>,
    #[serde(skip)]
    pub ordered: Vec<StageReport>,
}

impl VerifyReport {
    /// The at-a-glance text report.
    pub fn human(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "seglog verify: budget {}, variant {}{}\n",
            format!("{:?}", self.budget).to_lowercase(),
            self.variant,
            self.shard
                .map(|s| format!(", shard {s}"))
                .unwrap_or_default()
        ));
        for stage in &self.ordered {
            out.push_str(&format!(
                "  {:<5} {:<12} {:>7.1}s  {}\n",
                if stage.passed { "ok" } else { "FAIL" },
                stage.stage,
                stage.seconds,
                stage.summary
            ));
            if let Some(path) = &stage.counterexample {
                out.push_str(&format!("        counterexample: {path}\n"));
            }
            if let Some(cmd) = &stage.replay_command {
                out.push_str(&format!("        replay with:    {cmd}\n"));
            }
        }
        out.push_str(&format!(
            "{} in {:.1}s\n",
            if self.passed { "PASSED" } else { "FAILED" },
            self.seconds
        ));
        out
    }

    /// The run as JUnit XML: one test case per stage, a failing stage's summary
    /// and counterexample as its failure, a skipped stage as skipped.
    pub fn junit(&self) -> String {
        let cases: Vec<junit::JunitCase> = self
            .ordered
            .iter()
            .map(|stage| {
                let skipped = stage
                    .summary
                    .strip_prefix("skipped: ")
                    .map(ToString::to_string);
                let failure = (!stage.passed).then(|| {
                    let mut message = format!("{}: {}", stage.stage, stage.summary);
                    if let Some(path) = &stage.counterexample {
                        message.push_str(&format!("\ncounterexample: {path}"));
                    }
                    if let Some(cmd) = &stage.replay_command {
                        message.push_str(&format!("\nreplay with: {cmd}"));
                    }
                    message
                });
                junit::JunitCase {
                    name: stage.stage.to_string(),
                    seconds: stage.seconds,
                    failure,
                    skipped,
                    output: stage.summary.clone(),
                }
            })
            .collect();
        junit::junit_xml("seglog verify", &cases)
    }
}

/// Runs every stage; never stops early, so one report shows everything.
pub fn run(options: &VerifyOptions, progress: &mut Progress) -> VerifyReport {
    let started = Instant::now();
    // The model stage (its log model is one thread's work) runs beside all the
    // others, which run in turn, each on `jobs` threads; the report lists the
    // stages in their usual order.
    let (model, mut others) = std::thread::scope(|scope| {
        let model = scope.spawn(|| stages::model(options, &mut Progress::new(true)));
        let others = vec![
            stages::conformance(options, progress),
            stages::crash_sweep(options, progress),
            stages::io_errors(options, progress),
            stages::damaged_data(options, progress),
            stages::replay(options, progress),
            stages::kafka_interop(options, progress),
            stages::schedules(options, progress),
        ];
        (
            seglog::panics::join_scoped(model, "the model stage"),
            others,
        )
    });
    let mut ordered = vec![model];
    ordered.append(&mut others);
    if options.fuzz_seconds > 0 {
        ordered.push(stages::fuzz(options, progress));
    }
    if options.mutants {
        ordered.push(stages::mutants(options, progress));
    }
    let passed = ordered.iter().all(|s| s.passed);
    let stages = ordered
        .iter()
        .map(|s| {
            (
                s.stage.to_string(),
                serde_json::to_value(s).unwrap_or(serde_json::Value::Null),
            )
        })
        .collect();
    VerifyReport {
        passed,
        budget: options.budget,
        variant: options.variant.clone(),
        seconds: started.elapsed().as_secs_f64(),
        shard: options.shard,
        stages,
        ordered,
    }
}

//! `seglog verify`: the whole suite at a chosen budget (the main job).

use std::path::PathBuf;

use clap::Args;

use super::Outcome;
use crate::verify::{self, Budget, Progress, Shard, VerifyOptions};
use seglog::fs::{FileSystem, StdFs};
use seglog::{Error, Result};

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// quick (CI, minutes), standard (before merging a protocol change), overnight (hours, fuzzing).
    #[arg(long, value_enum, default_value = "quick")]
    pub budget: Budget,
    /// Run the suite against a deliberately broken protocol (it must fail):
    /// two-rename, no-dir-sync, backup-before-manifest, delete-first. Needs a build with
    /// `--features test-variants` for the engine stages.
    #[arg(long, default_value = "manifest")]
    pub against_variant: String,
    /// Also write the JSON report here (`-`: print JSON on stdout instead of the text report).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Where a failing stage writes its counterexample as a crash-scenario file.
    #[arg(long)]
    pub emit_scenario: Option<PathBuf>,
    /// Override: conformance cases.
    #[arg(long)]
    pub conformance_cases: Option<u64>,
    /// Override: operations per conformance case.
    #[arg(long)]
    pub conformance_ops: Option<usize>,
    /// Override: power-loss images per crash point in the sweep.
    #[arg(long)]
    pub images_per_point: Option<usize>,
    /// Override: images per crash point whose recovery is crashed again.
    #[arg(long)]
    pub recovery_crash_images: Option<usize>,
    /// The crash sweep's persistence model: any-subset (the default: any unsynced
    /// directory operation may be lost) or ordered-metadata (a prefix of them, in
    /// issue order, as a journaled file system keeps them).
    #[arg(long, value_name = "any-subset|ordered-metadata")]
    pub persistence: Option<seglog::fs::sim::Persistence>,
    /// Override: seconds per fuzz target (0 skips fuzzing).
    #[arg(long)]
    pub fuzz_seconds: Option<u64>,
    /// Override: log-model bound (offsets appended).
    #[arg(long)]
    pub model_records: Option<i64>,
    /// Seed of the conformance stage.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Directory of crash-scenario files.
    #[arg(long, default_value = "crash-scenarios")]
    pub scenarios: PathBuf,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
    /// Run the `kafka_interop` stage at any budget (quick skips it by default); it
    /// needs `java` and `mvn` on the PATH and is reported skipped without them.
    #[arg(long)]
    pub kafka_interop: bool,
    /// Kafka -> seglog cases of the `kafka_interop` stage (codecs and
    /// `logappendtime`; default: all of them).
    #[arg(long, value_delimiter = ',')]
    pub kafka_cases: Option<Vec<String>>,
    /// Those of the cases that must pass (the others may be `pending`; default: the
    /// codec `none`).
    #[arg(long, value_delimiter = ',')]
    pub kafka_required: Option<Vec<String>>,
    /// Run only shard K of N (1-based) of every stage: each stage numbers its units
    /// (models, conformance cases, crash points, workloads, scenario files, fuzz
    /// targets) and shard K takes those with `unit % N == K - 1`. The shards are
    /// disjoint and together are the unsharded run; each stage's JSON lists its
    /// units in `shard_units`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
    /// Also write the report as JUnit XML here: one test case per stage.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write a self-contained HTML page here: every stage with its numbers and,
    /// for each failure, its counterexample laid open (a crash scenario's operation
    /// timeline, directory trees and expected vs recovered records).
    #[arg(long, value_name = "OUT")]
    pub html: Option<PathBuf>,
    /// Run the `mutants` stage at any budget (overnight runs it): cargo-mutants over
    /// engine/src/install, engine/src/retention, engine/src/compaction and engine/src/fs with the quick suite's
    /// tests; needs `cargo install --locked cargo-mutants`.
    #[arg(long)]
    pub mutants: bool,
    /// Override: schedules per scheduler of the `schedules` stage (the shuttle
    /// tests, built with `--cfg shuttle` in target/shuttle; standard 10000,
    /// overnight 100000, quick 0: skipped).
    #[arg(long)]
    pub shuttle_iterations: Option<u64>,
    /// Threads each stage's units run on (default: `SEGLOG_JOBS`, else the
    /// machine's cores); every number in the report but the seconds is the same
    /// for any value.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub jobs: Option<u64>,
    /// Run the crash sweep, the I/O-error sweep and the damage stage on this named
    /// workload only (repeatable; default: every named workload).
    #[arg(long = "workload", value_name = "W")]
    pub workloads: Vec<String>,
    /// Override: protocol crash points per workload the damage stage damages
    /// besides its end (quick 6, standard and overnight 64).
    #[arg(long, value_name = "N")]
    pub damage_points: Option<usize>,
}

impl VerifyArgs {
    pub fn options(&self) -> Result<VerifyOptions> {
        let mut options = VerifyOptions::for_budget(self.budget);
        options.variant = self.against_variant.clone();
        if options.variant != "manifest" {
            // Fail on a bad name now, not after minutes of model checking.
            crate::workload::engine::Variant::parse(&options.variant)
                .map_err(Error::InvalidArgument)?;
        }
        if let Some(n) = self.conformance_cases {
            options.conformance_cases = n;
        }
        if let Some(n) = self.conformance_ops {
            options.conformance_ops = n;
        }
        if let Some(n) = self.images_per_point {
            options.images_per_point = n;
        }
        if let Some(n) = self.recovery_crash_images {
            options.recovery_crash_images = n;
        }
        if let Some(persistence) = self.persistence {
            options.persistence = persistence;
        }
        if let Some(n) = self.fuzz_seconds {
            options.fuzz_seconds = n;
        }
        if let Some(n) = self.model_records {
            options.model_records = Some(n);
        }
        if let Some(seed) = self.seed {
            options.seed = seed;
        }
        if let Some(dir) = &self.emit_scenario {
            options.emit_scenario_dir = dir.clone();
        }
        options.kafka_interop |= self.kafka_interop;
        for case in self
            .kafka_cases
            .iter()
            .chain(&self.kafka_required)
            .flatten()
        {
            if !crate::interop::ALL_CASES.contains(&case.as_str()) {
                return Err(Error::InvalidArgument(format!(
                    "unknown Kafka interop case {case:?} (one of {:?})",
                    crate::interop::ALL_CASES
                )));
            }
        }
        if let Some(cases) = &self.kafka_cases {
            options.kafka_cases.clone_from(cases);
        }
        if let Some(required) = &self.kafka_required {
            options.kafka_required.clone_from(required);
        }
        options.shard = self.shard;
        options.mutants |= self.mutants;
        if let Some(n) = self.shuttle_iterations {
            options.shuttle_iterations = n;
        }
        if let Some(n) = self.jobs {
            options.jobs = n as usize;
        }
        // An unknown name is a usage error now, not an empty stage later.
        super::sweep_cmd::selected_workloads(&self.workloads)?;
        options.workloads.clone_from(&self.workloads);
        if let Some(n) = self.damage_points {
            options.damage_points = n;
        }
        options.scenarios_dir = self.scenarios.clone();
        // Run from elsewhere than the checkout: use the checkout's own scenarios.
        let fs = StdFs::new();
        if !fs.exists(&options.scenarios_dir)
            && self.scenarios == std::path::Path::new("crash-scenarios")
        {
            options.scenarios_dir =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crash-scenarios");
        }
        Ok(options)
    }
}

pub fn verify(args: VerifyArgs) -> Result<Outcome> {
    let options = args.options()?;
    let mut progress = Progress::new(args.quiet);
    let report = verify::run(&options, &mut progress);
    if let Some(path) = &args.junit {
        super::sweep_cmd::write_report(path, &report.junit())?;
    }
    if let Some(path) = &args.html {
        super::sweep_cmd::write_report(path, &verify_page(&report, &options))?;
    }
    let json =
        serde_json::to_string_pretty(&report).map_err(|e| Error::InvalidArgument(e.to_string()))?;
    match args.json.as_deref() {
        Some(path) if path.as_os_str() == "-" => println!("{json}"),
        Some(path) => {
            let fs = StdFs::new();
            fs.write_new(path, json.as_bytes())
                .map_err(|e| Error::io(path, e))?;
            print!("{}", report.human());
        }
        None => print!("{}", report.human()),
    }
    Ok(Outcome::Printed {
        passed: report.passed,
    })
}

/// The `--html` page of a verify run: the stages, and each failing stage's
/// counterexample (a scenario file laid open; anything else as text).
fn verify_page(report: &verify::VerifyReport, options: &VerifyOptions) -> String {
    use crate::verify::html::{page, PageFailure, PageStage};
    let fs = StdFs::new();
    let stages: Vec<PageStage> = report.ordered.iter().map(PageStage::from).collect();
    let mut failures = Vec::new();
    for stage in report.ordered.iter().filter(|s| !s.passed) {
        let mut scenario_files: Vec<PathBuf> = stage
            .counterexample
            .iter()
            .filter(|p| p.ends_with(".toml"))
            .map(PathBuf::from)
            .collect();
        if stage.stage == "replay" {
            if let Some(failed) = stage.details.get("failed").and_then(|f| f.as_array()) {
                scenario_files.extend(failed.iter().filter_map(|f| f.as_str()).map(PathBuf::from));
            }
        }
        for file in &scenario_files {
            let text = format!("{}: {}", stage.stage, stage.summary);
            match crate::scenario::load(&fs, file) {
                Ok(scenario) => {
                    let result = crate::scenario::replay_expecting(
                        &scenario,
                        &options.variant,
                        scenario.expected_for("manifest"),
                    );
                    let mut failure = super::replay_cmd::failure_page(
                        &scenario,
                        Some(&options.variant),
                        file,
                        &result,
                    );
                    failure.title = format!("{}: {}", stage.stage, failure.title);
                    failure.text = Some(match failure.text {
                        Some(more) => format!("{text}\n{more}"),
                        None => text,
                    });
                    failures.push(failure);
                }
                Err(e) => failures.push(PageFailure {
                    title: format!("{}: {}", stage.stage, file.display()),
                    inspection: None,
                    text: Some(format!("{text}\n{e}")),
                    crash: None,
                }),
            }
        }
        if scenario_files.is_empty() {
            let mut text = format!("{}: {}", stage.stage, stage.summary);
            if let Some(path) = &stage.counterexample {
                text.push_str(&format!("\ncounterexample: {path}"));
                if let Ok(bytes) = fs.read_all(std::path::Path::new(path)) {
                    text.push_str(&format!("\n\n{}", String::from_utf8_lossy(&bytes)));
                }
            }
            if let Some(cmd) = &stage.replay_command {
                text.push_str(&format!("\nreplay with: {cmd}"));
            }
            failures.push(PageFailure {
                title: stage.stage.to_string(),
                inspection: None,
                text: Some(text),
                crash: None,
            });
        }
    }
    page(
        &format!(
            "seglog verify: budget {}, variant {}: {}",
            format!("{:?}", report.budget).to_lowercase(),
            report.variant,
            if report.passed { "PASSED" } else { "FAILED" }
        ),
        &stages,
        &failures,
    )
}

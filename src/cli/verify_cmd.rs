//! `seglog verify`: the whole suite at a chosen budget (the main job).

use std::path::PathBuf;

use clap::Args;

use super::Outcome;
use crate::fs::{FileSystem, StdFs};
use crate::verify::{self, Budget, Progress, VerifyOptions};
use crate::{Error, Result};

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

//! `seglog kafka-crash`: Kafka 4.4's own log layer under the crash recorder
//! (`interop::crash`): the harness's `crash-workload` traced, every power-loss
//! image of its trace under each persistence model loaded by Kafka and held to the
//! oracle of its acknowledgments; each image with findings written as a case file.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::Outcome;
use crate::alice;
use crate::interop::crash::{self, explore};
use crate::interop::harness::{self, Harness};
use seglog::fs::sim::Persistence;
use seglog::{Error, Result};

#[derive(Debug, Args)]
pub struct KafkaCrashArgs {
    /// The workload's variant: normal (Kafka's own script) or no-flush (flush steps
    /// acknowledge without flushing: its images must give findings).
    #[arg(long, default_value = "normal", value_name = "normal|no-flush")]
    pub variant: String,
    /// Power-loss disk images per crash point (each a prefix of the trace).
    #[arg(long, default_value_t = explore::ExploreOptions::default().images_per_point)]
    pub images_per_point: usize,
    /// Only these persistence models (default: any-subset and ordered-metadata).
    #[arg(long = "persistence", value_name = "any-subset|ordered-metadata")]
    pub models: Vec<Persistence>,
    /// Where to write each image with findings as `MODEL-N.json`.
    #[arg(long)]
    pub cases: Option<PathBuf>,
    /// The strace to run.
    #[arg(long, default_value = "strace")]
    pub strace: PathBuf,
    /// Where the traced run and the images are laid out (default: /dev/shm where
    /// it exists, else the temp directory).
    #[arg(long)]
    pub scratch: Option<PathBuf>,
}

/// `seglog kafka-crash`: exit 1 when an image has findings.
pub fn kafka_crash(args: KafkaCrashArgs) -> Result<Outcome> {
    if !crash::VARIANTS.contains(&args.variant.as_str()) {
        return Err(Error::InvalidArgument(format!(
            "not a crash-workload variant: {} ({})",
            args.variant,
            crash::VARIANTS.join(", ")
        )));
    }
    if let Some(reason) = harness::unavailable() {
        return Err(Error::InvalidArgument(reason));
    }
    if !alice::strace_available(&args.strace) {
        return Err(Error::InvalidArgument(format!(
            "{} does not run: install strace",
            args.strace.display()
        )));
    }
    let scratch = args.scratch.unwrap_or_else(alice::default_scratch);
    let failed = |e: String| Error::InvalidArgument(format!("kafka-crash: {e}"));
    let harness = Harness::build().map_err(failed)?;
    let recording =
        crash::record_variant(&harness, &args.strace, &scratch, &args.variant).map_err(failed)?;
    let fidelity = recording.fidelity().map_err(failed)?;
    let mut options = explore::ExploreOptions {
        images_per_point: args.images_per_point.max(1),
        ..explore::ExploreOptions::default()
    };
    if !args.models.is_empty() {
        options.models = args.models.clone();
    }
    let reports = explore::explore(&harness, &recording, &options).map_err(failed)?;
    let case_files = match &args.cases {
        Some(dir) => explore::write_cases(&reports, dir).map_err(failed)?,
        None => Vec::new(),
    };
    let findings: u64 = reports.iter().map(|r| r.findings).sum();
    let table: Vec<_> = reports
        .iter()
        .map(|r| {
            let classes = |class: &str| r.cases.iter().filter(|c| c.class == class).count();
            json!({
                "model": r.model,
                "crash_points": r.crash_points,
                "images": r.images,
                "absent": r.absent,
                "load_errors": r.errors,
                "judgments": r.judgments,
                "findings": r.findings,
                "by_kind": r.by_kind,
                "ordered_metadata": classes("ordered-metadata"),
                "pessimistic_only": classes("pessimistic-only"),
            })
        })
        .collect();
    for row in &table {
        eprintln!("{row}");
    }
    let value = json!({
        "variant": args.variant,
        "calls": recording.calls.len(),
        "markers": recording.markers().len(),
        "fidelity": fidelity,
        "images_per_point": options.images_per_point,
        "models": table,
        "findings": findings,
        "case_files": case_files,
    });
    Ok(if findings == 0 {
        Outcome::Ok(value)
    } else {
        Outcome::CheckFailed(value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: KafkaCrashArgs,
    }

    #[test]
    fn flags_parse_and_an_unknown_variant_is_refused_before_any_run() {
        let cli = Cli::try_parse_from([
            "kafka-crash",
            "--persistence",
            "ordered-metadata",
            "--images-per-point",
            "3",
        ])
        .unwrap();
        assert_eq!(cli.args.models, vec![Persistence::OrderedMetadata]);
        assert_eq!(cli.args.variant, "normal");
        assert_eq!(cli.args.images_per_point, 3);
        assert!(Cli::try_parse_from(["kafka-crash", "--persistence", "journal"]).is_err());

        let bad = Cli::try_parse_from(["kafka-crash", "--variant", "early"]).unwrap();
        let err = kafka_crash(bad.args).unwrap_err().to_string();
        assert!(err.contains("not a crash-workload variant"), "{err}");
    }
}

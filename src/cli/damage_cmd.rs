//! `seglog damage`: the damaged-data stage on its own (also a stage of `seglog verify`).

use clap::Args;

use super::Outcome;
use crate::damage::{self, DamageOptions};
use seglog::{Error, Result};

#[derive(Debug, Args)]
pub struct DamageArgs {
    /// Only the workloads with these names (default: all named sweep workloads).
    #[arg(long = "workload")]
    pub workloads: Vec<String>,
    /// Crash points per workload, besides its end, to damage (the first of each
    /// protocol state: temp dir, manifest, backup, checkpoint).
    #[arg(long, default_value_t = DamageOptions::quick().protocol_points)]
    pub protocol_points: usize,
    /// At most this many damages per file (default: every planned damage).
    #[arg(long)]
    pub damages_per_file: Option<usize>,
    /// Also flip every bit of the first and last batch header of every `.log`
    /// (what `verify --budget standard` and `overnight` run).
    #[arg(long)]
    pub all_header_bits: bool,
}

pub fn damage(args: DamageArgs) -> Result<Outcome> {
    let workloads = super::sweep_cmd::selected_workloads(&args.workloads)?;
    let options = DamageOptions {
        protocol_points: args.protocol_points,
        damages_per_file: args.damages_per_file.unwrap_or(usize::MAX),
        all_header_bits: args.all_header_bits,
        jobs: crate::jobs::default_jobs(),
    };
    let report = damage::run(&workloads, &options, |_, _, _| {});
    for w in &report.per_workload {
        eprintln!(
            "{}: {} points, {} damages, {} errors, {} recovered, {} undetectable, {} violations, {:.2}s",
            w.workload,
            w.points,
            w.damages,
            w.errors,
            w.recovered,
            w.undetectable,
            w.violations.len(),
            w.seconds
        );
        if let Some(first) = w.violations.first() {
            eprintln!("  first: {first}");
        }
    }
    let value = serde_json::to_value(&report)
        .map_err(|e| Error::InvalidArgument(format!("cannot encode the report: {e}")))?;
    Ok(if report.violations == 0 {
        Outcome::Ok(value)
    } else {
        Outcome::CheckFailed(value)
    })
}

//! The `seglog model` subcommands, as clap types the `seglog` binary embeds
//! (`#[command(subcommand)] model: seglog_model::cli::ModelCommand`) and the
//! `seglog-model` binary of this crate runs directly.

use clap::{Args, Subcommand};

use crate::check::{self, CheckOptions, CheckReport, ModelKind, Variant};

const VARIANTS_HELP: &str = "Variants per model (the first is ours and the default):
  log:       spec, closed-only-latest-map, no-tombstone-grace
  install:   manifest, two-rename, no-dir-sync, no-temp-sync, no-recovery-sync,
             no-temp-entry-sync, point-on-reopen, carry-by-rename, link-without-dir-sync
  retention: checkpoint-first, delete-first, no-recovery-sync
  durability: recovery-point, recovery-point-before-flush, no-open-dir-sync,
             sync-scanned-only-for-new-point, marker-through-appends, flush-like-kafka
  cleaner:   clean-point-in-temp, clean-point-first
  concurrent: linked-tail, stale-tail-copy, no-cleaning-lock, unlocked-swap, unbounded-map
  txn:       txn-rules, aborted-like-committed, markers-ignore-data";

#[derive(Debug, Clone, Subcommand)]
pub enum ModelCommand {
    /// Check a model exhaustively and print the report as JSON; exit 1 on a violation.
    #[command(after_help = VARIANTS_HELP)]
    Check(CheckArgs),
    /// Serve stateright's Explorer web UI to click through a model's state space.
    #[command(after_help = VARIANTS_HELP)]
    Explore(ExploreArgs),
}

#[derive(Debug, Clone, Args)]
pub struct Target {
    /// Which model.
    #[arg(long, value_enum, default_value = "log")]
    pub model: ModelKind,
    /// Protocol variant (default: the model's own).
    #[arg(long, value_enum)]
    pub variant: Option<Variant>,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub target: Target,
    /// Bound the search depth (the report then says `"exhaustive": false`).
    #[arg(long)]
    pub depth: Option<usize>,
    /// Log model only: how many offsets may be appended (default 3).
    #[arg(long)]
    pub records: Option<i64>,
}

#[derive(Debug, Clone, Args)]
pub struct ExploreArgs {
    #[command(flatten)]
    pub target: Target,
    /// Address to serve on.
    #[arg(long, default_value = "127.0.0.1:3000")]
    pub addr: String,
}

impl CheckArgs {
    pub fn options(&self) -> CheckOptions {
        CheckOptions {
            model: self.target.model,
            variant: self.target.variant,
            depth: self.depth,
            records: self.records,
        }
    }
}

/// The JSON of a counterexample's actions, the crash-scenario form of a trace.
pub fn scenario_json(report: &CheckReport) -> Option<String> {
    let first = report.violations.first()?;
    serde_json::to_string_pretty(&first.actions).ok()
}

/// Runs a subcommand; returns the process exit code (0 ok, 1 violation, 2 usage).
pub fn run(command: &ModelCommand) -> i32 {
    match command {
        ModelCommand::Check(args) => match check::try_run(&args.options()) {
            Ok(report) => {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&report).expect("report serializes")
                );
                i32::from(!report.ok())
            }
            Err(e) => {
                eprintln!("error: {e}");
                2
            }
        },
        ModelCommand::Explore(args) => {
            let options = CheckOptions {
                model: args.target.model,
                variant: args.target.variant,
                ..CheckOptions::default()
            };
            eprintln!(
                "serving the stateright Explorer for the {:?} model on http://{}",
                options.model, args.addr
            );
            match check::explore(&options, &args.addr) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("error: {e}");
                    2
                }
            }
        }
    }
}

//! `seglog soak DIR --partitions N --seconds S [--kill] [--seed N]`, and the hidden
//! `seglog soak-child` the parent runs with `--kill` (`crate::soak`).
//!
//! Prints the report as one JSON object (`passed`, `first_failure`, `rounds`,
//! `kills`, `records_appended`, `records_acknowledged`, `records_read`,
//! `append_records_per_sec`, `read_records_per_sec`, `append_latency`
//! {`p50_us`, `p99_us`, `p999_us`, `max_us`, `samples`}, `cleanings`,
//! `retention_deletions`, `background_errors`, `checks` {name: {`count`,
//! `failures`, `first_failure`}}) and the human summary on stderr; exit 1 when a
//! check failed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::Outcome;
use crate::soak::workload::{self, StdoutSink, WorkOptions};
use crate::soak::{self, SoakOptions};
use seglog::error::{Error, Result};

#[derive(Debug, Args)]
pub struct SoakArgs {
    /// The directory of the partition logs (created; an earlier soak's logs are
    /// reopened, checked and continued).
    pub dir: PathBuf,
    /// Partitions (`soak-0` ...), each with a producer and a consumer thread.
    #[arg(long, default_value_t = 4)]
    pub partitions: u32,
    /// How long the soak runs.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Run the work in a child process, SIGKILL it at seeded random moments,
    /// reopen and check, round after round.
    #[arg(long)]
    pub kill: bool,
    /// Seeds the kill moments and the producers.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Distinct keys per partition.
    #[arg(long, default_value_t = 256)]
    pub keys: u32,
    /// Test builds only (`--features test-variants`): run the broken cleaning swap
    /// `stale-tail-copy`; the soak must fail.
    #[arg(long, hide = true)]
    pub variant: Option<String>,
    /// No human summary on stderr.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct SoakChildArgs {
    pub dir: PathBuf,
    #[arg(long)]
    pub partitions: u32,
    #[arg(long)]
    pub seed: u64,
    #[arg(long)]
    pub round: u64,
    #[arg(long)]
    pub keys: u32,
    #[arg(long)]
    pub millis: u64,
    #[arg(long)]
    pub variant: Option<String>,
}

pub fn soak(args: SoakArgs) -> Result<Outcome> {
    if !(args.seconds.is_finite() && args.seconds >= 0.0) {
        return Err(Error::InvalidArgument(
            "--seconds must be a non-negative number".into(),
        ));
    }
    let exe = std::env::current_exe()
        .map_err(|e| Error::InvalidArgument(format!("cannot find this binary: {e}")))?;
    let report = soak::run(&SoakOptions {
        dir: args.dir,
        partitions: args.partitions,
        seconds: args.seconds,
        kill: args.kill,
        seed: args.seed,
        keys: args.keys,
        variant: args.variant,
        exe,
    })?;
    if !args.quiet {
        eprint!("{}", report.human());
    }
    let value = serde_json::to_value(&report)
        .map_err(|e| Error::InvalidArgument(format!("cannot print the report: {e}")))?;
    Ok(if report.passed {
        Outcome::Ok(value)
    } else {
        Outcome::CheckFailed(value)
    })
}

/// The child: the work, its events as JSON lines on stdout; exits 0 after a clean
/// close (then prints nothing else), 2 on an error.
pub fn soak_child(args: SoakChildArgs) -> Result<Outcome> {
    let options = WorkOptions {
        partitions: args.partitions,
        seed: args.seed,
        round: args.round,
        keys: args.keys,
        variant: args.variant,
    };
    workload::work(
        &args.dir,
        &options,
        Duration::from_millis(args.millis),
        Arc::new(StdoutSink::default()),
    )?;
    Ok(Outcome::Printed { passed: true })
}

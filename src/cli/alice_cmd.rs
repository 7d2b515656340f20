//! `seglog alice`: crash states built from the real binary's system calls
//! (`alice/`), recovered by the real binary, judged by the sweep's exact oracle.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::Outcome;
use crate::alice::{self, AliceOptions};
use seglog::{Error, Result};

#[derive(Debug, Args)]
pub struct AliceArgs {
    /// Only the workloads with these names (default: every named workload the
    /// command line can express; see `seglog sweep`).
    #[arg(long = "workload")]
    pub workloads: Vec<String>,
    /// Protocol variant the traced `compact` and `retain` run (the broken ones need
    /// `--features test-variants`).
    #[arg(long, default_value = "manifest")]
    pub variant: String,
    /// Power-loss disk images per crash point (each a prefix of the trace).
    #[arg(long, default_value_t = 32)]
    pub images_per_point: usize,
    /// Which directory operations a power loss may take: any-subset (any unsynced
    /// one) or ordered-metadata (a prefix of them in issue order, as a journaled
    /// file system keeps them).
    #[arg(long, default_value_t = seglog::fs::sim::Persistence::AnySubset, value_name = "any-subset|ordered-metadata")]
    pub persistence: seglog::fs::sim::Persistence,
    /// The `seglog` binary to trace and recover with (default: this one).
    #[arg(long)]
    pub binary: Option<PathBuf>,
    /// The strace to run.
    #[arg(long, default_value = "strace")]
    pub strace: PathBuf,
    /// Where the traced runs and the crash states are laid out (default: /dev/shm
    /// where it exists, else the temp directory).
    #[arg(long)]
    pub scratch: Option<PathBuf>,
}

/// `seglog alice`.
pub fn alice(args: AliceArgs) -> Result<Outcome> {
    crate::workload::engine::Variant::parse(&args.variant).map_err(Error::InvalidArgument)?;
    let binary = match args.binary {
        Some(path) => path,
        None => std::env::current_exe().map_err(|e| Error::io("current_exe", e))?,
    };
    if !alice::strace_available(&args.strace) {
        return Err(Error::InvalidArgument(format!(
            "{} does not run: install strace",
            args.strace.display()
        )));
    }
    let options = AliceOptions {
        binary,
        strace: args.strace,
        images_per_point: args.images_per_point,
        persistence: args.persistence,
        scratch: args.scratch.unwrap_or_else(alice::default_scratch),
    };
    let mut workloads = super::sweep_cmd::selected_workloads(&args.workloads)?;
    if args.workloads.is_empty() {
        workloads.retain(alice::expressible);
    }
    let mut reports = Vec::new();
    for mut workload in workloads {
        workload.variant = args.variant.clone();
        let report = alice::run_workload(&workload, &options)
            .map_err(|e| Error::InvalidArgument(format!("workload {}: {e}", workload.name)))?;
        eprintln!(
            "{}: {} commands, {} system calls, {} crash states, {} violations, {:.2}s",
            report.workload,
            report.commands,
            report.syscalls,
            report.states,
            report.violations.len(),
            report.seconds
        );
        if let Some(first) = report.violations.first() {
            eprintln!(
                "  first: {}",
                serde_json::to_string(first).unwrap_or_default()
            );
        }
        reports.push(report);
    }
    let states: u64 = reports.iter().map(|r| r.states).sum();
    let seconds: f64 = reports.iter().map(|r| r.seconds).sum();
    let violations: usize = reports.iter().map(|r| r.violations.len()).sum();
    let value = json!({
        "workloads": reports.len(),
        "variant": args.variant,
        "persistence": options.persistence.name(),
        "commands": reports.iter().map(|r| r.commands).sum::<u64>(),
        "syscalls": reports.iter().map(|r| r.syscalls).sum::<u64>(),
        "crash_points": reports.iter().map(|r| r.crash_points).sum::<u64>(),
        "states": states,
        "violations": violations,
        "seconds": seconds,
        "states_per_second": alice::per_second(states, seconds),
        "images_per_point": options.images_per_point,
        "scratch": options.scratch,
        "per_workload": reports,
    });
    Ok(if violations == 0 {
        Outcome::Ok(value)
    } else {
        Outcome::CheckFailed(value)
    })
}

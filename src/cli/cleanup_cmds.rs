//! `retain` and `compact`.
//!
//! Both open the log (running recovery, including the install protocol's decision
//! table), apply the operation crash-safely, and print one JSON object:
//! * `retain` -> `{"deleted_segments":[base,...],"log_start_offset":N}`;
//! * `compact` -> `{"records_before":N,"records_after":N,"segments_before":N,
//!   "segments_after":N,"bytes_before":N,"bytes_after":N}` (closed region only).
//!
//! A directory with no log (and no install state beside it) is an error: these
//! commands never create a log.

use clap::Args;
use serde_json::json;

use crate::error::{Error, Result};
use crate::fs::{FileSystem, StdFs};
use crate::install::InstallPaths;
use crate::Log;

use super::log_cmds::LogArgs;
use super::Outcome;

#[derive(Debug, Args)]
pub struct RetainArgs {
    #[command(flatten)]
    pub log: LogArgs,
    /// The clock, in ms since the epoch.
    #[arg(long, allow_negative_numbers = true)]
    pub now: i64,
    /// Delete closed segments whose newest record is older than `now - N`.
    #[arg(long, allow_negative_numbers = true)]
    pub retention_ms: Option<i64>,
    /// Then delete the oldest closed segments while the log exceeds N bytes.
    #[arg(long, allow_negative_numbers = true)]
    pub retention_bytes: Option<i64>,
}

#[derive(Debug, Args)]
pub struct CompactArgs {
    /// The log directory; `--segment-bytes` also sets the output grouping size.
    #[command(flatten)]
    pub log: LogArgs,
    /// The clock, in ms since the epoch.
    #[arg(long, allow_negative_numbers = true)]
    pub now: i64,
    /// Keep a latest tombstone while `now - ts <= N`.
    #[arg(long, allow_negative_numbers = true)]
    pub delete_retention_ms: i64,
}

fn open_existing(args: &LogArgs) -> Result<Log> {
    let fs = StdFs::new();
    let paths = InstallPaths::new(&args.dir)?;
    let any = [&paths.live, &paths.tmp, &paths.backup, &paths.manifest]
        .into_iter()
        .any(|p| fs.exists(p));
    if !any {
        return Err(Error::InvalidArgument(format!(
            "no log at {}",
            args.dir.display()
        )));
    }
    let (log, _report) = Log::open(&args.dir, args.config())?;
    Ok(log)
}

/// `seglog retain`.
pub fn retain(args: RetainArgs) -> Result<Outcome> {
    crate::retention::check_arguments(args.retention_ms, args.retention_bytes)?;
    let mut log = open_existing(&args.log)?;
    let outcome = log.retain(args.now, args.retention_ms, args.retention_bytes)?;
    log.close()?;
    Ok(Outcome::Ok(json!({
        "deleted_segments": outcome.deleted_segments,
        "log_start_offset": outcome.log_start_offset,
    })))
}

/// `seglog compact`.
pub fn compact(args: CompactArgs) -> Result<Outcome> {
    if args.delete_retention_ms < 0 {
        return Err(Error::InvalidArgument(format!(
            "--delete-retention-ms must be >= 0, got {}",
            args.delete_retention_ms
        )));
    }
    let mut log = open_existing(&args.log)?;
    let report = log.compact(
        args.now,
        args.delete_retention_ms,
        Some(args.log.segment_bytes),
    )?;
    log.close()?;
    Ok(Outcome::Ok(json!({
        "records_before": report.records_before,
        "records_after": report.records_after,
        "segments_before": report.segments_before,
        "segments_after": report.segments_after,
        "bytes_before": report.bytes_before,
        "bytes_after": report.bytes_after,
    })))
}

//! `retain` and `compact`.
//!
//! Both open the log (running recovery, including the install protocol's decision
//! table), apply the operation crash-safely, and print one JSON object:
//! * `retain` -> `{"deleted_segments":[base,...],"log_start_offset":N}`;
//! * `compact` -> `{"records_before":N,"records_after":N,"segments_before":N,
//!   "segments_after":N,"bytes_before":N,"bytes_after":N}` (closed region only),
//!   plus the cleaner's fields: `"compacted"` (false when `--if-dirty` found the
//!   ratio too low; the counts are then 0), `"clean_point_before"`,
//!   `"clean_point_after"`, `"mapped_end_offset"`, `"map_keys"`, `"map_bytes_peak"`,
//!   and `"cleanable"` (the dirty ratio before the pass: `clean_point`,
//!   `first_uncleanable_offset`, `clean_bytes`, `cleanable_bytes`, `dirty_ratio`).
//!
//! A directory with no log (and no install state beside it) is an error: these
//! commands never create a log.

use clap::Args;
use serde_json::json;

use crate::workload::engine::{self, Variant};
use seglog::compaction::CompactionReport;
use seglog::error::{Error, Result};
use seglog::{Log, LogConfig};

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
    /// Protocol variant (the broken ones need `--features test-variants`): the
    /// syscall crash states (`seglog alice`) run a broken retention order with it.
    #[arg(long, default_value = "manifest")]
    pub variant: String,
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
    /// Clean only when the dirty ratio is above `--min-cleanable-dirty-ratio`.
    #[arg(long)]
    pub if_dirty: bool,
    /// The ratio `--if-dirty` compares with (Kafka's `min.cleanable.dirty.ratio`).
    #[arg(long, default_value_t = LogConfig::default().min_cleanable_dirty_ratio)]
    pub min_cleanable_dirty_ratio: f64,
    /// Cap of the offset map in bytes, 24 a key (default: unbounded); a larger dirty
    /// section is cleaned part way, and the next `compact` continues.
    #[arg(long)]
    pub dedupe_buffer_bytes: Option<u64>,
    /// Do not clean closed segments holding a timestamp newer than `now - N`.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub min_compaction_lag_ms: i64,
    /// A producer with no open transaction whose last batch is this old is no
    /// longer active (Kafka's `producer.id.expiration.ms`): a `--policy kafka`
    /// cleaning keeps an active producer's last batch as an empty batch.
    #[arg(long, default_value_t = LogConfig::default().producer_id_expiration_ms, allow_negative_numbers = true)]
    pub producer_id_expiration_ms: i64,
    /// Protocol variant (the broken ones need `--features test-variants`): the
    /// syscall crash states (`seglog alice`) run a broken install with it.
    #[arg(long, default_value = "manifest", conflicts_with = "if_dirty")]
    pub variant: String,
}

/// The log and its open's `"recovery"` JSON.
fn open_existing(args: &LogArgs) -> Result<(Log, Option<serde_json::Value>)> {
    open_existing_with(args, args.config())
}

fn open_existing_with(
    args: &LogArgs,
    config: LogConfig,
) -> Result<(Log, Option<serde_json::Value>)> {
    super::require_log(&args.dir)?;
    super::log_cmds::open_writable(&args.dir, config)
}

/// `seglog retain`.
pub fn retain(args: RetainArgs) -> Result<Outcome> {
    seglog::retention::check_arguments(args.retention_ms, args.retention_bytes)?;
    let variant = Variant::parse(&args.variant).map_err(Error::InvalidArgument)?;
    let (mut log, recovery) = open_existing(&args.log)?;
    let deleted_segments = engine::retain(
        &mut log,
        args.now,
        args.retention_ms,
        args.retention_bytes,
        variant,
    )?;
    let log_start_offset = log.log_start_offset();
    log.close()?;
    Ok(Outcome::Ok(super::log_cmds::put_recovery(
        json!({
        "deleted_segments": deleted_segments,
        "log_start_offset": log_start_offset,
        }),
        recovery,
    )))
}

/// `seglog compact`.
pub fn compact(args: CompactArgs) -> Result<Outcome> {
    if args.delete_retention_ms < 0 {
        return Err(Error::InvalidArgument(format!(
            "--delete-retention-ms must be >= 0, got {}",
            args.delete_retention_ms
        )));
    }
    let config = LogConfig {
        dedupe_buffer_bytes: args.dedupe_buffer_bytes,
        min_cleanable_dirty_ratio: args.min_cleanable_dirty_ratio,
        min_compaction_lag_ms: args.min_compaction_lag_ms,
        producer_id_expiration_ms: args.producer_id_expiration_ms,
        ..args.log.config()
    };
    config.validate()?;
    let variant = Variant::parse(&args.variant).map_err(Error::InvalidArgument)?;
    let (mut log, recovery) = open_existing_with(&args.log, config)?;
    let cleanable = log.cleanable(args.now)?;
    let segment_bytes = Some(args.log.segment_bytes);
    let report = if args.if_dirty {
        log.compact_if_dirty(args.now, args.delete_retention_ms, segment_bytes)?
    } else {
        Some(engine::compact(
            &mut log,
            args.now,
            args.delete_retention_ms,
            segment_bytes,
            variant,
        )?)
    };
    let compacted = report.is_some();
    let report = report.unwrap_or_else(|| CompactionReport {
        clean_point_before: cleanable.clean_point,
        clean_point_after: cleanable.clean_point,
        ..CompactionReport::default()
    });
    log.close()?;
    Ok(Outcome::Ok(super::log_cmds::put_recovery(
        json!({
        "records_before": report.records_before,
        "records_after": report.records_after,
        "segments_before": report.segments_before,
        "segments_after": report.segments_after,
        "bytes_before": report.bytes_before,
        "bytes_after": report.bytes_after,
        "compacted": compacted,
        "clean_point_before": report.clean_point_before,
        "clean_point_after": report.clean_point_after,
        "mapped_end_offset": report.mapped_end_offset,
        "map_keys": report.map_keys,
        "map_bytes_peak": report.map_bytes_peak,
        "cleanable": cleanable,
        "policy": args.log.policy.name(),
        "keyless_dropped": report.keyless_dropped,
        "empty_batches": report.empty_batches,
        }),
        recovery,
    )))
}

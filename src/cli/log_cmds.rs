//! `append`, `roll`, `dump`, `recover`, `failpoints`.
//!
//! Keys and values are UTF-8 strings in JSON. `dump` prints a key or value that is
//! not valid UTF-8 as `"key": null` plus `"key_b64": "<standard base64>"` (and the
//! same for `value`), so a null key stays distinguishable. Record headers are not
//! printed.

use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine;
use clap::Args;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use seglog::error::{Error, Result};
use seglog::format::{Compression, TimestampType};
use seglog::fs::{FileSystem, StdFs};
use seglog::{Log, LogConfig, NewRecord, RecoveryMode, RecoveryReport, TailKind};

use super::Outcome;
use seglog::compaction::CompactionPolicy;

/// Bytes asked for per read while dumping.
const DUMP_READ_BYTES: usize = 1 << 20;

/// The log directory and its configuration.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// The partition log directory.
    pub dir: PathBuf,
    /// Roll before the active segment would exceed this many bytes.
    #[arg(long, default_value_t = LogConfig::default().segment_bytes)]
    pub segment_bytes: u64,
    /// Bytes between sparse index entries.
    #[arg(long, default_value_t = LogConfig::default().index_interval_bytes)]
    pub index_interval_bytes: u64,
    /// The codec appended batches are written with: none, gzip, snappy, lz4, zstd
    /// (reads accept every codec whatever this says).
    #[arg(long, default_value_t = Compression::None)]
    pub compression: Compression,
    /// CreateTime keeps the records' timestamps; LogAppendTime stamps each
    /// appended batch with the wall clock, which every record then reads as.
    #[arg(long, default_value_t = TimestampType::CreateTime)]
    pub timestamp_type: TimestampType,
    /// The largest producer batch `append --raw-file` takes (Kafka's
    /// `max.message.bytes`).
    #[arg(long, default_value_t = LogConfig::default().max_batch_bytes)]
    pub max_batch_bytes: u64,
    /// The rules compaction follows: seed (the default) or kafka (Kafka's cleaner:
    /// the map stops at the active segment, keyless records go, tombstones go after
    /// a delete horizon stamped into their batch).
    #[arg(long, default_value_t = CompactionPolicy::Seed)]
    pub policy: CompactionPolicy,
    /// Start the active segment's write-back each time it grows by this many
    /// bytes (a hint: flush still makes the data durable); 0 turns it off.
    #[arg(long, default_value_t = LogConfig::default().writeback_bytes)]
    pub writeback_bytes: u64,
    /// What a writable open does with an invalid tail of the active segment:
    /// torn-tail (the default) truncates it, whatever follows, and reports it;
    /// strict refuses (exit 2, nothing changed) when CRC-valid batches follow
    /// the damage, i.e. the tail is not a torn write. The command's JSON says
    /// what was truncated and why in "recovery". Every mode but accept-loss
    /// refuses (exit 2, nothing changed) a log whose recovery point summarizes
    /// closed segments that are missing, shorter or not files; accept-loss opens
    /// anyway, names the lost ranges in "lost" and writes a fresh recovery point.
    #[arg(long, default_value_t = RecoveryMode::TornTail, value_name = "torn-tail|strict|accept-loss")]
    pub recovery_mode: RecoveryMode,
    /// The most files the command keeps open at once (at least 1), beside the
    /// writer lock and the files with writes not yet synced: the least recently
    /// used is closed first and opened again when next read, so a log of any
    /// number of segments is served within this many descriptors.
    #[arg(long, default_value_t = LogConfig::default().max_open_files)]
    pub max_open_files: usize,
}

/// What the open's recovery found and did, for the JSON of a command that opened
/// the log writable (`"recovery"`); `None` when it found and changed nothing worth
/// saying (the command's JSON is then what it always was): no truncation, no lost
/// segments, no ignored checkpoint, no rescanned trusted segment, no rebuilt index,
/// no removed or unknown file. Prints a warning on stderr when the truncation
/// dropped CRC-valid batches that followed the damage, and when the open accepted
/// lost segments.
pub(crate) fn recovery_json(report: &RecoveryReport) -> Option<Value> {
    let found = report.truncated_bytes != 0
        || !report.lost.is_empty()
        || !report.ignored_checkpoints.is_empty()
        || !report.rescanned.is_empty()
        || !report.rebuilt_indexes.is_empty()
        || !report.removed_files.is_empty()
        || !report.unknown_files.is_empty();
    if !found {
        return None;
    }
    warn_lost(report);
    let tail = report.truncated_tail.as_ref();
    let after = tail.map(|t| t.valid_after.clone()).unwrap_or_default();
    if tail.is_some_and(|t| t.kind == TailKind::CorruptionBeforeValidBatches) {
        eprintln!(
            "seglog: warning: recovery truncated the active segment at corruption followed by {} valid batches ({} records, offsets {}..={}); they are gone ({}); --recovery-mode strict refuses instead",
            after.batches,
            after.records,
            after.first_offset.unwrap_or(-1),
            after.last_offset.unwrap_or(-1),
            report.truncated_reason.as_deref().unwrap_or("invalid batch"),
        );
    }
    Some(json!({
        "truncated_bytes": report.truncated_bytes,
        "truncated_batches": report.truncated_batches,
        "truncated_segment": report.truncated_segment,
        "reason": report.truncated_reason,
        "tail": tail.map(|t| t.kind),
        "valid_batches_after": after.batches,
        "valid_records_after": after.records,
        "valid_offsets_after": after.first_offset.zip(after.last_offset).map(|(a, b)| [a, b]),
        "mode": tail.map(|t| t.mode.to_string()),
        "lost": report.lost,
        "ignored_checkpoints": report.ignored_checkpoints,
        "rescanned": report.rescanned,
        "rebuilt_indexes": report.rebuilt_indexes,
        "removed_files": report.removed_files,
        "unknown_files": report.unknown_files,
    }))
}

/// One stderr warning per lost segment an `accept-loss` open went past.
fn warn_lost(report: &RecoveryReport) {
    for lost in &report.lost {
        eprintln!(
            "seglog: warning: the recovery point summarizes data that is gone and --recovery-mode accept-loss opened without it: {lost}; a fresh recovery point no longer names it"
        );
    }
}

/// Opens the log in `dir` writable through the CLI's seam: the log, and its open's
/// `"recovery"` JSON ([`recovery_json`]).
pub(crate) fn open_writable(
    dir: &std::path::Path,
    config: LogConfig,
) -> Result<(Log, Option<Value>)> {
    let (log, report) = Log::open_with(super::seam(config.max_open_files), dir, config)?;
    let recovery = recovery_json(&report);
    Ok((log, recovery))
}

/// `value` (a command's JSON object) with `"recovery"` added, if there is one.
pub(crate) fn put_recovery(mut value: Value, recovery: Option<Value>) -> Value {
    if let (Value::Object(object), Some(recovery)) = (&mut value, recovery) {
        object.insert("recovery".into(), recovery);
    }
    value
}

impl LogArgs {
    pub(crate) fn config(&self) -> LogConfig {
        LogConfig {
            segment_bytes: self.segment_bytes,
            index_interval_bytes: self.index_interval_bytes,
            compression: self.compression,
            timestamp_type: self.timestamp_type,
            max_batch_bytes: self.max_batch_bytes,
            compaction_policy: self.policy,
            writeback_bytes: self.writeback_bytes,
            recovery_mode: self.recovery_mode,
            max_open_files: self.max_open_files,
            ..Default::default()
        }
    }
}

#[derive(Debug, Args)]
pub struct AppendArgs {
    #[command(flatten)]
    pub log: LogArgs,
    /// One batch: a JSON array of {"key": str|null, "value": str|null, "ts": int}.
    #[arg(
        long,
        conflicts_with_all = ["batch_file", "raw_file", "control"],
        required_unless_present_any = ["batch_file", "raw_file", "control"]
    )]
    pub batch: Option<String>,
    /// A file with one JSON array (one batch) per line.
    #[arg(long, conflicts_with_all = ["raw_file", "control"])]
    pub batch_file: Option<PathBuf>,
    /// A file of producer-encoded Kafka v2 record batches, back to back (a produce
    /// request's records), appended as they are (`Log::append_batches`): all or
    /// none. Prints `base_offset`, `last_offset` and `batches`.
    #[arg(long, conflicts_with_all = ["control", "producer_id"])]
    pub raw_file: Option<PathBuf>,
    /// Append the batches as transactional batches of this producer
    /// (`Log::append_transactional`), opening its transaction; with `--control`,
    /// the producer whose transaction the marker ends.
    #[arg(long)]
    pub producer_id: Option<i64>,
    /// The producer's epoch (with `--producer-id`).
    #[arg(long, default_value_t = 0, requires = "producer_id")]
    pub producer_epoch: i16,
    /// Append a COMMIT or ABORT marker ending `--producer-id`'s transaction
    /// (`Log::append_control`, timestamp `--timestamp`) instead of records; an
    /// ABORT adds its entry to the segment's `.txnindex`.
    #[arg(long, value_enum, requires = "producer_id")]
    pub control: Option<ControlArg>,
    /// The marker's timestamp (with `--control`).
    #[arg(
        long,
        default_value_t = 0,
        requires = "control",
        allow_negative_numbers = true
    )]
    pub timestamp: i64,
}

/// `--control`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ControlArg {
    /// The transaction committed.
    Commit,
    /// The transaction aborted.
    Abort,
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// The partition log directory.
    pub dir: PathBuf,
    /// Bytes between the entries of an index this read builds in memory for a
    /// segment whose index files it cannot use.
    #[arg(long, default_value_t = LogConfig::default().index_interval_bytes)]
    pub index_interval_bytes: u64,
    /// What the read-only open does with closed segments its recovery point
    /// summarizes that are missing, shorter or not files: every mode but
    /// accept-loss refuses (exit 2); accept-loss reads on and names them in
    /// "lost". A read-only open never refuses on an invalid tail: it warns and
    /// shows the valid records.
    #[arg(long, default_value_t = RecoveryMode::TornTail, value_name = "torn-tail|strict|accept-loss")]
    pub recovery_mode: RecoveryMode,
    /// The most files the read keeps open at once (at least 1).
    #[arg(long, default_value_t = LogConfig::default().max_open_files)]
    pub max_open_files: usize,
    /// The writable commands' flags, accepted and left out of the help: a dump
    /// writes nothing, so they change nothing, and it says so on stderr.
    #[command(flatten)]
    pub writes_only: WriteOnlyArgs,
    /// First offset to print (default: the log start offset).
    #[arg(long, allow_negative_numbers = true)]
    pub from: Option<i64>,
    /// `read_committed`: only records below the last stable offset that are not in
    /// an aborted transaction, no markers (Kafka's consumer `isolation.level`).
    #[arg(long, value_enum, default_value_t = IsolationArg::ReadUncommitted)]
    pub isolation: IsolationArg,
    /// Read and check every segment batch by batch before printing, whatever the
    /// recovery point and the clean-shutdown marker vouch for (without it, the open
    /// trusts them as a writable open does, and damage in a segment it did not read
    /// is an error at the first read of it).
    #[arg(long)]
    pub check: bool,
}

/// Flags of the commands that write, which a read-only command accepts (scripts
/// pass one set of flags to every command) but does not use.
#[derive(Debug, Args)]
pub struct WriteOnlyArgs {
    #[arg(long, hide = true)]
    segment_bytes: Option<u64>,
    #[arg(long, hide = true)]
    compression: Option<Compression>,
    #[arg(long, hide = true)]
    timestamp_type: Option<TimestampType>,
    #[arg(long, hide = true)]
    max_batch_bytes: Option<u64>,
    #[arg(long, hide = true)]
    policy: Option<CompactionPolicy>,
    #[arg(long, hide = true)]
    writeback_bytes: Option<u64>,
}

impl DumpArgs {
    pub(crate) fn config(&self) -> LogConfig {
        LogConfig {
            index_interval_bytes: self.index_interval_bytes,
            recovery_mode: self.recovery_mode,
            max_open_files: self.max_open_files,
            ..LogConfig::default()
        }
    }
}

impl WriteOnlyArgs {
    /// The flags given, as the command line spells them.
    pub fn given(&self) -> Vec<&'static str> {
        [
            ("--segment-bytes", self.segment_bytes.is_some()),
            ("--compression", self.compression.is_some()),
            ("--timestamp-type", self.timestamp_type.is_some()),
            ("--max-batch-bytes", self.max_batch_bytes.is_some()),
            ("--policy", self.policy.is_some()),
            ("--writeback-bytes", self.writeback_bytes.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect()
    }
}

/// `--isolation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum IsolationArg {
    /// Every stored record, markers included.
    ReadUncommitted,
    /// Committed records only (see [`seglog::Isolation::ReadCommitted`]).
    ReadCommitted,
}

impl From<IsolationArg> for seglog::Isolation {
    fn from(arg: IsolationArg) -> Self {
        match arg {
            IsolationArg::ReadUncommitted => seglog::Isolation::ReadUncommitted,
            IsolationArg::ReadCommitted => seglog::Isolation::ReadCommitted,
        }
    }
}

/// One record of `--batch`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonRecord {
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    value: Option<String>,
    ts: i64,
}

fn parse_batch(text: &str, what: &str) -> Result<Vec<NewRecord>> {
    let records: Vec<JsonRecord> = serde_json::from_str(text)
        .map_err(|e| Error::InvalidArgument(format!("malformed batch JSON ({what}): {e}")))?;
    if records.is_empty() {
        return Err(Error::InvalidArgument(format!("empty batch ({what})")));
    }
    Ok(records
        .into_iter()
        .map(|r| {
            NewRecord::new(
                r.key.map(String::into_bytes),
                r.value.map(String::into_bytes),
                r.ts,
            )
        })
        .collect())
}

/// `seglog append`: all input is parsed before the log is opened.
pub fn append(args: AppendArgs) -> Result<Outcome> {
    if let Some(path) = &args.raw_file {
        return append_raw(&args.log, path);
    }
    if let Some(control) = args.control {
        let producer_id = args
            .producer_id
            .expect("clap: --control requires --producer-id");
        let kind = match control {
            ControlArg::Commit => seglog::ControlKind::Commit,
            ControlArg::Abort => seglog::ControlKind::Abort,
        };
        let (mut log, recovery) = open_writable(&args.log.dir, args.log.config())?;
        let info = log.append_control(kind, producer_id, args.producer_epoch, args.timestamp)?;
        log.close()?;
        return Ok(Outcome::Ok(put_recovery(json!(info), recovery)));
    }
    let batches = match (&args.batch, &args.batch_file) {
        (Some(text), _) => vec![parse_batch(text, "--batch")?],
        (None, Some(path)) => {
            let bytes = StdFs::new()
                .read_all(path)
                .map_err(|e| Error::io(path, e))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| Error::InvalidArgument(format!("{} is not UTF-8", path.display())))?;
            let mut batches = Vec::new();
            for (i, line) in text.lines().enumerate() {
                if !line.trim().is_empty() {
                    let what = format!("line {}", i + 1);
                    let batch = parse_batch(line, &what)?;
                    // Every line is checked as the log will check it before the log
                    // is opened: a bad line stores nothing (all or nothing).
                    seglog::log::check_records(&batch).map_err(|e| match e {
                        Error::InvalidArgument(why) => {
                            Error::InvalidArgument(format!("{what} of {}: {why}", path.display()))
                        }
                        other => other,
                    })?;
                    batches.push(batch);
                }
            }
            batches
        }
        (None, None) => return Err(Error::InvalidArgument("--batch or --batch-file".into())),
    };
    let (mut log, recovery) = open_writable(&args.log.dir, args.log.config())?;
    let mut infos = Vec::with_capacity(batches.len());
    for batch in &batches {
        infos.push(match args.producer_id {
            Some(id) => {
                log.append_transactional(seglog::Producer::new(id, args.producer_epoch), batch)?
            }
            None => log.append(batch)?,
        });
    }
    log.close()?;
    // `--batch-file` prints an array, which has no room for the field: the
    // stderr warning above is what it says about a truncation.
    let value = if args.batch.is_some() {
        put_recovery(json!(infos.first()), recovery)
    } else {
        json!(infos)
    };
    Ok(Outcome::Ok(value))
}

/// `seglog append --raw-file`: the file's batches in one `append_batches` call.
fn append_raw(log_args: &LogArgs, path: &std::path::Path) -> Result<Outcome> {
    let bytes = StdFs::new()
        .read_all(path)
        .map_err(|e| Error::io(path, e))?;
    // Checked before the log is opened (as `append` parses its input first), so a
    // refused file leaves the directory as it was, clean-shutdown marker included.
    let batches = seglog::format::produce::check(&bytes, log_args.max_batch_bytes as usize)
        .map_err(Error::from)?
        .len();
    let (mut log, recovery) = open_writable(&log_args.dir, log_args.config())?;
    let info = log.append_batches(&bytes)?;
    log.close()?;
    Ok(Outcome::Ok(put_recovery(
        json!({
        "base_offset": info.base_offset,
        "last_offset": info.last_offset,
        "batches": batches,
        }),
        recovery,
    )))
}

/// `seglog roll`.
pub fn roll(args: LogArgs) -> Result<Outcome> {
    super::require_log(&args.dir)?;
    let (mut log, recovery) = open_writable(&args.dir, args.config())?;
    let active_base_offset = log.roll()?;
    log.close()?;
    Ok(Outcome::Ok(put_recovery(
        json!({ "active_base_offset": active_base_offset }),
        recovery,
    )))
}

/// `seglog recover`.
pub fn recover(args: LogArgs) -> Result<Outcome> {
    super::require_log(&args.dir)?;
    // Every segment is checked, whatever the recovery point and marker vouch for.
    let config = args.config();
    let (log, report) = Log::open_checked(super::seam(config.max_open_files), &args.dir, config)?;
    warn_lost(&report);
    log.close()?;
    Ok(Outcome::Ok(json!(report)))
}

/// `seglog dump`: read-only; an invalid tail is reported on stderr and not shown.
pub fn dump(args: DumpArgs) -> Result<Outcome> {
    let open = if args.check {
        Log::open_read_only_checked
    } else {
        Log::open_read_only
    };
    for flag in args.writes_only.given() {
        eprintln!("seglog: warning: {flag} changes nothing for dump, which only reads");
    }
    let config = args.config();
    let fs = StdFs::with_open_files_max(config.max_open_files);
    let (log, report) = open(Arc::new(fs), &args.dir, config)?;
    if let Some(reason) = &report.truncated_reason {
        eprintln!(
            "seglog: warning: {} bytes at the end of the last segment are not valid and are not shown ({reason}); `seglog recover` truncates them",
            report.truncated_bytes
        );
    }
    let mut from = args.from.unwrap_or_else(|| log.log_start_offset());
    let isolation = seglog::Isolation::from(args.isolation);
    let mut records = Vec::new();
    loop {
        let batch = log.read_with(from, DUMP_READ_BYTES, isolation)?;
        let Some(last) = batch.last() else { break };
        from = last.offset + 1;
        records.extend(batch.iter().map(record_json));
    }
    let mut out = json!({
        "log_start_offset": log.log_start_offset(),
        "next_offset": log.next_offset(),
        "segments": log.segments(),
        "records": records,
        "isolation": isolation,
    });
    if isolation == seglog::Isolation::ReadCommitted {
        out["last_stable_offset"] = json!(log.last_stable_offset()?);
    }
    // Only `--recovery-mode accept-loss` gets here with lost segments: named.
    if !report.lost.is_empty() {
        warn_lost(&report);
        out["lost"] = json!(report.lost);
    }
    let rebuilt = log.rebuilt_indexes();
    if !rebuilt.is_empty() {
        for (path, why) in &rebuilt {
            eprintln!(
                "seglog: warning: {}: the recovery point vouches for other index files ({why}); rebuilt from the .log for this read; `seglog recover` rewrites them",
                path.display()
            );
        }
        out["indexes_rebuilt"] = json!(rebuilt
            .iter()
            .map(|(path, why)| json!({"file": path.display().to_string(), "why": why}))
            .collect::<Vec<_>>());
    }
    Ok(Outcome::Ok(out))
}

fn record_json(record: seglog::RecordRef<'_>) -> Value {
    let mut object = Map::new();
    object.insert("offset".into(), json!(record.offset));
    put_bytes(&mut object, "key", record.key);
    put_bytes(&mut object, "value", record.value);
    object.insert("ts".into(), json!(record.timestamp));
    if record.control {
        object.insert("control".into(), json!(true));
    }
    Value::Object(object)
}

/// `"name": str|null`, plus `"name_b64"` when the bytes are not UTF-8.
fn put_bytes(object: &mut Map<String, Value>, name: &str, bytes: Option<&[u8]>) {
    match bytes.map(std::str::from_utf8) {
        None => {
            object.insert(name.into(), Value::Null);
        }
        Some(Ok(text)) => {
            object.insert(name.into(), json!(text));
        }
        Some(Err(_)) => {
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(bytes.unwrap_or_default());
            object.insert(name.into(), Value::Null);
            object.insert(format!("{name}_b64"), json!(encoded));
        }
    }
}

/// `seglog failpoints`.
pub fn failpoints() -> Outcome {
    Outcome::Ok(json!({ "failpoints": seglog::fs::failpoint::ALL }))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};
    use seglog::fs::OPEN_FILES_MAX_DEFAULT;

    /// The configuration `seglog <args>` opens its log with.
    fn config_of(args: &[&str]) -> seglog::LogConfig {
        let cli = Cli::try_parse_from(args).unwrap();
        match cli.command {
            Command::Roll(log) | Command::Recover(log) => log.config(),
            Command::Dump(dump) => dump.config(),
            Command::Append(append) => append.log.config(),
            Command::Retain(retain) => retain.log.config(),
            Command::Compact(compact) => compact.log.config(),
            other => panic!("not a log command: {other:?}"),
        }
    }

    /// `dump` lists only the flags it uses, and takes the writable commands' flags
    /// without using them, naming each one given (its stderr warning).
    #[test]
    fn dump_lists_only_its_flags_and_names_the_write_flags_it_takes() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        let help = cli
            .find_subcommand_mut("dump")
            .expect("dump")
            .render_long_help()
            .to_string();
        for unused in [
            "--segment-bytes",
            "--compression",
            "--policy",
            "--writeback-bytes",
        ] {
            assert!(!help.contains(unused), "dump's help lists {unused}");
        }
        for used in ["--from", "--recovery-mode", "--max-open-files", "--check"] {
            assert!(help.contains(used), "dump's help lacks {used}");
        }
        let args = [
            "seglog",
            "dump",
            "d",
            "--segment-bytes",
            "9",
            "--policy",
            "kafka",
        ];
        let Command::Dump(dump) = Cli::try_parse_from(args).unwrap().command else {
            panic!("not dump");
        };
        assert_eq!(dump.writes_only.given(), ["--segment-bytes", "--policy"]);
        assert_eq!(
            dump.config().segment_bytes,
            seglog::LogConfig::default().segment_bytes
        );
    }

    #[test]
    fn max_open_files_reaches_the_log_config_of_every_log_command() {
        for command in ["dump", "recover", "roll"] {
            let given = config_of(&["seglog", command, "d", "--max-open-files", "8"]);
            assert_eq!(given.max_open_files, 8, "{command}");
            let default = config_of(&["seglog", command, "d"]);
            assert_eq!(default.max_open_files, OPEN_FILES_MAX_DEFAULT, "{command}");
        }
        let retain = [
            "seglog",
            "retain",
            "d",
            "--now",
            "0",
            "--max-open-files",
            "3",
        ];
        assert_eq!(config_of(&retain).max_open_files, 3);
        let compact = [
            "seglog",
            "compact",
            "d",
            "--now",
            "0",
            "--delete-retention-ms",
            "0",
            "--max-open-files",
            "5",
        ];
        assert_eq!(config_of(&compact).max_open_files, 5);
        let append = [
            "seglog",
            "append",
            "d",
            "--batch",
            "[]",
            "--max-open-files",
            "7",
        ];
        assert_eq!(config_of(&append).max_open_files, 7);
    }
}

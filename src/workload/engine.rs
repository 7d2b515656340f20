//! Applying workload operations to the real engine.

use crate::workload::{new_records, LogView, Op, OpOutcome, RecordView, SegmentView};
use seglog::format::ControlKind;
use seglog::log::Log;
use seglog::{Error, Result};

/// The protocol the engine runs: ours, or (test builds with the `test-variants`
/// feature only) a deliberately broken form, to prove the checks have teeth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Variant {
    #[default]
    Manifest,
    #[cfg(feature = "test-variants")]
    Install(seglog::testing::variants::InstallVariant),
    #[cfg(feature = "test-variants")]
    Retention(seglog::testing::variants::RetentionOrder),
    #[cfg(feature = "test-variants")]
    Roll(seglog::testing::variants::RollVariant),
    /// The new clean point made durable in the live directory before the install
    /// commits (model (c)'s `clean-point-first`).
    #[cfg(feature = "test-variants")]
    CleanPointFirst,
    /// The compacted directory installed without its index files and recovery
    /// point, the log reopened after it (model (b)'s `point-on-reopen`).
    #[cfg(feature = "test-variants")]
    PointOnReopen,
    /// The open after an operator dropped index files leaves the rebuilt ones of
    /// trusted segments unsynced and the current point unchanged (model (e)'s
    /// `sync-scanned-only-for-new-point`).
    #[cfg(feature = "test-variants")]
    SyncScannedOnlyForNewPoint,
    /// A concurrent cleaning's broken swap (`stale-tail-copy`, `unlocked-swap`).
    #[cfg(feature = "test-variants")]
    Clean(seglog::testing::variants::CleanVariant),
}

/// Every variant name, ours first.
pub const VARIANT_NAMES: &[&str] = &[
    "manifest",
    "two-rename",
    "no-dir-sync",
    "backup-before-manifest",
    "no-temp-entry-sync",
    "delete-first",
    "recovery-point-before-flush",
    "clean-point-first",
    "point-on-reopen",
    "sync-scanned-only-for-new-point",
    "stale-tail-copy",
    "unlocked-swap",
    "unbounded-map",
    "unflushed-swap",
];

impl Variant {
    /// Parses a variant name; the broken ones need the `test-variants` feature.
    pub fn parse(name: &str) -> std::result::Result<Variant, String> {
        #[cfg(feature = "test-variants")]
        {
            use seglog::testing::variants::InstallVariant;
            use seglog::testing::variants::RetentionOrder;
            match name {
                "manifest" => Ok(Variant::Manifest),
                "two-rename" => Ok(Variant::Install(InstallVariant::TwoRename)),
                "no-dir-sync" => Ok(Variant::Install(InstallVariant::NoDirSync)),
                "backup-before-manifest" => {
                    Ok(Variant::Install(InstallVariant::BackupBeforeManifest))
                }
                "no-temp-entry-sync" => Ok(Variant::Install(InstallVariant::NoTempEntrySync)),
                "delete-first" => Ok(Variant::Retention(RetentionOrder::DeleteFirst)),
                "recovery-point-before-flush" => Ok(Variant::Roll(
                    seglog::testing::variants::RollVariant::RecoveryPointBeforeFlush,
                )),
                "clean-point-first" => Ok(Variant::CleanPointFirst),
                "point-on-reopen" => Ok(Variant::PointOnReopen),
                "sync-scanned-only-for-new-point" => Ok(Variant::SyncScannedOnlyForNewPoint),
                "stale-tail-copy" => Ok(Variant::Clean(
                    seglog::testing::variants::CleanVariant::StaleTailCopy,
                )),
                "unlocked-swap" => Ok(Variant::Clean(
                    seglog::testing::variants::CleanVariant::UnlockedSwap,
                )),
                "unbounded-map" => Ok(Variant::Clean(
                    seglog::testing::variants::CleanVariant::UnboundedMap,
                )),
                "unflushed-swap" => Ok(Variant::Clean(
                    seglog::testing::variants::CleanVariant::UnflushedSwap,
                )),
                other => Err(format!(
                    "unknown variant {other:?}; known: {}",
                    VARIANT_NAMES.join(", ")
                )),
            }
        }
        #[cfg(not(feature = "test-variants"))]
        match name {
            "manifest" => Ok(Variant::Manifest),
            other if VARIANT_NAMES.contains(&other) => Err(format!(
                "variant {other:?} is a deliberately broken protocol that exists only in builds with \
                 `--features test-variants` (e.g. `cargo run --release --features test-variants -- verify --against-variant {other}`)"
            )),
            other => Err(format!("unknown variant {other:?}; known: {}", VARIANT_NAMES.join(", "))),
        }
    }
}

/// Applies `op` to the engine running our protocol.
pub fn apply(log: &mut Log, op: &Op) -> Result<OpOutcome> {
    apply_with(log, op, Variant::Manifest)
}

/// `Log::retain` under `variant` (a broken retention order with `test-variants`):
/// the deleted segments. The `retain` command runs this.
pub fn retain(
    log: &mut Log,
    now: i64,
    retention_ms: Option<i64>,
    retention_bytes: Option<i64>,
    variant: Variant,
) -> Result<Vec<i64>> {
    match variant {
        #[cfg(feature = "test-variants")]
        Variant::Retention(order) => {
            let plan = log.retention_plan(now, retention_ms, retention_bytes)?;
            if plan.delete.is_empty() {
                log.flush()?;
                return Ok(Vec::new());
            }
            log.flush()?;
            let result = seglog::testing::variants::delete_prefix_with(
                log.fs().as_ref(),
                log.dir(),
                &plan.delete,
                order,
            );
            Ok(seglog::testing::variants::reopen_after(log, result)?.deleted_segments)
        }
        _ => Ok(log
            .retain(now, retention_ms, retention_bytes)?
            .deleted_segments),
    }
}

/// `Log::compact` under `variant` (a broken install with `test-variants`). The
/// `compact` command runs this.
pub fn compact(
    log: &mut Log,
    now: i64,
    delete_retention_ms: i64,
    segment_bytes: Option<u64>,
    variant: Variant,
) -> Result<seglog::compaction::CompactionReport> {
    match variant {
        #[cfg(feature = "test-variants")]
        Variant::Install(install_variant) => {
            let knobs = log.config().clean_options();
            let Some(options) = seglog::testing::variants::clean_prepare(
                log,
                now,
                delete_retention_ms,
                segment_bytes,
                knobs,
            )?
            else {
                return Ok(seglog::compaction::CompactionReport::default());
            };
            let result = seglog::testing::variants::compact_dir_with(
                log.fs().as_ref(),
                log.dir(),
                options,
                install_variant,
            )
            .map(Option::unwrap_or_default);
            seglog::testing::variants::reopen_after(log, result)
        }
        #[cfg(feature = "test-variants")]
        Variant::CleanPointFirst => {
            let knobs = log.config().clean_options();
            seglog::testing::variants::clean_with_clean_point_first(
                log,
                now,
                delete_retention_ms,
                segment_bytes,
                knobs,
            )
        }
        #[cfg(feature = "test-variants")]
        Variant::PointOnReopen => {
            let knobs = log.config().clean_options();
            seglog::testing::variants::clean_with_point_on_reopen(
                log,
                now,
                delete_retention_ms,
                segment_bytes,
                knobs,
            )
        }
        _ => log.compact(now, delete_retention_ms, segment_bytes),
    }
}

fn clean(
    log: &mut Log,
    now: i64,
    delete_retention_ms: i64,
    segment_bytes: Option<u64>,
    knobs: seglog::compaction::CleanOptions,
    variant: Variant,
) -> Result<seglog::compaction::CompactionReport> {
    #[cfg(feature = "test-variants")]
    if let Variant::CleanPointFirst = variant {
        return seglog::testing::variants::clean_with_clean_point_first(
            log,
            now,
            delete_retention_ms,
            segment_bytes,
            knobs,
        );
    }
    #[cfg(feature = "test-variants")]
    if let Variant::PointOnReopen = variant {
        return seglog::testing::variants::clean_with_point_on_reopen(
            log,
            now,
            delete_retention_ms,
            segment_bytes,
            knobs,
        );
    }
    let _ = variant;
    log.clean(now, delete_retention_ms, segment_bytes, knobs)
}

/// The appends of an [`Op::CleanWithAppends`] between its build and its swap,
/// not flushed: the swap flushes them before its manifest names the tail's bytes
/// (`Log::clean_swap`), and a crash before that may keep any prefix of them.
fn clean_appends(log: &mut Log, records: u32, roll: bool, now: i64) -> Result<()> {
    for step in crate::workload::clean_with_appends_steps(records, roll, now) {
        match step {
            Some(record) => {
                log.append(&new_records(std::slice::from_ref(&record)))?;
            }
            None => {
                log.roll()?;
            }
        }
    }
    Ok(())
}

/// [`Op::CleanWithAppends`]: snapshot, build, the appends, swap (the swap in a
/// broken form under a `test-variants` variant). Also says whether the appends
/// ran during the build (`appends_at` within its calls) rather than after it.
pub fn clean_with_appends(
    log: &mut Log,
    now: i64,
    delete_retention_ms: i64,
    records: u32,
    roll: bool,
    appends_at: Option<u64>,
    variant: Variant,
) -> Result<(seglog::compaction::CompactionReport, bool)> {
    let knobs = log.config().clean_options();
    let snapshot = log.clean_snapshot(now, delete_retention_ms, None, knobs)?;
    #[cfg(feature = "test-variants")]
    let snapshot = match variant {
        Variant::Clean(seglog::testing::variants::CleanVariant::StaleTailCopy) => {
            snapshot.map(seglog::testing::variants::stale_tail_copy)
        }
        Variant::Clean(seglog::testing::variants::CleanVariant::UnboundedMap) => {
            snapshot.map(seglog::testing::variants::unbounded_map)
        }
        Variant::Clean(seglog::testing::variants::CleanVariant::UnflushedSwap) => {
            snapshot.map(seglog::testing::variants::unflushed_swap)
        }
        _ => snapshot,
    };
    let Some(snapshot) = snapshot else {
        clean_appends(log, records, roll, now)?;
        log.flush()?;
        return Ok((seglog::compaction::CompactionReport::default(), false));
    };
    // The broken `unlocked-swap` runs the appends inside its swap.
    #[cfg(feature = "test-variants")]
    let appends_at = match variant {
        Variant::Clean(seglog::testing::variants::CleanVariant::UnlockedSwap) => None,
        _ => appends_at,
    };
    let (build, appended, during) = match appends_at {
        None => (snapshot.build(), None, false),
        Some(at) => {
            let fs = std::sync::Arc::clone(log.fs());
            let (build, appended, during) = crate::workload::interleave::interleave(
                &fs,
                at,
                |gate| seglog::testing::build_through(snapshot, gate),
                || clean_appends(log, records, roll, now),
            );
            (build, Some(appended), during)
        }
    };
    let build = match build {
        Ok(build) => build,
        Err(Error::InvalidArgument(reason)) => return Err(Error::InvalidArgument(reason)),
        Err(e) => {
            // As `Log::clean`: poisoned; the next open's recovery removes the
            // half-built dir.
            seglog::testing::poison(log);
            return Err(e);
        }
    };
    #[cfg(feature = "test-variants")]
    if let Variant::Clean(seglog::testing::variants::CleanVariant::UnlockedSwap) = variant {
        return seglog::testing::variants::clean_swap_unlocked(log, build, |log| {
            clean_appends(log, records, roll, now)?;
            log.flush()
        })
        .map(|report| (report, false));
    }
    let _ = variant;
    match appended {
        Some(appended) => appended?,
        None => clean_appends(log, records, roll, now)?,
    }
    let swapped = log.clean_swap(build)?;
    if let Some(trash) = swapped.trash {
        let fs = std::sync::Arc::clone(log.fs());
        if let Err(e) = trash.remove(fs.as_ref()) {
            seglog::testing::poison(log);
            return Err(e);
        }
    }
    Ok((swapped.report, during))
}

/// Applies `op` to the engine running `variant`. Argument errors the spec also
/// rejects come back as `Ok(OpOutcome::Rejected)`; IO errors and corruption as `Err`.
pub fn apply_with(log: &mut Log, op: &Op, variant: Variant) -> Result<OpOutcome> {
    #[cfg(feature = "test-variants")]
    if let Variant::Roll(roll) = variant {
        // Set before every operation: a restart replaces the handle.
        seglog::testing::variants::set_roll_variant(log, roll);
    }
    let outcome = match op {
        Op::Append {
            records,
            codec: None,
            log_append_time: None,
        } => match log.append(&new_records(records)) {
            Ok(info) => OpOutcome::Appended {
                base_offset: info.base_offset,
                last_offset: info.last_offset,
            },
            Err(Error::InvalidArgument(_)) => OpOutcome::Rejected,
            Err(e) => return Err(e),
        },
        Op::Append {
            records,
            codec,
            log_append_time,
        } => match log.append_with(
            &new_records(records),
            codec.unwrap_or_default(),
            *log_append_time,
        ) {
            Ok(info) => OpOutcome::Appended {
                base_offset: info.base_offset,
                last_offset: info.last_offset,
            },
            Err(Error::InvalidArgument(_)) => OpOutcome::Rejected,
            Err(e) => return Err(e),
        },
        Op::AppendRaw { batches } => {
            match log.append_batches(&crate::workload::raw::encode_request(batches)) {
                Ok(info) => OpOutcome::Appended {
                    base_offset: info.base_offset,
                    last_offset: info.last_offset,
                },
                Err(Error::InvalidBatch { .. }) => OpOutcome::Rejected,
                Err(e) => return Err(e),
            }
        }
        Op::AppendTxn { records, producer } => {
            match log
                .append_transactional(seglog::Producer::new(*producer, 0), &new_records(records))
            {
                Ok(info) => OpOutcome::Appended {
                    base_offset: info.base_offset,
                    last_offset: info.last_offset,
                },
                Err(Error::InvalidArgument(_)) => OpOutcome::Rejected,
                Err(e) => return Err(e),
            }
        }
        Op::AppendControl {
            commit,
            ts,
            producer,
        } => {
            let kind = if *commit {
                ControlKind::Commit
            } else {
                ControlKind::Abort
            };
            let info = log.append_control(kind, *producer, 0, *ts)?;
            OpOutcome::Appended {
                base_offset: info.base_offset,
                last_offset: info.last_offset,
            }
        }
        Op::Roll => {
            log.roll()?;
            OpOutcome::Rolled
        }
        Op::Flush => {
            log.flush()?;
            OpOutcome::Flushed
        }
        Op::Close => {
            let report = log.restart()?;
            OpOutcome::Restarted {
                clean: report.clean_shutdown && report.scanned_segments == 0,
            }
        }
        Op::DropIndexes => {
            let report = drop_indexes(log, variant)?;
            OpOutcome::Restarted {
                clean: report.clean_shutdown && report.scanned_segments == 0,
            }
        }
        Op::Retain {
            now,
            retention_ms,
            retention_bytes,
        } => match retain(log, *now, *retention_ms, *retention_bytes, variant) {
            Ok(deleted_segments) => OpOutcome::Retained { deleted_segments },
            Err(Error::InvalidArgument(_)) => OpOutcome::Rejected,
            Err(e) => return Err(e),
        },
        Op::Compact {
            now,
            delete_retention_ms,
            segment_bytes,
        } => match compact(log, *now, *delete_retention_ms, *segment_bytes, variant) {
            Ok(r) => compacted(&r),
            Err(Error::InvalidArgument(_)) => OpOutcome::Rejected,
            Err(e) => return Err(e),
        },
        Op::CompactClosed {
            now,
            delete_retention_ms,
            segment_bytes,
        } => match compact_closed(log, *now, *delete_retention_ms, *segment_bytes) {
            Ok(r) => compacted(&r),
            Err(Error::InvalidArgument(_)) => OpOutcome::Rejected,
            Err(e) => return Err(e),
        },
        Op::Clean {
            now,
            delete_retention_ms,
            segment_bytes,
            dedupe_buffer_bytes,
            min_compaction_lag_ms,
            policy,
            producer_id_expiration_ms,
        } => {
            let knobs = seglog::compaction::CleanOptions {
                dedupe_buffer_bytes: *dedupe_buffer_bytes,
                min_compaction_lag_ms: *min_compaction_lag_ms,
                policy: *policy,
                producer_id_expiration_ms: *producer_id_expiration_ms,
            };
            match clean(
                log,
                *now,
                *delete_retention_ms,
                *segment_bytes,
                knobs,
                variant,
            ) {
                Ok(r) => compacted(&r),
                Err(Error::InvalidArgument(_)) => OpOutcome::Rejected,
                Err(e) => return Err(e),
            }
        }
        Op::CleanWithAppends {
            now,
            delete_retention_ms,
            records,
            roll,
            appends_at,
        } => match clean_with_appends(
            log,
            *now,
            *delete_retention_ms,
            *records,
            *roll,
            *appends_at,
            variant,
        ) {
            Ok((r, _)) => compacted(&r),
            Err(Error::InvalidArgument(_)) => OpOutcome::Rejected,
            Err(e) => return Err(e),
        },
        Op::Read { from } => match log.read(*from, usize::MAX) {
            Ok(records) => OpOutcome::Read {
                records: records.into_iter().map(RecordView::from).collect(),
            },
            Err(Error::OffsetOutOfRange { .. }) => OpOutcome::Rejected,
            Err(e) => return Err(e),
        },
    };
    Ok(outcome)
}

/// Closes `log` cleanly, runs `offline` on its closed directory (ending with an
/// open of it on the same file system) and adopts the reopened handle, with the
/// clock LogAppendTime stamps read, as `Log::restart` does. A failure after the
/// close poisons the closed handle, as `Log::restart` does with a failed open.
fn while_closed<T>(
    log: &mut Log,
    offline: impl FnOnce(
        std::sync::Arc<dyn seglog::fs::FileSystem>,
        &std::path::Path,
        seglog::log::LogConfig,
    ) -> Result<(Log, T)>,
) -> Result<T> {
    let fs = std::sync::Arc::clone(log.fs());
    let dir = log.dir().to_path_buf();
    let config = log.config().clone();
    let clock = std::sync::Arc::clone(log.clock());
    log.close_in_place()?;
    let (mut reopened, value) =
        offline(fs, &dir, config).inspect_err(|_| seglog::testing::poison(log))?;
    reopened.set_clock(clock);
    *log = reopened;
    Ok(value)
}

/// [`Op::DropIndexes`]: a clean close, the operator's `rm` of every closed segment's
/// index files (no fsync: an operator does not sync a directory), and an open on
/// the same file system.
fn drop_indexes(log: &mut Log, variant: Variant) -> Result<seglog::log::RecoveryReport> {
    let closed: Vec<i64> = log
        .segments()
        .iter()
        .filter(|s| s.closed)
        .map(|s| s.base_offset)
        .collect();
    while_closed(log, |fs, dir, config| {
        for base_offset in closed {
            let paths = seglog::segment::SegmentPaths::new(dir, base_offset);
            for path in [&paths.index, &paths.time_index] {
                fs.remove_file(path).map_err(|e| Error::io(path, e))?;
            }
        }
        let open = || Log::open_with(fs, dir, config);
        match variant {
            #[cfg(feature = "test-variants")]
            Variant::SyncScannedOnlyForNewPoint => {
                seglog::testing::variants::with_settle_only_for_new_point(open)
            }
            _ => open(),
        }
    })
}

/// [`Op::CompactClosed`]: a clean close, `compaction::compact_dir` on the closed
/// directory (the log's segment size unless the op names one), and an open on the
/// same file system; the next open recovers an install a failure cut short.
fn compact_closed(
    log: &mut Log,
    now: i64,
    delete_retention_ms: i64,
    segment_bytes: Option<u64>,
) -> Result<seglog::compaction::CompactionReport> {
    if delete_retention_ms < 0 {
        return Err(Error::InvalidArgument(
            "delete_retention_ms must be >= 0".into(),
        ));
    }
    let options = seglog::compaction::CompactOptions {
        now,
        delete_retention_ms,
        segment_bytes: segment_bytes.unwrap_or(log.config().segment_bytes),
    };
    while_closed(log, |fs, dir, config| {
        let report = seglog::compaction::compact_dir(fs.as_ref(), dir, options)?;
        let (reopened, _) = Log::open_with(fs, dir, config)?;
        Ok((reopened, report.unwrap_or_default()))
    })
}

impl From<seglog::log::ReadRecord> for RecordView {
    fn from(r: seglog::log::ReadRecord) -> RecordView {
        RecordView {
            offset: r.offset,
            key: r.key.map(|k| k.to_vec()),
            value: r.value.map(|v| v.to_vec()),
            ts: r.timestamp,
            control: r.control,
        }
    }
}

/// Everything observable about the engine's log.
pub fn view(log: &Log) -> Result<LogView> {
    let records = log
        .read(log.log_start_offset(), usize::MAX)?
        .into_iter()
        .map(RecordView::from)
        .collect();
    Ok(LogView {
        log_start_offset: log.log_start_offset(),
        next_offset: log.next_offset(),
        clean_point: log.clean_point()?,
        segments: log
            .segments()
            .into_iter()
            .map(|s| SegmentView {
                base_offset: s.base_offset,
                closed: s.closed,
                bytes: s.bytes,
                records: s.records,
                max_timestamp: s.max_timestamp,
            })
            .collect(),
        records,
    })
}

/// The outcome of a compaction that ran: its report's counts.
fn compacted(r: &seglog::compaction::CompactionReport) -> OpOutcome {
    OpOutcome::Compacted {
        records_before: r.records_before,
        records_after: r.records_after,
        segments_before: r.segments_before,
        segments_after: r.segments_after,
        bytes_before: r.bytes_before,
        bytes_after: r.bytes_after,
        keyless_dropped: r.keyless_dropped,
    }
}

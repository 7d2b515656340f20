//! The class `quiet_reopen`: opening costs what a crash left. Each point's log is
//! opened (recovering what the point left) and closed cleanly; then a writable
//! open and close of it, and a read-only open with a read of every record, are
//! traced through the file-system seam (`TraceFs`): neither may issue a write, an
//! fsync, a rename or a remove. An engine that rewrites the recovery point or the
//! marker at every open, or syncs what nothing changed, fails here.
//!
//! Every open and read of such a log with more segments than a small descriptor
//! budget keeps within it, beside the writer lock (`check_budget`, on the
//! simulated file system's count of what `StdFs` would hold).
//!
//! A log that holds no data is left out: its open makes the log's path durable,
//! since it cannot tell a creation an earlier open left unsynced
//! (`log::recovery::recovery_sync_path`).

use std::path::Path;
use std::sync::Arc;

use crate::sweep::{self, LOG_DIR};
use crate::workload::engine;
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::fs::{TraceCall, TraceFs};
use seglog::log::{Log, LogConfig};

use super::case::Outcome;
use super::points::Point;

/// Closes `point`'s log cleanly, then opens and closes it again and opens it
/// read-only, and judges the calls the second opens issued; `Err` is a violation.
/// `Ok(None)`: a log without data, left out.
pub fn judge(config: &LogConfig, point: &Point) -> Result<Option<Outcome>, String> {
    let fs = Arc::new(sweep::duplicate(&point.image));
    let (log, _) = Log::open_with(fs.clone(), LOG_DIR, config.clone())
        .map_err(|e| format!("the undamaged point does not open: {e}"))?;
    let segments = log.segments().len();
    let empty = log.next_offset() == log.log_start_offset() && segments == 1;
    log.close()
        .map_err(|e| format!("the clean close failed: {e}"))?;
    if empty {
        return Ok(None);
    }
    let traced = Arc::new(TraceFs::new(fs.clone()));
    let (log, _) = Log::open_with(traced.clone(), LOG_DIR, config.clone())
        .map_err(|e| format!("the reopen failed: {e}"))?;
    log.close()
        .map_err(|e| format!("the second clean close failed: {e}"))?;
    check_quiet(&traced, "a writable open and close", segments)?;
    let traced = Arc::new(TraceFs::new(fs.clone()));
    let (log, _) = Log::open_read_only(traced.clone(), LOG_DIR, config.clone())
        .map_err(|e| format!("the read-only open failed: {e}"))?;
    engine::view(&log).map_err(|e| format!("a read after the read-only open failed: {e}"))?;
    drop(log);
    check_quiet(
        &traced,
        "a read-only open and a read of every record",
        segments,
    )?;
    // And the directory is still what a clean close leaves: the next open trusts it.
    let (_, report) = Log::open_with(fs.clone() as Arc<dyn FileSystem>, LOG_DIR, config.clone())
        .map_err(|e| format!("the third open failed: {e}"))?;
    if !report.clean_shutdown || report.scanned_segments > 0 {
        return Err(format!(
            "after a quiet reopen the log no longer opens as cleanly closed: {report:?}"
        ));
    }
    if segments > OPEN_FILES_MAX {
        check_budget(config, &fs, segments)?;
    }
    Ok(Some(Outcome::Recovered))
}

/// The descriptor budget of [`check_budget`]: below the segment count of the logs
/// it checks, so the cache must close files to keep within it.
const OPEN_FILES_MAX: usize = 2;

/// A read-only open, and a writable open and close, of the cleanly closed log on
/// `fs`, each reading every record, keep within [`OPEN_FILES_MAX`] descriptors
/// beside the writer lock (the simulated file system counts what `StdFs` with that
/// budget would hold): the descriptors a log holds do not grow with its segments.
/// Nothing is written, so no handle is pinned by unsynced writes.
fn check_budget(config: &LogConfig, fs: &Arc<SimFs>, segments: usize) -> Result<(), String> {
    for writable in [false, true] {
        fs.count_descriptors(OPEN_FILES_MAX);
        let seam: Arc<dyn FileSystem> = fs.clone();
        let opened = if writable {
            Log::open_with(seam, LOG_DIR, config.clone())
        } else {
            Log::open_read_only(seam, LOG_DIR, config.clone())
        };
        let what = if writable {
            "a writable open, a read of every record and a close"
        } else {
            "a read-only open and a read of every record"
        };
        let log = opened
            .map_err(|e| format!("{what}: the open failed: {e}"))?
            .0;
        engine::view(&log).map_err(|e| format!("{what}: a read failed: {e}"))?;
        log.close()
            .map_err(|e| format!("{what}: the close failed: {e}"))?;
        let count = fs.descriptors().ok_or("the descriptor count stopped")?;
        if count.over_budget > 0 || count.peak_unsynced > 0 || count.peak_locks > 1 {
            return Err(format!(
                "{what} of a log of {segments} segments held {} descriptors at once \
                 ({} writer locks, {} with unsynced writes) under a budget of \
                 {OPEN_FILES_MAX}: {} past it",
                count.peak, count.peak_locks, count.peak_unsynced, count.over_budget
            ));
        }
    }
    Ok(())
}

/// No call but the writer lock's in `traced`.
fn check_quiet(traced: &TraceFs, what: &str, segments: usize) -> Result<(), String> {
    let calls: Vec<String> = traced
        .ops()
        .into_iter()
        .filter(|op| op.call != TraceCall::Lock)
        .map(|op| op.to_string())
        .collect();
    if calls.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{what} of a cleanly closed log of {segments} segments issued {} calls: {}",
        calls.len(),
        calls.join(", ")
    ))
}

/// Where the class's violations are filed.
pub fn file() -> &'static Path {
    Path::new(LOG_DIR)
}

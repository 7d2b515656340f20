//! Retention and compaction of an open log, which update the log from what they
//! deleted or installed ("no reopen after cleanup"), beside the same operation
//! followed by a full-scan open (`Log::open_checked`: every segment read and
//! checked), on the same log in
//! the same run. `seglog bench --only cleanup`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use seglog::error::{Error, Result};
use seglog::fs::StdFs;
use seglog::log::{Log, RecoveryReport};

use super::open::open_config;

/// How a cleanup is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleanup {
    /// `Log::compact` (install step 1 to 6, then the log adopts the new segments).
    Compact,
    /// `Log::retain` deleting the first closed segment.
    Retain,
}

/// Times `cleanup` on `log`; with `then_full_scan`, also a full-scan open of its
/// directory (what the reopen after the cleanup cost before), inside the time.
pub fn time_cleanup(log: &mut Log, cleanup: Cleanup, then_full_scan: bool) -> Result<Duration> {
    let start = super::Stopwatch::start();
    match cleanup {
        Cleanup::Compact => {
            let report = log.compact(i64::MAX / 2, 0, None)?;
            if report.segments_before == 0 {
                return Err(Error::InvalidArgument("nothing to compact".into()));
            }
        }
        Cleanup::Retain => {
            let segments = log.segments();
            let total: u64 = segments.iter().map(|s| s.bytes).sum();
            let keep = total - segments[0].bytes;
            let outcome = log.retain(0, None, Some(keep as i64))?;
            if outcome.deleted_segments.len() != 1 {
                return Err(Error::InvalidArgument(format!(
                    "retain deleted {:?}, expected one segment",
                    outcome.deleted_segments
                )));
            }
        }
    }
    if then_full_scan {
        let (scanned, _report) =
            Log::open_checked(Arc::new(StdFs::new()), log.dir(), open_config())?;
        drop(scanned);
    }
    Ok(start.stop())
}

/// The open of `dir` after the handle that cleaned it was dropped (a crash): what
/// it had to scan. After a compaction only the active segment.
pub fn open_after_crash(dir: &Path) -> Result<RecoveryReport> {
    let (log, report) = Log::open(dir, open_config())?;
    drop(log);
    Ok(report)
}

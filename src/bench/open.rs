//! Opening a log: after a clean close (the marker and the recovery point vouch for
//! every segment) and after a crash (only the active segment is scanned) beside the
//! full-scan open every open was before the recovery point (`Log::open_checked`),
//! on the same directory in the same run. `seglog bench --only open`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use seglog::error::{Error, Result};
use seglog::format::recovery_point::CLEAN_SHUTDOWN_NAME;
use seglog::fs::{FileSystem, StdFs};
use seglog::log::{Log, LogConfig};

use super::LogFixture;

/// Segment size of the open fixture: many segments, as a long-lived partition has.
pub const OPEN_SEGMENT_BYTES: u64 = 16 << 20;

/// How an open is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenKind {
    /// After a clean close: reads no segment data.
    Clean,
    /// After a crash (the marker is gone): scans the active segment only.
    AfterCrash,
    /// Every segment read and checked (the baseline).
    FullScan,
}

/// The config the fixture is written and opened with.
pub fn open_config() -> LogConfig {
    LogConfig {
        segment_bytes: OPEN_SEGMENT_BYTES,
        ..LogConfig::default()
    }
}

/// Writes the fixture's batches into `dir` in segments of [`OPEN_SEGMENT_BYTES`] and
/// closes the log cleanly.
pub fn write_open_fixture(dir: &Path, fixture: &LogFixture) -> Result<u64> {
    let (mut log, _) = Log::open(dir, open_config())?;
    for batch in &fixture.batches {
        log.append(batch)?;
    }
    let segments = log.segments().len() as u64;
    log.close()?;
    Ok(segments)
}

/// Times one open of `dir` (then closes the log cleanly again, untimed, so that
/// every run starts from the same directory). Returns the time and the next offset
/// (the proof the open found the whole log).
pub fn time_open(dir: &Path, kind: OpenKind) -> Result<(Duration, i64)> {
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs::new());
    if kind == OpenKind::AfterCrash {
        let marker = dir.join(CLEAN_SHUTDOWN_NAME);
        fs.remove_file(&marker).map_err(|e| Error::io(&marker, e))?;
    }
    let start = super::Stopwatch::start();
    let (log, report) = match kind {
        OpenKind::FullScan => Log::open_checked(fs, dir, open_config())?,
        _ => Log::open_with(fs, dir, open_config())?,
    };
    let took = start.stop();
    let expected_scans = match kind {
        OpenKind::Clean => 0,
        OpenKind::AfterCrash => 1,
        OpenKind::FullScan => report.segments,
    };
    if report.scanned_segments != expected_scans {
        return Err(Error::InvalidArgument(format!(
            "{kind:?} open scanned {} segments, expected {expected_scans}",
            report.scanned_segments
        )));
    }
    let next = log.next_offset();
    log.close()?;
    Ok((took, next))
}

/// Writes the first `1 / divisor` of the fixture's batches into `dir` as
/// [`write_open_fixture`] does: the same segment size, a smaller log. Returns the
/// next offset.
pub fn write_open_fixture_part(dir: &Path, fixture: &LogFixture, divisor: usize) -> Result<i64> {
    let (mut log, _) = Log::open(dir, open_config())?;
    for batch in fixture
        .batches
        .iter()
        .take(fixture.batches.len() / divisor.max(1))
    {
        log.append(batch)?;
    }
    let next = log.next_offset();
    log.close()?;
    Ok(next)
}

/// Times what `seglog dump --from <next offset>` does with the log: a read-only
/// open (trusting the recovery point and the marker, or `checked`: every segment
/// read) and a read from the next offset. Returns the time and the next offset.
pub fn time_dump_tail(dir: &Path, checked: bool) -> Result<(Duration, i64)> {
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs::new());
    let start = super::Stopwatch::start();
    let (log, report) = if checked {
        Log::open_read_only_checked(fs, dir, open_config())?
    } else {
        Log::open_read_only(fs, dir, open_config())?
    };
    let next = log.next_offset();
    let tail = log.read(next, 1 << 20)?;
    let took = start.stop();
    let expected_scans = if checked { report.segments } else { 0 };
    if report.scanned_segments != expected_scans || !tail.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "the read-only open scanned {} segments (expected {expected_scans}) and read {} records past the end",
            report.scanned_segments,
            tail.len()
        )));
    }
    Ok((took, next))
}

//! Reading a log of many segments within a handle budget: a read-only open and a
//! borrowed read of every record of a log of [`SEGMENTS`] segments through a
//! [`StdFs`] that keeps at most [`BUDGET`] handles, beside the same through one
//! that keeps every handle it opens. `seglog bench --only open-files`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use seglog::error::{Error, Result};
use seglog::fs::{FileSystem, StdFs};
use seglog::log::{Log, LogConfig};

use super::LogFixture;

/// Segments of the fixture.
pub const SEGMENTS: u64 = 1_000;

/// The handle budget of the measured side.
pub const BUDGET: usize = 64;

/// The config the fixture is written and read with: segments sized so that the
/// fixture fills about [`SEGMENTS`] of them.
pub fn config(fixture: &LogFixture) -> LogConfig {
    LogConfig {
        segment_bytes: (fixture.bytes.len() as u64 / SEGMENTS).max(1),
        ..LogConfig::default()
    }
}

/// Writes the fixture into `dir` and closes the log cleanly; its segment count.
pub fn write_fixture(dir: &Path, fixture: &LogFixture) -> Result<usize> {
    let (mut log, _) = Log::open(dir, config(fixture))?;
    for batch in &fixture.batches {
        log.append(batch)?;
    }
    let segments = log.segments().len();
    log.close()?;
    Ok(segments)
}

/// Times a read-only open of `dir` and a read of every record, with at most
/// `budget` handles (`None`: no budget). Returns the time and the records read.
pub fn time_read(
    dir: &Path,
    fixture: &LogFixture,
    budget: Option<usize>,
) -> Result<(Duration, usize)> {
    let fs: Arc<dyn FileSystem> =
        Arc::new(StdFs::with_open_files_max(budget.unwrap_or(usize::MAX)));
    let start = super::Stopwatch::start();
    let (log, _) = Log::open_read_only(fs, dir, config(fixture))?;
    let mut records = 0usize;
    let mut from = log.log_start_offset();
    while from < log.next_offset() {
        let mut last = None;
        log.read_each(from, 1 << 20, |record| {
            records += 1;
            last = Some(record.offset);
        })?;
        let Some(last) = last else {
            return Err(Error::InvalidArgument(format!(
                "a read from {from} returned nothing below {}",
                log.next_offset()
            )));
        };
        from = last + 1;
    }
    Ok((start.stop(), records))
}

//! Raw append: the log fixture's batches as a producer encodes them
//! (base offset 0), appended with [`Log::append_batches`], one produce request per
//! batch: `seglog bench --only append-raw`.

use std::path::Path;
use std::time::{Duration, Instant};

use seglog::error::Result;
use seglog::format::RecordBatch;
use seglog::log::{Log, LogConfig};

use super::{LogFixture, Stopwatch};

/// The fixture's batches as a producer sends them: each encoded alone at base
/// offset 0, CreateTime, uncompressed (byte for byte what the log stores, but for
/// the base offset).
#[derive(Debug, Clone)]
pub struct ProducedFixture {
    /// One produce request per batch.
    pub requests: Vec<Vec<u8>>,
}

impl ProducedFixture {
    /// The producer encoding of every batch of `fixture`.
    pub fn new(fixture: &LogFixture) -> Self {
        let requests = fixture
            .batches
            .iter()
            .map(|batch| RecordBatch::build(0, batch).encode())
            .collect();
        ProducedFixture { requests }
    }

    /// Bytes of all requests (the same as the fixture's log bytes).
    pub fn bytes(&self) -> usize {
        self.requests.iter().map(Vec::len).sum()
    }
}

fn config() -> LogConfig {
    LogConfig {
        max_batch_bytes: seglog::format::batch::BATCH_BYTES_MAX as u64,
        ..LogConfig::default()
    }
}

/// Opens a log in `dir`, appends every request with [`Log::append_batches`],
/// closes it (flush included); the time.
pub fn append_raw_log(dir: &Path, produced: &ProducedFixture) -> Result<Duration> {
    let start = Instant::now();
    let (mut log, _) = Log::open(dir, config())?;
    for request in &produced.requests {
        log.append_batches(request)?;
    }
    log.close()?;
    Ok(start.elapsed())
}

/// The measure: every request appended with [`Log::append_batches`], then
/// [`Log::flush`] (one fsync of the `.log`), timed; the open before and the close
/// after are not (the baseline's counterpart is `File::create` .. `sync_all`).
pub fn append_raw_flush(dir: &Path, produced: &ProducedFixture) -> Result<Duration> {
    let (mut log, _) = Log::open(dir, config())?;
    let start = Stopwatch::start();
    for request in &produced.requests {
        log.append_batches(request)?;
    }
    log.flush()?;
    let took = start.stop();
    log.close()?;
    Ok(took)
}

/// The baseline of [`append_raw_flush`]: the fixture's bytes through `BufWriter`
/// and one fsync into a new file in `dir` ([`LogFixture::write_baseline`]), timed
/// with a [`Stopwatch`] so that the row carries both sides' CPU time.
pub fn baseline_write_fsync(dir: &Path, fixture: &LogFixture) -> Result<Duration> {
    let path = dir.join("baseline.log");
    let start = Stopwatch::start();
    crate::bench::baseline::write_buffered(&path, &fixture.bytes, fixture.batch_bytes())
        .map_err(|e| seglog::error::Error::io(&path, e))?;
    Ok(start.stop())
}

/// [`baseline_write_fsync`] starting the file's write-back every
/// [`LogConfig::writeback_bytes`] (the log's default), as the log does: the
/// baseline that leaves the log's own work, not the overlap of the writes with
/// the disk.
pub fn baseline_write_writeback_fsync(dir: &Path, fixture: &LogFixture) -> Result<Duration> {
    let path = dir.join("baseline.log");
    let start = Stopwatch::start();
    crate::bench::baseline::write_buffered_writeback(
        &path,
        &fixture.bytes,
        fixture.batch_bytes(),
        LogConfig::default().writeback_bytes,
    )
    .map_err(|e| seglog::error::Error::io(&path, e))?;
    Ok(start.stop())
}

/// [`append_raw_flush`] with the structured [`Log::append`] of the same records.
pub fn append_structured_flush(dir: &Path, fixture: &LogFixture) -> Result<Duration> {
    let (mut log, _) = Log::open(dir, config())?;
    let start = Stopwatch::start();
    for batch in &fixture.batches {
        log.append(batch)?;
    }
    log.flush()?;
    let took = start.stop();
    log.close()?;
    Ok(took)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_append_of_the_fixture_stores_the_structured_bytes() {
        let fixture = LogFixture::new(1_050, 100);
        let produced = ProducedFixture::new(&fixture);
        assert_eq!(produced.bytes(), fixture.bytes.len());
        let tmp = tempfile::tempdir().unwrap();
        let segment = "00000000000000000000.log";
        append_raw_log(tmp.path(), &produced).unwrap();
        assert_eq!(
            std::fs::read(tmp.path().join(segment)).unwrap(),
            fixture.bytes
        );
        for (i, run) in [append_raw_flush, |dir: &Path, p: &ProducedFixture| {
            append_structured_flush(dir, &LogFixture::new(p.requests.len() * 100 - 50, 100))
        }]
        .iter()
        .enumerate()
        {
            let dir = tmp.path().join(format!("run-{i}"));
            run(&dir, &produced).unwrap();
            assert_eq!(std::fs::read(dir.join(segment)).unwrap(), fixture.bytes);
        }
    }
}

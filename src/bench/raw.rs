//! Raw append (issue 16): the log fixture's batches as a producer encodes them
//! (base offset 0), appended with [`Log::append_batches`], one produce request per
//! batch: `seglog bench --only append-raw`.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::format::RecordBatch;
use crate::log::{Log, LogConfig};

use super::LogFixture;

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

/// Opens a log in `dir`, appends every request with [`Log::append_batches`],
/// closes it (flush included); the time.
pub fn append_raw_log(dir: &Path, produced: &ProducedFixture) -> Result<Duration> {
    let config = LogConfig {
        max_batch_bytes: crate::format::batch::BATCH_BYTES_MAX as u64,
        ..LogConfig::default()
    };
    let start = Instant::now();
    let (mut log, _) = Log::open(dir, config)?;
    for request in &produced.requests {
        log.append_batches(request)?;
    }
    log.close()?;
    Ok(start.elapsed())
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
        append_raw_log(tmp.path(), &produced).unwrap();
        let stored = std::fs::read(tmp.path().join("00000000000000000000.log")).unwrap();
        assert_eq!(stored, fixture.bytes);
    }
}

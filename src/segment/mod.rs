//! One segment: a `.log` file of record batches and its two sparse indexes.
//!
//! * [`index`]: Kafka's rule for index entries, and lookups.
//! * [`reader`]: a buffered, bounds-checked walk over the batches of a `.log`.
//! * [`view`]: a segment's bytes as one shared buffer (a read-only mapping), walked
//!   batch by batch; what reads hand out slices of.
//! * [`scan`]: the full validation of a `.log` on open (every batch decoded).
//! * [`validate`]: Kafka's rules for a valid `.index` / `.timeindex`.
//! * `close`: Kafka's close-time treatment of the active segment.

mod close;
pub mod index;
pub mod reader;
pub mod scan;
pub mod validate;
pub mod view;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::format::batch::NO_TIMESTAMP;
use crate::format::filename;

pub use index::{IndexAppend, SegmentIndex};

/// The public view of a segment (`Log::segments`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentInfo {
    pub base_offset: i64,
    pub closed: bool,
    pub bytes: u64,
    pub records: u64,
    pub max_timestamp: i64,
}

/// The three file paths of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentPaths {
    pub log: PathBuf,
    pub index: PathBuf,
    pub time_index: PathBuf,
}

impl SegmentPaths {
    pub fn new(dir: &Path, base_offset: i64) -> Self {
        SegmentPaths {
            log: dir.join(filename::build(base_offset, filename::LOG_SUFFIX)),
            index: dir.join(filename::build(base_offset, filename::INDEX_SUFFIX)),
            time_index: dir.join(filename::build(base_offset, filename::TIME_INDEX_SUFFIX)),
        }
    }
}

/// In-memory metadata of one segment, kept in step with its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub base_offset: i64,
    pub paths: SegmentPaths,
    /// Length of the `.log` file.
    pub bytes: u64,
    /// Records stored (control records included).
    pub records: u64,
    /// Max of the batches' maxTimestamp, -1 when empty.
    pub max_timestamp: i64,
    /// Last offset + 1 of the last batch, or the base offset when empty.
    pub next_offset: i64,
    pub batches: u64,
    pub index: SegmentIndex,
    /// Encoded `.index` entries not yet appended to the file.
    pub pending_index: Vec<u8>,
    /// Encoded `.timeindex` entries not yet appended to the file.
    pub pending_time_index: Vec<u8>,
}

/// The facts about one batch the segment metadata needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchFacts {
    pub base_offset: i64,
    pub last_offset: i64,
    pub size_bytes: u64,
    pub records: u64,
    pub max_timestamp: i64,
}

impl Segment {
    /// An empty segment at `base_offset` (files not touched).
    pub fn empty(dir: &Path, base_offset: i64, index_interval_bytes: u64) -> Self {
        Segment {
            base_offset,
            paths: SegmentPaths::new(dir, base_offset),
            bytes: 0,
            records: 0,
            max_timestamp: NO_TIMESTAMP,
            next_offset: base_offset,
            batches: 0,
            index: SegmentIndex::new(base_offset, index_interval_bytes),
            pending_index: Vec::new(),
            pending_time_index: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Records a batch written at the end of the `.log`; returns the index entries
    /// to append to the index files.
    pub fn on_batch(&mut self, batch: &BatchFacts) -> IndexAppend {
        assert!(batch.base_offset >= self.next_offset);
        assert!(batch.last_offset >= batch.base_offset);
        let added = self.index.on_batch(
            self.bytes,
            batch.size_bytes,
            batch.last_offset,
            batch.max_timestamp,
        );
        self.bytes += batch.size_bytes;
        self.records += batch.records;
        self.max_timestamp = self.max_timestamp.max(batch.max_timestamp);
        self.next_offset = batch.last_offset + 1;
        self.batches += 1;
        added
    }

    pub fn info(&self, closed: bool) -> SegmentInfo {
        SegmentInfo {
            base_offset: self.base_offset,
            closed,
            bytes: self.bytes,
            records: self.records,
            max_timestamp: self.max_timestamp,
        }
    }
}

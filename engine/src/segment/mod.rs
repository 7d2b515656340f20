//! One segment: a `.log` file of record batches and its two sparse indexes.
//!
//! * `files`: a directory's segment files by name: listing, paths, metadata.
//! * `index`: Kafka's rule for index entries, and lookups.
//! * `reader`: a buffered, bounds-checked walk over the batches of a `.log`.
//! * `view`: a segment's bytes as one shared buffer (a read-only mapping), walked
//!   batch by batch; what reads hand out slices of.
//! * `scan`: the full validation of a `.log` on open (every batch decoded).
//! * `salvage`: the CRC-valid batches after an invalid tail's first byte.
//! * `validate`: Kafka's rules for a valid `.index` / `.timeindex`.
//! * `vouched`: the indexes of a segment opened from its summary, read at the
//!   first lookup that needs them.
//! * `close`: Kafka's close-time treatment of the active segment.
//! * `tail`: the end of a trusted active segment, read from its data (the batch
//!   headers past its offset index's last entry), as Kafka's loader reads it.

// Every number a segment holds comes from disk: no unchecked arithmetic.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

mod close;
pub(crate) mod files;
pub(crate) mod index;
pub(crate) mod reader;
pub(crate) mod salvage;
pub(crate) mod scan;
pub(crate) mod tail;
pub(crate) mod validate;
pub(crate) mod view;
pub(crate) mod vouched;

use std::path::{Path, PathBuf};

#[cfg(feature = "serde")]
use serde::Serialize;

use crate::format::batch::NO_TIMESTAMP;
use crate::format::filename;
use crate::format::index::{encode_offset_entries, encode_time_entries};
use crate::format::recovery_point::SegmentSummary;

pub use files::{list_segments, segment_path, SegmentMeta};
pub use index::{IndexAppend, SegmentIndex};
pub use reader::BatchReader;
pub use salvage::ValidAfter;
pub use validate::{index_bytes_max, IndexRule, KAFKA_INDEX_BYTES};
pub use vouched::IndexCell;

/// The public view of a segment (`Log::segments`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct SegmentInfo {
    /// The segment's base offset (its file names).
    pub base_offset: i64,
    /// False for the active segment (the one appends go to).
    pub closed: bool,
    /// Length of its `.log` file.
    pub bytes: u64,
    /// Records stored (control records included).
    pub records: u64,
    /// The largest record timestamp in it, -1 when empty.
    pub max_timestamp: i64,
}

/// The three file paths of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentPaths {
    /// `<base offset>.log`.
    pub log: PathBuf,
    /// `<base offset>.index`.
    pub index: PathBuf,
    /// `<base offset>.timeindex`.
    pub time_index: PathBuf,
}

impl SegmentPaths {
    /// The three paths of the segment at `base_offset` in `dir`.
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
    /// The segment's base offset (its file names).
    pub base_offset: i64,
    /// Its files.
    pub paths: SegmentPaths,
    /// Length of the `.log` file.
    pub bytes: u64,
    /// Records stored (control records included).
    pub records: u64,
    /// Max of the batches' maxTimestamp, -1 when empty.
    pub max_timestamp: i64,
    /// Last offset + 1 of the last batch, or the base offset when empty.
    pub next_offset: i64,
    /// Batches stored.
    pub batches: u64,
    /// Its sparse indexes, as they are or will be on disk (in memory, or vouched
    /// for by a summary and read at the first lookup).
    pub index: IndexCell,
    /// Encoded `.index` entries not yet appended to the file.
    pub pending_index: Vec<u8>,
    /// Encoded `.timeindex` entries not yet appended to the file.
    pub pending_time_index: Vec<u8>,
}

/// The facts about one batch the segment metadata needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchFacts {
    /// The batch's first offset.
    pub base_offset: i64,
    /// The batch's last offset.
    pub last_offset: i64,
    /// Its encoded length.
    pub size_bytes: u64,
    /// Its record count.
    pub records: u64,
    /// Its max timestamp.
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
            index: IndexCell::loaded(SegmentIndex::new(base_offset, index_interval_bytes)),
            pending_index: Vec::new(),
            pending_time_index: Vec::new(),
        }
    }

    /// True while the `.log` holds no byte.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Records a batch written at the end of the `.log`; returns the index entries
    /// to append to the index files.
    pub fn on_batch(&mut self, batch: &BatchFacts) -> IndexAppend {
        assert!(batch.base_offset >= self.next_offset);
        assert!(batch.last_offset >= batch.base_offset);
        let added = self.index.get_mut().on_batch(
            self.bytes,
            batch.size_bytes,
            batch.last_offset,
            batch.max_timestamp,
        );
        self.bytes = self.bytes.saturating_add(batch.size_bytes);
        self.records = self.records.saturating_add(batch.records);
        self.max_timestamp = self.max_timestamp.max(batch.max_timestamp);
        self.next_offset = batch
            .last_offset
            .checked_add(1)
            .expect("decode_header and the append keep a batch's next offset an i64");
        self.batches = self.batches.saturating_add(1);
        added
    }

    /// What the recovery point and the clean-shutdown marker record of this segment.
    /// Only meaningful once the pending index entries are written.
    pub fn summary(&self) -> SegmentSummary {
        let index = match (self.index.if_loaded(), self.index.unloaded_summary()) {
            (Some(index), _) => index,
            (None, Some(summary)) => return *summary,
            (None, None) => unreachable!("an index not in memory is vouched for"),
        };
        SegmentSummary {
            base_offset: self.base_offset,
            bytes: self.bytes,
            next_offset: self.next_offset,
            records: self.records,
            batches: self.batches,
            max_timestamp: self.max_timestamp,
            offset_of_max_timestamp: index.offset_of_max_timestamp(),
            offset_index_entries: u32::try_from(index.offset_entries().len())
                .expect("index entries are 32-bit addressable"),
            time_index_entries: u32::try_from(index.time_entries().len())
                .expect("index entries are 32-bit addressable"),
            offset_index_crc: crate::format::crc::crc32c(&encode_offset_entries(
                index.offset_entries(),
            )),
            time_index_crc: crate::format::crc::crc32c(&encode_time_entries(index.time_entries())),
        }
    }

    /// A closed segment opened from its summary alone: its index files are read at
    /// the first lookup (`vouched`). `upper`: the next segment's base offset.
    pub fn vouched(
        dir: &Path,
        summary: &SegmentSummary,
        upper: Option<i64>,
        index_interval_bytes: u64,
    ) -> Self {
        let index = IndexCell::vouched(*summary, upper, index_interval_bytes);
        Self::summarized(dir, summary, index)
    }

    /// Its indexes, read from its files at the first call if a summary vouched for
    /// them (`vouched`).
    pub fn index(&self, fs: &dyn crate::fs::FileSystem) -> crate::error::Result<&SegmentIndex> {
        self.index.get(fs, &self.paths)
    }

    /// A segment opened from its summary and its index files' entries, without
    /// reading its `.log` (read and checked by `vouched::read`).
    pub fn restore(dir: &Path, summary: &SegmentSummary, index: SegmentIndex) -> Self {
        Self::summarized(dir, summary, IndexCell::loaded(index))
    }

    /// The segment `summary` describes, with `index`.
    fn summarized(dir: &Path, summary: &SegmentSummary, index: IndexCell) -> Self {
        Segment {
            base_offset: summary.base_offset,
            paths: SegmentPaths::new(dir, summary.base_offset),
            bytes: summary.bytes,
            records: summary.records,
            max_timestamp: summary.max_timestamp,
            next_offset: summary.next_offset,
            batches: summary.batches,
            index,
            pending_index: Vec::new(),
            pending_time_index: Vec::new(),
        }
    }

    /// The public view of this segment.
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

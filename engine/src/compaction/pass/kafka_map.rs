//! The kafka pass's read and map steps (docs/design.md section 1, "The kafka
//! pass"), one walk of every record through the one reader ([`crate::compaction::read`]): a
//! second thread checks every batch of the closed segments exactly as a full
//! decode would (records walked, a compressed one inflated once and kept), counts
//! its keyed, keyless and tombstone records, and hands over the keys of the
//! batches the map covers; this thread inserts their digests into the offset map
//! as they come, under the key budget (a fixed table of `dedupe_buffer_bytes / 24`
//! slots, so its memory stays within it; the rules of
//! [`crate::compaction::rules::kafka::KafkaMap::build`]), as the `seed` policy's scans do.
//!
//! Errors are the reference pass's, in its order: every closed segment's batches
//! are split and CRC-checked first ([`split_mapped`]); if that, the active
//! segment's check or the transaction facts fail, [`first_error`] repeats the
//! reference's reads one by one to find its first error. Otherwise the only errors
//! left are record-level ones, met by the walk in log order, and a map error (key
//! budget) counts only if every read succeeded.

use std::ops::{ControlFlow, Range};
use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::format::batch::{ATTR_TRANSACTIONAL, NO_TIMESTAMP};
use crate::format::batch_view::{BatchView, RecordViews};
use crate::format::filename::LOG_SUFFIX;
use crate::fs::FileSystem;
use crate::segment::BatchFacts;

use crate::compaction::map::{Digest, Digester, Fit, Latest, Map};
use crate::compaction::read::{self, Event, Input, Plan, Rec};
use crate::compaction::view;
use crate::compaction::walker::Walker;
use crate::segment::files::{map_segments, segment_path};

/// One checked batch of a closed segment.
pub(super) struct Batch {
    /// Its bytes in the segment.
    pub range: Range<usize>,
    pub base_offset: i64,
    pub last_offset: i64,
    pub records: usize,
    pub max_timestamp: i64,
    pub attributes: i16,
    pub control: bool,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// Attribute bit 4.
    pub transactional: bool,
    /// Data of an aborted transaction ([`crate::compaction::rules::txn::KafkaTxn::aborted`]):
    /// mapped hollow (no key, the map's last offset moves) and removed where cleaned.
    pub aborted: bool,
    /// Its records with a key, without one, and with a null value (data batches).
    pub keyed: u32,
    pub keyless: u32,
    pub tombstones: u32,
    /// The ordinal of its first keyed record if the map read it.
    pub first_ordinal: Option<i64>,
    /// A compressed batch's records, inflated once by the read.
    pub inflated: Option<Vec<u8>>,
}

/// A closed segment: its mapped bytes and its checked batches.
pub(super) struct Source {
    pub base: i64,
    pub path: PathBuf,
    pub bytes: bytes::Bytes,
    pub batches: Vec<Batch>,
}

impl Source {
    /// The batch's header fields and its records (checked by the read).
    pub fn records<'a>(&'a self, batch: &'a Batch) -> Result<(BatchView<'a>, RecordViews<'a>)> {
        let (view, _) = BatchView::decode_crc_checked(&self.bytes[batch.range.clone()])
            .map_err(|e| e.at(&self.path, batch.range.start as u64))?;
        let records = match &batch.inflated {
            None => view.records(),
            Some(inflated) => view.records_in(inflated),
        };
        Ok((view, records))
    }

    pub fn facts(&self) -> Vec<BatchFacts> {
        self.batches
            .iter()
            .map(|b| BatchFacts {
                base_offset: b.base_offset,
                last_offset: b.last_offset,
                size_bytes: b.range.len() as u64,
                records: b.records as u64,
                max_timestamp: b.max_timestamp,
            })
            .collect()
    }
}

/// A closed segment split into CRC-checked batches, its records not yet read.
pub(super) struct Split {
    pub base: i64,
    pub path: PathBuf,
    pub bytes: bytes::Bytes,
    pub batches: Vec<SplitBatch>,
}

/// What the split reads of one batch: its header's fields.
#[derive(Debug, Clone, Copy)]
pub(super) struct SplitBatch {
    pub position: usize,
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub size: usize,
}

impl Split {
    /// Every batch's position and bytes.
    pub fn batch_bytes(&self) -> Vec<(usize, &[u8])> {
        self.batches
            .iter()
            .map(|b| (b.position, &self.bytes[b.position..b.position + b.size]))
            .collect()
    }

    pub fn next_offset(&self) -> i64 {
        self.batches.last().map_or(self.base, |b| b.last_offset + 1)
    }

    pub fn max_timestamp(&self) -> i64 {
        self.batches
            .iter()
            .map(|b| b.max_timestamp)
            .max()
            .unwrap_or(NO_TIMESTAMP)
    }
}

/// Maps every closed segment (`bases`): (base, path, bytes), for [`split_mapped`].
pub(super) fn map_sources(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
) -> Result<Vec<(i64, PathBuf, Bytes)>> {
    Ok(sources(dir, bases, map_segments(fs, dir, bases)?))
}

/// The closed segments `bases` as the build mapped them (`bytes`, one each):
/// (base, path, bytes), for [`split_mapped`].
pub(super) fn sources(dir: &Path, bases: &[i64], bytes: Vec<Bytes>) -> Vec<(i64, PathBuf, Bytes)> {
    assert_eq!(bases.len(), bytes.len());
    bases
        .iter()
        .zip(bytes)
        .map(|(&base, bytes)| (base, segment_path(dir, base, LOG_SUFFIX), bytes))
        .collect()
}

/// Splits mapped segments ([`map_sources`], [`sources`]) into CRC-checked batches
/// ([`view::batches`], the reference's first check of each segment).
pub(super) fn split_mapped(mapped: Vec<(i64, PathBuf, Bytes)>) -> Result<Vec<Split>> {
    mapped
        .into_iter()
        .map(|(base, path, bytes)| {
            let batches = view::batches(&path, base, &bytes)?
                .iter()
                .map(|b| SplitBatch {
                    position: b.position as usize,
                    base_offset: b.header.base_offset,
                    last_offset: b.last_offset(),
                    max_timestamp: b.header.max_timestamp,
                    size: b.bytes.len(),
                })
                .collect();
            Ok(Split {
                base,
                path,
                bytes,
                batches,
            })
        })
        .collect()
}

/// The reference's reads one by one (every closed segment in full, then the
/// active segment, then the transaction facts): its first error, once a faster
/// check has failed. `Ok` only if none fails (the faster check's failure was not
/// in the bytes: then the caller reports that).
pub(super) fn first_error(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    active_len: Option<u64>,
) -> Result<()> {
    let (&active_base, closed) = bases.split_last().expect("a log has a segment");
    let mut walker = Walker::default();
    for base in closed {
        // Each segment split and walked before the next is touched.
        let split = split_mapped(map_sources(fs, dir, std::slice::from_ref(base))?)?.remove(0);
        for batch in &split.batches {
            let bytes = &split.bytes[batch.position..];
            walker.each_at(&split.path, bytes, batch.position as u64, |_| {})?;
        }
    }
    crate::compaction::source::read_active(fs, dir, active_base, active_len)?;
    crate::compaction::headers::kafka_txn(fs, dir, bases)?;
    Ok(())
}

/// The map step's result: the one map ([`crate::compaction::map`]) with record ordinals as
/// positions: only "superseded?" by ordinal when every cleaned batch was mapped
/// (a pass from the log start), lookups of keys too when batches below the clean
/// point are cleaned again.
pub(super) struct PassMap {
    pub latest: Latest,
    /// Distinct keys (digests) mapped.
    pub keys: usize,
    pub map_bytes: usize,
    pub map_bytes_peak: usize,
    /// The last offset of the last batch read (Kafka's `OffsetMap.latestOffset`).
    pub latest_offset: Option<i64>,
    /// The pass's clean point.
    pub clean_point: i64,
}

impl PassMap {
    /// Whether the keyed record with ordinal `ordinal` has a later record of its key.
    pub fn is_superseded(&self, ordinal: i64) -> bool {
        self.latest.is_superseded(ordinal)
    }

    /// How many of the ordinals `ordinals` are superseded, a word at a time.
    pub fn superseded_count(&self, ordinals: Range<i64>) -> usize {
        self.latest.superseded_count(ordinals)
    }

    /// Whether `key` was mapped (asked of records below the clean point, whose
    /// offsets are below every mapped one: mapped means superseded).
    pub fn is_mapped(&self, key: &[u8]) -> bool {
        self.latest.is_mapped(key)
    }
}

/// What the map step needs of the pass.
pub(super) struct MapRange {
    pub clean_point: i64,
    pub uncleanable: i64,
    pub key_budget: Option<u64>,
    /// Batches below the clean point are cleaned too: the map answers lookups.
    pub lookups: bool,
}

impl MapRange {
    fn covers(&self, batch_base: i64) -> bool {
        batch_base >= self.clean_point && batch_base < self.uncleanable
    }
}

/// The map's building state ([`crate::compaction::rules::kafka::KafkaMap::build`]'s rules).
struct Mapper {
    map: Map,
    digester: Digester,
    ordinals: i64,
    latest_offset: Option<i64>,
    /// The key budget stopped the map (no batch after it counts).
    stopped: bool,
    /// A first batch larger than the budget: reported if every read succeeds.
    error: Option<Error>,
    /// A batch's digests, and those the bounded table does not hold yet.
    digests: Vec<Digest>,
    fresh: Vec<Digest>,
}

impl Mapper {
    fn new(key_budget: Option<u64>) -> Mapper {
        let map = Map::new(key_budget);
        let digester = map.digester();
        Mapper {
            map,
            digester,
            ordinals: 0,
            latest_offset: None,
            stopped: false,
            error: None,
            digests: Vec::new(),
            fresh: Vec::new(),
        }
    }

    /// One batch of the range, in order, with its keyed records (none for a
    /// control or aborted batch). A batch is mapped whole or not at all: one whose
    /// new keys do not fit stops the map (the first batch: an error).
    fn batch(&mut self, batch: &mut Batch, records: &[Rec<'_>]) {
        if self.stopped {
            return;
        }
        if !batch.control && !batch.aborted {
            let digester = self.digester;
            self.digests.clear();
            self.digests
                .extend(records.iter().map(|r| r.digest(&digester)));
            match self.map.fits(&self.digests, &mut self.fresh) {
                Fit::Yes => {}
                Fit::Stop => {
                    self.stopped = true;
                    return;
                }
                Fit::Never(new_keys) => {
                    self.error = Some(Error::InvalidArgument(format!(
                        "the offset map holds {} keys; batch {} alone has {}",
                        self.map.room(),
                        batch.base_offset,
                        new_keys
                    )));
                    self.stopped = true;
                    return;
                }
            }
            batch.first_ordinal = Some(self.ordinals);
            for &digest in &self.digests {
                self.map.insert(digest, self.ordinals);
                self.ordinals += 1;
            }
        }
        self.latest_offset = Some(batch.last_offset);
    }
}

/// Steps 1 and 2: reads every batch of `splits` on a second thread
/// ([`crate::compaction::read`]: checked as a full decode checks it, a compressed batch's
/// records inflated once and kept), `aborted` telling the closed batches of
/// aborted transactions (by index over all of them), and maps the range on this
/// one. Returns the sources and the map, or the first read error in log order
/// (then a map error).
pub(super) fn read_and_map(
    dir: &Path,
    splits: Vec<Split>,
    aborted: &(dyn Fn(usize) -> bool + Sync),
    range: &MapRange,
) -> Result<(Vec<Source>, PassMap)> {
    let mut mapper = Mapper::new(range.key_budget);
    let mut sources: Vec<Source> = splits
        .iter()
        .map(|s| Source {
            base: s.base,
            path: s.path.clone(),
            bytes: s.bytes.clone(),
            batches: Vec::with_capacity(s.batches.len()),
        })
        .collect();
    let inputs: Vec<Input<'_>> = splits
        .iter()
        .enumerate()
        .map(|(source, split)| Input {
            source,
            base: split.base,
            bytes: &split.bytes,
        })
        .collect();
    let keys = |index: usize, base_offset: i64| !aborted(index) && range.covers(base_offset);
    let plan = Plan {
        from: i64::MIN,
        until: i64::MAX,
        checked: true,
        stable: false,
        keep_inflated: true,
        keys: &keys,
        digester: mapper.digester,
    };
    let mut current = 0usize;
    read::each(dir, &inputs, &plan, |event, records| {
        match event {
            Event::Segment { source, .. } => current = *source,
            Event::Batch(read) => {
                let mut batch = Batch {
                    range: read.position..read.position + read.size,
                    base_offset: read.base_offset,
                    last_offset: read.last_offset,
                    records: read.record_count,
                    max_timestamp: read.max_timestamp,
                    attributes: read.attributes,
                    control: read.control,
                    producer_id: read.producer_id,
                    producer_epoch: read.producer_epoch,
                    transactional: read.attributes & ATTR_TRANSACTIONAL != 0,
                    aborted: aborted(read.index),
                    keyed: read.keyed,
                    keyless: read.keyless,
                    tombstones: read.tombstones,
                    first_ordinal: None,
                    inflated: read.inflated.take(),
                };
                if range.covers(batch.base_offset) {
                    mapper.batch(&mut batch, records);
                }
                sources[current].batches.push(batch);
            }
        }
        Ok(ControlFlow::Continue(()))
    })?;
    if let Some(error) = mapper.error {
        return Err(error);
    }
    for (source, split) in sources.iter().zip(&splits) {
        assert_eq!(source.batches.len(), split.batches.len());
    }
    let Mapper {
        map, latest_offset, ..
    } = mapper;
    let latest = map.finish(range.lookups);
    let (keys, map_bytes, map_bytes_peak) = (latest.keys(), latest.bytes(), latest.peak_bytes());
    Ok((
        sources,
        PassMap {
            latest,
            keys,
            map_bytes,
            map_bytes_peak,
            latest_offset,
            clean_point: range.clean_point,
        },
    ))
}

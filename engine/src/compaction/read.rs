//! The one batch reader of a compaction, on a second thread: every segment split
//! into CRC-checked batches ([`super::view`]), every batch's records walked with
//! the one record walk ([`super::walker`]: checked as a full decode checks them, a
//! compressed batch inflated), its keyed, keyless and tombstone records counted,
//! and the keys of the batches the caller maps handed over in chunks to the
//! calling thread ([`super::handover`]), which does what needs the map: the full
//! scan's and the kafka pass's inserts, the incremental pass's inserts and its
//! clean-section lookups. The calling thread sees exactly the sequence a single
//! loop would, in order; a damaged batch is the error that loop would meet at
//! the same point, after everything before it.
//!
//! Keys are handed over as they are stored (they borrow the segment's bytes) and
//! hashed by the consumer, so the two threads share the work; when the consumer is behind
//! (every other chunk is waiting for it), the reader hashes the chunk it hands
//! over instead of waiting. A compressed batch's keys live in the walker's
//! arena, which the next batch reuses: they are handed over hashed.

use std::ops::{ControlFlow, Range};
use std::path::Path;

use crate::error::Result;
use crate::format::batch::NO_TIMESTAMP;
use crate::format::filename::LOG_SUFFIX;
use crate::format::key_summary::key_hash;

use super::handover;
use super::map::{Digest, Digester};
use super::view;
use super::walker::{Key, Walker};
use crate::segment::files::segment_path;

/// One segment to read: the caller's index, its base offset and its bytes.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub source: usize,
    pub base: i64,
    pub bytes: &'a [u8],
}

/// What the reader hands over and how.
#[derive(Clone, Copy)]
pub struct Plan<'f> {
    /// Batches whose base offset is in `[from, until)` are read and handed over
    /// (a segment's batches past `until` are not read at all).
    pub from: i64,
    pub until: i64,
    /// The inputs' CRCs were checked by an earlier split of these very bytes.
    pub checked: bool,
    /// Hand over each key's stable hash ([`key_hash`], the key summaries').
    pub stable: bool,
    /// Keep a compressed batch's inflated records ([`Batch::inflated`]).
    pub keep_inflated: bool,
    /// Whether the keys of a data batch are handed over, by the batch's index
    /// (every batch read counts, from 0) and base offset.
    pub keys: &'f (dyn Fn(usize, i64) -> bool + Sync),
    pub digester: Digester,
}

impl Plan<'static> {
    /// Every data batch of `offsets` (by base offset) read with every check, its
    /// keys handed over with their stable hashes: the incremental pass's reads.
    pub fn stable_keys(offsets: Range<i64>, digester: Digester) -> Plan<'static> {
        fn every(_: usize, _: i64) -> bool {
            true
        }
        Plan {
            from: offsets.start,
            until: offsets.end,
            checked: false,
            stable: true,
            keep_inflated: false,
            keys: &every,
            digester,
        }
    }
}

/// The key of a handed-over record: as stored, or hashed already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRef<'a> {
    Stored(&'a [u8]),
    Hashed(Digest),
}

/// One keyed record of a batch whose keys are handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rec<'a> {
    pub key: KeyRef<'a>,
    /// The key's stable hash when [`Plan::stable`], else 0.
    pub stable: u64,
    pub value_is_null: bool,
    /// The timestamp the tombstone rule reads.
    pub timestamp: i64,
}

impl Rec<'_> {
    /// The offset map's digest of the key.
    #[inline]
    pub fn digest(&self, digester: &Digester) -> Digest {
        match self.key {
            KeyRef::Stored(key) => digester.digest(key),
            KeyRef::Hashed(digest) => digest,
        }
    }
}

/// A batch as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// Its index among the batches read (from 0).
    pub index: usize,
    /// Its bytes in the segment.
    pub position: usize,
    pub size: usize,
    pub base_offset: i64,
    pub last_offset: i64,
    pub record_count: usize,
    pub max_timestamp: i64,
    pub attributes: i16,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub control: bool,
    /// Its records with a key, without one, and with a null value.
    pub keyed: u32,
    pub keyless: u32,
    pub tombstones: u32,
    /// Its keyed records in the chunk's records, if its keys are handed over.
    pub records: Option<Range<usize>>,
    /// A compressed batch's inflated records ([`Plan::keep_inflated`]).
    pub inflated: Option<Vec<u8>>,
}

/// What the reader hands over, in log order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A segment starts (before any of its batches): `source` indexes the caller's
    /// inputs; `next_offset` follows its last batch, `max_timestamp` is its
    /// batches' largest (both from every batch's header, whatever the range).
    Segment {
        source: usize,
        next_offset: i64,
        max_timestamp: i64,
    },
    Batch(Batch),
}

/// Records a chunk holds before it is handed over: [`handover::CHUNKS`] x 16K
/// records of 48 bytes, about 3 MiB whatever the log's size.
const CHUNK_RECORDS: usize = 16 * 1024;
/// Batches a chunk holds before it is handed over.
const CHUNK_EVENTS: usize = 4 * 1024;

#[derive(Default)]
struct Chunk<'a> {
    events: Vec<Event>,
    records: Vec<Rec<'a>>,
    digester: Option<Digester>,
}

impl handover::Chunk for Chunk<'_> {
    fn clear(&mut self) {
        self.events.clear();
        self.records.clear();
    }

    fn behind(&mut self) {
        let Some(digester) = self.digester else {
            return;
        };
        for record in &mut self.records {
            if let KeyRef::Stored(key) = record.key {
                record.key = KeyRef::Hashed(digester.digest(key));
            }
        }
    }
}

/// Inputs of fewer bytes than this are read on the consuming thread: a second
/// thread's start and its hand-overs cost more than it saves on them.
pub const SECOND_THREAD_BYTES: usize = 1 << 20;

/// Reads `inputs` in order on a second thread (on this one when they hold fewer
/// than [`SECOND_THREAD_BYTES`]) and calls `consume` on this one with every
/// segment and every batch of the plan's range, in order, with the batch's
/// handed-over records. `consume` may take a batch's inflated records and may stop
/// the walk (`Break`).
pub fn each<'a>(
    dir: &Path,
    inputs: &[Input<'a>],
    plan: &Plan<'_>,
    mut consume: impl FnMut(&mut Event, &[Rec<'a>]) -> Result<ControlFlow<()>>,
) -> Result<()> {
    let bytes: usize = inputs.iter().map(|input| input.bytes.len()).sum();
    let reader = |chunk: &mut Chunk<'a>, hand_over: &mut dyn FnMut(&mut Chunk<'a>) -> bool| {
        read(dir, inputs, plan, chunk, hand_over)
    };
    let consumer = |chunk: &mut Chunk<'a>| {
        let Chunk {
            events, records, ..
        } = chunk;
        for event in events.iter_mut() {
            let handed = match event {
                Event::Batch(Batch {
                    records: Some(range),
                    ..
                }) => &records[range.clone()],
                _ => &[],
            };
            if consume(event, handed)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    };
    if bytes < SECOND_THREAD_BYTES {
        handover::run_here(reader, consumer)
    } else {
        handover::run(reader, consumer)
    }
}

/// The reading stage: fills `chunk`, calling `hand_over` when it is full (false:
/// the consumer stopped, so stop too).
fn read<'a>(
    dir: &Path,
    inputs: &[Input<'a>],
    plan: &Plan<'_>,
    chunk: &mut Chunk<'a>,
    hand_over: &mut dyn FnMut(&mut Chunk<'a>) -> bool,
) -> Result<()> {
    let mut walker = Walker::default();
    let mut index = 0usize;
    let digester = plan.digester;
    for input in inputs {
        let path = segment_path(dir, input.base, LOG_SUFFIX);
        let batches = if plan.checked {
            view::batches_verified(&path, input.base, input.bytes)?
        } else {
            view::batches(&path, input.base, input.bytes)?
        };
        chunk.events.push(Event::Segment {
            source: input.source,
            next_offset: batches.last().map_or(input.base, |b| b.last_offset() + 1),
            max_timestamp: batches
                .iter()
                .map(|b| b.header.max_timestamp)
                .max()
                .unwrap_or(NO_TIMESTAMP),
        });
        for batch in &batches {
            let base_offset = batch.header.base_offset;
            if base_offset < plan.from {
                continue;
            }
            if base_offset >= plan.until {
                break;
            }
            chunk.digester = Some(digester);
            let control = batch.is_control();
            let handed = !control && (plan.keys)(index, base_offset);
            let start = chunk.records.len();
            let (mut keyed, mut keyless, mut tombstones) = (0u32, 0u32, 0u32);
            let records = &mut chunk.records;
            let checked = walker.each(&path, batch, |record| {
                tombstones += u32::from(record.value_is_null);
                let key = match record.key {
                    Key::None => {
                        keyless += 1;
                        return;
                    }
                    Key::Stored(key) => {
                        keyed += 1;
                        if !handed {
                            return;
                        }
                        (KeyRef::Stored(key), key)
                    }
                    Key::Inflated(key) => {
                        keyed += 1;
                        if !handed {
                            return;
                        }
                        (KeyRef::Hashed(digester.digest(key)), key)
                    }
                };
                records.push(Rec {
                    key: key.0,
                    stable: if plan.stable { key_hash(key.1) } else { 0 },
                    value_is_null: record.value_is_null,
                    timestamp: record.timestamp,
                });
            })?;
            let inflated =
                (plan.keep_inflated && checked.is_compressed()).then(|| walker.take_inflated());
            chunk.events.push(Event::Batch(Batch {
                index,
                position: batch.position as usize,
                size: batch.bytes.len(),
                base_offset,
                last_offset: batch.last_offset(),
                record_count: checked.record_count,
                max_timestamp: checked.max_timestamp,
                attributes: checked.attributes,
                producer_id: checked.producer_id,
                producer_epoch: checked.producer_epoch,
                control,
                keyed,
                keyless,
                tombstones,
                records: handed.then_some(start..chunk.records.len()),
                inflated,
            }));
            index += 1;
            let full = chunk.records.len() >= CHUNK_RECORDS || chunk.events.len() >= CHUNK_EVENTS;
            if full && !hand_over(chunk) {
                return Ok(());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

//! The offset map of every pass, both policies (docs/design.md section 6): key
//! digest -> latest position, positions being the keyed records' ordinals in
//! offset order, with a bit for every position a later one of the same key
//! superseded. One type ([`Map`]) with two tables:
//!
//! - no key budget: [`OffsetMap`], appended to in bulk and sorted once (lookups by
//!   key need the sort; a pass that only asks "superseded?" skips it);
//! - a key budget (`dedupe_buffer_bytes`): [`Table`], a fixed table of
//!   `dedupe_buffer_bytes / 24` slots allocated once, so the map's memory stays
//!   within the budget whatever the log holds.
//!
//! A batch enters the map whole or not at all ([`Map::fits`]): a batch whose new
//! keys do not fit stops the map there, and one that does not fit an empty map is
//! an error (the budget is too small for the log).
//!
//! * [`offset_map`]: the unbounded table, sorted once.
//! * [`table`]: the bounded table of `dedupe_buffer_bytes / 24` slots.
//! * [`superseded`]: the superseded positions a map build leaves, for the rewrite.
//! * [`filter`]: a filter of the dirty section's keys by their stable hashes, which
//!   decides which clean segments a pass may carry unread.

pub mod filter;
pub mod offset_map;
pub mod superseded;
pub mod table;

pub use filter::KeyFilter;
pub use offset_map::{Digest, Digester, OffsetMap, ENTRY_BYTES};
pub use superseded::Superseded;
pub use table::Table;

use crate::compaction::bitmap::Bitmap;

/// The map being built.
#[derive(Debug)]
pub enum Map {
    /// No key budget: the sorted map.
    Unbounded(OffsetMap),
    /// A key budget: the fixed table, and the digest function of its keys.
    Bounded(Table, Digester),
}

/// Whether a batch's keys fit the map ([`Map::fits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Every new key has room.
    Yes,
    /// Its new keys do not fit: the map stops before it.
    Stop,
    /// Its new keys (this many) do not fit even the empty map.
    Never(usize),
}

impl Map {
    /// A map for at most `key_budget` keys (`None`: unbounded), tracking superseded
    /// positions, with a fresh secret digest key.
    pub fn new(key_budget: Option<u64>) -> Map {
        let map = OffsetMap::tracking_superseded();
        match key_budget {
            None => Map::Unbounded(map),
            Some(keys) => {
                let keys = usize::try_from(keys).unwrap_or(usize::MAX);
                Map::Bounded(Table::new(keys), map.digester())
            }
        }
    }

    /// The map's digest function, to hash keys on another thread.
    pub fn digester(&self) -> Digester {
        match self {
            Map::Unbounded(map) => map.digester(),
            Map::Bounded(_, digester) => *digester,
        }
    }

    /// Whether a batch with these key digests fits whole (`scratch`: reused
    /// between calls). Unbounded, every batch fits.
    pub fn fits(&self, digests: &[Digest], scratch: &mut Vec<Digest>) -> Fit {
        let Map::Bounded(table, _) = self else {
            return Fit::Yes;
        };
        if digests.len() <= table.room() {
            return Fit::Yes;
        }
        scratch.clear();
        scratch.extend(digests.iter().filter(|d| !table.contains(**d)));
        scratch.sort_unstable();
        scratch.dedup();
        if scratch.len() <= table.room() {
            Fit::Yes
        } else if table.is_empty() {
            Fit::Never(scratch.len())
        } else {
            Fit::Stop
        }
    }

    /// The keys a bounded map has room for (`usize::MAX` unbounded).
    pub fn room(&self) -> usize {
        match self {
            Map::Unbounded(_) => usize::MAX,
            Map::Bounded(table, _) => table.room(),
        }
    }

    /// Records `digest` at `position` (ascending across calls; a new key of a
    /// bounded map needs room: ask [`Map::fits`] first).
    #[inline]
    pub fn insert(&mut self, digest: Digest, position: i64) {
        match self {
            Map::Unbounded(map) => map.insert_digest(digest, position),
            Map::Bounded(table, _) => table.insert(digest, position),
        }
    }

    /// Ends the build; `lookups`: the finished map answers lookups by key too
    /// (an unbounded map is sorted for them), else only "superseded?".
    pub fn finish(self, lookups: bool) -> Latest {
        match self {
            Map::Bounded(table, digester) => Latest::Bounded(table, digester),
            Map::Unbounded(mut map) if lookups => {
                map.finish();
                Latest::Finished(map)
            }
            Map::Unbounded(map) => Latest::Superseded(map.into_superseded()),
        }
    }
}

/// A finished map's answers.
#[derive(Debug)]
pub enum Latest {
    /// Superseded positions only (an unbounded map finished without lookups).
    Superseded(Superseded),
    /// An unbounded map sorted for lookups.
    Finished(OffsetMap),
    /// A bounded map: its table answers both.
    Bounded(Table, Digester),
}

impl Latest {
    /// Whether `position` has a later position of its key.
    pub fn is_superseded(&self, position: i64) -> bool {
        self.superseded().get(index(position))
    }

    /// How many of `positions` are superseded, a word at a time.
    pub fn superseded_count(&self, positions: std::ops::Range<i64>) -> usize {
        self.superseded()
            .count(index(positions.start)..index(positions.end))
    }

    /// The superseded positions' bits.
    pub fn superseded(&self) -> &Bitmap {
        match self {
            Latest::Superseded(bits) => bits.bits(),
            Latest::Finished(map) => map.superseded_bits(),
            Latest::Bounded(table, _) => table.superseded(),
        }
    }

    /// Whether the key with `digest` was mapped (a map finished for lookups).
    pub fn contains(&self, digest: Digest) -> bool {
        match self {
            Latest::Finished(map) => map.contains_digest(digest),
            Latest::Bounded(table, _) => table.contains(digest),
            Latest::Superseded(_) => unreachable!("the map was finished without lookups"),
        }
    }

    /// Whether `key` was mapped (a map finished for lookups).
    pub fn is_mapped(&self, key: &[u8]) -> bool {
        let digest = match self {
            Latest::Finished(map) => map.digest(key),
            Latest::Bounded(_, digester) => digester.digest(key),
            Latest::Superseded(_) => unreachable!("the map was finished without lookups"),
        };
        self.contains(digest)
    }

    /// Distinct keys mapped.
    pub fn keys(&self) -> usize {
        match self {
            Latest::Superseded(bits) => bits.keys,
            Latest::Finished(map) => map.len(),
            Latest::Bounded(table, _) => table.len(),
        }
    }

    /// Bytes the map holds (a bounded one: its whole table).
    pub fn bytes(&self) -> usize {
        match self {
            Latest::Superseded(bits) => bits.map_bytes,
            Latest::Finished(map) => map.resident_bytes(),
            Latest::Bounded(table, _) => table.table_bytes(),
        }
    }

    /// The most bytes the map held while built.
    pub fn peak_bytes(&self) -> usize {
        match self {
            Latest::Superseded(bits) => bits.map_bytes_peak,
            Latest::Finished(map) => map.peak_bytes(),
            Latest::Bounded(table, _) => table.peak_bytes(),
        }
    }
}

/// How the rewrite learns whether a keyed record of a non-control batch is the
/// latest of its key.
#[derive(Debug)]
pub enum Fate<'a> {
    /// By the map's numbering: the superseded bit at the record's ordinal.
    Ordinals {
        /// The map's superseded positions.
        superseded: &'a Superseded,
        /// The ordinal of the next keyed record (advanced by each question).
        next: &'a mut i64,
    },
    /// By key: a record of the incremental pass's clean section is superseded
    /// exactly when the map of the dirty section holds its key (no ordinal); the
    /// map is asked only for keys the dirty section's filter may hold.
    Lookups {
        /// The dirty section's map, finished for lookups.
        map: &'a Latest,
        /// Its keys' filter.
        dirty: &'a KeyFilter,
    },
}

impl Fate<'_> {
    /// Whether the next keyed record, whose key is `key`, is the latest of its key.
    #[inline]
    pub fn latest(&mut self, key: &[u8]) -> bool {
        match self {
            Fate::Ordinals { superseded, next } => {
                let ordinal = **next;
                **next += 1;
                !superseded.is_superseded(ordinal)
            }
            Fate::Lookups { map, dirty } => !(dirty.may_hold(key) && map.is_mapped(key)),
        }
    }
}

/// Positions are dense ordinals from 0: a bitmap index.
fn index(position: i64) -> usize {
    usize::try_from(position).expect("positions are >= 0")
}

//! The latest-offset map: for every key, the highest offset it was written at.
//!
//! Entries are 24 bytes, like Kafka's `SkimpyOffsetMap`: a 16-byte digest of the key
//! (SipHash-2-4 with 128-bit output under a secret random key) and an 8-byte offset.
//! Once finished they live in one `Vec`, sorted by digest, one entry per distinct
//! digest, with a directory of the digests' top bits (at most 2 bytes a key) that
//! takes a lookup to the few entries of its slot; batched lookups are merge walks.
//!
//! Building appends each entry to one of 1024 buckets picked by the digest's top
//! bits; a full bucket of 128 entries or more is deduplicated in one pass with a
//! small hash table of entry indices, keeping the highest offset per digest, and
//! grows only when that freed less than half (a smaller one just doubles). Buckets
//! are small enough to stay in cache meanwhile. `finish` deduplicates and sorts
//! each bucket once (on two threads for large maps) and concatenates them, in
//! digest order, into one exactly sized vector: 24 bytes per distinct key
//! resident, and the directory; [`OffsetMap::peak_bytes`] reports the build's peak
//! honestly (about twice that, or at most about 3 MiB for a small map of many
//! repeated keys).
//!
//! A map built with [`OffsetMap::tracking_superseded`] also sets a bit for every
//! position that an entry with the same digest and a higher position replaced: with
//! record ordinals as positions, the cleaner's rewrite pass asks
//! [`Superseded::is_superseded`] instead of hashing and looking up every key again.
//! [`OffsetMap::into_superseded`] ends such a build without the sort and
//! concatenation that lookups need, and keeps only those bits.
//!
//! Collisions: two distinct keys share an entry only if their 128-bit digests
//! collide. SipHash-2-4 is a pseudo-random function: for keys chosen without
//! knowledge of the secret key the probability for `n` distinct keys is at most
//! about `n^2 / 2^129` (birthday bound): about 1.5e-21 for a billion keys. A
//! collision would make the older key's latest record look obsolete, so we rely on
//! it being astronomically unlikely (docs/design.md section 6). (BLAKE3 was 4x
//! slower per short key here: 95 ns against 24 ns.)
//!
//! `directory`: where each value of the digests' top bits starts in the sorted
//! entries, the first step of a lookup.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::mem::size_of;

use siphasher::sip128::SipHasher24;

use crate::compaction::bitmap::Bitmap;

use super::superseded::{bit_index, Superseded};
use directory::Directory;

/// Bytes of key digest per entry.
pub const DIGEST_BYTES: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    /// The 128-bit digest as two words (compared as numbers: fast sorts).
    digest: Digest,
    offset: i64,
}

/// Bytes per map entry.
pub const ENTRY_BYTES: usize = size_of::<Entry>();
const _: () = assert!(ENTRY_BYTES == 24);

/// Bits of the digest's high word that pick a build bucket.
const BUCKET_BITS: u32 = 10;
/// Build buckets: each collects the entries whose digests share their top
/// [`BUCKET_BITS`] bits, so its sort-and-dedup runs on a slice that fits in cache.
const BUCKETS: usize = 1 << BUCKET_BITS;
/// Entries a bucket allocates first.
const BUCKET_INITIAL_CAPACITY: usize = 16;
/// Entries from which a full bucket is deduplicated before it grows; a smaller
/// one only doubles. Deduplicating at every doubling from 16 goes over most
/// entries three times before the last dedup (50,000 distinct keys: 1.19 ms to
/// insert and finish, against 0.89 ms from 128); a bucket of this size and its
/// dedup table still fit in cache, and the buckets below it hold at most 3 MiB.
const DEDUP_FROM: usize = 128;

/// Latest offset per key digest.
#[derive(Debug)]
pub struct OffsetMap {
    /// SipHash-2-4, 128-bit output, under a key drawn from the OS for each map.
    hasher: SipHasher24,
    /// While building: one vector per digest prefix, deduplicated up to the
    /// entries appended since it was last full. Empty once finished.
    buckets: Vec<Vec<Entry>>,
    /// Once finished: every entry, sorted by digest, one per digest.
    entries: Vec<Entry>,
    /// True when `entries` is sorted by digest and deduplicated.
    finished: bool,
    /// Once finished: where each slot of the digests' top bits starts in `entries`
    /// ([`Directory`]).
    directory: Directory,
    /// With [`OffsetMap::tracking_superseded`]: bit `p` is set once some entry with
    /// the same digest and a higher position than `p` was inserted.
    superseded: Option<Bitmap>,
    /// Sum of the buckets' capacities, in entries.
    bucket_capacity: usize,
    /// Scratch of the dedup of a full bucket ([`dedup`]).
    table: Vec<u32>,
    peak_bytes: usize,
}

/// A 128-bit key digest, high word first.
pub type Digest = [u64; 2];

const _: () = assert!(size_of::<Digest>() == DIGEST_BYTES);

/// The high word: digests sort by it first, and it is uniformly distributed.
fn prefix(digest: &Digest) -> u64 {
    digest[0]
}

/// A digest as one number, ordered like the digest.
fn sort_key(digest: &Digest) -> u128 {
    (u128::from(digest[0]) << 64) | u128::from(digest[1])
}

/// The build bucket of a digest (its top bits, so buckets are in digest order).
fn bucket_of(digest: &Digest) -> usize {
    (prefix(digest) >> (64 - BUCKET_BITS)) as usize
}

/// An empty slot of a dedup table.
const EMPTY: u32 = u32::MAX;

/// Keeps one entry per digest, the one with the highest offset (entries end up in
/// the order their digests first appear); the lower offset of every dropped entry
/// is marked in `superseded` (if tracked). One pass with a linear-probing table of
/// entry indices (`table`, scratch reused between calls, at most 8 bytes per
/// entry), which stays in cache for a bucket: no sort.
fn dedup(entries: &mut Vec<Entry>, superseded: &mut Option<Bitmap>, table: &mut Vec<u32>) {
    let n = entries.len();
    assert!(n < EMPTY as usize);
    let slots = (2 * n).next_power_of_two().max(16);
    table.clear();
    table.resize(slots, EMPTY);
    let mask = slots - 1;
    let mut kept = 0usize;
    for i in 0..n {
        let entry = entries[i];
        // The low bits of the high word: uniform, and independent of the bucket bits.
        let mut slot = prefix(&entry.digest) as usize & mask;
        loop {
            let index = table[slot];
            if index == EMPTY {
                table[slot] = kept as u32;
                entries[kept] = entry; // kept <= i: never overwrites an unread entry
                kept += 1;
                break;
            }
            let held = &mut entries[index as usize];
            if held.digest == entry.digest {
                if held.offset != entry.offset {
                    if let Some(bits) = superseded.as_mut() {
                        bits.set(bit_index(held.offset.min(entry.offset)));
                    }
                }
                held.offset = held.offset.max(entry.offset);
                break;
            }
            slot = (slot + 1) & mask;
        }
    }
    entries.truncate(kept);
}

/// Entries pending in the buckets from which [`OffsetMap::finish`] works on two
/// threads (below, a thread costs more than it saves).
const FINISH_PARALLEL_ENTRIES: usize = 1 << 16;

/// The last dedup of each bucket, its sort by digest if `sort` (digests are
/// distinct by then), and its spare capacity freed. Returns the scratch table's bytes.
fn finish_buckets(
    buckets: &mut [Vec<Entry>],
    superseded: &mut Option<Bitmap>,
    sort: bool,
) -> usize {
    let mut table = Vec::new();
    for bucket in buckets {
        dedup(bucket, superseded, &mut table);
        if sort {
            // As one u128: about 3x faster than comparing the two words as an array.
            bucket.sort_unstable_by_key(|e| sort_key(&e.digest));
        }
        bucket.shrink_to_fit();
    }
    table.capacity() * size_of::<u32>()
}

/// A map's secret digest function, `Send` and cheap to copy.
#[derive(Debug, Clone, Copy)]
pub struct Digester {
    hasher: SipHasher24,
}

impl Digester {
    /// The 128-bit digest of a key, high word first.
    pub fn digest(&self, key: &[u8]) -> Digest {
        let hash = self.hasher.hash(key).as_u128();
        [(hash >> 64) as u64, hash as u64]
    }
}

impl Default for OffsetMap {
    fn default() -> Self {
        Self::new()
    }
}

impl OffsetMap {
    /// An empty map with a fresh secret hash key.
    pub fn new() -> Self {
        // `RandomState` is seeded from the OS's randomness.
        let seed = || RandomState::new().build_hasher().finish();
        OffsetMap {
            hasher: SipHasher24::new_with_keys(seed(), seed()),
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            entries: Vec::new(),
            finished: false,
            directory: Directory::default(),
            superseded: None,
            bucket_capacity: 0,
            table: Vec::new(),
            peak_bytes: 0,
        }
    }

    /// A map that also remembers which inserted positions were superseded by a later
    /// position of the same digest ([`OffsetMap::is_superseded`]). Insert dense
    /// positions (record ordinals from 0, in offset order) rather than offsets: the
    /// bitmap has one bit per position up to the highest superseded one.
    pub fn tracking_superseded() -> Self {
        OffsetMap {
            superseded: Some(Bitmap::default()),
            ..Self::new()
        }
    }

    /// Whether a position inserted into a [`OffsetMap::tracking_superseded`] map was
    /// superseded: its key (digest) was also inserted at a higher position. Needs
    /// [`OffsetMap::finish`].
    pub fn is_superseded(&self, position: i64) -> bool {
        self.superseded_bits().get(bit_index(position))
    }

    /// How many positions of `positions` were superseded ([`OffsetMap::is_superseded`]),
    /// counted a word at a time.
    pub fn superseded_count(&self, positions: std::ops::Range<i64>) -> usize {
        self.superseded_bits()
            .count(bit_index(positions.start)..bit_index(positions.end))
    }

    /// The superseded positions' bits. Needs [`OffsetMap::finish`].
    pub fn superseded_bits(&self) -> &Bitmap {
        assert!(self.finished, "OffsetMap::finish must run before lookups");
        self.superseded
            .as_ref()
            .expect("the map tracks superseded positions")
    }

    /// Bytes of the superseded-position bitmap (one bit per position).
    pub fn superseded_bytes(&self) -> usize {
        self.superseded.as_ref().map_or(0, Bitmap::bytes)
    }

    /// The 128-bit digest of a key under this map's secret key.
    pub fn digest(&self, key: &[u8]) -> Digest {
        self.digester().digest(key)
    }

    /// This map's digest function, to hash keys on another thread.
    pub fn digester(&self) -> Digester {
        Digester {
            hasher: self.hasher,
        }
    }

    /// Records that `key` was written at `offset`. Offsets may come in any order;
    /// the highest one wins.
    pub fn insert(&mut self, key: &[u8], offset: i64) {
        self.insert_digest(self.digest(key), offset);
    }

    /// [`OffsetMap::insert`] of a key hashed by this map's [`OffsetMap::digester`].
    pub fn insert_digest(&mut self, digest: Digest, offset: i64) {
        assert!(!self.finished, "OffsetMap::insert after finish");
        let index = bucket_of(&digest);
        let bucket = &mut self.buckets[index];
        if bucket.len() == bucket.capacity() {
            let before = bucket.capacity();
            if before < DEDUP_FROM {
                bucket.reserve_exact(before.max(BUCKET_INITIAL_CAPACITY));
            } else {
                dedup(bucket, &mut self.superseded, &mut self.table);
                // Grow only when deduplication freed less than half.
                if bucket.len() * 2 > bucket.capacity() {
                    bucket.reserve_exact(bucket.len());
                }
            }
            self.bucket_capacity += bucket.capacity() - before;
            self.note_peak(0);
        }
        self.buckets[index].push(Entry { digest, offset });
    }

    /// Notes the bytes held now (buckets, their headers, the dedup table, and
    /// `extra_bytes` more).
    fn note_peak(&mut self, extra_bytes: usize) {
        let bytes = (self.bucket_capacity + self.entries.capacity()) * ENTRY_BYTES
            + self.buckets.capacity() * size_of::<Vec<Entry>>()
            + self.table.capacity() * size_of::<u32>()
            + self.directory.bytes()
            + extra_bytes;
        self.peak_bytes = self.peak_bytes.max(bytes);
    }

    /// Ends the build: deduplicates every bucket and concatenates them, in digest
    /// order, into one exactly sized sorted vector. Lookups need this.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.dedup_buckets(true);
        let total: usize = self.buckets.iter().map(Vec::len).sum();
        self.entries = Vec::with_capacity(total);
        self.note_peak(0);
        for bucket in std::mem::take(&mut self.buckets) {
            self.entries.extend_from_slice(&bucket);
        }
        self.bucket_capacity = 0;
        self.directory = Directory::of(&self.entries);
        self.note_peak(0);
        if let Some(bits) = self.superseded.as_mut() {
            bits.shrink_to_fit();
        }
        self.finished = true;
        assert_eq!(self.entries.len(), total);
        assert_eq!(self.entries.capacity(), total);
        debug_assert!(self.entries.windows(2).all(|w| w[0].digest < w[1].digest));
    }

    /// Ends a [`OffsetMap::tracking_superseded`] build when only the superseded
    /// positions are needed (the cleaner's case): the last dedup of every bucket,
    /// without the sort and concatenation that lookups need, then the entries are
    /// freed.
    pub fn into_superseded(mut self) -> Superseded {
        assert!(!self.finished, "the map was finished for lookups");
        self.dedup_buckets(false);
        let bits = self
            .superseded
            .take()
            .expect("the map tracks superseded positions");
        // The entries, each bucket exactly sized; the bucket headers (a fixed
        // 24 KiB) are build overhead, counted in the peak.
        Superseded::from_parts(
            bits,
            self.buckets.iter().map(Vec::len).sum(),
            self.bucket_capacity * ENTRY_BYTES,
            self.peak_bytes(),
        )
    }

    /// The last dedup of every bucket (and its sort by digest if `sort`), on two
    /// threads for large maps; spare capacity is freed.
    fn dedup_buckets(&mut self, sort: bool) {
        self.table = Vec::new();
        self.note_peak(0);
        let pending: usize = self.buckets.iter().map(Vec::len).sum();
        let table_bytes = if pending >= FINISH_PARALLEL_ENTRIES {
            // The two halves of the buckets on two threads, each with its own marks.
            let (low, high) = self.buckets.split_at_mut(BUCKETS / 2);
            let superseded = &mut self.superseded;
            let high_marks = superseded.as_ref().map(|_| Bitmap::default());
            let (low_table, (high_table, high_marks)) = std::thread::scope(|scope| {
                let other = scope.spawn(move || {
                    let mut marks = high_marks;
                    (finish_buckets(high, &mut marks, sort), marks)
                });
                let low_table = finish_buckets(low, superseded, sort);
                (
                    low_table,
                    crate::panics::join_scoped(other, "the map's high-half finisher"),
                )
            });
            if let (Some(bits), Some(high)) = (superseded.as_mut(), high_marks) {
                bits.union_with(&high);
            }
            low_table + high_table
        } else {
            finish_buckets(&mut self.buckets, &mut self.superseded, sort)
        };
        // The tables were alive while the buckets still had their spare capacity.
        self.note_peak(table_bytes);
        self.bucket_capacity = self.buckets.iter().map(Vec::capacity).sum();
        assert!(self.buckets.iter().map(Vec::len).sum::<usize>() <= pending);
    }

    /// The latest offset recorded for `key`. Panics if [`OffsetMap::finish`] was not called.
    pub fn latest(&self, key: &[u8]) -> Option<i64> {
        assert!(self.finished, "OffsetMap::finish must run before lookups");
        let digest = self.digest(key);
        self.find(&digest).map(|i| self.entries[i].offset)
    }

    /// Whether a key with `digest` (this map's [`OffsetMap::digester`]) was
    /// inserted. Needs [`OffsetMap::finish`].
    pub fn contains_digest(&self, digest: Digest) -> bool {
        assert!(self.finished, "OffsetMap::finish must run before lookups");
        self.find(&digest).is_some()
    }

    /// The entry of `digest`: a search of its directory slot's few entries.
    fn find(&self, digest: &Digest) -> Option<usize> {
        let range = self.directory.range(digest, self.entries.len());
        let lo = range.start;
        let key = sort_key(digest);
        self.entries[range]
            .binary_search_by(|e| sort_key(&e.digest).cmp(&key))
            .ok()
            .map(|i| lo + i)
    }

    /// Looks up many digests at once, sorted ascending: a merge walk with galloping
    /// search over the sorted entries, so memory is read nearly sequentially instead
    /// of one cache miss per probe. Calls `found(tag, latest)` for each query.
    pub fn latest_sorted(
        &self,
        queries: &[(Digest, u32)],
        mut found: impl FnMut(u32, Option<i64>),
    ) {
        assert!(self.finished, "OffsetMap::finish must run before lookups");
        debug_assert!(queries.windows(2).all(|w| w[0].0 <= w[1].0));
        let entries = &self.entries;
        let n = entries.len();
        let mut lo = 0usize;
        for (digest, tag) in queries {
            // Invariant: every entry before `lo` is < digest.
            let mut bound = 1usize;
            while lo + bound <= n && entries[lo + bound - 1].digest < *digest {
                lo += bound;
                bound *= 2;
            }
            let hi = (lo + bound).min(n);
            lo += entries[lo..hi].partition_point(|e| e.digest < *digest);
            let hit = entries.get(lo).filter(|e| e.digest == *digest);
            found(*tag, hit.map(|e| e.offset));
        }
    }

    /// Distinct keys (digests) in the map.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if the map holds no key.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes the map holds now.
    pub fn resident_bytes(&self) -> usize {
        (self.bucket_capacity + self.entries.capacity()) * ENTRY_BYTES
            + self.buckets.capacity() * size_of::<Vec<Entry>>()
            + self.directory.bytes()
    }

    /// Most bytes the map held at any time during the build.
    pub fn peak_bytes(&self) -> usize {
        self.peak_bytes.max(self.resident_bytes())
    }
}

mod directory;
#[cfg(test)]
mod tests;

//! The offset map of an incremental cleaning pass: key digest -> latest position in
//! the dirty section, in one open-addressing table of 24-byte slots (a 16-byte
//! digest and an 8-byte position, like Kafka's `SkimpyOffsetMap`).
//!
//! Bounded (`dedupe_buffer_bytes`), the table is allocated once with
//! `dedupe_buffer_bytes / 24` slots and never grows: the map can hold exactly as many
//! keys as `seglog_model::spec::CleanKnobs::key_budget` (the spec) says, and its memory is
//! within the budget by construction ([`DirtyMap::table_bytes`]). Robin Hood
//! linear probing (a resident closer to its home slot than the probe is to its own
//! ends a lookup) keeps lookups short up to a full table, where a plain linear probe
//! for an absent key would walk every slot. Unbounded, the table doubles at 3/4 load.
//!
//! Every replaced position is marked in a bitmap (positions are dense ordinals from
//! 0), which the rewrite pass reads instead of looking every dirty key up again.

use super::bitmap::Bitmap;
use super::offset_map::{Digest, ENTRY_BYTES};

/// The most keys [`DirtyMap::with_expected`] makes room for up front (96 MiB of
/// slots): an estimate from record counts may be far above the distinct keys.
pub const EXPECTED_KEYS_MAX: usize = 1 << 22;

/// An empty slot's position (positions are >= 0).
const EMPTY: i64 = -1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    digest: Digest,
    position: i64,
}

const _: () = assert!(size_of::<Slot>() == ENTRY_BYTES);

const FREE: Slot = Slot {
    digest: [0, 0],
    position: EMPTY,
};

/// Latest position per key digest, with the superseded positions.
#[derive(Debug)]
pub struct DirtyMap {
    slots: Vec<Slot>,
    len: usize,
    /// `Some(keys)`: a fixed table of that many slots.
    budget: Option<usize>,
    superseded: Bitmap,
    peak_bytes: usize,
}

impl DirtyMap {
    /// A map for at most `budget` keys (`None`: unbounded).
    pub fn new(budget: Option<usize>) -> DirtyMap {
        Self::with_expected(budget, 0)
    }

    /// [`DirtyMap::new`]; unbounded, the table starts with room for `expected` keys
    /// at most [`EXPECTED_KEYS_MAX`] (it still grows past them), so a pass that
    /// knows roughly how many keys come does not rehash its way up from 1024 slots.
    /// A bounded table is its budget, whatever `expected` says.
    pub fn with_expected(budget: Option<usize>, expected: usize) -> DirtyMap {
        let slots = budget
            .unwrap_or_else(|| {
                let expected = expected.min(EXPECTED_KEYS_MAX);
                // Below the 3/4 load at which the table grows.
                (expected.saturating_mul(4) / 3 + 1)
                    .next_power_of_two()
                    .max(1024)
            })
            .max(1);
        DirtyMap {
            slots: vec![FREE; slots],
            len: 0,
            budget,
            superseded: Bitmap::default(),
            peak_bytes: slots * ENTRY_BYTES,
        }
    }

    /// Distinct keys held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if no key is mapped.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keys that may still be added (`usize::MAX` when unbounded).
    pub fn room(&self) -> usize {
        self.budget.map_or(usize::MAX, |b| b - self.len)
    }

    /// Bytes of the table now (24 a slot).
    pub fn table_bytes(&self) -> usize {
        self.slots.len() * ENTRY_BYTES
    }

    /// The most bytes the table held (a growth holds two tables for a moment).
    pub fn peak_bytes(&self) -> usize {
        self.peak_bytes
    }

    /// The positions replaced by a later position of the same digest.
    pub fn superseded(&self) -> &Bitmap {
        &self.superseded
    }

    /// The bitmap of superseded records, consuming the map.
    pub fn into_superseded(self) -> Bitmap {
        self.superseded
    }

    /// The home slot of `digest`: its high word (uniformly distributed) scaled to
    /// the table.
    fn home(&self, digest: Digest) -> usize {
        ((u128::from(digest[0]) * self.slots.len() as u128) >> 64) as usize
    }

    /// How far slot `i` is from the home of the digest it holds.
    fn distance(&self, i: usize) -> usize {
        let n = self.slots.len();
        (i + n - self.home(self.slots[i].digest)) % n
    }

    /// The slot holding `digest`, if any.
    fn find(&self, digest: Digest) -> Option<usize> {
        let n = self.slots.len();
        let mut i = self.home(digest);
        for dist in 0..n {
            let slot = &self.slots[i];
            if slot.position == EMPTY || self.distance(i) < dist {
                return None;
            }
            if slot.digest == digest {
                return Some(i);
            }
            i = if i + 1 == n { 0 } else { i + 1 };
        }
        None
    }

    /// True if the map holds `digest`.
    pub fn contains(&self, digest: Digest) -> bool {
        self.find(digest).is_some()
    }

    /// Records `digest` at `position` (ascending across calls). A new digest needs
    /// room ([`DirtyMap::room`]); the caller checks first.
    pub fn insert(&mut self, digest: Digest, position: i64) {
        assert!(position >= 0);
        if let Some(i) = self.find(digest) {
            self.replace(i, position);
            return;
        }
        assert!(self.room() > 0, "the offset map is full");
        assert!(self.len < self.slots.len());
        self.place(Slot { digest, position });
        self.len += 1;
        if self.budget.is_none() && self.len * 4 > self.slots.len() * 3 {
            self.grow();
        }
    }

    /// Robin Hood insertion of a digest known to be absent: a probe that is farther
    /// from home than the resident takes its slot, and the resident moves on.
    fn place(&mut self, mut slot: Slot) {
        let n = self.slots.len();
        let mut i = self.home(slot.digest);
        let mut dist = 0;
        loop {
            if self.slots[i].position == EMPTY {
                self.slots[i] = slot;
                return;
            }
            let resident = self.distance(i);
            if resident < dist {
                std::mem::swap(&mut self.slots[i], &mut slot);
                dist = resident;
            }
            i = if i + 1 == n { 0 } else { i + 1 };
            dist += 1;
        }
    }

    fn replace(&mut self, i: usize, position: i64) {
        let old = self.slots[i].position;
        assert!(old < position, "positions ascend");
        self.superseded
            .set(usize::try_from(old).expect("positions are >= 0"));
        self.slots[i].position = position;
    }

    fn grow(&mut self) {
        let doubled = vec![FREE; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        self.peak_bytes = self
            .peak_bytes
            .max((old.len() + self.slots.len()) * ENTRY_BYTES);
        for slot in old.into_iter().filter(|s| s.position != EMPTY) {
            self.place(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(k: u64) -> Digest {
        // Spread like a real digest: a multiplicative hash of k.
        [k.wrapping_mul(0x9E37_79B9_7F4A_7C15), k]
    }

    #[test]
    fn an_expected_count_sizes_an_unbounded_table_once() {
        let mut sized = DirtyMap::with_expected(None, 3_000);
        let mut grown = DirtyMap::new(None);
        assert_eq!(sized.table_bytes(), 4096 * ENTRY_BYTES);
        assert_eq!(grown.table_bytes(), 1024 * ENTRY_BYTES);
        for k in 0..3_000 {
            sized.insert(digest(k % 2_500), k as i64);
            grown.insert(digest(k % 2_500), k as i64);
        }
        // No growth for the sized one; both hold the same and mark the same.
        assert_eq!(sized.table_bytes(), 4096 * ENTRY_BYTES);
        assert_eq!(sized.peak_bytes(), sized.table_bytes());
        assert!(grown.table_bytes() >= 4096 * ENTRY_BYTES);
        assert_eq!(sized.len(), 2_500);
        assert_eq!(grown.len(), 2_500);
        for k in 0..3_000 {
            assert_eq!(sized.contains(digest(k)), k < 2_500);
            assert_eq!(
                sized.superseded().get(k as usize),
                grown.superseded().get(k as usize)
            );
        }
        // Past the estimate it still grows; a budget ignores the estimate.
        for k in 3_000..10_000 {
            sized.insert(digest(k), k as i64);
        }
        assert_eq!(sized.len(), 9_500);
        assert_eq!(
            DirtyMap::with_expected(Some(5), 1 << 20).table_bytes(),
            5 * ENTRY_BYTES
        );
        assert_eq!(
            DirtyMap::with_expected(None, usize::MAX).table_bytes(),
            (EXPECTED_KEYS_MAX * 4 / 3 + 1).next_power_of_two() * ENTRY_BYTES
        );
    }

    #[test]
    fn a_bounded_map_fills_exactly_to_its_budget() {
        let mut map = DirtyMap::new(Some(5));
        assert_eq!(map.table_bytes(), 5 * 24);
        for k in 0..5 {
            assert!(map.room() > 0);
            map.insert(digest(k), k as i64);
        }
        assert_eq!(map.room(), 0);
        assert_eq!(map.len(), 5);
        // Held keys still update when full; their old positions are superseded.
        map.insert(digest(2), 10);
        assert!(map.superseded().get(2));
        assert!(!map.superseded().get(3));
        assert!(map.contains(digest(4)));
        assert!(!map.contains(digest(99)));
        assert_eq!(map.peak_bytes(), 5 * 24);
    }

    #[test]
    fn an_unbounded_map_grows_and_keeps_every_key() {
        let mut map = DirtyMap::new(None);
        for p in 0..10_000i64 {
            map.insert(digest((p % 3_000) as u64), p);
        }
        assert_eq!(map.len(), 3_000);
        for k in 0..3_000 {
            assert!(map.contains(digest(k)));
        }
        assert!(!map.contains(digest(3_000)));
        // Every position but the last of each key is superseded.
        assert_eq!(map.superseded().count(0..10_000), 7_000);
        assert!(!map.superseded().get(9_999));
        assert!(map.peak_bytes() >= map.table_bytes());
    }

    #[test]
    fn a_full_table_answers_every_lookup() {
        let keys = 4_096;
        let mut map = DirtyMap::new(Some(keys));
        for k in 0..keys as u64 {
            map.insert(digest(k), k as i64);
        }
        assert_eq!(map.room(), 0);
        for k in 0..keys as u64 {
            assert!(map.contains(digest(k)), "{k}");
        }
        for k in keys as u64..2 * keys as u64 {
            assert!(!map.contains(digest(k)), "{k}");
        }
    }

    #[test]
    #[should_panic(expected = "full")]
    fn a_full_map_refuses_a_new_key() {
        let mut map = DirtyMap::new(Some(1));
        map.insert(digest(1), 0);
        map.insert(digest(2), 1);
    }
}

//! The bounded offset map (`dedupe_buffer_bytes`, either policy): key digest ->
//! latest position, in one open-addressing table of 24-byte slots (a 16-byte
//! digest and an 8-byte position, like Kafka's `SkimpyOffsetMap`).
//!
//! The table is allocated once with `dedupe_buffer_bytes / 24` slots and never
//! grows: the map can hold exactly as many keys as
//! `seglog_model::spec::CleanKnobs::key_budget` (the spec) says, and its memory is
//! within the budget by construction ([`Table::table_bytes`]). Robin Hood linear
//! probing (a resident closer to its home slot than the probe is to its own ends a
//! lookup) keeps lookups short up to a full table, where a plain linear probe for
//! an absent key would walk every slot.
//!
//! Every replaced position is marked in a bitmap (positions are dense ordinals from
//! 0), which the rewrite pass reads instead of looking every dirty key up again.

use crate::compaction::bitmap::Bitmap;

use super::offset_map::{Digest, ENTRY_BYTES};

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
pub struct Table {
    slots: Vec<Slot>,
    len: usize,
    /// The most keys it holds (a table of no key still has a slot).
    budget: usize,
    superseded: Bitmap,
}

impl Table {
    /// A table for at most `keys` keys (one slot each, at least one).
    pub fn new(keys: usize) -> Table {
        Table {
            slots: vec![FREE; keys.max(1)],
            len: 0,
            budget: keys,
            superseded: Bitmap::default(),
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

    /// Keys that may still be added.
    pub fn room(&self) -> usize {
        self.budget - self.len
    }

    /// Bytes of the table now (24 a slot).
    pub fn table_bytes(&self) -> usize {
        self.slots.len() * ENTRY_BYTES
    }

    /// The most bytes the table held: the table, allocated once.
    pub fn peak_bytes(&self) -> usize {
        self.table_bytes()
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
    /// room ([`Table::room`]); the caller checks first.
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(k: u64) -> Digest {
        // Spread like a real digest: a multiplicative hash of k.
        [k.wrapping_mul(0x9E37_79B9_7F4A_7C15), k]
    }

    #[test]
    fn a_table_fills_exactly_to_its_budget() {
        let mut map = Table::new(5);
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
    fn a_full_table_answers_every_lookup() {
        let keys = 4_096;
        let mut map = Table::new(keys);
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
        let mut map = Table::new(1);
        map.insert(digest(1), 0);
        map.insert(digest(2), 1);
    }
}

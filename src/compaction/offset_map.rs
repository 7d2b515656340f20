//! The latest-offset map: for every key, the highest offset it was written at.
//!
//! Entries are 24 bytes, like Kafka's `SkimpyOffsetMap`: a 16-byte digest of the key
//! (BLAKE3 truncated to 128 bits) and an 8-byte offset. They live in one `Vec`,
//! sorted by digest, with one entry per distinct digest; lookups are binary searches.
//!
//! Building appends entries and, whenever the vector is full, sorts it and keeps
//! the highest offset per digest before growing, so the peak stays below about
//! twice the final size. [`OffsetMap::peak_bytes`] reports the peak honestly.
//!
//! Collisions: two distinct keys share an entry only if their 128-bit digests
//! collide. For `n` distinct keys the probability is at most `n^2 / 2^129`
//! (birthday bound): about 1.5e-21 for a billion keys. A collision would make
//! the older key's latest record look obsolete, so we rely on it being
//! astronomically unlikely (docs/design.md section 6).

use std::mem::size_of;

/// Bytes of key digest per entry.
pub const DIGEST_BYTES: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    digest: [u8; DIGEST_BYTES],
    offset: i64,
}

/// Bytes per map entry.
pub const ENTRY_BYTES: usize = size_of::<Entry>();
const _: () = assert!(ENTRY_BYTES == 24);

/// Entries allocated before the first sort-and-dedup.
const INITIAL_CAPACITY: usize = 1 << 14;

/// Latest offset per key digest.
#[derive(Debug, Default)]
pub struct OffsetMap {
    entries: Vec<Entry>,
    /// True when `entries` is sorted by digest and deduplicated.
    finished: bool,
    peak_bytes: usize,
}

/// The 128-bit digest of a key.
pub fn digest(key: &[u8]) -> [u8; DIGEST_BYTES] {
    let hash = blake3::hash(key);
    let mut out = [0u8; DIGEST_BYTES];
    out.copy_from_slice(&hash.as_bytes()[..DIGEST_BYTES]);
    out
}

impl OffsetMap {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `key` was written at `offset`. Offsets may come in any order;
    /// the highest one wins.
    pub fn insert(&mut self, key: &[u8], offset: i64) {
        self.insert_digest(digest(key), offset);
    }

    fn insert_digest(&mut self, digest: [u8; DIGEST_BYTES], offset: i64) {
        if self.entries.len() == self.entries.capacity() {
            self.dedup();
            // Grow only when deduplication freed less than half.
            let needed = (self.entries.len() * 2).max(INITIAL_CAPACITY);
            if self.entries.capacity() < needed {
                self.entries.reserve_exact(needed - self.entries.len());
            }
            self.note_peak();
        }
        self.finished = false;
        self.entries.push(Entry { digest, offset });
    }

    /// Sorts by digest (highest offset first within a digest) and keeps one entry per digest.
    fn dedup(&mut self) {
        self.entries
            .sort_unstable_by(|a, b| a.digest.cmp(&b.digest).then(b.offset.cmp(&a.offset)));
        self.entries
            .dedup_by(|later, kept| later.digest == kept.digest);
        self.finished = true;
    }

    fn note_peak(&mut self) {
        self.peak_bytes = self.peak_bytes.max(self.entries.capacity() * ENTRY_BYTES);
    }

    /// Ends the build: deduplicates and releases spare capacity. Lookups need this.
    pub fn finish(&mut self) {
        self.note_peak();
        if !self.finished {
            self.dedup();
        }
        self.entries.shrink_to_fit();
        debug_assert!(self.entries.windows(2).all(|w| w[0].digest < w[1].digest));
    }

    /// The latest offset recorded for `key`. Panics if [`OffsetMap::finish`] was not called.
    pub fn latest(&self, key: &[u8]) -> Option<i64> {
        assert!(self.finished, "OffsetMap::finish must run before lookups");
        let digest = digest(key);
        self.entries
            .binary_search_by(|e| e.digest.cmp(&digest))
            .ok()
            .map(|i| self.entries[i].offset)
    }

    /// Distinct keys (digests) in the map.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes the map holds now.
    pub fn resident_bytes(&self) -> usize {
        self.entries.capacity() * ENTRY_BYTES
    }

    /// Most bytes the map held at any time during the build.
    pub fn peak_bytes(&self) -> usize {
        self.peak_bytes.max(self.resident_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_offset_wins_in_any_order() {
        let mut map = OffsetMap::new();
        map.insert(b"a", 5);
        map.insert(b"b", 1);
        map.insert(b"a", 2);
        map.insert(b"a", 9);
        map.insert(b"c", 0);
        map.finish();
        assert_eq!(map.latest(b"a"), Some(9));
        assert_eq!(map.latest(b"b"), Some(1));
        assert_eq!(map.latest(b"c"), Some(0));
        assert_eq!(map.latest(b"d"), None);
        assert_eq!(map.len(), 3);
    }

    #[test]
    fn many_keys_stay_at_24_bytes_each() {
        let keys = 100_000u32;
        let mut map = OffsetMap::new();
        for round in 0..2i64 {
            for k in 0..keys {
                map.insert(&k.to_be_bytes(), round * i64::from(keys) + i64::from(k));
            }
        }
        map.finish();
        assert_eq!(map.len(), keys as usize);
        assert_eq!(map.resident_bytes(), keys as usize * ENTRY_BYTES);
        assert!(
            map.peak_bytes() <= 3 * keys as usize * ENTRY_BYTES,
            "{}",
            map.peak_bytes()
        );
        for k in (0..keys).step_by(997) {
            assert_eq!(map.latest(&k.to_be_bytes()), Some(i64::from(keys + k)));
        }
    }

    #[test]
    fn distinct_keys_get_distinct_digests() {
        assert_ne!(digest(b""), digest(b"\0"));
        assert_ne!(digest(b"ab"), digest(b"ba"));
    }
}

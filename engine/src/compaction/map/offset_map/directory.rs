//! A finished map's directory: where each slot of the digests' top bits starts
//! in its sorted entries.

use std::mem::size_of;

use super::{prefix, Digest, Entry};

/// The slots of a finished map's sorted entries: `starts[b]` is the index of the
/// first entry whose digest's top `bits` bits are `b` or more (`2^bits + 1`
/// indices, the last one the entry count). With 2 to 4 entries a slot on average
/// (uniform digests), a lookup reads one index and searches a cache line or two,
/// where a search of all the entries takes a miss per probe. Empty (lookups search
/// every entry) for a map of `u32::MAX` entries or more.
#[derive(Debug, Default)]
pub(super) struct Directory {
    starts: Vec<u32>,
    bits: u32,
}

impl Directory {
    /// The directory of `entries` (sorted by digest).
    pub(super) fn of(entries: &[Entry]) -> Directory {
        let n = entries.len();
        let Ok(count) = u32::try_from(n) else {
            return Directory::default();
        };
        // 2^bits in [n/4, n/2): 2 to 4 entries a slot, at most 2 bytes a key.
        let bits = n.next_power_of_two().trailing_zeros().saturating_sub(2);
        let mut directory = Directory {
            starts: Vec::with_capacity((1usize << bits) + 1),
            bits,
        };
        let mut i = 0usize;
        for slot in 0..=(1usize << bits) {
            while i < n && directory.slot(&entries[i].digest) < slot {
                i += 1;
            }
            directory.starts.push(i as u32);
        }
        debug_assert_eq!(directory.starts.last(), Some(&count));
        directory
    }

    /// The slot of `digest`: its top `bits` bits.
    #[inline]
    fn slot(&self, digest: &Digest) -> usize {
        prefix(digest).checked_shr(64 - self.bits).unwrap_or(0) as usize
    }

    /// The entries that may hold `digest`, of `n`.
    #[inline]
    pub(super) fn range(&self, digest: &Digest, n: usize) -> std::ops::Range<usize> {
        let slot = self.slot(digest);
        match (self.starts.get(slot), self.starts.get(slot + 1)) {
            (Some(&lo), Some(&hi)) => lo as usize..hi as usize,
            _ => 0..n,
        }
    }

    /// Bytes the directory holds.
    pub(super) fn bytes(&self) -> usize {
        self.starts.capacity() * size_of::<u32>()
    }
}

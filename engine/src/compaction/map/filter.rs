//! A filter of the dirty section's keys by their stable hashes (the key summaries'
//! [`key_hash`]): one bit per hash, 16 bits a key. A clean record whose key's bit
//! is clear is not in the dirty section, so the incremental pass's lookups (its
//! lookup pass, or the rewrite that looks the clean section up:
//! [`super::Fate::Lookups`]) skip the map's digest and search for it; a set bit
//! (the key's, or about one in 16 others) asks the map. Equal keys have
//! equal hashes, so the filter never hides a mapped key, whatever the keys.

use crate::format::key_summary::key_hash;

/// Bits per key.
const BITS_PER_KEY: usize = 16;

/// One bit per stable hash of the mapped keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFilter {
    words: Vec<u64>,
    /// Bits - 1 (a power of two).
    mask: u64,
}

impl KeyFilter {
    /// The filter of the keys whose stable hashes are `hashes` (any order, repeats
    /// allowed).
    pub fn of(hashes: &[u64]) -> KeyFilter {
        let bits = (hashes.len() * BITS_PER_KEY).next_power_of_two().max(64);
        let mut filter = KeyFilter {
            words: vec![0; bits / 64],
            mask: bits as u64 - 1,
        };
        for &hash in hashes {
            let bit = hash & filter.mask;
            filter.words[(bit / 64) as usize] |= 1 << (bit % 64);
        }
        filter
    }

    /// False only if no mapped key is `key`.
    #[inline]
    pub fn may_hold(&self, key: &[u8]) -> bool {
        self.may_hold_hash(key_hash(key))
    }

    /// [`KeyFilter::may_hold`] of the key whose stable hash is `hash`.
    #[inline]
    pub fn may_hold_hash(&self, hash: u64) -> bool {
        let bit = hash & self.mask;
        self.words[(bit / 64) as usize] & (1 << (bit % 64)) != 0
    }

    /// Bytes of the filter.
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_every_key_it_was_made_of_and_few_others() {
        let keys: Vec<Vec<u8>> = (0..10_000)
            .map(|k| format!("key-{k}").into_bytes())
            .collect();
        let hashes: Vec<u64> = keys.iter().map(|k| key_hash(k)).collect();
        let filter = KeyFilter::of(&hashes);
        assert!(keys.iter().all(|k| filter.may_hold(k)));
        let others = (10_000..110_000)
            .filter(|k| filter.may_hold(format!("key-{k}").as_bytes()))
            .count();
        // One bit in at least 16 is set: about 6% (1 - e^(-1/16)) pass, 4% to 8% here.
        assert!((2_000..8_000).contains(&others), "{others} of 100000 pass");
        assert!(filter.bytes() <= 2 * 16_384 * 2);
        let empty = KeyFilter::of(&[]);
        assert!(!empty.may_hold(b"key-0"));
    }
}

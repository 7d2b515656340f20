//! The superseded positions a map build leaves, and what the map held: what a
//! seed pass's rewrite asks instead of looking every key up again.

use crate::compaction::bitmap::Bitmap;

/// A tracked position as a bit index.
pub(super) fn bit_index(position: i64) -> usize {
    usize::try_from(position).expect("tracked positions are >= 0")
}

/// The superseded positions of a [`super::OffsetMap::tracking_superseded`] build
/// ([`super::OffsetMap::into_superseded`]), and what the map held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superseded {
    bits: Bitmap,
    /// Distinct keys (digests) the map held.
    pub keys: usize,
    /// Bytes of the map's entries once built: 24 per key (the 1024 build buckets'
    /// headers, a fixed 24 KiB, count in the peak).
    pub map_bytes: usize,
    /// Most bytes the map held while being built.
    pub map_bytes_peak: usize,
}

impl Superseded {
    /// The superseded positions `bits` of a map that held `keys` keys in
    /// `map_bytes` bytes, `map_bytes_peak` at most while built (the incremental
    /// pass's, whose positions run over the clean and the dirty section).
    pub fn from_parts(bits: Bitmap, keys: usize, map_bytes: usize, map_bytes_peak: usize) -> Self {
        Superseded {
            bits,
            keys,
            map_bytes,
            map_bytes_peak,
        }
    }

    /// The superseded positions' bits.
    pub fn bits(&self) -> &Bitmap {
        &self.bits
    }

    /// Whether `position` was superseded: its key (digest) was also inserted at a
    /// higher position.
    pub fn is_superseded(&self, position: i64) -> bool {
        self.bits.get(bit_index(position))
    }

    /// How many positions of `positions` were superseded, a word at a time.
    pub fn count(&self, positions: std::ops::Range<i64>) -> usize {
        self.bits
            .count(bit_index(positions.start)..bit_index(positions.end))
    }

    /// Bytes of the bitmap (one bit per position).
    pub fn bytes(&self) -> usize {
        self.bits.bytes()
    }
}

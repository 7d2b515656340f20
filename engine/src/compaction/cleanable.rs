//! How dirty a log is: the cleaner's view of its clean point and dirty ratio
//! (`Log::cleanable` computes it).

#[cfg(feature = "serde")]
use serde::Serialize;

/// How dirty a log is (Kafka's `LogToClean`), by whole closed segments: one that
/// ends at or before the clean point is clean; a later one below the first
/// uncleanable offset is cleanable. The spec's `Cleanable` computes the same.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct Cleanable {
    /// The log's clean point (0 when it was never cleaned).
    pub clean_point: i64,
    /// The active segment's base, or (with a lag) the base of the first closed
    /// segment past the clean point holding a timestamp newer than `now - lag`,
    /// held at the base of the segment holding the last stable offset (an open
    /// transaction's segment and every later one are not cleanable).
    pub first_uncleanable_offset: i64,
    /// Bytes of the closed segments at or below the clean point.
    pub clean_bytes: u64,
    /// Bytes of the closed segments past the clean point, below the first
    /// uncleanable offset.
    pub cleanable_bytes: u64,
    /// `cleanable_bytes / (clean_bytes + cleanable_bytes)`, 0 for no bytes.
    pub dirty_ratio: f64,
}

impl Cleanable {
    /// Kafka's trigger: something to clean, and a ratio above `min_cleanable_dirty_ratio`.
    pub fn should_clean(&self, min_cleanable_dirty_ratio: f64) -> bool {
        self.cleanable_bytes > 0 && self.dirty_ratio > min_cleanable_dirty_ratio
    }
}

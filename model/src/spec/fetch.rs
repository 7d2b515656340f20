//! Batch-level reads: which whole batches `fetch` and `read_raw` return, and where
//! the next fetch starts (docs/design.md section 1, "Read").
//!
//! A record-level read cannot tell a batch that ends in a compaction gap from the
//! batch after it: both hold no record below the gap's end. A batch-level read can,
//! and it is where an engine that takes a batch's end from its last stored record
//! (instead of `baseOffset + lastOffsetDelta`) goes wrong: it skips the batch, and
//! `next_offset` comes out too small.

use serde::{Deserialize, Serialize};

use super::{Batch, SpecError, SpecLog};

/// What a batch-level read returns: whole batches as stored, and the offset to read
/// from next (the last batch's `last_offset + 1`, or `from` when there is none).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fetched {
    pub batches: Vec<Batch>,
    pub next_offset: i64,
}

impl SpecLog {
    /// `Log::fetch(from, max_bytes)`: the whole batches of **one** segment (the first
    /// holding a batch whose last offset is >= `from`) whose last offset is >= `from`,
    /// the first always, then the next ones while the total stays within `max_bytes`.
    /// A batch that ends in a compaction gap at or after `from` is returned even if
    /// all its stored records are below `from`. Out of `[log_start_offset,
    /// next_offset]` is `OffsetOutOfRange`.
    pub fn fetch(&self, from: i64, max_bytes: u64) -> Result<Fetched, SpecError> {
        self.check_from(from)?;
        let segment = self
            .segments
            .iter()
            .find(|s| s.batches.iter().any(|b| b.last_offset() >= from));
        let candidates = segment.map_or(&[][..], |s| &s.batches[..]);
        Ok(take_batches(candidates.iter(), from, max_bytes))
    }

    /// `Log::read_raw(from, max_bytes)`: the batches `fetch` selects, across segments:
    /// every batch whose last offset is >= `from`, the first always, then the next
    /// ones while the total stays within `max_bytes`.
    pub fn read_raw(&self, from: i64, max_bytes: u64) -> Result<Fetched, SpecError> {
        self.check_from(from)?;
        Ok(take_batches(self.batches(), from, max_bytes))
    }

    fn check_from(&self, from: i64) -> Result<(), SpecError> {
        if from < self.log_start_offset() || from > self.next_offset() {
            return Err(SpecError::OffsetOutOfRange {
                from,
                log_start_offset: self.log_start_offset(),
                next_offset: self.next_offset(),
            });
        }
        Ok(())
    }
}

/// The batches of `batches` ending at or after `from`: the first, then while the
/// total fits `max_bytes` (stopping at the first that does not).
fn take_batches<'a>(
    batches: impl Iterator<Item = &'a Batch>,
    from: i64,
    max_bytes: u64,
) -> Fetched {
    let mut taken: Vec<Batch> = Vec::new();
    let mut total_bytes = 0;
    for batch in batches.filter(|b| b.last_offset() >= from) {
        let bytes = batch.bytes();
        if !taken.is_empty() && total_bytes + bytes > max_bytes {
            break;
        }
        total_bytes += bytes;
        taken.push(batch.clone());
    }
    let next_offset = taken.last().map_or(from, |b| b.last_offset() + 1);
    Fetched {
        batches: taken,
        next_offset,
    }
}

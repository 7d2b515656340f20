//! Batches another Kafka-format writer left in the active segment.
//!
//! This engine writes batches with consecutive offsets and no gaps in the active
//! segment, but a log it opens may have been written elsewhere: a replica copied
//! from a broker whose cleaner already removed records, including the last ones of
//! a batch (`lastOffsetDelta` > the last stored record's delta), or a batch whose
//! base offset skips offsets a removed batch held. The log must keep those batches'
//! ends as written: `next_offset` is the last batch's `baseOffset + lastOffsetDelta
//! + 1`, and the next append starts there.

use super::{check_batch, Batch, SpecError, SpecLog};

impl SpecLog {
    /// Writes `batch` at the end of the active segment as another writer would:
    /// no roll (the active segment may exceed `segment_bytes`), the batch as given.
    /// It must start at or after `next_offset` and be well formed (records in
    /// offset order inside `[base_offset, last_offset]`, `max_timestamp` their max).
    pub fn append_foreign(&mut self, batch: Batch) -> Result<(i64, i64), SpecError> {
        check_batch(&batch, self.next_offset()).map_err(SpecError::InvalidArgument)?;
        let range = (batch.base_offset, batch.last_offset());
        self.segments
            .last_mut()
            .expect("a log always has an active segment")
            .batches
            .push(batch);
        Ok(range)
    }
}

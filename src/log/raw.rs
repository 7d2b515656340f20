//! [`Log::append_batches`]: producer-encoded batches appended as a broker appends a
//! produce request, without re-encoding (docs/design.md section 1c).

use crate::error::Result;
use crate::format::produce;
use crate::format::TimestampType;
use crate::segment::BatchFacts;

use super::{AppendInfo, Log};

impl Log {
    /// Appends one or more producer-encoded v2 record batches (`bytes`: the batches
    /// back to back, as a produce request carries them) at `next_offset`.
    ///
    /// Every batch is checked first by Kafka's produce-request rules
    /// ([`crate::format::produce`]: magic 2, CRC-32C, length, record count and
    /// offset deltas `0..count`, timestamps >= -1, a known codec, no control bit, at
    /// most [`LogConfig::max_batch_bytes`](super::LogConfig::max_batch_bytes));
    /// one that breaks a rule rejects the whole call with
    /// [`Error::InvalidBatch`](crate::Error::InvalidBatch) naming the batch and the
    /// rule, nothing is stored and the log stays usable. Then each batch gets its
    /// offsets by its `baseOffset` written in place (and `partitionLeaderEpoch`
    /// -1), both outside the CRC; a LogAppendTime log stamps `maxTimestamp` with its
    /// clock and recomputes the CRC; the bytes are otherwise stored as they came
    /// (the producer's codec kept, whatever [`LogConfig::compression`](super::LogConfig::compression)
    /// says), rolling between batches as [`Log::append`] rolls. Returns the first
    /// and last offset of the call. Not durable until [`Log::flush`]; an IO error
    /// poisons the log (a power loss may then keep a prefix of the batches, each
    /// whole or not at all).
    pub fn append_batches(&mut self, bytes: &[u8]) -> Result<AppendInfo> {
        self.check_writable()?;
        let max_batch_bytes = usize::try_from(self.config.max_batch_bytes).unwrap_or(usize::MAX);
        let batches = produce::check(bytes, max_batch_bytes)?;
        let stamp = (self.config.timestamp_type == TimestampType::LogAppendTime)
            .then(|| self.clock.now_ms());
        let base_offset = self.next_offset();
        let mut owned = std::mem::take(&mut self.scratch);
        owned.clear();
        owned.extend_from_slice(bytes);
        let mut facts = Vec::with_capacity(batches.len());
        let mut next = base_offset;
        for batch in &batches {
            let records = batch.record_count as i64;
            let region = owned
                .get_mut(batch.position..batch.position + batch.size)
                .expect("check covered every byte");
            let (max_timestamp, _) =
                produce::assign(region, next, batch.max_record_timestamp, stamp);
            facts.push(BatchFacts {
                base_offset: next,
                last_offset: next + records - 1,
                size_bytes: batch.size as u64,
                records: records as u64,
                max_timestamp,
            });
            next += records;
        }
        let result = self.append_encoded_all(&facts, &owned);
        self.scratch = owned;
        if result.is_err() {
            self.poisoned = true;
        }
        result?;
        assert_eq!(self.next_offset(), next);
        Ok(AppendInfo {
            base_offset,
            last_offset: next - 1,
        })
    }
}

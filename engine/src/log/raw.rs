//! [`Log::append_batches`]: producer-encoded batches appended as a broker appends a
//! produce request, without re-encoding (docs/design.md section 1c).

use crate::error::Result;
use crate::format::batch::HEADER_LEN;
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
        // The lists are kept between calls (a request of one batch, the common
        // case, then allocates nothing).
        let mut batches = std::mem::take(&mut self.produced_scratch);
        let checked = produce::check_into(bytes, max_batch_bytes, &mut batches);
        if let Err(rejection) = checked {
            self.produced_scratch = batches;
            return Err(rejection.into());
        }
        let stamp = (self.config.timestamp_type == TimestampType::LogAppendTime)
            .then(|| self.clock.now_ms());
        let base_offset = self.next_offset();
        let total = batches.iter().map(|b| b.record_count).sum::<usize>();
        if let Err(e) = super::write::check_offsets(base_offset, total) {
            self.produced_scratch = batches;
            return Err(e);
        }
        // Only the headers change (`produce::assign_header`): each batch is written
        // as its rewritten header, copied here, and its records straight from
        // `bytes` (one `writev` per run of batches), never copying the records.
        let mut headers = std::mem::take(&mut self.scratch);
        headers.clear();
        headers.resize(batches.len() * HEADER_LEN, 0);
        let mut facts = std::mem::take(&mut self.facts_scratch);
        facts.clear();
        let mut next = base_offset;
        for (batch, header) in batches.iter().zip(headers.chunks_exact_mut(HEADER_LEN)) {
            let records = batch.record_count as i64;
            let (produced_header, produced_records) = bytes
                .get(batch.position..batch.position + batch.size)
                .expect("check covered every byte")
                .split_at(HEADER_LEN);
            header.copy_from_slice(produced_header);
            let (max_timestamp, _) = produce::assign_header(
                header,
                produced_records,
                next,
                batch.max_record_timestamp,
                stamp,
            );
            facts.push(BatchFacts {
                base_offset: next,
                last_offset: next + records - 1,
                size_bytes: batch.size as u64,
                records: records as u64,
                max_timestamp,
            });
            next += records;
        }
        let records_of = |batch: &produce::ProducedBatch| {
            bytes
                .get(batch.position + HEADER_LEN..batch.position + batch.size)
                .expect("check covered every byte")
        };
        let one: [&[u8]; 2];
        let many: Vec<&[u8]>;
        let pieces: &[&[u8]] = match (batches.as_slice(), headers.as_slice()) {
            ([batch], header) => {
                one = [header, records_of(batch)];
                &one
            }
            _ => {
                many = batches
                    .iter()
                    .zip(headers.chunks_exact(HEADER_LEN))
                    .flat_map(|(batch, header)| [header, records_of(batch)])
                    .collect();
                &many
            }
        };
        let result = self.append_encoded_all(&facts, pieces, 2);
        self.scratch = headers;
        self.produced_scratch = batches;
        self.facts_scratch = facts;
        if result.is_err() {
            self.poisoned = true;
        }
        result?;
        assert_eq!(self.next_offset(), next);
        self.txn_observe_appended(base_offset)?;
        Ok(AppendInfo {
            base_offset,
            last_offset: next - 1,
        })
    }
}

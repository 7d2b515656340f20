//! [`ForeignBatch`]: a batch another Kafka-format writer left at the end of the
//! active segment, with records missing at its end or in its middle.
//!
//! This engine only ever appends gap-free batches to the active segment, but a log
//! directory it opens may have been written elsewhere: a replica copied from a
//! broker whose cleaner removed records, the last ones of a batch included (its
//! `lastOffsetDelta` is then past the last stored record's delta), or a whole batch
//! (the next batch's base offset skips offsets). Such a log must open with
//! `next_offset` = the last batch's `baseOffset + lastOffsetDelta + 1`, return
//! those batches from a fetch inside their gap, and append after the gap. The step
//! closes the log, appends the encoded batch to the active `.log` through the
//! [`FileSystem`](seglog::fs::FileSystem) (and syncs it, so the write is durable),
//! and reopens; the spec takes the same batch through `SpecLog::append_foreign`.

use serde::Serialize;

use seglog_model::spec::{Batch, Rec, SpecLog};

use crate::workload::{new_records, RecordSpec};
use seglog::format::{filename, RecordBatch};
use seglog::log::Log;

/// The batch another writer wrote: `records` at consecutive offsets from the log's
/// `next_offset + gap`, of which only those with `kept` set are still stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForeignBatch {
    /// Offsets skipped before the batch (a batch removed elsewhere).
    pub gap: u8,
    /// The records as first written (`lastOffsetDelta` = their count - 1).
    pub records: Vec<RecordSpec>,
    /// Which records are still stored; at least one is (a batch with none is gone).
    pub kept: Vec<bool>,
}

impl std::fmt::Display for ForeignBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let records: Vec<String> = self
            .records
            .iter()
            .zip(&self.kept)
            .map(|(r, kept)| {
                let text = serde_json::to_string(r).unwrap_or_else(|_| format!("{r:?}"));
                if *kept {
                    text
                } else {
                    format!("(removed {text})")
                }
            })
            .collect();
        write!(f, "foreign_batch gap {} [{}]", self.gap, records.join(", "))
    }
}

impl ForeignBatch {
    /// The batch as the spec stores it, at `next_offset + gap`.
    pub(super) fn spec_batch(&self, next_offset: i64) -> Batch {
        let base_offset = next_offset + i64::from(self.gap);
        let records: Vec<Rec> = self
            .records
            .iter()
            .zip(&self.kept)
            .zip(base_offset..)
            .filter(|((_, kept), _)| **kept)
            .map(|((r, _), offset)| Rec {
                offset,
                key: r.key.as_ref().map(|k| k.as_bytes().to_vec()),
                value: r.value.as_ref().map(|v| v.as_bytes().to_vec()),
                timestamp: r.ts,
                create_timestamp: None,
            })
            .collect();
        Batch {
            base_offset,
            last_offset_delta: i32::try_from(self.records.len() - 1).expect("a small batch"),
            control: false,
            base_timestamp: self.records[0].ts,
            max_timestamp: records.iter().map(|r| r.timestamp).max().unwrap_or(-1),
            records,
            codec: 0,
            log_append_time: false,
            delete_horizon: None,
            producer_id: -1,
            producer_epoch: -1,
            transactional: false,
        }
    }

    /// The encoded batch as the engine's file holds it, at `next_offset + gap`.
    fn encoded(&self, next_offset: i64) -> Result<Vec<u8>, String> {
        let base_offset = next_offset + i64::from(self.gap);
        let built = RecordBatch::build(base_offset, &new_records(&self.records));
        let mut kept = self.kept.iter();
        let stored = built
            .retain(|_| kept.next().copied().unwrap_or(false))
            .ok_or("a foreign batch keeps at least one record")?;
        Ok(stored.encode())
    }
}

/// Closes `log`, writes `batch` at the end of its active segment's `.log` (synced)
/// and applies it to `spec_log`. The caller reopens the log.
pub fn write(log: Log, batch: &ForeignBatch, spec_log: &mut SpecLog) -> Result<(), String> {
    if batch.records.is_empty() || batch.records.len() != batch.kept.len() {
        return Err(format!("malformed foreign batch {batch}"));
    }
    let fs = log.fs().clone();
    let path = log.dir().join(filename::build(
        log.segments()
            .last()
            .expect("an active segment")
            .base_offset,
        filename::LOG_SUFFIX,
    ));
    let bytes = batch.encoded(log.next_offset())?;
    log.close().map_err(|e| format!("close failed: {e}"))?;
    fs.append(&path, &bytes)
        .and_then(|()| fs.sync_file(&path))
        .map_err(|e| format!("writing the foreign batch to {}: {e}", path.display()))?;
    spec_log
        .append_foreign(batch.spec_batch(spec_log.next_offset()))
        .map_err(|e| format!("the spec refused the foreign batch: {e}"))?;
    Ok(())
}

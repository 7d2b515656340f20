//! Compaction: the latest-offset map over the whole log, the keep rule for closed
//! batches, the grouping of compacted source segments into output segments, and the
//! full compaction, which the cleaner's pass [`SpecLog::compact`] is checked against.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Batch, Rec, SpecError, SpecLog, SpecSegment};

/// What a compaction changed in the closed region.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CompactionSummary {
    pub records_before: u64,
    pub records_after: u64,
    pub segments_before: u64,
    pub segments_after: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Keyless records the pass dropped (the `kafka` policy; always 0 for `seed`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub keyless_dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Latest offset of every key, over all segments (active included), keyed records of
/// non-control batches only.
pub fn latest_offsets(log: &SpecLog) -> BTreeMap<Vec<u8>, i64> {
    let mut latest = BTreeMap::new();
    for batch in log.batches().filter(|b| !b.control) {
        for rec in &batch.records {
            if let Some(key) = &rec.key {
                latest.insert(key.clone(), rec.offset);
            }
        }
    }
    latest
}

/// The latest tombstones of the closed region: the records compaction keeps or
/// drops by their age alone (the generators aim `delete_retention_ms` at them).
pub fn latest_closed_tombstones(log: &SpecLog) -> Vec<&Rec> {
    let latest = latest_offsets(log);
    log.closed_segments()
        .iter()
        .flat_map(|s| &s.batches)
        .filter(|b| !b.control)
        .flat_map(|b| &b.records)
        .filter(|r| r.value.is_none())
        .filter(|r| r.key.as_ref().and_then(|k| latest.get(k)) == Some(&r.offset))
        .collect()
}

/// The one rule of a tombstone's (and a marker's) age: `now - timestamp`, exact
/// (i128: no overflow, no saturation), past `delete_retention_ms`. The engine's
/// `Horizon::expired` (`engine/src/compaction/rules/seed.rs`) is the same.
pub fn past_grace(timestamp: i64, now: i64, delete_retention_ms: i64) -> bool {
    i128::from(now) - i128::from(timestamp) > i128::from(delete_retention_ms)
}

/// True if a kept latest tombstone is old enough to drop.
pub fn tombstone_expired(rec: &Rec, now: i64, delete_retention_ms: i64) -> bool {
    rec.value.is_none() && past_grace(rec.timestamp, now, delete_retention_ms)
}

/// The keep rule for one record of a closed data batch.
pub fn keeps(
    rec: &Rec,
    latest: &BTreeMap<Vec<u8>, i64>,
    now: i64,
    delete_retention_ms: i64,
) -> bool {
    match &rec.key {
        None => true,
        Some(key) => {
            latest.get(key) == Some(&rec.offset)
                && !tombstone_expired(rec, now, delete_retention_ms)
        }
    }
}

pub(super) fn compact_batch(batch: &Batch, keep: &impl Fn(&Batch, &Rec) -> bool) -> Option<Batch> {
    // An empty batch (a kafka pass's, `kafka_txn` rule 5) has no record to drop:
    // the seed rules keep it as they keep a control batch.
    if batch.control || batch.records.is_empty() {
        return Some(batch.clone());
    }
    let records: Vec<Rec> = batch
        .records
        .iter()
        .filter(|r| keep(batch, r))
        .cloned()
        .collect();
    let max_timestamp = records.iter().map(|r| r.timestamp).max()?;
    Some(Batch {
        max_timestamp,
        records,
        ..batch.clone()
    })
}

/// Rewrites the closed region of `log` keeping the records `keep` says (control
/// batches always), grouping the compacted source segments greedily by bytes. The
/// active segment, `next_offset` and `log_start_offset` are unchanged.
pub(super) fn compact_closed(
    log: &mut SpecLog,
    group_bytes_max: u64,
    keep: impl Fn(&Batch, &Rec) -> bool,
) -> CompactionSummary {
    compact_closed_batches(log, group_bytes_max, |b| compact_batch(b, &keep))
}

/// [`compact_closed`] with the whole batch decided by `rewrite` (`None`: the batch
/// goes), which the transaction rules use to remove markers and aborted batches.
pub(super) fn compact_closed_batches(
    log: &mut SpecLog,
    group_bytes_max: u64,
    rewrite: impl Fn(&Batch) -> Option<Batch>,
) -> CompactionSummary {
    let closed = log.closed_segments();
    let mut summary = CompactionSummary {
        segments_before: closed.len() as u64,
        records_before: closed.iter().map(SpecSegment::record_count).sum(),
        bytes_before: closed.iter().map(SpecSegment::bytes).sum(),
        ..CompactionSummary::default()
    };
    let mut output: Vec<SpecSegment> = Vec::new();
    let mut group_bytes = 0;
    for source in closed {
        let batches: Vec<Batch> = source.batches.iter().filter_map(&rewrite).collect();
        let bytes: u64 = batches.iter().map(Batch::bytes).sum();
        match output.last_mut() {
            Some(group) if group_bytes + bytes <= group_bytes_max => {
                group.batches.extend(batches);
                group_bytes += bytes;
            }
            _ => {
                output.push(SpecSegment {
                    base_offset: source.base_offset,
                    batches,
                });
                group_bytes = bytes;
            }
        }
    }
    summary.segments_after = output.len() as u64;
    summary.records_after = output.iter().map(SpecSegment::record_count).sum();
    summary.bytes_after = output.iter().map(SpecSegment::bytes).sum();
    let (start_before, next_before) = (log.log_start_offset(), log.next_offset());
    let active = log.segments.pop().expect("active segment");
    output.push(active);
    log.segments = output;
    assert_eq!(log.log_start_offset(), start_before);
    assert_eq!(log.next_offset(), next_before);
    summary
}

impl SpecLog {
    /// The full compaction: the latest-offset map over the whole log (the clean point
    /// ignored), then the keep rule for every closed record. The clean point moves to
    /// the active segment.
    pub fn compact_full(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
    ) -> Result<CompactionSummary, SpecError> {
        if delete_retention_ms < 0 {
            return Err(SpecError::InvalidArgument(format!(
                "delete_retention_ms {delete_retention_ms} < 0"
            )));
        }
        let group_bytes_max = segment_bytes.unwrap_or(self.segment_bytes);
        if group_bytes_max == 0 {
            return Err(SpecError::InvalidArgument("segment_bytes 0".into()));
        }
        if self.closed_segments().is_empty() {
            return Ok(CompactionSummary::default());
        }
        if self.seed_txn_applies() {
            return Ok(self.clean_seed_txn(now, delete_retention_ms, group_bytes_max));
        }
        let latest = latest_offsets(self);
        let summary = compact_closed(self, group_bytes_max, |_, r| {
            keeps(r, &latest, now, delete_retention_ms)
        });
        self.clean_point = self.active().base_offset;
        Ok(summary)
    }
}

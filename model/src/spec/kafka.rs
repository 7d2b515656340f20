//! The `kafka` compaction policy: one pass of Apache Kafka's cleaner (4.4's
//! `Cleaner.doClean`), docs/design.md section 1 beside the seeds' rules.
//!
//! 1. The first uncleanable offset `U` is the active segment's base, held back by
//!    `min_compaction_lag_ms` as for the seeds' policy.
//! 2. The map covers the data batches of `[clean_point, U)` only (never the active
//!    segment), whole batches while the distinct keys fit the budget. `L` is the last
//!    offset of the last batch read (control batches count); no batch: the pass does
//!    nothing.
//! 3. Every segment with a base at or below `L` is cleaned (from the log start): a
//!    record past `L` is kept; a keyless record is dropped; a keyed record is kept if
//!    its offset is at least the map's for its key (a key not mapped: kept) and it has
//!    a value or its batch has no delete horizon or `now` is before it. A marker
//!    follows [`super::kafka_txn`]'s rule 4 (kept while its transaction has data in
//!    the pass, then stamped with a delete horizon, removed at or past it).
//! 4. A batch with no kept record goes, unless it keeps an active producer's state
//!    ([`super::kafka_txn`] rule 5): then its empty batch stays. A batch that keeps a tombstone and has no
//!    delete horizon gets one: `now + delete_retention_ms`, which becomes its
//!    `base_timestamp` (Kafka's `DELETE_HORIZON_FLAG`). A rewritten batch (records
//!    dropped, or stamped) keeps its base offset, last offset delta, codec and
//!    timestamp type; its `base_timestamp` is its horizon, or without one its first
//!    kept record's stored timestamp (Kafka rebuilds it); `max_timestamp` as the
//!    seeds' rule. A batch kept whole and not stamped is unchanged.
//! 5. Grouping (`groupSegmentsBySize`) by the *source* segments' bytes: the next
//!    segment joins while `group_bytes + its_bytes <= segment_bytes` and (it is empty,
//!    or its last offset, estimated as the next segment's base - 1 or `U - 1`, is
//!    within `i32::MAX` of the group's base). Kafka's index-size limit
//!    (`segment.index.bytes`, 10 MiB) is not modelled (docs/design.md).
//! 6. The clean point becomes `L + 1`.
//!
//! A log holding transactional data adds the transaction rules of
//! [`super::kafka_txn`] at steps 1 (`U` held at the last stable offset's segment),
//! 2 (an aborted batch maps no key) and 3 (an aborted batch goes); every pass
//! applies its marker rule (rule 4) at step 3.

use std::collections::{BTreeMap, BTreeSet};

use super::compact::CompactionSummary;
use super::kafka_txn::{empty_batch, marker_outcome, KafkaTxnRules, MarkerData, MarkerOutcome};
use super::{delete_horizon, Batch, CleanKnobs, Rec, SpecError, SpecLog, SpecSegment};

/// What step 2 maps: latest offset per key, and `L`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KafkaMap {
    pub latest: BTreeMap<Vec<u8>, i64>,
    /// The last offset of the last batch read; `None`: nothing to clean.
    pub latest_offset: Option<i64>,
}

/// Step 3's rule for one record of a data batch of a cleaned segment.
pub fn kafka_keeps(batch: &Batch, rec: &Rec, map: &KafkaMap, now: i64) -> bool {
    let Some(last) = map.latest_offset else {
        return true;
    };
    if rec.offset > last {
        return true;
    }
    let Some(key) = &rec.key else {
        return false;
    };
    let latest = map.latest.get(key).is_none_or(|&found| rec.offset >= found);
    let retained_value = rec.value.is_some() || batch.delete_horizon.is_none_or(|h| now < h);
    latest && retained_value
}

/// Step 4: the batch after cleaning, or `None` when it goes. Counts dropped keyless
/// records into `keyless_dropped`. A control batch is returned as it is (the pass
/// applies the marker rule, [`super::kafka_txn::marker_outcome`]).
pub fn kafka_clean_batch(
    batch: &Batch,
    map: &KafkaMap,
    now: i64,
    delete_retention_ms: i64,
    keyless_dropped: &mut u64,
) -> Option<Batch> {
    if batch.control {
        return Some(batch.clone());
    }
    let records: Vec<Rec> = batch
        .records
        .iter()
        .filter(|r| {
            let keep = kafka_keeps(batch, r, map, now);
            if !keep && r.key.is_none() {
                *keyless_dropped += 1;
            }
            keep
        })
        .cloned()
        .collect();
    let first = records.first()?;
    let stamp = batch.delete_horizon.is_none() && records.iter().any(|r| r.value.is_none());
    if records.len() == batch.records.len() && !stamp {
        return Some(batch.clone());
    }
    let delete_horizon = if stamp {
        Some(delete_horizon(now, delete_retention_ms))
    } else {
        batch.delete_horizon
    };
    let max_timestamp = if batch.log_append_time {
        batch.max_timestamp
    } else {
        records.iter().map(|r| r.timestamp).max()?
    };
    Some(Batch {
        base_timestamp: delete_horizon.unwrap_or(first.stored_timestamp()),
        max_timestamp,
        delete_horizon,
        records,
        ..batch.clone()
    })
}

/// Step 5 on source sizes: the groups, as index ranges into `sources`.
pub fn kafka_groups(
    sources: &[SpecSegment],
    segment_bytes: u64,
    first_uncleanable: i64,
) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < sources.len() {
        let mut bytes = sources[start].bytes();
        let mut end = start + 1;
        while let Some(next) = sources.get(end) {
            let next_bytes = next.bytes();
            let last_offset = sources
                .get(end + 1)
                .map_or(first_uncleanable - 1, |s| s.base_offset - 1);
            let in_range =
                next_bytes == 0 || last_offset - sources[start].base_offset <= i64::from(i32::MAX);
            if bytes + next_bytes > segment_bytes || !in_range {
                break;
            }
            bytes += next_bytes;
            end += 1;
        }
        groups.push(start..end);
        start = end;
    }
    groups
}

impl SpecLog {
    /// Step 2: the map of `[clean_point, first_uncleanable)`; under the transaction
    /// rules `txn` an aborted batch maps no key (the last offset moves past it).
    pub fn kafka_map(
        &self,
        first_uncleanable: i64,
        key_budget: Option<u64>,
        txn: Option<&KafkaTxnRules>,
    ) -> Result<KafkaMap, SpecError> {
        let mut map = KafkaMap {
            latest: BTreeMap::new(),
            latest_offset: None,
        };
        for batch in self
            .batches()
            .filter(|b| b.base_offset >= self.clean_point && b.base_offset < first_uncleanable)
        {
            let aborted = txn.is_some_and(|t| t.aborted(batch.base_offset));
            if !batch.control && !aborted {
                let keys: BTreeSet<&Vec<u8>> = batch
                    .records
                    .iter()
                    .filter_map(|r| r.key.as_ref())
                    .filter(|k| !map.latest.contains_key(*k))
                    .collect();
                if let Some(budget) = key_budget {
                    if (map.latest.len() + keys.len()) as u64 > budget {
                        if map.latest.is_empty() {
                            return Err(SpecError::InvalidArgument(format!(
                                "the offset map holds {budget} keys; batch {} alone has {}",
                                batch.base_offset,
                                keys.len()
                            )));
                        }
                        return Ok(map);
                    }
                }
                for rec in &batch.records {
                    if let Some(key) = &rec.key {
                        map.latest.insert(key.clone(), rec.offset);
                    }
                }
            }
            map.latest_offset = Some(batch.last_offset());
        }
        Ok(map)
    }

    /// One `kafka`-policy pass (module docs); `clean` checked the arguments.
    pub(super) fn clean_kafka(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        group_bytes_max: u64,
        knobs: CleanKnobs,
    ) -> Result<CompactionSummary, SpecError> {
        let txn = self.kafka_txn_rules();
        let mut first_uncleanable = self.first_uncleanable_offset(now, knobs.min_compaction_lag_ms);
        if let Some(t) = &txn {
            let bases: Vec<i64> = self.segments.iter().map(|s| s.base_offset).collect();
            first_uncleanable = t.bound(first_uncleanable, &bases);
        }
        let map = self.kafka_map(first_uncleanable, knobs.key_budget(), txn.as_ref())?;
        let closed = self.closed_segments();
        let mut summary = CompactionSummary {
            segments_before: closed.len() as u64,
            records_before: closed.iter().map(SpecSegment::record_count).sum(),
            bytes_before: closed.iter().map(SpecSegment::bytes).sum(),
            ..CompactionSummary::default()
        };
        let Some(last) = map.latest_offset else {
            summary.segments_after = summary.segments_before;
            summary.records_after = summary.records_before;
            summary.bytes_after = summary.bytes_before;
            return Ok(summary);
        };
        let end_offset = last + 1;
        let cleaned = closed
            .iter()
            .take_while(|s| s.base_offset < end_offset)
            .count();
        let mut output: Vec<SpecSegment> = Vec::new();
        let mut markers = MarkerData::default();
        let producers = self.active_producers(now, knobs.producer_id_expiration_ms);
        let empty = |b: &Batch, batches: &mut Vec<Batch>| {
            if producers.retains_empty(b) {
                batches.push(empty_batch(b));
            }
        };
        for group in kafka_groups(&closed[..cleaned], group_bytes_max, first_uncleanable) {
            let base_offset = closed[group.start].base_offset;
            let mut batches = Vec::new();
            for b in closed[group].iter().flat_map(|s| &s.batches) {
                if b.control && b.records.is_empty() {
                    // An emptied marker (rule 5): ends nothing, and stays only as
                    // it was kept (Kafka's `onControlBatchRead` of an empty batch).
                    empty(b, &mut batches);
                    continue;
                }
                if b.control {
                    let has_data = markers.on_marker(b.producer_id);
                    match marker_outcome(has_data, b.delete_horizon, now, delete_retention_ms) {
                        MarkerOutcome::Kept => batches.push(b.clone()),
                        MarkerOutcome::Stamped(horizon) => batches.push(Batch {
                            base_timestamp: horizon,
                            delete_horizon: Some(horizon),
                            ..b.clone()
                        }),
                        MarkerOutcome::Removed => empty(b, &mut batches),
                    }
                    continue;
                }
                markers.on_data(b.producer_id, b.transactional);
                if txn.as_ref().is_some_and(|t| t.aborted(b.base_offset)) {
                    empty(b, &mut batches);
                    continue;
                }
                match kafka_clean_batch(
                    b,
                    &map,
                    now,
                    delete_retention_ms,
                    &mut summary.keyless_dropped,
                ) {
                    Some(kept) => batches.push(kept),
                    None => empty(b, &mut batches),
                }
            }
            output.push(SpecSegment {
                base_offset,
                batches,
            });
        }
        output.extend(closed[cleaned..].iter().cloned());
        summary.segments_after = output.len() as u64;
        summary.records_after = output.iter().map(SpecSegment::record_count).sum();
        summary.bytes_after = output.iter().map(SpecSegment::bytes).sum();
        let (start_before, next_before) = (self.log_start_offset(), self.next_offset());
        let active = self.segments.pop().expect("active segment");
        output.push(active);
        self.segments = output;
        assert_eq!(self.log_start_offset(), start_before);
        assert_eq!(self.next_offset(), next_before);
        assert!(end_offset <= self.active().base_offset);
        self.clean_point = self.clean_point.max(end_offset);
        debug_assert_eq!(self.clean_section_duplicate(), None);
        Ok(summary)
    }
}

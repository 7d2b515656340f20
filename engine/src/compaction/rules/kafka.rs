//! The `kafka` policy's rules (docs/design.md section 1; spec
//! `model/src/spec/kafka.rs`): one pass of Apache Kafka's cleaner (4.4's
//! `Cleaner.doClean`), one function per decision so that the transaction rules
//! (aborted data, markers: [`super::txn`], [`super::markers`]) plug in beside them:
//! the map of a pass ([`KafkaMap`]), the record rule ([`keeps`], [`RecordRule`]),
//! a batch's outcome ([`clean_batch`], [`filter_batch`]) and the grouping of source
//! segments ([`groups`]). Where the cleanable section ends (the min-lag rule) is
//! `super::super::section`'s.
//!
//! The pass that runs is `super::super::pass::kafka`: these rules applied to the
//! batches in place (copy, drop, or rebuild of one batch's bytes). The decoded
//! reference pass of test builds (`super::super::reference::kafka`) applies them to
//! decoded batches: the pass that runs must write the same bytes.

use std::collections::HashMap;
use std::ops::Range;

use crate::error::{Error, Result};
use crate::format::batch::ATTR_DELETE_HORIZON;
use crate::format::{RecordBatch, TimestampType};

/// The map of one pass: latest offset per key over the data batches of
/// `[clean_point, first uncleanable offset)`, whole batches while the keys fit.
#[derive(Debug, Clone, Default)]
pub struct KafkaMap {
    latest: HashMap<Vec<u8>, i64>,
    /// The last offset of the last batch read (Kafka's `OffsetMap.latestOffset`).
    pub latest_offset: Option<i64>,
}

impl KafkaMap {
    /// Maps `batches` (in offset order, all in the range) under `key_budget`; a first
    /// batch with more distinct keys than the budget is `InvalidArgument`.
    pub fn build<'a>(
        batches: impl IntoIterator<Item = &'a RecordBatch>,
        key_budget: Option<u64>,
    ) -> Result<KafkaMap> {
        let mut map = KafkaMap::default();
        for batch in batches {
            if !batch.is_control() {
                if let Some(budget) = key_budget {
                    let mut fresh: Vec<&[u8]> = batch
                        .records
                        .iter()
                        .filter_map(|r| r.key.as_deref())
                        .filter(|k| !map.latest.contains_key(*k))
                        .collect();
                    fresh.sort_unstable();
                    fresh.dedup();
                    if (map.latest.len() + fresh.len()) as u64 > budget {
                        if map.latest.is_empty() {
                            return Err(Error::InvalidArgument(format!(
                                "the offset map holds {budget} keys; batch {} alone has {}",
                                batch.base_offset,
                                fresh.len()
                            )));
                        }
                        return Ok(map);
                    }
                }
                for record in &batch.records {
                    if let Some(key) = &record.key {
                        map.latest.insert(key.clone(), batch.offset_of(record));
                    }
                }
            }
            map.latest_offset = Some(batch.last_offset());
        }
        Ok(map)
    }

    /// Distinct keys mapped.
    pub fn len(&self) -> usize {
        self.latest.len()
    }

    /// True when no key is mapped.
    pub fn is_empty(&self) -> bool {
        self.latest.is_empty()
    }
}

/// Kafka's `shouldRetainRecord` for a record (offset `offset`, key, tombstone or
/// not) of a data batch with delete horizon `delete_horizon`, at `now`.
pub fn keeps(
    offset: i64,
    key: Option<&[u8]>,
    tombstone: bool,
    delete_horizon: Option<i64>,
    map: &KafkaMap,
    now: i64,
) -> bool {
    let rule = RecordRule {
        latest_offset: map.latest_offset,
        now,
        delete_horizon,
    };
    rule.keeps(offset, key.is_some(), tombstone, || {
        key.and_then(|k| map.latest.get(k))
            .is_none_or(|&found| offset >= found)
    })
}

/// [`keeps`] with the key's lookup left to the caller: `is_latest` answers "is
/// this record its key's latest mapped one?" and is asked only for a keyed record
/// at or below the map's last offset (the tuned pass answers from a bitmap).
#[derive(Debug, Clone, Copy)]
pub struct RecordRule {
    /// The map's last offset `L`.
    pub latest_offset: Option<i64>,
    /// The time the pass runs at.
    pub now: i64,
    /// The batch's delete horizon.
    pub delete_horizon: Option<i64>,
}

impl RecordRule {
    /// Whether the record stays.
    pub fn keeps(
        &self,
        offset: i64,
        keyed: bool,
        tombstone: bool,
        is_latest: impl FnOnce() -> bool,
    ) -> bool {
        let Some(last) = self.latest_offset else {
            return true;
        };
        if offset > last {
            return true;
        }
        if !keyed {
            return false; // keyless: Kafka counts it as invalid and drops it
        }
        is_latest() && (!tombstone || self.delete_horizon.is_none_or(|h| self.now < h))
    }
}

/// Kafka's delete horizon of a batch stamped at `now`: `now + delete_retention_ms`,
/// saturating (a tombstone's batch and an emptied transaction's marker alike). The
/// spec's `delete_horizon` is the same.
pub fn delete_horizon(now: i64, delete_retention_ms: i64) -> i64 {
    now.saturating_add(delete_retention_ms)
}

/// What happens to one batch of a cleaned segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOutcome {
    /// Copied as stored.
    Unchanged,
    /// Rebuilt: records dropped, or a delete horizon stamped.
    Rewritten(RecordBatch),
    /// No record kept.
    Dropped,
}

/// Kafka's `filterTo` for one batch: the kept records; a batch keeping a tombstone
/// without a delete horizon gets `now + delete_retention_ms` (attribute bit 6, and
/// it becomes `base_timestamp`); a rebuilt batch's `base_timestamp` is its horizon or
/// its first kept record's stored timestamp. Control batches are unchanged (the
/// transaction rules plug in here). Adds dropped keyless records to `keyless_dropped`.
pub fn clean_batch(
    batch: &RecordBatch,
    map: &KafkaMap,
    now: i64,
    delete_retention_ms: i64,
    keyless_dropped: &mut u64,
) -> BatchOutcome {
    if batch.is_control() {
        return BatchOutcome::Unchanged;
    }
    let horizon = batch.delete_horizon();
    let keep: Vec<bool> = batch
        .records
        .iter()
        .map(|r| {
            let keep = keeps(
                batch.offset_of(r),
                r.key.as_deref(),
                r.value.is_none(),
                horizon,
                map,
                now,
            );
            if !keep && r.key.is_none() {
                *keyless_dropped += 1;
            }
            keep
        })
        .collect();
    filter_batch(batch, &keep, now, delete_retention_ms)
}

/// The rest of [`clean_batch`] once each record of the data batch `batch` is
/// decided (`keep`, one flag per record): dropped, unchanged, or rebuilt (and
/// stamped) as Kafka's `filterTo` rebuilds it.
pub fn filter_batch(
    batch: &RecordBatch,
    keep: &[bool],
    now: i64,
    delete_retention_ms: i64,
) -> BatchOutcome {
    assert_eq!(keep.len(), batch.records.len());
    let horizon = batch.delete_horizon();
    let kept: Vec<&crate::format::Record> = batch
        .records
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(r, _)| r)
        .collect();
    let Some(first) = kept.first() else {
        return BatchOutcome::Dropped;
    };
    let stamp = horizon.is_none() && kept.iter().any(|r| r.value.is_none());
    if kept.len() == batch.records.len() && !stamp {
        return BatchOutcome::Unchanged;
    }
    let horizon = if stamp {
        Some(delete_horizon(now, delete_retention_ms))
    } else {
        horizon
    };
    let stored = |r: &crate::format::Record| batch.base_timestamp.wrapping_add(r.timestamp_delta);
    let base_timestamp = horizon.unwrap_or_else(|| stored(first));
    let max_timestamp = match batch.timestamp_type() {
        TimestampType::LogAppendTime => batch.max_timestamp,
        TimestampType::CreateTime => kept
            .iter()
            .map(|r| stored(r))
            .max()
            .unwrap_or(base_timestamp),
    };
    let records = kept
        .iter()
        .map(|r| crate::format::Record {
            timestamp_delta: stored(r).wrapping_sub(base_timestamp),
            ..(*r).clone()
        })
        .collect();
    let attributes = if horizon.is_some() {
        batch.attributes | ATTR_DELETE_HORIZON
    } else {
        batch.attributes
    };
    BatchOutcome::Rewritten(RecordBatch {
        attributes,
        base_timestamp,
        max_timestamp,
        records,
        ..batch.clone()
    })
}

/// Kafka's `groupSegmentsBySize` on source segments `(base, bytes)`: the next joins
/// the group while the bytes fit `segment_bytes` and (it is empty or its last offset,
/// estimated as the next segment's base - 1 or `first_uncleanable - 1`, is within
/// `i32::MAX` of the group's base). Kafka's index-size limit is not applied
/// (docs/design.md).
pub fn groups(
    sources: &[(i64, u64)],
    segment_bytes: u64,
    first_uncleanable: i64,
) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < sources.len() {
        let (group_base, mut bytes) = sources[start];
        let mut end = start + 1;
        while let Some(&(_, next_bytes)) = sources.get(end) {
            let last_offset = sources
                .get(end + 1)
                .map_or(first_uncleanable - 1, |&(base, _)| base - 1);
            let in_range = next_bytes == 0 || last_offset - group_base <= i64::from(i32::MAX);
            if bytes.saturating_add(next_bytes) > segment_bytes || !in_range {
                break;
            }
            bytes += next_bytes;
            end += 1;
        }
        out.push(start..end);
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::batch::decode;
    use crate::format::NewRecord;

    fn rec(key: Option<&str>, value: Option<&str>, ts: i64) -> NewRecord {
        NewRecord::new(
            key.map(|k| k.as_bytes().to_vec()),
            value.map(|v| v.as_bytes().to_vec()),
            ts,
        )
    }

    #[test]
    fn a_kept_tombstone_stamps_its_batch_and_goes_at_the_horizon() {
        // a=1 @0 ts 10, a=null @1 ts 20, (keyless) @2 ts 30.
        let batch = RecordBatch::build(
            0,
            &[
                rec(Some("a"), Some("1"), 10),
                rec(Some("a"), None, 20),
                rec(None, Some("e"), 30),
            ],
        );
        let map = KafkaMap::build([&batch], None).unwrap();
        assert_eq!(map.latest_offset, Some(2));
        let mut keyless = 0;
        let BatchOutcome::Rewritten(stamped) = clean_batch(&batch, &map, 1_000, 500, &mut keyless)
        else {
            panic!("the batch keeps its tombstone, stamped");
        };
        assert_eq!(keyless, 1);
        assert_eq!(stamped.delete_horizon(), Some(1_500));
        assert_eq!(stamped.base_timestamp, 1_500);
        assert_eq!(stamped.records.len(), 1);
        assert_eq!(stamped.offset_of(&stamped.records[0]), 1);
        assert_eq!(
            stamped.timestamp_of(&stamped.records[0]),
            20,
            "timestamps stay"
        );
        assert_eq!(stamped.last_offset(), 2, "the last offset stays");
        assert_eq!(stamped.max_timestamp, 20);
        // The stamped batch round-trips through its bytes.
        let (decoded, _) = decode(&stamped.encode()).unwrap();
        assert_eq!(decoded, stamped);
        // Kept, unchanged, before the horizon; gone at it.
        assert_eq!(
            clean_batch(&stamped, &map, 1_499, 500, &mut keyless),
            BatchOutcome::Unchanged
        );
        assert_eq!(
            clean_batch(&stamped, &map, 1_500, 500, &mut keyless),
            BatchOutcome::Dropped
        );
    }

    #[test]
    fn records_past_the_map_and_unmapped_keys_stay() {
        let mapped = RecordBatch::build(0, &[rec(Some("a"), Some("2"), 0)]);
        let map = KafkaMap::build([&mapped], None).unwrap();
        assert!(keeps(0, Some(b"a"), false, None, &map, 0));
        assert!(keeps(0, Some(b"b"), false, None, &map, 0), "not mapped");
        assert!(keeps(5, None, false, None, &map, 0), "past the map");
        assert!(!keeps(0, None, false, None, &map, 0), "keyless below it");
        let empty = KafkaMap::default();
        assert!(keeps(0, None, true, Some(0), &empty, 10), "nothing mapped");
    }

    #[test]
    fn a_batch_alone_larger_than_the_map_is_rejected() {
        let batch = RecordBatch::build(
            0,
            &[rec(Some("a"), Some("1"), 0), rec(Some("b"), Some("1"), 0)],
        );
        assert!(matches!(
            KafkaMap::build([&batch], Some(1)),
            Err(Error::InvalidArgument(_))
        ));
        let second = RecordBatch::build(2, &[rec(Some("c"), Some("1"), 0)]);
        let map = KafkaMap::build([&batch, &second], Some(2)).unwrap();
        assert_eq!(
            map.latest_offset,
            Some(1),
            "stops before the batch that does not fit"
        );
    }

    #[test]
    fn grouping_is_by_source_bytes_and_offset_range() {
        let ranges = |sizes: &[(i64, u64)], max, u| -> Vec<Range<usize>> { groups(sizes, max, u) };
        assert_eq!(
            ranges(&[(0, 60), (10, 40), (20, 1), (30, 0)], 100, 40),
            vec![0..2, 2..4]
        );
        // A segment whose offsets would put the group past i32::MAX starts a new one;
        // an empty one always joins.
        let far = i64::from(i32::MAX) + 10;
        assert_eq!(ranges(&[(0, 1), (5, 1)], 100, far), vec![0..1, 1..2]);
        assert_eq!(ranges(&[(0, 1), (5, 0)], 100, far), vec![0..2]);
    }
}

//! The seed policy's rules (docs/design.md section 1): the keep/drop decision per
//! record and batch (the latest record per key survives, keyless records stay, a
//! latest tombstone stays until older than `delete_retention_ms`), and the greedy
//! grouping of compacted source segments into output segments.

#[cfg(feature = "serde")]
use serde::Serialize;

use crate::format::{Record, RecordBatch};

use crate::compaction::map::OffsetMap;
use crate::compaction::view::RecordView;

/// What happens to one record of the closed region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Decision {
    /// Keyless, latest for its key, a control record, or a tombstone still in its grace period.
    Keep,
    /// A later offset holds the same key.
    DropObsolete,
    /// The latest record for its key is a tombstone older than `delete_retention_ms`.
    DropExpiredTombstone,
}

/// The clock and grace period a compaction runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Horizon {
    /// The time compaction runs at (ms since the epoch).
    pub now: i64,
    /// How long a tombstone is kept after its timestamp.
    pub delete_retention_ms: i64,
}

impl Horizon {
    /// The one rule of a tombstone's (and a marker's) age: `now - timestamp`,
    /// exact (i128: no overflow, no saturation), past `delete_retention_ms`. The
    /// spec's `past_grace` is the same.
    pub fn expired(&self, timestamp: i64) -> bool {
        i128::from(self.now) - i128::from(timestamp) > i128::from(self.delete_retention_ms)
    }
}

/// Decides one record of the closed region.
pub fn decide(batch: &RecordBatch, record: &Record, map: &OffsetMap, horizon: Horizon) -> Decision {
    decide_parts(
        batch.is_control(),
        record.key.as_deref(),
        batch.offset_of(record),
        record.value.is_none(),
        batch.timestamp_of(record),
        map,
        horizon,
    )
}

/// [`decide`] on a zero-copy view of a record whose key's latest offset was already
/// looked up (`latest`, `None` for keyless records and control batches).
pub fn decide_view(
    control: bool,
    record: &RecordView<'_>,
    latest: Option<i64>,
    horizon: Horizon,
) -> Decision {
    decide_fields(
        control,
        record.key.is_some(),
        record.offset,
        record.value_is_null,
        record.timestamp,
        latest,
        horizon,
    )
}

fn decide_parts(
    control: bool,
    key: Option<&[u8]>,
    offset: i64,
    value_is_null: bool,
    timestamp: i64,
    map: &OffsetMap,
    horizon: Horizon,
) -> Decision {
    let latest = match key {
        Some(key) if !control => map.latest(key),
        _ => None,
    };
    decide_fields(
        control,
        key.is_some(),
        offset,
        value_is_null,
        timestamp,
        latest,
        horizon,
    )
}

/// The rule itself (docs/design.md section 1), on plain fields: `latest` is the
/// latest offset of the record's key (`None` for keyless records and control batches).
pub fn decide_fields(
    control: bool,
    keyed: bool,
    offset: i64,
    value_is_null: bool,
    timestamp: i64,
    latest: Option<i64>,
    horizon: Horizon,
) -> Decision {
    if control || !keyed {
        return Decision::Keep;
    }
    let latest = latest.expect("the offset map covers every keyed record");
    assert!(
        latest >= offset,
        "offset map is missing a later write of a key"
    );
    decide_tail(latest == offset, value_is_null, timestamp, horizon)
}

/// [`decide_view`] when the map already told whether the record is the latest of
/// its key (`latest`, ignored for keyless records and control batches).
pub fn decide_latest(
    control: bool,
    record: &RecordView<'_>,
    latest: bool,
    horizon: Horizon,
) -> Decision {
    if control || record.key.is_none() {
        return Decision::Keep;
    }
    decide_tail(latest, record.value_is_null, record.timestamp, horizon)
}

/// The rule for a keyed record of a non-control batch.
fn decide_tail(latest: bool, value_is_null: bool, timestamp: i64, horizon: Horizon) -> Decision {
    if !latest {
        return Decision::DropObsolete;
    }
    if value_is_null && horizon.expired(timestamp) {
        return Decision::DropExpiredTombstone;
    }
    Decision::Keep
}

/// The compacted copy of `batch`, or `None` when no record is kept. Control batches
/// pass through unchanged; a partly kept batch keeps its base offset, last offset
/// delta and base timestamp ([`RecordBatch::retain`]).
pub fn compact_batch(
    batch: &RecordBatch,
    map: &OffsetMap,
    horizon: Horizon,
) -> Option<RecordBatch> {
    if batch.is_control() {
        return Some(batch.clone());
    }
    let kept = batch.retain(|record| decide(batch, record, map, horizon) == Decision::Keep)?;
    assert_eq!(kept.base_offset, batch.base_offset);
    assert_eq!(kept.last_offset_delta, batch.last_offset_delta);
    Some(kept)
}

/// Where the next compacted source segment goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Append it to the current output segment.
    Join,
    /// Start a new output segment named by its base offset.
    Start,
}

/// Greedy grouping by compacted bytes: a group starts with one source segment; the
/// next joins while `group_bytes + its_bytes <= segment_bytes`.
#[derive(Debug, Clone)]
pub struct Grouper {
    segment_bytes: u64,
    group_bytes: Option<u64>,
}

impl Grouper {
    /// A grouper for output segments of at most `segment_bytes`.
    pub fn new(segment_bytes: u64) -> Self {
        assert!(segment_bytes > 0);
        Grouper {
            segment_bytes,
            group_bytes: None,
        }
    }

    /// Places the next source segment, whose compacted size is `bytes`.
    pub fn place(&mut self, bytes: u64) -> Placement {
        match self.group_bytes {
            Some(group) if group.saturating_add(bytes) <= self.segment_bytes => {
                self.group_bytes = Some(group + bytes);
                Placement::Join
            }
            _ => {
                self.group_bytes = Some(bytes);
                Placement::Start
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::NewRecord;

    fn rec(key: Option<&str>, value: Option<&str>, ts: i64) -> NewRecord {
        NewRecord::new(
            key.map(|k| k.as_bytes().to_vec()),
            value.map(|v| v.as_bytes().to_vec()),
            ts,
        )
    }

    fn map_of(batches: &[RecordBatch]) -> OffsetMap {
        let mut map = OffsetMap::new();
        for batch in batches.iter().filter(|b| !b.is_control()) {
            for record in &batch.records {
                if let Some(key) = &record.key {
                    map.insert(key, batch.offset_of(record));
                }
            }
        }
        map.finish();
        map
    }

    #[test]
    fn minikafka_example() {
        // Closed: [a=1 @0, b=x @1], [a=2 @2, (keyless) @3]; active: [active @4].
        let closed = vec![
            RecordBatch::build(
                0,
                &[rec(Some("a"), Some("1"), 0), rec(Some("b"), Some("x"), 1)],
            ),
            RecordBatch::build(
                2,
                &[rec(Some("a"), Some("2"), 2), rec(None, Some("event"), 3)],
            ),
        ];
        let active = RecordBatch::build(4, &[rec(Some("active"), Some("keep"), 4)]);
        let mut all = closed.clone();
        all.push(active);
        let map = map_of(&all);
        let horizon = Horizon {
            now: 10,
            delete_retention_ms: 1000,
        };
        let first = compact_batch(&closed[0], &map, horizon).unwrap();
        assert_eq!(first.records.len(), 1);
        assert_eq!(first.offset_of(&first.records[0]), 1);
        assert_eq!(first.last_offset_delta, 1);
        assert_eq!(first.max_timestamp, 1);
        let second = compact_batch(&closed[1], &map, horizon).unwrap();
        assert_eq!(second, closed[1]);
    }

    #[test]
    fn active_segment_obsoletes_closed_records() {
        let closed = RecordBatch::build(0, &[rec(Some("a"), Some("old"), 0)]);
        let active = RecordBatch::build(1, &[rec(Some("a"), Some("new"), 1)]);
        let map = map_of(&[closed.clone(), active]);
        let horizon = Horizon {
            now: 0,
            delete_retention_ms: 0,
        };
        assert_eq!(
            decide(&closed, &closed.records[0], &map, horizon),
            Decision::DropObsolete
        );
        assert!(compact_batch(&closed, &map, horizon).is_none());
    }

    #[test]
    fn tombstone_grace_period() {
        // Seed exercise 2: a=1 @ts0, a=null @ts100; drm 1000.
        let batch = RecordBatch::build(
            0,
            &[rec(Some("a"), Some("1"), 0), rec(Some("a"), None, 100)],
        );
        let map = map_of(std::slice::from_ref(&batch));
        let at = |now| Horizon {
            now,
            delete_retention_ms: 1000,
        };
        let kept = compact_batch(&batch, &map, at(500)).unwrap();
        assert_eq!(kept.records.len(), 1);
        assert_eq!(kept.records[0].value, None);
        assert_eq!(kept.offset_of(&kept.records[0]), 1);
        // Age exactly 1000 is kept; 1001 is dropped.
        assert!(compact_batch(&batch, &map, at(1100)).is_some());
        assert!(compact_batch(&batch, &map, at(1101)).is_none());
        assert!(compact_batch(&batch, &map, at(2000)).is_none());
    }

    #[test]
    fn control_batches_pass_unchanged() {
        let control = RecordBatch::control(3, crate::format::ControlKind::Abort, 7, 0, 0, 5);
        let map = map_of(&[]);
        let horizon = Horizon {
            now: i64::MAX,
            delete_retention_ms: 0,
        };
        assert_eq!(compact_batch(&control, &map, horizon), Some(control));
    }

    #[test]
    fn grouping_is_greedy_by_compacted_bytes() {
        let mut grouper = Grouper::new(100);
        let placements: Vec<Placement> = [60, 40, 1, 0, 200, 0, 100]
            .into_iter()
            .map(|b| grouper.place(b))
            .collect();
        use Placement::*;
        assert_eq!(
            placements,
            vec![Start, Join, Start, Join, Start, Start, Join]
        );
    }
}

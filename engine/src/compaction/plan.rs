//! The one planner: what a pass does with each batch of a cleaned segment, from the
//! rule sets' verdicts ([`super::rules`]) and the map's (one bit per keyed record:
//! is it its key's latest). Pure: no IO, no bytes written; the write side
//! (`super::rewrite` for the seed policy, `super::pass::kafka` for Kafka's) executes
//! the [`BatchPlan`] it returns and nothing else decides.
//!
//! - The seed policy ([`seed_record`], [`seed_counted`], [`seed_decided`]): a
//!   record stays unless a later record of its key supersedes it or it is the
//!   latest tombstone of its key past `delete_retention_ms`; keyless records and
//!   control batches stay; a partly kept batch is spliced (its kept records'
//!   bytes under its own header, base offset and last offset delta unchanged).
//! - The kafka policy ([`kafka_counted`], [`kafka_decided`], [`kafka_marker`]):
//!   Kafka's `shouldRetainRecord` per record
//!   ([`super::rules::kafka::RecordRule::keeps`]), a batch keeping a
//!   tombstone without a delete horizon rebuilt with one ([`delete_horizon`]), the
//!   marker rule, and a batch with nothing left kept as its empty batch while it
//!   holds an active producer's state ([`dropped`], `RETAIN_EMPTY`).
//! - Both: a batch the transaction rules remove (aborted data, a marker past its
//!   horizon) is dropped or, under the kafka policy, kept empty.

use super::rules::kafka::delete_horizon;
use super::rules::markers::MarkerOutcome;
use super::rules::seed::{decide_latest, Decision, Horizon};
use super::view::RecordView;

/// What the write side does with one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchPlan {
    /// Written as stored.
    Copy,
    /// Nothing written.
    Drop,
    /// Its empty batch (header only, count 0), written from its stored header: it
    /// keeps an active producer's state (`RETAIN_EMPTY`).
    KeepEmpty,
    /// The records the keep flags keep (some, not all): their bytes as stored
    /// (recompressed with the batch's codec when compressed) under the batch's
    /// header, count, length, max timestamp and CRC patched (seed policy).
    Splice,
    /// The records the keep flags keep (all of them when only stamped), re-encoded
    /// as Kafka's `filterTo` does, with this delete horizon (kafka policy).
    Rebuild { horizon: Option<i64> },
}

/// The seed policy's verdict on one record (`latest`: the map says no later
/// record of its key exists; ignored for keyless records and control batches).
pub fn seed_record(control: bool, record: &RecordView<'_>, latest: bool, horizon: Horizon) -> bool {
    decide_latest(control, record, latest, horizon) == Decision::Keep
}

/// A seed batch of `records` records of which the map's bits drop `dropped`,
/// decided from the counts alone (a plain batch: no tombstone, keyless or control
/// record, so the bits are every verdict).
pub fn seed_counted(records: usize, dropped: usize) -> BatchPlan {
    assert!(dropped <= records);
    match dropped {
        0 => BatchPlan::Copy,
        d if d == records => BatchPlan::Drop,
        _ => BatchPlan::Splice,
    }
}

/// A seed batch once each record is decided (`kept` of `records`).
pub fn seed_decided(records: usize, kept: usize) -> BatchPlan {
    seed_counted(records, records - kept)
}

/// What a kafka data batch's counts say without reading its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchCounts {
    /// Its base offset.
    pub base_offset: i64,
    /// Records, keyed records, keyless records and tombstones.
    pub records: usize,
    pub keyed: usize,
    pub keyless: usize,
    pub tombstones: usize,
    /// It carries a delete horizon already.
    pub stamped: bool,
}

/// A kafka data batch decided whole from its counts when it can be: past the
/// map's last offset `latest_offset` it keeps every record (copied unless a kept
/// tombstone needs the horizon stamped); mapped, with all its keyed records
/// superseded (`superseded`: how many are, when the map numbered them) it keeps
/// nothing, and with none superseded, no keyless record and no tombstone it keeps
/// everything. `None`: decided record by record ([`kafka_decided`]).
pub fn kafka_counted(
    batch: &BatchCounts,
    latest_offset: Option<i64>,
    superseded: Option<usize>,
) -> Option<BatchPlan> {
    if batch.records == 0 {
        return None;
    }
    if latest_offset.is_none_or(|last| batch.base_offset > last) {
        return (batch.tombstones == 0 || batch.stamped).then_some(BatchPlan::Copy);
    }
    let superseded = superseded?;
    if superseded == batch.keyed {
        return Some(BatchPlan::Drop);
    }
    (superseded == 0 && batch.keyless == 0 && batch.tombstones == 0).then_some(BatchPlan::Copy)
}

/// A kafka data batch once each record is decided: `kept` of `records`, whether a
/// kept record is a tombstone, and the batch's delete horizon (`stamped`). Nothing
/// kept: dropped (see [`dropped`] for its empty batch); a kept tombstone in a batch
/// without a horizon: rebuilt with one ([`delete_horizon`]); everything kept
/// otherwise: copied; else rebuilt with the batch's own horizon.
pub fn kafka_decided(
    records: usize,
    kept: usize,
    tombstone_kept: bool,
    stamped: Option<i64>,
    now: i64,
    delete_retention_ms: i64,
) -> BatchPlan {
    assert!(kept <= records);
    if kept == 0 {
        return BatchPlan::Drop;
    }
    let stamp = stamped.is_none() && tombstone_kept;
    if kept == records && !stamp {
        return BatchPlan::Copy;
    }
    BatchPlan::Rebuild {
        horizon: if stamp {
            Some(delete_horizon(now, delete_retention_ms))
        } else {
            stamped
        },
    }
}

/// A batch of which nothing stays (dropped by the records' rule, aborted, or a
/// removed marker) under the kafka policy: its empty batch when it
/// `retains_empty` an active producer's state (`super::rules::retain_empty`),
/// else nothing.
pub fn dropped(retains_empty: bool) -> BatchPlan {
    if retains_empty {
        BatchPlan::KeepEmpty
    } else {
        BatchPlan::Drop
    }
}

/// A marker of a cleaned segment under the marker rule's outcome: kept as
/// stored, stamped (rebuilt with every record and the horizon), or removed.
pub fn kafka_marker(outcome: MarkerOutcome) -> BatchPlan {
    match outcome {
        MarkerOutcome::Kept => BatchPlan::Copy,
        MarkerOutcome::Stamped(horizon) => BatchPlan::Rebuild {
            horizon: Some(horizon),
        },
        MarkerOutcome::Removed => BatchPlan::Drop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::rules::kafka::RecordRule;
    use crate::compaction::rules::markers::marker_outcome;

    const HORIZON: Horizon = Horizon {
        now: 1_000,
        delete_retention_ms: 100,
    };

    fn record(keyed: bool, tombstone: bool, timestamp: i64) -> RecordView<'static> {
        RecordView {
            offset: 5,
            timestamp,
            key: keyed.then_some(&b"k"[..]),
            value_is_null: tombstone,
            bytes: &[],
        }
    }

    /// Seed: the latest record of its key stays, a superseded one goes.
    #[test]
    fn seed_keeps_the_latest_record_of_a_key() {
        assert!(seed_record(false, &record(true, false, 0), true, HORIZON));
        assert!(!seed_record(false, &record(true, false, 0), false, HORIZON));
    }

    /// Seed: keyless records and control batches stay whatever the map says.
    #[test]
    fn seed_keeps_keyless_records_and_control_batches() {
        assert!(seed_record(false, &record(false, false, 0), false, HORIZON));
        assert!(seed_record(true, &record(true, true, 0), false, HORIZON));
    }

    /// Seed: the latest tombstone stays until older than `delete_retention_ms`.
    #[test]
    fn seed_keeps_a_latest_tombstone_through_its_grace() {
        assert!(seed_record(false, &record(true, true, 900), true, HORIZON));
        assert!(!seed_record(false, &record(true, true, 899), true, HORIZON));
    }

    /// Seed: a batch is copied whole, dropped or spliced by what it keeps.
    #[test]
    fn seed_batches_are_copied_dropped_or_spliced() {
        assert_eq!(seed_counted(4, 0), BatchPlan::Copy);
        assert_eq!(seed_counted(4, 4), BatchPlan::Drop);
        assert_eq!(seed_counted(4, 1), BatchPlan::Splice);
        assert_eq!(seed_decided(4, 3), BatchPlan::Splice);
        assert_eq!(seed_decided(4, 4), BatchPlan::Copy);
        assert_eq!(seed_decided(4, 0), BatchPlan::Drop);
    }

    const COUNTS: BatchCounts = BatchCounts {
        base_offset: 10,
        records: 4,
        keyed: 4,
        keyless: 0,
        tombstones: 0,
        stamped: false,
    };

    /// Kafka: a batch past the map's last offset is copied, unless it keeps a
    /// tombstone that still needs its horizon.
    #[test]
    fn kafka_copies_a_batch_past_the_map() {
        assert_eq!(kafka_counted(&COUNTS, Some(9), None), Some(BatchPlan::Copy));
        assert_eq!(kafka_counted(&COUNTS, None, None), Some(BatchPlan::Copy));
        let tombstones = BatchCounts {
            tombstones: 1,
            ..COUNTS
        };
        assert_eq!(kafka_counted(&tombstones, Some(9), None), None);
        let stamped = BatchCounts {
            stamped: true,
            ..tombstones
        };
        assert_eq!(
            kafka_counted(&stamped, Some(9), None),
            Some(BatchPlan::Copy)
        );
    }

    /// Kafka: a mapped batch is decided whole when its bits say all or nothing.
    #[test]
    fn kafka_decides_a_mapped_batch_from_its_bits() {
        assert_eq!(
            kafka_counted(&COUNTS, Some(20), Some(4)),
            Some(BatchPlan::Drop)
        );
        assert_eq!(
            kafka_counted(&COUNTS, Some(20), Some(0)),
            Some(BatchPlan::Copy)
        );
        assert_eq!(kafka_counted(&COUNTS, Some(20), Some(1)), None);
        // Below the clean point the map did not number it: record by record.
        assert_eq!(kafka_counted(&COUNTS, Some(20), None), None);
        let keyless = BatchCounts {
            keyed: 3,
            keyless: 1,
            ..COUNTS
        };
        assert_eq!(kafka_counted(&keyless, Some(20), Some(0)), None);
        assert_eq!(
            kafka_counted(&keyless, Some(20), Some(3)),
            Some(BatchPlan::Drop)
        );
    }

    /// Kafka: keyless records at or below the map's last offset go; past it they stay.
    #[test]
    fn kafka_drops_mapped_keyless_records() {
        let rule = RecordRule {
            latest_offset: Some(10),
            now: 1_000,
            delete_horizon: None,
        };
        assert!(!rule.keeps(10, false, false, || unreachable!()));
        assert!(rule.keeps(11, false, false, || unreachable!()));
        assert!(rule.keeps(3, true, false, || true));
        assert!(!rule.keeps(3, true, false, || false));
    }

    /// Kafka: a latest tombstone stays until its batch's horizon, then goes.
    #[test]
    fn kafka_removes_a_tombstone_at_its_horizon() {
        let before = RecordRule {
            latest_offset: Some(10),
            now: 1_000,
            delete_horizon: Some(1_001),
        };
        assert!(before.keeps(3, true, true, || true));
        let at = RecordRule {
            now: 1_001,
            ..before
        };
        assert!(!at.keeps(3, true, true, || true));
        let unstamped = RecordRule {
            delete_horizon: None,
            ..at
        };
        assert!(unstamped.keeps(3, true, true, || true));
    }

    /// Kafka: a batch keeping a tombstone without a horizon is rebuilt with
    /// `now + delete_retention_ms`; a stamped one keeps its own.
    #[test]
    fn kafka_stamps_a_kept_tombstone_batch() {
        assert_eq!(
            kafka_decided(4, 4, true, None, 1_000, 100),
            BatchPlan::Rebuild {
                horizon: Some(1_100)
            }
        );
        assert_eq!(
            kafka_decided(4, 4, true, Some(7), 1_000, 100),
            BatchPlan::Copy
        );
        assert_eq!(
            kafka_decided(4, 2, false, Some(7), 1_000, 100),
            BatchPlan::Rebuild { horizon: Some(7) }
        );
        assert_eq!(
            kafka_decided(4, 2, false, None, 1_000, 100),
            BatchPlan::Rebuild { horizon: None }
        );
        assert_eq!(
            kafka_decided(4, 0, false, None, 1_000, 100),
            BatchPlan::Drop
        );
        assert_eq!(
            kafka_decided(1, 1, true, None, i64::MAX - 1, 100),
            BatchPlan::Rebuild {
                horizon: Some(i64::MAX)
            }
        );
    }

    /// RETAIN_EMPTY: a batch with nothing left keeps its empty batch while it
    /// holds an active producer's state.
    #[test]
    fn an_active_producers_last_batch_stays_empty() {
        assert_eq!(dropped(true), BatchPlan::KeepEmpty);
        assert_eq!(dropped(false), BatchPlan::Drop);
    }

    /// Markers: kept while their transaction has data in the pass, else stamped,
    /// then removed at their horizon.
    #[test]
    fn markers_are_kept_stamped_then_removed() {
        assert_eq!(
            kafka_marker(marker_outcome(true, None, 5, 10)),
            BatchPlan::Copy
        );
        assert_eq!(
            kafka_marker(marker_outcome(false, None, 5, 10)),
            BatchPlan::Rebuild { horizon: Some(15) }
        );
        assert_eq!(
            kafka_marker(marker_outcome(false, Some(15), 14, 10)),
            BatchPlan::Copy
        );
        assert_eq!(
            kafka_marker(marker_outcome(false, Some(15), 15, 10)),
            BatchPlan::Drop
        );
    }
}

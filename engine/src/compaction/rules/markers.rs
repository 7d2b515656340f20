//! The marker rule of the `kafka` policy (docs/design.md section 1, "The kafka
//! policy and transactions"; spec `model/src/spec/kafka_txn.rs`, rule 4):
//!
//! - Markers ([`marker_outcome`], [`MarkerData`]), in every kafka pass (with or
//!   without transactional data): walking the cleaned segments' batches in offset
//!   order, a marker whose producer had a transactional data batch read since its
//!   previous marker stays as it is (`CleanedTransactionMetadata.onBatchRead` /
//!   `onControlBatchRead`), even in the pass that removes that data; one without is
//!   stamped with a delete horizon (`now + delete_retention_ms`, as a tombstone's
//!   batch: `filterTo`'s `containsMarkerForEmptyTxn`, KIP-534) if it has none, and
//!   removed by a pass at or past its horizon.

use std::collections::HashSet;

/// What a kafka pass does with one marker of a cleaned segment (spec:
/// `model/src/spec/kafka_txn.rs`, rule 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerOutcome {
    /// Kept as stored.
    Kept,
    /// Kept, stamped with this delete horizon.
    Stamped(i64),
    /// Removed.
    Removed,
}

/// The marker rule: a marker whose transaction `has_data` in the pass stays; one
/// without is stamped (no `delete_horizon` yet), or goes at or past its horizon.
pub fn marker_outcome(
    has_data: bool,
    delete_horizon: Option<i64>,
    now: i64,
    delete_retention_ms: i64,
) -> MarkerOutcome {
    if has_data {
        return MarkerOutcome::Kept;
    }
    match delete_horizon {
        None => MarkerOutcome::Stamped(super::kafka::delete_horizon(now, delete_retention_ms)),
        Some(horizon) if now >= horizon => MarkerOutcome::Removed,
        Some(_) => MarkerOutcome::Kept,
    }
}

/// The marker rule's walk over the cleaned segments' batches (Kafka's
/// `CleanedTransactionMetadata`): the producers with a transactional data batch
/// read since their last marker.
#[derive(Debug, Default)]
pub struct MarkerData {
    open: HashSet<i64>,
}

impl MarkerData {
    /// A data batch read (aborted or not).
    pub fn on_data(&mut self, producer_id: i64, transactional: bool) {
        if transactional {
            self.open.insert(producer_id);
        }
    }

    /// A marker of `producer_id` read: true if its transaction has data.
    pub fn on_marker(&mut self, producer_id: i64) -> bool {
        self.open.remove(&producer_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_waits_for_its_data_then_its_horizon() {
        assert_eq!(marker_outcome(true, None, 50, 100), MarkerOutcome::Kept);
        assert_eq!(marker_outcome(true, Some(1), 50, 100), MarkerOutcome::Kept);
        assert_eq!(
            marker_outcome(false, None, 50, 100),
            MarkerOutcome::Stamped(150)
        );
        assert_eq!(
            marker_outcome(false, Some(60), 59, 100),
            MarkerOutcome::Kept
        );
        assert_eq!(
            marker_outcome(false, Some(60), 60, 100),
            MarkerOutcome::Removed
        );
        // Per producer; plain data counts for none; a marker takes the note.
        let mut walk = MarkerData::default();
        walk.on_data(7, true);
        walk.on_data(8, false);
        assert!(!walk.on_marker(8));
        assert!(walk.on_marker(7));
        assert!(!walk.on_marker(7));
    }
}

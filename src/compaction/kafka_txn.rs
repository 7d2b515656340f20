//! The transaction rules of the `kafka` policy (docs/design.md section 1, "The
//! kafka policy and transactions"): what Kafka 4.4's cleaner does with
//! transactional data, as a pure decision over the batch facts that
//! [`super::txn::walk`] reads, used by [`super::kafka`] through two hooks. The
//! spec's statement of the same rules: `model/src/spec/kafka_txn.rs` (conformance
//! holds the engine to it).
//!
//! - The first uncleanable offset is held at the segment holding the last stable
//!   offset (the first offset of the earliest open transaction):
//!   `LogCleanerManager.cleanableOffsets` takes the minimum of the log's first
//!   unstable offset, the active segment's base and the compaction-lag bound, and
//!   `LogToClean` rounds it down to the base of the segment holding it. So nothing
//!   of an open transaction, nor anything in or after its first segment, is mapped
//!   or cleaned.
//! - A data batch of an aborted transaction (its producer's ABORT marker follows it)
//!   never enters the offset map (`buildOffsetMapForSegment` skips a batch
//!   `CleanedTransactionMetadata.onBatchRead` calls aborted; the map's latest offset
//!   still moves past it), and is removed from every segment the pass cleans
//!   (`shouldDiscardBatch`). So aborted records never shadow committed ones.
//!
//! - The `.txnindex` of the output ([`entries`]): a segment the pass does not clean
//!   keeps its entries as found; in a cleaned segment an aborted transaction's entry
//!   (as found: its first offset stays) is kept while the source holds a data batch
//!   of the transaction (Kafka's `CleanedTransactionMetadata.onControlBatchRead`
//!   keeps the entry of an ABORT whose transaction it read a batch of in the pass).
//!
//! - Markers ([`marker_outcome`], [`MarkerData`]), in every kafka pass (with or
//!   without transactional data): walking the cleaned segments' batches in offset
//!   order, a marker whose producer had a transactional data batch read since its
//!   previous marker stays as it is (`CleanedTransactionMetadata.onBatchRead` /
//!   `onControlBatchRead`), even in the pass that removes that data; one without is
//!   stamped with a delete horizon (`now + delete_retention_ms`, as a tombstone's
//!   batch: `filterTo`'s `containsMarkerForEmptyTxn`, KIP-534) if it has none, and
//!   removed by a pass at or past its horizon.
//!
//! - Empty batches (`super::producers`): an active producer's last data batch, or
//!   a marker of a producer with no data at its current epoch, stays as an empty
//!   batch when nothing of it stays (Kafka's `BatchRetention.RETAIN_EMPTY`); an
//!   empty marker ends nothing and stays only while that rule keeps it.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::filename::{self, TXN_INDEX_SUFFIX};
use crate::format::txn_index::{self, AbortedTxn};
use crate::fs::FileSystem;

use super::planner::Horizon;
use super::txn;

/// The transaction facts of one `kafka` pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaTxn {
    /// By closed batch index (every batch of the closed segments, in offset order):
    /// a data batch of an aborted transaction.
    aborted: Vec<bool>,
    /// The first offset of the earliest open transaction, or `i64::MAX`.
    pub last_stable_offset: i64,
}

impl KafkaTxn {
    /// The rules over `facts` (every batch of the log, active segment included, in
    /// offset order), of which the first `closed_batches` are in closed segments.
    pub fn decide(facts: &[txn::TxnFacts], closed_batches: usize) -> KafkaTxn {
        // Markers' horizons play no part here: only the aborted data and the last
        // stable offset of the shared rules are used.
        let plan = txn::decide(
            facts,
            closed_batches,
            i64::MAX,
            Horizon {
                now: i64::MIN,
                delete_retention_ms: i64::MAX,
            },
        );
        KafkaTxn {
            aborted: (0..closed_batches).map(|i| plan.aborted.get(i)).collect(),
            last_stable_offset: plan.last_stable_offset,
        }
    }

    /// [`KafkaTxn::decide`] on one walk's facts ([`txn::walk`]); `None` when the
    /// log holds no transactional data batch (the plain rules apply).
    pub fn of(facts: &txn::LogFacts) -> Option<KafkaTxn> {
        facts
            .transactional
            .then(|| KafkaTxn::decide(&facts.batches, facts.closed_batches))
    }

    /// [`super::txn::walk`] then [`KafkaTxn::of`].
    pub fn gather(fs: &dyn FileSystem, dir: &Path, bases: &[i64]) -> Result<Option<KafkaTxn>> {
        Ok(KafkaTxn::of(&txn::walk(fs, dir, bases)?))
    }

    /// True if closed batch `index` is data of an aborted transaction.
    pub fn aborted(&self, index: usize) -> bool {
        self.aborted.get(index).copied().unwrap_or(false)
    }

    /// The first uncleanable offset held at the base of the segment holding the
    /// last stable offset (`bases`: the segment bases, ascending).
    pub fn bound(&self, first_uncleanable: i64, bases: &[i64]) -> i64 {
        if self.last_stable_offset >= first_uncleanable {
            return first_uncleanable;
        }
        bases
            .iter()
            .copied()
            .take_while(|&b| b <= self.last_stable_offset)
            .last()
            .unwrap_or(first_uncleanable)
            .min(first_uncleanable)
    }
}

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
        None => MarkerOutcome::Stamped(now.saturating_add(delete_retention_ms)),
        Some(horizon) if now >= horizon => MarkerOutcome::Removed,
        Some(_) => MarkerOutcome::Kept,
    }
}

/// The marker rule's walk over the cleaned segments' batches (Kafka's
/// `CleanedTransactionMetadata`): the producers with a transactional data batch
/// read since their last marker.
#[derive(Debug, Default)]
pub struct MarkerData {
    open: std::collections::HashSet<i64>,
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

/// One data batch of the pass's source: (base offset, producer id, transactional).
pub type DataBatch = (i64, i64, bool);

/// The `.txnindex` entries of a kafka pass's output, in marker order: the live
/// entries of every segment (`bases`, the active one last) as found, less those
/// whose marker is below `cleaned_end` (in a segment the pass cleans) and whose
/// transaction has no data batch in `source` (the closed segments' data batches
/// before the pass). A missing or undecodable file gives no entries (the log's
/// state pass rebuilds it).
pub fn entries(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    cleaned_end: i64,
    source: &[DataBatch],
) -> Result<Vec<AbortedTxn>> {
    let mut out = Vec::new();
    for &base in bases {
        let path = dir.join(filename::build(base, TXN_INDEX_SUFFIX));
        if !fs.exists(&path) {
            continue;
        }
        // One entry per ABORT marker, and every marker is a whole batch of the
        // segment's `.log`: a larger index is not read (like an undecodable one,
        // it is ignored here; the log's state pass rewrites it).
        let log = dir.join(filename::build(base, filename::LOG_SUFFIX));
        let log_bytes = fs.len(&log).map_err(|e| Error::io(&log, e))?;
        let bytes_max = (log_bytes / crate::format::batch::HEADER_LEN as u64)
            .saturating_mul(txn_index::ENTRY_BYTES as u64);
        let Some(bytes) =
            crate::fs::read_bounded(fs, &path, bytes_max).map_err(|e| Error::io(&path, e))?
        else {
            continue;
        };
        let Ok(found) = txn_index::decode(&bytes) else {
            continue;
        };
        out.extend(
            found
                .into_iter()
                .filter(|e| keeps_entry(e, cleaned_end, source)),
        );
    }
    Ok(out)
}

/// [`entries`]' rule for one entry.
pub fn keeps_entry(entry: &AbortedTxn, cleaned_end: i64, source: &[DataBatch]) -> bool {
    entry.last_offset >= cleaned_end
        || source.iter().any(|&(base, pid, transactional)| {
            transactional
                && pid == entry.producer_id
                && entry.first_offset <= base
                && base < entry.last_offset
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ControlKind;
    use txn::TxnFacts;

    fn data(base: i64, pid: i64) -> TxnFacts {
        TxnFacts {
            base_offset: base,
            producer_id: pid,
            transactional: pid >= 0,
            marker: None,
            control: false,
            max_timestamp: 0,
            producer_epoch: 0,
            last_offset: base,
        }
    }

    fn marker(base: i64, pid: i64, kind: ControlKind) -> TxnFacts {
        TxnFacts {
            marker: Some(kind),
            control: true,
            transactional: true,
            ..data(base, pid)
        }
    }

    #[test]
    fn aborted_data_is_marked_and_committed_or_plain_data_is_not() {
        // 0 plain, 1 p7 data, 2 p8 data, 3 ABORT p7, 4 COMMIT p8, 5 p9 data (open).
        let facts = [
            data(0, -1),
            data(1, 7),
            data(2, 8),
            marker(3, 7, ControlKind::Abort),
            marker(4, 8, ControlKind::Commit),
            data(5, 9),
        ];
        let t = KafkaTxn::decide(&facts, 6);
        let aborted: Vec<bool> = (0..6).map(|i| t.aborted(i)).collect();
        assert_eq!(aborted, [false, true, false, false, false, false]);
        assert_eq!(t.last_stable_offset, 5);
        // Segments at 0, 3 and 8 (active): the segment holding offset 5 starts at 3.
        assert_eq!(t.bound(8, &[0, 3, 8]), 3);
        assert_eq!(t.bound(3, &[0, 3, 8]), 3);
        assert_eq!(t.bound(8, &[0, 5, 8]), 5);
    }

    #[test]
    fn an_entry_stays_while_its_data_does_or_its_segment_is_not_cleaned() {
        let entry = AbortedTxn {
            producer_id: 7,
            first_offset: 2,
            last_offset: 10,
            last_stable_offset: 11,
        };
        // A batch of the transaction (first offset moved past a removed one).
        assert!(keeps_entry(&entry, 20, &[(5, 7, true)]));
        // Another producer's, a plain batch, one after the marker: not its data.
        assert!(!keeps_entry(
            &entry,
            20,
            &[(5, 8, true), (6, 7, false), (12, 7, true)]
        ));
        // Before the first offset: an earlier transaction of the producer.
        assert!(!keeps_entry(&entry, 20, &[(1, 7, true)]));
        // The marker's segment is not cleaned: kept as found.
        assert!(keeps_entry(&entry, 10, &[]));
    }

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

    #[test]
    fn an_abort_in_the_active_segment_counts_and_nothing_open_bounds_nothing() {
        // The closed region is batches 0 and 1; the ABORT (batch 2) is active.
        let facts = [data(0, 7), data(1, -1), marker(2, 7, ControlKind::Abort)];
        let t = KafkaTxn::decide(&facts, 2);
        assert!(t.aborted(0));
        assert!(!t.aborted(1));
        assert!(!t.aborted(2), "only closed batches are indexed");
        assert_eq!(t.bound(2, &[0, 2]), 2);
    }
}

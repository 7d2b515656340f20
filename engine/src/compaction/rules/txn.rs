//! Compaction's transaction rules (docs/design.md section 1, "Transactions"; the
//! spec's `spec::txn::compact`), as a pure decision over the batch facts that the
//! header walk (`super::super::headers`) gathers, for either policy.
//!
//! Kafka's `LogCleaner` rules, for the seed policy:
//! - records of aborted transactions never enter the latest-offset map and are
//!   removed (the whole batch: Kafka discards an aborted batch's records);
//! - nothing at or past the last stable offset (the first offset of the earliest
//!   open transaction) enters the map or is cleaned: Kafka's cleaner stops at its
//!   first unstable offset, so an open transaction's records are kept and cannot
//!   be shadowed by, nor shadow, anything;
//! - a COMMIT or ABORT marker is removed only once the log holds no data batch of
//!   its transaction (so a pass that removes a transaction's last records keeps its
//!   marker for a later pass, as Kafka's `CleanedTransactionMetadata` does) and its
//!   delete horizon has passed (`now - timestamp > delete_retention_ms`, the seed
//!   policy's tombstone rule; the kafka policy stamps the horizon instead);
//! - the seed policy keeps no producer's last batch as an empty batch (the kafka
//!   policy does, [`super::retain_empty`]); a control batch with no marker record (an
//!   empty one) takes no part in the rules.
//!
//! Under the `kafka` policy (`KafkaTxn`; docs/design.md section 1, "The kafka
//! policy and transactions"): what Kafka 4.4's cleaner does with transactional
//! data, the same decision over the same facts. The spec's statement of these
//! rules: `model/src/spec/kafka_txn.rs` (conformance holds the engine to it).
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
//! - The `.txnindex` of the output ([`keeps_entry`], which the reader's
//!   `super::super::headers::entries` applies): a segment the pass does not clean
//!   keeps its entries as found; in a cleaned segment an aborted transaction's entry
//!   (as found: its first offset stays) is kept while the source holds a data batch
//!   of the transaction (Kafka's `CleanedTransactionMetadata.onControlBatchRead`
//!   keeps the entry of an ABORT whose transaction it read a batch of in the pass).

use std::collections::BTreeMap;

use crate::format::txn_index::AbortedTxn;
use crate::format::ControlKind;

use super::seed::Horizon;
use crate::compaction::bitmap::Bitmap;

/// What the rules need of one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnFacts {
    /// The batch's base offset.
    pub base_offset: i64,
    /// Its producer id.
    pub producer_id: i64,
    /// Attribute bit 4.
    pub transactional: bool,
    /// The marker of a control batch (`None` for data, or a malformed marker).
    pub marker: Option<ControlKind>,
    /// Attribute bit 5.
    pub control: bool,
    /// The batch's max timestamp (a marker's time).
    pub max_timestamp: i64,
    /// Its producer epoch (for [`super::retain_empty::ActiveProducers`]).
    pub producer_epoch: i16,
    /// Base offset plus last offset delta (for the same).
    pub last_offset: i64,
}

/// One walk's facts: every batch of the log (active segment included), in offset
/// order, for the transaction rules and the `kafka` policy's producers alike.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogFacts {
    /// The facts of every batch.
    pub batches: Vec<TxnFacts>,
    /// How many of them the closed segments hold.
    pub closed_batches: usize,
    /// Some data batch is transactional (else the plain seed rules apply).
    pub transactional: bool,
}

impl LogFacts {
    /// The transaction rules' part: `None` when no data batch is transactional.
    pub fn txn(self) -> Option<(Vec<TxnFacts>, usize)> {
        self.transactional
            .then_some((self.batches, self.closed_batches))
    }
}

/// The rules' decision for a pass, by batch index (every batch of every segment,
/// active included, in offset order: the scan's numbering).
#[derive(Debug, Clone, Default)]
pub struct TxnPlan {
    /// Data batches of aborted transactions: never in the map; removed where cleaned.
    pub aborted: Bitmap,
    /// Markers the pass removes (below the last stable offset, closed region).
    pub drop_markers: Bitmap,
    /// The last stable offset: nothing at or past it is mapped or cleaned.
    pub last_stable_offset: i64,
    /// Batches removed: aborted ones of the closed region and the markers.
    pub dropped_batches: u64,
    /// The aborted-transaction index entries of the compacted log (what a rebuild
    /// from its batches gives: `log::txn`), in marker order.
    pub entries: Vec<AbortedTxn>,
}

impl TxnPlan {
    /// True if batch `index` is removed by the rules (when below `keep_from`).
    pub fn drops(&self, index: usize) -> bool {
        self.aborted.get(index) || self.drop_markers.get(index)
    }
}

/// The rules over `facts` (every batch, in order), of which the first
/// `closed_batches` are in closed segments; `next_offset` ends the log.
pub fn decide(
    facts: &[TxnFacts],
    closed_batches: usize,
    next_offset: i64,
    horizon: Horizon,
) -> TxnPlan {
    let mut plan = TxnPlan::default();
    // Producer -> (first offset, data batch indexes) of its open transaction.
    let mut open: BTreeMap<i64, (i64, Vec<usize>)> = BTreeMap::new();
    let mut markers: Vec<(usize, bool)> = Vec::new(); // (index, ended a transaction with data)
    for (i, f) in facts.iter().enumerate() {
        if !f.transactional {
            continue;
        }
        if !f.control {
            open.entry(f.producer_id)
                .or_insert_with(|| (f.base_offset, Vec::new()))
                .1
                .push(i);
            continue;
        }
        let ended = open.remove(&f.producer_id);
        if let (Some((_, batches)), Some(ControlKind::Abort)) = (&ended, f.marker) {
            for &b in batches {
                plan.aborted.set(b);
            }
        }
        markers.push((i, ended.is_some_and(|(_, b)| !b.is_empty())));
    }
    plan.last_stable_offset = open
        .values()
        .map(|(first, _)| *first)
        .min()
        .unwrap_or(next_offset);
    for (i, with_data) in markers {
        let f = &facts[i];
        let expired = horizon.expired(f.max_timestamp);
        if i < closed_batches && f.base_offset < plan.last_stable_offset && !with_data && expired {
            plan.drop_markers.set(i);
        }
    }
    let lso = plan.last_stable_offset;
    let removed: Vec<bool> = (0..facts.len())
        .map(|i| i < closed_batches && plan.drops(i) && facts[i].base_offset < lso)
        .collect();
    plan.dropped_batches = removed.iter().filter(|r| **r).count() as u64;
    // The entries of what stays (Kafka's ProducerStateManager rules, as the log
    // keeps them): an ABORT marker ending a transaction with data left.
    let mut open: BTreeMap<i64, i64> = BTreeMap::new();
    for (i, f) in facts.iter().enumerate() {
        if !f.transactional || removed[i] {
            continue;
        }
        if !f.control {
            open.entry(f.producer_id).or_insert(f.base_offset);
            continue;
        }
        let Some(first) = open.remove(&f.producer_id) else {
            continue;
        };
        if f.marker == Some(ControlKind::Abort) {
            plan.entries.push(AbortedTxn {
                producer_id: f.producer_id,
                first_offset: first,
                last_offset: f.base_offset,
                last_stable_offset: open.values().copied().min().unwrap_or(f.base_offset + 1),
            });
        }
    }
    plan
}

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
    pub fn decide(facts: &[TxnFacts], closed_batches: usize) -> KafkaTxn {
        // Markers' horizons play no part here: only the aborted data and the last
        // stable offset of the shared rules are used.
        let plan = decide(
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

    /// [`KafkaTxn::decide`] on one walk's facts (the header walk (`super::super::headers::walk`)); `None` when the
    /// log holds no transactional data batch (the plain rules apply).
    pub fn of(facts: &LogFacts) -> Option<KafkaTxn> {
        facts
            .transactional
            .then(|| KafkaTxn::decide(&facts.batches, facts.closed_batches))
    }

    /// True if closed batch `index` is data of an aborted transaction.
    pub fn aborted(&self, index: usize) -> bool {
        self.aborted.get(index).copied().unwrap_or(false)
    }

    /// The first uncleanable offset held at the base of the segment holding the
    /// last stable offset (`bases`: the segment bases, ascending).
    pub fn bound(&self, first_uncleanable: i64, bases: &[i64]) -> i64 {
        stable_bound(first_uncleanable, self.last_stable_offset, bases)
    }
}

/// Kafka's `LogCleanerManager.cleanableOffsets` bound by the last stable offset:
/// `first_uncleanable` held at the base of the segment holding
/// `last_stable_offset` when that offset is below it (`bases`: the segment bases,
/// ascending). An open transaction holds back its segment and every later one.
/// The spec's `stable_bound` is the same rule; [`KafkaTxn::bound`] applies it.
pub fn stable_bound(first_uncleanable: i64, last_stable_offset: i64, bases: &[i64]) -> i64 {
    if last_stable_offset >= first_uncleanable {
        return first_uncleanable;
    }
    bases
        .iter()
        .copied()
        .take_while(|&b| b <= last_stable_offset)
        .last()
        .unwrap_or(first_uncleanable)
        .min(first_uncleanable)
}

/// One data batch of the pass's source: (base offset, producer id, transactional).
pub type DataBatch = (i64, i64, bool);

/// The rule of the reader's `super::super::headers::entries` for one entry.
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

    const LATE: Horizon = Horizon {
        now: 1_000,
        delete_retention_ms: 10,
    };

    #[test]
    fn aborted_batches_go_and_markers_wait_for_their_data() {
        let facts = [
            data(0, 1),
            marker(1, 1, ControlKind::Commit),
            data(2, 2),
            marker(3, 2, ControlKind::Abort),
            marker(4, 3, ControlKind::Abort), // ends nothing
            data(5, -1),
        ];
        let plan = decide(&facts, 5, 6, LATE);
        assert!(plan.aborted.get(2) && !plan.aborted.get(0) && !plan.aborted.get(5));
        assert!(!plan.drop_markers.get(1) && !plan.drop_markers.get(3));
        assert!(plan.drop_markers.get(4));
        assert_eq!(plan.last_stable_offset, 6);
        // Not yet past the horizon: every marker stays.
        let early = Horizon {
            now: 5,
            delete_retention_ms: 10,
        };
        assert_eq!(decide(&facts, 5, 6, early).drop_markers.count(0..6), 0);
        // Once the aborted data is gone, its marker goes too.
        let plan = decide(&[marker(3, 2, ControlKind::Abort)], 1, 4, LATE);
        assert!(plan.drop_markers.get(0));
    }

    #[test]
    fn an_open_transaction_sets_the_last_stable_offset() {
        let facts = [
            data(0, -1),
            data(1, 7),
            marker(2, 8, ControlKind::Commit),
            data(3, -1),
        ];
        let plan = decide(&facts, 4, 4, LATE);
        assert_eq!(plan.last_stable_offset, 1);
        assert!(
            !plan.drop_markers.get(2),
            "past the last stable offset: not cleaned"
        );
        assert_eq!(plan.dropped_batches, 0);
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

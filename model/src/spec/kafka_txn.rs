//! The `kafka` policy's transaction rules (docs/design.md section 1, "The kafka
//! policy and transactions"; engine `src/compaction/kafka_txn.rs`), plugged into
//! the pass of `spec::kafka` at three points. They apply when the log holds a
//! transactional data batch (a log whose only transactional batches are markers
//! takes the plain kafka pass), and follow Kafka 4.4's cleaner:
//!
//! 1. **First uncleanable offset.** `U` is also bounded by the last stable offset
//!    (the first offset of the earliest open transaction, [`super::txn`]): Kafka's
//!    `LogCleanerManager.cleanableOffsets` takes the least of the first unstable
//!    offset, the active segment's base and the lag bound, and `LogToClean` rounds
//!    it down to the base of the segment holding it. So an open transaction's data
//!    is never mapped, and the segment holding its first offset and every later
//!    one are never cleaned: open data is kept.
//! 2. **Map.** A data batch of an aborted transaction (its producer's next marker,
//!    anywhere in the log, is an ABORT) is read *hollow*: none of its keys enters
//!    the map, but the map's last offset `L` still moves past it (Kafka's
//!    `buildOffsetMapForSegment` skips the batch `onBatchRead` calls aborted).
//!    Aborted records thus never shadow committed ones (the bug).
//! 3. **Clean.** In every cleaned segment (base `<= L`) an aborted data batch is
//!    removed whole (Kafka's `shouldDiscardBatch`); every other batch follows the
//!    plain rules of `spec::kafka` (markers pass unchanged).
//!
//! Known differences from Kafka, shared with the engine: Kafka keeps a marker while
//! its transaction has data in the cleaned region and then stamps it with a delete
//! horizon and removes it after that (KIP-534); seglog keeps every marker. Kafka
//! keeps a producer's last data batch as an empty batch (`RETAIN_EMPTY`: producer
//! state); seglog removes it like any other. Neither changes a record any reader
//! sees.

use std::collections::BTreeSet;

use super::txn::{self, Outcome};
use super::SpecLog;

/// The transaction facts of one `kafka` pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KafkaTxnRules {
    /// Base offsets of the data batches of aborted transactions.
    pub aborted: BTreeSet<i64>,
    /// The first offset of the earliest open transaction; `None`: none is open.
    pub last_stable_offset: Option<i64>,
}

impl KafkaTxnRules {
    /// True if the batch at `base_offset` is data of an aborted transaction.
    pub fn aborted(&self, base_offset: i64) -> bool {
        self.aborted.contains(&base_offset)
    }

    /// Rule 1: `first_uncleanable` held at the base of the segment holding the last
    /// stable offset (`bases`: the segment bases, ascending).
    pub fn bound(&self, first_uncleanable: i64, bases: &[i64]) -> i64 {
        let Some(lso) = self.last_stable_offset else {
            return first_uncleanable;
        };
        if lso >= first_uncleanable {
            return first_uncleanable;
        }
        bases
            .iter()
            .copied()
            .take_while(|&b| b <= lso)
            .last()
            .unwrap_or(first_uncleanable)
            .min(first_uncleanable)
    }
}

impl SpecLog {
    /// The rules of a `kafka` pass, or `None` when the log holds no transactional
    /// data batch (the plain pass).
    pub fn kafka_txn_rules(&self) -> Option<KafkaTxnRules> {
        if !self.holds_transactional_data() {
            return None;
        }
        let batches = self.txn_batches();
        let outcomes = txn::outcomes(&batches);
        let aborted = batches
            .iter()
            .zip(&outcomes)
            .filter(|(_, o)| **o == Outcome::Aborted)
            .map(|(b, _)| b.base_offset)
            .collect();
        Some(KafkaTxnRules {
            aborted,
            last_stable_offset: txn::open_transactions(&batches).values().copied().min(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::txn_log::tests::{offsets, rec};
    use super::super::{CleanKnobs, CompactionPolicy, SpecLog};

    const KAFKA: CleanKnobs = CleanKnobs {
        dedupe_buffer_bytes: None,
        min_compaction_lag_ms: 0,
        policy: CompactionPolicy::Kafka,
    };

    fn values(log: &SpecLog) -> Vec<(i64, Option<Vec<u8>>)> {
        log.read_committed(log.log_start_offset())
            .unwrap()
            .into_iter()
            .map(|r| (r.offset, r.value))
            .collect()
    }

    /// The case under the kafka policy: a committed then an aborted
    /// transaction on the same keys (producer 1), then a plain record so that the
    /// markers are closed too.
    #[test]
    fn aborted_records_never_shadow_committed_ones() {
        let mut log = SpecLog::new(1 << 20);
        log.append_transactional(1, &[rec("a", Some("1"), 1), rec("b", Some("1"), 1)])
            .unwrap(); // 0, 1
        log.append_control(true, 2); // 2
        log.append_transactional(1, &[rec("a", Some("x"), 3), rec("b", Some("x"), 3)])
            .unwrap(); // 3, 4
        log.append_control(false, 4); // 5
        log.roll();
        log.append(&[rec("c", Some("1"), 5)]).unwrap(); // 6, active
        let committed = values(&log);
        assert_eq!(committed.len(), 3, "a=1, b=1 and c=1 at offsets 0, 1 and 6");
        log.clean(10, 100, None, KAFKA).unwrap();
        // The aborted batch went; the committed values and both markers stay.
        assert_eq!(offsets(&log), vec![0, 1, 2, 5, 6]);
        assert_eq!(values(&log), committed);
        assert_eq!(log.clean_point(), 6, "L is the ABORT marker");
    }

    #[test]
    fn open_transactions_hold_back_the_first_uncleanable_offset() {
        let mut log = SpecLog::new(1 << 20);
        log.append(&[rec("a", Some("1"), 0)]).unwrap(); // 0
        log.roll();
        log.append(&[rec("a", Some("2"), 0)]).unwrap(); // 1
        log.append_transactional(1, &[rec("a", Some("t"), 0)])
            .unwrap(); // 2, open
        log.roll();
        log.append(&[rec("a", Some("3"), 0)]).unwrap(); // 3
        log.roll();
        log.append(&[rec("z", Some("1"), 0)]).unwrap(); // 4, active
        let rules = log.kafka_txn_rules().unwrap();
        assert_eq!(rules.last_stable_offset, Some(2));
        assert_eq!(rules.bound(4, &[0, 1, 3, 4]), 1, "the segment holding 2");
        log.clean(10, 100, None, KAFKA).unwrap();
        // Only [0, 1) mapped and cleaned: the open record and everything from its
        // segment on stay; offset 0 is not superseded by what was not mapped.
        assert_eq!(offsets(&log), vec![0, 1, 2, 3, 4]);
        assert_eq!(log.clean_point(), 1);
        // Committed, the bound lifts: a=3 supersedes every earlier a.
        log.append_control(true, 0); // 5
        log.roll();
        log.append(&[rec("z", Some("2"), 0)]).unwrap(); // 6
        assert_eq!(log.kafka_txn_rules().unwrap().last_stable_offset, None);
        log.clean(10, 100, None, KAFKA).unwrap();
        assert_eq!(offsets(&log), vec![3, 4, 5, 6]);
    }

    #[test]
    fn an_aborted_batch_moves_the_map_but_maps_no_key() {
        let mut log = SpecLog::new(1 << 20);
        log.append(&[rec("a", Some("1"), 0)]).unwrap(); // 0
        log.append_transactional(1, &[rec("a", Some("x"), 0), rec("b", None, 0)])
            .unwrap(); // 1, 2
        log.append_control(false, 0); // 3
        log.roll();
        let rules = log.kafka_txn_rules().unwrap();
        assert!(rules.aborted(1) && !rules.aborted(0) && !rules.aborted(3));
        let map = log
            .kafka_map(log.active().base_offset, None, Some(&rules))
            .unwrap();
        assert_eq!(map.latest_offset, Some(3));
        assert_eq!(map.latest.len(), 1, "only a@0: the aborted keys stay out");
        assert_eq!(map.latest.get(b"a".as_slice()), Some(&0));
    }

    /// A log whose only transactional batches are markers takes the plain pass.
    #[test]
    fn markers_alone_leave_the_plain_rules() {
        let mut log = SpecLog::new(1 << 20);
        log.append(&[rec("a", Some("1"), 0)]).unwrap();
        log.append_control(false, 0);
        assert_eq!(log.kafka_txn_rules(), None);
    }
}

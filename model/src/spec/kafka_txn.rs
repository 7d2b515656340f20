//! The `kafka` policy's transaction rules (docs/design.md section 1, "The kafka
//! policy and transactions"; engine `engine/src/compaction/kafka_txn.rs`), plugged into
//! the pass of `spec::kafka` at four points. Rules 1 to 3 apply when the log holds
//! a transactional data batch (a log whose only transactional batches are markers
//! takes the plain kafka pass); rule 4 in every kafka pass. They follow Kafka 4.4's
//! cleaner:
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
//!    plain rules of `spec::kafka`, markers rule 4.
//!
//! 4. **Markers** (every `kafka` pass, transactional data in the log or not: Kafka's
//!    cleaner has no plain pass). Walking the batches of the cleaned segments in
//!    offset order, a marker's transaction *has data* when a transactional data batch
//!    of its producer was read since that producer's previous marker
//!    (`CleanedTransactionMetadata`: `onBatchRead` notes the producer,
//!    `onControlBatchRead` takes the note; only what the pass reads counts, and the
//!    pass reads from the log start, so that is every data batch before the
//!    marker). A marker with data stays as it is, even in the pass that removes the
//!    data. One without: with no delete horizon it is stamped with
//!    `now + delete_retention_ms` (its `base_timestamp`, as a tombstone's batch:
//!    `filterTo`'s `containsMarkerForEmptyTxn`, KIP-534); with a horizon it goes on a
//!    pass at or past it (`deleteHorizonMs <= currentTime`), else stays.
//!    [`marker_outcome`], [`MarkerData`].
//!
//! 5. **Empty batches** (every `kafka` pass; Kafka's `BatchRetention.RETAIN_EMPTY`
//!    in `Cleaner.cleanInto`'s `checkBatchRetention`). A batch of an *active*
//!    producer that keeps its producer's state is kept as an empty batch (header
//!    only: record count 0, base timestamp -1, its max timestamp, no delete horizon,
//!    uncompressed, every other field as stored) when nothing of it stays (aborted
//!    data, every record dropped, a marker at its horizon). That batch is the
//!    producer's last data batch (its last offset is the producer's last data
//!    offset), or, for a producer with no data batch at its current epoch, any of
//!    its markers at that epoch. [`ActiveProducers`] reads the producers from the
//!    whole log (active segment included), as Kafka's `lastRecordsOfActiveProducers`
//!    holds them: a producer's epoch, last timestamp (its last batch's max
//!    timestamp) and open transaction are its last batch's; its last data offset is
//!    that of its last data batch at its current epoch (an epoch change clears it,
//!    `ProducerStateEntry.maybeUpdateProducerEpoch`). A producer is active unless it
//!    has no open transaction and `now - last_timestamp >= producer_id_expiration_ms`
//!    (`ProducerStateManager.isProducerExpired`).
//!
//! Known differences from Kafka, shared with the engine: seglog keeps no producer
//! snapshot, so the producer facts are read from the batches as stored. Kafka's
//! come from appends: a producer whose last data batch a cleaning shrank (its max
//! timestamp is then the kept records') or retention deleted (Kafka still knows its
//! offset and keeps none of its markers) may be judged differently. Kafka 4.4 also
//! keeps the batch ending at the high watermark as an empty batch; a cleaned
//! segment never holds it while the active segment holds the log end.

use std::collections::{BTreeMap, BTreeSet};

use super::txn::{self, Outcome};
use super::{Batch, SpecLog, NO_TIMESTAMP};

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

/// Rule 4 for one marker of a cleaned segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerOutcome {
    /// Kept as it is.
    Kept,
    /// Kept, stamped with this delete horizon.
    Stamped(i64),
    /// Removed.
    Removed,
}

/// Rule 4: a marker whose transaction `has_data` in the pass stays; one without is
/// stamped (no `delete_horizon` yet) or goes at or past its horizon.
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
        None => MarkerOutcome::Stamped(super::delete_horizon(now, delete_retention_ms)),
        Some(horizon) if now >= horizon => MarkerOutcome::Removed,
        Some(_) => MarkerOutcome::Kept,
    }
}

/// Rule 4's walk (Kafka's `CleanedTransactionMetadata`): the producers with a
/// transactional data batch read since their last marker.
#[derive(Clone, Debug, Default)]
pub struct MarkerData {
    open: BTreeSet<i64>,
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

/// One producer's state as Kafka's `ProducerStateEntry` holds it (rule 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerFacts {
    /// The epoch of its last batch.
    pub epoch: i16,
    /// The last offset of its last data batch at `epoch`.
    pub last_data_offset: Option<i64>,
    /// Its last batch's max timestamp.
    pub last_timestamp: i64,
    /// Its last batch is transactional data (no marker after it).
    pub open_transaction: bool,
}

/// Rule 5's producers: the active ones (Kafka's `lastRecordsOfActiveProducers`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActiveProducers {
    producers: BTreeMap<i64, ProducerFacts>,
}

impl ActiveProducers {
    /// The producers of `batches` (offset order, the whole log) still active at
    /// `now`.
    pub fn of<'a>(
        batches: impl IntoIterator<Item = &'a Batch>,
        now: i64,
        producer_id_expiration_ms: i64,
    ) -> Self {
        let mut producers: BTreeMap<i64, ProducerFacts> = BTreeMap::new();
        for b in batches.into_iter().filter(|b| b.producer_id >= 0) {
            let facts = producers.entry(b.producer_id).or_insert(ProducerFacts {
                epoch: b.producer_epoch,
                last_data_offset: None,
                last_timestamp: b.max_timestamp,
                open_transaction: false,
            });
            if facts.epoch != b.producer_epoch {
                facts.epoch = b.producer_epoch;
                facts.last_data_offset = None;
            }
            if !b.control {
                facts.last_data_offset = Some(b.last_offset());
            }
            facts.last_timestamp = b.max_timestamp;
            facts.open_transaction = !b.control && b.transactional;
        }
        producers.retain(|_, f| {
            f.open_transaction || now.saturating_sub(f.last_timestamp) < producer_id_expiration_ms
        });
        ActiveProducers { producers }
    }

    /// The facts of active producer `producer_id`.
    pub fn get(&self, producer_id: i64) -> Option<&ProducerFacts> {
        self.producers.get(&producer_id)
    }

    /// Rule 5: `batch` is kept as an empty batch when nothing of it stays.
    pub fn retains_empty(&self, batch: &Batch) -> bool {
        let Some(facts) = self.producers.get(&batch.producer_id) else {
            return false;
        };
        match facts.last_data_offset {
            Some(offset) => batch.last_offset() == offset,
            None => batch.control && batch.producer_epoch == facts.epoch,
        }
    }
}

/// Rule 5's empty batch of `batch` (Kafka's `DefaultRecordBatch.writeEmptyHeader`).
pub fn empty_batch(batch: &Batch) -> Batch {
    Batch {
        base_timestamp: NO_TIMESTAMP,
        records: Vec::new(),
        codec: 0,
        delete_horizon: None,
        ..batch.clone()
    }
}

impl SpecLog {
    /// Rule 5's producers of this log at `now`.
    pub fn active_producers(&self, now: i64, producer_id_expiration_ms: i64) -> ActiveProducers {
        ActiveProducers::of(self.batches(), now, producer_id_expiration_ms)
    }

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
        // Rule 4's tests: every producer is expired by the time of the pass that
        // matters (rule 5 then keeps no empty batch); rule 5's use `ACTIVE`.
        producer_id_expiration_ms: 5,
    };

    const ACTIVE: CleanKnobs = CleanKnobs {
        producer_id_expiration_ms: super::super::PRODUCER_ID_EXPIRATION_MS_DEFAULT,
        ..KAFKA
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

    /// Appends a plain record and rolls: the next pass has something to map.
    fn dirty(log: &mut SpecLog, key: &str) {
        log.append(&[rec(key, Some("d"), 0)]).unwrap();
        log.roll();
    }

    fn batch_at(log: &SpecLog, offset: i64) -> Option<super::super::Batch> {
        log.batches().find(|b| b.base_offset == offset).cloned()
    }

    #[test]
    fn the_marker_outcome_table() {
        use super::{marker_outcome, MarkerOutcome};
        assert_eq!(marker_outcome(true, None, 50, 100), MarkerOutcome::Kept);
        assert_eq!(marker_outcome(true, Some(10), 50, 100), MarkerOutcome::Kept);
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
    }

    /// Rule 4 on a committed transaction: kept in the pass that removes its data,
    /// stamped by the next, kept before the horizon, removed at it.
    #[test]
    fn a_marker_stays_with_its_data_then_is_stamped_then_goes_at_the_horizon() {
        let mut log = SpecLog::new(1 << 20);
        log.append_transactional(1, &[rec("a", Some("1"), 1)])
            .unwrap(); // 0
        log.append_control(true, 2); // 1
        log.append(&[rec("a", Some("2"), 3)]).unwrap(); // 2: supersedes a@0
        log.roll();
        dirty(&mut log, "z"); // 3
        log.clean(10, 100, None, KAFKA).unwrap();
        assert_eq!(
            offsets(&log),
            vec![1, 2, 3],
            "the data went, its marker stays"
        );
        assert_eq!(batch_at(&log, 1).unwrap().delete_horizon, None);
        dirty(&mut log, "y"); // 4
        log.clean(20, 100, None, KAFKA).unwrap();
        let stamped = batch_at(&log, 1).expect("stamped, kept");
        assert_eq!(stamped.delete_horizon, Some(120));
        assert_eq!(stamped.base_timestamp, 120);
        assert_eq!(
            stamped.records[0].timestamp, 2,
            "the record keeps its timestamp"
        );
        dirty(&mut log, "x"); // 5
        log.clean(119, 100, None, KAFKA).unwrap();
        assert_eq!(batch_at(&log, 1).unwrap().delete_horizon, Some(120));
        dirty(&mut log, "w"); // 6
        log.clean(120, 100, None, KAFKA).unwrap();
        assert_eq!(batch_at(&log, 1), None, "gone at the horizon");
        assert_eq!(offsets(&log), vec![2, 3, 4, 5, 6]);
    }

    /// Rule 4 on an aborted transaction, and per producer: producer 2's data
    /// holds its own marker, not producer 1's.
    #[test]
    fn an_abort_marker_outlives_its_removed_data_by_one_pass() {
        let mut log = SpecLog::new(1 << 20);
        log.append_transactional(1, &[rec("a", Some("x"), 0)])
            .unwrap(); // 0
        log.append_transactional(2, &[rec("b", Some("1"), 0)])
            .unwrap(); // 1
        log.append_control(false, 0); // 2: ABORT of producer 1
        log.append_control_of(2, true, 0); // 3: COMMIT of producer 2
        log.roll();
        dirty(&mut log, "z"); // 4
        log.clean(10, 100, None, KAFKA).unwrap();
        // The aborted data went; its marker was read after it, so it stays.
        assert_eq!(offsets(&log), vec![1, 2, 3, 4]);
        assert_eq!(batch_at(&log, 2).unwrap().delete_horizon, None);
        dirty(&mut log, "y"); // 5
        log.clean(20, 100, None, KAFKA).unwrap();
        assert_eq!(batch_at(&log, 2).unwrap().delete_horizon, Some(120));
        assert_eq!(batch_at(&log, 3).unwrap().delete_horizon, None, "b@1 stays");
        dirty(&mut log, "x"); // 6
        log.clean(200, 100, None, KAFKA).unwrap();
        assert_eq!(batch_at(&log, 2), None, "producer 1's, past its horizon");
        assert_eq!(batch_at(&log, 3).unwrap().delete_horizon, None);
    }

    /// A marker with no data ever (a log of markers alone) is stamped by a kafka
    /// pass; under the seed policy it stays as it is.
    #[test]
    fn a_stray_marker_is_stamped_by_kafka_not_by_seed() {
        let build = || {
            let mut log = SpecLog::new(1 << 20);
            log.append(&[rec("a", Some("1"), 0)]).unwrap(); // 0
            log.append_control(false, 0); // 1
            log.roll();
            dirty(&mut log, "z"); // 2
            log
        };
        let mut log = build();
        assert_eq!(log.kafka_txn_rules(), None);
        log.clean(10, 100, None, KAFKA).unwrap();
        assert_eq!(batch_at(&log, 1).unwrap().delete_horizon, Some(110));
        let mut log = build();
        let seed = CleanKnobs {
            policy: CompactionPolicy::Seed,
            ..KAFKA
        };
        log.clean(10, 100, None, seed).unwrap();
        assert_eq!(batch_at(&log, 1).unwrap().delete_horizon, None);
    }

    /// A log whose only transactional batches are markers takes the plain pass.
    #[test]
    fn markers_alone_leave_the_plain_rules() {
        let mut log = SpecLog::new(1 << 20);
        log.append(&[rec("a", Some("1"), 0)]).unwrap();
        log.append_control(false, 0);
        assert_eq!(log.kafka_txn_rules(), None);
    }

    /// Rule 5: an active producer's last data batch, emptied by the pass, stays as
    /// an empty batch (and so holds its marker: the pass reads data before it);
    /// once the producer expires the batch goes and the marker follows rule 4.
    #[test]
    fn an_active_producers_last_data_batch_stays_as_an_empty_batch() {
        let mut log = SpecLog::new(1 << 20);
        log.append_transactional(1, &[rec("a", Some("1"), 1)])
            .unwrap(); // 0
        log.append_transactional(1, &[rec("b", Some("1"), 2)])
            .unwrap(); // 1
        log.append_control(true, 3); // 2
        log.append(&[rec("a", Some("2"), 4), rec("b", Some("2"), 4)])
            .unwrap(); // 3, 4
        log.roll();
        dirty(&mut log, "z"); // 5
        log.clean(10, 100, None, ACTIVE).unwrap();
        assert_eq!(
            batch_at(&log, 0),
            None,
            "not the producer's last data batch"
        );
        let empty = batch_at(&log, 1).expect("the producer's last data batch");
        assert_eq!(empty, super::empty_batch(&empty));
        assert_eq!(
            (
                empty.records.len(),
                empty.base_timestamp,
                empty.max_timestamp
            ),
            (0, -1, 2)
        );
        assert!(empty.transactional);
        assert_eq!((empty.producer_id, empty.producer_epoch), (1, 0));
        dirty(&mut log, "y"); // 6
        log.clean(20, 100, None, ACTIVE).unwrap();
        assert_eq!(batch_at(&log, 1), Some(empty.clone()), "empty, and stable");
        assert_eq!(
            batch_at(&log, 2).unwrap().delete_horizon,
            None,
            "the empty batch is data its marker reads"
        );
        let expired = CleanKnobs {
            producer_id_expiration_ms: 17,
            ..ACTIVE
        };
        dirty(&mut log, "x"); // 7
        log.clean(20, 100, None, expired).unwrap();
        assert_eq!(
            batch_at(&log, 1),
            None,
            "the producer expired (20 - 3 >= 17)"
        );
        dirty(&mut log, "w"); // 8
        log.clean(30, 100, None, expired).unwrap();
        assert_eq!(batch_at(&log, 2).unwrap().delete_horizon, Some(130));
    }

    /// Rule 5 keeps an aborted batch of an active producer as an empty batch,
    /// which the ABORT marker then counts as its data.
    #[test]
    fn an_active_producers_aborted_last_batch_stays_empty_and_holds_its_marker() {
        let mut log = SpecLog::new(1 << 20);
        log.append_transactional(1, &[rec("a", Some("x"), 5)])
            .unwrap(); // 0
        log.append_control(false, 6); // 1
        log.roll();
        dirty(&mut log, "z"); // 2
        log.clean(10, 100, None, ACTIVE).unwrap();
        log.clean(10, 100, None, ACTIVE).unwrap();
        let empty = batch_at(&log, 0).expect("kept empty");
        assert!(empty.records.is_empty());
        assert_eq!(empty.max_timestamp, 5);
        assert_eq!(batch_at(&log, 1).unwrap().delete_horizon, None);
        assert_eq!(values(&log), vec![(2, Some(b"d".to_vec()))]);
    }

    /// Rule 5 for a producer with no data batch at its current epoch: its markers
    /// at that epoch stay as empty control batches at their horizon; a marker of an
    /// older epoch goes whole.
    #[test]
    fn a_producer_without_data_keeps_its_current_epochs_markers_empty() {
        let mut log = SpecLog::new(1 << 20);
        log.append_control_of(2, false, 1); // 0
        log.append_control_of(2, false, 2); // 1
        log.append_control_of(2, false, 3); // 2
        for batch in &mut log.segments[0].batches {
            batch.producer_epoch = if batch.base_offset == 0 { 0 } else { 1 };
        }
        log.roll();
        dirty(&mut log, "z"); // 3
        log.clean(10, 100, None, ACTIVE).unwrap(); // stamps at 110
        dirty(&mut log, "y"); // 4
        log.clean(110, 100, None, ACTIVE).unwrap();
        assert_eq!(batch_at(&log, 0), None, "epoch 0 is not the current epoch");
        for offset in [1, 2] {
            let b = batch_at(&log, offset).expect("kept empty");
            assert!(b.control && b.records.is_empty() && b.delete_horizon.is_none());
        }
    }

    #[test]
    fn active_producers_follow_kafkas_producer_state() {
        use super::super::Batch;
        let batch = |offset: i64, pid: i64, epoch: i16, control: bool, ts: i64| Batch {
            base_offset: offset,
            last_offset_delta: 0,
            control,
            base_timestamp: ts,
            max_timestamp: ts,
            records: Vec::new(),
            codec: 0,
            log_append_time: false,
            delete_horizon: None,
            producer_id: pid,
            transactional: pid != 3,
            producer_epoch: epoch,
        };
        let log = [
            batch(0, 1, 0, false, 10), // 1: data, then its marker
            batch(1, 1, 0, true, 20),
            batch(2, 2, 0, false, 10), // 2: data, then a marker at a new epoch
            batch(3, 2, 1, true, 30),
            batch(4, 3, 0, false, 1), // 3: idempotent, old
            batch(5, 4, 0, false, 1), // 4: an open transaction, old
            batch(6, -1, -1, false, 1),
        ];
        let active = super::ActiveProducers::of(&log, 40, 25);
        let facts = |pid| active.get(pid).copied();
        assert_eq!(facts(1).unwrap().last_data_offset, Some(0));
        assert_eq!(facts(1).unwrap().last_timestamp, 20);
        assert_eq!(
            facts(2).unwrap().last_data_offset,
            None,
            "an epoch change clears it"
        );
        assert_eq!(facts(2).unwrap().epoch, 1);
        assert_eq!(facts(3), None, "40 - 1 >= 25");
        assert!(
            facts(4).unwrap().open_transaction,
            "never expires while open"
        );
        assert_eq!(facts(-1), None);
        assert!(super::ActiveProducers::of(&log, 44, 25).get(1).is_some());
        assert!(
            super::ActiveProducers::of(&log, 45, 25).get(1).is_none(),
            "45 - 20 >= 25"
        );
        assert!(active.retains_empty(&log[0]));
        assert!(
            !active.retains_empty(&log[1]),
            "a marker of a producer with data"
        );
        assert!(active.retains_empty(&log[3]));
        assert!(!active.retains_empty(&log[2]), "data of an older epoch");
        assert!(!active.retains_empty(&log[6]));
    }
}

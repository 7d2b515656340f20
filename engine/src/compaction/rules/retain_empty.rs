//! The `kafka` policy's empty batches (Kafka's `BatchRetention.RETAIN_EMPTY`; spec
//! `model/src/spec/kafka_txn.rs` rule 5, docs/design.md section 1): a batch that
//! keeps an *active* producer's state stays as an empty batch (header only) when
//! nothing of it stays. That batch is the producer's last data batch, or, for a
//! producer with no data batch at its current epoch, any of its markers at that
//! epoch.
//!
//! seglog keeps no producer snapshot: [`ActiveProducers`] reads the producers from
//! every batch header of the log, active segment included (the facts of the one
//! walk `super::super::headers::walk` that the transaction rules read too), as Kafka's
//! `lastRecordsOfActiveProducers` holds them (`ProducerStateEntry`): a producer's
//! epoch, last timestamp and open transaction are its last batch's, its last data
//! offset that of its last data batch at that epoch, and it is active unless it has
//! no open transaction and `now - last_timestamp >= producer_id_expiration_ms`.

use std::collections::HashMap;

use crate::format::batch::{ATTR_COMPRESSION_MASK, ATTR_DELETE_HORIZON};
use crate::format::RecordBatch;

use super::txn::TxnFacts;

/// What rule 5 reads of one batch header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerBatch {
    /// -1: no producer (not counted).
    pub producer_id: i64,
    /// Its epoch.
    pub producer_epoch: i16,
    /// Attribute bit 5 (a marker).
    pub control: bool,
    /// Attribute bit 4.
    pub transactional: bool,
    /// Base offset plus last offset delta.
    pub last_offset: i64,
    /// The header's max timestamp (Kafka's producer `lastTimestamp`).
    pub max_timestamp: i64,
}

/// One producer's state as Kafka's `ProducerStateEntry` holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// The active producers of a log at one cleaning's `now`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActiveProducers {
    producers: HashMap<i64, ProducerFacts>,
}

impl ActiveProducers {
    /// The producers of `batches` (every batch of the log, in offset order) still
    /// active at `now`.
    pub fn of(
        batches: impl IntoIterator<Item = ProducerBatch>,
        now: i64,
        producer_id_expiration_ms: i64,
    ) -> Self {
        let mut producers: HashMap<i64, ProducerFacts> = HashMap::new();
        for b in batches.into_iter().filter(|b| b.producer_id >= 0) {
            let facts = producers.entry(b.producer_id).or_insert(ProducerFacts {
                epoch: b.producer_epoch,
                last_data_offset: None,
                last_timestamp: b.max_timestamp,
                open_transaction: false,
            });
            if facts.epoch != b.producer_epoch {
                // Kafka's `maybeUpdateProducerEpoch` clears the batch metadata.
                facts.epoch = b.producer_epoch;
                facts.last_data_offset = None;
            }
            if !b.control {
                facts.last_data_offset = Some(b.last_offset);
            }
            facts.last_timestamp = b.max_timestamp;
            facts.open_transaction = !b.control && b.transactional;
        }
        producers.retain(|_, f| {
            f.open_transaction || now.saturating_sub(f.last_timestamp) < producer_id_expiration_ms
        });
        ActiveProducers { producers }
    }

    /// [`ActiveProducers::of`] the batch facts of one walk (`super::super::headers::walk`): the
    /// headers the transaction facts come from, so no walk of its own. (A fact's
    /// `transactional` is the attribute bit but for a control batch with no marker
    /// record; `of` reads it of data batches only.)
    pub fn of_facts(facts: &[TxnFacts], now: i64, producer_id_expiration_ms: i64) -> Self {
        Self::of(
            facts.iter().map(|f| ProducerBatch {
                producer_id: f.producer_id,
                producer_epoch: f.producer_epoch,
                control: f.control,
                transactional: f.transactional,
                last_offset: f.last_offset,
                max_timestamp: f.max_timestamp,
            }),
            now,
            producer_id_expiration_ms,
        )
    }

    /// The facts of active producer `producer_id`.
    pub fn get(&self, producer_id: i64) -> Option<&ProducerFacts> {
        self.producers.get(&producer_id)
    }

    /// Rule 5: a batch of `producer_id` at `producer_epoch` ending at
    /// `last_offset` stays as an empty batch when nothing of it stays.
    pub fn retains_empty(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        control: bool,
        last_offset: i64,
    ) -> bool {
        let Some(facts) = self.producers.get(&producer_id) else {
            return false;
        };
        match facts.last_data_offset {
            Some(offset) => last_offset == offset,
            None => control && producer_epoch == facts.epoch,
        }
    }
}

/// The attribute bits an empty batch keeps (timestamp type, transactional,
/// control): no codec, no delete horizon.
pub(crate) const EMPTY_KEEPS: i16 = !(ATTR_COMPRESSION_MASK | ATTR_DELETE_HORIZON);

/// The reference's empty batch of `batch` (Kafka's
/// `DefaultRecordBatch.writeEmptyHeader`): no records, base timestamp -1, its max
/// timestamp, uncompressed, no delete horizon, every other field as stored.
pub fn empty_batch(batch: &RecordBatch) -> RecordBatch {
    RecordBatch {
        attributes: batch.attributes & EMPTY_KEEPS,
        base_timestamp: -1,
        records: Vec::new(),
        ..batch.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::reseal::write_empty;
    use crate::format::batch::HEADER_LEN;
    use crate::format::batch::{ATTR_TRANSACTIONAL, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};
    use crate::format::{Compression, NewRecord};

    fn batch(last: i64, pid: i64, epoch: i16, control: bool, ts: i64) -> ProducerBatch {
        ProducerBatch {
            producer_id: pid,
            producer_epoch: epoch,
            control,
            transactional: pid != 3,
            last_offset: last,
            max_timestamp: ts,
        }
    }

    /// The same cases as the spec's `active_producers_follow_kafkas_producer_state`.
    #[test]
    fn active_producers_follow_kafkas_producer_state() {
        let log = [
            batch(0, 1, 0, false, 10),
            batch(1, 1, 0, true, 20),
            batch(2, 2, 0, false, 10),
            batch(3, 2, 1, true, 30),
            batch(4, 3, 0, false, 1),
            batch(5, 4, 0, false, 1),
            batch(6, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, false, 1),
        ];
        let active = ActiveProducers::of(log, 40, 25);
        assert_eq!(active.get(1).unwrap().last_data_offset, Some(0));
        assert_eq!(active.get(1).unwrap().last_timestamp, 20);
        assert_eq!(active.get(2).unwrap().last_data_offset, None);
        assert_eq!(active.get(2).unwrap().epoch, 1);
        assert_eq!(active.get(3), None, "40 - 1 >= 25");
        assert!(active.get(4).unwrap().open_transaction);
        assert!(ActiveProducers::of(log, 44, 25).get(1).is_some());
        assert!(ActiveProducers::of(log, 45, 25).get(1).is_none());
        assert!(active.retains_empty(1, 0, false, 0));
        assert!(!active.retains_empty(1, 0, true, 1));
        assert!(active.retains_empty(2, 1, true, 3));
        assert!(!active.retains_empty(2, 0, false, 2));
        assert!(!active.retains_empty(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, false, 6));
    }

    /// The header patch writes the reference's encoding, for a compressed,
    /// stamped, transactional LogAppendTime batch too.
    /// A producer whose last batch is a COMMIT or ABORT marker holds no open
    /// transaction: it expires `producer_id_expiration_ms` after that marker, and
    /// its last data batch is no longer kept empty. One whose last batch is
    /// transactional data holds its transaction open and never expires.
    #[test]
    fn a_producer_ended_by_a_marker_expires() {
        let ended = [batch(0, 1, 0, false, 10), batch(1, 1, 0, true, 20)];
        let active = ActiveProducers::of(ended, 1_019, 1_000);
        assert!(
            active.retains_empty(1, 0, false, 0),
            "within its expiration"
        );
        let expired = ActiveProducers::of(ended, 1_020, 1_000);
        assert_eq!(expired.get(1), None, "expired after the marker");
        assert!(!expired.retains_empty(1, 0, false, 0));
        let open = ActiveProducers::of([batch(0, 1, 0, false, 10)], i64::MAX, 1_000);
        assert!(open.get(1).is_some_and(|f| f.open_transaction));
        assert!(open.retains_empty(1, 0, false, 0));
    }

    #[test]
    fn the_empty_header_is_the_reference_encoding() {
        let records = [
            NewRecord::new(Some(b"k".to_vec()), None, 50),
            NewRecord::new(None, Some(b"v".to_vec()), 70),
        ];
        let mut plain = RecordBatch::build(40, &records);
        plain.producer_id = 9;
        plain.producer_epoch = 2;
        plain.base_sequence = 11;
        plain.partition_leader_epoch = 4;
        let mut variants = vec![plain.clone()];
        let mut busy = plain.clone();
        busy.attributes = ATTR_TRANSACTIONAL | ATTR_DELETE_HORIZON | (1 << 3);
        if Compression::Lz4.is_available() {
            busy.attributes |= Compression::Lz4.id();
        }
        busy.base_timestamp = 900;
        variants.push(busy);
        for source in variants {
            let stored = source.encode();
            let mut patched = Vec::new();
            write_empty(&stored, &mut patched);
            let reference = empty_batch(&source);
            assert_eq!(patched, reference.encode());
            assert_eq!(patched.len(), HEADER_LEN);
            let (decoded, _) = crate::format::batch::decode(&patched).unwrap();
            assert!(decoded.records.is_empty());
            assert_eq!(decoded.max_timestamp, source.max_timestamp);
            assert_eq!(decoded.base_timestamp, -1);
            assert_eq!(decoded.attributes & ATTR_COMPRESSION_MASK, 0);
            assert_eq!(decoded.delete_horizon(), None);
        }
    }
}

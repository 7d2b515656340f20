//! The transaction rules of [`super::txn`] applied to a [`SpecLog`]: its batches
//! as [`TxnBatch`]es, `read_committed`, and the `seed` policy's pass over a log
//! holding transactional data (docs/design.md section 1, "Transactions"; engine
//! `engine/src/compaction/rules/txn.rs`).
//!
//! Which pass a `seed` cleaning takes is the engine's decision: the transaction
//! rules when the log (every segment, the active one included) holds a
//! transactional data batch, else the plain rules (markers alone keep the plain
//! rules). The whole log, not only the dirty section: a marker below the clean
//! point goes only under the rules, once its data is gone and its horizon passed.
//!
//! The `seed` pass with the rules: the latest-offset map covers the plain and
//! committed data batches below the last stable offset (all of the log, active
//! segment included, when no transaction is open); the closed batches below the
//! last stable offset are cleaned: an aborted data batch goes, a marker goes once
//! no data batch of its transaction is left in the log and `now - timestamp >
//! delete_retention_ms`, a committed or plain batch keeps the seed rule's records;
//! the clean point moves to the first offset not cleaned, `min(active base, last
//! stable offset)`, never back (Kafka's cleaner does the same), so `cleanable`
//! counts what the pass cleaned as clean. The next pass is a full one again (the
//! incremental map does not apply the rules: the knobs `dedupe_buffer_bytes` and
//! `min_compaction_lag_ms` are not applied either).

use std::collections::BTreeMap;

use super::compact::{compact_batch, compact_closed_batches, tombstone_expired, CompactionSummary};
use super::txn::{self, Marker, Outcome, TxnBatch, TxnKind, TxnRec};
use super::{Batch, ReadRec, SpecError, SpecLog};

impl Batch {
    /// What the batch is for the transaction rules: a marker is a transactional
    /// control batch (its record's key says COMMIT or ABORT).
    pub fn txn_kind(&self) -> TxnKind {
        match (self.control, self.transactional) {
            // An empty control batch (a marker a kafka pass emptied, rule 5 of
            // `kafka_txn`) takes no part: Kafka's producer state skips it.
            (true, true) if self.records.is_empty() => TxnKind::Plain,
            (true, true) => {
                let commit = self
                    .records
                    .first()
                    .and_then(|r| r.key.as_deref())
                    .is_some_and(|k| k == [0, 0, 0, 1]);
                TxnKind::Marker(if commit {
                    Marker::Commit
                } else {
                    Marker::Abort
                })
            }
            (false, true) => TxnKind::Data,
            _ => TxnKind::Plain,
        }
    }

    /// The batch as the rules of [`txn`] see it.
    pub fn txn_batch(&self) -> TxnBatch {
        TxnBatch {
            base_offset: self.base_offset,
            last_offset: self.last_offset(),
            producer_id: self.producer_id,
            kind: self.txn_kind(),
            timestamp: self.max_timestamp,
            records: self
                .records
                .iter()
                .map(|r| TxnRec {
                    offset: r.offset,
                    key: r.key.clone(),
                    value: r.value.clone(),
                    timestamp: r.timestamp,
                })
                .collect(),
        }
    }
}

impl SpecLog {
    /// Every batch as a [`TxnBatch`], oldest first.
    pub fn txn_batches(&self) -> Vec<TxnBatch> {
        self.batches().map(Batch::txn_batch).collect()
    }

    /// True if the log holds a transactional data batch (markers do not count).
    pub fn holds_transactional_data(&self) -> bool {
        self.batches().any(Batch::is_transactional_data)
    }

    /// The last stable offset: the first offset of the earliest open transaction,
    /// or `next_offset`.
    pub fn last_stable_offset(&self) -> i64 {
        txn::last_stable_offset(&self.txn_batches(), self.next_offset())
    }

    /// What a `read_committed` reader gets from `from`: the data records below the
    /// last stable offset that are not in an aborted transaction; never a marker.
    /// Out of range as [`SpecLog::read`].
    pub fn read_committed(&self, from: i64) -> Result<Vec<ReadRec>, SpecError> {
        let all = self.read(from)?;
        let batches = self.txn_batches();
        let lso = txn::last_stable_offset(&batches, self.next_offset());
        let outcomes = txn::outcomes(&batches);
        let hidden: Vec<(i64, i64)> = batches
            .iter()
            .zip(&outcomes)
            .filter(|(b, o)| matches!(b.kind, TxnKind::Marker(_)) || **o == Outcome::Aborted)
            .map(|(b, _)| (b.base_offset, b.last_offset))
            .collect();
        Ok(all
            .into_iter()
            .filter(|r| r.offset < lso)
            .filter(|r| !hidden.iter().any(|&(a, b)| a <= r.offset && r.offset <= b))
            .collect())
    }

    /// True if a `seed` pass applies the transaction rules (the module docs).
    pub(super) fn seed_txn_applies(&self) -> bool {
        self.holds_transactional_data()
    }

    /// The `seed` pass with the transaction rules (the module docs); the caller
    /// checked the arguments and that there is a closed segment.
    pub(super) fn clean_seed_txn(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        group_bytes_max: u64,
    ) -> CompactionSummary {
        let batches = self.txn_batches();
        let lso = txn::last_stable_offset(&batches, self.next_offset());
        let closed_end = self.active().base_offset.min(lso);
        let outcomes = txn::outcomes(&batches);
        let latest = txn::latest_offsets(&batches, lso);
        let with_data = txn::markers_with_data(&batches);
        // By base offset: (outcome, a marker ending a transaction with data).
        let facts: BTreeMap<i64, (Outcome, bool)> = batches
            .iter()
            .zip(&outcomes)
            .enumerate()
            .map(|(i, (b, o))| (b.base_offset, (*o, with_data.contains(&i))))
            .collect();
        let keep = |_: &Batch, r: &super::Rec| match &r.key {
            None => true,
            Some(k) => {
                latest.get(k) == Some(&r.offset) && !tombstone_expired(r, now, delete_retention_ms)
            }
        };
        let summary = compact_closed_batches(self, group_bytes_max, |b| {
            if b.base_offset >= closed_end {
                return Some(b.clone());
            }
            let (outcome, ended_data) = facts[&b.base_offset];
            match b.txn_kind() {
                TxnKind::Marker(_) => (ended_data
                    || !txn::marker_expired(b.max_timestamp, now, delete_retention_ms))
                .then(|| b.clone()),
                _ if outcome == Outcome::Aborted => None,
                _ if outcome == Outcome::Open => Some(b.clone()),
                _ => compact_batch(b, &keep),
            }
        });
        assert!(closed_end >= self.log_start_offset());
        assert!(closed_end <= self.active().base_offset);
        self.clean_point = self.clean_point.max(closed_end);
        debug_assert_eq!(self.clean_section_duplicate(), None);
        summary
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::{CleanKnobs, SpecLog, SpecRecordInput};

    /// A keyed record (the spec's transaction tests share it).
    pub(in crate::spec) fn rec(key: &str, value: Option<&str>, ts: i64) -> SpecRecordInput {
        SpecRecordInput {
            key: Some(key.as_bytes().to_vec()),
            value: value.map(|v| v.as_bytes().to_vec()),
            timestamp: ts,
        }
    }

    /// The offsets the log holds.
    pub(in crate::spec) fn offsets(log: &SpecLog) -> Vec<i64> {
        log.records().map(|(r, _)| r.offset).collect()
    }

    /// The case under the seed policy, on the spec's log: the aborted
    /// batch goes (its keyless record too, which the seed rule keeps), its marker waits for
    /// its horizon, the committed values stay.
    #[test]
    fn the_seed_pass_applies_the_rules_to_a_log_with_transactional_data() {
        let mut log = SpecLog::new(1 << 20);
        log.append_transactional(1, &[rec("a", Some("1"), 1), rec("b", Some("1"), 1)])
            .unwrap(); // 0, 1
        log.append_control(true, 10); // 2
        let keyless = SpecRecordInput {
            key: None,
            ..rec("", Some("x"), 3)
        };
        let aborted = [rec("a", Some("x"), 3), rec("b", Some("x"), 3), keyless];
        log.append_transactional(1, &aborted).unwrap(); // 3, 4, 5
        log.append_control(false, 10); // 6
        log.roll();
        log.append(&[rec("c", Some("1"), 5)]).unwrap(); // 7
        let committed = log.read_committed(0).unwrap();
        assert_eq!(
            committed.iter().map(|r| r.offset).collect::<Vec<_>>(),
            [0, 1, 7]
        );
        assert!(log.seed_txn_applies());
        log.compact(20, 100, None).unwrap();
        assert_eq!(offsets(&log), vec![0, 1, 2, 6, 7]);
        assert_eq!(log.read_committed(0).unwrap(), committed);
        assert_eq!(
            log.clean_point(),
            7,
            "the clean point moves to the active base (no transaction is open)"
        );
        // Past the horizon: the ABORT marker has no data left and goes; the
        // COMMIT marker stays while its records do.
        log.clean(1_000, 100, None, CleanKnobs::default()).unwrap();
        assert_eq!(offsets(&log), vec![0, 1, 2, 7]);
    }

    #[test]
    fn read_committed_stops_at_the_first_open_transaction() {
        let mut log = SpecLog::new(1 << 20);
        log.append(&[rec("a", Some("1"), 0)]).unwrap(); // 0
        log.append_transactional(1, &[rec("a", Some("x"), 0)])
            .unwrap(); // 1, open
        log.append(&[rec("b", Some("1"), 0)]).unwrap(); // 2
        assert_eq!(log.last_stable_offset(), 1);
        let read = |log: &SpecLog, from| -> Vec<i64> {
            log.read_committed(from)
                .unwrap()
                .iter()
                .map(|r| r.offset)
                .collect()
        };
        assert_eq!(read(&log, 0), [0]);
        log.append_control(false, 0); // 3: aborted
        assert_eq!(read(&log, 0), [0, 2]);
        assert_eq!(read(&log, 1), [2]);
        assert!(log.read_committed(5).is_err());
    }

    /// Markers alone: the plain seed rules (markers kept, clean point moves).
    #[test]
    fn markers_alone_leave_the_plain_seed_rules() {
        let mut log = SpecLog::new(1 << 20);
        log.append(&[rec("a", Some("1"), 0)]).unwrap();
        log.append_control(false, 0);
        log.roll();
        assert!(!log.seed_txn_applies());
        log.compact(1_000, 1, None).unwrap();
        assert_eq!(offsets(&log), vec![0, 1]);
        assert_eq!(log.clean_point(), 2);
    }
}

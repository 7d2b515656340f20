//! Bounded `read_committed` (docs/design.md section 1, "Transactions"): what a
//! `read_committed` fetch with a byte bound returns, and what a `read_committed`
//! read with a byte bound returns.
//!
//! - [`SpecLog::fetch_committed`] is Kafka's `read_committed` fetch: the batches of
//!   [`SpecLog::fetch`] below the last stable offset (whole batches up to the bound,
//!   at least one), and the aborted transactions overlapping them (Kafka's
//!   `collectAbortedTxns(from, upper)` with `upper` the fetch's next offset; none
//!   when the fetch is empty).
//! - [`SpecLog::read_committed_max`] is the consumer over such fetches: it walks the
//!   batches ending at or after `from` and below the last stable offset, across
//!   segments, counting every batch's bytes (markers and aborted batches too); the
//!   first batch always, and past a batch that does not fit only while no record
//!   has been returned yet (a wholly hidden prefix does not end the read, so an
//!   empty result means nothing committed is left below the last stable offset).

use super::txn::{self, AbortedTxn, Outcome};
use super::{Batch, Fetched, ReadRec, SpecError, SpecLog};

/// What a `read_committed` fetch returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommittedFetch {
    /// Whole batches of one segment, all below the last stable offset.
    pub fetched: Fetched,
    /// The aborted transactions overlapping `[from, fetched.next_offset)`, in
    /// marker order; empty when no batch was fetched.
    pub aborted: Vec<AbortedTxn>,
}

/// True if `aborted` hides `batch` from a `read_committed` reader: a transactional
/// data batch of a producer with an entry whose `[first_offset, last_offset]`
/// holds the batch's base offset.
pub fn aborted_hides(aborted: &[AbortedTxn], batch: &Batch) -> bool {
    batch.transactional
        && !batch.control
        && aborted.iter().any(|t| {
            t.producer_id == batch.producer_id
                && t.first_offset <= batch.base_offset
                && batch.base_offset <= t.last_offset
        })
}

impl SpecLog {
    /// `Log::fetch_with(from, max_bytes, ReadCommitted)` (the module docs). Out of
    /// range as [`SpecLog::fetch`].
    pub fn fetch_committed(&self, from: i64, max_bytes: u64) -> Result<CommittedFetch, SpecError> {
        let fetched = self.fetch(from, max_bytes)?;
        let lso = self.last_stable_offset();
        let batches: Vec<Batch> = fetched
            .batches
            .into_iter()
            .take_while(|b| b.base_offset < lso)
            .collect();
        let next_offset = batches.last().map_or(from, |b| b.last_offset() + 1);
        let aborted = if batches.is_empty() {
            Vec::new()
        } else {
            txn::aborted_between(&txn::aborted_txns(&self.txn_batches()), from, next_offset)
        };
        Ok(CommittedFetch {
            fetched: Fetched {
                batches,
                next_offset,
            },
            aborted,
        })
    }

    /// `Log::read_with(from, max_bytes, ReadCommitted)` (the module docs): the
    /// records of [`SpecLog::read_committed`] in the batches the walk takes.
    pub fn read_committed_max(&self, from: i64, max_bytes: u64) -> Result<Vec<ReadRec>, SpecError> {
        let visible = self.read_committed(from)?;
        let lso = self.last_stable_offset();
        let mut total_bytes: u64 = 0;
        let mut returned_any = false;
        let mut end = None;
        for batch in self
            .batches()
            .filter(|b| b.last_offset() >= from && b.base_offset < lso)
        {
            let bytes = batch.bytes();
            if returned_any && total_bytes.saturating_add(bytes) > max_bytes {
                break;
            }
            total_bytes = total_bytes.saturating_add(bytes);
            end = Some(batch.last_offset());
            returned_any |= visible
                .iter()
                .any(|r| batch.base_offset <= r.offset && r.offset <= batch.last_offset());
        }
        Ok(visible
            .into_iter()
            .filter(|r| end.is_some_and(|end| r.offset <= end))
            .collect())
    }

    /// The outcome of each batch's transaction, by base offset (the rules of
    /// [`txn::outcomes`]).
    pub fn outcome_of(&self, base_offset: i64) -> Option<Outcome> {
        let batches = self.txn_batches();
        let outcomes = txn::outcomes(&batches);
        batches
            .iter()
            .zip(outcomes)
            .find(|(b, _)| b.base_offset == base_offset)
            .map(|(_, o)| o)
    }
}

#[cfg(test)]
mod tests {
    use super::super::txn_log::tests::rec;
    use super::super::SpecLog;
    use super::*;

    fn offsets(records: &[ReadRec]) -> Vec<i64> {
        records.iter().map(|r| r.offset).collect()
    }

    /// 0: plain, 1: aborted data (producer 1), 2: ABORT, 3: plain, 4: committed
    /// data (producer 1), 5: COMMIT, 6: open data (producer 1), 7: plain.
    fn mixed() -> SpecLog {
        let mut log = SpecLog::new(1 << 20);
        log.append(&[rec("a", Some("1"), 0)]).unwrap();
        log.append_transactional(1, &[rec("b", Some("x"), 0)])
            .unwrap();
        log.append_control_of(1, false, 0);
        log.append(&[rec("c", Some("1"), 0)]).unwrap();
        log.append_transactional(1, &[rec("d", Some("y"), 0)])
            .unwrap();
        log.append_control_of(1, true, 0);
        log.append_transactional(1, &[rec("e", Some("z"), 0)])
            .unwrap();
        log.append(&[rec("f", Some("1"), 0)]).unwrap();
        log
    }

    #[test]
    fn bounded_read_committed_takes_whole_batches_and_skips_hidden_ones() {
        let log = mixed();
        assert_eq!(log.last_stable_offset(), 6);
        let unbounded = log.read_committed(0).unwrap();
        assert_eq!(offsets(&unbounded), [0, 3, 4]);
        assert_eq!(log.read_committed_max(0, u64::MAX).unwrap(), unbounded);
        // One byte: one batch with a record.
        assert_eq!(offsets(&log.read_committed_max(0, 1).unwrap()), [0]);
        // From the aborted batch: the hidden prefix (data, marker) does not end
        // the read; the first record returned does.
        assert_eq!(offsets(&log.read_committed_max(1, 1).unwrap()), [3]);
        // Every batch's bytes count, hidden ones too.
        let sizes: Vec<u64> = log.batches().map(Batch::bytes).collect();
        let first_three = sizes[0] + sizes[1] + sizes[2];
        assert_eq!(
            offsets(&log.read_committed_max(0, first_three).unwrap()),
            [0]
        );
        let first_four = first_three + sizes[3];
        assert_eq!(
            offsets(&log.read_committed_max(0, first_four).unwrap()),
            [0, 3]
        );
        // At or past the last stable offset: nothing; past the end: out of range.
        assert!(log.read_committed_max(6, 1).unwrap().is_empty());
        assert!(log.read_committed_max(9, 1).is_err());
    }

    #[test]
    fn committed_fetch_stops_below_the_last_stable_offset_and_lists_overlapping_aborts() {
        let log = mixed();
        let fetch = log.fetch_committed(0, u64::MAX).unwrap();
        let bases: Vec<i64> = fetch
            .fetched
            .batches
            .iter()
            .map(|b| b.base_offset)
            .collect();
        assert_eq!(bases, [0, 1, 2, 3, 4, 5]);
        assert_eq!(fetch.fetched.next_offset, 6);
        assert_eq!(fetch.aborted.len(), 1);
        assert_eq!(fetch.aborted[0].first_offset, 1);
        assert_eq!(fetch.aborted[0].last_offset, 2);
        // The list hides exactly the aborted data batches.
        for batch in &fetch.fetched.batches {
            let aborted = log.outcome_of(batch.base_offset) == Some(Outcome::Aborted);
            assert_eq!(aborted_hides(&fetch.aborted, batch), aborted);
        }
        // One byte: one batch; the abort overlaps [0, 1) only through its first
        // offset (1), so it is not listed; from 1 it is.
        let one = log.fetch_committed(0, 1).unwrap();
        assert_eq!(one.fetched.batches.len(), 1);
        assert_eq!(one.fetched.next_offset, 1);
        assert!(one.aborted.is_empty());
        assert_eq!(log.fetch_committed(1, 1).unwrap().aborted.len(), 1);
        // Past the abort marker it is not listed.
        assert!(log.fetch_committed(3, u64::MAX).unwrap().aborted.is_empty());
        // From the open transaction: empty, nothing listed, next offset = from.
        let open = log.fetch_committed(6, u64::MAX).unwrap();
        assert!(open.fetched.batches.is_empty());
        assert_eq!(open.fetched.next_offset, 6);
        assert!(open.aborted.is_empty());
        assert!(log.fetch_committed(9, 1).is_err());
    }
}

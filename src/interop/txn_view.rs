//! The transaction view of a log, as seglog reads it and as Kafka's harness
//! (`clean`, `txnread`) reads it, for the cleaner differential with transactions
//! ([`super::differential::txn_workload`]).
//!
//! Invariants compared ([`same`]):
//! * every stored record's batch facts: producer id, transactional and control bits,
//!   delete horizon (so the surviving markers are the same, stamped alike);
//! * the last stable offset;
//! * the aborted transactions over the whole log (Kafka's
//!   `collectAbortedTransactions`, read from the `.txnindex` files; seglog's
//!   [`Log::aborted_transactions`]);
//! * the offsets a `read_committed` reader returns (Kafka: a `TXN_COMMITTED` fetch
//!   filtered as the consumer does; seglog: [`Log::read_with`] at
//!   [`Isolation::ReadCommitted`]).

use serde::Deserialize;

use seglog::format::batch::{ATTR_DELETE_HORIZON, ATTR_TRANSACTIONAL};
use seglog::{Isolation, Log};

/// One record's batch facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct TxnRecord {
    pub offset: i64,
    pub producer_id: i64,
    pub transactional: bool,
    pub control: bool,
    /// The batch's delete horizon (attribute bit 6), if stamped: a marker's and a
    /// tombstone batch's stamp are compared too.
    #[serde(default)]
    pub delete_horizon: Option<i64>,
}

/// One aborted transaction (a `.txnindex` entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct TxnAborted {
    pub producer_id: i64,
    pub first_offset: i64,
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

/// What Kafka's harness writes of a log's transactions (fields of `clean`'s and
/// `txnread`'s output).
#[derive(Debug, Clone, Deserialize)]
pub struct KafkaTxnView {
    #[serde(rename = "records")]
    pub records: Vec<TxnRecord>,
    pub last_stable_offset: i64,
    pub aborted: Vec<TxnAborted>,
    pub committed: Vec<i64>,
}

/// seglog's transaction view of `log`.
pub fn seglog_txn_view(log: &Log) -> Result<KafkaTxnView, String> {
    let err = |e: seglog::Error| e.to_string();
    // Batch facts by offset range, from the stored batches.
    let mut batches: Vec<(i64, i64, i64, bool, bool, Option<i64>)> = Vec::new();
    let mut at = log.log_start_offset();
    while at < log.next_offset() {
        let fetch = log.fetch(at, usize::MAX).map_err(err)?;
        if fetch.is_empty() {
            break;
        }
        for batch in fetch.batches() {
            let batch = batch.map_err(err)?;
            batches.push((
                batch.base_offset,
                batch.base_offset + i64::from(batch.last_offset_delta),
                batch.producer_id,
                batch.attributes & ATTR_TRANSACTIONAL != 0,
                batch.is_control(),
                (batch.attributes & ATTR_DELETE_HORIZON != 0).then_some(batch.base_timestamp),
            ));
        }
        at = fetch.next_offset();
    }
    let mut records = Vec::new();
    let mut from = log.log_start_offset();
    loop {
        let read = log.read(from, 1 << 20).map_err(err)?;
        let Some(last) = read.last() else { break };
        from = last.offset + 1;
        for r in &read {
            let &(_, _, producer_id, transactional, control, delete_horizon) = batches
                .iter()
                .find(|b| b.0 <= r.offset && r.offset <= b.1)
                .ok_or_else(|| format!("record {} in no batch", r.offset))?;
            records.push(TxnRecord {
                offset: r.offset,
                producer_id,
                transactional,
                control,
                delete_horizon,
            });
        }
    }
    let aborted = log
        .aborted_transactions(log.log_start_offset(), log.next_offset())
        .map_err(err)?
        .into_iter()
        .map(|t| TxnAborted {
            producer_id: t.producer_id,
            first_offset: t.first_offset,
            last_offset: t.last_offset,
            last_stable_offset: t.last_stable_offset,
        })
        .collect();
    let mut committed = Vec::new();
    let mut from = log.log_start_offset();
    loop {
        let read = log
            .read_with(from, 1 << 20, Isolation::ReadCommitted)
            .map_err(err)?;
        let Some(last) = read.last() else { break };
        from = last.offset + 1;
        committed.extend(read.iter().map(|r| r.offset));
    }
    Ok(KafkaTxnView {
        records,
        last_stable_offset: log.last_stable_offset().map_err(err)?,
        aborted,
        committed,
    })
}

/// [`same`] when `ours` has no open transaction (its last stable offset is
/// `next_offset`); else only the record facts and the aborted transactions. Kafka
/// opening seglog's cleanly closed directory has no producer snapshot and takes
/// no transaction open (a documented difference: docs/design.md section 8).
pub fn same_as_opened_by_kafka(
    ours: &KafkaTxnView,
    theirs: &KafkaTxnView,
    next_offset: i64,
) -> Result<(), String> {
    if ours.last_stable_offset == next_offset {
        return same(ours, theirs);
    }
    let files = |v: &KafkaTxnView| KafkaTxnView {
        last_stable_offset: 0,
        committed: Vec::new(),
        ..v.clone()
    };
    same(&files(ours), &files(theirs))
}

/// `Ok` if the two views are the same, else the first difference (`ours` first).
pub fn same(ours: &KafkaTxnView, theirs: &KafkaTxnView) -> Result<(), String> {
    if let Some((a, b)) = ours
        .records
        .iter()
        .zip(&theirs.records)
        .find(|(a, b)| a != b)
    {
        return Err(format!("record facts: seglog {a:?}, Kafka {b:?}"));
    }
    if ours.records.len() != theirs.records.len() {
        return Err(format!(
            "records: seglog {}, Kafka {}",
            ours.records.len(),
            theirs.records.len()
        ));
    }
    if ours.last_stable_offset != theirs.last_stable_offset {
        return Err(format!(
            "last stable offset: seglog {}, Kafka {}",
            ours.last_stable_offset, theirs.last_stable_offset
        ));
    }
    if ours.aborted != theirs.aborted {
        return Err(format!(
            "aborted transactions: seglog {:?}, Kafka {:?}",
            ours.aborted, theirs.aborted
        ));
    }
    if ours.committed != theirs.committed {
        let first = ours
            .committed
            .iter()
            .zip(&theirs.committed)
            .find(|(a, b)| a != b);
        return Err(format!(
            "read_committed offsets: seglog {} ({:?}), Kafka {} (first difference {first:?})",
            ours.committed.len(),
            ours.committed.iter().take(40).collect::<Vec<_>>(),
            theirs.committed.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> KafkaTxnView {
        KafkaTxnView {
            records: vec![TxnRecord {
                offset: 0,
                producer_id: 7,
                transactional: true,
                control: false,
                delete_horizon: None,
            }],
            last_stable_offset: 2,
            aborted: vec![TxnAborted {
                producer_id: 7,
                first_offset: 0,
                last_offset: 1,
                last_stable_offset: 2,
            }],
            committed: vec![],
        }
    }

    #[test]
    fn every_field_is_compared() {
        assert_eq!(same(&view(), &view()), Ok(()));
        let mut other = view();
        other.records[0].control = true;
        assert!(same(&view(), &other).unwrap_err().contains("record facts"));
        let mut other = view();
        other.records[0].delete_horizon = Some(5);
        assert!(same(&view(), &other).unwrap_err().contains("record facts"));
        let mut other = view();
        other.records.clear();
        assert!(same(&view(), &other).unwrap_err().contains("records"));
        let mut other = view();
        other.last_stable_offset = 1;
        assert!(same(&view(), &other).unwrap_err().contains("stable"));
        let mut other = view();
        other.aborted[0].last_stable_offset = 1;
        assert!(same(&view(), &other).unwrap_err().contains("aborted"));
        let mut other = view();
        other.committed.push(0);
        assert!(same(&view(), &other)
            .unwrap_err()
            .contains("read_committed"));
        // Opened by Kafka: the open transaction's offsets are compared only when
        // none is open (the view's last stable offset 2 is the log end).
        assert!(same_as_opened_by_kafka(&view(), &other, 2).is_err());
        assert_eq!(same_as_opened_by_kafka(&view(), &other, 3), Ok(()));
        let mut other = view();
        other.aborted.clear();
        assert!(same_as_opened_by_kafka(&view(), &other, 3).is_err());
    }
}

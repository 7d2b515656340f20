//! Transactions: the reference rules for Kafka's transactional batches and markers
//! (docs/design.md section 1, "Transactions"), on their own small types so that both
//! compaction policies can use them.
//!
//! - A transactional data batch of producer `p` belongs to `p`'s open transaction;
//!   the transaction ends at `p`'s next COMMIT or ABORT marker (Kafka's
//!   `ProducerStateManager`: the transaction's first offset is the base offset of its
//!   first batch; a marker with no open transaction ends nothing).
//! - The aborted-transaction index (`.txnindex`) holds, for each ABORT marker that
//!   ends a transaction, `(producer, first offset, marker offset, last stable offset)`,
//!   where the last stable offset is the first offset of the earliest transaction of
//!   *another* producer still open when the marker is written, or `marker + 1`
//!   (`ProducerStateManager.lastStableOffset(completedTxn)`).
//! - `read_committed` returns the data records below the last stable offset (the
//!   first offset of the earliest open transaction, or the log end) that are not in an
//!   aborted transaction; markers are never returned.
//! - Compaction (`LogCleaner`'s rules, KIP-98 and KIP-534 / KAFKA-8522): records of
//!   aborted transactions never enter the latest-offset map and are removed; records
//!   of open transactions never enter the map and are kept; a marker is removed only
//!   when the cleaned region holds no data batch of its transaction any more and its
//!   delete horizon has passed (`now - timestamp > delete_retention_ms`, the seed
//!   policy's tombstone rule); otherwise it is kept. A transaction's records removed
//!   in one pass thus leave its marker for a later pass, as in Kafka.
//! - The rules apply to a log holding transactional data batches; a log whose only
//!   transactional batches are markers is compacted by the plain seed rules (markers
//!   pass unchanged, as `spec::compact` has them).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// A transaction marker's type (the control record's key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Marker {
    Commit,
    Abort,
}

/// What a batch is, for the transaction rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TxnKind {
    /// Not transactional (producer id may be -1).
    Plain,
    /// A transactional data batch.
    Data,
    /// A control batch (one marker record).
    Marker(Marker),
}

/// A record of a [`TxnBatch`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TxnRec {
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub timestamp: i64,
}

/// A batch with the fields the transaction rules read.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TxnBatch {
    pub base_offset: i64,
    pub last_offset: i64,
    pub producer_id: i64,
    pub kind: TxnKind,
    /// The marker's timestamp (its delete horizon is counted from it).
    pub timestamp: i64,
    pub records: Vec<TxnRec>,
}

/// One entry of Kafka's aborted-transaction index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

/// The fate of a data batch's transaction, as the whole log tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Outcome {
    /// Not transactional.
    Plain,
    Committed,
    Aborted,
    /// No marker yet.
    Open,
}

/// Per batch (same order as `batches`): the outcome of a data batch's transaction
/// (`Plain` for markers too), and for each marker whether it ended a transaction
/// that had data batches in the log (`ended_data`).
pub fn outcomes(batches: &[TxnBatch]) -> Vec<Outcome> {
    let mut out = vec![Outcome::Plain; batches.len()];
    let mut open: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, b) in batches.iter().enumerate() {
        match b.kind {
            TxnKind::Plain => {}
            TxnKind::Data => {
                out[i] = Outcome::Open;
                open.entry(b.producer_id).or_default().push(i);
            }
            TxnKind::Marker(m) => {
                for j in open.remove(&b.producer_id).unwrap_or_default() {
                    out[j] = match m {
                        Marker::Commit => Outcome::Committed,
                        Marker::Abort => Outcome::Aborted,
                    };
                }
            }
        }
    }
    out
}

/// The open transactions after `batches`: producer -> first offset.
pub fn open_transactions(batches: &[TxnBatch]) -> BTreeMap<i64, i64> {
    let mut open = BTreeMap::new();
    for b in batches {
        match b.kind {
            TxnKind::Plain => {}
            TxnKind::Data => {
                open.entry(b.producer_id).or_insert(b.base_offset);
            }
            TxnKind::Marker(_) => {
                open.remove(&b.producer_id);
            }
        }
    }
    open
}

/// The last stable offset: the first offset of the earliest open transaction, or
/// `next_offset` when none is open.
pub fn last_stable_offset(batches: &[TxnBatch], next_offset: i64) -> i64 {
    open_transactions(batches)
        .values()
        .copied()
        .min()
        .unwrap_or(next_offset)
}

/// The aborted-transaction index entries of the log, in marker order.
pub fn aborted_txns(batches: &[TxnBatch]) -> Vec<AbortedTxn> {
    let mut open: BTreeMap<i64, i64> = BTreeMap::new();
    let mut out = Vec::new();
    for b in batches {
        match b.kind {
            TxnKind::Plain => {}
            TxnKind::Data => {
                open.entry(b.producer_id).or_insert(b.base_offset);
            }
            TxnKind::Marker(m) => {
                let Some(first) = open.remove(&b.producer_id) else {
                    continue;
                };
                if m == Marker::Abort {
                    let lso = open.values().copied().min().unwrap_or(b.last_offset + 1);
                    out.push(AbortedTxn {
                        producer_id: b.producer_id,
                        first_offset: first,
                        last_offset: b.last_offset,
                        last_stable_offset: lso,
                    });
                }
            }
        }
    }
    out
}

/// Kafka's `collectAbortedTxns(from, upper)`: the entries with
/// `last_offset >= from` and `first_offset < upper`.
pub fn aborted_between(entries: &[AbortedTxn], from: i64, upper: i64) -> Vec<AbortedTxn> {
    entries
        .iter()
        .filter(|t| t.last_offset >= from && t.first_offset < upper)
        .copied()
        .collect()
}

/// The offsets a `read_committed` reader gets from offset 0 of a log ending at
/// `next_offset`: data records below the last stable offset, not aborted.
pub fn read_committed(batches: &[TxnBatch], next_offset: i64) -> Vec<i64> {
    let lso = last_stable_offset(batches, next_offset);
    let outcome = outcomes(batches);
    batches
        .iter()
        .zip(&outcome)
        .filter(|(b, o)| !matches!(b.kind, TxnKind::Marker(_)) && **o != Outcome::Aborted)
        .flat_map(|(b, _)| &b.records)
        .map(|r| r.offset)
        .filter(|&o| o < lso)
        .collect()
}

/// The latest offset of each key over the records that may supersede others: those
/// of plain and committed batches below the last stable offset `lso` (aborted
/// records never enter the map; nothing at or past the first open transaction does,
/// as Kafka's cleaner stops at its first unstable offset).
pub fn latest_offsets(batches: &[TxnBatch], lso: i64) -> BTreeMap<Vec<u8>, i64> {
    let outcome = outcomes(batches);
    let mut latest = BTreeMap::new();
    for (b, o) in batches.iter().zip(&outcome) {
        if matches!(b.kind, TxnKind::Marker(_))
            || matches!(o, Outcome::Aborted | Outcome::Open)
            || b.base_offset >= lso
        {
            continue;
        }
        for r in &b.records {
            if let Some(k) = &r.key {
                latest.insert(k.clone(), r.offset);
            }
        }
    }
    latest
}

/// For each marker batch (by index), whether a data batch of the transaction it
/// ends is in `batches`.
pub fn markers_with_data(batches: &[TxnBatch]) -> BTreeSet<usize> {
    let mut open: BTreeSet<i64> = BTreeSet::new();
    let mut out = BTreeSet::new();
    for (i, b) in batches.iter().enumerate() {
        match b.kind {
            TxnKind::Plain => {}
            TxnKind::Data => {
                open.insert(b.producer_id);
            }
            TxnKind::Marker(_) => {
                if open.remove(&b.producer_id) {
                    out.insert(i);
                }
            }
        }
    }
    out
}

/// True when a marker whose transaction has no data batch left may go.
pub fn marker_expired(timestamp: i64, now: i64, delete_retention_ms: i64) -> bool {
    super::compact::past_grace(timestamp, now, delete_retention_ms)
}

/// Compaction under the seed policy with the transaction rules: the batches below
/// `closed_end` (the active segment's base) and below the last stable offset are
/// cleaned, the others stay as they are; the latest-offset map covers all batches
/// below the last stable offset (all of them when no transaction is open, the seed
/// policy's rule). A batch left with no record is
/// removed; an empty batch (a kafka pass's, rule 5 of `kafka_txn`) has none to
/// drop and is kept, unless it is aborted data.
pub fn compact(
    batches: &[TxnBatch],
    closed_end: i64,
    now: i64,
    delete_retention_ms: i64,
) -> Vec<TxnBatch> {
    if !batches.iter().any(|b| b.kind == TxnKind::Data) {
        // No transactional data: the plain seed rules (markers kept).
        return compact_plain(batches, closed_end, now, delete_retention_ms);
    }
    let next_offset = batches.last().map_or(0, |b| b.last_offset + 1);
    let lso = last_stable_offset(batches, next_offset);
    let closed_end = closed_end.min(lso);
    let outcome = outcomes(batches);
    let latest = latest_offsets(batches, lso);
    let with_data = markers_with_data(batches);
    let mut out = Vec::new();
    for (i, (b, o)) in batches.iter().zip(&outcome).enumerate() {
        if b.base_offset >= closed_end {
            out.push(b.clone());
            continue;
        }
        let records: Vec<TxnRec> = match (b.kind, o) {
            (TxnKind::Marker(_), _) => {
                if !with_data.contains(&i) && marker_expired(b.timestamp, now, delete_retention_ms)
                {
                    continue;
                }
                b.records.clone()
            }
            (_, Outcome::Aborted) => Vec::new(),
            (_, Outcome::Open) => b.records.clone(),
            _ => b
                .records
                .iter()
                .filter(|r| match &r.key {
                    None => true,
                    Some(k) => {
                        latest.get(k) == Some(&r.offset)
                            && !(r.value.is_none()
                                && super::compact::past_grace(
                                    r.timestamp,
                                    now,
                                    delete_retention_ms,
                                ))
                    }
                })
                .cloned()
                .collect(),
        };
        // An empty batch (a kafka pass's) has no record to drop: kept, unless it
        // is aborted data, which goes whole.
        if !records.is_empty() || (b.records.is_empty() && *o != Outcome::Aborted) {
            out.push(TxnBatch {
                records,
                ..b.clone()
            });
        }
    }
    out
}

/// The seed rules without the transaction rules: markers pass unchanged.
fn compact_plain(
    batches: &[TxnBatch],
    closed_end: i64,
    now: i64,
    delete_retention_ms: i64,
) -> Vec<TxnBatch> {
    let latest = latest_offsets(batches, i64::MAX);
    batches
        .iter()
        .filter_map(|b| {
            if b.base_offset >= closed_end || matches!(b.kind, TxnKind::Marker(_)) {
                return Some(b.clone());
            }
            let records: Vec<TxnRec> = b
                .records
                .iter()
                .filter(|r| match &r.key {
                    None => true,
                    Some(k) => {
                        latest.get(k) == Some(&r.offset)
                            && !(r.value.is_none()
                                && super::compact::past_grace(
                                    r.timestamp,
                                    now,
                                    delete_retention_ms,
                                ))
                    }
                })
                .cloned()
                .collect();
            (!records.is_empty() || b.records.is_empty()).then(|| TxnBatch {
                records,
                ..b.clone()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn data(base: i64, pid: i64, kind: TxnKind, keys: &[(&str, Option<&str>)]) -> TxnBatch {
        TxnBatch {
            base_offset: base,
            last_offset: base + keys.len() as i64 - 1,
            producer_id: pid,
            kind,
            timestamp: 0,
            records: keys
                .iter()
                .enumerate()
                .map(|(i, (k, v))| TxnRec {
                    offset: base + i as i64,
                    key: Some(k.as_bytes().to_vec()),
                    value: v.map(|v| v.as_bytes().to_vec()),
                    timestamp: 0,
                })
                .collect(),
        }
    }

    fn marker(offset: i64, pid: i64, m: Marker, ts: i64) -> TxnBatch {
        TxnBatch {
            base_offset: offset,
            last_offset: offset,
            producer_id: pid,
            kind: TxnKind::Marker(m),
            timestamp: ts,
            records: vec![TxnRec {
                offset,
                key: None,
                value: None,
                timestamp: ts,
            }],
        }
    }

    /// The case: a committed then an aborted transaction on the same keys.
    fn committed_then_aborted() -> Vec<TxnBatch> {
        vec![
            data(0, 1, TxnKind::Data, &[("a", Some("1")), ("b", Some("1"))]),
            marker(2, 1, Marker::Commit, 10),
            data(3, 2, TxnKind::Data, &[("a", Some("x")), ("b", Some("x"))]),
            marker(5, 2, Marker::Abort, 10),
        ]
    }

    #[test]
    fn aborted_records_never_shadow_committed_ones() {
        let log = committed_then_aborted();
        let out = compact(&log, 6, 20, 100);
        let offsets: Vec<i64> = out
            .iter()
            .flat_map(|b| &b.records)
            .map(|r| r.offset)
            .collect();
        // Both markers stay: one ends data still there, the other is in its horizon.
        assert_eq!(offsets, vec![0, 1, 2, 5]);
        assert_eq!(read_committed(&out, 6), vec![0, 1]);
        // Later, past the horizon: the abort marker has no data left and goes; the
        // commit marker stays while its records remain.
        let later = compact(&out, 6, 1_000, 100);
        let offsets: Vec<i64> = later
            .iter()
            .flat_map(|b| &b.records)
            .map(|r| r.offset)
            .collect();
        assert_eq!(offsets, vec![0, 1, 2]);
    }

    #[test]
    fn aborted_index_entries_follow_kafka() {
        let log = vec![
            data(0, 1, TxnKind::Data, &[("a", Some("1"))]),
            data(1, 2, TxnKind::Data, &[("b", Some("1"))]),
            data(2, 1, TxnKind::Data, &[("c", Some("1"))]),
            marker(3, 1, Marker::Abort, 0),
            marker(4, 2, Marker::Abort, 0),
            marker(5, 3, Marker::Abort, 0), // ends nothing: no entry
        ];
        assert_eq!(
            aborted_txns(&log),
            vec![
                AbortedTxn {
                    producer_id: 1,
                    first_offset: 0,
                    last_offset: 3,
                    last_stable_offset: 1, // producer 2's transaction is still open
                },
                AbortedTxn {
                    producer_id: 2,
                    first_offset: 1,
                    last_offset: 4,
                    last_stable_offset: 5,
                },
            ]
        );
        assert_eq!(aborted_between(&aborted_txns(&log), 4, 5).len(), 1);
        assert_eq!(aborted_between(&aborted_txns(&log), 0, 1).len(), 1);
    }

    #[test]
    fn open_transactions_hold_back_committed_reads_and_are_kept() {
        let log = vec![
            data(0, -1, TxnKind::Plain, &[("a", Some("1")), ("b", Some("1"))]),
            data(2, 7, TxnKind::Data, &[("a", Some("2")), ("a", None)]),
            data(4, -1, TxnKind::Plain, &[("b", Some("2"))]),
        ];
        assert_eq!(last_stable_offset(&log, 5), 2);
        assert_eq!(read_committed(&log, 5), vec![0, 1]);
        // The open tombstone is old but kept; it does not supersede offset 0, and
        // offset 4, past the first unstable offset, does not supersede offset 1.
        let out = compact(&log, 5, 1_000, 1);
        let offsets: Vec<i64> = out
            .iter()
            .flat_map(|b| &b.records)
            .map(|r| r.offset)
            .collect();
        assert_eq!(offsets, vec![0, 1, 2, 3, 4]);
        // Once it commits, the map covers everything again.
        let mut log = log;
        log.push(marker(5, 7, Marker::Commit, 0));
        let out = compact(&log, 6, 1_000, 1);
        let offsets: Vec<i64> = out
            .iter()
            .flat_map(|b| &b.records)
            .map(|r| r.offset)
            .collect();
        assert_eq!(offsets, vec![4, 5]);
    }

    fn arb_log() -> impl Strategy<Value = (Vec<TxnBatch>, i64)> {
        // Ops: 0 plain, 1 txn data, 2 commit, 3 abort; producers 1..=3; keys a..c.
        prop::collection::vec((0u8..4, 1i64..4, 0u8..3, any::<bool>()), 0..24).prop_map(|ops| {
            let mut batches = Vec::new();
            let mut next = 0i64;
            for (op, pid, key, tomb) in ops {
                let k = ["a", "b", "c"][key as usize];
                let v = (!tomb).then_some("v");
                let b = match op {
                    0 => data(next, -1, TxnKind::Plain, &[(k, v)]),
                    1 => data(next, pid, TxnKind::Data, &[(k, v)]),
                    2 => marker(next, pid, Marker::Commit, next),
                    _ => marker(next, pid, Marker::Abort, next),
                };
                next = b.last_offset + 1;
                batches.push(b);
            }
            (batches, next)
        })
    }

    proptest! {
        /// Invariants checked: compaction never changes what a read_committed reader
        /// sees as the latest committed value of a key (the bug), removes
        /// every aborted record of the cleaned region, keeps every open one, and a
        /// second pass changes nothing a read_committed reader sees.
        #[test]
        fn compaction_keeps_the_committed_view((log, next) in arb_log(), now in 0i64..40, closed_frac in 0u8..=4) {
            let closed_end = next * i64::from(closed_frac) / 4;
            let latest_committed = |batches: &[TxnBatch]| {
                let visible: BTreeSet<i64> = read_committed(batches, next).into_iter().collect();
                let mut m = BTreeMap::new();
                for r in batches.iter().flat_map(|b| &b.records) {
                    if visible.contains(&r.offset) {
                        m.insert(r.key.clone(), r.value.clone());
                    }
                }
                // Expired tombstones go: a key whose latest value is None may vanish.
                m.retain(|_, v| v.is_some());
                m
            };
            let out = compact(&log, closed_end, now, 5);
            prop_assert_eq!(latest_committed(&log), latest_committed(&out));
            let outcome = outcomes(&log);
            let cleaned_end = closed_end.min(last_stable_offset(&log, next));
            let kept: BTreeSet<i64> = out.iter().flat_map(|b| &b.records).map(|r| r.offset).collect();
            for (b, o) in log.iter().zip(&outcome) {
                for r in &b.records {
                    if b.base_offset < cleaned_end && *o == Outcome::Aborted {
                        prop_assert!(!kept.contains(&r.offset));
                    }
                    if *o == Outcome::Open {
                        prop_assert!(kept.contains(&r.offset));
                    }
                }
            }
            // Outcomes of what is kept do not change (markers stay while data does).
            let after = outcomes(&out);
            for (b, o) in out.iter().zip(&after) {
                let before = log.iter().position(|x| x.base_offset == b.base_offset).unwrap();
                if !matches!(b.kind, TxnKind::Marker(_)) {
                    prop_assert_eq!(*o, outcome[before]);
                }
            }
            let again = compact(&out, closed_end, now, 5);
            prop_assert_eq!(latest_committed(&again), latest_committed(&out));
        }
    }
}

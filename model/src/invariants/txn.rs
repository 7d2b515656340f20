//! The invariants of a compaction (either policy) of a log holding transactional
//! data (docs/design.md section 4), in place of the plain ones, which the
//! transaction rules break on purpose (aborted records and markers go, the region
//! of an open transaction is not cleaned, a `seed` pass cleans the whole log), beside
//! `offset_stability` and the clean point's soundness (never moved back):
//! - `committed_view`: a `read_committed` reader sees every key's latest value as
//!   before (keys whose latest committed record is a tombstone aside: it may go);
//! - `open_retained`: every record of an open transaction survives;
//! - `markers_follow_data`: a marker goes only once no data batch of its
//!   transaction is left.

use std::collections::{BTreeMap, BTreeSet};

use super::{fail, Violation};
use crate::spec::txn::{self, Outcome, TxnKind};
use crate::spec::SpecLog;

/// Every key's latest value as `read_committed` shows it; tombstoned keys left out.
fn committed_view(log: &SpecLog) -> BTreeMap<Vec<u8>, (i64, Vec<u8>)> {
    let mut view = BTreeMap::new();
    let records = log
        .read_committed(log.log_start_offset())
        .unwrap_or_default();
    for rec in records {
        if let Some(key) = rec.key {
            match rec.value {
                Some(value) => view.insert(key, (rec.offset, value)),
                None => view.remove(&key),
            };
        }
    }
    view
}

/// `committed_view` (module docs).
pub fn same_committed_view(before: &SpecLog, after: &SpecLog) -> Result<(), Violation> {
    let (old, new) = (committed_view(before), committed_view(after));
    for key in old.keys().chain(new.keys()) {
        if old.get(key) != new.get(key) {
            return fail(
                "committed_view",
                format!(
                    "key {key:?}: read_committed latest {:?} became {:?}",
                    old.get(key).map(|r| r.0),
                    new.get(key).map(|r| r.0)
                ),
            );
        }
    }
    Ok(())
}

/// `open_retained` (module docs).
pub fn open_retained(before: &SpecLog, after: &SpecLog) -> Result<(), Violation> {
    let batches = before.txn_batches();
    let kept: BTreeSet<i64> = after.records().map(|(r, _)| r.offset).collect();
    for (b, o) in batches.iter().zip(txn::outcomes(&batches)) {
        if o != Outcome::Open {
            continue;
        }
        if let Some(r) = b.records.iter().find(|r| !kept.contains(&r.offset)) {
            return fail(
                "open_retained",
                format!("record at {} of an open transaction lost", r.offset),
            );
        }
    }
    Ok(())
}

/// `markers_follow_data` (module docs).
pub fn markers_follow_data(before: &SpecLog, after: &SpecLog) -> Result<(), Violation> {
    let old = before.txn_batches();
    let kept: BTreeSet<i64> = after.batches().map(|b| b.base_offset).collect();
    for (i, b) in old.iter().enumerate() {
        let removed = !kept.contains(&b.base_offset) && b.base_offset >= after.log_start_offset();
        if !matches!(b.kind, TxnKind::Marker(_)) || !removed {
            continue;
        }
        // The data it ended: its producer's data batches since its previous marker.
        let left = old[..i]
            .iter()
            .rev()
            .filter(|d| d.producer_id == b.producer_id)
            .take_while(|d| !matches!(d.kind, TxnKind::Marker(_)))
            .find(|d| d.kind == TxnKind::Data && kept.contains(&d.base_offset));
        if let Some(d) = left {
            return fail(
                "markers_follow_data",
                format!(
                    "marker at {} removed while data at {} of its transaction stays",
                    b.base_offset, d.base_offset
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{SpecRecordInput, SpecSegment};

    fn rec(key: &str, value: &str) -> SpecRecordInput {
        SpecRecordInput {
            key: Some(key.as_bytes().to_vec()),
            value: Some(value.as_bytes().to_vec()),
            timestamp: 0,
        }
    }

    /// [0: txn a=1] [1: COMMIT] [2: txn a=x] [3: ABORT] | active [4: txn b=o] (open).
    fn log() -> SpecLog {
        let mut log = SpecLog::new(1 << 20);
        log.append_transactional(1, &[rec("a", "1")]).unwrap();
        log.append_control(true, 0);
        log.append_transactional(1, &[rec("a", "x")]).unwrap();
        log.append_control(false, 0);
        log.roll();
        log.append_transactional(1, &[rec("b", "o")]).unwrap();
        log
    }

    /// `log` without the batches at `drop` (and with the aborted batch kept).
    fn without(log: &SpecLog, drop: &[i64]) -> SpecLog {
        let segments: Vec<SpecSegment> = log
            .raw_segments()
            .iter()
            .map(|s| SpecSegment {
                base_offset: s.base_offset,
                batches: s
                    .batches
                    .iter()
                    .filter(|b| !drop.contains(&b.base_offset))
                    .cloned()
                    .collect(),
            })
            .collect();
        SpecLog::from_parts(log.segment_bytes(), log.log_start_offset(), segments).unwrap()
    }

    fn broken(before: &SpecLog, after: &SpecLog) -> Vec<&'static str> {
        [
            same_committed_view(before, after),
            open_retained(before, after),
            markers_follow_data(before, after),
        ]
        .into_iter()
        .filter_map(|r| r.err().map(|v| v.invariant))
        .collect()
    }

    #[test]
    fn a_compaction_holds_them_and_each_mutant_breaks_one() {
        let before = log();
        let mut after = before.clone();
        after.compact(10, 100, None).unwrap();
        assert_eq!(broken(&before, &after), Vec::<&str>::new());
        assert_eq!(broken(&before, &without(&before, &[2])), Vec::<&str>::new());
        // The bug: the committed value dropped, the aborted one kept.
        assert_eq!(broken(&before, &without(&before, &[0])), ["committed_view"]);
        assert_eq!(broken(&before, &without(&before, &[4])), ["open_retained"]);
        // Without its COMMIT, a=1 reads as part of the aborted transaction.
        assert_eq!(
            broken(&before, &without(&before, &[1])),
            ["committed_view", "markers_follow_data"]
        );
        // The ABORT marker may go once its data is gone.
        assert_eq!(
            broken(&before, &without(&before, &[2, 3])),
            Vec::<&str>::new()
        );
    }
}

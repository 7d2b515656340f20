//! Compaction's transaction rules (docs/design.md section 1, "Transactions"; the
//! spec's `spec::txn::compact`), as a pure decision over batch facts that either
//! policy can use, and the header pass that gathers the facts.
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
//!   policy does, `super::producers`); a control batch with no marker record (an
//!   empty one) takes no part in the rules.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::batch::{
    decode_header, ATTR_CONTROL, ATTR_TRANSACTIONAL, PRODUCER_EPOCH_OFFSET, PRODUCER_ID_OFFSET,
};
use crate::format::filename::LOG_SUFFIX;
use crate::format::txn_index::AbortedTxn;
use crate::format::{BatchView, ControlKind};
use crate::fs::FileSystem;

use super::bitmap::Bitmap;
use super::planner::Horizon;
use super::source::segment_path;

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
    /// Its producer epoch (for [`super::producers::ActiveProducers`]).
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
        let expired = horizon.now.saturating_sub(f.max_timestamp) > horizon.delete_retention_ms;
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

/// The facts of every batch of the segments `bases` of `dir` (the last one
/// active), from their headers (a control batch's marker record is decoded, and
/// its CRC checked), in one walk: the transaction rules' and the `kafka` policy's
/// producers' (`super::producers`). A torn tail ends a segment's walk (the scan
/// reports it); the first damaged header or control batch is the error.
pub fn walk(fs: &dyn FileSystem, dir: &Path, bases: &[i64]) -> Result<LogFacts> {
    let mut out = LogFacts::default();
    for (i, &base) in bases.iter().enumerate() {
        let path = segment_path(dir, base, LOG_SUFFIX);
        let bytes = fs.map(&path).map_err(|e| Error::io(&path, e))?;
        let mut at = 0usize;
        while at < bytes.len() {
            let rest = &bytes[at..];
            let header = decode_header(rest).map_err(|e| e.at(&path, at as u64))?;
            let size = header.size;
            if rest.len() < size {
                break; // the scan reports it
            }
            let transactional = header.attributes & ATTR_TRANSACTIONAL != 0;
            let control = header.attributes & ATTR_CONTROL != 0;
            let mut pid = [0u8; 8];
            pid.copy_from_slice(&rest[PRODUCER_ID_OFFSET..PRODUCER_ID_OFFSET + 8]);
            let mut epoch = [0u8; 2];
            epoch.copy_from_slice(&rest[PRODUCER_EPOCH_OFFSET..PRODUCER_EPOCH_OFFSET + 2]);
            let marker = if control {
                let (batch, _) =
                    BatchView::decode(&rest[..size]).map_err(|e| e.at(&path, at as u64))?;
                match batch.records().next() {
                    Some(Ok(r)) => match r.key {
                        Some([0, 0, 0, 0]) => Some(ControlKind::Abort),
                        Some([0, 0, 0, 1]) => Some(ControlKind::Commit),
                        _ => None,
                    },
                    _ => None,
                }
            } else {
                None
            };
            // A control batch with no marker record (an empty one, Kafka's
            // `RETAIN_EMPTY`) takes no part, as `log::txn` reads it.
            let transactional = transactional && (marker.is_some() || !control);
            // Markers alone (no transactional data) leave the plain seed rules in
            // force: the rules apply once the log holds transactional data.
            out.transactional |= transactional && !control;
            out.batches.push(TxnFacts {
                base_offset: header.base_offset,
                producer_id: i64::from_be_bytes(pid),
                transactional,
                marker,
                control,
                max_timestamp: header.max_timestamp,
                producer_epoch: i16::from_be_bytes(epoch),
                last_offset: header.base_offset + i64::from(header.last_offset_delta),
            });
            at += size;
        }
        if i + 1 < bases.len() {
            out.closed_batches = out.batches.len();
        }
    }
    Ok(out)
}

/// [`walk`]'s transaction facts: `None` when no data batch is transactional (then
/// the plain seed rules apply: markers are kept, as the seed spec keeps control
/// batches). Returns the facts and how many batches the closed segments hold.
pub fn gather(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
) -> Result<Option<(Vec<TxnFacts>, usize)>> {
    Ok(walk(fs, dir, bases)?.txn())
}

/// [`gather`] then [`decide`]: `None` when the log holds no transactional batch.
pub fn plan(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    horizon: Horizon,
) -> Result<Option<TxnPlan>> {
    let Some((facts, closed_batches)) = gather(fs, dir, bases)? else {
        return Ok(None);
    };
    // With no open transaction nothing is held back: every batch is below it.
    Ok(Some(decide(&facts, closed_batches, i64::MAX, horizon)))
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
}

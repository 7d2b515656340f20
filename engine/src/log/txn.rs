//! Transactions (docs/design.md section 1, "Transactions"): transactional appends,
//! the producer state the last stable offset and the aborted-transaction index need,
//! `.txnindex` upkeep, and `read_committed` reads.
//!
//! The state (open transactions, aborted transactions by segment) is derived from
//! the log: built by one pass over the batches at the first transactional call after
//! an open, a compaction or a retention (the log's common, non-transactional use
//! pays nothing), then kept in step by the appends. That pass also checks every
//! segment's `.txnindex` against the batches and rewrites the ones that are missing
//! or invalid ([`Log::txn_index_rebuilds`] says which and why). A `.txnindex` is
//! derived like `.index`: appended without an fsync; a power loss that tears it is
//! repaired by that check.

use std::collections::BTreeMap;

#[cfg(feature = "serde")]
use serde::Serialize;

use crate::error::{Error, Result};
use crate::format::batch::{ATTR_TRANSACTIONAL, NO_SEQUENCE};
use crate::format::filename::{self, TXN_INDEX_SUFFIX};
use crate::format::txn_index::{self, AbortedTxn};
use crate::format::{BatchView, ControlKind, NewRecord, RecordBatch, TimestampType};
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint::*;

use super::{AppendInfo, Fetch, Log, ReadRecords};

/// Which records a read returns (Kafka's `isolation.level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Isolation {
    /// Every stored record, markers included (what [`Log::read`] returns).
    #[default]
    ReadUncommitted,
    /// Data records below the last stable offset that are not in an aborted
    /// transaction; no marker.
    ReadCommitted,
}

/// The transactional producer of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Producer {
    /// The producer id (>= 0).
    pub id: i64,
    /// The producer epoch (>= 0).
    pub epoch: i16,
    /// The first record's sequence number (`-1`: none).
    pub base_sequence: i32,
}

impl Producer {
    /// A producer with no sequence numbers.
    pub fn new(id: i64, epoch: i16) -> Producer {
        Producer {
            id,
            epoch,
            base_sequence: NO_SEQUENCE,
        }
    }
}

/// A `.txnindex` the state pass rewrote, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct TxnIndexRebuild {
    /// The file name.
    pub file: String,
    /// Why: "missing" or what the check found.
    pub reason: String,
}

/// What the transaction rules need to know of the log.
#[derive(Debug, Default, Clone)]
pub(super) struct TxnState {
    /// Open transactions: producer id -> first offset.
    ongoing: BTreeMap<i64, i64>,
    /// Aborted transactions, by the base offset of the segment holding the marker.
    aborted: BTreeMap<i64, Vec<AbortedTxn>>,
    /// The rewrites the pass that built this state made.
    rebuilds: Vec<TxnIndexRebuild>,
    /// Every ABORT marker, by segment: (producer id, offset).
    aborts: BTreeMap<i64, Vec<(i64, i64)>>,
}

impl TxnState {
    /// Takes one batch (in offset order) of the segment at `segment`: returns the
    /// aborted-transaction entry an ABORT marker that ends a transaction makes.
    fn observe(
        &mut self,
        segment: i64,
        producer_id: i64,
        base_offset: i64,
        transactional: bool,
        marker: Option<ControlKind>,
    ) -> Option<AbortedTxn> {
        if !transactional {
            return None;
        }
        match marker {
            None => {
                self.ongoing.entry(producer_id).or_insert(base_offset);
                None
            }
            Some(kind) => {
                if kind == ControlKind::Abort {
                    self.aborts
                        .entry(segment)
                        .or_default()
                        .push((producer_id, base_offset));
                }
                let first = self.ongoing.remove(&producer_id)?;
                if kind != ControlKind::Abort {
                    return None;
                }
                // Kafka's ProducerStateManager.lastStableOffset(completedTxn).
                let lso = self
                    .ongoing
                    .values()
                    .copied()
                    .min()
                    .unwrap_or(base_offset + 1);
                let entry = AbortedTxn {
                    producer_id,
                    first_offset: first,
                    last_offset: base_offset,
                    last_stable_offset: lso,
                };
                self.aborted.entry(segment).or_default().push(entry);
                Some(entry)
            }
        }
    }
}

/// True if `batch` (with the marker `marker_of` found) counts in the transaction
/// state: a transactional data batch or marker. A control batch with no
/// well-formed marker record (an empty one a `kafka` cleaning left, Kafka's
/// `RETAIN_EMPTY`) neither opens nor ends a transaction: Kafka's
/// `ProducerAppendInfo.append` skips a control batch without a record.
fn takes_part(batch: &BatchView<'_>, marker: Option<ControlKind>) -> bool {
    batch.attributes & ATTR_TRANSACTIONAL != 0 && (marker.is_some() || !batch.is_control())
}

/// The marker kind of a control batch (`None` for a data batch, or a control batch
/// whose record is not a well-formed marker, which Kafka ignores too).
fn marker_of(batch: &BatchView<'_>) -> Result<Option<ControlKind>> {
    if !batch.is_control() {
        return Ok(None);
    }
    let mut records = batch.records();
    match records.next() {
        Some(Ok(record)) => Ok(match record.key {
            Some([0, 0, 0, 0]) => Some(ControlKind::Abort),
            Some([0, 0, 0, 1]) => Some(ControlKind::Commit),
            _ => None,
        }),
        Some(Err(e)) => Err(Error::InvalidArgument(format!(
            "control batch at {}: {e:?}",
            batch.base_offset
        ))),
        None => Ok(None),
    }
}

impl Log {
    /// Appends `records` as one transactional batch of `producer` (attribute bit 4,
    /// producer id, epoch and base sequence in the header), opening the producer's
    /// transaction if none is open. Ends with [`Log::append_control`]. Uncompressed;
    /// stamped LogAppendTime when the log's config says so.
    pub fn append_transactional(
        &mut self,
        producer: Producer,
        records: &[NewRecord],
    ) -> Result<AppendInfo> {
        self.check_writable()?;
        if producer.id < 0 || producer.epoch < 0 {
            return Err(Error::InvalidArgument(format!(
                "a transactional producer needs an id and epoch >= 0, got {} and {}",
                producer.id, producer.epoch
            )));
        }
        super::write::check_records(records)?;
        self.ensure_txn_state_writing()?;
        let mut batch = RecordBatch::build(self.next_offset(), records);
        batch.attributes |= ATTR_TRANSACTIONAL;
        batch.producer_id = producer.id;
        batch.producer_epoch = producer.epoch;
        batch.base_sequence = producer.base_sequence;
        if self.config.timestamp_type == TimestampType::LogAppendTime {
            batch = batch.with_log_append_time(self.clock.now_ms());
        }
        let info = self.append_batch(&batch)?;
        self.txn_observe(producer.id, info.base_offset, true, None)?;
        Ok(info)
    }

    /// Keeps the transaction state (when built) in step with a batch just appended
    /// to the active segment, writing an ABORT marker's `.txnindex` entry.
    pub(super) fn txn_observe(
        &mut self,
        producer_id: i64,
        base_offset: i64,
        transactional: bool,
        marker: Option<ControlKind>,
    ) -> Result<()> {
        let segment = self.segments[self.segment_index_for(base_offset)].base_offset;
        let entry = {
            let mut state = self.txn.lock().unwrap_or_else(|e| e.into_inner());
            let Some(state) = state.as_mut() else {
                return Ok(());
            };
            state.observe(segment, producer_id, base_offset, transactional, marker)
        };
        if let Some(entry) = entry {
            let path = self.dir.join(filename::build(segment, TXN_INDEX_SUFFIX));
            let mut bytes = Vec::with_capacity(txn_index::ENTRY_BYTES);
            entry.encode_into(&mut bytes);
            crate::fail_point!(LOG_TXN_INDEX_APPEND);
            let result = if self.fs.exists(&path) {
                self.fs.append(&path, &bytes)
            } else {
                self.fs.write_new(&path, &bytes)
            };
            if let Err(e) = result {
                self.poisoned = true;
                return Err(Error::io(&path, e));
            }
        }
        Ok(())
    }

    /// Keeps the state in step with the batches `[from, next_offset)` just appended
    /// as they came ([`Log::append_batches`]).
    pub(super) fn txn_observe_appended(&mut self, from: i64) -> Result<()> {
        if self.txn.lock().unwrap_or_else(|e| e.into_inner()).is_none() {
            return Ok(());
        }
        let mut seen = Vec::new();
        let mut at = from;
        while at < self.next_offset() {
            let fetch = self.fetch(at, usize::MAX)?;
            if fetch.is_empty() {
                break;
            }
            for batch in fetch.batches() {
                let batch = batch?;
                let marker = marker_of(&batch)?;
                seen.push((
                    batch.producer_id,
                    batch.base_offset,
                    takes_part(&batch, marker),
                    marker,
                ));
            }
            at = fetch.next_offset();
        }
        for (pid, base, transactional, marker) in seen {
            self.txn_observe(pid, base, transactional, marker)?;
        }
        Ok(())
    }

    /// Forgets the state (after a compaction or retention changed the segments):
    /// the next transactional call builds it again.
    pub(crate) fn txn_forget(&mut self) {
        *self.txn.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Builds the state if it is not, checking (and, on a writable log, rewriting)
    /// every segment's `.txnindex`.
    pub(super) fn ensure_txn_state(&self) -> Result<()> {
        if self.txn.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
            return Ok(());
        }
        let mut state = TxnState::default();
        for segment in &self.segments {
            if segment.is_empty() {
                continue;
            }
            let view = self.segment_view(segment)?;
            let mut position = 0;
            while position < view.len() {
                let (header, raw) = view.batch_at(position)?;
                position += header.size;
                let (batch, _) = BatchView::decode(raw)
                    .map_err(|e| e.at(view.path(), (position - header.size) as u64))?;
                let marker = marker_of(&batch)?;
                state.observe(
                    segment.base_offset,
                    batch.producer_id,
                    batch.base_offset,
                    takes_part(&batch, marker),
                    marker,
                );
            }
        }
        for segment in &self.segments {
            let path = self
                .dir
                .join(filename::build(segment.base_offset, TXN_INDEX_SUFFIX));
            let expected = state
                .aborted
                .get(&segment.base_offset)
                .map_or(&[][..], Vec::as_slice);
            let exists = self.fs.exists(&path);
            let mut valid = None;
            // One entry per aborted transaction whose marker is in the segment, each
            // at a distinct offset of it: a larger file is not read (and is rewritten).
            let span = segment
                .next_offset
                .saturating_sub(segment.base_offset)
                .max(0);
            let bytes_max = u64::try_from(span)
                .unwrap_or(0)
                .saturating_mul(txn_index::ENTRY_BYTES as u64);
            let read = if exists {
                crate::fs::read_bounded(self.fs.as_ref(), &path, bytes_max)
                    .map_err(|e| Error::io(&path, e))?
            } else {
                None
            };
            let problem = if exists && read.is_none() {
                Some(format!(
                    "larger than the {bytes_max} bytes of one entry per offset of its segment: not read"
                ))
            } else if let Some(bytes) = read {
                match txn_index::decode(&bytes).and_then(|found| {
                    let aborts = state
                        .aborts
                        .get(&segment.base_offset)
                        .map_or(&[][..], Vec::as_slice);
                    txn_index::check_entries_kept(&found, expected, aborts).map(|()| found)
                }) {
                    Ok(found) => {
                        valid = Some(found);
                        None
                    }
                    Err(p) => Some(p.to_string()),
                }
            } else if expected.is_empty() {
                None
            } else {
                Some("missing".to_string())
            };
            if let Some(found) = valid {
                // A valid index is used as found, as Kafka reads it: a cleaning keeps
                // an aborted transaction's entry (its first offset) after removing the
                // transaction's first batches (Kafka's `CleanedTransactionMetadata`).
                if !found.is_empty() {
                    state.aborted.insert(segment.base_offset, found);
                }
                continue;
            }
            let Some(reason) = problem else { continue };
            if !self.read_only {
                crate::fail_point!(LOG_TXN_INDEX_REWRITE);
                let bytes = txn_index::encode(expected);
                let written = if exists {
                    self.fs.remove_file(&path).and_then(|()| {
                        if expected.is_empty() {
                            Ok(())
                        } else {
                            self.fs.write_new(&path, &bytes)
                        }
                    })
                } else {
                    self.fs.write_new(&path, &bytes)
                };
                written.map_err(|e| Error::io(&path, e))?;
            }
            state.rebuilds.push(TxnIndexRebuild {
                file: filename::build(segment.base_offset, TXN_INDEX_SUFFIX),
                reason,
            });
        }
        *self.txn.lock().unwrap_or_else(|e| e.into_inner()) = Some(state);
        Ok(())
    }

    /// [`Log::ensure_txn_state`] for a write: an IO error of its `.txnindex`
    /// rewrites poisons the log, as every IO error of a write does (docs/design.md
    /// section 3), though the append has not started (the I/O-error sweep's full
    /// disk reaches it: the state built lazily after a reopen, its rewrite refused
    /// for want of space).
    pub(super) fn ensure_txn_state_writing(&mut self) -> Result<()> {
        let built = self.ensure_txn_state();
        if let Err(Error::Io { .. }) = built {
            self.poisoned = true;
        }
        built
    }

    fn with_txn_state<T>(&self, f: impl FnOnce(&TxnState) -> T) -> Result<T> {
        self.check_usable()?;
        self.ensure_txn_state()?;
        let state = self.txn.lock().unwrap_or_else(|e| e.into_inner());
        Ok(f(state.as_ref().expect("built above")))
    }

    /// The `.txnindex` files the last state pass rewrote, and why (builds the
    /// state if needed).
    pub fn txn_index_rebuilds(&self) -> Result<Vec<TxnIndexRebuild>> {
        self.with_txn_state(|s| s.rebuilds.clone())
    }

    /// The open transactions: producer id -> first offset.
    pub fn open_transactions(&self) -> Result<BTreeMap<i64, i64>> {
        self.with_txn_state(|s| s.ongoing.clone())
    }

    /// The last stable offset: the first offset of the earliest open transaction,
    /// or `next_offset` when none is open.
    pub fn last_stable_offset(&self) -> Result<i64> {
        let next = self.next_offset();
        self.with_txn_state(|s| s.ongoing.values().copied().min().unwrap_or(next))
    }

    /// The aborted transactions overlapping `[from, upper)`: Kafka's
    /// `collectAbortedTxns` over the segments from the one holding `from` (entries
    /// with `last_offset >= from` and `first_offset < upper`), in marker order.
    pub fn aborted_transactions(&self, from: i64, upper: i64) -> Result<Vec<AbortedTxn>> {
        let first_segment = self.segment_index_for(from);
        let bases: Vec<i64> = self.segments[first_segment..]
            .iter()
            .map(|s| s.base_offset)
            .collect();
        self.with_txn_state(|s| {
            bases
                .iter()
                .filter_map(|b| s.aborted.get(b))
                .flatten()
                .filter(|t| t.last_offset >= from && t.first_offset < upper)
                .copied()
                .collect()
        })
    }

    /// [`Log::fetch`] at an isolation level. `ReadCommitted` returns only the
    /// batches below the last stable offset and, with them, the aborted
    /// transactions overlapping them (what a Kafka broker sends a `read_committed`
    /// consumer); `ReadUncommitted` is [`Log::fetch`] (no aborted transactions, as
    /// Kafka sends none at that level).
    pub fn fetch_with(&self, from: i64, max_bytes: usize, isolation: Isolation) -> Result<Fetch> {
        let fetch = self.fetch(from, max_bytes)?;
        if isolation == Isolation::ReadUncommitted {
            return Ok(fetch);
        }
        let lso = self.last_stable_offset()?;
        let fetch = fetch.truncated_at(lso)?;
        let upper = fetch.next_offset();
        let aborted = if fetch.is_empty() {
            Vec::new()
        } else {
            self.aborted_transactions(from, upper)?
        };
        Ok(fetch.with_aborted(aborted))
    }

    /// [`Log::read`] at an isolation level. `ReadCommitted` skips the records of
    /// aborted transactions and the markers, and stops at the last stable offset
    /// (records of open transactions, and everything after the first of them, are
    /// not returned). Like [`Log::read`] it reads whole batches, across segments,
    /// while their total stays within `max_bytes` (at least one batch), and reads
    /// on past batches it skips wholly, so an empty result means nothing committed
    /// is left below the last stable offset.
    pub fn read_with(
        &self,
        from: i64,
        max_bytes: usize,
        isolation: Isolation,
    ) -> Result<ReadRecords> {
        if isolation == Isolation::ReadUncommitted {
            return self.read(from, max_bytes);
        }
        // Kafka checks the range before the isolation bound: past the log end is
        // out of range at any level (conformance checks it, `read_committed`).
        self.check_read_from(from)?;
        let lso = self.last_stable_offset()?;
        let mut at = from;
        let mut out = ReadRecords::new();
        let mut remaining = max_bytes;
        while at < lso {
            let fetch = self.fetch_with(at, remaining, Isolation::ReadCommitted)?;
            if fetch.is_empty() || (!out.is_empty() && fetch.bytes().len() > remaining) {
                break;
            }
            remaining -= fetch.bytes().len().min(remaining);
            let aborted = fetch.aborted_transactions();
            let mut skipped: Vec<(i64, i64)> = Vec::new();
            for batch in fetch.batches() {
                let batch = batch?;
                let transactional = batch.attributes & ATTR_TRANSACTIONAL != 0;
                let last = batch.base_offset + i64::from(batch.last_offset_delta);
                let in_aborted = transactional
                    && aborted.iter().any(|t| {
                        t.producer_id == batch.producer_id
                            && t.first_offset <= batch.base_offset
                            && batch.base_offset <= t.last_offset
                    });
                if batch.is_control() || in_aborted {
                    skipped.push((batch.base_offset, last));
                }
            }
            out.push_batch(fetch.bytes().clone());
            for record in fetch.records() {
                let record = record?;
                if skipped
                    .iter()
                    .any(|&(b, l)| b <= record.offset && record.offset <= l)
                {
                    continue;
                }
                out.push(record);
            }
            at = fetch.next_offset();
            if !out.is_empty() && remaining == 0 {
                break;
            }
        }
        Ok(out)
    }
}

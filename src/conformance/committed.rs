//! `read_committed` compared with the spec, only for a log holding a
//! transactional batch (data or marker): without one `read_committed` is `read`
//! below `next_offset`, which [`super::compare::compare_reads`] checks already.
//! From every position `log_start_offset - 1 ..= next_offset + 1`, and with every
//! bound of [`committed_bounds`] (unbounded, one byte, a few batches, and one drawn
//! from the position and the log's shape):
//!
//! - [`Log::read_with`] at [`Isolation::ReadCommitted`] returns the records of
//!   [`SpecLog::read_committed_max`] (data records below the last stable offset,
//!   none of an aborted transaction, no marker, in whole batches up to the bound),
//!   or both sides refuse the position;
//! - [`Log::fetch_with`] at [`Isolation::ReadCommitted`] returns the batches of
//!   [`SpecLog::fetch_committed`] and its next offset; every aborted transaction it
//!   lists overlaps `[from, next_offset)`; and its list hides exactly the fetched
//!   batches the spec's list hides ([`aborted_hides`]). The lists themselves are
//!   not compared: after a cleaning Kafka's index keeps an aborted transaction's
//!   first offset though its first batches are gone, and the spec derives the
//!   entries from the batches left.

use seglog_model::spec::{aborted_hides, SpecLog};

use super::batch_reads::BatchSummary;
use crate::workload::RecordView;
use seglog::format::batch::ATTR_TRANSACTIONAL;
use seglog::log::{Isolation, Log};
use seglog::Error;

/// The byte bounds compared from `from`: unbounded, one byte (one batch), a few
/// batches, and one drawn (seeded by the position and the log's shape, so a
/// replay draws it again) between one byte and a few batches.
fn committed_bounds(spec_log: &SpecLog, from: i64) -> [usize; 4] {
    let mut x = (from as u64)
        ^ (spec_log.next_offset() as u64).rotate_left(21)
        ^ (spec_log.batches().count() as u64).rotate_left(42);
    // splitmix64's finalizer.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    [usize::MAX, 1, 200, 1 + (x % 320) as usize]
}

/// The comparison (module docs); returns the reads made.
pub fn compare_committed(log: &Log, spec_log: &SpecLog) -> Result<u64, String> {
    if !spec_log.batches().any(|b| b.transactional) {
        return Ok(0);
    }
    let mut reads = 0;
    for from in spec_log.log_start_offset() - 1..=spec_log.next_offset() + 1 {
        for max_bytes in committed_bounds(spec_log, from) {
            reads += 2;
            compare_read(log, spec_log, from, max_bytes)?;
            compare_fetch(log, spec_log, from, max_bytes)?;
        }
    }
    Ok(reads)
}

fn compare_read(log: &Log, spec_log: &SpecLog, from: i64, max_bytes: usize) -> Result<(), String> {
    let engine = match log.read_with(from, max_bytes, Isolation::ReadCommitted) {
        Ok(records) => Some(records.into_iter().map(RecordView::from).collect()),
        Err(Error::OffsetOutOfRange { .. }) => None,
        Err(e) => return Err(format!("read_committed({from}, {max_bytes}) failed: {e}")),
    };
    let spec: Option<Vec<RecordView>> = spec_log
        .read_committed_max(from, max_bytes as u64)
        .ok()
        .map(|records| records.into_iter().map(RecordView::from).collect());
    if engine != spec {
        let offsets = |r: &Option<Vec<RecordView>>| {
            r.as_ref()
                .map(|r| r.iter().map(|r| r.offset).collect::<Vec<_>>())
        };
        return Err(format!(
            "read_committed({from}, {max_bytes}): engine {:?} spec {:?}",
            offsets(&engine),
            offsets(&spec)
        ));
    }
    Ok(())
}

/// A `read_committed` fetch as compared: each batch with whether the fetch's
/// aborted list hides it, and the next offset.
type CommittedBatches = (Vec<(BatchSummary, bool)>, i64);

fn compare_fetch(log: &Log, spec_log: &SpecLog, from: i64, max_bytes: usize) -> Result<(), String> {
    let what = format!("fetch_committed({from}, {max_bytes})");
    let engine: Option<CommittedBatches> =
        match log.fetch_with(from, max_bytes, Isolation::ReadCommitted) {
            Ok(fetch) => {
                let next_offset = fetch.next_offset();
                let aborted = fetch.aborted_transactions();
                if let Some(t) = aborted
                    .iter()
                    .find(|t| t.last_offset < from || t.first_offset >= next_offset)
                {
                    return Err(format!(
                        "{what}: aborted transaction {t:?} outside [{from}, {next_offset})"
                    ));
                }
                let mut batches = Vec::new();
                for batch in fetch.batches() {
                    let batch = batch.map_err(|e| format!("{what} batches: {e}"))?;
                    let hidden = batch.attributes & ATTR_TRANSACTIONAL != 0
                        && !batch.is_control()
                        && aborted.iter().any(|t| {
                            t.producer_id == batch.producer_id
                                && t.first_offset <= batch.base_offset
                                && batch.base_offset <= t.last_offset
                        });
                    batches.push((BatchSummary::of_view(&batch), hidden));
                }
                Some((batches, next_offset))
            }
            Err(Error::OffsetOutOfRange { .. }) => None,
            Err(e) => return Err(format!("{what} failed: {e}")),
        };
    let spec: Option<CommittedBatches> =
        spec_log
            .fetch_committed(from, max_bytes as u64)
            .ok()
            .map(|fetch| {
                let batches = fetch
                    .fetched
                    .batches
                    .iter()
                    .map(|b| (BatchSummary::of_spec(b), aborted_hides(&fetch.aborted, b)))
                    .collect();
                (batches, fetch.fetched.next_offset)
            });
    if engine != spec {
        return Err(format!("{what}: engine {engine:?} spec {spec:?}"));
    }
    Ok(())
}

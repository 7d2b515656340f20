//! Comparing the engine's log with the spec's: the whole structure (segments,
//! batches, records), the segment metadata, and reads from every position: records
//! (`read`, the `fetch` walk) and whole batches (`fetch`, `read_raw`, with
//! `Fetch::next_offset`; see [`super::batch_reads`]).

use seglog_model::spec::{Batch, Rec, SpecLog, SpecSegment};

use seglog::format::TimestampType;

use crate::workload::{engine, spec, RecordView};
use seglog::format::RecordBatch;
use seglog::log::Log;
use seglog::Error;

use super::batch_reads::{check_fetch, check_read_raw};

/// The engine's log as a spec log: every segment decoded batch by batch.
pub fn engine_spec(log: &Log, segment_bytes: u64) -> Result<SpecLog, String> {
    let mut segments = Vec::new();
    for info in log.segments() {
        let batches = log
            .segment_batches(info.base_offset)
            .map_err(|e| format!("reading segment {}: {e}", info.base_offset))?;
        segments.push(SpecSegment {
            base_offset: info.base_offset,
            batches: batches.iter().map(spec_batch).collect(),
        });
    }
    let mut spec = SpecLog::from_parts(segment_bytes, log.log_start_offset(), segments)
        .map_err(|e| format!("the engine's log is not a well-formed log: {e}"))?;
    // The spec refuses a clean point over a duplicate key: the engine's clean
    // section is checked to be deduplicated here, after every step.
    let clean_point = log
        .clean_point()
        .map_err(|e| format!("reading the clean point: {e}"))?;
    spec.set_clean_point(clean_point)
        .map_err(|e| format!("the engine's clean point is unsound: {e}"))?;
    Ok(spec)
}

fn spec_batch(batch: &RecordBatch) -> Batch {
    crate::workload::spec::install_codec();
    let log_append_time = batch.timestamp_type() == TimestampType::LogAppendTime;
    Batch {
        base_offset: batch.base_offset,
        last_offset_delta: batch.last_offset_delta,
        control: batch.is_control(),
        base_timestamp: batch.base_timestamp,
        max_timestamp: batch.max_timestamp,
        delete_horizon: batch.delete_horizon(),
        producer_id: batch.producer_id,
        producer_epoch: batch.producer_epoch,
        transactional: batch.is_transactional(),
        records: batch
            .records
            .iter()
            .map(|r| {
                let stored = batch.base_timestamp.wrapping_add(r.timestamp_delta);
                let timestamp = batch.timestamp_of(r);
                Rec {
                    offset: batch.offset_of(r),
                    key: r.key.clone(),
                    value: r.value.clone(),
                    timestamp,
                    create_timestamp: (stored != timestamp).then_some(stored),
                }
            })
            .collect(),
        codec: u8::try_from(batch.compression().id()).expect("a codec id is 0-4"),
        log_append_time,
    }
}

/// The first difference between two spec logs (engine first), `None` if equal.
pub fn structure_diff(engine: &SpecLog, spec: &SpecLog) -> Option<String> {
    if engine == spec {
        return None;
    }
    if engine.log_start_offset() != spec.log_start_offset() {
        return Some(format!(
            "log_start_offset: engine {} spec {}",
            engine.log_start_offset(),
            spec.log_start_offset()
        ));
    }
    if engine.next_offset() != spec.next_offset() {
        return Some(format!(
            "next_offset: engine {} spec {}",
            engine.next_offset(),
            spec.next_offset()
        ));
    }
    if engine.clean_point() != spec.clean_point() {
        return Some(format!(
            "clean_point: engine {} spec {}",
            engine.clean_point(),
            spec.clean_point()
        ));
    }
    let bases =
        |log: &SpecLog| -> Vec<i64> { log.raw_segments().iter().map(|s| s.base_offset).collect() };
    if bases(engine) != bases(spec) {
        return Some(format!(
            "segment bases: engine {:?} spec {:?}",
            bases(engine),
            bases(spec)
        ));
    }
    for (a, b) in engine.raw_segments().iter().zip(spec.raw_segments()) {
        if a != b {
            let batch = a
                .batches
                .iter()
                .zip(&b.batches)
                .find(|(x, y)| x != y)
                .map(|(x, y)| format!("first different batch: engine {x:?} spec {y:?}"))
                .unwrap_or_else(|| {
                    format!(
                        "{} batches in the engine, {} in the spec",
                        a.batches.len(),
                        b.batches.len()
                    )
                });
            return Some(format!("segment {}: {batch}", a.base_offset));
        }
    }
    Some("the logs differ (segment_bytes)".into())
}

/// Compares everything observable; returns the number of reads compared.
pub fn compare(log: &Log, spec_log: &SpecLog) -> Result<u64, String> {
    if log.is_poisoned() {
        return Err("the engine's log is poisoned".into());
    }
    let engine_log = engine_spec(log, spec_log.segment_bytes())?;
    if let Some(diff) = structure_diff(&engine_log, spec_log) {
        return Err(diff);
    }
    let engine_view = engine::view(log).map_err(|e| format!("engine view: {e}"))?;
    let spec_view = spec::view(spec_log);
    if engine_view != spec_view {
        return Err(format!(
            "view (engine vs spec): {}",
            engine_view.diff(&spec_view).join("; ")
        ));
    }
    let committed = super::committed::compare_committed(log, spec_log)?;
    Ok(compare_reads(log, spec_log)? + committed)
}

fn read_views(records: seglog::ReadRecords) -> Vec<RecordView> {
    records.into_iter().map(RecordView::from).collect()
}

fn spec_views(records: Vec<seglog_model::spec::ReadRec>) -> Vec<RecordView> {
    records.into_iter().map(RecordView::from).collect()
}

/// Bounds of the reads compared at every position: unbounded, one byte (always
/// one batch), and a few batches.
const READ_MAX_BYTES: [usize; 3] = [usize::MAX, 1, 200];

/// Reads from every position `log_start_offset - 1 ..= next_offset + 1` with every
/// bound in [`READ_MAX_BYTES`]; both sides must agree (records or rejection).
pub fn compare_reads(log: &Log, spec_log: &SpecLog) -> Result<u64, String> {
    let mut reads = 0;
    for from in spec_log.log_start_offset() - 1..=spec_log.next_offset() + 1 {
        for max_bytes in READ_MAX_BYTES {
            reads += 1;
            let engine_read = match log.read(from, max_bytes) {
                Ok(records) => Some(read_views(records)),
                Err(Error::OffsetOutOfRange { .. }) => None,
                Err(e) => return Err(format!("read({from}, {max_bytes}) failed: {e}")),
            };
            let spec_read = spec_log
                .read_max(from, max_bytes as u64)
                .ok()
                .map(spec_views);
            if engine_read != spec_read {
                return Err(format!(
                    "read({from}, {max_bytes}): engine {} spec {}",
                    describe(&engine_read),
                    describe(&spec_read)
                ));
            }
            // Batch level: which whole batches read_raw returns.
            reads += 1;
            check_read_raw(log, spec_log, from, max_bytes)?;
            // The zero-copy path: fetching on from each fetch's next offset must
            // return every record >= `from`, whatever the bound, and every fetch of
            // the walk the spec's batches and next offset.
            reads += 1;
            let engine_walk = fetch_walk(log, spec_log, from, max_bytes)?;
            let spec_all = spec_log.read_max(from, u64::MAX).ok().map(spec_views);
            if engine_walk != spec_all {
                return Err(format!(
                    "fetch walk from {from} by {max_bytes}: engine {} spec {}",
                    describe(&engine_walk),
                    describe(&spec_all)
                ));
            }
        }
    }
    Ok(reads)
}

/// Every record >= `from` through [`Log::fetch`], fetching again from each fetch's
/// next offset until a fetch is empty; `None` if `from` is out of range. Every fetch
/// of the walk is compared with the spec's at batch level ([`check_fetch`]).
fn fetch_walk(
    log: &Log,
    spec_log: &SpecLog,
    from: i64,
    max_bytes: usize,
) -> Result<Option<Vec<RecordView>>, String> {
    let mut records = Vec::new();
    let mut at = from;
    loop {
        let fetch = match check_fetch(log, spec_log, at, max_bytes)? {
            Some(fetch) => fetch,
            None if at == from => return Ok(None),
            None => return Err(format!("fetch({at}, {max_bytes}) is out of range")),
        };
        if fetch.is_empty() {
            return Ok(Some(records));
        }
        if fetch.next_offset() <= at {
            return Err(format!("fetch({at}, {max_bytes}) did not advance"));
        }
        for record in fetch.records() {
            let record = record.map_err(|e| format!("fetch({at}, {max_bytes}) records: {e}"))?;
            records.push(RecordView::from(seglog::ReadRecord::from_ref(
                fetch.bytes(),
                record,
            )));
        }
        at = fetch.next_offset();
    }
}

fn describe(read: &Option<Vec<RecordView>>) -> String {
    match read {
        None => "out of range".into(),
        Some(records) => format!(
            "{} records {:?}",
            records.len(),
            records.iter().map(|r| r.offset).collect::<Vec<_>>()
        ),
    }
}

//! The `kafka` policy's decoded reference pass (test builds): it decodes every
//! closed batch into a [`RecordBatch`], applies the rules of
//! [`crate::compaction::rules::kafka`] ([`clean_batch`] and the transaction, marker
//! and empty-batch rules) and encodes what it rebuilt. The pass that runs
//! (`crate::compaction::pass::kafka`) must write the same bytes: its tests compare
//! the two on random logs.

use std::ops::Range;
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::batch::decode;
use crate::format::filename::{self, LOG_SUFFIX};
use crate::format::manifest::ManifestFile;
use crate::format::RecordBatch;
use crate::fs::FileSystem;
use crate::segment::{BatchFacts, Segment};

use crate::compaction::files::build_sync_file;
use crate::compaction::finish::{finish_build, Tail};
use crate::compaction::options::{
    BuildInputs, Built, CleanOptions, CompactOptions, CompactionReport,
};
use crate::compaction::reseal::stamp_batch;
use crate::compaction::rules::kafka::{clean_batch, groups, BatchOutcome, KafkaMap};
use crate::compaction::rules::markers::{marker_outcome, MarkerData, MarkerOutcome};
use crate::compaction::rules::retain_empty::{empty_batch, ActiveProducers};
use crate::compaction::section::first_uncleanable;
use crate::compaction::source::read_active;
use crate::compaction::view;
use crate::segment::files::segment_path;

/// A decoded closed segment: its bytes and, per batch, the decoded batch and its
/// byte range.
struct Source {
    base: i64,
    bytes: bytes::Bytes,
    batches: Vec<(RecordBatch, Range<usize>)>,
}

impl Source {
    fn next_offset(&self) -> i64 {
        self.batches
            .last()
            .map_or(self.base, |(b, _)| b.last_offset() + 1)
    }

    fn max_timestamp(&self) -> i64 {
        self.batches
            .iter()
            .map(|(b, _)| b.max_timestamp)
            .max()
            .unwrap_or(crate::format::batch::NO_TIMESTAMP)
    }
}

fn read_source(fs: &dyn FileSystem, dir: &Path, base: i64) -> Result<Source> {
    let path = segment_path(dir, base, LOG_SUFFIX);
    let bytes = fs.map(&path).map_err(|e| Error::io(&path, e))?;
    let mut batches = Vec::new();
    for batch in view::batches(&path, base, &bytes)? {
        let start = batch.position as usize;
        let (decoded, size) = decode(batch.bytes).map_err(|e| e.at(&path, batch.position))?;
        batches.push((decoded, start..start + size));
    }
    Ok(Source {
        base,
        bytes,
        batches,
    })
}

/// Install step 1 under the `kafka` policy: decodes the closed segments, maps
/// `[clean point, first uncleanable offset)`, cleans every segment up to the map's
/// last offset in Kafka's groups, copies the rest, and finishes as every build does.
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "the reference pass: `pass::kafka`'s tests compare the pass that runs with it"
    )
)]
pub(crate) fn build(
    fs: &dyn FileSystem,
    dir: &Path,
    options: CompactOptions,
    clean: CleanOptions,
    inputs: BuildInputs<'_>,
) -> Result<Built> {
    let (&active_base, closed_bases) = inputs.bases.split_last().expect("a log has a segment");
    let clean_point = inputs.clean_point_before;
    let sources = closed_bases
        .iter()
        .map(|&base| read_source(fs, dir, base))
        .collect::<Result<Vec<Source>>>()?;
    let active_bytes = read_active(fs, dir, active_base, inputs.from.active_len)?;
    let facts: Vec<(i64, i64, i64)> = sources
        .iter()
        .map(|s| (s.base, s.next_offset(), s.max_timestamp()))
        .collect();
    // One walk of the batch headers for both hooks: the transaction rules
    // (`crate::compaction::rules::txn`) and the empty batches (`crate::compaction::rules::retain_empty`, rule 5).
    let walk = crate::compaction::headers::walk(fs, dir, inputs.bases)?;
    let txn = crate::compaction::rules::txn::KafkaTxn::of(&walk);
    let producers =
        ActiveProducers::of_facts(&walk.batches, options.now, clean.producer_id_expiration_ms);
    let retains_empty = |batch: &RecordBatch| {
        producers.retains_empty(
            batch.producer_id,
            batch.producer_epoch,
            batch.is_control(),
            batch.last_offset(),
        )
    };
    let aborted = |index: usize| txn.as_ref().is_some_and(|t| t.aborted(index));
    let mut uncleanable = first_uncleanable(
        &facts,
        active_base,
        clean_point,
        options.now,
        clean.min_compaction_lag_ms,
    );
    if let Some(t) = &txn {
        uncleanable = t.bound(uncleanable, inputs.bases);
    }
    // An aborted batch is mapped hollow: its keys stay out, the latest offset moves.
    let hollow: Vec<Option<RecordBatch>> = sources
        .iter()
        .flat_map(|s| &s.batches)
        .enumerate()
        .map(|(i, (b, _))| {
            aborted(i).then(|| RecordBatch {
                records: Vec::new(),
                ..b.clone()
            })
        })
        .collect();
    let map = KafkaMap::build(
        sources
            .iter()
            .flat_map(|s| s.batches.iter().map(|(b, _)| b))
            .zip(&hollow)
            .map(|(b, h)| h.as_ref().unwrap_or(b))
            .filter(|b| b.base_offset >= clean_point && b.base_offset < uncleanable),
        clean.key_budget(),
    )?;
    let end_offset = map.latest_offset.map_or(clean_point, |last| last + 1);
    assert!(
        end_offset <= active_base,
        "the map never enters the active segment"
    );
    let cleaned = match map.latest_offset {
        Some(_) => sources.iter().take_while(|s| s.base < end_offset).count(),
        None => 0,
    };
    let sizes: Vec<(i64, u64)> = sources[..cleaned]
        .iter()
        .map(|s| (s.base, s.bytes.len() as u64))
        .collect();
    let mut report = CompactionReport {
        segments_before: sources.len() as u64,
        map_keys: map.len() as u64,
        clean_point_before: clean_point,
        clean_point_after: clean_point.max(end_offset),
        ..CompactionReport::default()
    };
    let mut output: Vec<(i64, Vec<u8>, Vec<BatchFacts>)> = Vec::new();
    let push =
        |out: &mut Vec<u8>, facts: &mut Vec<BatchFacts>, batch: &RecordBatch, bytes: &[u8]| {
            facts.push(BatchFacts {
                base_offset: batch.base_offset,
                last_offset: batch.last_offset(),
                size_bytes: bytes.len() as u64,
                records: batch.records.len() as u64,
                max_timestamp: batch.max_timestamp,
            });
            out.extend_from_slice(bytes);
        };
    let first_index: Vec<usize> = sources
        .iter()
        .scan(0, |next, s| {
            let first = *next;
            *next += s.batches.len();
            Some(first)
        })
        .collect();
    let push_empty = |out: &mut Vec<u8>, facts: &mut Vec<BatchFacts>, batch: &RecordBatch| {
        if retains_empty(batch) {
            let empty = empty_batch(batch);
            push(out, facts, &empty, &empty.encode());
        }
    };
    // Hook: the marker rule (`crate::compaction::rules::markers::marker_outcome`).
    let mut markers = MarkerData::default();
    for group in groups(&sizes, options.segment_bytes, uncleanable) {
        let (mut bytes, mut facts) = (Vec::new(), Vec::new());
        for (s, source) in sources[group.clone()].iter().enumerate() {
            for (j, (batch, range)) in source.batches.iter().enumerate() {
                if batch.is_control() && batch.records.is_empty() {
                    // An emptied marker (`crate::compaction::rules::retain_empty`): ends nothing.
                    push_empty(&mut bytes, &mut facts, batch);
                    continue;
                }
                if batch.is_control() {
                    let has_data = markers.on_marker(batch.producer_id);
                    match marker_outcome(
                        has_data,
                        batch.delete_horizon(),
                        options.now,
                        options.delete_retention_ms,
                    ) {
                        MarkerOutcome::Kept => {
                            push(&mut bytes, &mut facts, batch, &source.bytes[range.clone()]);
                        }
                        MarkerOutcome::Stamped(horizon) => {
                            let stamped = stamp_batch(batch, horizon);
                            let encoded = stamped.encode();
                            push(&mut bytes, &mut facts, &stamped, &encoded);
                        }
                        MarkerOutcome::Removed => push_empty(&mut bytes, &mut facts, batch),
                    }
                    continue;
                }
                markers.on_data(batch.producer_id, batch.is_transactional());
                if aborted(first_index[group.start + s] + j) {
                    // Hook: aborted data goes (`crate::compaction::rules::txn`).
                    push_empty(&mut bytes, &mut facts, batch);
                    continue;
                }
                match clean_batch(
                    batch,
                    &map,
                    options.now,
                    options.delete_retention_ms,
                    &mut report.keyless_dropped,
                ) {
                    BatchOutcome::Dropped => push_empty(&mut bytes, &mut facts, batch),
                    BatchOutcome::Unchanged => {
                        push(&mut bytes, &mut facts, batch, &source.bytes[range.clone()]);
                    }
                    BatchOutcome::Rewritten(rebuilt) => {
                        let encoded = rebuilt.encode();
                        push(&mut bytes, &mut facts, &rebuilt, &encoded);
                    }
                }
            }
        }
        report.empty_batches += facts.iter().filter(|f| f.records == 0).count() as u64;
        output.push((sources[group.start].base, bytes, facts));
    }
    for source in &sources[cleaned..] {
        let facts = source
            .batches
            .iter()
            .map(|(b, range)| BatchFacts {
                base_offset: b.base_offset,
                last_offset: b.last_offset(),
                size_bytes: range.len() as u64,
                records: b.records.len() as u64,
                max_timestamp: b.max_timestamp,
            })
            .collect();
        output.push((source.base, source.bytes.to_vec(), facts));
    }
    fs.create_dir_all(&inputs.paths.tmp)
        .map_err(|e| Error::io(&inputs.paths.tmp, e))?;
    let mut files = Vec::new();
    let mut segments = Vec::new();
    for (base, bytes, facts) in output {
        let name = filename::build(base, LOG_SUFFIX);
        let path = inputs.paths.tmp.join(&name);
        fs.write_new(&path, &bytes)
            .map_err(|e| Error::io(&path, e))?;
        build_sync_file(fs, &path)?;
        let mut segment = Segment::empty(dir, base, inputs.index_interval_bytes);
        for fact in &facts {
            segment.on_batch(fact);
        }
        segment.close_active();
        segment.pending_index.clear();
        segment.pending_time_index.clear();
        assert_eq!(segment.bytes, bytes.len() as u64);
        report.records_after += segment.records;
        report.bytes_after += bytes.len() as u64;
        segments.push(segment);
        files.push(ManifestFile {
            name,
            bytes: bytes.len() as u64,
            crc32c: crate::format::crc::crc32c(&bytes),
        });
    }
    report.records_before = sources
        .iter()
        .flat_map(|s| &s.batches)
        .map(|(b, _)| b.records.len() as u64)
        .sum();
    report.bytes_before = sources.iter().map(|s| s.bytes.len() as u64).sum();
    report.segments_after = files.len() as u64;
    let clean_point_after = report.clean_point_after;
    // Hook: the output's `.txnindex` files (`crate::compaction::headers::entries`).
    let txn_plan = match &txn {
        Some(t) => {
            let source: Vec<crate::compaction::rules::txn::DataBatch> = sources
                .iter()
                .flat_map(|s| &s.batches)
                .filter(|(b, _)| !b.is_control())
                .map(|(b, _)| (b.base_offset, b.producer_id, b.is_transactional()))
                .collect();
            let cleaned_end = sources.get(cleaned).map_or(active_base, |s| s.base);
            Some(crate::compaction::rules::txn::TxnPlan {
                entries: crate::compaction::headers::entries(
                    fs,
                    dir,
                    inputs.bases,
                    cleaned_end,
                    &source,
                )?,
                last_stable_offset: t.last_stable_offset,
                ..crate::compaction::rules::txn::TxnPlan::default()
            })
        }
        None => None,
    };
    finish_build(
        fs,
        dir,
        Tail {
            paths: inputs.paths,
            active_base,
            active_bytes: &active_bytes,
            index_interval_bytes: inputs.index_interval_bytes,
            report,
            mapped_end_offset: Some(end_offset),
            files,
            segments,
            carried_bases: Vec::new(),
            clean_point_after,
            carry_point: inputs.carry_point,
            log_start_offset: inputs.bases[0],
            from: inputs.from,
            txn: txn_plan.as_ref(),
        },
    )
}

//! The `kafka` policy's cleaning pass as it runs (docs/design.md section 1, "The
//! `kafka` compaction policy"): the rules of [`crate::compaction::rules::kafka`] applied to
//! the batches in place, byte for byte what the reference `kafka::build` (tests only)
//! gives; the interop stage's cleaner differential holds it to Kafka 4.4's own `Cleaner`.
//!
//! 1. Read and 2. map, one walk of every record ([`super::kafka_map`]): every
//!    closed segment is split into CRC-checked batches, then a second thread checks
//!    every batch exactly as a full decode would (records walked, a compressed one
//!    inflated once and kept), counts its keyed, keyless and tombstone records and
//!    digests the keys of `[clean point, first uncleanable offset)`; this thread
//!    inserts them with record ordinals as positions (a key seen again sets its
//!    previous ordinal's bit in a superseded bitmap, as the `seed` policy's map
//!    does), under the key budget batch by batch as [`crate::compaction::rules::kafka::KafkaMap::build`];
//!    bounded, the map is the fixed table of `dedupe_buffer_bytes / 24` slots.
//!    Any damage fails the pass with the reference's error, before anything is written.
//! 3. Clean: each batch planned by the one planner ([`crate::compaction::plan`]), then the
//!    plan executed (`execute`). A batch past the map is kept whole; a mapped batch is decided whole
//!    from its counts and the bitmap when it can be (all keyed records superseded:
//!    dropped; none, and no keyless record or tombstone: copied); any other batch is
//!    decided record by record with [`crate::compaction::rules::kafka::RecordRule`] (for a mapped batch
//!    "latest" is one bit of the bitmap; a batch below the clean point looks its keys
//!    up). A batch kept whole and not stamped is copied as stored; a batch with
//!    nothing kept is dropped; the rest is rebuilt as Kafka's `filterTo` does: the source header with the
//!    new attributes (delete horizon bit), base and max timestamps, count, length
//!    and CRC-32C, then the kept records re-encoded with their timestamp deltas
//!    against the new base timestamp ([`crate::format::record::RecordView::encode_with_timestamp_delta`]).
//!    A compressed batch goes through the decoded rule ([`crate::compaction::rules::kafka::clean_batch`]).
//! 4. Write: Kafka's groups of the cleaned segments, then the segments past the map
//!    as stored, each its own group. Cleaning runs on a describing thread, one
//!    source segment at a time; the one writer ([`crate::compaction::writer`]) writes each
//!    source's runs into its group's output file while the next is cleaned and
//!    syncs the file after its group's last source; then the same tail as every
//!    build (`finish::finish_build`). The heap the step holds is two source
//!    segments' runs, whatever the group's size.
//!
//! Transactions (`crate::compaction::rules::txn`, the reference's decisions on the header
//! facts, the closed segments' taken from the split batches: `headers::of_split`):
//! the first uncleanable offset is held at the segment of the last stable offset;
//! a data batch of an aborted transaction is mapped hollow (no key, the map's last
//! offset moves past it) and dropped where cleaned; the output's `.txnindex` files
//! are `headers::entries`. Markers follow `rules::markers::marker_outcome` in every
//! pass (`clean_marker`: copied, stamped by the `rebuild` above, or dropped).
//!
//! The result is the reference pass's (`kafka::build`, test builds) byte for byte:
//! the tests below compare the two on random logs, transactional ones among them.
//!
//! `clean`: step 3, each batch of a cleaned source segment planned by the one
//! planner under the kafka rules and written.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::filename::{self, LOG_SUFFIX};
use crate::fs::FileSystem;
use crate::segment::Segment;

use crate::compaction::finish::Pass;
use crate::compaction::options::{BuildInputs, CleanOptions, CompactOptions, CompactionReport};
use crate::compaction::rules::kafka::groups;
use crate::compaction::rules::markers::MarkerData;
use crate::compaction::rules::retain_empty::ActiveProducers;
use crate::compaction::runs::{Counts, Runs};
use crate::compaction::section::first_uncleanable;
use crate::compaction::source::read_active;
use crate::compaction::writer::{settle, write_parts, Files, Part};

use super::kafka_map::{self, MapRange};

mod clean;

use clean::{Cleaning, Scratch};

/// What the describing thread of [`run`] returns beside the writer's files.
#[derive(Default)]
struct Described {
    /// The output segments' metadata and index entries, in order.
    segments: Vec<Segment>,
    keyless_dropped: u64,
    empty_batches: u64,
}

/// The pass of install step 1 under the `kafka` policy (module docs), over the
/// closed segments' bytes as the build mapped them (`closed_bytes`).
pub(crate) fn run(
    fs: &dyn FileSystem,
    dir: &Path,
    options: CompactOptions,
    clean: CleanOptions,
    inputs: &BuildInputs<'_>,
    closed_bytes: Vec<bytes::Bytes>,
) -> Result<Pass> {
    let (&active_base, closed_bases) = inputs.bases.split_last().expect("a log has a segment");
    let clean_point = inputs.clean_point_before;
    // Step 1's fast checks, then the transaction facts: on any error, the
    // reference's reads one by one find its first error.
    // Which check fails first does not matter here (any failure takes the
    // reference's order below): the first half of the segments is split on a
    // second thread while this one splits the rest and reads the others, unless
    // they are too small for a thread to pay (`read::SECOND_THREAD_BYTES`).
    let prelude = std::thread::scope(|scope| -> Result<_> {
        let mut mapped = kafka_map::sources(dir, closed_bases, closed_bytes);
        let bytes: usize = mapped.iter().map(|(_, _, b)| b.len()).sum();
        let (splits, active_bytes) = if bytes < crate::compaction::read::SECOND_THREAD_BYTES {
            let splits = kafka_map::split_mapped(mapped)?;
            (
                splits,
                read_active(fs, dir, active_base, inputs.from.active_len)?,
            )
        } else {
            let second = mapped.split_off(mapped.len() / 2);
            let first = scope.spawn(move || kafka_map::split_mapped(mapped));
            let second = kafka_map::split_mapped(second);
            let active_bytes = read_active(fs, dir, active_base, inputs.from.active_len);
            let mut splits = crate::panics::join_scoped(first, "the kafka split")?;
            splits.extend(second?);
            (splits, active_bytes?)
        };
        // The batch headers' facts for the transaction rules and the producers
        // (what `crate::compaction::headers::walk` finds, as the reference takes them), the
        // closed segments' from the batches just split: no header walked twice.
        let closed: Vec<_> = splits
            .iter()
            .map(|s| (s.path.as_path(), s.batch_bytes()))
            .collect();
        let walk = crate::compaction::headers::of_split(fs, dir, &closed, active_base)?;
        Ok((splits, active_bytes, walk))
    });
    let (splits, active_bytes, walk) = match prelude {
        Ok(prelude) => prelude,
        Err(error) => {
            kafka_map::first_error(fs, dir, inputs.bases, inputs.from.active_len)?;
            return Err(error);
        }
    };
    // The transaction rules (`crate::compaction::rules::txn`, as the reference applies them)
    // and the empty batches' producers (`crate::compaction::rules::retain_empty`), from that walk.
    let txn = crate::compaction::rules::txn::KafkaTxn::of(&walk);
    let producers =
        ActiveProducers::of_facts(&walk.batches, options.now, clean.producer_id_expiration_ms);
    let facts: Vec<(i64, i64, i64)> = splits
        .iter()
        .map(|s| (s.base, s.next_offset(), s.max_timestamp()))
        .collect();
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
    // Batches below the clean point are cleaned again (Kafka cleans from the log
    // start): their keys are looked up, so the map is sorted for lookups.
    let lookups = splits
        .iter()
        .flat_map(|s| s.batches.first())
        .next()
        .is_some_and(|b| b.base_offset < clean_point);
    let range = MapRange {
        clean_point,
        uncleanable,
        key_budget: clean.key_budget(),
        lookups,
    };
    let aborted = |index: usize| txn.as_ref().is_some_and(|t| t.aborted(index));
    let (sources, map) = kafka_map::read_and_map(dir, splits, &aborted, &range)?;
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
        map_keys: map.keys as u64,
        map_bytes: map.map_bytes as u64,
        map_bytes_peak: map.map_bytes_peak as u64,
        clean_point_before: clean_point,
        clean_point_after: clean_point.max(end_offset),
        ..CompactionReport::default()
    };
    // Cleaning does no IO: the temp dir is created where the reference creates it
    // (after the reads). The cleaned groups, then the segments past the map as
    // stored, each its own group; each source segment's runs go to the one writer
    // ([`crate::compaction::writer`]) as the next is cleaned.
    let tmp = &inputs.paths.tmp;
    fs.create_dir_all(tmp).map_err(|e| Error::io(tmp, e))?;
    let groups = groups(&sizes, options.segment_bytes, uncleanable);
    let outputs: Vec<(std::ops::Range<usize>, bool)> = groups
        .into_iter()
        .map(|group| (group, true))
        .chain((cleaned..sources.len()).map(|s| (s..s + 1, false)))
        .collect();
    let (sources, map, producers, options) = (&sources, &map, &producers, &options);
    let index_interval_bytes = inputs.index_interval_bytes;
    let (written, described) = write_parts(fs, dir, tmp, move |parts, back| {
        let mut out = Described::default();
        let mut cleaning = Cleaning {
            map,
            options,
            producers,
            markers: MarkerData::default(),
            keyless_dropped: 0,
        };
        let mut scratch = Scratch::default();
        let mut spare = vec![Runs::default(), Runs::default()];
        let mut crc32c = 0;
        for (group, clean) in outputs {
            for s in group.clone() {
                let mut runs = match spare.pop() {
                    Some(runs) => runs,
                    None => match back.recv() {
                        Ok((runs, _source)) => runs,
                        Err(_) => break, // the writer stopped on an error: it reports it
                    },
                };
                runs.clear();
                let source = &sources[s];
                let facts = if clean {
                    // What its rebuilt batches take at most but a few bytes of
                    // re-encoded records: no reallocation, no copy while growing.
                    runs.rebuilt.reserve(source.bytes.len());
                    cleaning.source(source, &mut scratch, &mut runs)?
                } else {
                    runs.push_stored(0..source.bytes.len());
                    source.facts()
                };
                let start = s == group.start;
                if start {
                    crc32c = 0;
                    if let Some(done) = out.segments.last_mut() {
                        done.close_active();
                    }
                    out.segments
                        .push(Segment::empty(dir, source.base, index_interval_bytes));
                }
                let segment = out.segments.last_mut().expect("a group starts a segment");
                for fact in &facts {
                    segment.on_batch(fact);
                }
                if clean {
                    // The empty batches the cleaning kept (rule 5), not the stored ones.
                    out.empty_batches += facts.iter().filter(|f| f.records == 0).count() as u64;
                }
                crc32c = runs.crc32c_append(crc32c, &source.bytes);
                let part = Part {
                    start: start.then(|| filename::build(source.base, LOG_SUFFIX)),
                    source: source.bytes.clone(),
                    counts: Counts {
                        records_before: source.batches.iter().map(|b| b.records as u64).sum(),
                        records_after: facts.iter().map(|f| f.records).sum(),
                        bytes_after: runs.bytes(),
                    },
                    described: runs,
                    crc32c,
                    link: false,
                    end: (s + 1 == group.end).then_some(None),
                };
                if parts.send(part).is_err() {
                    break; // the writer stopped on an error: it reports it
                }
            }
        }
        drop(parts);
        for (_runs, _source) in back {}
        if let Some(done) = out.segments.last_mut() {
            done.close_active();
        }
        out.keyless_dropped = cleaning.keyless_dropped;
        Ok(out)
    })?;
    let Files { files, totals, .. } = written;
    let mut segments = described.segments;
    settle(dir, &mut segments, &files);
    report.keyless_dropped = described.keyless_dropped;
    report.empty_batches = described.empty_batches;
    report.records_after = totals.counts.records_after;
    report.bytes_after = totals.counts.bytes_after;
    // Every source went to the writer as a part: the totals are the log's.
    report.records_before = totals.counts.records_before;
    report.bytes_before = totals.bytes_before;
    report.segments_after = files.len() as u64;
    let clean_point_after = report.clean_point_after;
    // The output's `.txnindex` files (`crate::compaction::rules::txn::entries`).
    let txn_plan = match &txn {
        Some(t) => {
            let data: Vec<crate::compaction::rules::txn::DataBatch> = sources
                .iter()
                .flat_map(|s| &s.batches)
                .filter(|b| !b.control)
                .map(|b| (b.base_offset, b.producer_id, b.transactional))
                .collect();
            let cleaned_end = sources.get(cleaned).map_or(active_base, |s| s.base);
            Some(crate::compaction::rules::txn::TxnPlan {
                entries: crate::compaction::headers::entries(
                    fs,
                    dir,
                    inputs.bases,
                    cleaned_end,
                    &data,
                )?,
                last_stable_offset: t.last_stable_offset,
                ..crate::compaction::rules::txn::TxnPlan::default()
            })
        }
        None => None,
    };
    Ok(Pass {
        report,
        active_bytes,
        mapped_end_offset: Some(end_offset),
        files,
        segments,
        carried_bases: Vec::new(),
        clean_point_after,
        txn: txn_plan,
    })
}

#[cfg(test)]
mod tests;

//! Step 3 of the kafka pass (`super`): each batch of a cleaned source segment
//! planned by the one planner (`crate::compaction::plan`) under the kafka rules,
//! then the plan executed into the source's runs.

use crate::error::Result;
use crate::format::batch::{decode, ATTR_DELETE_HORIZON, BASE_TIMESTAMP_OFFSET};
use crate::format::batch_view::BatchView;
use crate::format::record::RecordView;
use crate::segment::BatchFacts;

use crate::compaction::options::CompactOptions;
use crate::compaction::plan::{self, BatchCounts, BatchPlan};
use crate::compaction::reseal::{rebuild, stamp_batch, write_empty};
use crate::compaction::rules::kafka::{filter_batch, BatchOutcome, RecordRule};
use crate::compaction::rules::markers::{marker_outcome, MarkerData};
use crate::compaction::rules::retain_empty::ActiveProducers;
use crate::compaction::runs::Runs;

use super::super::kafka_map::{Batch, PassMap, Source};

/// Scratch of the clean step, reused from batch to batch: the batch decided
/// record by record, its records and their keep flags.
#[derive(Default)]
pub(super) struct Scratch<'a> {
    view: Option<BatchView<'a>>,
    records: Vec<RecordView<'a>>,
    keep: Vec<bool>,
}

/// The state of the clean step that crosses batches and source segments.
pub(super) struct Cleaning<'a> {
    pub map: &'a PassMap,
    pub options: &'a CompactOptions,
    pub producers: &'a ActiveProducers,
    /// The marker rule (`crate::compaction::rules::txn::marker_outcome`), across segments.
    pub markers: MarkerData,
    pub keyless_dropped: u64,
}

impl Cleaning<'_> {
    /// Step 3 for every batch of `source` (cleaned): each batch planned
    /// ([`crate::compaction::plan`]), then the plan executed into `out`; the facts of the
    /// batches written.
    pub fn source<'a>(
        &mut self,
        source: &'a Source,
        scratch: &mut Scratch<'a>,
        out: &mut Runs,
    ) -> Result<Vec<BatchFacts>> {
        let mut facts = Vec::new();
        for batch in &source.batches {
            let plan = self.plan(source, batch, scratch)?;
            let plan = match plan {
                // Rule 5 (`crate::compaction::rules::retain_empty`): an active producer's last
                // batch stays as its empty batch.
                BatchPlan::Drop => plan::dropped(self.producers.retains_empty(
                    batch.producer_id,
                    batch.producer_epoch,
                    batch.control,
                    batch.last_offset,
                )),
                plan => plan,
            };
            facts.extend(execute(source, batch, plan, self.options, scratch, out)?);
        }
        Ok(facts)
    }

    /// The plan of one batch of a cleaned segment (`scratch` holds its records and
    /// keep flags when it was decided record by record).
    fn plan<'a>(
        &mut self,
        source: &'a Source,
        batch: &'a Batch,
        scratch: &mut Scratch<'a>,
    ) -> Result<BatchPlan> {
        scratch.view = None;
        if batch.control && batch.records == 0 {
            // An emptied marker (`crate::compaction::rules::retain_empty`): ends nothing.
            return Ok(BatchPlan::Drop);
        }
        if batch.control {
            let has_data = self.markers.on_marker(batch.producer_id);
            let horizon = (batch.attributes & ATTR_DELETE_HORIZON != 0).then(|| {
                let bytes = &source.bytes[batch.range.clone()];
                let field = &bytes[BASE_TIMESTAMP_OFFSET..BASE_TIMESTAMP_OFFSET + 8];
                i64::from_be_bytes(field.try_into().expect("eight bytes"))
            });
            let (now, retention) = (self.options.now, self.options.delete_retention_ms);
            return Ok(plan::kafka_marker(marker_outcome(
                has_data, horizon, now, retention,
            )));
        }
        self.markers.on_data(batch.producer_id, batch.transactional);
        if batch.aborted {
            // Aborted data goes (`crate::compaction::rules::txn`).
            return Ok(BatchPlan::Drop);
        }
        self.plan_data(source, batch, scratch)
    }

    /// The plan of a data batch: from its counts and the superseded bitmap when
    /// they decide it whole, else record by record with
    /// [`crate::compaction::rules::kafka::RecordRule`] (for a mapped batch "latest" is one bit
    /// of the bitmap; a batch below the clean point looks its keys up).
    fn plan_data<'a>(
        &mut self,
        source: &'a Source,
        batch: &'a Batch,
        scratch: &mut Scratch<'a>,
    ) -> Result<BatchPlan> {
        let map = self.map;
        let counts = BatchCounts {
            base_offset: batch.base_offset,
            records: batch.records,
            keyed: batch.keyed as usize,
            keyless: batch.keyless as usize,
            tombstones: batch.tombstones as usize,
            stamped: batch.attributes & ATTR_DELETE_HORIZON != 0,
        };
        let superseded = batch
            .first_ordinal
            .map(|first| map.superseded_count(first..first + i64::from(batch.keyed)));
        if let Some(plan) = plan::kafka_counted(&counts, map.latest_offset, superseded) {
            if plan == BatchPlan::Drop {
                self.keyless_dropped += u64::from(batch.keyless);
            }
            return Ok(plan);
        }
        let (view, records) = source.records(batch)?;
        let horizon = (view.attributes & ATTR_DELETE_HORIZON != 0).then_some(view.base_timestamp);
        let rule = RecordRule {
            latest_offset: map.latest_offset,
            now: self.options.now,
            delete_horizon: horizon,
        };
        let Scratch {
            view: kept_view,
            records: views,
            keep,
        } = scratch;
        views.clear();
        keep.clear();
        let mut ordinal = batch.first_ordinal;
        let mut tombstone_kept = false;
        for record in records {
            let record = record.map_err(|e| e.at(&source.path, batch.range.start as u64))?;
            let offset = view.offset_of(&record);
            let tombstone = record.value.is_none();
            let keeps = match (record.key, ordinal.as_mut()) {
                (Some(_), Some(next)) => {
                    // A mapped batch: its keyed records have ordinals, in order.
                    let this = *next;
                    *next += 1;
                    rule.keeps(offset, true, tombstone, || !map.is_superseded(this))
                }
                (key, _) => rule.keeps(offset, key.is_some(), tombstone, || {
                    // Asked only at or below `L` of a batch the map did not read: one
                    // below the clean point, below every mapped offset, so "offset >=
                    // the map's" holds exactly when the key is not mapped.
                    assert!(batch.base_offset < map.clean_point);
                    key.is_none_or(|k| !map.is_mapped(k))
                }),
            };
            if !keeps && record.key.is_none() {
                self.keyless_dropped += 1;
            }
            tombstone_kept |= keeps && tombstone;
            keep.push(keeps);
            views.push(record);
        }
        assert_eq!(views.len(), batch.records);
        *kept_view = Some(view);
        let kept = keep.iter().filter(|k| **k).count();
        let options = self.options;
        Ok(plan::kafka_decided(
            views.len(),
            kept,
            tombstone_kept,
            horizon,
            options.now,
            options.delete_retention_ms,
        ))
    }
}

/// Executes `plan` for one batch of `source` into `out` (the write side only
/// executes plans): the facts of the batch written, `None` when dropped.
/// A rebuilt data batch uses the records and flags the planner left in
/// `scratch`; a stamped marker keeps every record.
fn execute<'a>(
    source: &'a Source,
    batch: &'a Batch,
    plan: BatchPlan,
    options: &CompactOptions,
    scratch: &mut Scratch<'a>,
    out: &mut Runs,
) -> Result<Option<BatchFacts>> {
    let bytes = &source.bytes[batch.range.clone()];
    let at = |e: crate::format::FormatError| e.at(&source.path, batch.range.start as u64);
    let start = out.rebuilt.len();
    match plan {
        BatchPlan::Drop => Ok(None),
        BatchPlan::Copy => {
            out.push_stored(batch.range.clone());
            Ok(Some(BatchFacts {
                base_offset: batch.base_offset,
                last_offset: batch.last_offset,
                size_bytes: bytes.len() as u64,
                records: batch.records as u64,
                max_timestamp: batch.max_timestamp,
            }))
        }
        BatchPlan::KeepEmpty => {
            write_empty(bytes, &mut out.rebuilt);
            out.push_rebuilt(start);
            Ok(Some(BatchFacts {
                base_offset: batch.base_offset,
                last_offset: batch.last_offset,
                size_bytes: (out.rebuilt.len() - start) as u64,
                records: 0,
                max_timestamp: batch.max_timestamp,
            }))
        }
        BatchPlan::Splice => unreachable!("the kafka rules rebuild a partly kept batch"),
        BatchPlan::Rebuild { horizon } if batch.inflated.is_some() => {
            // Compressed: rebuilt by the decoded rule and re-compressed with its
            // codec, as the reference pass does.
            let (decoded, _) = decode(bytes).map_err(at)?;
            let rebuilt = if batch.control {
                stamp_batch(&decoded, horizon.expect("a rebuilt marker is stamped"))
            } else {
                let (now, retention) = (options.now, options.delete_retention_ms);
                match filter_batch(&decoded, &scratch.keep, now, retention) {
                    BatchOutcome::Rewritten(rebuilt) => rebuilt,
                    other => unreachable!("planned a rebuild, the decoded rule says {other:?}"),
                }
            };
            rebuilt.encode_into(&mut out.rebuilt);
            out.push_rebuilt(start);
            Ok(Some(BatchFacts {
                base_offset: rebuilt.base_offset,
                last_offset: rebuilt.last_offset(),
                size_bytes: (out.rebuilt.len() - start) as u64,
                records: rebuilt.records.len() as u64,
                max_timestamp: rebuilt.max_timestamp,
            }))
        }
        BatchPlan::Rebuild { horizon } => {
            if batch.control {
                let (view, records) = source.records(batch)?;
                scratch.records.clear();
                for record in records {
                    scratch.records.push(record.map_err(at)?);
                }
                scratch.keep.clear();
                scratch.keep.resize(scratch.records.len(), true);
                scratch.view = Some(view);
            }
            let view = scratch.view.as_ref().expect("the planner read the batch");
            let facts = rebuild(
                view,
                &scratch.records,
                &scratch.keep,
                horizon,
                &mut out.rebuilt,
            );
            out.push_rebuilt(start);
            Ok(Some(facts))
        }
    }
}

//! The `kafka` compaction policy (docs/design.md section 1; spec
//! `model/src/spec/kafka.rs`): one pass of Apache Kafka's cleaner (4.4's
//! `Cleaner.doClean`).
//!
//! Pure rules first ([`first_uncleanable`], [`KafkaMap`], [`keeps`],
//! [`clean_batch`], [`groups`]), one function per decision so that the transaction
//! rules (aborted data, markers) plug in beside them.
//!
//! The pass that runs is `super::kafka_pass`: the same rules applied to the
//! batches in place (copy, drop, or rebuild of one batch's bytes). Here is also
//! `build`, the reference-shaped pass that decodes every closed batch into a
//! [`RecordBatch`], applies [`clean_batch`] and encodes what it rebuilt: the tuned
//! pass must write the same bytes (`kafka_pass`'s tests check that on random logs).
//! Both apply the transaction rules (`super::kafka_txn`); only the tuned pass runs
//! (`build` here is the reference of test builds).

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::batch::decode;
use crate::format::batch::ATTR_DELETE_HORIZON;
use crate::format::filename::{self, LOG_SUFFIX};
use crate::format::manifest::ManifestFile;
use crate::format::{RecordBatch, TimestampType};
use crate::fs::FileSystem;
use crate::install::InstallPaths;
use crate::segment::{BatchFacts, Segment};

use super::files::build_sync_file;
use super::finish::{finish_build, Tail};
use super::kafka_read::active_bytes;
use super::kafka_txn::{marker_outcome, MarkerData, MarkerOutcome};
use super::options::{BuildFrom, Built, CleanOptions, CompactOptions, CompactionReport};
use super::producers::{empty_batch, ActiveProducers};
use super::source::segment_path;
use super::view;

/// Kafka's first uncleanable offset: the active segment's base, or with a lag the
/// base of the first closed segment past the clean point holding a timestamp newer
/// than `now - min_compaction_lag_ms`. `closed`: (base, next offset, max timestamp).
pub fn first_uncleanable(
    closed: &[(i64, i64, i64)],
    active_base: i64,
    clean_point: i64,
    now: i64,
    min_compaction_lag_ms: i64,
) -> i64 {
    if min_compaction_lag_ms <= 0 {
        return active_base;
    }
    let horizon = now.saturating_sub(min_compaction_lag_ms);
    closed
        .iter()
        .find(|&&(_, next, max_ts)| next > clean_point && max_ts > horizon)
        .map_or(active_base, |&(base, _, _)| base)
}

/// The map of one pass: latest offset per key over the data batches of
/// `[clean_point, first uncleanable offset)`, whole batches while the keys fit.
#[derive(Debug, Clone, Default)]
pub struct KafkaMap {
    latest: HashMap<Vec<u8>, i64>,
    /// The last offset of the last batch read (Kafka's `OffsetMap.latestOffset`).
    pub latest_offset: Option<i64>,
}

impl KafkaMap {
    /// Maps `batches` (in offset order, all in the range) under `key_budget`; a first
    /// batch with more distinct keys than the budget is `InvalidArgument`.
    pub fn build<'a>(
        batches: impl IntoIterator<Item = &'a RecordBatch>,
        key_budget: Option<u64>,
    ) -> Result<KafkaMap> {
        let mut map = KafkaMap::default();
        for batch in batches {
            if !batch.is_control() {
                if let Some(budget) = key_budget {
                    let mut fresh: Vec<&[u8]> = batch
                        .records
                        .iter()
                        .filter_map(|r| r.key.as_deref())
                        .filter(|k| !map.latest.contains_key(*k))
                        .collect();
                    fresh.sort_unstable();
                    fresh.dedup();
                    if (map.latest.len() + fresh.len()) as u64 > budget {
                        if map.latest.is_empty() {
                            return Err(Error::InvalidArgument(format!(
                                "the offset map holds {budget} keys; batch {} alone has {}",
                                batch.base_offset,
                                fresh.len()
                            )));
                        }
                        return Ok(map);
                    }
                }
                for record in &batch.records {
                    if let Some(key) = &record.key {
                        map.latest.insert(key.clone(), batch.offset_of(record));
                    }
                }
            }
            map.latest_offset = Some(batch.last_offset());
        }
        Ok(map)
    }

    /// Distinct keys mapped.
    pub fn len(&self) -> usize {
        self.latest.len()
    }

    /// True when no key is mapped.
    pub fn is_empty(&self) -> bool {
        self.latest.is_empty()
    }
}

/// Kafka's `shouldRetainRecord` for a record (offset `offset`, key, tombstone or
/// not) of a data batch with delete horizon `delete_horizon`, at `now`.
pub fn keeps(
    offset: i64,
    key: Option<&[u8]>,
    tombstone: bool,
    delete_horizon: Option<i64>,
    map: &KafkaMap,
    now: i64,
) -> bool {
    let rule = RecordRule {
        latest_offset: map.latest_offset,
        now,
        delete_horizon,
    };
    rule.keeps(offset, key.is_some(), tombstone, || {
        key.and_then(|k| map.latest.get(k))
            .is_none_or(|&found| offset >= found)
    })
}

/// [`keeps`] with the key's lookup left to the caller: `is_latest` answers "is
/// this record its key's latest mapped one?" and is asked only for a keyed record
/// at or below the map's last offset (the tuned pass answers from a bitmap).
#[derive(Debug, Clone, Copy)]
pub struct RecordRule {
    /// The map's last offset `L`.
    pub latest_offset: Option<i64>,
    /// The time the pass runs at.
    pub now: i64,
    /// The batch's delete horizon.
    pub delete_horizon: Option<i64>,
}

impl RecordRule {
    /// Whether the record stays.
    pub fn keeps(
        &self,
        offset: i64,
        keyed: bool,
        tombstone: bool,
        is_latest: impl FnOnce() -> bool,
    ) -> bool {
        let Some(last) = self.latest_offset else {
            return true;
        };
        if offset > last {
            return true;
        }
        if !keyed {
            return false; // keyless: Kafka counts it as invalid and drops it
        }
        is_latest() && (!tombstone || self.delete_horizon.is_none_or(|h| self.now < h))
    }
}

/// What happens to one batch of a cleaned segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOutcome {
    /// Copied as stored.
    Unchanged,
    /// Rebuilt: records dropped, or a delete horizon stamped.
    Rewritten(RecordBatch),
    /// No record kept.
    Dropped,
}

/// Kafka's `filterTo` for one batch: the kept records; a batch keeping a tombstone
/// without a delete horizon gets `now + delete_retention_ms` (attribute bit 6, and
/// it becomes `base_timestamp`); a rebuilt batch's `base_timestamp` is its horizon or
/// its first kept record's stored timestamp. Control batches are unchanged (the
/// transaction rules plug in here). Adds dropped keyless records to `keyless_dropped`.
pub fn clean_batch(
    batch: &RecordBatch,
    map: &KafkaMap,
    now: i64,
    delete_retention_ms: i64,
    keyless_dropped: &mut u64,
) -> BatchOutcome {
    if batch.is_control() {
        return BatchOutcome::Unchanged;
    }
    let horizon = batch.delete_horizon();
    let keep: Vec<bool> = batch
        .records
        .iter()
        .map(|r| {
            let keep = keeps(
                batch.offset_of(r),
                r.key.as_deref(),
                r.value.is_none(),
                horizon,
                map,
                now,
            );
            if !keep && r.key.is_none() {
                *keyless_dropped += 1;
            }
            keep
        })
        .collect();
    filter_batch(batch, &keep, now, delete_retention_ms)
}

/// The rest of [`clean_batch`] once each record of the data batch `batch` is
/// decided (`keep`, one flag per record): dropped, unchanged, or rebuilt (and
/// stamped) as Kafka's `filterTo` rebuilds it.
pub fn filter_batch(
    batch: &RecordBatch,
    keep: &[bool],
    now: i64,
    delete_retention_ms: i64,
) -> BatchOutcome {
    assert_eq!(keep.len(), batch.records.len());
    let horizon = batch.delete_horizon();
    let kept: Vec<&crate::format::Record> = batch
        .records
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(r, _)| r)
        .collect();
    let Some(first) = kept.first() else {
        return BatchOutcome::Dropped;
    };
    let stamp = horizon.is_none() && kept.iter().any(|r| r.value.is_none());
    if kept.len() == batch.records.len() && !stamp {
        return BatchOutcome::Unchanged;
    }
    let horizon = if stamp {
        Some(now.saturating_add(delete_retention_ms))
    } else {
        horizon
    };
    let stored = |r: &crate::format::Record| batch.base_timestamp.wrapping_add(r.timestamp_delta);
    let base_timestamp = horizon.unwrap_or_else(|| stored(first));
    let max_timestamp = match batch.timestamp_type() {
        TimestampType::LogAppendTime => batch.max_timestamp,
        TimestampType::CreateTime => kept
            .iter()
            .map(|r| stored(r))
            .max()
            .unwrap_or(base_timestamp),
    };
    let records = kept
        .iter()
        .map(|r| crate::format::Record {
            timestamp_delta: stored(r).wrapping_sub(base_timestamp),
            ..(*r).clone()
        })
        .collect();
    let attributes = if horizon.is_some() {
        batch.attributes | ATTR_DELETE_HORIZON
    } else {
        batch.attributes
    };
    BatchOutcome::Rewritten(RecordBatch {
        attributes,
        base_timestamp,
        max_timestamp,
        records,
        ..batch.clone()
    })
}

/// A marker stamped with delete horizon `horizon` (Kafka's `filterTo` rebuilding a
/// batch with `containsMarkerForEmptyTxn`): attribute bit 6, `base_timestamp` the
/// horizon, every record kept with its timestamp (delta recomputed), the max
/// timestamp its records' (LogAppendTime: the batch's).
pub fn stamp_batch(batch: &RecordBatch, horizon: i64) -> RecordBatch {
    let stored = |r: &crate::format::Record| batch.base_timestamp.wrapping_add(r.timestamp_delta);
    let max_timestamp = match batch.timestamp_type() {
        TimestampType::LogAppendTime => batch.max_timestamp,
        TimestampType::CreateTime => batch.records.iter().map(stored).max().unwrap_or(horizon),
    };
    RecordBatch {
        attributes: batch.attributes | ATTR_DELETE_HORIZON,
        base_timestamp: horizon,
        max_timestamp,
        records: batch
            .records
            .iter()
            .map(|r| crate::format::Record {
                timestamp_delta: stored(r).wrapping_sub(horizon),
                ..r.clone()
            })
            .collect(),
        ..batch.clone()
    }
}

/// Kafka's `groupSegmentsBySize` on source segments `(base, bytes)`: the next joins
/// the group while the bytes fit `segment_bytes` and (it is empty or its last offset,
/// estimated as the next segment's base - 1 or `first_uncleanable - 1`, is within
/// `i32::MAX` of the group's base). Kafka's index-size limit is not applied
/// (docs/design.md).
pub fn groups(
    sources: &[(i64, u64)],
    segment_bytes: u64,
    first_uncleanable: i64,
) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < sources.len() {
        let (group_base, mut bytes) = sources[start];
        let mut end = start + 1;
        while let Some(&(_, next_bytes)) = sources.get(end) {
            let last_offset = sources
                .get(end + 1)
                .map_or(first_uncleanable - 1, |&(base, _)| base - 1);
            let in_range = next_bytes == 0 || last_offset - group_base <= i64::from(i32::MAX);
            if bytes.saturating_add(next_bytes) > segment_bytes || !in_range {
                break;
            }
            bytes += next_bytes;
            end += 1;
        }
        out.push(start..end);
        start = end;
    }
    out
}

/// The parts of [`super::cleaner::build_indexed`]'s state a kafka pass needs.
pub(super) struct BuildInputs<'a> {
    pub paths: &'a InstallPaths,
    /// Segment bases, ascending, the active one last; at least one closed.
    pub bases: &'a [i64],
    pub clean_point_before: i64,
    pub index_interval_bytes: u64,
    pub carry_point: bool,
    /// The live directory or a concurrent cleaning's snapshot.
    pub from: &'a BuildFrom<'a>,
}

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
        reason = "the reference pass: `kafka_pass`'s tests compare the pass that runs with it"
    )
)]
pub(super) fn build(
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
    let active_bytes = active_bytes(fs, dir, active_base, inputs.from.active_len)?;
    let facts: Vec<(i64, i64, i64)> = sources
        .iter()
        .map(|s| (s.base, s.next_offset(), s.max_timestamp()))
        .collect();
    // One walk of the batch headers for both hooks: the transaction rules
    // (`super::kafka_txn`) and the empty batches (`super::producers`, rule 5).
    let walk = super::txn::walk(fs, dir, inputs.bases)?;
    let txn = super::kafka_txn::KafkaTxn::of(&walk);
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
    // Hook: the marker rule (`super::kafka_txn::marker_outcome`).
    let mut markers = MarkerData::default();
    for group in groups(&sizes, options.segment_bytes, uncleanable) {
        let (mut bytes, mut facts) = (Vec::new(), Vec::new());
        for (s, source) in sources[group.clone()].iter().enumerate() {
            for (j, (batch, range)) in source.batches.iter().enumerate() {
                if batch.is_control() && batch.records.is_empty() {
                    // An emptied marker (`super::producers`): ends nothing.
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
                    // Hook: aborted data goes (`super::kafka_txn`).
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
    // Hook: the output's `.txnindex` files (`super::kafka_txn::entries`).
    let txn_plan = match &txn {
        Some(t) => {
            let source: Vec<super::kafka_txn::DataBatch> = sources
                .iter()
                .flat_map(|s| &s.batches)
                .filter(|(b, _)| !b.is_control())
                .map(|(b, _)| (b.base_offset, b.producer_id, b.is_transactional()))
                .collect();
            let cleaned_end = sources.get(cleaned).map_or(active_base, |s| s.base);
            Some(super::txn::TxnPlan {
                entries: super::kafka_txn::entries(fs, dir, inputs.bases, cleaned_end, &source)?,
                last_stable_offset: t.last_stable_offset,
                ..super::txn::TxnPlan::default()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::NewRecord;

    fn rec(key: Option<&str>, value: Option<&str>, ts: i64) -> NewRecord {
        NewRecord::new(
            key.map(|k| k.as_bytes().to_vec()),
            value.map(|v| v.as_bytes().to_vec()),
            ts,
        )
    }

    #[test]
    fn a_kept_tombstone_stamps_its_batch_and_goes_at_the_horizon() {
        // a=1 @0 ts 10, a=null @1 ts 20, (keyless) @2 ts 30.
        let batch = RecordBatch::build(
            0,
            &[
                rec(Some("a"), Some("1"), 10),
                rec(Some("a"), None, 20),
                rec(None, Some("e"), 30),
            ],
        );
        let map = KafkaMap::build([&batch], None).unwrap();
        assert_eq!(map.latest_offset, Some(2));
        let mut keyless = 0;
        let BatchOutcome::Rewritten(stamped) = clean_batch(&batch, &map, 1_000, 500, &mut keyless)
        else {
            panic!("the batch keeps its tombstone, stamped");
        };
        assert_eq!(keyless, 1);
        assert_eq!(stamped.delete_horizon(), Some(1_500));
        assert_eq!(stamped.base_timestamp, 1_500);
        assert_eq!(stamped.records.len(), 1);
        assert_eq!(stamped.offset_of(&stamped.records[0]), 1);
        assert_eq!(
            stamped.timestamp_of(&stamped.records[0]),
            20,
            "timestamps stay"
        );
        assert_eq!(stamped.last_offset(), 2, "the last offset stays");
        assert_eq!(stamped.max_timestamp, 20);
        // The stamped batch round-trips through its bytes.
        let (decoded, _) = decode(&stamped.encode()).unwrap();
        assert_eq!(decoded, stamped);
        // Kept, unchanged, before the horizon; gone at it.
        assert_eq!(
            clean_batch(&stamped, &map, 1_499, 500, &mut keyless),
            BatchOutcome::Unchanged
        );
        assert_eq!(
            clean_batch(&stamped, &map, 1_500, 500, &mut keyless),
            BatchOutcome::Dropped
        );
    }

    #[test]
    fn records_past_the_map_and_unmapped_keys_stay() {
        let mapped = RecordBatch::build(0, &[rec(Some("a"), Some("2"), 0)]);
        let map = KafkaMap::build([&mapped], None).unwrap();
        assert!(keeps(0, Some(b"a"), false, None, &map, 0));
        assert!(keeps(0, Some(b"b"), false, None, &map, 0), "not mapped");
        assert!(keeps(5, None, false, None, &map, 0), "past the map");
        assert!(!keeps(0, None, false, None, &map, 0), "keyless below it");
        let empty = KafkaMap::default();
        assert!(keeps(0, None, true, Some(0), &empty, 10), "nothing mapped");
    }

    #[test]
    fn a_batch_alone_larger_than_the_map_is_rejected() {
        let batch = RecordBatch::build(
            0,
            &[rec(Some("a"), Some("1"), 0), rec(Some("b"), Some("1"), 0)],
        );
        assert!(matches!(
            KafkaMap::build([&batch], Some(1)),
            Err(Error::InvalidArgument(_))
        ));
        let second = RecordBatch::build(2, &[rec(Some("c"), Some("1"), 0)]);
        let map = KafkaMap::build([&batch, &second], Some(2)).unwrap();
        assert_eq!(
            map.latest_offset,
            Some(1),
            "stops before the batch that does not fit"
        );
    }

    #[test]
    fn grouping_is_by_source_bytes_and_offset_range() {
        let ranges = |sizes: &[(i64, u64)], max, u| -> Vec<Range<usize>> { groups(sizes, max, u) };
        assert_eq!(
            ranges(&[(0, 60), (10, 40), (20, 1), (30, 0)], 100, 40),
            vec![0..2, 2..4]
        );
        // A segment whose offsets would put the group past i32::MAX starts a new one;
        // an empty one always joins.
        let far = i64::from(i32::MAX) + 10;
        assert_eq!(ranges(&[(0, 1), (5, 1)], 100, far), vec![0..1, 1..2]);
        assert_eq!(ranges(&[(0, 1), (5, 0)], 100, far), vec![0..2]);
    }

    #[test]
    fn the_lag_holds_back_the_first_uncleanable_offset() {
        // (base, next, max ts): [0,3) ts 5, [3,6) ts 50, active at 6.
        let closed = [(0, 3, 5), (3, 6, 50)];
        assert_eq!(first_uncleanable(&closed, 6, 0, 60, 0), 6);
        assert_eq!(first_uncleanable(&closed, 6, 0, 60, 20), 3);
        assert_eq!(first_uncleanable(&closed, 6, 0, 100, 20), 6);
    }
}

//! The rewrite pass of a compaction: the compacted form of one closed source
//! segment as runs of bytes ([`compact_segment`]), which the one writer
//! (`super::writer`) writes with few calls.

use std::path::Path;

use crate::error::Result;

use super::bitmap::Bitmap;
use super::map::{Fate, KeyFilter, Latest, Superseded};
use super::plan::{self, BatchPlan};
use super::reseal::seal_kept_batch;
use super::rules::seed::Horizon;
use super::rules::txn::TxnPlan;
use super::runs::{Counts, Runs};
use super::view;
use crate::format::batch::RECORDS_OFFSET;
use crate::format::RecordBatch;
use crate::segment::{BatchFacts, Segment};

/// The compacted form of one source segment; its buffers are reused from one
/// segment to the next (no fresh pages per segment).
#[derive(Debug, Default)]
pub struct Compacted {
    /// The compacted segment as runs of source bytes and partly kept batches
    /// re-encoded (source 0: the segment given to [`compact_segment`]).
    runs: Runs,
    /// Keep flags of one batch's records (scratch).
    keep: Vec<bool>,
    /// Keep flags and record ends of one compressed batch's records (scratch).
    decisions: super::compressed::Decisions,
    /// The kept records of one compressed batch, before compression (scratch).
    spliced: Vec<u8>,
    /// The arena compressed batches are decompressed into, batch after batch.
    inflated: Vec<u8>,
}

/// Where the rewrite pass is in the scan's numbering: source segments go through
/// [`compact_segment`] in order, each exactly once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cursor {
    /// The ordinal of the next keyed record of a non-control batch.
    ordinal: i64,
    /// The index of the next batch of the closed region.
    batch: usize,
}

impl Compacted {
    /// The runs' bytes, in order.
    fn runs<'a>(&'a self, source: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.runs.runs(source)
    }

    /// Feeds every batch of the compacted segment, in order, to `segment`
    /// ([`Segment::on_batch`]: its metadata and index entries, by Kafka's rule), from
    /// the batch headers alone: the kept bytes are ones the map pass checked, the
    /// re-encoded ones the rewrite just wrote. `source` as given to
    /// [`compact_segment`]; `path` names the source in an (impossible) error.
    pub fn index_into(&self, path: &Path, source: &[u8], segment: &mut Segment) -> Result<()> {
        for run in self.runs(source) {
            let mut position = 0usize;
            while position < run.len() {
                let rest = run.get(position..).unwrap_or_default();
                let header = crate::format::batch::decode_header(rest)
                    .map_err(|e| e.at(path, position as u64))?;
                assert!(header.size <= rest.len(), "a run holds whole batches");
                assert!(header.record_count >= 0);
                segment.on_batch(&BatchFacts {
                    base_offset: header.base_offset,
                    last_offset: header.last_offset(),
                    size_bytes: header.size as u64,
                    records: header.record_count as u64,
                    max_timestamp: header.max_timestamp,
                });
                position += header.size;
            }
        }
        Ok(())
    }

    /// Bytes of the compacted segment.
    pub fn bytes(&self) -> u64 {
        self.runs.bytes()
    }

    /// `crc` (a CRC-32C) extended by the compacted segment; `source` as given to
    /// [`compact_segment`].
    pub fn crc32c_append(&self, crc: u32, source: &[u8]) -> u32 {
        self.runs.crc32c_append(crc, source)
    }
}

impl super::writer::Described for Compacted {
    fn runs(&self) -> &Runs {
        &self.runs
    }
}

impl Cursor {
    /// The ordinal of the next keyed record [`compact_segment`] will decide.
    pub fn ordinal(&self) -> i64 {
        self.ordinal
    }
}

impl Compacted {
    /// Describes a carried source segment ([`super::carry`]): every batch kept as
    /// stored, one run of the whole source; nothing numbered (the pass left it out of
    /// the ordinals and batch numbers). The source's CRC-32C was checked against its
    /// key summary, so only the framing is checked here.
    pub fn set_whole(&mut self, path: &Path, base: i64, source: &[u8]) -> Result<Counts> {
        self.runs.clear();
        let mut records = 0u64;
        for batch in &view::batches_verified(path, base, source)? {
            let count = u64::try_from(batch.header.record_count).expect("checked by the split");
            records += count;
        }
        if !source.is_empty() {
            self.runs.push_stored(0..source.len());
        }
        assert_eq!(self.bytes(), source.len() as u64);
        Ok(Counts {
            records_before: records,
            records_after: records,
            bytes_after: source.len() as u64,
        })
    }
}

/// What decides the records of the closed region: the scan's superseded and
/// plain-batch bits, and the tombstone horizon.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    /// The records a later record of the same key supersedes.
    pub superseded: &'a Superseded,
    /// The plain batches (see [`super::output::ClosedRegion::plain`]).
    pub plain: &'a Bitmap,
    /// The tombstone horizon.
    pub horizon: Horizon,
    /// Batches at or past this offset are kept as they are: the cleaning pass did
    /// not map them, or they are too young to clean ([`super::pass::incremental`]).
    pub keep_from: i64,
    /// The transaction rules' decisions ([`super::rules::txn`]), when the log holds
    /// transactional batches: the batches they remove have no ordinal.
    pub txn: Option<&'a TxnPlan>,
    /// The incremental pass's clean section, when its lookups are left to the
    /// rewrite ([`super::pass::incremental`]).
    pub lookups: Option<Lookups<'a>>,
}

/// The clean section of an incremental pass that no separate pass read: its
/// batches (base offset below `until`) have no ordinal and no batch index; the
/// rewrite checks their CRC-32C itself and looks each keyed record up in `map`.
#[derive(Debug, Clone, Copy)]
pub struct Lookups<'a> {
    /// The clean point.
    pub until: i64,
    /// The dirty section's map, finished for lookups.
    pub map: &'a Latest,
    /// Its keys' filter.
    pub dirty: &'a KeyFilter,
}

/// How a batch's keyed records learn their fate: by key for a batch of the clean
/// section (`looked_up`), else by the scan's ordinals from `next` on.
fn fate<'a>(
    looked_up: Option<Lookups<'a>>,
    superseded: &'a Superseded,
    next: &'a mut i64,
) -> Fate<'a> {
    match looked_up {
        Some(l) => Fate::Lookups {
            map: l.map,
            dirty: l.dirty,
        },
        None => Fate::Ordinals { superseded, next },
    }
}

/// Describes the compacted form of one closed source segment in `out`. Source
/// segments must come in order, each exactly once: `cursor` counts batches and
/// keyed records across them.
///
/// `bytes` must be the bytes [`super::pass::full::scan`] checked (its mapping of this
/// segment): their CRCs are not recomputed ([`view::batches_verified`]), except in
/// a segment holding batches of `rules.lookups`, which is checked here.
/// Whether a keyed record is the latest of its key is one bit of the map's
/// superseded bitmap, at the record's ordinal ([`Superseded::is_superseded`]): no
/// hashing here; a batch of `rules.lookups` asks the map by key instead
/// ([`Fate`]). For a plain batch (`rules.plain`, see [`super::pass::full`]) those bits decide
/// every record, counted a word at a time, without parsing the batch; other batches
/// are parsed and decided record by record. A batch whose records are all kept
/// (control batches always) is a run of the source bytes, merged with its
/// neighbours; a partly kept batch is spliced: its header rewritten and its kept
/// records' bytes copied (`splice`).
pub fn compact_segment(
    path: &Path,
    base: i64,
    bytes: &[u8],
    rules: Rules<'_>,
    cursor: &mut Cursor,
    out: &mut Compacted,
) -> Result<Counts> {
    let Rules {
        superseded,
        plain,
        horizon,
        keep_from,
        txn,
        lookups,
    } = rules;
    // The clean section, if this segment holds some of it.
    let lookups = lookups.filter(|l| base < l.until);
    assert!(
        lookups.is_none() || txn.is_none(),
        "a pass under the transaction rules reads the log in full"
    );
    let keep = &mut out.keep;
    let runs = &mut out.runs;
    let decisions = &mut out.decisions;
    let spliced = &mut out.spliced;
    let arena = &mut out.inflated;
    runs.clear();
    // Views borrow this segment's bytes; one batch's worth at a time.
    let mut views: Vec<view::RecordView<'_>> = Vec::new();
    let mut counts = Counts::default();
    let batches = match lookups {
        // No earlier pass read these bytes: every check, the CRC-32C too.
        Some(_) => view::batches(path, base, bytes)?,
        None => view::batches_verified(path, base, bytes)?,
    };
    for batch in &batches {
        let looked_up = lookups.filter(|l| batch.header.base_offset < l.until);
        let index = cursor.batch;
        if looked_up.is_none() {
            cursor.batch += 1;
        }
        // Decided by the bits alone (never a batch of the clean section here).
        let plain_batch = looked_up.is_none() && plain.get(index);
        keep.clear();
        let records = usize::try_from(batch.header.record_count).expect("checked by the scan");
        if batch.header.base_offset < keep_from && txn.is_some_and(|t| t.drops(index)) {
            // An aborted batch or a marker past its horizon with no data left: no
            // ordinal (the scan gave it none), nothing kept.
            counts.records_before += records as u64;
            continue;
        }
        let position = usize::try_from(batch.position).expect("a segment fits in memory");
        if batch.header.base_offset < keep_from && batch.is_compressed() {
            // Decided record by record from the decoded batch (for a plain batch
            // that is what its bits say); recompressed only when partly kept.
            let inflated = super::compressed::inflate_in(path, batch, arena)?;
            super::compressed::decide_inflated(
                path,
                batch.position,
                &inflated,
                fate(looked_up, superseded, &mut cursor.ordinal),
                horizon,
                decisions,
            )?;
            assert_eq!(decisions.keep.len(), records);
            let kept = decisions.kept();
            counts.records_before += records as u64;
            counts.records_after += kept as u64;
            match plan::seed_decided(records, kept) {
                BatchPlan::Copy => runs.push_stored(position..position + batch.bytes.len()),
                BatchPlan::Drop => {}
                BatchPlan::Splice => {
                    let start = runs.rebuilt.len();
                    super::compressed::encode_kept(
                        batch.bytes,
                        &inflated,
                        decisions,
                        spliced,
                        &mut runs.rebuilt,
                    );
                    debug_assert_eq!(
                        crate::format::batch::decode(&runs.rebuilt[start..]).map(|(b, _)| b),
                        Ok(retain_decoded(batch, &decisions.keep)),
                        "{} at byte {}",
                        path.display(),
                        batch.position
                    );
                    runs.push_rebuilt(start);
                }
                plan => unreachable!("the seed rules plan no {plan:?}"),
            }
            continue;
        }
        let plan = if batch.header.base_offset >= keep_from {
            // Past the pass's horizon: no decision (and no ordinal is read again).
            BatchPlan::Copy
        } else if plain_batch {
            assert!(!batch.is_control());
            let ordinals = cursor.ordinal..cursor.ordinal + records as i64;
            cursor.ordinal = ordinals.end;
            let dropped = superseded.count(ordinals.clone());
            let plan = plan::seed_counted(records, dropped);
            if plan == BatchPlan::Splice {
                keep.extend(ordinals.map(|ordinal| !superseded.is_superseded(ordinal)));
            }
            plan
        } else {
            view::records(path, batch, &mut views)?;
            assert_eq!(views.len(), records);
            let control = batch.is_control();
            // The scan's ordinals count the keyed records of non-control batches.
            let mut fate = fate(looked_up, superseded, &mut cursor.ordinal);
            for record in &views {
                let latest = match record.key {
                    Some(key) if !control => fate.latest(key),
                    _ => false,
                };
                keep.push(plan::seed_record(control, record, latest, horizon));
            }
            plan::seed_decided(records, keep.iter().filter(|k| **k).count())
        };
        counts.records_before += records as u64;
        match plan {
            BatchPlan::Copy => {
                counts.records_after += records as u64;
                runs.push_stored(position..position + batch.bytes.len());
            }
            BatchPlan::Drop => {}
            BatchPlan::Splice => {
                assert_eq!(keep.len(), records);
                counts.records_after += keep.iter().filter(|k| **k).count() as u64;
                if plain_batch {
                    // Decided from the bits alone: the records' bytes are needed now.
                    view::records(path, batch, &mut views)?;
                }
                assert_eq!(views.len(), records);
                let start = runs.rebuilt.len();
                splice(batch, &views, keep, &mut runs.rebuilt);
                debug_assert_eq!(
                    crate::format::batch::decode(&runs.rebuilt[start..]).map(|(b, _)| b),
                    Ok(retain_decoded(batch, keep)),
                    "{} at byte {}",
                    path.display(),
                    batch.position
                );
                runs.push_rebuilt(start);
            }
            plan => unreachable!("the seed rules plan no {plan:?}"),
        }
    }
    counts.bytes_after = out.bytes();
    Ok(counts)
}

/// Appends to `out` the partly kept batch `batch`, keeping the records whose flag
/// is set (`records` are its views, `keep` one flag each, some set and some not):
/// its header with a new length, max timestamp, record count and CRC-32C, then the
/// kept records' bytes as they are. Their offset and timestamp deltas are relative to
/// the base offset and base timestamp, which do not change (section 1), so no record
/// is decoded or re-encoded; the result is the batch [`RecordBatch::retain`] gives
/// (debug builds check that on every call).
fn splice(
    batch: &view::BatchView<'_>,
    records: &[view::RecordView<'_>],
    keep: &[bool],
    out: &mut Vec<u8>,
) {
    assert_eq!(records.len(), keep.len());
    let kept = || {
        records
            .iter()
            .zip(keep)
            .filter(|(_, k)| **k)
            .map(|(r, _)| r)
    };
    let count = i32::try_from(kept().count()).expect("a batch's count fits");
    assert!(count > 0);
    assert!((count as usize) < records.len());
    // Under LogAppendTime the max timestamp is every record's: it stays.
    let log_append_time = crate::format::TimestampType::of_attributes(batch.header.attributes)
        == crate::format::TimestampType::LogAppendTime;
    let max_timestamp = if log_append_time {
        batch.header.max_timestamp
    } else {
        kept()
            .map(|r| r.timestamp)
            .max()
            .expect("some record is kept")
    };
    let start = out.len();
    out.extend_from_slice(&batch.bytes[..RECORDS_OFFSET]);
    for record in kept() {
        out.extend_from_slice(record.bytes);
    }
    seal_kept_batch(out, start, max_timestamp, count);
    assert!(out.len() - start < batch.bytes.len());
}

/// What [`splice`] must give: the batch decoded, [`RecordBatch::retain`] with the
/// same flags. The debug cross-check, and the tests' reference.
fn retain_decoded(batch: &view::BatchView<'_>, keep: &[bool]) -> RecordBatch {
    let (decoded, _) = crate::format::batch::decode(batch.bytes).expect("a checked batch");
    assert_eq!(decoded.records.len(), keep.len());
    let mut flags = keep.iter();
    decoded
        .retain(|_| *flags.next().expect("one flag per record"))
        .expect("some record is kept")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spliced_batch_is_the_retained_batch_byte_for_byte() {
        use crate::format::NewRecord;
        // Every proper subset of up to 7 records of mixed shapes (null keys and
        // values, timestamps out of order, a long value for 2-byte varints).
        for n in 1..=7i64 {
            let records: Vec<NewRecord> = (0..n)
                .map(|i| {
                    let key = (i % 3 != 2).then(|| format!("key{i}").into_bytes());
                    let value = (i % 4 != 1).then(|| vec![b'v'; 40 * i as usize]);
                    NewRecord::new(key, value, 1_000 + (i * 37) % 11)
                })
                .collect();
            let bytes = RecordBatch::build(500, &records).encode();
            let path = Path::new("seg.log");
            let batches = view::batches(path, 500, &bytes).unwrap();
            let mut views = Vec::new();
            view::records(path, &batches[0], &mut views).unwrap();
            for mask in 1..(1u32 << n) - 1 {
                let keep: Vec<bool> = (0..n).map(|i| mask & (1 << i) != 0).collect();
                let mut out = Vec::new();
                splice(&batches[0], &views, &keep, &mut out);
                let expected = retain_decoded(&batches[0], &keep);
                assert_eq!(out, expected.encode(), "n {n} mask {mask:b}");
                assert!(view::batches(path, 500, &out).is_ok());
            }
        }
    }

    #[test]
    fn the_crc_and_length_cover_the_runs_in_order() {
        let source: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        let (runs, expected) = crate::compaction::runs::sample(&source, 300_007);
        let compacted = Compacted {
            runs,
            ..Compacted::default()
        };
        assert_eq!(
            compacted.runs(&source).collect::<Vec<_>>().concat(),
            expected
        );
        assert_eq!(compacted.bytes(), expected.len() as u64);
        let crc = compacted.crc32c_append(0, &source);
        assert_eq!(crc, crate::format::crc::crc32c(&expected));
        let prefix = crate::format::crc::crc32c(b"prefix");
        let mut whole = b"prefix".to_vec();
        whole.extend_from_slice(&expected);
        assert_eq!(
            compacted.crc32c_append(prefix, &source),
            crate::format::crc::crc32c(&whole)
        );
    }
}

//! Compressed batches in a compaction. Their records are not in the segment's
//! bytes, so the zero-copy views of [`super::view`] cannot borrow them: the map
//! pass decompresses such a batch and hands its keys to the map already hashed,
//! and the rewrite pass decides its records one by one in the decompressed bytes.
//! A batch whose records are all kept is copied as stored (its compressed bytes
//! unchanged); a partly kept one is re-encoded as Kafka's cleaner does it: the
//! kept records, recompressed with the batch's own codec, with its base offset,
//! last offset delta, base timestamp, attributes and producer fields, and (under
//! LogAppendTime) its max timestamp ([`RecordBatch::retain`]). The rewrite pass
//! decompresses such a batch once and splices the kept records' bytes out of the
//! decompressed buffer ([`encode_kept`]) before compressing them again.

use std::path::Path;

use crate::error::Result;
use crate::format::batch::RECORDS_OFFSET;
#[cfg(doc)]
use crate::format::RecordBatch;
use crate::format::TimestampType;

use super::map::Fate;
use super::rules::seed::Horizon;
use super::view;

/// A compressed batch's decompressed records, and the checked batch they belong to.
/// `R` holds the records: a prefix of an arena the caller reuses from batch to
/// batch ([`inflate_in`]).
pub struct Inflated<'a, R: AsRef<[u8]>> {
    /// The batch, checked.
    pub views: crate::format::BatchView<'a>,
    /// Its records, decompressed.
    pub records: R,
}

/// The records of [`inflate_in`] in a vector of their own: the oracle of its tests.
#[cfg(all(test, feature = "compression"))]
fn inflate<'a>(path: &Path, batch: &view::BatchView<'a>) -> Result<Inflated<'a, Vec<u8>>> {
    let at = |e: crate::format::FormatError| e.at(path, batch.position);
    let (views, _) = crate::format::BatchView::decode_crc_checked(batch.bytes).map_err(at)?;
    let records = views.inflate().map_err(at)?.unwrap_or_default();
    Ok(Inflated { views, records })
}

/// Checks the batch `batch` of `path` and decompresses its records (every check of
/// [`crate::format::BatchView::inflate`]; errors name the batch's position) into
/// `arena`, a buffer the caller keeps from batch to batch (for
/// lz4 no allocation, zeroing or copy once it has grown:
/// [`crate::format::BatchView::inflate_reusing`]).
pub fn inflate_in<'a, 'b>(
    path: &Path,
    batch: &view::BatchView<'a>,
    arena: &'b mut Vec<u8>,
) -> Result<Inflated<'a, &'b [u8]>> {
    let at = |e: crate::format::FormatError| e.at(path, batch.position);
    let (views, _) = crate::format::BatchView::decode_crc_checked(batch.bytes).map_err(at)?;
    let records = match views.inflate_reusing(arena).map_err(at)? {
        Some(len) => arena.get(..len).expect("the arena holds the records"),
        None => &[],
    };
    Ok(Inflated { views, records })
}

/// The keep decisions of one decompressed batch's records (buffers reused from
/// batch to batch).
#[derive(Debug, Default)]
pub struct Decisions {
    /// One flag per record: kept.
    pub keep: Vec<bool>,
    /// Where each record ends in the decompressed records.
    ends: Vec<usize>,
    /// The largest timestamp of the kept records (`None` if none is).
    kept_max_timestamp: Option<i64>,
}

impl Decisions {
    /// The records kept.
    pub fn kept(&self) -> usize {
        self.keep.iter().filter(|k| **k).count()
    }
}

/// The keep decision of every record of the decompressed batch `inflated`, read in
/// place (no copy of a key or value), into `decisions`; `fate` says whether a keyed
/// record is the latest of its key (asked once per keyed record unless it is a
/// control batch). Errors name the batch's position in `path`.
pub fn decide_inflated(
    path: &Path,
    position: u64,
    inflated: &Inflated<'_, impl AsRef<[u8]>>,
    mut fate: Fate<'_>,
    horizon: Horizon,
    decisions: &mut Decisions,
) -> Result<()> {
    let batch = &inflated.views;
    let inflated_records = inflated.records.as_ref();
    let control = batch.is_control();
    decisions.keep.clear();
    decisions.ends.clear();
    decisions.kept_max_timestamp = None;
    let mut records = batch.records_in(inflated_records);
    while let Some(record) = records.next() {
        let record = record.map_err(|e| e.at(path, position))?;
        let latest = match record.key {
            Some(key) if !control => fate.latest(key),
            _ => false,
        };
        let view = view::RecordView {
            offset: batch.offset_of(&record),
            timestamp: batch.timestamp_of(&record),
            key: record.key,
            value_is_null: record.value.is_none(),
            bytes: &[],
        };
        let keep = super::plan::seed_record(control, &view, latest, horizon);
        if keep {
            let max = decisions
                .kept_max_timestamp
                .map_or(view.timestamp, |m| m.max(view.timestamp));
            decisions.kept_max_timestamp = Some(max);
        }
        decisions.keep.push(keep);
        decisions.ends.push(records.consumed_bytes());
    }
    assert_eq!(
        decisions.ends.last().copied().unwrap_or(0),
        inflated_records.len()
    );
    Ok(())
}

/// Appends to `out` the partly kept compressed batch `inflated` (its source bytes
/// `source`), keeping the records `decisions` keeps, as Kafka's cleaner re-encodes
/// it ([`RecordBatch::retain`], then encoded): the source's header with a new
/// length, max timestamp (under CreateTime), record count and CRC-32C, then the kept
/// records' bytes as they are, compressed with the batch's own codec. Their offset
/// and timestamp deltas are relative to the base offset and base timestamp, which do
/// not change, so no record is decoded into owned fields or re-encoded, and the
/// batch is decompressed once (by the caller). `scratch` gathers the kept records.
pub fn encode_kept(
    source: &[u8],
    inflated: &Inflated<'_, impl AsRef<[u8]>>,
    decisions: &Decisions,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) {
    let batch = &inflated.views;
    let inflated_records = inflated.records.as_ref();
    assert_eq!(decisions.keep.len(), batch.record_count);
    assert_eq!(decisions.ends.len(), batch.record_count);
    assert_eq!(source.len(), batch.size());
    let count = i32::try_from(decisions.kept()).expect("a batch's count fits");
    assert!(count > 0);
    assert!((count as usize) < batch.record_count);
    scratch.clear();
    let mut record_start = 0usize;
    for (keep, &end) in decisions.keep.iter().zip(&decisions.ends) {
        if *keep {
            scratch.extend_from_slice(&inflated_records[record_start..end]);
        }
        record_start = end;
    }
    assert_eq!(record_start, inflated_records.len());
    // Under LogAppendTime the max timestamp is every record's: it stays.
    let max_timestamp = match batch.timestamp_type() {
        TimestampType::LogAppendTime => batch.max_timestamp,
        TimestampType::CreateTime => decisions.kept_max_timestamp.expect("some record is kept"),
    };
    let start = out.len();
    out.extend_from_slice(&source[..RECORDS_OFFSET]);
    batch.compression().compress_into(scratch, out);
    super::reseal::seal_kept_batch(out, start, max_timestamp, count);
}

#[cfg(all(test, feature = "compression"))]
mod tests {
    use super::*;
    use crate::format::{Compression, NewRecord, RecordBatch};

    /// What [`encode_kept`] must give: the batch decoded, [`RecordBatch::retain`]
    /// with the same flags, encoded (compressed again) the way the cleaner did
    /// before the splice.
    fn retained(source: &[u8], keep: &[bool]) -> Vec<u8> {
        let (decoded, _) = crate::format::batch::decode(source).unwrap();
        let mut flags = keep.iter();
        decoded.retain(|_| *flags.next().unwrap()).unwrap().encode()
    }

    #[test]
    fn a_spliced_compressed_batch_is_the_retained_batch_byte_for_byte() {
        let path = Path::new("seg.log");
        for codec in [Compression::Lz4, Compression::Zstd, Compression::Gzip] {
            for log_append_time in [None, Some(9_999)] {
                // Every proper subset of 6 records of mixed shapes (null keys and
                // values, timestamps out of order, a long value for 2-byte varints).
                let records: Vec<NewRecord> = (0..6i64)
                    .map(|i| {
                        let key = (i % 3 != 2).then(|| format!("key{i}").into_bytes());
                        let value = (i % 4 != 1).then(|| vec![b'v'; 40 * i as usize]);
                        NewRecord::new(key, value, 1_000 + (i * 37) % 11)
                    })
                    .collect();
                let mut batch = RecordBatch::build(500, &records).with_compression(codec);
                if let Some(now) = log_append_time {
                    batch = batch.with_log_append_time(now);
                }
                let source = batch.encode();
                let batches = view::batches(path, 500, &source).unwrap();
                let inflated = inflate(path, &batches[0]).unwrap();
                assert!(inflated.records.len() > source.len() - RECORDS_OFFSET);
                let mut ends = Vec::new();
                let mut timestamps = Vec::new();
                let mut views = inflated.views.records_in(&inflated.records);
                while let Some(record) = views.next() {
                    timestamps.push(inflated.views.timestamp_of(&record.unwrap()));
                    ends.push(views.consumed_bytes());
                }
                for mask in 1..(1u32 << 6) - 1 {
                    let keep: Vec<bool> = (0..6).map(|i| mask & (1 << i) != 0).collect();
                    let decisions = Decisions {
                        kept_max_timestamp: timestamps
                            .iter()
                            .zip(&keep)
                            .filter(|(_, k)| **k)
                            .map(|(t, _)| *t)
                            .max(),
                        keep: keep.clone(),
                        ends: ends.clone(),
                    };
                    let mut out = vec![7];
                    encode_kept(&source, &inflated, &decisions, &mut Vec::new(), &mut out);
                    let want = retained(&source, &keep);
                    assert_eq!(out[1..], want[..], "{codec} {log_append_time:?} {mask:b}");
                }
            }
        }
    }

    /// One arena for a run of batches, large ones before small ones (the arena's
    /// stale bytes then lie past each batch's records) and an uncompressed one
    /// among them: each batch's records are [`inflate`]'s.
    #[test]
    fn inflating_into_a_reused_arena_gives_each_batch_its_own_records() {
        let path = Path::new("seg.log");
        let codecs = [
            Compression::Lz4,
            Compression::None,
            Compression::Zstd,
            Compression::Lz4,
            Compression::Gzip,
            Compression::Lz4,
        ];
        let mut source = Vec::new();
        let mut base = 0i64;
        for (i, (codec, value_bytes)) in codecs
            .iter()
            .zip([900usize, 50, 300, 20, 5, 400])
            .enumerate()
        {
            let records: Vec<NewRecord> = (0..4u8)
                .map(|r| {
                    let value = vec![b'a' + r + i as u8; value_bytes];
                    NewRecord::new(Some(vec![r]), Some(value), 7)
                })
                .collect();
            source.extend(
                RecordBatch::build(base, &records)
                    .with_compression(*codec)
                    .encode(),
            );
            base += 4;
        }
        let batches = view::batches(path, 0, &source).unwrap();
        assert_eq!(batches.len(), codecs.len());
        let mut arena = Vec::new();
        for batch in &batches {
            let owned = inflate(path, batch).unwrap();
            let reused = inflate_in(path, batch, &mut arena).unwrap();
            assert_eq!(reused.records.len(), owned.records.len());
            assert!(reused.records == &owned.records[..]);
            assert_eq!(reused.views.base_offset, owned.views.base_offset);
            assert_eq!(reused.records.is_empty(), !batch.is_compressed());
        }
    }
}

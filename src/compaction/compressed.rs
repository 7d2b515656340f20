//! Compressed batches in a compaction. Their records are not in the segment's
//! bytes, so the zero-copy views of [`super::view`] cannot borrow them: the map
//! pass decompresses such a batch and hands its keys to the map already hashed,
//! and the rewrite pass decides its records one by one in the decompressed bytes.
//! A batch whose records are all kept is copied as stored (its compressed bytes
//! unchanged); a partly kept one is re-encoded as Kafka's cleaner does it: the
//! kept records, recompressed with the batch's own codec, with its base offset,
//! last offset delta, base timestamp, attributes and producer fields, and (under
//! LogAppendTime) its max timestamp ([`RecordBatch::retain`]).

use std::path::Path;

use crate::error::Result;
use crate::format::{batch, RecordBatch};

use super::offset_map::Superseded;
use super::planner::{decide_latest, Decision, Horizon};
use super::view;

/// The batch `batch` of the segment `path`, decompressed and decoded (every check
/// of [`batch::decode`]; errors name the batch's position in `path`).
pub fn decode(path: &Path, batch: &view::BatchView<'_>) -> Result<RecordBatch> {
    let (decoded, _) = batch::decode(batch.bytes).map_err(|e| e.at(path, batch.position))?;
    Ok(decoded)
}

/// A compressed batch's decompressed records, and the checked batch they belong to.
pub struct Inflated<'a> {
    /// The batch, checked.
    pub views: crate::format::BatchView<'a>,
    /// Its records, decompressed.
    pub records: Vec<u8>,
}

/// Checks the batch `batch` of `path` and decompresses its records (every check of
/// [`crate::format::BatchView::inflate`]; errors name the batch's position).
pub fn inflate<'a>(path: &Path, batch: &view::BatchView<'a>) -> Result<Inflated<'a>> {
    let at = |e: crate::format::FormatError| e.at(path, batch.position);
    let (views, _) = crate::format::BatchView::decode_crc_checked(batch.bytes).map_err(at)?;
    let records = views.inflate().map_err(at)?.unwrap_or_default();
    Ok(Inflated { views, records })
}

/// The keep decision of every record of the decompressed batch `inflated`, read in
/// place (no copy of a key or value); `ordinal` is the next keyed-record ordinal of
/// the scan's numbering (advanced past this batch's keyed records unless it is a
/// control batch). Errors name the batch's position in `path`.
pub fn decide_inflated(
    path: &Path,
    position: u64,
    inflated: &Inflated<'_>,
    superseded: &Superseded,
    horizon: Horizon,
    ordinal: &mut i64,
) -> Result<Vec<bool>> {
    let batch = &inflated.views;
    let control = batch.is_control();
    let mut keep = Vec::with_capacity(batch.record_count);
    for record in batch.records_in(&inflated.records) {
        let record = record.map_err(|e| e.at(path, position))?;
        let latest = if record.key.is_some() && !control {
            let this = *ordinal;
            *ordinal += 1;
            !superseded.is_superseded(this)
        } else {
            false
        };
        let view = view::RecordView {
            offset: batch.offset_of(&record),
            timestamp: batch.timestamp_of(&record),
            key: record.key,
            value_is_null: record.value.is_none(),
            bytes: &[],
        };
        keep.push(decide_latest(control, &view, latest, horizon) == Decision::Keep);
    }
    Ok(keep)
}

/// Appends to `out` the partly kept `decoded` with the records whose flag in
/// `keep` is set, recompressed with its own codec.
pub fn encode_kept(decoded: &RecordBatch, keep: &[bool], out: &mut Vec<u8>) {
    assert_eq!(keep.len(), decoded.records.len());
    let mut flags = keep.iter();
    let kept = decoded
        .retain(|_| *flags.next().expect("one flag per record"))
        .expect("some record is kept");
    assert_eq!(kept.base_offset, decoded.base_offset);
    assert_eq!(kept.last_offset_delta, decoded.last_offset_delta);
    assert_eq!(kept.attributes, decoded.attributes);
    kept.encode_into(out);
}

//! The header walk: what the rules need to know of every batch, read from the
//! batch headers (a control batch's marker record decoded and its CRC checked) in
//! one pass over the segment files ([`walk`]), and the `.txnindex` entries a
//! `kafka` pass keeps ([`entries`]). The decisions themselves are the pure rules of
//! [`super::rules::txn`].

use std::path::Path;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::format::batch::{
    decode_header, BatchHeader, ATTR_CONTROL, ATTR_TRANSACTIONAL, PRODUCER_EPOCH_OFFSET,
    PRODUCER_ID_OFFSET,
};
use crate::format::filename::{self, LOG_SUFFIX, TXN_INDEX_SUFFIX};
use crate::format::txn_index::{self, AbortedTxn};
use crate::format::{BatchView, ControlKind};
use crate::fs::FileSystem;

use super::rules::seed::Horizon;
use super::rules::txn::{decide, keeps_entry, DataBatch, KafkaTxn, LogFacts, TxnFacts, TxnPlan};
use crate::segment::files::segment_path;

/// The facts of every batch of the segments `bases` of `dir` (the last one
/// active), from their headers (a control batch's marker record is decoded, and
/// its CRC checked), in one walk: the transaction rules' and the `kafka` policy's
/// producers' (`super::rules::retain_empty`). A torn tail ends a segment's walk (the scan
/// reports it); the first damaged header or control batch is the error.
pub fn walk(fs: &dyn FileSystem, dir: &Path, bases: &[i64]) -> Result<LogFacts> {
    walk_mapped(fs, dir, bases, &[])
}

/// [`walk`], the first `mapped.len()` segments' bytes given: the caller's mapping
/// ([`crate::segment::files::map_segments`]), which its map pass and rewrite read again,
/// so the pages this walk touches are not faulted in a second time.
pub fn walk_mapped(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    mapped: &[Bytes],
) -> Result<LogFacts> {
    let mut out = LogFacts::default();
    for (i, &base) in bases.iter().enumerate() {
        let path = segment_path(dir, base, LOG_SUFFIX);
        let bytes = match mapped.get(i) {
            Some(bytes) => bytes.clone(),
            None => fs.map(&path).map_err(|e| Error::io(&path, e))?,
        };
        let mut at = 0usize;
        while at < bytes.len() {
            let rest = &bytes[at..];
            let header = decode_header(rest).map_err(|e| e.at(&path, at as u64))?;
            let size = header.size;
            if rest.len() < size {
                break; // the scan reports it
            }
            push(&mut out, &path, at, &rest[..size], &header)?;
            at += size;
        }
        if i + 1 < bases.len() {
            out.closed_batches = out.batches.len();
        }
    }
    Ok(out)
}

/// [`walk`]'s facts, the closed segments' from their batches already split and
/// checked (`closed`: each segment's path and its batches' positions and bytes,
/// in order), so a pass that split them walks no closed header twice; the active
/// segment (`active_base`) walked from its file, as [`walk`] does.
pub fn of_split(
    fs: &dyn FileSystem,
    dir: &Path,
    closed: &[SplitSegment<'_>],
    active_base: i64,
) -> Result<LogFacts> {
    let mut out = LogFacts::default();
    for (path, batches) in closed {
        for &(at, batch) in batches {
            let header = decode_header(batch).map_err(|e| e.at(path, at as u64))?;
            push(&mut out, path, at, batch, &header)?;
        }
    }
    out.closed_batches = out.batches.len();
    let active = walk(fs, dir, &[active_base])?;
    out.transactional |= active.transactional;
    out.batches.extend(active.batches);
    Ok(out)
}

/// A split segment: its path, and each batch's position and bytes, in order.
pub type SplitSegment<'a> = (&'a Path, Vec<(usize, &'a [u8])>);

/// Adds the facts of the whole batch `batch` at `at` of `path` to `out`.
fn push(
    out: &mut LogFacts,
    path: &Path,
    at: usize,
    batch: &[u8],
    header: &BatchHeader,
) -> Result<()> {
    let transactional = header.attributes & ATTR_TRANSACTIONAL != 0;
    let control = header.attributes & ATTR_CONTROL != 0;
    let mut pid = [0u8; 8];
    pid.copy_from_slice(&batch[PRODUCER_ID_OFFSET..PRODUCER_ID_OFFSET + 8]);
    let mut epoch = [0u8; 2];
    epoch.copy_from_slice(&batch[PRODUCER_EPOCH_OFFSET..PRODUCER_EPOCH_OFFSET + 2]);
    let marker = if control {
        let (view, _) = BatchView::decode(batch).map_err(|e| e.at(path, at as u64))?;
        match view.records().next() {
            Some(Ok(r)) => match r.key {
                Some([0, 0, 0, 0]) => Some(ControlKind::Abort),
                Some([0, 0, 0, 1]) => Some(ControlKind::Commit),
                _ => None,
            },
            _ => None,
        }
    } else {
        None
    };
    // A control batch with no marker record (an empty one, Kafka's
    // `RETAIN_EMPTY`) takes no part, as `log::txn` reads it.
    let transactional = transactional && (marker.is_some() || !control);
    // Markers alone (no transactional data) leave the plain seed rules in
    // force: the rules apply once the log holds transactional data.
    out.transactional |= transactional && !control;
    out.batches.push(TxnFacts {
        base_offset: header.base_offset,
        producer_id: i64::from_be_bytes(pid),
        transactional,
        marker,
        control,
        max_timestamp: header.max_timestamp,
        producer_epoch: i16::from_be_bytes(epoch),
        last_offset: header.base_offset + i64::from(header.last_offset_delta),
    });
    Ok(())
}

/// [`walk`]'s transaction facts: `None` when no data batch is transactional (then
/// the plain seed rules apply: markers are kept, as the seed spec keeps control
/// batches). Returns the facts and how many batches the closed segments hold.
#[cfg(test)]
pub fn gather(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
) -> Result<Option<(Vec<TxnFacts>, usize)>> {
    Ok(walk(fs, dir, bases)?.txn())
}

/// [`walk_mapped`] then [`decide`]: `None` when the log holds no transactional
/// batch. `mapped`: the closed segments' bytes as the build mapped them.
pub fn plan(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    mapped: &[Bytes],
    horizon: Horizon,
) -> Result<Option<TxnPlan>> {
    let Some((facts, closed_batches)) = walk_mapped(fs, dir, bases, mapped)?.txn() else {
        return Ok(None);
    };
    // With no open transaction nothing is held back: every batch is below it.
    Ok(Some(decide(&facts, closed_batches, i64::MAX, horizon)))
}

/// [`walk`] then [`KafkaTxn::of`]: the `kafka` policy's transaction facts.
pub fn kafka_txn(fs: &dyn FileSystem, dir: &Path, bases: &[i64]) -> Result<Option<KafkaTxn>> {
    Ok(KafkaTxn::of(&walk(fs, dir, bases)?))
}

/// The `.txnindex` entries of a kafka pass's output, in marker order: the live
/// entries of every segment (`bases`, the active one last) as found, less those
/// whose marker is below `cleaned_end` (in a segment the pass cleans) and whose
/// transaction has no data batch in `source` (the closed segments' data batches
/// before the pass). A missing or undecodable file gives no entries (the log's
/// state pass rebuilds it).
pub fn entries(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    cleaned_end: i64,
    source: &[DataBatch],
) -> Result<Vec<AbortedTxn>> {
    let mut out = Vec::new();
    for &base in bases {
        let path = dir.join(filename::build(base, TXN_INDEX_SUFFIX));
        if !fs.exists(&path) {
            continue;
        }
        // One entry per ABORT marker, and every marker is a whole batch of the
        // segment's `.log`: a larger index is not read (like an undecodable one,
        // it is ignored here; the log's state pass rewrites it).
        let log = dir.join(filename::build(base, filename::LOG_SUFFIX));
        let log_bytes = fs.len(&log).map_err(|e| Error::io(&log, e))?;
        let bytes_max = (log_bytes / crate::format::batch::HEADER_LEN as u64)
            .saturating_mul(txn_index::ENTRY_BYTES as u64);
        let Some(bytes) =
            crate::fs::read_bounded(fs, &path, bytes_max).map_err(|e| Error::io(&path, e))?
        else {
            continue;
        };
        let Ok(found) = txn_index::decode(&bytes) else {
            continue;
        };
        out.extend(
            found
                .into_iter()
                .filter(|e| keeps_entry(e, cleaned_end, source)),
        );
    }
    Ok(out)
}

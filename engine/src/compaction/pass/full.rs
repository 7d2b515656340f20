//! The map pass of a compaction: one read of every segment that checks every batch
//! (length, magic, CRC-32C, offsets, record framing) and builds the latest-position
//! map, on two threads (`crate::compaction::read`).
//!
//! Closed segments are read through [`FileSystem::map`] and the mappings are kept
//! for the rewrite pass, which therefore reads the very bytes checked here (closed
//! segments are immutable: nobody appends to or truncates them) and trusts their
//! CRC (`crate::compaction::view::batches_verified`). With [`crate::fs::StdFs`] a mapping is
//! page cache, not heap; a file system whose `map` reads the file (the trait's
//! default, [`crate::fs::sim::SimFs`]) holds the closed region in memory until the
//! rewrite pass drops each segment.
//!
//! The scan also notes, with one bit per batch of the closed region, which batches
//! are *plain*: not control batches, and every record keyed and with a value. The
//! fate of a plain batch's records is exactly the map's superseded bits at their
//! ordinals (section 1: a latest keyed record with a value is kept, any other keyed
//! record is dropped), so the rewrite pass decides it without parsing a record.

use std::ops::ControlFlow;
use std::path::Path;

use bytes::Bytes;

use crate::error::Result;
use crate::fs::FileSystem;

use crate::compaction::bitmap::Bitmap;
use crate::compaction::map::{OffsetMap, Superseded};
use crate::compaction::read::{self, Event, Input, KeyRef, Plan};
use crate::compaction::rules::txn::TxnPlan;
use crate::segment::files::map_segments;

/// What the map pass leaves for the rewrite pass.
#[derive(Debug)]
pub struct Scan {
    /// The positions (keyed-record ordinals, see [`scan`]) whose key is written
    /// again later, over every segment (active included), and what the map held.
    pub superseded: Superseded,
    /// The closed segments' bytes as checked, in base-offset order.
    pub closed: Vec<Bytes>,
    /// The active segment's bytes as checked.
    pub active: Vec<u8>,
    /// Bit `b`: batch `b` of the closed region (every batch counted, in order) is
    /// plain (see the module docs).
    pub plain: Bitmap,
}

/// Reads and checks every segment of `dir` (`bases` ascending, the last one
/// active) and builds the latest-position map over the keyed records of
/// non-control batches. Positions are the ordinals of those records in offset
/// order (0, 1, 2, ...): they order like the offsets, and the map marks every
/// superseded ordinal in a bitmap, which the rewrite pass reads in the same order
/// instead of hashing and looking up every key again.
///
/// Two stages on two threads (`crate::compaction::read`): a reader checks and parses,
/// handing over chunks of keys that come back for reuse; this thread hashes and
/// inserts them with their ordinals. The
/// hashing balances the two: when the inserting side is behind (no chunk is free),
/// the reader hashes the chunk it holds before handing it over, instead of waiting.
pub fn scan(fs: &dyn FileSystem, dir: &Path, bases: &[i64]) -> Result<Scan> {
    scan_with(fs, dir, bases, None, None)
}

/// [`scan`] reading only the first `active_len` bytes of the active segment, if
/// given (a cleaner's snapshot: what was appended after it is left to the next
/// pass), under the transaction rules `txn` ([`crate::compaction::rules::txn`]): the keyed records of
/// aborted batches, and of every batch at or past the last stable offset, get no
/// ordinal and never enter the map.
pub fn scan_with(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    active_len: Option<u64>,
    txn: Option<&TxnPlan>,
) -> Result<Scan> {
    let closed = map_segments(fs, dir, &bases[..bases.len() - 1])?;
    scan_mapped(fs, dir, bases, closed, active_len, txn)
}

/// [`scan_with`] over the closed segments' bytes `closed` as the caller mapped
/// them (`map_segments`).
pub fn scan_mapped(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    closed: Vec<Bytes>,
    active_len: Option<u64>,
    txn: Option<&TxnPlan>,
) -> Result<Scan> {
    let (&active_base, closed_bases) = bases.split_last().expect("a log has a segment");
    assert_eq!(closed.len(), closed_bases.len());
    let active = crate::compaction::source::read_active(fs, dir, active_base, active_len)?;
    let mut map = OffsetMap::tracking_superseded();
    let plain = scan_into(
        &mut map,
        dir,
        closed_bases,
        &closed,
        active_base,
        &active,
        txn,
    )?;
    Ok(Scan {
        superseded: map.into_superseded(),
        closed,
        active,
        plain,
    })
}

/// The two threads of [`scan`] (`crate::compaction::read`); returns the plain-batch bitmap.
fn scan_into(
    map: &mut OffsetMap,
    dir: &Path,
    closed_bases: &[i64],
    closed: &[Bytes],
    active_base: i64,
    active: &[u8],
    txn: Option<&TxnPlan>,
) -> Result<Bitmap> {
    let inputs: Vec<Input<'_>> = closed_bases
        .iter()
        .zip(closed)
        .map(|(&base, bytes)| (base, &bytes[..]))
        .chain([(active_base, active)])
        .enumerate()
        .map(|(source, (base, bytes))| Input {
            source,
            base,
            bytes,
        })
        .collect();
    let active_source = inputs.len() - 1;
    // The keyed records of aborted batches, and of every batch at or past the last
    // stable offset, get no ordinal and never enter the map.
    let keys = |index: usize, base_offset: i64| {
        txn.is_none_or(|t| !t.aborted.get(index) && base_offset < t.last_stable_offset)
    };
    let digester = map.digester();
    let plan = Plan {
        from: i64::MIN,
        until: i64::MAX,
        checked: false,
        stable: false,
        keep_inflated: false,
        keys: &keys,
        digester,
    };
    let mut ordinal = 0i64;
    let mut plain = Bitmap::default();
    let mut source = 0usize;
    read::each(dir, &inputs, &plan, |event, records| {
        match event {
            Event::Segment { source: s, .. } => source = *s,
            Event::Batch(batch) => {
                if batch.records.is_none() {
                    return Ok(ControlFlow::Continue(()));
                }
                for record in records {
                    match record.key {
                        KeyRef::Stored(key) => map.insert(key, ordinal),
                        KeyRef::Hashed(digest) => map.insert_digest(digest, ordinal),
                    }
                    ordinal += 1;
                }
                if source != active_source && batch.keyless == 0 && batch.tombstones == 0 {
                    plain.set(batch.index);
                }
            }
        }
        Ok(ControlFlow::Continue(()))
    })?;
    plain.shrink_to_fit();
    Ok(plain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::format::{filename, ControlKind, NewRecord, RecordBatch};
    use crate::fs::sim::SimFs;

    fn record(key: Option<&str>, value: Option<&str>) -> NewRecord {
        NewRecord::new(
            key.map(|k| k.as_bytes().to_vec()),
            value.map(|v| v.as_bytes().to_vec()),
            7,
        )
    }

    #[test]
    fn plain_batches_are_keyed_with_values_and_closed() {
        let fs = SimFs::new();
        let dir = Path::new("/log");
        fs.create_dir_all(dir).unwrap();
        let closed = [
            RecordBatch::build(
                0,
                &[record(Some("a"), Some("1")), record(Some("b"), Some("2"))],
            ),
            RecordBatch::build(2, &[record(Some("a"), Some("3")), record(Some("c"), None)]),
            RecordBatch::build(4, &[record(None, Some("4")), record(Some("b"), Some("5"))]),
            RecordBatch::control(6, ControlKind::Commit, 1, 0, 0, 7),
            RecordBatch::build(7, &[record(Some("a"), Some("6"))]),
        ];
        let active = RecordBatch::build(8, &[record(Some("b"), Some("7"))]);
        let closed_bytes: Vec<u8> = closed.iter().flat_map(RecordBatch::encode).collect();
        let name = |base| dir.join(filename::build(base, filename::LOG_SUFFIX));
        fs.write_new(&name(0), &closed_bytes).unwrap();
        fs.write_new(&name(8), &active.encode()).unwrap();
        let scan = scan(&fs, dir, &[0, 8]).unwrap();
        // Batches 0 and 4 only: 1 has a tombstone, 2 a keyless record, 3 is control;
        // the active segment's batch (5) is never rewritten.
        let plain: Vec<usize> = (0..8).filter(|&b| scan.plain.get(b)).collect();
        assert_eq!(plain, vec![0, 4]);
        assert_eq!(scan.closed.len(), 1);
        assert_eq!(&scan.closed[0][..], &closed_bytes[..]);
        assert_eq!(scan.active, active.encode());
        // Ordinals of the keyed records: a0 b1 a2 c3 b4 a5 | b6.
        assert_eq!(scan.superseded.keys, 3);
        let superseded: Vec<i64> = (0..8)
            .filter(|&p| scan.superseded.is_superseded(p))
            .collect();
        assert_eq!(superseded, vec![0, 1, 2, 4]);
    }

    #[test]
    fn many_chunks_give_the_map_of_a_single_thread() {
        // Several chunks' worth of records (either thread may hash them).
        let fs = SimFs::new();
        let dir = Path::new("/log");
        fs.create_dir_all(dir).unwrap();
        let records = 3 * 16 * 1024 + 5;
        let keys = records / 3;
        let key = |p: i64| format!("k{}", (p * 7) % keys);
        let mut bytes = Vec::new();
        for base in (0..records).step_by(100) {
            let batch: Vec<NewRecord> = (base..(base + 100).min(records))
                .map(|p| record(Some(&key(p)), Some("v")))
                .collect();
            RecordBatch::build(base, &batch).encode_into(&mut bytes);
        }
        fs.write_new(&dir.join(filename::build(0, filename::LOG_SUFFIX)), &bytes)
            .unwrap();
        fs.write_new(
            &dir.join(filename::build(records, filename::LOG_SUFFIX)),
            &[],
        )
        .unwrap();
        let scan = scan(&fs, dir, &[0, records]).unwrap();
        let mut single = OffsetMap::tracking_superseded();
        for p in 0..records {
            single.insert(key(p).as_bytes(), p);
        }
        single.finish();
        assert_eq!(scan.superseded.keys, keys as usize);
        assert_eq!(scan.superseded.keys, single.len());
        for p in 0..records {
            assert_eq!(
                scan.superseded.is_superseded(p),
                single.is_superseded(p),
                "{p}"
            );
        }
        assert_eq!(scan.superseded.count(0..records), (records - keys) as usize);
        assert_eq!(
            scan.plain.count(0..records as usize),
            (records as usize).div_ceil(100)
        );
    }

    #[test]
    fn a_damaged_batch_fails_the_scan() {
        let fs = SimFs::new();
        let dir = Path::new("/log");
        fs.create_dir_all(dir).unwrap();
        let mut bytes = RecordBatch::build(0, &[record(Some("a"), Some("1"))]).encode();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs.write_new(&dir.join(filename::build(0, filename::LOG_SUFFIX)), &bytes)
            .unwrap();
        fs.write_new(&dir.join(filename::build(1, filename::LOG_SUFFIX)), &[])
            .unwrap();
        let error = scan(&fs, dir, &[0, 1]).unwrap_err();
        assert!(
            matches!(
                error,
                Error::Corrupt {
                    kind: crate::error::CorruptKind::ChecksumMismatch { .. },
                    ..
                }
            ),
            "{error:?}"
        );
    }
}

//! The map pass of a compaction: one read of every segment that checks every batch
//! (length, magic, CRC-32C, offsets, record framing) and builds the latest-position
//! map, on two threads.
//!
//! Closed segments are read through [`FileSystem::map`] and the mappings are kept
//! for the rewrite pass, which therefore reads the very bytes checked here (closed
//! segments are immutable: nobody appends to or truncates them) and trusts their
//! CRC ([`super::view::batches_verified`]). With [`crate::fs::StdFs`] a mapping is
//! page cache, not heap; a file system whose `map` reads the file (the trait's
//! default, [`crate::fs::sim::SimFs`]) holds the closed region in memory until the
//! rewrite pass drops each segment.
//!
//! The scan also notes, with one bit per batch of the closed region, which batches
//! are *plain*: not control batches, and every record keyed and with a value. The
//! fate of a plain batch's records is exactly the map's superseded bits at their
//! ordinals (section 1: a latest keyed record with a value is kept, any other keyed
//! record is dropped), so the rewrite pass decides it without parsing a record.

use std::path::Path;
use std::sync::mpsc;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::format::filename::LOG_SUFFIX;
use crate::fs::FileSystem;

use super::bitmap::Bitmap;
use super::offset_map::OffsetMap;
use super::source::segment_path;
use super::view;

/// What the map pass leaves for the rewrite pass.
#[derive(Debug)]
pub struct Scan {
    /// Latest position per key digest over every segment (active included), with
    /// the superseded bitmap; positions are keyed-record ordinals (see [`scan`]).
    pub map: OffsetMap,
    /// The closed segments' bytes as checked, in base-offset order.
    pub closed: Vec<Bytes>,
    /// The active segment's bytes as checked.
    pub active: Vec<u8>,
    /// Bit `b`: batch `b` of the closed region (every batch counted, in order) is
    /// plain (see the module docs).
    pub plain: Bitmap,
}

/// Chunks in flight between the reading and inserting threads, and records per
/// chunk: 3 x 32K x 24 bytes = 2.25 MiB, whatever the log's size.
const CHUNKS: usize = 2;
const CHUNK_RECORDS: usize = 32 * 1024;

/// One chunk of (key, ordinal) pairs on their way to the map; keys borrow the
/// segments' bytes.
type Chunk<'a> = Vec<(&'a [u8], i64)>;

/// Reads and checks every segment of `dir` (`bases` ascending, the last one
/// active) and builds the latest-position map over the keyed records of
/// non-control batches. Positions are the ordinals of those records in offset
/// order (0, 1, 2, ...): they order like the offsets, and the map marks every
/// superseded ordinal in a bitmap, which the rewrite pass reads in the same order
/// instead of hashing and looking up every key again.
///
/// Two stages on two threads: a reader checks and parses, handing over chunks of
/// (key, ordinal) that come back for reuse; this thread hashes and inserts (the
/// split that balanced the two best here).
pub fn scan(fs: &dyn FileSystem, dir: &Path, bases: &[i64]) -> Result<Scan> {
    let (&active_base, closed_bases) = bases.split_last().expect("a log has a segment");
    let closed = closed_bases
        .iter()
        .map(|&base| {
            let path = segment_path(dir, base, LOG_SUFFIX);
            fs.map(&path).map_err(|e| Error::io(&path, e))
        })
        .collect::<Result<Vec<Bytes>>>()?;
    let active_path = segment_path(dir, active_base, LOG_SUFFIX);
    let active = fs
        .read_all(&active_path)
        .map_err(|e| Error::io(&active_path, e))?;
    let mut map = OffsetMap::tracking_superseded();
    let plain = scan_into(&mut map, dir, closed_bases, &closed, active_base, &active)?;
    map.finish();
    Ok(Scan {
        map,
        closed,
        active,
        plain,
    })
}

/// The two threads of [`scan`]; returns the plain-batch bitmap.
fn scan_into(
    map: &mut OffsetMap,
    dir: &Path,
    closed_bases: &[i64],
    closed: &[Bytes],
    active_base: i64,
    active: &[u8],
) -> Result<Bitmap> {
    let segments: Vec<(i64, &[u8])> = closed_bases
        .iter()
        .zip(closed)
        .map(|(&base, bytes)| (base, &bytes[..]))
        .chain([(active_base, active)])
        .collect();
    let (full_tx, full_rx) = mpsc::sync_channel::<Chunk<'_>>(CHUNKS);
    let (empty_tx, empty_rx) = mpsc::channel::<Chunk<'_>>();
    for _ in 0..CHUNKS + 1 {
        empty_tx
            .send(Vec::with_capacity(CHUNK_RECORDS))
            .expect("the receiver is alive");
    }
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || -> Result<Bitmap> {
            let mut ordinal = 0i64;
            let mut chunk = empty_rx.recv().expect("a chunk is free");
            let mut plain = Bitmap::default();
            let mut batch_index = 0usize;
            let mut records = Vec::new();
            for (i, &(base, bytes)) in segments.iter().enumerate() {
                let path = segment_path(dir, base, LOG_SUFFIX);
                let is_active = i + 1 == segments.len();
                for batch in view::batches(&path, base, bytes)? {
                    let index = batch_index;
                    batch_index += 1;
                    if batch.is_control() {
                        continue;
                    }
                    view::records(&path, &batch, &mut records)?;
                    let mut is_plain = true;
                    for record in &records {
                        if let Some(key) = record.key {
                            chunk.push((key, ordinal));
                            ordinal += 1;
                            is_plain &= !record.value_is_null;
                        } else {
                            is_plain = false;
                        }
                    }
                    if is_plain && !is_active {
                        plain.set(index);
                    }
                    if chunk.len() >= CHUNK_RECORDS {
                        // The inserting side stops early only by panicking, which
                        // the scope re-raises.
                        full_tx.send(chunk).expect("the inserting side is alive");
                        chunk = empty_rx.recv().expect("a chunk is free");
                        chunk.clear();
                    }
                }
            }
            if !chunk.is_empty() {
                full_tx.send(chunk).expect("the inserting side is alive");
            }
            plain.shrink_to_fit();
            Ok(plain)
        });
        for chunk in full_rx {
            for &(key, ordinal) in &chunk {
                map.insert(key, ordinal);
            }
            // The reader may be done and gone: then the chunk is just dropped.
            let _ = empty_tx.send(chunk);
        }
        reader.join().expect("the map reader does not panic")
    })
}

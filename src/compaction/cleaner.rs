//! The IO half of compaction: build the offset map, then write the compacted closed
//! segments and an unchanged copy of the active segment into `D.compact-tmp`
//! (install step 1), and describe the result in a [`Manifest`].

use std::ops::Range;
use std::path::Path;
use std::sync::mpsc;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::fail_point;
use crate::format::filename::{self, LOG_SUFFIX};
use crate::format::manifest::{Manifest, ManifestFile};
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint as fp;
use crate::fs::FileSystem;
use crate::install::InstallPaths;

use super::offset_map::{Digest, OffsetMap};
use super::planner::{decide_latest, Decision, Grouper, Horizon, Placement};
use super::source::{list_segments, segment_path};
use super::view;

/// Compaction report (records, segments and bytes cover the closed region only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CompactionReport {
    pub records_before: u64,
    pub records_after: u64,
    pub segments_before: u64,
    pub segments_after: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Distinct keys in the latest-offset map.
    pub map_keys: u64,
    /// Bytes the map held once built.
    pub map_bytes: u64,
    /// Most bytes the map held while being built.
    pub map_bytes_peak: u64,
}

/// The parameters of one compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactOptions {
    pub now: i64,
    pub delete_retention_ms: i64,
    /// Output segments are grouped up to this many compacted bytes.
    pub segment_bytes: u64,
}

/// A built temp directory, ready for [`crate::install::install`].
#[derive(Debug, Clone)]
pub struct Built {
    pub manifest: Manifest,
    pub report: CompactionReport,
}

/// Builds the latest-position map over every segment of `dir` (active included),
/// keyed records of non-control batches only. Positions are the ordinals of those
/// records in offset order (0, 1, 2, ...): they order like the offsets, and the map
/// marks every superseded ordinal in a bitmap, which the rewrite pass reads in the
/// same order instead of hashing and looking up every key again.
pub fn build_map(fs: &dyn FileSystem, dir: &Path, bases: &[i64]) -> Result<OffsetMap> {
    build_map_into(fs, dir, bases, &mut Vec::new())
}

/// [`build_map`] reading each segment into `bytes` (reused by the rewrite pass).
fn build_map_into(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    bytes: &mut Vec<u8>,
) -> Result<OffsetMap> {
    let mut map = OffsetMap::tracking_superseded();
    let digester = map.digester();
    // Two stages on two threads: this one inserts, the other reads, checks, parses
    // and hashes, handing over chunks of (digest, ordinal) that come back for reuse.
    let (full_tx, full_rx) = mpsc::sync_channel::<Vec<(Digest, i64)>>(MAP_CHUNKS);
    let (empty_tx, empty_rx) = mpsc::channel::<Vec<(Digest, i64)>>();
    for _ in 0..MAP_CHUNKS + 1 {
        empty_tx
            .send(Vec::with_capacity(MAP_CHUNK_RECORDS))
            .expect("the receiver is alive");
    }
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || -> Result<()> {
            let mut ordinal = 0i64;
            let mut chunk = empty_rx.recv().expect("a chunk is free");
            for &base in bases {
                let path = segment_path(dir, base, LOG_SUFFIX);
                read_into(fs, &path, bytes)?;
                let mut records = Vec::new();
                for batch in view::batches(&path, base, bytes)? {
                    if batch.is_control() {
                        continue;
                    }
                    view::records(&path, &batch, &mut records)?;
                    for record in &records {
                        if let Some(key) = record.key {
                            chunk.push((digester.digest(key), ordinal));
                            ordinal += 1;
                        }
                    }
                    if chunk.len() >= MAP_CHUNK_RECORDS {
                        if full_tx.send(chunk).is_err() {
                            return Ok(()); // the inserting side failed
                        }
                        chunk = empty_rx.recv().expect("a chunk is free");
                        chunk.clear();
                    }
                }
            }
            if !chunk.is_empty() {
                let _ = full_tx.send(chunk);
            }
            Ok(())
        });
        for chunk in full_rx {
            for &(digest, ordinal) in &chunk {
                map.insert_digest(digest, ordinal);
            }
            // The reader may be done and gone: then the chunk is just dropped.
            let _ = empty_tx.send(chunk);
        }
        reader.join().expect("the map reader does not panic")
    })?;
    map.finish();
    Ok(map)
}

/// Chunks in flight between the map's reading and inserting threads, and records
/// per chunk: 3 x 32K x 24 bytes = 2.25 MiB, whatever the log's size.
const MAP_CHUNKS: usize = 2;
const MAP_CHUNK_RECORDS: usize = 32 * 1024;

/// Bytes below which a run is copied into the staging buffer instead of being
/// written on its own (bounds the write calls when kept and dropped batches alternate).
const STAGING_BYTES: usize = 256 * 1024;

/// A run of the compacted segment: consecutive bytes of the source segment (whole
/// kept batches, control batches) or of [`Scratch::encoded`] (re-encoded batches).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Source(Range<usize>),
    Encoded(Range<usize>),
}

/// Buffers reused from one source segment to the next (no fresh pages per segment).
#[derive(Debug, Default)]
struct Scratch {
    /// The compacted segment as runs, in order; adjacent runs of one kind are merged.
    pieces: Vec<Piece>,
    /// Partly kept batches, re-encoded.
    encoded: Vec<u8>,
    /// Small runs gathered into one write.
    staging: Vec<u8>,
    /// Keep flags of one batch's records.
    keep: Vec<bool>,
    /// The ordinal of the next keyed record (same numbering as [`build_map`]).
    ordinal: i64,
}

/// Appends `piece` to `pieces`, merged into the last run when they are adjacent.
fn push_piece(pieces: &mut Vec<Piece>, piece: Piece) {
    match (pieces.last_mut(), &piece) {
        (Some(Piece::Source(last)), Piece::Source(next))
        | (Some(Piece::Encoded(last)), Piece::Encoded(next))
            if last.end == next.start =>
        {
            last.end = next.end;
        }
        _ => pieces.push(piece),
    }
}

/// Describes the compacted form of one source segment as runs in `work.pieces`;
/// returns (records before, records after, compacted bytes).
///
/// Whether a keyed record is the latest of its key is one bit of the map's
/// superseded bitmap, at the record's ordinal ([`OffsetMap::is_superseded`]): no
/// hashing here. A batch whose records are all kept (control batches always) is a
/// run of the source bytes, merged with its neighbours; a partly kept batch is
/// decoded in full and re-encoded ([`crate::format::RecordBatch::retain`]).
fn compact_segment(
    path: &Path,
    base: i64,
    bytes: &[u8],
    map: &OffsetMap,
    horizon: Horizon,
    work: &mut Scratch,
) -> Result<(u64, u64, u64)> {
    let keep = &mut work.keep;
    let pieces = &mut work.pieces;
    let encoded = &mut work.encoded;
    pieces.clear();
    encoded.clear();
    // Views borrow this segment's bytes; one batch's worth at a time.
    let mut views: Vec<view::RecordView<'_>> = Vec::new();
    let (mut before, mut after) = (0u64, 0u64);
    for batch in &view::batches(path, base, bytes)? {
        view::records(path, batch, &mut views)?;
        let control = batch.is_control();
        keep.clear();
        for record in &views {
            // The same ordinals as the build pass: keyed records of non-control batches.
            let latest = if record.key.is_some() && !control {
                let ordinal = work.ordinal;
                work.ordinal += 1;
                !map.is_superseded(ordinal)
            } else {
                false
            };
            keep.push(decide_latest(control, record, latest, horizon) == Decision::Keep);
        }
        let kept = keep.iter().filter(|k| **k).count();
        before += keep.len() as u64;
        after += kept as u64;
        if kept == keep.len() {
            let start = usize::try_from(batch.position).expect("a segment fits in memory");
            push_piece(pieces, Piece::Source(start..start + batch.bytes.len()));
        } else if kept > 0 {
            let (decoded, _) = crate::format::batch::decode(batch.bytes)
                .map_err(|e| e.at(path, batch.position))?;
            assert_eq!(decoded.records.len(), keep.len());
            let mut flags = keep.iter();
            let compacted = decoded
                .retain(|_| *flags.next().expect("one flag per record"))
                .expect("some record is kept");
            assert_eq!(compacted.records.len(), kept);
            assert_eq!(compacted.base_offset, decoded.base_offset);
            assert_eq!(compacted.last_offset_delta, decoded.last_offset_delta);
            let start = encoded.len();
            compacted.encode_into(encoded);
            push_piece(pieces, Piece::Encoded(start..encoded.len()));
        }
    }
    let out_bytes = pieces
        .iter()
        .map(|p| match p {
            Piece::Source(r) | Piece::Encoded(r) => r.len() as u64,
        })
        .sum();
    Ok((before, after, out_bytes))
}

/// Appends the runs of `work.pieces` to the output file `path`: one write per long
/// run, short runs gathered in `work.staging`. Returns the file's CRC-32C so far.
fn write_pieces(
    fs: &dyn FileSystem,
    path: &Path,
    source: &[u8],
    work: &mut Scratch,
    mut crc: u32,
) -> Result<u32> {
    let staging = &mut work.staging;
    let write = |data: &[u8]| fs.append(path, data).map_err(|e| Error::io(path, e));
    staging.clear();
    for piece in &work.pieces {
        let data = match piece {
            Piece::Source(r) => &source[r.clone()],
            Piece::Encoded(r) => &work.encoded[r.clone()],
        };
        crc = crate::format::crc::crc32c_append(crc, data);
        if data.len() >= STAGING_BYTES {
            if !staging.is_empty() {
                write(staging)?;
                staging.clear();
            }
            write(data)?;
        } else {
            staging.extend_from_slice(data);
            if staging.len() >= STAGING_BYTES {
                write(staging)?;
                staging.clear();
            }
        }
    }
    if !staging.is_empty() {
        write(staging)?;
    }
    Ok(crc)
}

/// Install step 1: writes the compacted log into `D.compact-tmp` and syncs it.
/// `None` when there is no closed segment (nothing to do).
pub fn build(fs: &dyn FileSystem, dir: &Path, options: CompactOptions) -> Result<Option<Built>> {
    if options.delete_retention_ms < 0 {
        return Err(Error::InvalidArgument(format!(
            "delete_retention_ms must be >= 0, got {}",
            options.delete_retention_ms
        )));
    }
    if options.segment_bytes == 0 {
        return Err(Error::InvalidArgument("segment_bytes must be > 0".into()));
    }
    let bases = list_segments(fs, dir)?;
    let Some((&active_base, closed)) = bases.split_last() else {
        return Err(Error::InvalidArgument(format!(
            "{} holds no segment",
            dir.display()
        )));
    };
    if closed.is_empty() {
        return Ok(None);
    }
    let paths = InstallPaths::new(dir)?;
    if fs.exists(&paths.tmp) {
        return Err(Error::Ambiguous {
            reason: "a compaction temp dir is left over; reopen the log to recover".into(),
            dirs: vec![paths.tmp.clone()],
        });
    }
    carried_files(fs, dir)?;
    let mut bytes = Vec::new();
    let map = build_map_into(fs, dir, &bases, &mut bytes)?;
    let horizon = Horizon {
        now: options.now,
        delete_retention_ms: options.delete_retention_ms,
    };
    let mut report = CompactionReport {
        segments_before: closed.len() as u64,
        map_keys: map.len() as u64,
        map_bytes: map.resident_bytes() as u64,
        map_bytes_peak: map.peak_bytes() as u64,
        ..CompactionReport::default()
    };
    fs.create_dir_all(&paths.tmp)
        .map_err(|e| Error::io(&paths.tmp, e))?;
    let mut files: Vec<ManifestFile> = Vec::new();
    let mut grouper = Grouper::new(options.segment_bytes);
    let mut work = Scratch::default();
    for &base in closed {
        let source = segment_path(dir, base, LOG_SUFFIX);
        read_into(fs, &source, &mut bytes)?;
        report.bytes_before += bytes.len() as u64;
        let (before, after, out_bytes) =
            compact_segment(&source, base, &bytes, &map, horizon, &mut work)?;
        report.records_before += before;
        report.records_after += after;
        if grouper.place(out_bytes) == Placement::Start {
            if let Some(done) = files.last() {
                build_sync_file(fs, &paths.tmp.join(&done.name))?;
            }
            let name = filename::build(base, LOG_SUFFIX);
            fs.create_file(&paths.tmp.join(&name))
                .map_err(|e| Error::io(paths.tmp.join(&name), e))?;
            files.push(ManifestFile {
                name,
                bytes: 0,
                crc32c: 0,
            });
        }
        let file = files.last_mut().expect("a group was started");
        let path = paths.tmp.join(&file.name);
        file.crc32c = write_pieces(fs, &path, &bytes, &mut work, file.crc32c)?;
        file.bytes += out_bytes;
        report.bytes_after += out_bytes;
    }
    if let Some(done) = files.last() {
        build_sync_file(fs, &paths.tmp.join(&done.name))?;
    }
    report.segments_after = files.len() as u64;
    // The active segment, byte for byte.
    let active_source = segment_path(dir, active_base, LOG_SUFFIX);
    let active_bytes = fs
        .read_all(&active_source)
        .map_err(|e| Error::io(&active_source, e))?;
    let next_offset = view::batches(&active_source, active_base, &active_bytes)?
        .last()
        .map_or(active_base, |b| b.last_offset() + 1);
    let active_name = filename::build(active_base, LOG_SUFFIX);
    let active_path = paths.tmp.join(&active_name);
    fs.write_new(&active_path, &active_bytes)
        .map_err(|e| Error::io(&active_path, e))?;
    build_sync_file(fs, &active_path)?;
    files.push(ManifestFile {
        name: active_name,
        bytes: active_bytes.len() as u64,
        crc32c: crate::format::crc::crc32c(&active_bytes),
    });
    // Files the log does not own (and the retention checkpoint) move with the log,
    // unchanged; index files are not copied (the next open rebuilds them).
    for name in carried_files(fs, dir)? {
        let bytes = fs
            .read_all(&dir.join(&name))
            .map_err(|e| Error::io(dir.join(&name), e))?;
        let path = paths.tmp.join(&name);
        fs.write_new(&path, &bytes)
            .map_err(|e| Error::io(&path, e))?;
        build_sync_file(fs, &path)?;
        files.push(ManifestFile {
            name,
            bytes: bytes.len() as u64,
            crc32c: crate::format::crc::crc32c(&bytes),
        });
    }
    fail_point!(fp::COMPACTION_BUILD_SYNC_TMP_DIR);
    fs.sync_dir(&paths.tmp)
        .map_err(|e| Error::io(&paths.tmp, e))?;
    let log_start_offset = bases[0];
    assert_eq!(files[0].name, filename::build(log_start_offset, LOG_SUFFIX));
    assert!(report.records_after <= report.records_before);
    files.sort();
    Ok(Some(Built {
        manifest: Manifest {
            log_start_offset,
            next_offset,
            files,
        },
        report,
    }))
}

/// Names in `dir` that are not segment files: copied into the new directory as they
/// are. A subdirectory is refused before anything is written (the install swaps
/// whole directories and must not lose what it does not understand).
fn carried_files(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for name in fs.list_dir(dir).map_err(|e| Error::io(dir, e))? {
        if fs.is_dir(&dir.join(&name)) {
            return Err(Error::InvalidArgument(format!(
                "{} holds a directory {name:?}; compaction would not carry it over",
                dir.display()
            )));
        }
        if filename::parse(&name).is_none() {
            out.push(name);
        }
    }
    Ok(out)
}

/// Reads the whole file into `buf`, reusing its allocation (no fresh zeroed pages
/// per segment).
fn read_into(fs: &dyn FileSystem, path: &Path, buf: &mut Vec<u8>) -> Result<()> {
    let len = fs.len(path).map_err(|e| Error::io(path, e))?;
    let len = usize::try_from(len).map_err(|_| Error::Unsupported("segment too large".into()))?;
    buf.resize(len, 0);
    let mut done = 0;
    while done < len {
        let n = fs
            .read_at(path, done as u64, &mut buf[done..])
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            return Err(Error::io(path, std::io::ErrorKind::UnexpectedEof.into()));
        }
        done += n;
    }
    Ok(())
}

fn build_sync_file(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    fail_point!(fp::COMPACTION_BUILD_SYNC_FILE);
    fs.sync_file(path).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::sim::SimFs;

    #[test]
    fn adjacent_runs_of_one_kind_merge() {
        let mut pieces = Vec::new();
        push_piece(&mut pieces, Piece::Source(0..10));
        push_piece(&mut pieces, Piece::Source(10..25));
        push_piece(&mut pieces, Piece::Source(30..40));
        push_piece(&mut pieces, Piece::Encoded(0..5));
        push_piece(&mut pieces, Piece::Encoded(5..9));
        push_piece(&mut pieces, Piece::Source(40..41));
        assert_eq!(
            pieces,
            vec![
                Piece::Source(0..25),
                Piece::Source(30..40),
                Piece::Encoded(0..9),
                Piece::Source(40..41),
            ]
        );
    }

    #[test]
    fn pieces_are_written_in_order_small_ones_staged() {
        let fs = SimFs::new();
        let path = Path::new("/out.log");
        fs.create_dir_all(Path::new("/")).unwrap();
        fs.create_file(path).unwrap();
        let source: Vec<u8> = (0..3 * STAGING_BYTES).map(|i| (i % 251) as u8).collect();
        let big = STAGING_BYTES + 7;
        let mut work = Scratch {
            encoded: b"encoded!".to_vec(),
            pieces: vec![
                Piece::Source(3..9),
                Piece::Encoded(0..8),
                Piece::Source(100..100 + big),
                Piece::Source(20..21),
            ],
            ..Scratch::default()
        };
        let crc = write_pieces(&fs, path, &source, &mut work, 0).unwrap();
        let mut expected = source[3..9].to_vec();
        expected.extend_from_slice(b"encoded!");
        expected.extend_from_slice(&source[100..100 + big]);
        expected.extend_from_slice(&source[20..21]);
        assert_eq!(fs.read_all(path).unwrap(), expected);
        assert_eq!(crc, crate::format::crc::crc32c(&expected));
    }
}

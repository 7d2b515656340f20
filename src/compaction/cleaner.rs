//! The IO half of compaction: build the offset map, then write the compacted closed
//! segments and an unchanged copy of the active segment into `D.compact-tmp`
//! (install step 1), and describe the result in a [`Manifest`].

use std::path::Path;

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
use super::planner::{decide_fields, Decision, Grouper, Horizon, Placement};
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

/// Builds the offset map over every segment of `dir` (active included), keyed
/// records of non-control batches only.
pub fn build_map(fs: &dyn FileSystem, dir: &Path, bases: &[i64]) -> Result<OffsetMap> {
    let mut map = OffsetMap::new();
    let mut bytes = Vec::new();
    for &base in bases {
        let path = segment_path(dir, base, LOG_SUFFIX);
        read_into(fs, &path, &mut bytes)?;
        let mut records = Vec::new();
        for batch in view::batches(&path, base, &bytes)? {
            if batch.is_control() {
                continue;
            }
            view::records(&path, &batch, &mut records)?;
            for record in &records {
                if let Some(key) = record.key {
                    map.insert(key, record.offset);
                }
            }
        }
    }
    map.finish();
    Ok(map)
}

/// Buffers reused from one source segment to the next (no fresh pages per segment).
#[derive(Debug, Default)]
struct Scratch {
    /// Every record of the segment, in order, reduced to what the rule needs.
    records: Vec<Pending>,
    queries: Vec<(Digest, u32)>,
    latest: Vec<Option<i64>>,
    keep: Vec<bool>,
}

/// One record awaiting its decision (no borrow of the segment bytes, so the buffer
/// is reused from segment to segment).
#[derive(Debug, Clone, Copy)]
struct Pending {
    offset: i64,
    timestamp: i64,
    keyed: bool,
    value_is_null: bool,
}

/// Appends the compacted form of one source segment to `out`; returns
/// (records before, records after).
///
/// The latest offsets of the segment's keys are looked up in one sorted merge walk
/// over the map ([`OffsetMap::latest_sorted`]). A batch whose records are all kept
/// (control batches always) is copied byte for byte; a partly kept batch is decoded
/// in full and re-encoded ([`crate::format::RecordBatch::retain`]).
fn compact_segment(
    path: &Path,
    base: i64,
    bytes: &[u8],
    map: &OffsetMap,
    horizon: Horizon,
    work: &mut Scratch,
    out: &mut Vec<u8>,
) -> Result<(u64, u64)> {
    let batches = view::batches(path, base, bytes)?;
    let mut ranges = Vec::with_capacity(batches.len());
    let records = &mut work.records;
    let queries = &mut work.queries;
    let latest = &mut work.latest;
    let keep = &mut work.keep;
    records.clear();
    queries.clear();
    // Views borrow this segment's bytes; one batch's worth at a time.
    let mut views: Vec<view::RecordView<'_>> = Vec::new();
    for batch in &batches {
        view::records(path, batch, &mut views)?;
        let start = records.len();
        for record in &views {
            if let (Some(key), false) = (record.key, batch.is_control()) {
                let tag =
                    u32::try_from(records.len()).expect("fewer than 2^32 records per segment");
                queries.push((map.digest(key), tag));
            }
            records.push(Pending {
                offset: record.offset,
                timestamp: record.timestamp,
                keyed: record.key.is_some(),
                value_is_null: record.value_is_null,
            });
        }
        ranges.push(start..records.len());
    }
    queries.sort_unstable_by_key(|q| q.0);
    latest.clear();
    latest.resize(records.len(), None);
    map.latest_sorted(queries, |tag, found| latest[tag as usize] = found);
    let (mut before, mut after) = (0u64, 0u64);
    for (batch, range) in batches.iter().zip(ranges) {
        keep.clear();
        keep.extend(range.clone().map(|i| {
            let r = records[i];
            decide_fields(
                batch.is_control(),
                r.keyed,
                r.offset,
                r.value_is_null,
                r.timestamp,
                latest[i],
                horizon,
            ) == Decision::Keep
        }));
        let kept = keep.iter().filter(|k| **k).count();
        before += keep.len() as u64;
        after += kept as u64;
        if kept == keep.len() {
            out.extend_from_slice(batch.bytes);
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
            compacted.encode_into(out);
        }
    }
    Ok((before, after))
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
    let map = build_map(fs, dir, &bases)?;
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
    let mut buffer = Vec::new();
    let mut bytes = Vec::new();
    let mut work = Scratch::default();
    for &base in closed {
        let source = segment_path(dir, base, LOG_SUFFIX);
        read_into(fs, &source, &mut bytes)?;
        report.bytes_before += bytes.len() as u64;
        buffer.clear();
        let (before, after) =
            compact_segment(&source, base, &bytes, &map, horizon, &mut work, &mut buffer)?;
        report.records_before += before;
        report.records_after += after;
        if grouper.place(buffer.len() as u64) == Placement::Start {
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
        fs.append(&path, &buffer).map_err(|e| Error::io(&path, e))?;
        file.bytes += buffer.len() as u64;
        file.crc32c = crc32c::crc32c_append(file.crc32c, &buffer);
        report.bytes_after += buffer.len() as u64;
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
        crc32c: crc32c::crc32c(&active_bytes),
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
            crc32c: crc32c::crc32c(&bytes),
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

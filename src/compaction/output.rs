//! The compacted closed region written into the temp directory, on two threads.
//!
//! A helper thread describes each closed source segment ([`compact_segment`]),
//! places it in an output group ([`Grouper`]) and extends that output file's
//! CRC-32C; the calling thread makes every file-system call (create, append, sync),
//! one segment behind. The calls are exactly those, and in exactly the order, of a
//! single thread doing both: crash sweeps stop at the k-th mutating call, so the
//! order must not depend on scheduling. Two segment descriptions are in flight at
//! most; the helper also drops each source mapping once written.

use std::path::Path;
use std::sync::mpsc;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::format::filename::{self, LOG_SUFFIX};
use crate::format::manifest::ManifestFile;
use crate::fs::FileSystem;

use super::bitmap::Bitmap;
use super::offset_map::Superseded;
use super::planner::{Grouper, Horizon, Placement};
use super::rewrite::{compact_segment, Compacted, Counts, Cursor, Rules};
use super::source::segment_path;
use crate::segment::Segment;

/// What [`write_closed`] needs besides the file system and the directories.
#[derive(Debug)]
pub struct ClosedRegion<'a> {
    /// Base offsets of the closed segments, ascending.
    pub bases: &'a [i64],
    /// Their bytes as the scan checked them ([`super::scan::Scan::closed`]).
    pub bytes: Vec<Bytes>,
    /// The records a later record of the same key supersedes.
    pub superseded: &'a Superseded,
    /// The plain batches (no tombstone, keyless or control record): kept or dropped by bits alone.
    pub plain: &'a Bitmap,
    /// The tombstone horizon.
    pub horizon: Horizon,
    /// The largest output segment (`LogConfig::segment_bytes`).
    pub segment_bytes: u64,
    /// Batches at or past this offset are kept as they are ([`Rules::keep_from`]).
    pub keep_from: i64,
    /// Bytes between index entries of the output segments (`LogConfig::index_interval_bytes`).
    pub index_interval_bytes: u64,
}

/// What [`write_closed`] wrote.
#[derive(Debug)]
pub struct Written {
    /// The output files, in order (`.log` only).
    pub files: Vec<ManifestFile>,
    /// Sums over the closed region.
    pub totals: Totals,
    /// The output segments' metadata and index entries (close-time entry included),
    /// their paths in the live directory: what the new directory's index files and
    /// recovery point are written from, and what the open log adopts after the install.
    pub segments: Vec<Segment>,
}

/// Sums over the closed region.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Bytes of the closed segments before compaction.
    pub bytes_before: u64,
    /// Records and bytes summed over the closed segments.
    pub counts: Counts,
}

/// One described source segment on its way to the writing thread.
struct Job {
    /// Set when the segment starts a new output file (named by its base offset).
    start: Option<String>,
    source: Bytes,
    compacted: Compacted,
    counts: Counts,
    /// The output file's CRC-32C once this segment is appended.
    crc32c: u32,
}

/// Writes the compacted closed segments into `tmp` (which exists), grouped
/// greedily by compacted bytes, each output file synced once complete. Returns the
/// files, in order, the totals and the output segments (indexed on the helper
/// thread from the batch headers: no output byte is read back).
pub fn write_closed(
    fs: &dyn FileSystem,
    dir: &Path,
    tmp: &Path,
    region: ClosedRegion<'_>,
) -> Result<Written> {
    let ClosedRegion {
        bases,
        bytes,
        superseded,
        plain,
        horizon,
        segment_bytes,
        keep_from,
        index_interval_bytes,
    } = region;
    assert_eq!(bases.len(), bytes.len());
    let rules = Rules {
        superseded,
        plain,
        horizon,
        keep_from,
    };
    let (job_tx, job_rx) = mpsc::sync_channel::<Job>(0);
    let (back_tx, back_rx) = mpsc::channel::<(Compacted, Bytes)>();
    std::thread::scope(|scope| {
        let describer = scope.spawn(move || -> Result<Vec<Segment>> {
            let mut segments: Vec<Segment> = Vec::new();
            let mut cursor = Cursor::default();
            let mut grouper = Grouper::new(segment_bytes);
            let mut spare = vec![Compacted::default(), Compacted::default()];
            let mut crc32c = 0;
            for (&base, source) in bases.iter().zip(bytes) {
                let mut compacted = match spare.pop() {
                    Some(compacted) => compacted,
                    // The source comes back with its buffers: dropped (unmapped) here.
                    None => match back_rx.recv() {
                        Ok((compacted, _written)) => compacted,
                        Err(_) => return Ok(segments), // the writing side stopped on an error
                    },
                };
                let path = segment_path(dir, base, LOG_SUFFIX);
                let counts =
                    compact_segment(&path, base, &source, rules, &mut cursor, &mut compacted)?;
                let start = grouper.place(counts.bytes_after) == Placement::Start;
                if start {
                    crc32c = 0;
                    if let Some(done) = segments.last_mut() {
                        done.close_active();
                    }
                    segments.push(Segment::empty(dir, base, index_interval_bytes));
                }
                let output = segments
                    .last_mut()
                    .expect("the first segment starts a file");
                compacted.index_into(&path, &source, output)?;
                crc32c = compacted.crc32c_append(crc32c, &source);
                let job = Job {
                    start: start.then(|| filename::build(base, LOG_SUFFIX)),
                    source,
                    compacted,
                    counts,
                    crc32c,
                };
                if job_tx.send(job).is_err() {
                    return Ok(segments); // the writing side stopped on an error
                }
            }
            drop(job_tx);
            // The last sources come back too: unmapped here, not on the writing side.
            for (_compacted, _written) in back_rx {}
            if let Some(done) = segments.last_mut() {
                done.close_active();
            }
            Ok(segments)
        });
        // Owns the receiving end and the way back: an error drops both, which
        // stops the helper.
        let written = write_jobs(fs, tmp, job_rx, back_tx);
        let described = describer
            .join()
            .expect("the describing thread does not panic");
        let (files, totals) = written?;
        let mut segments = described?;
        assert_eq!(segments.len(), files.len());
        for (segment, file) in segments.iter_mut().zip(&files) {
            assert_eq!(segment.bytes, file.bytes);
            assert_eq!(segment.paths.log, dir.join(&file.name));
            // The close-time entry is in the entries; the files are written whole.
            segment.pending_index.clear();
            segment.pending_time_index.clear();
        }
        Ok(Written {
            files,
            totals,
            segments,
        })
    })
}

/// The writing side of [`write_closed`]: every file-system call, in order.
fn write_jobs(
    fs: &dyn FileSystem,
    tmp: &Path,
    jobs: mpsc::Receiver<Job>,
    back: mpsc::Sender<(Compacted, Bytes)>,
) -> Result<(Vec<ManifestFile>, Totals)> {
    let mut files: Vec<ManifestFile> = Vec::new();
    let mut totals = Totals::default();
    // Dropping `back` on return ends the helper, which waits for what comes back.
    let mut staging = Vec::new();
    for job in jobs {
        if let Some(name) = job.start {
            if let Some(done) = files.last() {
                super::cleaner::build_sync_file(fs, &tmp.join(&done.name))?;
            }
            let path = tmp.join(&name);
            fs.create_file(&path).map_err(|e| Error::io(&path, e))?;
            files.push(ManifestFile {
                name,
                bytes: 0,
                crc32c: 0,
            });
        }
        let file = files.last_mut().expect("the first segment starts a file");
        job.compacted
            .write(fs, &tmp.join(&file.name), &job.source, &mut staging)?;
        file.bytes += job.counts.bytes_after;
        file.crc32c = job.crc32c;
        totals.bytes_before += job.source.len() as u64;
        totals.counts.records_before += job.counts.records_before;
        totals.counts.records_after += job.counts.records_after;
        totals.counts.bytes_after += job.counts.bytes_after;
        // The helper may have stopped on an error: then they are dropped here.
        let _ = back.send((job.compacted, job.source));
    }
    if let Some(done) = files.last() {
        super::cleaner::build_sync_file(fs, &tmp.join(&done.name))?;
    }
    Ok((files, totals))
}

#[cfg(test)]
mod tests {
    use crate::compaction::cleaner::{build, CompactOptions};
    use crate::format::{filename, NewRecord, RecordBatch};
    use crate::fs::sim::SimFs;
    use crate::fs::FileSystem;
    use std::path::Path;

    /// Four closed segments (plain, partly kept, tombstone and keyless batches)
    /// and an active one, in a fresh SimFs.
    fn log() -> SimFs {
        let fs = SimFs::new();
        let dir = Path::new("/log");
        fs.create_dir_all(dir).unwrap();
        let mut offset = 0i64;
        for segment in 0..5 {
            let base = offset;
            let mut bytes = Vec::new();
            for batch in 0..3 {
                let records: Vec<NewRecord> = (0..4)
                    .map(|i| {
                        let key = (i + batch + segment) % 5;
                        let key = (key != 4).then(|| format!("k{key}").into_bytes());
                        let value = (i != 3 || segment != 2).then(|| b"v".to_vec());
                        NewRecord::new(key, value, offset + i)
                    })
                    .collect();
                RecordBatch::build(offset, &records).encode_into(&mut bytes);
                offset += 4;
            }
            fs.write_new(
                &dir.join(filename::build(base, filename::LOG_SUFFIX)),
                &bytes,
            )
            .unwrap();
        }
        fs.sync_dir(dir).unwrap();
        fs
    }

    const OPTIONS: CompactOptions = CompactOptions {
        now: 100,
        delete_retention_ms: 0,
        segment_bytes: 300,
    };

    #[test]
    fn every_failed_call_stops_the_build_with_its_error() {
        let fs = log();
        let first = fs.mutating_ops();
        let built = build(&fs, Path::new("/log"), OPTIONS).unwrap().unwrap();
        assert!(built.report.segments_after >= 2, "{:?}", built.report);
        assert!(built.report.records_after < built.report.records_before);
        let calls = fs.mutating_ops() - first;
        for k in first..first + calls {
            let fs = log();
            fs.fail_nth(k);
            let error = build(&fs, Path::new("/log"), OPTIONS).unwrap_err();
            assert!(error.to_string().contains("injected"), "call {k}: {error}");
        }
    }

    #[test]
    fn the_calls_do_not_depend_on_scheduling() {
        // A crash before call k leaves the same state whichever thread ran first.
        let fs = log();
        let first = fs.mutating_ops();
        build(&fs, Path::new("/log"), OPTIONS).unwrap();
        for k in first..fs.mutating_ops() {
            let images: Vec<_> = (0..2)
                .map(|_| {
                    let fs = log();
                    fs.set_crash_before(k);
                    assert!(build(&fs, Path::new("/log"), OPTIONS).is_err());
                    (fs.snapshot(), fs.snapshot_dirs())
                })
                .collect();
            assert_eq!(images[0], images[1], "crash before call {k}");
        }
    }
}

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
use crate::format::filename::{self, KEYS_SUFFIX, LOG_SUFFIX};
use crate::format::key_summary::{self, KeySummary};
use crate::format::manifest::ManifestFile;
use crate::fs::FileSystem;

use super::bitmap::Bitmap;
use super::carry::{self, SourceKeys};
use super::files::{build_sync_file, write_link};
use super::offset_map::Superseded;
use super::rewrite::{compact_segment, Compacted, Counts, Cursor, Rules};
use super::rules::seed::{Grouper, Horizon, Placement};
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
    /// One per closed segment when the pass is incremental ([`super::dirty`]): the
    /// untouched ones are kept whole (hard-linked when alone in their group), and
    /// every output segment whose sources are all known gets a key summary
    /// (`.keys`). `None` (a full compaction): no summary, no carry.
    pub keys: Option<Vec<SourceKeys>>,
    /// The transaction rules' decisions ([`super::rules::txn`]), if any.
    pub txn: Option<&'a super::rules::txn::TxnPlan>,
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
    /// Base offsets of the output segments hard-linked from the live directory
    /// (not rewritten), ascending.
    pub carried_bases: Vec<i64>,
    /// How many: `carried_bases.len()`.
    pub carried_segments: u64,
    /// Their bytes: what the pass did not write.
    pub carried_bytes: u64,
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
    /// An untouched source starting its group ([`SourceKeys::Untouched`]).
    whole: bool,
    /// An untouched source alone in its group: hard-linked, not written.
    link: bool,
    /// Set on the last source of its output file: the file is complete (synced
    /// here), with its key summary when every source of it is known.
    end: Option<Option<KeySummary>>,
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
        mut keys,
        txn,
    } = region;
    if let Some(keys) = &keys {
        assert_eq!(keys.len(), bases.len());
    }
    assert_eq!(bases.len(), bytes.len());
    let rules = Rules {
        superseded,
        plain,
        horizon,
        keep_from,
        txn,
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
            // Held back one source: whether it ends its group (and so may be linked)
            // is known once the next source is placed.
            let mut pending: Option<Job> = None;
            let mut group: Vec<usize> = Vec::new();
            for (i, (&base, source)) in bases.iter().zip(bytes).enumerate() {
                let mut compacted = match spare.pop() {
                    Some(compacted) => compacted,
                    // The source comes back with its buffers: dropped (unmapped) here.
                    None => match back_rx.recv() {
                        Ok((compacted, _written)) => compacted,
                        Err(_) => return Ok(segments), // the writing side stopped on an error
                    },
                };
                let path = segment_path(dir, base, LOG_SUFFIX);
                let untouched = match keys.as_ref().map(|keys| &keys[i]) {
                    Some(SourceKeys::Untouched(summary)) => Some(summary.segment_crc32c),
                    _ => None,
                };
                let first_ordinal = cursor.ordinal();
                let counts = match untouched {
                    Some(_) => compacted.set_whole(&path, base, &source)?,
                    None => {
                        compact_segment(&path, base, &source, rules, &mut cursor, &mut compacted)?
                    }
                };
                if let Some(SourceKeys::Read(read)) = keys.as_mut().map(|keys| &mut keys[i]) {
                    // The output's summary holds the keys it keeps, not the dropped ones.
                    let numbered = usize::try_from(cursor.ordinal() - first_ordinal)
                        .expect("the cursor moves forward");
                    read.retain_kept(numbered, |k| {
                        superseded.is_superseded(first_ordinal + k as i64)
                    });
                }
                let start = grouper.place(counts.bytes_after) == Placement::Start;
                if let Some(mut job) = pending.take() {
                    if start {
                        let done = segments.last().expect("a pending job has its segment");
                        job.end = Some(group_summary(keys.as_deref(), &group, done, job.crc32c));
                        job.link = job.whole;
                    }
                    if job_tx.send(job).is_err() {
                        return Ok(segments); // the writing side stopped on an error
                    }
                }
                if start {
                    crc32c = 0;
                    group.clear();
                    if let Some(done) = segments.last_mut() {
                        done.close_active();
                    }
                    segments.push(Segment::empty(dir, base, index_interval_bytes));
                }
                group.push(i);
                let output = segments
                    .last_mut()
                    .expect("the first segment starts a file");
                compacted.index_into(&path, &source, output)?;
                crc32c = match untouched {
                    // Checked against the whole source by `carry::untouched`.
                    Some(whole) if start => whole,
                    _ => compacted.crc32c_append(crc32c, &source),
                };
                pending = Some(Job {
                    start: start.then(|| filename::build(base, LOG_SUFFIX)),
                    source,
                    compacted,
                    counts,
                    crc32c,
                    whole: start && untouched.is_some(),
                    link: false,
                    end: None,
                });
            }
            if let Some(mut job) = pending.take() {
                let done = segments.last().expect("a pending job has its segment");
                job.end = Some(group_summary(keys.as_deref(), &group, done, job.crc32c));
                job.link = job.whole;
                if job_tx.send(job).is_err() {
                    return Ok(segments);
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
        let written = write_jobs(fs, dir, tmp, job_rx, back_tx);
        let described = crate::panics::join_scoped(describer, "the describing thread");
        let (files, totals, carried) = written?;
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
            carried_segments: carried.0.len() as u64,
            carried_bases: carried.0,
            carried_bytes: carried.1,
        })
    })
}

/// The key summary of the output segment `segment` (CRC-32C `crc32c`) made of the
/// sources `group`, when the pass knows their keys.
fn group_summary(
    keys: Option<&[SourceKeys]>,
    group: &[usize],
    segment: &Segment,
    crc32c: u32,
) -> Option<KeySummary> {
    keys.and_then(|keys| {
        carry::output_summary(
            segment.base_offset,
            segment.bytes,
            crc32c,
            group.iter().map(|&i| &keys[i]),
        )
    })
}

/// What [`write_jobs`] did: the files, the totals, and the bases and bytes of
/// the segments it hard-linked.
type JobsWritten = (Vec<ManifestFile>, Totals, (Vec<i64>, u64));

/// The writing side of [`write_closed`]: every file-system call, in order.
fn write_jobs(
    fs: &dyn FileSystem,
    dir: &Path,
    tmp: &Path,
    jobs: mpsc::Receiver<Job>,
    back: mpsc::Sender<(Compacted, Bytes)>,
) -> Result<JobsWritten> {
    let mut files: Vec<ManifestFile> = Vec::new();
    let mut totals = Totals::default();
    let mut carried = (Vec::new(), 0u64);
    // Dropping `back` on return ends the helper, which waits for what comes back.
    let mut staging = Vec::new();
    for job in jobs {
        totals.bytes_before += job.source.len() as u64;
        totals.counts.records_before += job.counts.records_before;
        totals.counts.records_after += job.counts.records_after;
        totals.counts.bytes_after += job.counts.bytes_after;
        if job.link {
            let name = job.start.clone().expect("a linked source starts its file");
            assert_eq!(job.counts.bytes_after, job.source.len() as u64);
            // The live directory's inode, already durable: a new name in the temp
            // dir, made durable by its fsync before the commit point (model (b)).
            write_link(fs, &dir.join(&name), &tmp.join(&name))?;
            let keys_name = keys_name(&name);
            debug_assert_eq!(
                fs.read_all(&dir.join(&keys_name))
                    .ok()
                    .and_then(|b| key_summary::decode(&b)),
                job.end.clone().flatten(),
                "a carried segment's summary is its own"
            );
            write_link(fs, &dir.join(&keys_name), &tmp.join(&keys_name))?;
            files.push(ManifestFile {
                name,
                bytes: job.counts.bytes_after,
                crc32c: job.crc32c,
            });
            let (base, _) = filename::parse(&files[files.len() - 1].name).expect("a segment name");
            carried.0.push(base);
            carried.1 += job.counts.bytes_after;
            let _ = back.send((job.compacted, job.source));
            continue;
        }
        if let Some(name) = job.start {
            let path = tmp.join(&name);
            fs.create_file(&path).map_err(|e| Error::io(&path, e))?;
            files.push(ManifestFile {
                name,
                bytes: 0,
                crc32c: 0,
            });
        }
        let file = files.last_mut().expect("the first segment starts a file");
        let path = tmp.join(&file.name);
        job.compacted.write(fs, &path, &job.source, &mut staging)?;
        file.bytes += job.counts.bytes_after;
        file.crc32c = job.crc32c;
        if let Some(summary) = job.end {
            build_sync_file(fs, &path)?;
            if let Some(summary) = summary {
                assert_eq!(summary.segment_bytes, file.bytes);
                assert_eq!(summary.segment_crc32c, file.crc32c);
                let keys_path = tmp.join(keys_name(&file.name));
                fs.write_new(&keys_path, &key_summary::encode(&summary))
                    .map_err(|e| Error::io(&keys_path, e))?;
                build_sync_file(fs, &keys_path)?;
            }
        }
        // The helper may have stopped on an error: then they are dropped here.
        let _ = back.send((job.compacted, job.source));
    }
    Ok((files, totals, carried))
}

/// The `.keys` name beside the `.log` named `log_name`.
fn keys_name(log_name: &str) -> String {
    let (base, _) = filename::parse(log_name).expect("an output segment's name");
    filename::build(base, KEYS_SUFFIX)
}

#[cfg(test)]
mod tests {
    use crate::compaction::{build, CompactOptions};
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

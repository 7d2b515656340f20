//! The one writer of a pass's output segments, for both policies.
//!
//! A describing thread (the policy's: [`super::output`] for the seed policy,
//! [`super::pass::kafka`] for Kafka's) turns each closed source segment into
//! [`Runs`] and sends them as a [`Part`], marked where an output file starts and
//! ends; the calling thread makes every file-system call (create, append, sync,
//! link, the key summary), one part behind. The calls are exactly those, and in
//! exactly the order, of a single thread doing both: crash sweeps stop at the k-th
//! mutating call, so the order must not depend on scheduling. Two parts are in
//! flight at most: the describer takes a part's buffers back once it is written,
//! so the memory a pass holds for its output is two source segments' runs, not an
//! output group's.

use std::path::Path;
use std::sync::mpsc;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::format::filename::{self, KEYS_SUFFIX};
use crate::format::key_summary::{self, KeySummary};
use crate::format::manifest::ManifestFile;
use crate::fs::FileSystem;
use crate::segment::Segment;

use super::files::{build_sync_file, write_link};
use super::runs::{Counts, Runs};

/// Bytes below which a run is copied into the staging buffer instead of being
/// written on its own (bounds the write calls when kept and dropped batches alternate).
pub(super) const STAGING_BYTES: usize = 256 * 1024;

/// What a describing thread keeps a source segment's runs in (and gets back
/// once they are written, to reuse its buffers).
pub(super) trait Described: Send {
    /// The source segment's output bytes, as runs of its source (source 0).
    fn runs(&self) -> &Runs;
}

impl Described for Runs {
    fn runs(&self) -> &Runs {
        self
    }
}

/// One source segment's part of an output file, on its way to the writing thread.
pub(super) struct Part<D> {
    /// Set when the part starts a new output file: its name.
    pub start: Option<String>,
    /// The source segment's bytes: source 0 of the runs.
    pub source: Bytes,
    /// The runs to write.
    pub described: D,
    /// Records and bytes of the source before and after.
    pub counts: Counts,
    /// The output file's CRC-32C once this part is appended.
    pub crc32c: u32,
    /// An untouched source alone in its output file: hard-linked from the live
    /// directory with its key summary, not written.
    pub link: bool,
    /// Set on the last part of its output file: the file is complete (synced here),
    /// with its key summary when the pass knows every key of it.
    pub end: Option<Option<KeySummary>>,
}

/// Sums over the closed region.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Bytes of the closed segments before compaction.
    pub bytes_before: u64,
    /// Records and bytes summed over the closed segments.
    pub counts: Counts,
}

/// What the writer wrote.
#[derive(Debug, Default)]
pub(super) struct Files {
    /// The output files, in order (`.log` only).
    pub files: Vec<ManifestFile>,
    /// Sums over the parts.
    pub totals: Totals,
    /// Base offsets of the output files hard-linked, not written, ascending.
    pub carried_bases: Vec<i64>,
    /// Their bytes.
    pub carried_bytes: u64,
}

/// Runs `describe` on a second thread and writes the parts it sends into `tmp`
/// (which exists) on this one. `describe` gets the sending end and the way back
/// (each written part's runs and source, to reuse and to drop); it stops when a
/// send fails (the writer stopped on an error, which is the one returned) and
/// returns what it built beside the files.
pub(super) fn write_parts<D, R>(
    fs: &dyn FileSystem,
    dir: &Path,
    tmp: &Path,
    describe: impl FnOnce(mpsc::SyncSender<Part<D>>, mpsc::Receiver<(D, Bytes)>) -> Result<R> + Send,
) -> Result<(Files, R)>
where
    D: Described,
    R: Send,
{
    let (part_tx, part_rx) = mpsc::sync_channel::<Part<D>>(0);
    let (back_tx, back_rx) = mpsc::channel::<(D, Bytes)>();
    std::thread::scope(|scope| {
        let describer = scope.spawn(move || describe(part_tx, back_rx));
        // Owns the receiving end and the way back: an error drops both, which
        // stops the describer.
        let written = write(fs, dir, tmp, part_rx, back_tx);
        let described = crate::panics::join_scoped(describer, "the describing thread");
        let files = written?;
        Ok((files, described?))
    })
}

/// The writing side of [`write_parts`]: every file-system call, in order.
fn write<D: Described>(
    fs: &dyn FileSystem,
    dir: &Path,
    tmp: &Path,
    parts: mpsc::Receiver<Part<D>>,
    back: mpsc::Sender<(D, Bytes)>,
) -> Result<Files> {
    let mut out = Files::default();
    // Dropping `back` on return ends the describer, which waits for what comes back.
    let mut staging = Vec::new();
    for part in parts {
        let totals = &mut out.totals;
        totals.bytes_before += part.source.len() as u64;
        totals.counts.records_before += part.counts.records_before;
        totals.counts.records_after += part.counts.records_after;
        totals.counts.bytes_after += part.counts.bytes_after;
        if part.link {
            let name = part.start.clone().expect("a linked source starts its file");
            assert_eq!(part.counts.bytes_after, part.source.len() as u64);
            // The live directory's inode, already durable: a new name in the temp
            // dir, made durable by its fsync before the commit point (model (b)).
            write_link(fs, &dir.join(&name), &tmp.join(&name))?;
            let keys_name = keys_name(&name);
            debug_assert_eq!(
                fs.read_all(&dir.join(&keys_name))
                    .ok()
                    .and_then(|b| key_summary::decode(&b)),
                part.end.clone().flatten(),
                "a carried segment's summary is its own"
            );
            write_link(fs, &dir.join(&keys_name), &tmp.join(&keys_name))?;
            let (base, _) = filename::parse(&name).expect("a segment name");
            out.files.push(ManifestFile {
                name,
                bytes: part.counts.bytes_after,
                crc32c: part.crc32c,
            });
            out.carried_bases.push(base);
            out.carried_bytes += part.counts.bytes_after;
            let _ = back.send((part.described, part.source));
            continue;
        }
        if let Some(name) = part.start {
            let path = tmp.join(&name);
            fs.create_file(&path).map_err(|e| Error::io(&path, e))?;
            out.files.push(ManifestFile {
                name,
                bytes: 0,
                crc32c: 0,
            });
        }
        let file = out.files.last_mut().expect("the first part starts a file");
        let path = tmp.join(&file.name);
        append_runs(fs, &path, part.described.runs(), &part.source, &mut staging)?;
        file.bytes += part.counts.bytes_after;
        file.crc32c = part.crc32c;
        if let Some(summary) = part.end {
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
        // The describer may have stopped on an error: then they are dropped here.
        let _ = back.send((part.described, part.source));
    }
    Ok(out)
}

/// Appends `runs` (over `source`) to the output file `path`: one write per long
/// run, short runs gathered in `staging`.
fn append_runs(
    fs: &dyn FileSystem,
    path: &Path,
    runs: &Runs,
    source: &[u8],
    staging: &mut Vec<u8>,
) -> Result<()> {
    let write = |data: &[u8]| fs.append(path, data).map_err(|e| Error::io(path, e));
    staging.clear();
    for data in runs.runs(source) {
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
    Ok(())
}

/// Pairs the describer's output segments with the files written: one each, the
/// same bytes and name; their close-time index entries are in the entries (the
/// files are written whole), so nothing stays pending.
pub(super) fn settle(dir: &Path, segments: &mut [Segment], files: &[ManifestFile]) {
    assert_eq!(segments.len(), files.len());
    for (segment, file) in segments.iter_mut().zip(files) {
        assert_eq!(segment.bytes, file.bytes);
        assert_eq!(segment.paths.log, dir.join(&file.name));
        segment.pending_index.clear();
        segment.pending_time_index.clear();
    }
}

/// The `.keys` name beside the `.log` named `log_name`.
fn keys_name(log_name: &str) -> String {
    let (base, _) = filename::parse(log_name).expect("an output segment's name");
    filename::build(base, KEYS_SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::{build_with, Built, CleanOptions, CompactOptions, CompactionPolicy};
    use crate::format::{NewRecord, RecordBatch};
    use crate::fs::sim::SimFs;

    #[test]
    fn runs_are_written_in_order_small_ones_staged() {
        let fs = SimFs::new();
        let path = Path::new("/out.log");
        fs.create_dir_all(Path::new("/")).unwrap();
        fs.create_file(path).unwrap();
        let source: Vec<u8> = (0..3 * STAGING_BYTES).map(|i| (i % 251) as u8).collect();
        let (runs, expected) = crate::compaction::runs::sample(&source, STAGING_BYTES + 7);
        let before = fs.mutating_ops();
        let mut staging = Vec::new();
        append_runs(&fs, path, &runs, &source, &mut staging).unwrap();
        assert_eq!(fs.read_all(path).unwrap(), expected);
        // The two short runs before the long one go in one write, the long one on
        // its own, the last short one in a third.
        assert_eq!(fs.mutating_ops() - before, 3);
    }

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

    const POLICIES: [CompactionPolicy; 2] = [CompactionPolicy::Seed, CompactionPolicy::Kafka];

    fn build(fs: &SimFs, policy: CompactionPolicy) -> crate::error::Result<Option<Built>> {
        let clean = CleanOptions {
            policy,
            ..CleanOptions::default()
        };
        build_with(fs, Path::new("/log"), OPTIONS, clean)
    }

    #[test]
    fn every_failed_call_stops_the_build_with_its_error() {
        for policy in POLICIES {
            let fs = log();
            let first = fs.mutating_ops();
            let built = build(&fs, policy).unwrap().unwrap();
            assert!(
                built.report.segments_after >= 2,
                "{policy:?}: {:?}",
                built.report
            );
            assert!(built.report.records_after < built.report.records_before);
            let calls = fs.mutating_ops() - first;
            for k in first..first + calls {
                let fs = log();
                fs.fail_nth(k);
                let error = build(&fs, policy).unwrap_err();
                assert!(
                    error.to_string().contains("injected"),
                    "{policy:?}, call {k}: {error}"
                );
            }
        }
    }

    #[test]
    fn the_calls_do_not_depend_on_scheduling() {
        // A crash before call k leaves the same state whichever thread ran first.
        for policy in POLICIES {
            let fs = log();
            let first = fs.mutating_ops();
            build(&fs, policy).unwrap();
            for k in first..fs.mutating_ops() {
                let images: Vec<_> = (0..2)
                    .map(|_| {
                        let fs = log();
                        fs.set_crash_before(k);
                        assert!(build(&fs, policy).is_err());
                        (fs.snapshot(), fs.snapshot_dirs())
                    })
                    .collect();
                assert_eq!(images[0], images[1], "{policy:?}: crash before call {k}");
            }
        }
    }
}

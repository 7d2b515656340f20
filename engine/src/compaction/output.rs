//! The seed policy's compacted closed region, written into the temp directory by
//! the one writer (`super::writer`).
//!
//! The describing thread compacts each closed source segment ([`compact_segment`]),
//! places it in an output group ([`Grouper`]), indexes it and extends that output
//! file's CRC-32C; the writer makes every file-system call. The describer also
//! drops each source mapping once written.

use bytes::Bytes;
use std::path::Path;

use crate::error::Result;
use crate::format::filename::{self, LOG_SUFFIX};
use crate::format::key_summary::KeySummary;
use crate::format::manifest::ManifestFile;
use crate::fs::FileSystem;

use super::bitmap::Bitmap;
use super::carry::{self, SourceKeys};
use super::map::Superseded;
use super::rewrite::{compact_segment, Compacted, Cursor, Lookups, Rules};
use super::rules::seed::{Grouper, Horizon, Placement};
use super::writer::{settle, write_parts, Files, Part, Totals};
use crate::segment::files::segment_path;

use crate::segment::Segment;

/// What [`write_closed`] needs besides the file system and the directories.
#[derive(Debug)]
pub struct ClosedRegion<'a> {
    /// Base offsets of the closed segments, ascending.
    pub bases: &'a [i64],
    /// Their bytes as the scan checked them ([`super::pass::full::Scan::closed`]).
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
    /// One per closed segment when the pass is incremental ([`super::pass::incremental`]): the
    /// untouched ones are kept whole (hard-linked when alone in their group), and
    /// every output segment whose sources are all known gets a key summary
    /// (`.keys`). `None` (a full compaction): no summary, no carry.
    pub keys: Option<Vec<SourceKeys>>,
    /// The transaction rules' decisions ([`super::rules::txn`]), if any.
    pub txn: Option<&'a super::rules::txn::TxnPlan>,
    /// The clean section whose lookups the incremental pass left to the rewrite
    /// ([`Rules::lookups`]).
    pub lookups: Option<Lookups<'a>>,
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
        lookups,
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
        lookups,
    };
    let described = write_parts(
        fs,
        dir,
        tmp,
        move |job_tx, back_rx| -> Result<Vec<Segment>> {
            let mut segments: Vec<Segment> = Vec::new();
            let mut cursor = Cursor::default();
            let mut grouper = Grouper::new(segment_bytes);
            let mut spare = vec![Compacted::default(), Compacted::default()];
            let mut crc32c = 0;
            // Held back one source: whether it ends its group (and so may be linked)
            // is known once the next source is placed.
            let mut pending: Option<(Part<Compacted>, bool)> = None;
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
                if let Some((mut part, whole)) = pending.take() {
                    if start {
                        let done = segments.last().expect("a pending part has its segment");
                        part.end = Some(group_summary(keys.as_deref(), &group, done, part.crc32c));
                        part.link = whole;
                    }
                    if job_tx.send(part).is_err() {
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
                    // Checked against the whole source by `carry::verdict`.
                    Some(whole) if start => whole,
                    _ => compacted.crc32c_append(crc32c, &source),
                };
                pending = Some((
                    Part {
                        start: start.then(|| filename::build(base, LOG_SUFFIX)),
                        source,
                        described: compacted,
                        counts,
                        crc32c,
                        link: false,
                        end: None,
                    },
                    // An untouched source starting its group ([`SourceKeys::Untouched`]).
                    start && untouched.is_some(),
                ));
            }
            if let Some((mut part, whole)) = pending.take() {
                let done = segments.last().expect("a pending part has its segment");
                part.end = Some(group_summary(keys.as_deref(), &group, done, part.crc32c));
                part.link = whole;
                if job_tx.send(part).is_err() {
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
        },
    );
    let (
        Files {
            files,
            totals,
            carried_bases,
            carried_bytes,
        },
        mut segments,
    ) = described?;
    settle(dir, &mut segments, &files);
    Ok(Written {
        files,
        totals,
        segments,
        carried_segments: carried_bases.len() as u64,
        carried_bases,
        carried_bytes,
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

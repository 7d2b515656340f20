//! The map pass of an incremental cleaning (docs/design.md section 1, "Incremental
//! cleaning"): the offset map is built from the dirty section only, `[clean point,
//! next_offset)` with the active segment, whole batches while the distinct keys fit
//! the budget; then the clean section's records are looked up in it.
//!
//! The result has the shape of a full [`super::full::scan`], so the rewrite pass is
//! the same: superseded bits at the ordinals of the closed region's keyed records
//! (clean ones first, in offset order), plain-batch bits, the checked bytes; plus the
//! *horizon* `min(mapped end, first uncleanable offset)`, from which batches are kept
//! as they are and which becomes the new clean point.
//!
//! Reads: every dirty batch once (checked, parsed, hashed, inserted), and the clean
//! section's batches once (checked, parsed, hashed, looked up), the latter being the
//! part of the rewrite that a full scan's bitmap would have saved. A pass that
//! writes no key summary (`SummaryPlan::Skip`: every clean segment touched, so
//! every one is rewritten) leaves those lookups to the rewrite
//! ([`DirtyScan::lookups`]), which reads the clean section anyway: once in all.

use std::ops::ControlFlow;
use std::path::Path;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::format::filename::LOG_SUFFIX;
use crate::fs::FileSystem;

use super::full::Scan;
use crate::compaction::bitmap::Bitmap;
use crate::compaction::carry::{self, SourceKeys, SummaryPlan, Verdict};
use crate::compaction::map::{Digest, Digester, Fit, KeyFilter, Latest, Map, Superseded};
use crate::compaction::options::CleanOptions;
use crate::compaction::read::{self, Event, Input, Plan};
use crate::compaction::rules::seed::Horizon;
use crate::compaction::section::too_young;
use crate::segment::files::{map_segments, segment_path};

/// What the incremental map pass leaves for the rewrite pass.
#[derive(Debug)]
pub struct DirtyScan {
    /// What the map pass found (keys, superseded records) over the mapped region.
    pub scan: Scan,
    /// Batches at or past this offset are kept as they are; the new clean point.
    pub horizon: i64,
    /// The first offset the map did not cover.
    pub mapped_end: i64,
    /// One per closed segment: carried untouched (left out of the ordinals and
    /// batch numbers above), or read (its keys, for the output's key summary).
    pub keys: Vec<SourceKeys>,
    /// The dirty section's map and its keys' filter, when the clean section's
    /// lookups are left to the rewrite (`crate::compaction::rewrite::Lookups`,
    /// below the clean point): the ordinals, batch numbers and bits above then
    /// start at the clean point.
    pub lookups: Option<(Latest, KeyFilter)>,
}

/// One segment's bytes as the pass reads them.
struct Source<'a> {
    base: i64,
    bytes: &'a [u8],
    active: bool,
}

/// The incremental map pass over `dir` (`bases` ascending, the last one active) from
/// `clean_point` (a batch boundary in `[log start, active base]`), at `horizon.now`.
/// A clean segment whose key summary shows that no mapped key and no expired
/// tombstone can touch it (`carry::verdict`) is not read at all: the rewrite
/// keeps it whole (and may hard-link it). The output gets key summaries as
/// `SummaryPlan` says.
pub fn scan_dirty(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    clean_point: i64,
    horizon: Horizon,
    options: CleanOptions,
) -> Result<DirtyScan> {
    let closed = map_segments(fs, dir, &bases[..bases.len() - 1])?;
    scan_dirty_bounded(fs, dir, bases, closed, clean_point, horizon, options, None)
}

/// [`scan_dirty`] over the closed segments' bytes `closed` as the caller mapped
/// them (`map_segments`), reading only the first `active_len` bytes of the
/// active segment (a cleaner's snapshot: the map covers offsets below the
/// snapshot's `map_end`).
#[expect(
    clippy::too_many_arguments,
    reason = "the pass's inputs: the directory, its mapped segments, the clean point and the knobs"
)]
pub fn scan_dirty_bounded(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    closed: Vec<Bytes>,
    clean_point: i64,
    horizon: Horizon,
    options: CleanOptions,
    active_len: Option<u64>,
) -> Result<DirtyScan> {
    let now = horizon.now;
    let (&active_base, closed_bases) = bases.split_last().expect("a log has a segment");
    assert!(
        clean_point <= active_base,
        "the clean point never enters the active segment"
    );
    assert_eq!(closed.len(), closed_bases.len());
    let active = crate::compaction::source::read_active(fs, dir, active_base, active_len)?;
    let sources: Vec<Source<'_>> = closed_bases
        .iter()
        .zip(&closed)
        .map(|(&base, bytes)| Source {
            base,
            bytes,
            active: false,
        })
        .chain([Source {
            base: active_base,
            bytes: &active,
            active: true,
        }])
        .collect();
    // The first segment holding an offset at or after the clean point.
    let first_dirty = sources
        .iter()
        .rposition(|s| s.base <= clean_point)
        .unwrap_or(0);
    let mut map = Map::new(options.key_budget());
    let digester = map.digester();
    let mut source_keys: Vec<SourceKeys> = (0..closed.len()).map(|_| SourceKeys::read()).collect();
    let mut dirty_hashes = Vec::new();
    let mapped = map_dirty(
        dir,
        &sources[first_dirty..],
        clean_point,
        now,
        options.min_compaction_lag_ms,
        digester,
        &mut map,
        &mut Stable {
            dirty: &mut dirty_hashes,
            sources: source_keys.get_mut(first_dirty..).unwrap_or_default(),
        },
    )?;
    dirty_hashes.sort_unstable();
    dirty_hashes.dedup();
    // The segments wholly below the clean point that nothing mapped can touch.
    let verdicts = sources
        .iter()
        .take(first_dirty)
        .map(|source| carry::verdict(fs, dir, source.base, source.bytes, &dirty_hashes, horizon))
        .collect::<Result<Vec<Verdict>>>()?;
    let summaries = SummaryPlan::of(&verdicts);
    // Wholly clean segments without a summary that no mapped key has been found in.
    let mut unknown_untouched: Vec<bool> =
        verdicts.iter().map(|v| *v == Verdict::Unknown).collect();
    for (keys, verdict) in source_keys.iter_mut().zip(verdicts) {
        if let Verdict::Untouched(summary) = verdict {
            *keys = SourceKeys::Untouched(summary);
        }
    }
    if summaries == SummaryPlan::Skip {
        forget_read(&mut source_keys);
    }
    let next_offset = mapped.next_offset.unwrap_or(active_base).max(active_base);
    let mapped_end = mapped.stopped_at.unwrap_or(next_offset);
    let horizon = mapped_end.min(mapped.first_uncleanable.unwrap_or(active_base));
    // The clean section: its records are superseded exactly when the map holds their key.
    let mut bits = Bitmap::default();
    let mut plain = Bitmap::default();
    let mut ordinal = 0usize;
    let mut batch_index = 0usize;
    let clean_inputs: Vec<Input<'_>> = sources
        .iter()
        .zip(&source_keys)
        .enumerate()
        .take(first_dirty + 1)
        .filter(|(_, (s, keys))| !s.active && !matches!(keys, SourceKeys::Untouched(_)))
        .map(|(i, (s, _))| Input {
            source: i,
            base: s.base,
            bytes: s.bytes,
        })
        .collect();
    // Lookups by key need a map sorted for them (unbounded).
    let map = map.finish(!clean_inputs.is_empty());
    let keys = map.keys();
    // Most clean keys are not dirty: their stable hash's bit says so, without the
    // map's digest and search.
    let dirty = KeyFilter::of(&dirty_hashes);
    // Nothing carried and no summary written: the rewrite reads every clean
    // segment anyway, so it looks their records up as it goes ([`DirtyScan::lookups`])
    // and the clean section is read once. Otherwise a lookup pass reads it first.
    let deferred = summaries == SummaryPlan::Skip;
    if !deferred {
        let mut current = 0usize;
        read::each(
            dir,
            &clean_inputs,
            // Stable hashes for the filter, and the output's key summaries.
            &Plan::stable_keys(i64::MIN..clean_point, digester),
            |event, records| {
                match event {
                    Event::Segment { source, .. } => current = *source,
                    Event::Batch(batch) => {
                        let (control, keyless) = (batch.control, batch.keyless != 0);
                        let index = batch_index;
                        batch_index += 1;
                        if control {
                            return Ok(ControlFlow::Continue(()));
                        }
                        let mut read = match &mut source_keys[current] {
                            SourceKeys::Read(read) => Some(read),
                            _ => None,
                        };
                        for record in records {
                            if dirty.may_hold_hash(record.stable)
                                && map.contains(record.digest(&digester))
                            {
                                bits.set(ordinal);
                                if let Some(untouched) = unknown_untouched.get_mut(current) {
                                    *untouched = false;
                                }
                            }
                            ordinal += 1;
                            if let Some(read) = read.as_deref_mut() {
                                read.add_clean(
                                    record.stable,
                                    record.value_is_null,
                                    record.timestamp,
                                );
                            }
                        }
                        if !keyless && records.iter().all(|r| !r.value_is_null) {
                            plain.set(index);
                        }
                    }
                }
                Ok(ControlFlow::Continue(()))
            },
        )?;
        if !summaries.after_lookups(unknown_untouched.contains(&true)) {
            forget_read(&mut source_keys);
        }
    }
    // The dirty section's bits follow, shifted past the clean section's (from 0
    // when the rewrite does the lookups).
    for dirty in map.superseded().ones() {
        bits.set(ordinal + dirty);
    }
    for dirty in mapped.plain.ones() {
        plain.set(batch_index + dirty);
    }
    bits.shrink_to_fit();
    plain.shrink_to_fit();
    Ok(DirtyScan {
        scan: Scan {
            superseded: Superseded::from_parts(bits, keys, map.bytes(), map.peak_bytes()),
            closed,
            active,
            plain,
        },
        horizon,
        mapped_end,
        keys: source_keys,
        lookups: deferred.then_some((map, dirty)),
    })
}

/// The keys read of every segment forgotten: the output gets no key summaries
/// ([`SummaryPlan`]).
fn forget_read(source_keys: &mut [SourceKeys]) {
    for keys in source_keys {
        if matches!(keys, SourceKeys::Read(_)) {
            *keys = SourceKeys::Unknown;
        }
    }
}

/// What the map pass records for the key summaries: the stable hashes of the keys
/// it mapped, and per closed source segment from the first dirty one on, the keys
/// and tombstones it read (a segment it did not read to the end gets none).
struct Stable<'a> {
    dirty: &'a mut Vec<u64>,
    sources: &'a mut [SourceKeys],
}

/// The map pass alone (no clean-section lookups, nothing kept for a rewrite): the
/// distinct keys mapped and the mapped end. What `benches/cleaning.rs` times as the
/// incremental map pass, beside the full scan's.
pub fn map_pass(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    clean_point: i64,
    now: i64,
    options: CleanOptions,
) -> Result<(usize, Option<i64>)> {
    let (&active_base, _) = bases.split_last().expect("a log has a segment");
    let first_dirty = bases.iter().rposition(|&b| b <= clean_point).unwrap_or(0);
    let mut bytes = map_segments(fs, dir, &bases[first_dirty..bases.len() - 1])?;
    let active = segment_path(dir, active_base, LOG_SUFFIX);
    bytes.push(Bytes::from(
        fs.read_all(&active).map_err(|e| Error::io(&active, e))?,
    ));
    let sources: Vec<Source<'_>> = bases[first_dirty..]
        .iter()
        .zip(&bytes)
        .map(|(&base, bytes)| Source {
            base,
            bytes,
            active: base == active_base,
        })
        .collect();
    let mut map = Map::new(options.key_budget());
    let digester = map.digester();
    let mapped = map_dirty(
        dir,
        &sources,
        clean_point,
        now,
        options.min_compaction_lag_ms,
        digester,
        &mut map,
        &mut Stable {
            dirty: &mut Vec::new(),
            sources: &mut [],
        },
    )?;
    Ok((map.finish(false).keys(), mapped.stopped_at))
}

/// What [`map_dirty`] found.
struct Mapped {
    /// The batch that did not fit the map, if one did not.
    stopped_at: Option<i64>,
    /// The first closed segment too young to clean (lag), among those read.
    first_uncleanable: Option<i64>,
    /// The offset after the last batch read, if the pass read to the end.
    next_offset: Option<i64>,
    /// Plain bits of the dirty closed batches, from 0.
    plain: Bitmap,
}

/// Inserts the dirty section's keyed records (ordinals from 0) into `map`, whole
/// batches while their new keys fit; `stable` receives their stable hashes.
#[expect(
    clippy::too_many_arguments,
    reason = "one pass over the dirty section; the arguments are its inputs and outputs"
)]
fn map_dirty(
    dir: &Path,
    sources: &[Source<'_>],
    clean_point: i64,
    now: i64,
    min_compaction_lag_ms: i64,
    digester: Digester,
    map: &mut Map,
    stable: &mut Stable<'_>,
) -> Result<Mapped> {
    let mut mapped = Mapped {
        stopped_at: None,
        first_uncleanable: None,
        next_offset: None,
        plain: Bitmap::default(),
    };
    let mut ordinal = 0i64;
    let mut batch_index = 0usize;
    let (mut digests, mut fresh): (Vec<Digest>, Vec<Digest>) = (Vec::new(), Vec::new());
    let inputs: Vec<Input<'_>> = sources
        .iter()
        .enumerate()
        .map(|(i, s)| Input {
            source: i,
            base: s.base,
            bytes: s.bytes,
        })
        .collect();
    // The segment being read, and where it ends once read to its end.
    let mut current = 0usize;
    let mut reading_ends_at = None;
    let mut stopped = false;
    read::each(
        dir,
        &inputs,
        &Plan::stable_keys(clean_point..i64::MAX, digester),
        |event, records| {
            match *event {
                Event::Segment {
                    source,
                    next_offset,
                    max_timestamp,
                } => {
                    if let Some(end) = reading_ends_at.take() {
                        mapped.next_offset = Some(end);
                    }
                    let segment = &sources[source];
                    if !segment.active
                        && mapped.first_uncleanable.is_none()
                        && too_young(
                            next_offset,
                            max_timestamp,
                            clean_point,
                            now,
                            min_compaction_lag_ms,
                        )
                    {
                        mapped.first_uncleanable = Some(segment.base);
                    }
                    current = source;
                    reading_ends_at = Some(next_offset);
                }
                Event::Batch(ref batch) => {
                    let (base_offset, control) = (batch.base_offset, batch.control);
                    let keyless = batch.keyless != 0;
                    let i = current;
                    let active = sources[i].active;
                    let index = batch_index;
                    if !active {
                        batch_index += 1;
                    }
                    if control {
                        return Ok(ControlFlow::Continue(()));
                    }
                    digests.clear();
                    digests.extend(records.iter().map(|r| r.digest(&digester)));
                    match map.fits(&digests, &mut fresh) {
                        Fit::Yes => {}
                        Fit::Never(new_keys) => {
                            return Err(Error::InvalidArgument(format!(
                                "the offset map holds {} keys (dedupe_buffer_bytes); batch {} of {} alone has {}",
                                map.room(),
                                base_offset,
                                segment_path(dir, sources[i].base, LOG_SUFFIX).display(),
                                new_keys
                            )));
                        }
                        Fit::Stop => {
                            mapped.stopped_at = Some(base_offset);
                            // Not read to their end: no summary for them.
                            for keys in stable.sources.iter_mut().skip(i) {
                                *keys = SourceKeys::Unknown;
                            }
                            stopped = true;
                            return Ok(ControlFlow::Break(()));
                        }
                    }
                    for &digest in &digests {
                        map.insert(digest, ordinal);
                        ordinal += 1;
                    }
                    stable.dirty.extend(records.iter().map(|r| r.stable));
                    if let Some(SourceKeys::Read(read)) = stable.sources.get_mut(i) {
                        for record in records {
                            read.add(record.stable, record.value_is_null, record.timestamp);
                        }
                    }
                    if !active && !keyless && records.iter().all(|r| !r.value_is_null) {
                        mapped.plain.set(index);
                    }
                }
            }
            Ok(ControlFlow::Continue(()))
        },
    )?;
    if !stopped {
        if let Some(end) = reading_ends_at {
            mapped.next_offset = Some(end);
        }
    }
    Ok(mapped)
}

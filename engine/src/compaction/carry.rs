//! Carried segments ("beyond Kafka"): a clean segment that no key of the
//! pass's map and no expired tombstone can touch is kept whole, and when it forms
//! an output segment on its own it is hard-linked into the temp dir instead of
//! rewritten (docs/design.md section 6, "Carried segments"; model (b), variants
//! `carry-by-rename` and `link-without-dir-sync` refuted).
//!
//! The rule is exact, not a heuristic: below the horizon a clean record is dropped
//! only when the map holds its key (the clean section holds one record per key, so
//! nothing else supersedes it) or it is a tombstone past `delete_retention_ms`. A
//! segment whose summary shares no key hash with the map and whose oldest tombstone
//! is within the grace keeps every record, so its compacted form is its own bytes
//! (a fully kept batch is copied as stored), exactly what the spec gives.

use std::path::Path;

use crate::error::Result;
use crate::format::filename::{KEYS_SUFFIX, LOG_SUFFIX};
use crate::format::key_summary::{self, KeySummary, NO_TOMBSTONE};
use crate::fs::FileSystem;

use super::rules::seed::Horizon;
use crate::segment::files::segment_path;

/// How the pass treats one closed source segment, for the rewrite and for the
/// output's key summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceKeys {
    /// Kept whole, never read by the pass: its summary, checked against its bytes.
    Untouched(KeySummary),
    /// Read by the pass (and rewritten): its keys and tombstones.
    Read(ReadKeys),
    /// Not read to its end (past the mapped end) or not read by this kind of pass:
    /// its output gets no summary, so the next pass rewrites it.
    Unknown,
}

impl SourceKeys {
    /// A segment about to be read, nothing seen yet.
    pub fn read() -> SourceKeys {
        SourceKeys::Read(ReadKeys::default())
    }
}

/// The keys and the oldest tombstone of the records a pass read from one segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadKeys {
    /// [`key_summary::key_hash`] of every keyed record of a data batch below the
    /// clean point, in offset order (the map pass's ordinals: they come first).
    pub clean_hashes: Vec<u64>,
    /// The same for the records at or past the clean point.
    pub hashes: Vec<u64>,
    /// The oldest keyed tombstone's timestamp ([`NO_TOMBSTONE`]: none).
    pub tombstone_ts_min: i64,
}

impl Default for ReadKeys {
    fn default() -> Self {
        ReadKeys {
            clean_hashes: Vec::new(),
            hashes: Vec::new(),
            tombstone_ts_min: NO_TOMBSTONE,
        }
    }
}

impl ReadKeys {
    /// One keyed record of a data batch at or past the clean point.
    pub fn add(&mut self, hash: u64, value_is_null: bool, timestamp: i64) {
        self.hashes.push(hash);
        self.note(value_is_null, timestamp);
    }

    /// One keyed record of a data batch below the clean point.
    pub fn add_clean(&mut self, hash: u64, value_is_null: bool, timestamp: i64) {
        self.clean_hashes.push(hash);
        self.note(value_is_null, timestamp);
    }

    fn note(&mut self, value_is_null: bool, timestamp: i64) {
        if value_is_null {
            self.tombstone_ts_min = self.tombstone_ts_min.min(timestamp);
        }
    }

    /// Keeps the hashes of the records the rewrite keeps: the `numbered` first ones
    /// (in offset order) are kept where `dropped(i)` is false, the rest (past the
    /// horizon, kept as they are) all. A dropped expired tombstone may stay in the
    /// tombstone bound: a lower bound only makes a carry less likely.
    pub fn retain_kept(&mut self, numbered: usize, dropped: impl Fn(usize) -> bool) {
        let mut all = std::mem::take(&mut self.clean_hashes);
        all.append(&mut self.hashes);
        assert!(
            numbered <= all.len(),
            "{numbered} numbered of {}",
            all.len()
        );
        let mut i = 0;
        all.retain(|_| {
            let keep = i >= numbered || !dropped(i);
            i += 1;
            keep
        });
        self.hashes = all;
    }
}

/// True if a tombstone with this timestamp is past the grace at `horizon` (the
/// rule of `rules::seed::decide_tail`; monotone in the timestamp, so the oldest one
/// decides a segment).
pub fn tombstone_expired(timestamp: i64, horizon: Horizon) -> bool {
    horizon.expired(timestamp)
}

/// The pure carry rule: a segment described by `summary` keeps every record when
/// no key hash of `dirty` (ascending) is in it and no tombstone in it has expired.
pub fn keeps_everything(summary: &KeySummary, dirty: &[u64], horizon: Horizon) -> bool {
    !summary.touched_by(dirty)
        && (summary.tombstone_ts_min == NO_TOMBSTONE
            || !tombstone_expired(summary.tombstone_ts_min, horizon))
}

/// What a clean segment's key summary tells a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Untouched: a `.keys` file that decodes, names this segment, matches its
    /// length and the CRC-32C of its bytes, and passes [`keeps_everything`]. The
    /// segment is kept whole.
    Untouched(KeySummary),
    /// A summary that decodes, names this segment and matches its length, and
    /// that this pass's keys (or an expired tombstone) touch: the segment is read
    /// and rewritten. Its bytes are not checked against it (that would read the
    /// whole segment); the verdict only steers whether the output gets summaries
    /// ([`SummaryPlan`]).
    Touched,
    /// No summary to go by (no file, damage, another segment's summary, a changed
    /// segment): the segment is read and rewritten.
    Unknown,
}

/// What a clean segment's summary says of the clean segment at `base` (its bytes
/// `bytes`) for a pass whose mapped keys' stable hashes are `dirty` (ascending).
pub fn verdict(
    fs: &dyn FileSystem,
    dir: &Path,
    base: i64,
    bytes: &[u8],
    dirty: &[u64],
    horizon: Horizon,
) -> Result<Verdict> {
    let path = segment_path(dir, base, KEYS_SUFFIX);
    // At most one key per record, and a record takes at least RECORD_BYTES_MIN of
    // the segment: a larger summary is not read (and the segment is rewritten).
    let keys_max = bytes.len() / crate::format::batch_view::RECORD_BYTES_MIN + 1;
    let Ok(Some(raw)) = crate::fs::read_bounded(fs, &path, key_summary::bytes_max(keys_max)) else {
        return Ok(Verdict::Unknown);
    };
    let Some(summary) = key_summary::decode(&raw) else {
        return Ok(Verdict::Unknown);
    };
    if summary.base_offset != base || summary.segment_bytes != bytes.len() as u64 {
        return Ok(Verdict::Unknown);
    }
    if !keeps_everything(&summary, dirty, horizon) {
        return Ok(Verdict::Touched);
    }
    // Last, as it reads the whole segment: the bytes are the ones summarised.
    if crate::format::crc::crc32c(bytes) != summary.segment_crc32c {
        return Ok(Verdict::Unknown);
    }
    debug_assert!(
        fs.exists(&segment_path(dir, base, LOG_SUFFIX)),
        "a summary is read beside its segment"
    );
    Ok(Verdict::Untouched(summary))
}

/// Whether a pass gives its output segments key summaries. They cost a stable
/// hash of every key read, a sort and a `.keys` file per output segment, and pay
/// only when a later pass can carry a segment: when the dirty keys leave some
/// clean segment untouched. Scattered dirt (every clean segment touched) makes
/// them pure cost, and such a pass writes none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryPlan {
    /// Write them: the pass carries a segment, or it has no clean segment to
    /// judge by (a first pass).
    Write,
    /// Write none: every clean segment has a summary and this pass touches them
    /// all. The clean section is read once, by the rewrite, which looks its keys
    /// up as it writes (`super::rewrite::Lookups`): no stable hashes.
    Skip,
    /// Some clean segments have no summary and none is carried: write them only
    /// if the pass's lookups find one of those segments untouched by the mapped
    /// keys ([`SummaryPlan::after_lookups`]).
    IfUntouched,
}

impl SummaryPlan {
    /// The plan of a pass whose wholly clean segments got `verdicts`.
    pub fn of<'a>(verdicts: impl IntoIterator<Item = &'a Verdict>) -> SummaryPlan {
        let (mut segments, mut touched) = (0usize, 0usize);
        for verdict in verdicts {
            segments += 1;
            match verdict {
                Verdict::Untouched(_) => return SummaryPlan::Write,
                Verdict::Touched => touched += 1,
                Verdict::Unknown => {}
            }
        }
        if segments == 0 {
            SummaryPlan::Write
        } else if touched == segments {
            SummaryPlan::Skip
        } else {
            SummaryPlan::IfUntouched
        }
    }

    /// Whether the output gets summaries, once the lookups found which clean
    /// segments without a summary the mapped keys touched (`untouched_unknown`:
    /// some of them not at all).
    pub fn after_lookups(self, untouched_unknown: bool) -> bool {
        match self {
            SummaryPlan::Write => true,
            SummaryPlan::Skip => false,
            SummaryPlan::IfUntouched => untouched_unknown,
        }
    }
}

/// The key summary of an output segment (`base`, `bytes` long, CRC-32C `crc32c`)
/// made of sources whose keys are `parts`; `None` if one of them is unknown.
pub fn output_summary<'a>(
    base: i64,
    bytes: u64,
    crc32c: u32,
    parts: impl IntoIterator<Item = &'a SourceKeys>,
) -> Option<KeySummary> {
    let mut summary = KeySummary {
        base_offset: base,
        segment_bytes: bytes,
        segment_crc32c: crc32c,
        tombstone_ts_min: NO_TOMBSTONE,
        key_hashes: Vec::new(),
    };
    for part in parts {
        let (hashes, ts_min) = match part {
            SourceKeys::Untouched(s) => (&s.key_hashes, s.tombstone_ts_min),
            SourceKeys::Read(r) => {
                summary.key_hashes.extend_from_slice(&r.clean_hashes);
                (&r.hashes, r.tombstone_ts_min)
            }
            SourceKeys::Unknown => return None,
        };
        summary.key_hashes.extend_from_slice(hashes);
        summary.tombstone_ts_min = summary.tombstone_ts_min.min(ts_min);
    }
    summary.key_hashes.sort_unstable();
    summary.key_hashes.dedup();
    Some(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::key_summary::key_hash;

    const HORIZON: Horizon = Horizon {
        now: 2000,
        delete_retention_ms: 1000,
    };

    fn summary(keys: &[&[u8]], tombstone_ts_min: i64) -> KeySummary {
        output_summary(
            0,
            0,
            0,
            [&SourceKeys::Read(ReadKeys {
                hashes: keys.iter().map(|k| key_hash(k)).collect(),
                tombstone_ts_min,
                ..ReadKeys::default()
            })],
        )
        .expect("known")
    }

    fn sorted(keys: &[&[u8]]) -> Vec<u64> {
        let mut v: Vec<u64> = keys.iter().map(|k| key_hash(k)).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn a_shared_key_or_an_expired_tombstone_means_rewrite() {
        let s = summary(&[b"a", b"b", b"a"], NO_TOMBSTONE);
        assert_eq!(s.key_hashes.len(), 2, "deduplicated");
        assert!(keeps_everything(&s, &sorted(&[b"c", b"d"]), HORIZON));
        assert!(!keeps_everything(&s, &sorted(&[b"c", b"b"]), HORIZON));
        // A tombstone exactly at the grace is kept (age 1000 is not > 1000); one
        // millisecond older is dropped, so the segment must be rewritten.
        assert!(keeps_everything(&summary(&[b"a"], 1000), &[], HORIZON));
        assert!(!keeps_everything(&summary(&[b"a"], 999), &[], HORIZON));
        assert!(tombstone_expired(i64::MIN, HORIZON));
    }

    /// A `.keys` file whose own CRC is wrong is never trusted: with the intact file
    /// a segment no dirty key touches is untouched (carried), and after any single
    /// bit flip of the file it is read. A flip in a key hash is the hazard: the
    /// summary would hide a key the pass must drop (the dirty set holds `b`).
    #[test]
    fn a_summary_whose_own_crc_is_wrong_is_never_trusted() {
        use crate::fs::sim::SimFs;
        let fs = SimFs::new();
        let dir = Path::new("/log");
        fs.create_dir_all(dir).unwrap();
        let base = 100;
        let bytes: Vec<u8> = (0..=255u8).cycle().take(300).collect();
        fs.write_new(&segment_path(dir, base, LOG_SUFFIX), &bytes)
            .unwrap();
        let s = KeySummary {
            base_offset: base,
            segment_bytes: bytes.len() as u64,
            segment_crc32c: crate::format::crc::crc32c(&bytes),
            ..summary(&[b"a", b"b"], NO_TOMBSTONE)
        };
        let encoded = key_summary::encode(&s);
        let keys = segment_path(dir, base, KEYS_SUFFIX);
        let untouched_with = |file: &[u8], dirty: &[u64]| {
            if fs.exists(&keys) {
                fs.remove_file(&keys).unwrap();
            }
            fs.write_new(&keys, file).unwrap();
            verdict(&fs, dir, base, &bytes, dirty, HORIZON).unwrap()
        };
        let (clean, touching) = (sorted(&[b"c"]), sorted(&[b"b", b"c"]));
        assert_eq!(
            untouched_with(&encoded, &clean),
            Verdict::Untouched(s.clone())
        );
        assert_eq!(untouched_with(&encoded, &touching), Verdict::Touched);
        for i in 0..encoded.len() {
            for bit in 0..8 {
                let mut flipped = encoded.clone();
                flipped[i] ^= 1 << bit;
                for dirty in [&clean, &touching] {
                    let carried = untouched_with(&flipped, dirty);
                    assert!(
                        !matches!(carried, Verdict::Untouched(_)),
                        "flip of bit {bit} at {i}, dirty {dirty:?}"
                    );
                }
            }
        }
    }

    /// Summaries are written unless every clean segment has one and the pass
    /// touches them all, or the lookups find every summary-less one touched.
    #[test]
    fn summaries_are_planned_from_the_verdicts() {
        let untouched = Verdict::Untouched(summary(&[b"a"], NO_TOMBSTONE));
        let (touched, unknown) = (Verdict::Touched, Verdict::Unknown);
        assert_eq!(SummaryPlan::of([]), SummaryPlan::Write);
        assert_eq!(SummaryPlan::of([&touched, &untouched]), SummaryPlan::Write);
        assert_eq!(SummaryPlan::of([&untouched, &unknown]), SummaryPlan::Write);
        assert_eq!(SummaryPlan::of([&touched, &touched]), SummaryPlan::Skip);
        assert_eq!(
            SummaryPlan::of([&touched, &unknown]),
            SummaryPlan::IfUntouched
        );
        assert_eq!(SummaryPlan::of([&unknown]), SummaryPlan::IfUntouched);
        for found in [false, true] {
            assert!(SummaryPlan::Write.after_lookups(found));
            assert!(!SummaryPlan::Skip.after_lookups(found));
            assert_eq!(SummaryPlan::IfUntouched.after_lookups(found), found);
        }
    }

    #[test]
    fn an_unknown_part_gives_no_summary() {
        let read = SourceKeys::read();
        assert!(output_summary(5, 1, 2, [&read]).is_some());
        assert!(output_summary(5, 1, 2, [&read, &SourceKeys::Unknown]).is_none());
        let mut r = ReadKeys::default();
        r.add(1, false, 10);
        r.add(2, true, 50);
        r.add(3, true, 40);
        assert_eq!(r.tombstone_ts_min, 40);
        r.add_clean(7, false, 0);
        r.add_clean(8, false, 0);
        // Offset order: the clean ones first; 2 of the 5 numbered, the rest past
        // the horizon.
        r.retain_kept(2, |i| i == 0);
        assert_eq!(r.hashes, [8, 1, 2, 3]);
        assert!(r.clean_hashes.is_empty());
    }
}

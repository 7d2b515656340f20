//! The damage class `vanished_segment`: a world that deletes and cuts. For every
//! closed segment of the live directory: its files removed (all of them, or the
//! `.log` only), its `.log` cut at every batch boundary (0 included: emptied), its
//! `.log` replaced by a directory; each with the recovery point and the
//! clean-shutdown marker as they are, without the marker, without the point, and
//! without both (docs/design.md section 8, "Damaged data").
//!
//! Invariants checked: an open that loses records is a refusal naming the segment
//! (`CorruptKind::SegmentsLost`) that changes nothing beyond the protocol
//! recoveries, or a named loss (`report.lost`); never a silent open, unless no
//! durable record of the log can reveal the loss: no CRC-valid recovery point that
//! describes the directory summarizes the segment at or above the durable start
//! (counted as `undetectable`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::sweep::{self, LOG_DIR};
use crate::workload::engine;
use seglog::error::{CorruptKind, Error};
use seglog::format::filename;
use seglog::format::recovery_point::{self, SegmentSummary, SummaryKind};
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::log::LogConfig;
use seglog::segment::{list_segments, segment_path};

use super::case::Outcome;
use super::opens::Opening;
use super::plan::batch_ranges;
use super::points::Point;

/// What happens to the segment's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vanish {
    /// Every file of the segment removed.
    Removed,
    /// The `.log` removed, its index files left.
    LogRemoved,
    /// The `.log` cut to this many bytes (a batch boundary; 0: emptied).
    Cut(u64),
    /// The `.log` replaced by a directory.
    Directory,
}

/// Which of the trust files the damaged image keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Both,
    NoMarker,
    NoPoint,
    Neither,
}

/// One planned damage.
#[derive(Debug, Clone)]
pub struct VanishCase {
    pub base: i64,
    pub vanish: Vanish,
    pub keep: Keep,
    /// A durable log start moved inside the segment first (a retention that
    /// advanced the start into its middle): the segment still holds offsets at or
    /// above it, so its loss counts.
    pub start: Option<i64>,
}

impl Keep {
    /// The checkpoint files this choice removes from the image.
    fn removed(self) -> &'static [&'static str] {
        match self {
            Keep::Both => &[],
            Keep::NoMarker => &[recovery_point::CLEAN_SHUTDOWN_NAME],
            Keep::NoPoint => &[recovery_point::RECOVERY_POINT_NAME],
            Keep::Neither => &[
                recovery_point::CLEAN_SHUTDOWN_NAME,
                recovery_point::RECOVERY_POINT_NAME,
            ],
        }
    }
}

impl VanishCase {
    /// Where, for reports.
    pub fn label(&self) -> String {
        let what = match self.vanish {
            Vanish::Removed => "remove the segment".to_string(),
            Vanish::LogRemoved => "remove the .log".to_string(),
            Vanish::Cut(0) => "empty the .log".to_string(),
            Vanish::Cut(len) => format!("cut the .log at batch boundary {len}"),
            Vanish::Directory => "replace the .log by a directory".to_string(),
        };
        match self.start {
            Some(start) => format!(
                "{what}, keep {:?}, durable start {start} inside it",
                self.keep
            ),
            None => format!("{what}, keep {:?}", self.keep),
        }
    }
}

/// The damages of `image`: every closed live segment, every way, every keep.
pub fn plan(image: &SimFs) -> Vec<VanishCase> {
    let live = Path::new(LOG_DIR);
    let Ok(bases) = list_segments(image, live) else {
        return Vec::new();
    };
    let keeps: Vec<Keep> = [Keep::Both, Keep::NoMarker, Keep::NoPoint, Keep::Neither]
        .into_iter()
        .filter(|keep| {
            keep.removed()
                .iter()
                .all(|name| image.exists(&live.join(name)))
        })
        .collect();
    let mut out = Vec::new();
    for &base in bases.iter().take(bases.len().saturating_sub(1)) {
        let log = segment_path(live, base, filename::LOG_SUFFIX);
        let Ok(bytes) = image.read_all(&log) else {
            continue;
        };
        let mut vanishes = vec![Vanish::Removed, Vanish::LogRemoved, Vanish::Directory];
        vanishes.extend(
            batch_ranges(&bytes)
                .into_iter()
                .map(|(start, _)| Vanish::Cut(start)),
        );
        for vanish in vanishes {
            for &keep in &keeps {
                out.push(VanishCase {
                    base,
                    vanish,
                    keep,
                    start: None,
                });
            }
        }
    }
    // The first segment with a durable start in its middle: removed, or cut at
    // its first batch boundary, with both trust files kept.
    if let Some(start) = bases
        .first()
        .filter(|_| bases.len() > 1)
        .and_then(|base| start_inside(image, *base))
    {
        let base = bases[0];
        for vanish in [Vanish::Removed, Vanish::Cut(0)] {
            out.push(VanishCase {
                base,
                vanish,
                keep: Keep::Both,
                start: Some(start),
            });
        }
    }
    out
}

/// An offset in the middle of the segment at `base` (the base offset of its last
/// batch, or of its last record) above the durable start the image has, if the
/// segment holds two offsets or more.
fn start_inside(image: &SimFs, base: i64) -> Option<i64> {
    let live = Path::new(LOG_DIR);
    let bytes = image
        .read_all(&segment_path(live, base, filename::LOG_SUFFIX))
        .ok()?;
    let headers: Vec<_> = batch_ranges(&bytes)
        .into_iter()
        .filter_map(|(start, end)| {
            seglog::format::batch::decode_header(&bytes[start as usize..end as usize]).ok()
        })
        .collect();
    let (first, last) = (headers.first()?, headers.last()?);
    let middle = if last.base_offset > first.base_offset {
        last.base_offset
    } else {
        last.last_offset()
    };
    let durable = seglog::retention::read_checkpoint(image, live)
        .ok()
        .flatten()
        .unwrap_or(i64::MIN);
    (middle > first.base_offset && middle > durable).then_some(middle)
}

/// `image` with `case` applied.
fn apply(image: &SimFs, case: &VanishCase) -> std::io::Result<SimFs> {
    let fs = sweep::duplicate(image);
    let live = Path::new(LOG_DIR);
    let log = segment_path(live, case.base, filename::LOG_SUFFIX);
    match case.vanish {
        Vanish::Removed => {
            let stem = filename::build(case.base, "");
            for name in fs.list_dir(live)? {
                if name.starts_with(&stem) {
                    fs.remove_file(&live.join(name))?;
                }
            }
        }
        Vanish::LogRemoved => fs.remove_file(&log)?,
        Vanish::Cut(len) => fs.set_len(&log, len)?,
        Vanish::Directory => {
            fs.remove_file(&log)?;
            fs.create_dir_all(&log)?;
        }
    }
    if let Some(start) = case.start {
        let path = live.join(seglog::format::checkpoint::CHECKPOINT_NAME);
        fs.write_new(&path, &seglog::format::checkpoint::encode(start))?;
    }
    for name in case.keep.removed() {
        let path = live.join(name);
        if fs.exists(&path) {
            fs.remove_file(&path)?;
        }
    }
    Ok(fs)
}

/// True if a durable record of the damaged image reveals that records of the
/// segment at `base` are gone: a CRC-valid recovery point that summarizes every
/// segment file below its point summarizes `base`, at or above the start
/// checkpoint, with more offsets than the file's batches still hold.
fn revealed(fs: &SimFs, case: &VanishCase) -> bool {
    let live = Path::new(LOG_DIR);
    let Ok(bytes) = fs.read_all(&live.join(recovery_point::RECOVERY_POINT_NAME)) else {
        return false;
    };
    let Ok(file) = recovery_point::decode(SummaryKind::RecoveryPoint, &bytes) else {
        return false;
    };
    let summaries: BTreeMap<i64, SegmentSummary> = file
        .summaries
        .iter()
        .filter(|s| s.base_offset < file.point)
        .map(|s| (s.base_offset, *s))
        .collect();
    let Some(summary) = summaries.get(&case.base) else {
        return false;
    };
    let bases = list_segments(fs, live).unwrap_or_default();
    let covers = bases
        .iter()
        .filter(|b| !fs.is_dir(&segment_path(live, **b, filename::LOG_SUFFIX)))
        .take_while(|b| **b < file.point)
        .all(|b| summaries.contains_key(b));
    let start = seglog::retention::read_checkpoint(fs, live).ok().flatten();
    let counted = start.is_none_or(|start| summary.next_offset > start);
    let lost = match case.vanish {
        Vanish::Cut(len) => len < summary.bytes,
        Vanish::Removed | Vanish::LogRemoved | Vanish::Directory => true,
    };
    covers && counted && lost
}

/// Opens the damaged image by every open kind (writable, checked, read-only) and
/// judges each; `Err` is a violation.
pub fn judge(config: &LogConfig, point: &Point, case: &VanishCase) -> Result<Outcome, String> {
    let mut outcome = Outcome::Recovered;
    for opening in Opening::ALL {
        let judged = judge_open(config, point, case, opening)
            .map_err(|e| format!("{opening:?} open: {e}"))?;
        if opening == Opening::Writable {
            outcome = judged;
        }
    }
    Ok(outcome)
}

fn judge_open(
    config: &LogConfig,
    point: &Point,
    case: &VanishCase,
    opening: Opening,
) -> Result<Outcome, String> {
    let image = apply(&point.image, case).map_err(|e| format!("cannot apply: {e}"))?;
    let revealed = revealed(&image, case);
    let fs = Arc::new(image);
    let before = fs.snapshot();
    let ops = fs.mutating_ops();
    let segment = filename::build(case.base, filename::LOG_SUFFIX);
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let opened = opening.open(dyn_fs, config);
    if opening == Opening::ReadOnly && fs.mutating_ops() != ops {
        return Err("a read-only open changed the directory".into());
    }
    match opened {
        Err(error) => {
            let named = match &error {
                Error::Corrupt {
                    kind: CorruptKind::SegmentsLost { lost },
                    ..
                } => lost.iter().any(|l| l.segment == segment),
                // A directory where a segment file must be: the protocol recoveries
                // (retention's, removing a segment below the start) meet it first.
                Error::Corrupt { path, .. } | Error::Io { path, .. } => {
                    path.file_name() == Some(segment.as_ref())
                }
                Error::Ambiguous { .. } => point.install_pending,
                _ => false,
            };
            if !named {
                return Err(format!("the error does not name {segment}: {error}"));
            }
            // Nothing changed beyond what the protocol recoveries do.
            let image = apply(&point.image, case).map_err(|e| format!("cannot apply: {e}"))?;
            let protocol = super::case::protocol_recovered(image);
            if protocol.snapshot() != fs.snapshot() && before != fs.snapshot() {
                return Err(format!("the refusal changed files: {error}"));
            }
            Ok(Outcome::Error)
        }
        Ok((log, report)) => {
            if report.lost.iter().any(|l| l.segment == segment) {
                return Ok(Outcome::Recovered);
            }
            let view = engine::view(&log)
                .map_err(|e| format!("the open succeeded and a read failed: {e}"))?;
            if opening != Opening::Checked {
                // A checked open ignores the hints because it was asked to.
                let dir = super::case::dir_of(super::case::origin(&report));
                super::hints::check_reported(&before, &dir, &report, &view)?;
            }
            // Every record there (a segment that held no offset, an empty one a
            // compaction left, may go: only the segment list differs).
            let records_kept = point.allowed.iter().any(|allowed| {
                allowed.records == view.records
                    && allowed.log_start_offset == view.log_start_offset
                    && allowed.next_offset == view.next_offset
            });
            if records_kept {
                return Ok(Outcome::Recovered);
            }
            if revealed {
                return Err(format!(
                    "a silent open: the recovery point summarizes {segment} and the log \
                     was served without its records ({} records, next offset {})",
                    view.records.len(),
                    view.next_offset
                ));
            }
            Ok(Outcome::Undetectable)
        }
    }
}

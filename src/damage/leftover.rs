//! The damage class `kafka_leftover`: the files Kafka's cleaner and its
//! asynchronous deletion leave when a broker stops mid-way, placed beside the real
//! segments of each point's image, and every open kind held to the rules the
//! engine states for them as Kafka's `LogLoader` judges them
//! (`seglog::log::leftovers`):
//! * `NNN.log.swap`, a copy beside the segment's `.log` or its only copy (the
//!   `.log` renamed): every open refuses with `Ambiguous` naming the swap file and
//!   changes nothing beyond the protocol recoveries;
//! * `NNN.log.cleaned` and `NNN.log.deleted`: every open lists the file in
//!   `removed_files` and serves the log the point allows; a writable open removes
//!   it, a read-only open changes nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::sweep::{self, LOG_DIR};
use crate::workload::engine;
use seglog::error::Error;
use seglog::format::filename;
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::log::Leftover;
use seglog::log::LogConfig;
use seglog::segment::{list_segments, segment_path};

use super::case::Outcome;
use super::opens::Opening;
use super::points::Point;

/// One planned leftover.
#[derive(Debug, Clone)]
pub struct LeftoverCase {
    /// The segment whose `.log` the leftover copies.
    pub base: i64,
    pub kind: Leftover,
    /// The `.log` itself renamed to the leftover's name (a swap's only copy).
    pub only_copy: bool,
}

impl LeftoverCase {
    /// The leftover's file name.
    pub fn name(&self) -> String {
        let suffix = match self.kind {
            Leftover::Swap => "swap",
            Leftover::Cleaned => "cleaned",
            Leftover::Deleted => "deleted",
        };
        format!(
            "{}.{suffix}",
            filename::build(self.base, filename::LOG_SUFFIX)
        )
    }

    /// Where, for reports.
    pub fn label(&self) -> String {
        if self.only_copy {
            format!("rename the .log to {}", self.name())
        } else {
            format!("place {} beside the segment", self.name())
        }
    }
}

/// The leftovers of `point`'s image: beside its first and its last segment, each
/// kind; the first closed segment's `.log` also renamed to a swap file. None where
/// an install is pending: no open leaves Kafka's leftovers in a log it accepts (it
/// removes `.cleaned` and `.deleted`, refuses `.swap`), and an install starts only
/// from such a log, holding the writer lock to its end.
pub fn plan(point: &Point) -> Vec<LeftoverCase> {
    if point.install_pending {
        return Vec::new();
    }
    let Ok(bases) = list_segments(&point.image, Path::new(LOG_DIR)) else {
        return Vec::new();
    };
    let mut sides: Vec<i64> = bases
        .first()
        .into_iter()
        .chain(bases.last())
        .copied()
        .collect();
    sides.dedup();
    let mut out = Vec::new();
    for base in sides {
        for kind in [Leftover::Swap, Leftover::Cleaned, Leftover::Deleted] {
            out.push(LeftoverCase {
                base,
                kind,
                only_copy: false,
            });
        }
    }
    if bases.len() > 1 {
        out.push(LeftoverCase {
            base: bases[0],
            kind: Leftover::Swap,
            only_copy: true,
        });
    }
    out
}

/// `image` with `case` applied.
fn apply(image: &SimFs, case: &LeftoverCase) -> std::io::Result<SimFs> {
    let fs = sweep::duplicate(image);
    let live = Path::new(LOG_DIR);
    let log = segment_path(live, case.base, filename::LOG_SUFFIX);
    let leftover = live.join(case.name());
    if case.only_copy {
        fs.rename(&log, &leftover)?;
    } else {
        fs.write_new(&leftover, &fs.read_all(&log)?)?;
    }
    fs.settle();
    Ok(fs)
}

/// Opens the image with `case` applied by every open kind and judges each; `Err`
/// is a violation.
pub fn judge(config: &LogConfig, point: &Point, case: &LeftoverCase) -> Result<Outcome, String> {
    let mut outcome = Outcome::Recovered;
    for opening in Opening::ALL {
        let image = apply(&point.image, case).map_err(|e| format!("cannot apply: {e}"))?;
        let fs = Arc::new(image);
        let ops = fs.mutating_ops();
        let opened = opening.open(fs.clone(), config);
        // Nothing changes the simulated disk but a mutating call.
        let changed = fs.mutating_ops() != ops;
        if opening == Opening::ReadOnly && changed {
            return Err(format!(
                "a read-only open changed the directory ({opening:?})"
            ));
        }
        let leftover = Path::new(LOG_DIR).join(case.name());
        match (case.kind, opened) {
            (Leftover::Swap, Err(Error::Ambiguous { dirs, .. })) => {
                if !dirs.contains(&leftover) {
                    return Err(format!(
                        "{opening:?} open: the refusal names {dirs:?}, not the swap file"
                    ));
                }
                if changed && !only_protocol_changes(point, case, &fs)? {
                    return Err(format!("{opening:?} open: the refusal changed files"));
                }
                outcome = Outcome::Error;
            }
            (Leftover::Swap, Ok(_)) => {
                return Err(format!("{opening:?} open accepted a swap file cut short"));
            }
            (_, Err(e)) => {
                return Err(format!(
                    "{opening:?} open of a {:?} leftover: {e}",
                    case.kind
                ));
            }
            (_, Ok((log, report))) => {
                if !report.removed_files.contains(&case.name()) {
                    return Err(format!(
                        "{opening:?} open does not list {} in removed_files: {:?}",
                        case.name(),
                        report.removed_files
                    ));
                }
                let view = engine::view(&log)
                    .map_err(|e| format!("{opening:?} open, then a read: {e}"))?;
                drop(log);
                if view != point.baseline && !point.allowed.contains(&view) {
                    return Err(format!(
                        "{opening:?} open serves another log: {}",
                        point.baseline.diff(&view).join(", ")
                    ));
                }
                let left = fs.exists(&leftover);
                if opening != Opening::ReadOnly && left {
                    return Err(format!("{opening:?} open left {}", case.name()));
                }
            }
        }
    }
    Ok(outcome)
}

/// True if `fs` holds what the protocol recoveries (install, retention), run on the
/// image with `case` applied, leave: what a refusal may change.
fn only_protocol_changes(point: &Point, case: &LeftoverCase, fs: &SimFs) -> Result<bool, String> {
    let image = apply(&point.image, case).map_err(|e| format!("cannot apply: {e}"))?;
    Ok(super::case::protocol_recovered(image).snapshot() == fs.snapshot())
}

/// The file a leftover case names, for a violation.
pub fn file(case: &LeftoverCase) -> PathBuf {
    Path::new(LOG_DIR).join(case.name())
}

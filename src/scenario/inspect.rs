//! What a person needs to see of a crash scenario: the operation timeline (every
//! file-system call up to the crash, what was durable, what the crash image lost),
//! the directory trees at the crash and after recovery, and the expected against
//! the recovered records. `seglog replay --html` and `seglog verify --html` draw it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use crate::sweep::{self, duplicate, LOG_DIR};
use crate::workload::engine::{self, Variant};
use crate::workload::LogView;
use seglog::fs::sim::{LostItem, SimFs};
use seglog::fs::{FileSystem, TraceFs};
use seglog::log::Log;

use super::format::{Outcome, Scenario, Semantics};
use super::replay::{expected_view, power_loss_image, replay, resolve_crash_point, ReplayResult};
use super::timeline::{timeline, timeline_on, TimelineRow};

/// One file or directory of a tree: its path and, for a file, its length.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeEntry {
    /// The path.
    pub path: String,
    /// Bytes, for a file; `None` for a directory.
    pub bytes: Option<u64>,
}

/// A scenario, replayed and laid open.
#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    /// The replay's verdict and diff.
    pub result: ReplayResult,
    /// The workload's operations, as printed.
    pub workload_ops: Vec<String>,
    /// Every traced file-system call up to the crash (the crash's own call last).
    pub timeline: Vec<TimelineRow>,
    /// What the crash image lost, as the simulated file system prints it.
    pub lost: Vec<String>,
    /// The crash image's tree, before recovery.
    pub tree_at_crash: Vec<TreeEntry>,
    /// The tree after the last recovery (empty if it failed).
    pub tree_after_recovery: Vec<TreeEntry>,
    /// The state the scenario expects (`old`, `new`, `exact`), else the one the
    /// crash image must recover to (the sweep's exact oracle).
    pub expected: Option<LogView>,
    /// Which state `expected` is.
    pub expected_label: String,
    /// What the last recovery gave, or why it failed.
    pub recovered: Result<LogView, String>,
    /// Every recovery of the crash image, in order: one a nested crash interrupts
    /// (its calls up to that crash, what the nested crash image lost), then the one
    /// that ran to its end (the source of `recovered` and `tree_after_recovery`).
    pub recoveries: Vec<RecoveryInspection>,
    /// What this inspection could not show.
    pub notes: Vec<String>,
}

/// One recovery (an open of the log) of a crash image.
#[derive(Debug, Clone, Serialize)]
pub struct RecoveryInspection {
    /// How it ended: crashed (before which of its calls), failed, or ran to its end.
    pub outcome: String,
    /// Its file-system calls (a crashed one's own call last).
    pub timeline: Vec<TimelineRow>,
    /// What the power loss that interrupted it took away (empty: none, or it ended).
    pub lost: Vec<String>,
    /// The tree it started from.
    pub tree_before: Vec<TreeEntry>,
    /// The tree it left: the image its crash left, or the recovered tree (empty when
    /// it failed).
    pub tree_after: Vec<TreeEntry>,
}

fn tree(fs: &SimFs) -> Vec<TreeEntry> {
    let mut entries: BTreeMap<PathBuf, Option<u64>> = BTreeMap::new();
    for dir in fs.snapshot_dirs() {
        entries.insert(dir, None);
    }
    for (path, bytes) in fs.snapshot() {
        entries.insert(path, Some(bytes.len() as u64));
    }
    entries
        .into_iter()
        .map(|(path, bytes)| TreeEntry {
            path: path.display().to_string(),
            bytes,
        })
        .collect()
}

/// The traced calls up to and including the one the crash failed (a crashed log's
/// later attempts are not part of the run).
fn until_crash(mut ops: Vec<seglog::fs::TracedOp>, crashed: bool) -> Vec<seglog::fs::TracedOp> {
    if crashed {
        if let Some(first) = ops.iter().position(|op| op.error.is_some()) {
            ops.truncate(first + 1);
        }
    }
    ops
}

/// Replays `scenario` against `variant` (default: its own) and gathers what the
/// page shows.
pub fn inspect(scenario: &Scenario, variant: Option<&str>) -> Result<Inspection, String> {
    let result = replay(scenario, variant);
    let workload = scenario.workload(&result.variant);
    let variant = Variant::parse(&workload.variant)?;
    let notes = Vec::new();
    let k = match &scenario.crash {
        Some(crash) => Some(resolve_crash_point(crash, &workload)?),
        None => None,
    };
    // The run, traced: each workload operation's first call is noted.
    let sim = Arc::new(SimFs::new());
    if let Some(k) = k {
        sim.set_crash_before(k);
    }
    let traced = Arc::new(TraceFs::new(sim.clone()));
    let dyn_fs: Arc<dyn FileSystem> = traced.clone();
    let mut op_starts = Vec::new();
    let mut interrupted = None;
    match Log::open_with(dyn_fs, LOG_DIR, workload.config.clone()) {
        Ok((mut log, _)) => {
            for (i, op) in workload.ops.iter().enumerate() {
                op_starts.push(traced.len());
                if engine::apply_with(&mut log, op, variant).is_err() {
                    interrupted = Some(i);
                    break;
                }
            }
        }
        Err(e) if !sim.is_crashed() => return Err(format!("initial open failed: {e}")),
        Err(_) => {}
    }
    let crash = scenario.crash.as_ref();
    let image = match crash {
        Some(c) if c.semantics == Semantics::PowerLoss => power_loss_image(&sim, &c.lost)?,
        _ => duplicate(&sim),
    };
    // What the image really lost: an item this run made durable cannot be lost and
    // is skipped (as the replay does).
    let lost: Vec<LostItem> = match crash {
        Some(c) if c.semantics == Semantics::PowerLoss => losable(&sim, &c.lost),
        _ => Vec::new(),
    };
    let states = sweep::Allowed::states(&workload);
    let interrupted_at = if k.is_some() {
        interrupted.or(Some(workload.ops.len()))
    } else {
        Some(workload.ops.len())
    };
    let oracle = if k.is_some() {
        states.exact_after_crash(&workload, interrupted_at, &image)
    } else {
        states.exactly(workload.ops.len())
    }
    .exact_view()
    .cloned();
    let old = states.old_view(interrupted_at);
    let (expected, expected_label) = match result.expected {
        Outcome::Old => (Some(old), "old: the state before the interrupted operation"),
        Outcome::New => (
            states.new_view(interrupted_at),
            "new: the state after the interrupted operation",
        ),
        Outcome::Exact => {
            let (log_start_offset, next_offset, records) = expected_view(&scenario.expect);
            (
                Some(LogView {
                    log_start_offset,
                    next_offset,
                    clean_point: 0,
                    segments: Vec::new(),
                    records,
                }),
                "exact: the scenario's records",
            )
        }
        Outcome::Allowed | Outcome::Violation => match oracle {
            Some(view) => (
                Some(view),
                "the state this image's durable content dictates (the exact oracle)",
            ),
            None => (
                Some(old),
                "old (the oracle names no single state for this image)",
            ),
        },
    };
    let (recoveries, recovered, tree_after_recovery) = recoveries(crash, &workload, &image)?;
    Ok(Inspection {
        workload_ops: workload.ops.iter().map(ToString::to_string).collect(),
        timeline: timeline(&until_crash(traced.ops(), k.is_some()), &op_starts, &lost),
        lost: lost.iter().map(ToString::to_string).collect(),
        tree_at_crash: tree(&image),
        tree_after_recovery,
        expected,
        expected_label: expected_label.to_string(),
        recovered,
        recoveries,
        notes,
        result,
    })
}

/// The items of `lost` that `fs` still has pending (an item an earlier sync made
/// durable cannot be lost and is skipped, as the replay does).
fn losable(fs: &SimFs, lost: &[String]) -> Vec<LostItem> {
    let items: Vec<LostItem> = lost
        .iter()
        .filter_map(|s| s.parse::<LostItem>().ok())
        .collect();
    if fs.crash_image_with(&items).is_ok() {
        return items;
    }
    items
        .into_iter()
        .filter(|item| fs.crash_image_with(std::slice::from_ref(item)).is_ok())
        .collect()
}

/// Every recovery of a crash image, the last one's outcome and the tree it left.
type Recoveries = (
    Vec<RecoveryInspection>,
    Result<LogView, String>,
    Vec<TreeEntry>,
);

/// Every recovery of the crash image, traced: the one a crash interrupts (when the
/// scenario crashes recovery too) and the one that runs to its end on the image
/// that crash left. Returns them with the last one's outcome and tree.
fn recoveries(
    crash: Option<&super::format::CrashSpec>,
    workload: &sweep::Workload,
    image: &SimFs,
) -> Result<Recoveries, String> {
    let mut out = Vec::new();
    let mut current = duplicate(image);
    if let Some((rk, recovery_lost)) =
        crash.and_then(|c| c.recovery_crash_before_op.map(|rk| (rk, &c.recovery_lost)))
    {
        let nested = Arc::new(duplicate(&current));
        let lengths = file_lengths(&nested);
        nested.set_crash_before(nested.mutating_ops() + rk);
        let traced = Arc::new(TraceFs::new(nested.clone()));
        let dyn_fs: Arc<dyn FileSystem> = traced.clone();
        if Log::open_with(dyn_fs, LOG_DIR, workload.config.clone()).is_ok() {
            return Err(format!(
                "recovery finished before its operation {rk}: no crash during recovery happened"
            ));
        }
        let lost = losable(&nested, recovery_lost);
        let next = if recovery_lost.is_empty() {
            duplicate(&nested)
        } else {
            power_loss_image(&nested, recovery_lost)?
        };
        out.push(RecoveryInspection {
            outcome: format!(
                "crashed before its file-system operation {rk} ({})",
                match (recovery_lost.is_empty(), lost.len() == recovery_lost.len()) {
                    (true, _) => "a process crash: nothing lost",
                    (false, true) => "a power loss",
                    (false, false) => {
                        "a power loss; some items the scenario names were durable by then \
                         and are kept"
                    }
                }
            ),
            timeline: timeline_on(&until_crash(traced.ops(), true), &[], &lost, lengths),
            lost: lost.iter().map(ToString::to_string).collect(),
            tree_before: tree(&current),
            tree_after: tree(&next),
        });
        current = next;
    }
    let last = Arc::new(duplicate(&current));
    let lengths = file_lengths(&last);
    let traced = Arc::new(TraceFs::new(last.clone()));
    let dyn_fs: Arc<dyn FileSystem> = traced.clone();
    let recovered = Log::open_with(dyn_fs, LOG_DIR, workload.config.clone())
        .map_err(|e| format!("recovery failed: {e}"))
        .and_then(|(log, _)| {
            engine::view(&log).map_err(|e| format!("read after recovery failed: {e}"))
        });
    let tree_after = if recovered.is_ok() {
        tree(&last)
    } else {
        Vec::new()
    };
    out.push(RecoveryInspection {
        outcome: match &recovered {
            Ok(view) => format!(
                "ran to its end: {} records, next offset {}",
                view.records.len(),
                view.next_offset
            ),
            Err(e) => e.clone(),
        },
        timeline: timeline_on(&traced.ops(), &[], &[], lengths),
        lost: Vec::new(),
        tree_before: tree(&current),
        tree_after: tree_after.clone(),
    });
    Ok((out, recovered, tree_after))
}

/// Each file's length, for a timeline that starts on an existing tree.
fn file_lengths(fs: &SimFs) -> BTreeMap<PathBuf, u64> {
    fs.snapshot()
        .into_iter()
        .map(|(path, bytes)| (path, bytes.len() as u64))
        .collect()
}

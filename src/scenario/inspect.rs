//! What a person needs to see of a crash scenario: the operation timeline (every
//! file-system call up to the crash, what was durable, what the crash image lost),
//! the directory trees at the crash and after recovery, and the expected against
//! the recovered records. `seglog replay --html` and `seglog verify --html` draw it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use crate::fs::sim::{LostItem, SimFs};
use crate::fs::{FileSystem, TraceFs};
use crate::log::Log;
use crate::sweep::{self, duplicate, LOG_DIR};
use crate::workload::engine::{self, Variant};
use crate::workload::LogView;

use super::format::{Outcome, Scenario, Semantics};
use super::replay::{expected_view, power_loss_image, replay, resolve_crash_point, ReplayResult};
use super::timeline::{timeline, TimelineRow};

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
    /// The tree after recovery (empty if recovery failed).
    pub tree_after_recovery: Vec<TreeEntry>,
    /// The state the scenario expects (`old`, `new`, `exact`), else the one the
    /// crash image must recover to (the sweep's exact oracle).
    pub expected: Option<LogView>,
    /// Which state `expected` is.
    pub expected_label: String,
    /// What recovery gave, or why it failed.
    pub recovered: Result<LogView, String>,
    /// What this inspection could not show (e.g. a crash nested in recovery).
    pub notes: Vec<String>,
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
fn until_crash(mut ops: Vec<crate::fs::TracedOp>, crashed: bool) -> Vec<crate::fs::TracedOp> {
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
    let mut notes = Vec::new();
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
        Some(c) if c.semantics == Semantics::PowerLoss => {
            let items: Vec<LostItem> = c
                .lost
                .iter()
                .filter_map(|s| s.parse::<LostItem>().ok())
                .collect();
            if sim.crash_image_with(&items).is_ok() {
                items
            } else {
                items
                    .into_iter()
                    .filter(|item| sim.crash_image_with(std::slice::from_ref(item)).is_ok())
                    .collect()
            }
        }
        _ => Vec::new(),
    };
    if crash.is_some_and(|c| c.recovery_crash_before_op.is_some()) {
        notes.push(
            "recovery itself crashes in this scenario; the page shows the first recovery \
             of the crash image, the replay's verdict covers the nested crash"
                .into(),
        );
    }
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
    let after = Arc::new(duplicate(&image));
    let after_fs: Arc<dyn FileSystem> = after.clone();
    let recovered = Log::open_with(after_fs, LOG_DIR, workload.config.clone())
        .map_err(|e| format!("recovery failed: {e}"))
        .and_then(|(log, _)| {
            engine::view(&log).map_err(|e| format!("read after recovery failed: {e}"))
        });
    let tree_after_recovery = if recovered.is_ok() {
        tree(&after)
    } else {
        Vec::new()
    };
    Ok(Inspection {
        workload_ops: workload.ops.iter().map(ToString::to_string).collect(),
        timeline: timeline(&until_crash(traced.ops(), k.is_some()), &op_starts, &lost),
        lost: lost.iter().map(ToString::to_string).collect(),
        tree_at_crash: tree(&image),
        tree_after_recovery,
        expected,
        expected_label: expected_label.to_string(),
        recovered,
        notes,
        result,
    })
}

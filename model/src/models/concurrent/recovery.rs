//! Recovery after a crash: the install decision table of docs/design.md section 6,
//! plus the new trash rule (a `D.compact-trash` directory is never authoritative: it
//! is removed in every row), then the open of the live directory (retention's
//! checkpoint hides the offsets below it, model (d)).
//!
//! Recovery runs as one step here: model (b) checks crashes during it.

use serde::{Deserialize, Serialize};

use super::state::{ConcurrentState, Mem, PName, PObj};
use crate::models::dir::DirOp;

/// Which row of the table applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Row {
    /// No valid manifest: `D` is authoritative (a temp dir or trash is removed).
    NotCommitted,
    /// Manifest and the new content: it becomes (or stays) `D`.
    RollForward,
    /// Manifest, no new content: the old content becomes (or stays) `D`.
    RollBack,
}

/// The parent-directory operations a recovery runs (each followed by a parent fsync).
pub type Plan = Vec<DirOp<PName, PObj>>;

/// The decision: a row and its plan, or fail closed with a reason.
pub fn decide(state: &ConcurrentState) -> Result<(Row, Plan), &'static str> {
    let get = |n: PName| state.parent.get(&n).copied();
    let manifest = match get(PName::Manifest) {
        Some(PObj::Manifest(new)) => Some(new),
        _ => None,
    };
    let is_new = |n: PName| manifest.is_some_and(|new| get(n) == Some(PObj::Dir(new)));
    let is_old = |n: PName| matches!(get(n), Some(PObj::Dir(_))) && !is_new(n);
    let mut plan = Vec::new();
    let remove = |plan: &mut Vec<_>, names: &[PName]| {
        for n in names {
            if get(*n).is_some() {
                plan.push(DirOp::Remove(*n));
            }
        }
    };
    // The trash rule: first, in every row.
    remove(&mut plan, &[PName::Trash]);
    let row = if manifest.is_none() {
        if get(PName::Backup).is_some() {
            return Err("backup without a valid manifest is ambiguous");
        }
        if get(PName::Live).is_none() {
            return Err("no live directory and no valid manifest");
        }
        remove(&mut plan, &[PName::Temp]);
        Row::NotCommitted
    } else {
        let row = if is_new(PName::Live) {
            remove(&mut plan, &[PName::Temp, PName::Backup]);
            Row::RollForward
        } else if is_new(PName::Temp) {
            if get(PName::Live).is_some() {
                if get(PName::Backup).is_some() {
                    return Err("live, temp and backup all present");
                }
                plan.push(DirOp::Rename {
                    from: PName::Live,
                    to: PName::Backup,
                });
            }
            plan.push(DirOp::Rename {
                from: PName::Temp,
                to: PName::Live,
            });
            plan.push(DirOp::Remove(PName::Backup));
            Row::RollForward
        } else if is_old(PName::Live) {
            remove(&mut plan, &[PName::Temp, PName::Backup]);
            Row::RollBack
        } else if is_old(PName::Backup) {
            plan.push(DirOp::Rename {
                from: PName::Backup,
                to: PName::Live,
            });
            remove(&mut plan, &[PName::Temp]);
            Row::RollBack
        } else {
            return Err("a valid manifest but neither new nor old content");
        };
        plan.push(DirOp::Remove(PName::Manifest));
        row
    };
    Ok((row, plan))
}

/// Runs the decision and opens `D`: the in-memory log is rebuilt from its entries and
/// its retention checkpoint. `Err` if recovery failed closed.
pub fn recover(state: &mut ConcurrentState) -> Result<Row, &'static str> {
    let (row, plan) = decide(state)?;
    for op in plan {
        state.parent.run(op);
        state.parent.sync();
    }
    let Some(PObj::Dir(live)) = state.parent.get(&PName::Live).copied() else {
        return Err("no live directory after recovery");
    };
    let dir = &state.dirs[&live];
    let log_start = dir.log_start;
    let segments: Vec<(i64, u8)> = dir.segments.entries.iter().map(|(b, f)| (*b, *f)).collect();
    if segments.is_empty() {
        return Err("a live directory without segments");
    }
    state.mem = Mem {
        dir: live,
        segments,
        log_start,
    };
    Ok(row)
}

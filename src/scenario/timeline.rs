//! The operation timeline of a crash: every traced file-system operation up to the
//! crash, with what the seam's contract says about it (durable, completed but not
//! yet durable, a sync) and what the crash image took away (its `lost` items mapped
//! back to the operations they undo). Pure: no IO.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use seglog::fs::sim::LostItem;
use seglog::fs::{TraceCall, TracedOp};

/// What became of one operation at the crash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "detail")]
pub enum OpFate {
    /// Made durable by a later sync before the crash.
    Durable,
    /// Completed, not durable, and the crash image kept it.
    Kept,
    /// Completed, not durable, and the crash image lost it (how, if only part).
    Lost(String),
    /// A `sync_file` / `sync_dir`.
    Sync,
    /// The call returned an error (the crash itself, or an injected fault).
    Failed(String),
    /// The writer lock: held in the kernel, nothing on disk a crash could lose.
    Held,
}

/// One row of the timeline.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineRow {
    /// The operation's number among the counted calls (a lock, outside them, has
    /// the number of the call after it).
    pub index: usize,
    /// The workload operation that issued it (`None`: the initial open).
    pub workload_op: Option<usize>,
    /// The call, as printed.
    pub op: String,
    /// What became of it.
    pub fate: OpFate,
}

/// Whether a call changes a directory's entries (durable with `sync_dir` of the
/// parent) or a file's data (durable with `sync_file`).
fn is_dir_op(call: TraceCall) -> bool {
    matches!(
        call,
        TraceCall::CreateDirAll
            | TraceCall::CreateFile
            | TraceCall::Rename
            | TraceCall::HardLink
            | TraceCall::RemoveFile
            | TraceCall::RemoveDirAll
    )
}

fn name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn parent(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The description the simulated file system gives a directory operation.
fn dir_op_desc(op: &TracedOp) -> String {
    match op.call {
        TraceCall::CreateFile => format!("create {}", name(&op.path)),
        TraceCall::CreateDirAll => format!("mkdir {}", name(&op.path)),
        TraceCall::RemoveFile => format!("remove {}", name(&op.path)),
        TraceCall::RemoveDirAll => format!("remove-dir {}", name(&op.path)),
        TraceCall::HardLink => format!(
            "link {} -> {}",
            op.path.display(),
            name(&op.to.clone().unwrap_or_default())
        ),
        TraceCall::Rename => {
            let to = op.to.clone().unwrap_or_default();
            if parent(&op.path) == parent(&to) {
                format!("rename {} -> {}", name(&op.path), name(&to))
            } else {
                format!("rename {} -> {}", op.path.display(), to.display())
            }
        }
        _ => String::new(),
    }
}

/// Moves `path` from under `from` to under `to`, if it is there.
fn moved(path: &Path, from: &Path, to: &Path) -> Option<PathBuf> {
    path.strip_prefix(from).ok().map(|rest| {
        if rest.as_os_str().is_empty() {
            to.to_path_buf()
        } else {
            to.join(rest)
        }
    })
}

/// Row state while walking the trace.
struct Walk {
    /// Where the row's file (data ops) or directory (dir ops) is now.
    place: PathBuf,
    /// Dir ops: the directories whose sync it still waits for.
    waits: Vec<PathBuf>,
    /// Data ops: the byte range of the file it wrote (append), or the length set.
    range: (u64, u64),
    durable: bool,
}

/// The timeline of `ops` (the traced calls up to the crash; `op_starts[i]` is the
/// index of the first call of workload operation `i`), with the image's `lost`
/// items mapped onto the calls they undo.
pub fn timeline(ops: &[TracedOp], op_starts: &[usize], lost: &[LostItem]) -> Vec<TimelineRow> {
    timeline_on(ops, op_starts, lost, BTreeMap::new())
}

/// [`timeline`] of calls made on an existing tree whose files have `lengths` (a
/// recovery's calls on a crash image): appends to them start at their ends.
pub fn timeline_on(
    ops: &[TracedOp],
    op_starts: &[usize],
    lost: &[LostItem],
    mut lengths: BTreeMap<PathBuf, u64>,
) -> Vec<TimelineRow> {
    let mut walks: Vec<Walk> = Vec::with_capacity(ops.len());
    for op in ops {
        let mut walk = Walk {
            place: if op.call == TraceCall::HardLink {
                // The new entry is in the target's directory.
                parent(op.to.as_deref().unwrap_or(&op.path))
            } else if is_dir_op(op.call) {
                parent(&op.path)
            } else {
                op.path.clone()
            },
            waits: Vec::new(),
            range: (0, 0),
            durable: false,
        };
        if op.error.is_none() {
            match op.call {
                TraceCall::Rename => {
                    let to = op.to.clone().unwrap_or_default();
                    walk.waits = vec![parent(&op.path), parent(&to)];
                    walk.waits.dedup();
                    for earlier in &mut walks {
                        if let Some(p) = moved(&earlier.place, &op.path, &to) {
                            earlier.place = p;
                        }
                        for dir in &mut earlier.waits {
                            if let Some(p) = moved(dir, &op.path, &to) {
                                *dir = p;
                            }
                        }
                    }
                    let renamed: Vec<(PathBuf, u64)> = lengths
                        .iter()
                        .filter_map(|(p, n)| moved(p, &op.path, &to).map(|q| (q, *n)))
                        .collect();
                    lengths.retain(|p, _| moved(p, &op.path, &to).is_none());
                    lengths.extend(renamed);
                }
                TraceCall::CreateFile | TraceCall::CreateDirAll | TraceCall::RemoveFile => {
                    walk.waits = vec![parent(&op.path)];
                    if op.call == TraceCall::CreateFile {
                        lengths.insert(op.path.clone(), 0);
                    }
                }
                TraceCall::RemoveDirAll => walk.waits = vec![parent(&op.path)],
                TraceCall::HardLink => {
                    let to = op.to.clone().unwrap_or_default();
                    walk.waits = vec![parent(&to)];
                    let len = lengths.get(&op.path).copied().unwrap_or_default();
                    lengths.insert(to, len);
                }
                TraceCall::Append => {
                    let start = lengths.get(&op.path).copied().unwrap_or_default();
                    let end = start + op.bytes.unwrap_or_default();
                    lengths.insert(op.path.clone(), end);
                    walk.range = (start, end);
                }
                TraceCall::SetLen => {
                    let len = op.bytes.unwrap_or_default();
                    lengths.insert(op.path.clone(), len);
                    walk.range = (len, len);
                }
                TraceCall::SyncFile => {
                    for earlier in &mut walks {
                        if earlier.waits.is_empty() && earlier.place == op.path {
                            earlier.durable = true;
                        }
                    }
                }
                TraceCall::SyncDir => {
                    for earlier in &mut walks {
                        let before = earlier.waits.len();
                        earlier.waits.retain(|d| *d != op.path);
                        if before > 0 && earlier.waits.is_empty() {
                            earlier.durable = true;
                        }
                    }
                }
                TraceCall::Lock => {}
            }
        }
        walks.push(walk);
    }
    let mut fates: Vec<OpFate> = ops
        .iter()
        .zip(&walks)
        .map(|(op, walk)| match (&op.error, op.call) {
            (Some(e), _) => OpFate::Failed(e.clone()),
            (None, TraceCall::SyncFile | TraceCall::SyncDir) => OpFate::Sync,
            (None, TraceCall::Lock) => OpFate::Held,
            (None, _) if walk.durable => OpFate::Durable,
            (None, _) => OpFate::Kept,
        })
        .collect();
    for item in lost {
        mark_lost(ops, &walks, &mut fates, item);
    }
    let workload_op = |index: usize| op_starts.iter().rposition(|start| *start <= index);
    // Rows are numbered as the simulated file system counts its calls (what a
    // crash point "before operation k" names): a lock is not one of them and
    // carries the number of the call after it.
    let mut counted = 0;
    ops.iter()
        .zip(fates)
        .enumerate()
        .map(|(position, (op, fate))| {
            let row = TimelineRow {
                index: counted,
                workload_op: workload_op(position),
                op: op.to_string(),
                fate,
            };
            if op.call != TraceCall::Lock {
                counted += 1;
            }
            row
        })
        .collect()
}

/// Marks the calls `item` undoes as lost.
fn mark_lost(ops: &[TracedOp], walks: &[Walk], fates: &mut [OpFate], item: &LostItem) {
    let candidates = |fates: &[OpFate]| -> Vec<usize> {
        (0..ops.len())
            .filter(|i| fates[*i] == OpFate::Kept || matches!(fates[*i], OpFate::Lost(_)))
            .collect()
    };
    match item {
        LostItem::DirOp { dir, op, .. } => {
            let found = candidates(fates).into_iter().rev().find(|i| {
                is_dir_op(ops[*i].call) && walks[*i].place == *dir && dir_op_desc(&ops[*i]) == *op
            });
            if let Some(i) = found {
                fates[i] = OpFate::Lost(format!("{op} in {}", dir.display()));
            }
        }
        LostItem::FileBytes { path, kept, .. } => {
            for i in candidates(fates) {
                let walk = &walks[i];
                if ops[i].call == TraceCall::Append && walk.place == *path && walk.range.1 > *kept {
                    let (start, end) = walk.range;
                    fates[i] = OpFate::Lost(if start >= *kept {
                        format!("bytes {start}..{end} lost")
                    } else {
                        format!("bytes {kept}..{end} lost, {start}..{kept} kept")
                    });
                }
            }
        }
        LostItem::FileRewrite { path } => {
            for i in candidates(fates) {
                if ops[i].call == TraceCall::SetLen && walks[i].place == *path {
                    fates[i] = OpFate::Lost("the truncation was lost".into());
                }
            }
        }
        LostItem::FailedWriteback { path } => {
            for i in candidates(fates) {
                if ops[i].call == TraceCall::Append && walks[i].place == *path {
                    fates[i] = OpFate::Lost("its writeback failed: zeros on disk".into());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(call: TraceCall, path: &str, to: Option<&str>, bytes: Option<u64>) -> TracedOp {
        TracedOp {
            call,
            path: PathBuf::from(path),
            to: to.map(PathBuf::from),
            bytes,
            error: None,
        }
    }

    #[test]
    fn syncs_make_durable_and_lost_items_map_to_their_calls() {
        let ops = vec![
            op(TraceCall::CreateFile, "/d/a.tmp", None, None),
            op(TraceCall::Append, "/d/a.tmp", None, Some(10)),
            op(TraceCall::SyncFile, "/d/a.tmp", None, None),
            op(TraceCall::Append, "/d/a.tmp", None, Some(5)),
            op(TraceCall::Rename, "/d/a.tmp", Some("/d/a"), None),
            op(TraceCall::CreateFile, "/d/b", None, None),
            op(TraceCall::SyncDir, "/d", None, None),
            op(TraceCall::RemoveFile, "/d/b", None, None),
        ];
        let lost = vec![
            LostItem::FileBytes {
                path: PathBuf::from("/d/a"),
                kept: 12,
                written: 15,
            },
            LostItem::DirOp {
                seq: 9,
                dir: PathBuf::from("/d"),
                op: "remove b".into(),
            },
        ];
        let rows = timeline(&ops, &[0, 3], &lost);
        let fates: Vec<&OpFate> = rows.iter().map(|r| &r.fate).collect();
        assert_eq!(fates[0], &OpFate::Durable);
        assert_eq!(fates[1], &OpFate::Durable);
        assert_eq!(fates[2], &OpFate::Sync);
        assert_eq!(
            fates[3],
            &OpFate::Lost("bytes 12..15 lost, 10..12 kept".into())
        );
        assert_eq!(fates[4], &OpFate::Durable);
        assert_eq!(fates[5], &OpFate::Durable);
        assert_eq!(fates[7], &OpFate::Lost("remove b in /d".into()));
        assert_eq!(rows[2].workload_op, Some(0));
        assert_eq!(rows[3].workload_op, Some(1));
        // Nothing lost: the unsynced calls are kept.
        let kept = timeline(&ops, &[0], &[]);
        assert_eq!(kept[3].fate, OpFate::Kept);
        assert_eq!(kept[7].fate, OpFate::Kept);
    }
}

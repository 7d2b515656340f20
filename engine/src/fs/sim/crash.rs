//! Crash images: which disk states a power loss may leave, and the one-line
//! description ([`LostItem`]) of what each one lost.
//!
//! An image is chosen by a [`Spec`]: the set of pending directory operations lost,
//! and for some files how many unsynced bytes survive. Building an image replays
//! the kept operations over the durable directory entries, walks what is reachable
//! from the root, and gives every reachable file its chosen content, all durable.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::str::FromStr;

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use super::persistence::Persistence;
use super::state::State;
use super::tree::{DirNode, FileNode, Ino, Node, ROOT};

/// What kind of crash to simulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CrashMode {
    /// The process dies; the kernel keeps everything completed. One image, which
    /// keeps the written/durable distinction (a later power loss can still bite).
    Process,
    /// The machine loses power: only durable state is certain (docs/verification.md,
    /// "The simulated file system and its persistence model", says exactly what
    /// else may survive).
    PowerLoss,
}

/// One thing a power loss took away. Prints as one line and parses back
/// ([`FromStr`]), so a crash scenario file can name an exact image.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub enum LostItem {
    /// A directory operation (`create x`, `mkdir d`, `remove x`, `remove-dir d`,
    /// `rename a -> b`) issued in `dir` was lost. `seq` numbers the operations of
    /// one file system and tells apart two identical descriptions.
    DirOp {
        /// The operation's number in its file system.
        seq: u64,
        /// The directory the operation changed.
        dir: PathBuf,
        /// The operation, as printed (`create x`, `rename a -> b`, ...).
        op: String,
    },
    /// Of the file at `path` (`written` bytes long before the crash), only the first
    /// `kept` bytes survived.
    FileBytes {
        /// The file.
        path: PathBuf,
        /// Bytes that survived.
        kept: u64,
        /// Bytes the file held before the crash.
        written: u64,
    },
    /// A truncation of `path` since its last sync was lost: its durable content came back.
    FileRewrite {
        /// The file.
        path: PathBuf,
    },
    /// The bytes of `path` whose writeback failed (a failed `sync_file`) never
    /// reached the disk: they read as zeros, even if a later sync succeeded.
    FailedWriteback {
        /// The file.
        path: PathBuf,
    },
}

impl fmt::Display for LostItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LostItem::DirOp { seq, dir, op } => {
                write!(f, "dir-op seq={seq} dir={} op={op}", dir.display())
            }
            LostItem::FileBytes {
                path,
                kept,
                written,
            } => write!(
                f,
                "file-bytes path={} kept={kept} written={written}",
                path.display()
            ),
            LostItem::FileRewrite { path } => write!(f, "file-rewrite path={}", path.display()),
            LostItem::FailedWriteback { path } => {
                write!(f, "failed-writeback path={}", path.display())
            }
        }
    }
}

fn parse_error(line: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a lost item: {line:?}"),
    )
}

impl FromStr for LostItem {
    type Err = io::Error;

    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let number = |s: &str| s.parse::<u64>().map_err(|_| parse_error(line));
        if let Some(rest) = line.strip_prefix("dir-op seq=") {
            let (seq, rest) = rest.split_once(" dir=").ok_or_else(|| parse_error(line))?;
            let (dir, op) = rest.split_once(" op=").ok_or_else(|| parse_error(line))?;
            return Ok(LostItem::DirOp {
                seq: number(seq)?,
                dir: PathBuf::from(dir),
                op: op.to_string(),
            });
        }
        if let Some(rest) = line.strip_prefix("file-bytes path=") {
            let (rest, written) = rest
                .rsplit_once(" written=")
                .ok_or_else(|| parse_error(line))?;
            let (path, kept) = rest
                .rsplit_once(" kept=")
                .ok_or_else(|| parse_error(line))?;
            return Ok(LostItem::FileBytes {
                path: PathBuf::from(path),
                kept: number(kept)?,
                written: number(written)?,
            });
        }
        if let Some(path) = line.strip_prefix("failed-writeback path=") {
            return Ok(LostItem::FailedWriteback {
                path: PathBuf::from(path),
            });
        }
        if let Some(path) = line.strip_prefix("file-rewrite path=") {
            return Ok(LostItem::FileRewrite {
                path: PathBuf::from(path),
            });
        }
        Err(parse_error(line))
    }
}

/// What a file keeps in an image when it is not simply "everything written".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Choice {
    /// The first `n` bytes of what was written.
    Kept(usize),
    /// The content as of the last `sync_file` (a truncation since then is lost).
    Durable,
    /// Everything written, but the doomed ranges (failed writeback) are zeros.
    Doomed,
}

/// The current namespace of a state: every reachable path, and the inodes.
pub(super) struct Now {
    paths: Vec<(PathBuf, Ino)>,
    reachable: BTreeSet<Ino>,
}

/// Which image: lost directory ops (by seq) and per-file content choices.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Spec {
    pub lost_ops: BTreeSet<u64>,
    pub files: BTreeMap<Ino, Choice>,
}

/// Pending ops per group: all subsets of lost ops up to this many, else prefixes
/// plus single losses.
pub(super) const SUBSET_OPS_MAX: usize = 4;

impl State {
    /// Adds to `lost` every op that depends on a lost one: a later op on the same
    /// (directory, name) slot cannot persist without the earlier one.
    pub(super) fn close_lost(&self, mut lost: BTreeSet<u64>) -> BTreeSet<u64> {
        for (j, later) in self.pending.iter().enumerate() {
            if lost.contains(&later.seq) {
                continue;
            }
            let depends = self.pending[..j]
                .iter()
                .any(|earlier| lost.contains(&earlier.seq) && earlier.shares_slot(later));
            if depends {
                lost.insert(later.seq);
            }
        }
        lost
    }

    /// The current namespace, walked once per batch of images.
    pub(super) fn now(&self) -> Now {
        let paths = self.walk();
        let reachable = paths.iter().map(|(_, ino)| *ino).collect();
        Now { paths, reachable }
    }

    /// Files reachable now whose content a power loss could change, by path.
    fn unsynced_files<'a>(&'a self, now: &Now) -> Vec<(PathBuf, Ino, &'a FileNode)> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (path, ino) in now.paths.iter().cloned() {
            if let Some(Node::File(file)) = self.nodes.get(&ino) {
                if file.is_unsynced() && seen.insert(ino) {
                    out.push((path, ino, file));
                }
            }
        }
        out
    }

    /// The image specs for a power loss, deterministic, deduplicated, in priority
    /// order (the images every sweep must see come first).
    pub(super) fn power_loss_specs(&self, now: &Now) -> Vec<Spec> {
        let files = self.unsynced_files(now);
        let all_ops: BTreeSet<u64> = self.pending.iter().map(|op| op.seq).collect();
        let durable_files: BTreeMap<Ino, Choice> = files
            .iter()
            .map(|(_, ino, file)| (*ino, durable_choice(file)))
            .collect();
        let mut specs = vec![
            Spec::default(),
            Spec {
                lost_ops: all_ops.clone(),
                files: durable_files.clone(),
            },
        ];
        for (_, ino, file) in &files {
            for choice in cuts(file) {
                specs.push(Spec {
                    lost_ops: BTreeSet::new(),
                    files: BTreeMap::from([(*ino, choice)]),
                });
            }
        }
        for lost in self.op_losses() {
            specs.push(Spec {
                lost_ops: lost,
                files: BTreeMap::new(),
            });
        }
        specs.push(Spec {
            lost_ops: BTreeSet::new(),
            files: durable_files,
        });
        specs.push(Spec {
            lost_ops: all_ops,
            files: BTreeMap::new(),
        });
        let mut seen = BTreeSet::new();
        specs.retain(|spec| seen.insert(spec.clone()));
        specs
    }

    /// The sets of pending directory operations a power loss may take, beyond
    /// none and all: per directory, its subsets (closed under dependencies) under
    /// [`Persistence::AnySubset`]; every suffix in issue order (the longest kept
    /// prefix first) under [`Persistence::OrderedMetadata`].
    fn op_losses(&self) -> Vec<BTreeSet<u64>> {
        match self.persistence {
            Persistence::AnySubset => self
                .op_groups()
                .iter()
                .flat_map(|group| group_losses(group))
                .map(|lost| self.close_lost(lost))
                .collect(),
            Persistence::OrderedMetadata => (0..self.pending.len())
                .rev()
                .map(|kept| self.pending[kept..].iter().map(|op| op.seq).collect())
                .collect(),
        }
    }

    /// Whether `lost` is a set of pending operations this state's persistence
    /// model can lose: closed under dependencies, and under
    /// [`Persistence::OrderedMetadata`] a suffix of the pending operations.
    pub(super) fn may_lose(&self, lost: &BTreeSet<u64>) -> Result<(), &'static str> {
        if self.close_lost(lost.clone()) != *lost {
            return Err("a kept directory op depends on a lost one (same directory entry)");
        }
        if self.persistence == Persistence::OrderedMetadata {
            let first_lost = self.pending.iter().position(|op| lost.contains(&op.seq));
            if let Some(first) = first_lost {
                if self.pending[first..]
                    .iter()
                    .any(|op| !lost.contains(&op.seq))
                {
                    return Err(
                        "under ordered-metadata persistence a power loss keeps a prefix of the \
                         directory ops, but a later op is kept after a lost one",
                    );
                }
            }
        }
        Ok(())
    }

    /// Pending op seqs grouped by the directory they were issued in.
    fn op_groups(&self) -> Vec<Vec<u64>> {
        let mut groups: BTreeMap<Ino, Vec<u64>> = BTreeMap::new();
        for op in &self.pending {
            let (dir, _) = op.parts[0].slot();
            groups.entry(dir).or_default().push(op.seq);
        }
        groups.into_values().collect()
    }

    /// The one-line descriptions of what `spec` loses.
    pub(super) fn lost_items(&self, now: &Now, spec: &Spec) -> Vec<LostItem> {
        let mut items: Vec<LostItem> = self
            .pending
            .iter()
            .filter(|op| spec.lost_ops.contains(&op.seq))
            .map(|op| LostItem::DirOp {
                seq: op.seq,
                dir: op.dir.clone(),
                op: op.desc.clone(),
            })
            .collect();
        for (path, ino, file) in self.unsynced_files(now) {
            match spec.files.get(&ino) {
                Some(Choice::Kept(kept)) => items.push(LostItem::FileBytes {
                    path,
                    kept: *kept as u64,
                    written: file.data.len() as u64,
                }),
                Some(Choice::Durable) => items.push(LostItem::FileRewrite { path }),
                Some(Choice::Doomed) => items.push(LostItem::FailedWriteback { path }),
                None => {}
            }
        }
        items
    }

    /// The spec a list of lost items describes, checked against this state.
    pub(super) fn spec_of(&self, lost: &[LostItem]) -> io::Result<Spec> {
        let invalid = |item: &LostItem, why: &str| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("lost item `{item}` does not fit this file system: {why}"),
            )
        };
        let mut spec = Spec::default();
        for item in lost {
            match item {
                LostItem::DirOp { seq, op, .. } => {
                    let pending = self.pending.iter().find(|p| p.seq == *seq);
                    match pending {
                        Some(p) if p.desc == *op => spec.lost_ops.insert(*seq),
                        _ => return Err(invalid(item, "no such pending directory op")),
                    };
                }
                LostItem::FileBytes {
                    path,
                    kept,
                    written,
                } => {
                    let ino = self.resolve(path).ok_or_else(|| invalid(item, "no file"))?;
                    let Some(Node::File(file)) = self.nodes.get(&ino) else {
                        return Err(invalid(item, "not a file"));
                    };
                    let kept = *kept as usize;
                    if *written != file.data.len() as u64 {
                        return Err(invalid(item, "written length differs"));
                    }
                    if kept < file.base_len || kept > file.data.len() {
                        return Err(invalid(item, "kept is outside the unsynced region"));
                    }
                    spec.files.insert(ino, Choice::Kept(kept));
                }
                LostItem::FileRewrite { path } => {
                    let ino = self.resolve(path).ok_or_else(|| invalid(item, "no file"))?;
                    match self.nodes.get(&ino) {
                        Some(Node::File(file)) if file.rewritten => {
                            spec.files.insert(ino, Choice::Durable);
                        }
                        _ => return Err(invalid(item, "no truncation since the last sync")),
                    }
                }
                LostItem::FailedWriteback { path } => {
                    let ino = self.resolve(path).ok_or_else(|| invalid(item, "no file"))?;
                    match self.nodes.get(&ino) {
                        Some(Node::File(file)) if !file.doomed.is_empty() => {
                            spec.files.insert(ino, Choice::Doomed);
                        }
                        _ => return Err(invalid(item, "no failed writeback")),
                    }
                }
            }
        }
        Ok(spec)
    }

    /// Builds the disk image `spec` describes: everything in it is durable.
    pub(super) fn image(&self, now: &Now, spec: &Spec) -> State {
        let mut entries: BTreeMap<Ino, BTreeMap<String, Ino>> = BTreeMap::new();
        for (&ino, node) in &self.nodes {
            if let Node::Dir(dir) = node {
                entries.insert(ino, dir.durable.clone());
            }
        }
        for op in &self.pending {
            if !spec.lost_ops.contains(&op.seq) {
                for part in &op.parts {
                    part.apply(&mut entries);
                }
            }
        }
        let mut image = State {
            nodes: BTreeMap::new(),
            next_ino: self.next_ino,
            pending: Vec::new(),
            next_seq: self.next_seq,
            persistence: self.persistence,
        };
        let mut stack = vec![ROOT];
        while let Some(ino) = stack.pop() {
            if image.nodes.contains_key(&ino) {
                continue;
            }
            let node = match self.nodes.get(&ino) {
                Some(Node::Dir(_)) => {
                    let mut kept = entries.remove(&ino).unwrap_or_default();
                    // An inode reachable twice is built once (the `contains_key` above).
                    kept.retain(|_, child| self.nodes.contains_key(child));
                    stack.extend(kept.values().rev().copied());
                    Node::Dir(DirNode {
                        entries: kept.clone(),
                        durable: kept,
                    })
                }
                Some(Node::File(file)) => {
                    let choice = match spec.files.get(&ino) {
                        Some(choice) => Some(*choice),
                        None if now.reachable.contains(&ino) => None,
                        None => Some(Choice::Durable),
                    };
                    let content = match choice {
                        None => file.data.clone(),
                        Some(Choice::Durable) => file.durable.clone(),
                        Some(Choice::Kept(n)) => file.data.prefix(n),
                        Some(Choice::Doomed) => file.data.zeroed(&file.doomed),
                    };
                    Node::File(FileNode::settled(content))
                }
                None => continue,
            };
            image.nodes.insert(ino, node);
        }
        image
    }

    /// The image of a process crash: everything completed, durability untouched.
    pub(super) fn process_image(&self) -> State {
        self.clone()
    }
}

/// What "only durable" means for one file.
fn durable_choice(file: &FileNode) -> Choice {
    if file.rewritten {
        Choice::Durable
    } else {
        Choice::Kept(file.base_len)
    }
}

/// The torn states tried for one file with unsynced data, most telling first:
/// none kept, a cut inside the last append, the boundary before the last append,
/// one byte short, a cut inside the first append, and every other append boundary.
pub(super) fn cuts(file: &FileNode) -> Vec<Choice> {
    let base = file.base_len;
    let len = file.data.len();
    let mut out = Vec::new();
    if !file.doomed.is_empty() {
        out.push(Choice::Doomed);
    }
    if file.rewritten {
        out.push(Choice::Durable);
    }
    if len <= base {
        return out;
    }
    let ends = &file.append_ends;
    assert_eq!(ends.last(), Some(&len), "append ends must cover the file");
    let last_start = if ends.len() >= 2 {
        ends[ends.len() - 2]
    } else {
        base
    };
    let mut kept = vec![
        base,
        last_start + (len - last_start) / 2,
        last_start,
        len - 1,
    ];
    if ends.len() >= 2 {
        kept.push(base + (ends[0] - base) / 2);
        kept.extend(&ends[..ends.len() - 1]);
    }
    let mut seen = BTreeSet::new();
    for k in kept {
        assert!(k >= base);
        if k < len && seen.insert(k) {
            out.push(Choice::Kept(k));
        }
    }
    out
}

/// Lost-op sets tried within one group of pending ops (in issue order).
fn group_losses(group: &[u64]) -> Vec<BTreeSet<u64>> {
    let mut out = Vec::new();
    if group.len() <= SUBSET_OPS_MAX {
        for mask in 1u32..(1 << group.len()) {
            let lost = group
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, seq)| *seq)
                .collect();
            out.push(lost);
        }
        return out;
    }
    // In-order prefixes kept (the rest lost), then each single op lost.
    for kept in 0..group.len() {
        out.push(group[kept..].iter().copied().collect());
    }
    for seq in group {
        out.push(BTreeSet::from([*seq]));
    }
    out
}

//! [`State`]: the inode table and the operations of the [`crate::fs::FileSystem`]
//! trait on it, with errors shaped like Linux's (`NotFound`, `AlreadyExists`,
//! `IsADirectory`, `NotADirectory`, `DirectoryNotEmpty`, `InvalidInput`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

use super::tree::{
    components, error, not_found, path_of, DirNode, FileNode, Ino, Node, Part, PendingOp, ROOT,
};

/// Everything a [`super::SimFs`] knows, behind its mutex.
#[derive(Debug, Clone)]
pub(super) struct State {
    pub nodes: BTreeMap<Ino, Node>,
    pub next_ino: Ino,
    /// Directory operations not yet durable, in issue order.
    pub pending: Vec<PendingOp>,
    pub next_seq: u64,
    /// Which pending operations a power loss may take.
    pub persistence: super::persistence::Persistence,
}

impl Default for State {
    fn default() -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert(ROOT, Node::Dir(DirNode::default()));
        State {
            nodes,
            next_ino: ROOT + 1,
            pending: Vec::new(),
            next_seq: 0,
            persistence: super::persistence::Persistence::default(),
        }
    }
}

impl State {
    pub fn resolve(&self, path: &Path) -> Option<Ino> {
        let mut ino = ROOT;
        for name in components(path) {
            match self.nodes.get(&ino)? {
                Node::Dir(dir) => ino = *dir.entries.get(&name)?,
                Node::File(_) => return None,
            }
        }
        Some(ino)
    }

    pub fn file(&self, path: &Path) -> io::Result<&FileNode> {
        let ino = self.resolve(path).ok_or_else(|| not_found(path))?;
        match self.nodes.get(&ino) {
            Some(Node::File(file)) => Ok(file),
            _ => Err(error(ErrorKind::IsADirectory, path, "is a directory")),
        }
    }

    pub fn file_mut(&mut self, path: &Path) -> io::Result<&mut FileNode> {
        let ino = self.resolve(path).ok_or_else(|| not_found(path))?;
        match self.nodes.get_mut(&ino) {
            Some(Node::File(file)) => Ok(file),
            _ => Err(error(ErrorKind::IsADirectory, path, "is a directory")),
        }
    }

    pub fn dir(&self, path: &Path) -> io::Result<(Ino, &DirNode)> {
        let ino = self.resolve(path).ok_or_else(|| not_found(path))?;
        match self.nodes.get(&ino) {
            Some(Node::Dir(dir)) => Ok((ino, dir)),
            _ => Err(error(ErrorKind::NotADirectory, path, "not a directory")),
        }
    }

    fn dir_mut(&mut self, ino: Ino) -> &mut DirNode {
        match self.nodes.get_mut(&ino) {
            Some(Node::Dir(dir)) => dir,
            _ => panic!("inode {ino} is not a directory"),
        }
    }

    /// The parent directory inode and the final name of `path`.
    fn parent(&self, path: &Path) -> io::Result<(Ino, String)> {
        let mut parts = components(path);
        let name = parts
            .pop()
            .ok_or_else(|| error(ErrorKind::InvalidInput, path, "the root has no parent"))?;
        let (ino, _) = self.dir(&path_of(&parts))?;
        Ok((ino, name))
    }

    fn alloc(&mut self, node: Node) -> Ino {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.nodes.insert(ino, node);
        ino
    }

    /// Applies `parts` to the current namespace and queues them as one pending op.
    fn record(&mut self, dir: PathBuf, desc: String, parts: Vec<Part>) {
        let mut unsynced_dirs = BTreeSet::new();
        for part in &parts {
            let (dir_ino, _) = part.slot();
            unsynced_dirs.insert(dir_ino);
            part.apply_to(&mut self.dir_mut(dir_ino).entries);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.pending.push(PendingOp {
            seq,
            dir,
            desc,
            parts,
            unsynced_dirs,
        });
    }

    pub fn create_dir_all(&mut self, path: &Path) -> io::Result<()> {
        let parts = components(path);
        let mut ino = ROOT;
        for (i, name) in parts.iter().enumerate() {
            let here = path_of(&parts[..i]);
            let entries = match self.nodes.get(&ino) {
                Some(Node::Dir(dir)) => &dir.entries,
                _ => return Err(error(ErrorKind::NotADirectory, &here, "not a directory")),
            };
            ino = match entries.get(name) {
                Some(&child) => child,
                None => {
                    let child = self.alloc(Node::Dir(DirNode::default()));
                    let link = Part::Link {
                        dir: ino,
                        name: name.clone(),
                        ino: child,
                    };
                    self.record(here, format!("mkdir {name}"), vec![link]);
                    child
                }
            };
        }
        match self.nodes.get(&ino) {
            Some(Node::Dir(_)) => Ok(()),
            _ => Err(error(
                ErrorKind::AlreadyExists,
                path,
                "exists and is a file",
            )),
        }
    }

    pub fn create_file(&mut self, path: &Path) -> io::Result<()> {
        let (dir, name) = self.parent(path)?;
        if self.resolve(path).is_some() {
            // Truncate the existing inode in place (O_TRUNC): a data change only.
            return self.file_mut(path).map(|file| file.set_len(0));
        }
        let ino = self.alloc(Node::File(FileNode::empty()));
        let parent = path_of(&components(path)[..components(path).len() - 1]);
        let link = Part::Link {
            dir,
            name: name.clone(),
            ino,
        };
        self.record(parent, format!("create {name}"), vec![link]);
        Ok(())
    }

    pub fn remove(&mut self, path: &Path, want_dir: bool) -> io::Result<()> {
        let (dir, name) = self.parent(path)?;
        let ino = self.resolve(path).ok_or_else(|| not_found(path))?;
        let is_dir = matches!(self.nodes.get(&ino), Some(Node::Dir(_)));
        match (want_dir, is_dir) {
            (false, true) => return Err(error(ErrorKind::IsADirectory, path, "is a directory")),
            (true, false) => return Err(error(ErrorKind::NotADirectory, path, "not a directory")),
            _ => {}
        }
        let parts = components(path);
        let parent = path_of(&parts[..parts.len() - 1]);
        let verb = if is_dir { "remove-dir" } else { "remove" };
        let unlink = Part::Unlink {
            dir,
            name: name.clone(),
            ino,
        };
        self.record(parent, format!("{verb} {name}"), vec![unlink]);
        Ok(())
    }

    pub fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        let (from_dir, from_name) = self.parent(from)?;
        let (to_dir, to_name) = self.parent(to)?;
        let ino = self.resolve(from).ok_or_else(|| not_found(from))?;
        let from_parts = components(from);
        let to_parts = components(to);
        if from_parts == to_parts {
            return Ok(());
        }
        let moving_dir = matches!(self.nodes.get(&ino), Some(Node::Dir(_)));
        if moving_dir && to_parts.starts_with(&from_parts) {
            return Err(error(
                ErrorKind::InvalidInput,
                to,
                "cannot move a directory into itself",
            ));
        }
        let mut parts = vec![Part::Unlink {
            dir: from_dir,
            name: from_name.clone(),
            ino,
        }];
        if let Some(old) = self.resolve(to) {
            match (moving_dir, self.nodes.get(&old)) {
                (false, Some(Node::Dir(_))) => {
                    return Err(error(ErrorKind::IsADirectory, to, "is a directory"))
                }
                (true, Some(Node::File(_))) => {
                    return Err(error(ErrorKind::NotADirectory, to, "not a directory"))
                }
                (true, Some(Node::Dir(dir))) if !dir.entries.is_empty() => {
                    return Err(error(
                        ErrorKind::DirectoryNotEmpty,
                        to,
                        "directory not empty",
                    ))
                }
                _ => {}
            }
            parts.push(Part::Unlink {
                dir: to_dir,
                name: to_name.clone(),
                ino: old,
            });
        }
        parts.push(Part::Link {
            dir: to_dir,
            name: to_name.clone(),
            ino,
        });
        let desc = if from_dir == to_dir {
            format!("rename {from_name} -> {to_name}")
        } else {
            format!(
                "rename {} -> {}",
                path_of(&from_parts).display(),
                path_of(&to_parts).display()
            )
        };
        self.record(path_of(&from_parts[..from_parts.len() - 1]), desc, parts);
        Ok(())
    }

    /// A second name `to` for the file inode at `from` (Linux `link(2)`): `EEXIST`
    /// if `to` exists, `EPERM` for a directory. One pending op in `to`'s
    /// directory, like a create; the inode's content and durability are shared.
    pub fn hard_link(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        let ino = self.resolve(from).ok_or_else(|| not_found(from))?;
        if matches!(self.nodes.get(&ino), Some(Node::Dir(_))) {
            return Err(error(
                ErrorKind::PermissionDenied,
                from,
                "hard link to a directory",
            ));
        }
        let (dir, name) = self.parent(to)?;
        if self.resolve(to).is_some() {
            return Err(error(ErrorKind::AlreadyExists, to, "file exists"));
        }
        let to_parts = components(to);
        let link = Part::Link {
            dir,
            name: name.clone(),
            ino,
        };
        self.record(
            path_of(&to_parts[..to_parts.len() - 1]),
            format!("link {} -> {name}", path_of(&components(from)).display()),
            vec![link],
        );
        Ok(())
    }

    /// True if a sync of `path` (a file for `sync_file`, a directory for `sync_dir`)
    /// would make nothing durable that is not already: the file has no unsynced
    /// bytes and no truncation pending, or no pending op waits for the directory's
    /// sync. A missing path is not idle (the sync fails).
    pub fn sync_is_idle(&self, path: &Path, dir: bool) -> bool {
        if dir {
            match self.dir(path) {
                Ok((ino, _)) => !self
                    .pending
                    .iter()
                    .any(|op| op.unsynced_dirs.contains(&ino)),
                Err(_) => false,
            }
        } else {
            match self.file(path) {
                Ok(file) => !file.rewritten && file.base_len == file.data.len(),
                Err(_) => false,
            }
        }
    }

    /// Makes durable every pending op that no longer waits for any directory sync,
    /// together with the earlier ops on the same (directory, name) slots.
    pub fn sync_dir(&mut self, path: &Path) -> io::Result<()> {
        let (ino, _) = self.dir(path)?;
        for op in &mut self.pending {
            op.unsynced_dirs.remove(&ino);
        }
        let mut commit: Vec<bool> = self
            .pending
            .iter()
            .map(|op| op.unsynced_dirs.is_empty())
            .collect();
        // In order: committing an operation commits every one issued before it.
        if self.persistence == super::persistence::Persistence::OrderedMetadata {
            if let Some(last) = commit.iter().rposition(|&c| c) {
                commit[..last].iter_mut().for_each(|c| *c = true);
            }
        }
        for j in (0..self.pending.len()).rev() {
            if commit[j] {
                let later = &self.pending[j];
                for (earlier, committed) in self.pending.iter().zip(commit.iter_mut()).take(j) {
                    if earlier.shares_slot(later) {
                        *committed = true;
                    }
                }
            }
        }
        let pending = std::mem::take(&mut self.pending);
        for (op, committed) in pending.into_iter().zip(commit) {
            if !committed {
                self.pending.push(op);
                continue;
            }
            for part in &op.parts {
                let (dir_ino, _) = part.slot();
                part.apply_to(&mut self.dir_mut(dir_ino).durable);
            }
        }
        Ok(())
    }

    /// Makes everything durable at once: every file's data and every pending op.
    pub fn settle(&mut self) {
        // The current entries already hold every pending op's effect.
        self.pending.clear();
        for node in self.nodes.values_mut() {
            match node {
                Node::File(file) => file.sync(),
                Node::Dir(dir) => dir.durable = dir.entries.clone(),
            }
        }
    }

    /// Every file and directory reachable in the current namespace, by path.
    pub fn walk(&self) -> Vec<(PathBuf, Ino)> {
        let mut out = Vec::new();
        let mut stack = vec![(PathBuf::from("/"), ROOT)];
        let mut seen = BTreeSet::new();
        while let Some((path, ino)) = stack.pop() {
            // A directory is walked once; a file is listed under each of its names
            // (hard links).
            let is_dir = matches!(self.nodes.get(&ino), Some(Node::Dir(_)));
            if is_dir && !seen.insert(ino) {
                continue;
            }
            if let Some(Node::Dir(dir)) = self.nodes.get(&ino) {
                for (name, &child) in dir.entries.iter().rev() {
                    stack.push((path.join(name), child));
                }
            }
            out.push((path, ino));
        }
        out.sort();
        out
    }
}

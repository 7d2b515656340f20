//! The in-memory tree behind [`super::SimFs`]: inodes, the current namespace, the
//! durable namespace, and the directory operations not yet made durable.
//!
//! Every file and directory is an inode. A directory keeps two entry maps: the
//! *current* one (what later calls see) and the *durable* one (what survives a
//! power loss once every pending operation is dropped). A directory operation
//! (create, mkdir, rename, remove) changes the current map at once and is queued as
//! a [`PendingOp`] made of inode-based [`Part`]s; `sync_dir` moves it into the
//! durable maps. Because parts name inodes, any subset of pending operations can be
//! replayed over the durable maps, which is how crash images are built.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

pub(super) type Ino = u64;
pub(super) const ROOT: Ino = 0;

/// File bytes: a prefix view of a shared buffer, so a crash image (or a torn cut of
/// a file) costs no copy. Writing copies the buffer only when it is shared.
#[derive(Debug, Clone, Default)]
pub(super) struct Content {
    buf: Arc<Vec<u8>>,
    len: usize,
}

impl Content {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The first `len` bytes, sharing this buffer.
    pub fn prefix(&self, len: usize) -> Content {
        assert!(len <= self.len, "prefix {len} beyond length {}", self.len);
        Content {
            buf: Arc::clone(&self.buf),
            len,
        }
    }

    /// True if both views share one buffer (no copy was made).
    #[cfg(test)]
    pub fn shares_buffer(&self, other: &Content) -> bool {
        Arc::ptr_eq(&self.buf, &other.buf)
    }

    /// The buffer, owned by this view alone and exactly `len` long.
    fn owned(&mut self) -> &mut Vec<u8> {
        if Arc::get_mut(&mut self.buf).is_none() {
            self.buf = Arc::new(self.buf[..self.len].to_vec());
        }
        let buf = Arc::get_mut(&mut self.buf).expect("unique after the copy above");
        buf.truncate(self.len);
        buf
    }

    pub fn extend(&mut self, bytes: &[u8]) {
        self.owned().extend_from_slice(bytes);
        self.len += bytes.len();
        assert_eq!(self.buf.len(), self.len);
    }

    /// A copy with `ranges` (clamped to the length) set to zero bytes.
    pub fn zeroed(&self, ranges: &[(usize, usize)]) -> Content {
        let mut buf = self.bytes().to_vec();
        for &(start, end) in ranges {
            let end = end.min(buf.len());
            if start < end {
                buf[start..end].fill(0);
            }
        }
        Content {
            len: buf.len(),
            buf: Arc::new(buf),
        }
    }

    pub fn truncate(&mut self, len: usize) {
        assert!(len <= self.len);
        if let Some(buf) = Arc::get_mut(&mut self.buf) {
            buf.truncate(len);
        }
        self.len = len;
    }
}

/// A file inode: what was written and what `sync_file` made durable.
#[derive(Debug, Clone)]
pub(super) struct FileNode {
    /// Content as later reads see it.
    pub data: Content,
    /// Content as of the last `sync_file` (empty for a never-synced file).
    pub durable: Content,
    /// Start of the unsynced region: `data[..base_len]` is settled, and a power loss
    /// keeps `data[..k]` for some `k` in `base_len..=data.len()`.
    pub base_len: usize,
    /// A truncation (`set_len` below the durable length, or `create_file` over a
    /// non-empty file) happened since the last sync: `data[..base_len]` is not the
    /// durable content, and losing the change brings `durable` back whole.
    pub rewritten: bool,
    /// End offset of each append since `base_len`, ascending.
    pub append_ends: Vec<usize>,
    /// Byte ranges whose writeback failed: a `sync_file` failed (an injected
    /// fault) while they were unsynced. Linux (since 4.13) then marks those pages
    /// clean: reads still see them, but no later `sync_file` writes them, so a power
    /// loss may leave zeros there even after a later sync "succeeded" (fsyncgate).
    /// Only a truncation below them drops them.
    pub doomed: Vec<(usize, usize)>,
}

impl FileNode {
    pub fn empty() -> Self {
        FileNode {
            data: Content::default(),
            durable: Content::default(),
            base_len: 0,
            rewritten: false,
            append_ends: Vec::new(),
            doomed: Vec::new(),
        }
    }

    /// A settled file holding `content` (both written and durable).
    pub fn settled(content: Content) -> Self {
        FileNode {
            base_len: content.len(),
            data: content.clone(),
            durable: content,
            rewritten: false,
            append_ends: Vec::new(),
            doomed: Vec::new(),
        }
    }

    /// True if a power loss could change this file's content.
    pub fn is_unsynced(&self) -> bool {
        self.rewritten || self.data.len() != self.base_len || !self.doomed.is_empty()
    }

    /// A `sync_file` of this file failed: its unsynced bytes will never be written
    /// back (see `doomed`).
    pub fn doom_unsynced(&mut self) {
        if self.data.len() > self.base_len {
            self.doomed.push((self.base_len, self.data.len()));
        }
    }

    pub fn append(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.data.extend(bytes);
        self.append_ends.push(self.data.len());
    }

    pub fn set_len(&mut self, len: usize) {
        // A truncation drops the pages beyond it, doomed ones included.
        self.doomed.retain(|&(start, _)| start < len);
        for range in &mut self.doomed {
            range.1 = range.1.min(len);
        }
        let old_len = self.data.len();
        if len >= old_len {
            // Zero-extension behaves like an append of zeros.
            let zeros = vec![0u8; len - old_len];
            self.append(&zeros);
            return;
        }
        self.data.truncate(len);
        if len >= self.base_len {
            // Cutting back unsynced appends: in-order persistence keeps a prefix.
            self.append_ends.retain(|&end| end < len);
            if len > self.base_len {
                self.append_ends.push(len);
            }
        } else {
            // Cutting into settled bytes: the durable content may come back whole.
            self.rewritten = true;
            self.base_len = len;
            self.append_ends.clear();
        }
        assert_eq!(self.data.len(), len);
    }

    pub fn sync(&mut self) {
        self.durable = self.data.clone();
        self.base_len = self.data.len();
        self.rewritten = false;
        self.append_ends.clear();
    }
}

/// A directory inode.
#[derive(Debug, Clone, Default)]
pub(super) struct DirNode {
    pub entries: BTreeMap<String, Ino>,
    pub durable: BTreeMap<String, Ino>,
}

#[derive(Debug, Clone)]
pub(super) enum Node {
    File(FileNode),
    Dir(DirNode),
}

/// One inode-level change of a directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Part {
    Link { dir: Ino, name: String, ino: Ino },
    Unlink { dir: Ino, name: String, ino: Ino },
}

impl Part {
    pub fn slot(&self) -> (Ino, &str) {
        match self {
            Part::Link { dir, name, .. } | Part::Unlink { dir, name, .. } => (*dir, name),
        }
    }

    /// Applies this part to a map of directory entries (by directory inode).
    pub fn apply(&self, dirs: &mut BTreeMap<Ino, BTreeMap<String, Ino>>) {
        let (dir, _) = self.slot();
        self.apply_to(dirs.entry(dir).or_default());
    }

    /// Applies this part to the entries of its own directory.
    pub fn apply_to(&self, entries: &mut BTreeMap<String, Ino>) {
        match self {
            Part::Link { name, ino, .. } => {
                entries.insert(name.clone(), *ino);
            }
            Part::Unlink { name, ino, .. } => {
                if entries.get(name) == Some(ino) {
                    entries.remove(name);
                }
            }
        }
    }
}

/// A directory operation completed but not yet durable.
#[derive(Debug, Clone)]
pub(super) struct PendingOp {
    /// Global sequence number, unique for the life of the file system.
    pub seq: u64,
    /// The directory the operation was issued in (the source's, for a rename), as
    /// a path at the time of the call.
    pub dir: PathBuf,
    /// One-line description: `create x`, `mkdir d`, `remove x`, `remove-dir d`,
    /// `rename a -> b` (same directory) or `rename /p/a -> /q/b`.
    pub desc: String,
    pub parts: Vec<Part>,
    /// Directories that still need a `sync_dir` before the op is durable.
    pub unsynced_dirs: BTreeSet<Ino>,
}

impl PendingOp {
    /// True if both operations touch the same (directory, name) slot.
    pub fn shares_slot(&self, other: &PendingOp) -> bool {
        self.parts
            .iter()
            .any(|a| other.parts.iter().any(|b| a.slot() == b.slot()))
    }
}

/// Splits a path into normal components. `/`, `.` and a leading root are ignored,
/// `..` pops, so `/a/./b` and `a/b` name the same entry.
pub(super) fn components(path: &Path) -> Vec<String> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => parts.push(name.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    parts
}

/// The canonical absolute path of a list of components.
pub(super) fn path_of(parts: &[String]) -> PathBuf {
    let mut path = PathBuf::from("/");
    for part in parts {
        path.push(part);
    }
    path
}

pub(super) fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", path.display()),
    )
}

pub(super) fn error(kind: io::ErrorKind, path: &Path, what: &str) -> io::Error {
    io::Error::new(kind, format!("{}: {what}", path.display()))
}

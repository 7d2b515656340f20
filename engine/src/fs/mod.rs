//! The file-system seam: the only module that may touch `std::fs`.
//!
//! Every engine IO goes through [`FileSystem`], so tests can swap the real disk
//! ([`StdFs`]) for a simulated one that knows which bytes a power loss may take
//! away. Files are named by path; implementations may cache open handles.
//!
//! Durability vocabulary used by every method below:
//! * *completed*: visible to later calls in this process; survives a process crash.
//! * *durable*: survives a power loss. File data becomes durable with
//!   [`FileSystem::sync_file`]; a directory entry (create, rename, remove) becomes
//!   durable with [`FileSystem::sync_dir`] on the directory that holds it.
//!
//! * `std_fs`: [`StdFs`], the real disk, with cached file handles (`handles`: at
//!   most a budget of them open, the least recently used closed first).
//! * [`sim`]: [`sim::SimFs`], an in-memory file system that knows what a crash may
//!   take away, with injected I/O errors.
//! * `trace`: [`TraceFs`], any file system with a record of every change it made.
//! * [`failpoint`]: every fail point of the engine, by name.

pub mod failpoint;
mod handles;
pub mod sim;
mod std_fs;
#[cfg(feature = "testing")]
pub(crate) use std_fs::start_writeback;
pub(crate) mod trace;

use std::fmt::Debug;
use std::io;
use std::path::{Component, Path, PathBuf};

pub use handles::OPEN_FILES_MAX_DEFAULT;
pub use std_fs::StdFs;
pub use trace::{TraceCall, TraceFs, TracedOp};

/// A small, object-safe file-system interface with explicit durability contracts.
pub trait FileSystem: Debug + Send + Sync {
    /// Creates `path` and any missing parents as directories. Completed on return;
    /// each new entry is durable only after `sync_dir` of its parent.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;

    /// Creates an empty file at `path`, truncating an existing one. The directory
    /// entry is durable only after `sync_dir(parent)`; the (empty) content after
    /// `sync_file(path)`.
    fn create_file(&self, path: &Path) -> io::Result<()>;

    /// Appends `data` at the end of the existing file `path`. Completed on return;
    /// durable only after `sync_file(path)`. Before that, a power loss may keep any
    /// prefix of the appended bytes.
    fn append(&self, path: &Path, data: &[u8]) -> io::Result<()>;

    /// [`FileSystem::append`] of the concatenation of `parts`, as one append (the
    /// same contract: a power loss may keep any prefix of the concatenation). Lets a
    /// caller write bytes that live in several buffers without copying them into
    /// one first; [`StdFs`] makes it one `writev`. The default concatenates.
    fn append_vectored(&self, path: &Path, parts: &[&[u8]]) -> io::Result<()> {
        match parts {
            [one] => self.append(path, one),
            _ => self.append(path, &parts.concat()),
        }
    }

    /// Starts writing the file's dirty pages to the device and returns without
    /// waiting (Linux's `sync_file_range(SYNC_FILE_RANGE_WRITE)`): a hint that
    /// lets the disk work while the caller goes on, so a later `sync_file` finds
    /// less to write. It makes nothing durable and orders nothing: a power loss
    /// may still keep any prefix of the bytes appended since the last
    /// `sync_file`, exactly as without it, so the simulated file system (and the
    /// crash states it enumerates) ignores it. A write-back error it meets stays
    /// with the file for the next `sync_file` to report (Linux records it in the
    /// mapping's error sequence, which only a call that waits consumes). The
    /// default does nothing.
    fn start_writeback(&self, path: &Path) -> io::Result<()> {
        let _ = path;
        Ok(())
    }

    /// Reads up to `buf.len()` bytes at byte `offset`; returns how many were read
    /// (fewer only at end of file). Never changes anything.
    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize>;

    /// Truncates (or zero-extends) the file to `len` bytes. Durable after `sync_file`.
    fn set_len(&self, path: &Path, len: u64) -> io::Result<()>;

    /// Makes the file's data and length durable (fsync).
    fn sync_file(&self, path: &Path) -> io::Result<()>;

    /// Makes the directory's entries durable: every create, rename into or out of,
    /// and remove inside `path` completed before this call (fsync of the directory).
    fn sync_dir(&self, path: &Path) -> io::Result<()>;

    /// Atomically renames a file or directory, replacing an existing *file* at `to`.
    /// Completed on return; durable after `sync_dir` of both parents.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Makes `to` a second name (a hard link) of the existing *file* `from`; `to`
    /// must not exist. Completed on return; the new entry is durable after
    /// `sync_dir` of `to`'s parent. The two names share one inode: the data is
    /// durable exactly as far as it already was (`sync_file` of either name), and
    /// removing either name leaves the other (and the data) intact. Writing through
    /// one name changes what the other reads, so the engine links only files it
    /// never writes again (closed segments and their index files).
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes a file. Durable after `sync_dir(parent)`.
    fn remove_file(&self, path: &Path) -> io::Result<()>;

    /// Removes a directory and everything under it. Durable after `sync_dir(parent)`.
    fn remove_dir_all(&self, path: &Path) -> io::Result<()>;

    /// Names (not paths) of the entries of a directory, sorted.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>>;

    /// [`FileSystem::list_dir`] with whether each entry is a directory
    /// ([`FileSystem::is_dir`]). The default asks `is_dir` of each entry; a file
    /// system that learns the kinds with the listing (`StdFs`: the directory
    /// entries' types, no `stat` per entry) answers without.
    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(String, bool)>> {
        let names = self.list_dir(path)?;
        Ok(names
            .into_iter()
            .map(|name| {
                let dir = self.is_dir(&path.join(&name));
                (name, dir)
            })
            .collect())
    }

    /// True if a file or directory exists at `path`.
    fn exists(&self, path: &Path) -> bool;

    /// True if `path` is a directory.
    fn is_dir(&self, path: &Path) -> bool;

    /// Length of the file in bytes.
    fn len(&self, path: &Path) -> io::Result<u64>;

    /// The path `path` names with no `.` or `..` component, no trailing slash and
    /// no symbolic link: where a create, rename or sibling of `path` really lands.
    /// A path whose last components do not exist (a log `append` creates, a
    /// symlink whose target an install renamed away) resolves to where they would
    /// be created. Changes nothing. The engine resolves a log directory once, at
    /// open, and derives every sibling name (docs/design.md section 6) from the
    /// result. The default is [`normalize_lexically`], right for a file system
    /// without symbolic links (the simulated ones); a wrapper over the real disk
    /// forwards it.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        Ok(normalize_lexically(path))
    }

    /// Reads the whole file.
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        let len = self.len(path)?;
        let len = usize::try_from(len).map_err(|_| io::Error::other("file too large"))?;
        let mut buf = vec![0u8; len];
        let mut done = 0;
        while done < len {
            let n = self.read_at(path, done as u64, &mut buf[done..])?;
            if n == 0 {
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
            done += n;
        }
        Ok(buf)
    }

    /// The whole file as shared, immutable bytes, for a file nobody changes while
    /// they are alive: the engine calls it only for closed segments, which it never
    /// appends to or truncates (retention and compaction remove or replace whole
    /// files, which leaves an existing view intact). [`StdFs`] maps the file
    /// read-only (no copy; pages come from the page cache as they are touched); the
    /// default reads it. A file truncated by another process while mapped makes a
    /// read of the lost pages fault (SIGBUS), as with any memory-mapped store.
    fn map(&self, path: &Path) -> io::Result<bytes::Bytes> {
        self.read_all(path).map(bytes::Bytes::from)
    }

    /// Takes an exclusive lock on the lock file `path` without waiting, creating the
    /// file if it is missing; the lock is held until the returned guard drops or the
    /// process dies (the kernel releases it: a `kill -9` leaves no stale lock). A
    /// lock another holder keeps is `ErrorKind::WouldBlock`. The file holds no
    /// bytes and is not protocol state (recovery never reads or removes it).
    fn try_lock(&self, path: &Path) -> io::Result<FileLock>;

    /// Creates `path` holding exactly `data` (create + append). Not durable by itself.
    fn write_new(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.create_file(path)?;
        self.append(path, data)
    }
}

/// Why [`FileSystem::try_lock`] was refused: the inner error of its
/// `ErrorKind::WouldBlock`, naming the holder where the file system knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHeld {
    /// The process holding the lock (Linux: from `/proc/locks`).
    pub holder_pid: Option<u32>,
}

impl LockHeld {
    /// The `WouldBlock` error that carries this.
    pub fn into_error(self) -> io::Error {
        io::Error::new(io::ErrorKind::WouldBlock, self)
    }

    /// The `LockHeld` inside `error`, if it is one.
    pub fn of(error: &io::Error) -> Option<&LockHeld> {
        error.get_ref().and_then(|inner| inner.downcast_ref())
    }
}

impl std::fmt::Display for LockHeld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.holder_pid {
            Some(pid) => write!(f, "lock held by process {pid}"),
            None => f.write_str("lock held by another writer"),
        }
    }
}

impl std::error::Error for LockHeld {}

/// An exclusive lock taken by [`FileSystem::try_lock`], released when dropped.
pub struct FileLock {
    _held: Box<dyn Send + Sync>,
}

impl FileLock {
    /// A lock held for as long as `held` lives (its drop releases it).
    pub fn new(held: impl Send + Sync + 'static) -> FileLock {
        FileLock {
            _held: Box::new(held),
        }
    }
}

impl Debug for FileLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FileLock")
    }
}

/// Reads the whole file `path` if it holds at most `bytes_max` bytes; `None`, with
/// nothing read, if it holds more. Every file of ours has a size its format bounds
/// (a checkpoint is a few bytes, an index at most the configured index size), and
/// its length is untrusted like every number on disk: a larger file is damage,
/// found before anything is allocated for it. The bytes read are the length found
/// first, whatever the file does meanwhile.
pub fn read_bounded(
    fs: &dyn FileSystem,
    path: &Path,
    bytes_max: u64,
) -> io::Result<Option<Vec<u8>>> {
    let len = fs.len(path)?;
    if len > bytes_max {
        return Ok(None);
    }
    let len = usize::try_from(len).map_err(|_| io::Error::other("file too large"))?;
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while let Some(rest) = buf.get_mut(done..).filter(|rest| !rest.is_empty()) {
        let n = fs.read_at(path, done as u64, rest)?;
        if n == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        done += n;
    }
    Ok(Some(buf))
}

/// `path` without `.` components or a trailing slash, each `..` taking away the
/// component before it (none above the root or above the start of a relative
/// path). Pure: correct when no component is a symbolic link.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

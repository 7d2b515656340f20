//! [`SimFs`]: an in-memory [`FileSystem`] that knows what a crash may take away.
//!
//! It keeps, per file, the bytes written and the bytes made durable by
//! [`FileSystem::sync_file`], and per directory the entries made durable by
//! [`FileSystem::sync_dir`]. [`SimFs::crash_images`] lists the disk states a crash
//! may leave (each a fresh `SimFs` the engine can open), each with the exact
//! [`LostItem`]s it lost; [`SimFs::crash_image_with`] rebuilds one image from that
//! list. The persistence model is docs/verification.md,
//! "The simulated file system and its persistence model".
//!
//! Fault injection counts *mutating* calls (create_dir_all, create_file, append,
//! set_len, sync_file, sync_dir, rename, hard_link, remove_file, remove_dir_all),
//! numbered from
//! 0: [`SimFs::set_crash_before`] freezes the state before call `k` and fails it and
//! every later call; [`SimFs::fail_nth`] fails only call `k` (state untouched) and
//! lets later calls work; [`SimFs::fail_nth_with`] does the same with a real error
//! (`EIO`, `ENOSPC`, or a short append that keeps a prefix: [`FaultKind`]) and
//! records it in [`SimFs::fired_faults`].
//!
//! ```
//! use std::path::Path;
//! use seglog::fs::{FileSystem, sim::{CrashMode, SimFs}};
//!
//! let fs = SimFs::new();
//! fs.create_dir_all(Path::new("/log")).unwrap();
//! fs.write_new(Path::new("/log/a"), b"hello").unwrap();
//! fs.sync_file(Path::new("/log/a")).unwrap();
//! // The directory was never synced: a power loss may drop `a` altogether.
//! let images = fs.crash_images(CrashMode::PowerLoss, 100);
//! assert!(images.iter().any(|image| !image.fs.exists(Path::new("/log/a"))));
//! assert!(images.iter().any(|image| image.fs.exists(Path::new("/log/a"))));
//! ```
//!
//! * `tree`: the inodes, the current and the durable namespace, and the directory
//!   operations not yet durable; `state`: the [`FileSystem`] calls on it, with
//!   Linux's errors.
//! * `crash`: the disk states a power loss may leave, and what each lost.
//! * `fault`: injected I/O errors and what a failing call leaves.
//! * `persistence`: [`Persistence`], which directory operations a power loss may
//!   take (any subset, or a prefix in issue order).
//! * `descriptors`, `reads`: the descriptors the real disk would hold, and the bytes
//!   read from a chosen file.

mod crash;
mod descriptors;
mod fault;
mod persistence;
mod reads;
mod state;
mod tree;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

pub use crash::{CrashMode, LostItem};
pub use descriptors::DescriptorCount;
pub use fault::{Call, FaultKind, FiredFault, EIO, EMFILE, ENOSPC};
pub use persistence::Persistence;
pub use reads::ReadCount;

use super::{FileLock, FileSystem};
use state::State;
use tree::{error, Node};

/// The message of the error every call returns once the simulated crash happened.
pub const CRASH_MESSAGE: &str = "simulated crash";
/// The message of an error injected by [`SimFs::fail_nth`].
pub const INJECTED_MESSAGE: &str = "injected io error";

/// One disk state a crash may leave, and what the crash took away to get there.
#[derive(Debug)]
pub struct CrashImage {
    /// The file system as the crash left it; recovery runs on it.
    pub fs: SimFs,
    /// Empty for the "everything completed" image.
    pub lost: Vec<LostItem>,
}

#[derive(Debug, Default)]
struct Control {
    /// Mutating calls started so far (the number of the next one).
    ops: u64,
    crash_before: Option<u64>,
    crashed: bool,
    fail_ops: BTreeSet<u64>,
    /// Calls that fail with a real error ([`SimFs::fail_nth_with`]).
    faults: BTreeMap<u64, FaultKind>,
    /// The faults of `faults` that fired, in order.
    fired: Vec<FiredFault>,
    /// The disk is full from this call on ([`FaultKind::DiskFull`]).
    full_from: Option<u64>,
    /// Sync calls (by mutating-call number) that complete as no-ops: the sync
    /// ablation's "this one fsync never happened".
    skip_syncs: BTreeSet<u64>,
    /// Every sync call started: its mutating-call number and what it syncs.
    syncs: Vec<(u64, SyncCall)>,
}

/// One `sync_file` or `sync_dir` call, as the sync ablation lists it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SyncCall {
    /// `sync_file` or `sync_dir`.
    pub kind: &'static str,
    /// The file or directory synced.
    pub path: PathBuf,
    /// Nothing was pending for it when the call started (no unsynced bytes of the
    /// file, no directory operation waiting for this directory's sync): the call made
    /// nothing durable, so making it a no-op changes no crash image of this run.
    pub idle: bool,
}

#[derive(Default)]
struct Inner {
    state: State,
    control: Control,
    reads: reads::Reads,
    /// The descriptor count, once started ([`SimFs::count_descriptors`]).
    descriptors: Option<descriptors::Descriptors>,
}

/// An in-memory file system with a power-loss model. Usable as `Arc<dyn FileSystem>`;
/// crash control goes through `&self` (interior mutability).
#[derive(Default)]
pub struct SimFs {
    inner: Mutex<Inner>,
    /// Paths whose lock a [`FileLock`] holds ([`FileSystem::try_lock`]). Not a
    /// file of the simulated disk: locks are process state, which a crash image
    /// (a new `SimFs`) starts without, as a restarted process does.
    locks: Arc<Mutex<BTreeSet<PathBuf>>>,
}

/// A held [`SimFs`] lock; its drop releases the path.
struct SimLock {
    locks: Arc<Mutex<BTreeSet<PathBuf>>>,
    path: PathBuf,
}

impl Drop for SimLock {
    fn drop(&mut self) {
        let removed = self
            .locks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.path);
        debug_assert!(removed, "a lock released twice");
    }
}

impl fmt::Debug for SimFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.lock();
        f.debug_struct("SimFs")
            .field("inodes", &inner.state.nodes.len())
            .field("pending_dir_ops", &inner.state.pending.len())
            .field("control", &inner.control)
            .finish()
    }
}

impl SimFs {
    /// An empty file system holding only the root directory `/`.
    pub fn new() -> Self {
        Self::default()
    }

    fn from_state(state: State) -> Self {
        SimFs {
            inner: Mutex::new(Inner {
                state,
                control: Control::default(),
                reads: reads::Reads::default(),
                descriptors: None,
            }),
            locks: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writer locks held now.
    fn locks_held(&self) -> usize {
        self.locks.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The descriptor count's view of a call on `path` (`descriptors`), if counting.
    fn touch(&self, path: &Path, how: descriptors::Use) {
        let locks = self.locks_held();
        if let Some(count) = self.lock().descriptors.as_mut() {
            count.touch(path, how, locks);
        }
    }

    /// `path` renamed or removed: the descriptor count forgets its handles.
    fn forget(&self, path: &Path) {
        if let Some(count) = self.lock().descriptors.as_mut() {
            count.forget(path);
        }
    }

    /// Every call from the `k`-th mutating call on (0-based, counted by
    /// [`SimFs::mutating_ops`]) fails with `ErrorKind::Other` "simulated crash",
    /// and the state stays as it was before call `k`. If call `k` already
    /// started (`k < mutating_ops()`), the crash happens at once.
    pub fn set_crash_before(&self, k: u64) {
        let mut inner = self.lock();
        inner.control.crash_before = Some(k);
        if inner.control.ops > k {
            inner.control.crashed = true;
        }
    }

    /// True once the simulated crash happened.
    pub fn is_crashed(&self) -> bool {
        self.lock().control.crashed
    }

    /// How many mutating calls were started so far (failed ones included, the
    /// crashed one and later excluded).
    pub fn mutating_ops(&self) -> u64 {
        self.lock().control.ops
    }

    /// Makes the `k`-th mutating call fail with `ErrorKind::Other` "injected io
    /// error" without changing anything; later calls work. May be called for several `k`.
    pub fn fail_nth(&self, k: u64) {
        self.lock().control.fail_ops.insert(k);
    }

    /// Makes the sync call numbered `k` (a mutating-call number, see
    /// [`SimFs::syncs`]) complete without making anything durable: the sync ablation.
    /// A call `k` that is not a sync is not affected.
    pub fn skip_sync(&self, k: u64) {
        self.lock().control.skip_syncs.insert(k);
    }

    /// Every `sync_file` / `sync_dir` call started so far, with its mutating-call number.
    pub fn syncs(&self) -> Vec<(u64, SyncCall)> {
        self.lock().control.syncs.clone()
    }

    /// Runs a sync call (`run` goes through the gates), as a no-op that still
    /// counts as a call if the ablation skips it.
    fn sync(
        &self,
        call: Call,
        kind: &'static str,
        path: &Path,
        run: impl FnOnce(&SimFs) -> io::Result<()>,
    ) -> io::Result<()> {
        let skip = {
            let mut inner = self.lock();
            let k = inner.control.ops;
            let idle = inner.state.sync_is_idle(path, kind == "sync_dir");
            let call = SyncCall {
                kind,
                path: path.to_path_buf(),
                idle,
            };
            inner.control.syncs.push((k, call));
            inner.control.skip_syncs.contains(&k)
                | crate::fs::failpoint::sync_ablated_here(|| !idle)
        };
        if skip {
            self.mutate(call, path, |_| Ok(()))
        } else {
            run(self)
        }
    }

    /// Makes the `k`-th mutating call fail with the error of `kind` (see
    /// [`FaultKind`] for what the failing call leaves behind); later calls work.
    /// The fault is listed by [`SimFs::fired_faults`] once it fires.
    pub fn fail_nth_with(&self, k: u64, kind: FaultKind) {
        let control = &mut self.lock().control;
        if kind == FaultKind::DiskFull {
            control.full_from = Some(k);
        } else {
            control.faults.insert(k, kind);
        }
    }

    /// Drops the faults set by [`SimFs::fail_nth_with`] that have not fired yet,
    /// and frees a full disk.
    pub fn clear_faults(&self) {
        let control = &mut self.lock().control;
        control.faults.clear();
        control.full_from = None;
    }

    /// True while the disk is full ([`FaultKind::DiskFull`] from a call already made).
    pub fn is_full(&self) -> bool {
        let control = &self.lock().control;
        control.full_from.is_some_and(|from| from < control.ops)
    }

    /// The faults set by [`SimFs::fail_nth_with`] that fired so far, in order.
    pub fn fired_faults(&self) -> Vec<FiredFault> {
        self.lock().control.fired.clone()
    }

    /// Sets which directory operations a power loss may take ([`Persistence`]); the
    /// crash images inherit it, so a recovery's own crash images follow the same
    /// model.
    pub fn set_persistence(&self, persistence: Persistence) {
        self.lock().state.persistence = persistence;
    }

    /// The persistence model of this file system.
    pub fn persistence(&self) -> Persistence {
        self.lock().state.persistence
    }

    /// The disk images a crash of `mode` may leave, at most `limit`, in a fixed
    /// order for a given state. For [`CrashMode::PowerLoss`] the first image is
    /// "everything completed" and the second "only durable"; then, for each file
    /// with unsynced data, its torn cuts; then the directory-op subsets (under
    /// [`Persistence::OrderedMetadata`], the kept prefixes); then the mixed corners. For [`CrashMode::Process`] there is one image.
    pub fn crash_images(&self, mode: CrashMode, limit: usize) -> Vec<CrashImage> {
        let inner = self.lock();
        let state = &inner.state;
        match mode {
            CrashMode::Process => vec![CrashImage {
                fs: SimFs::from_state(state.process_image()),
                lost: Vec::new(),
            }]
            .into_iter()
            .take(limit)
            .collect(),
            CrashMode::PowerLoss => {
                let now = state.now();
                state
                    .power_loss_specs(&now)
                    .into_iter()
                    .take(limit)
                    .map(|spec| CrashImage {
                        fs: SimFs::from_state(state.image(&now, &spec)),
                        lost: state.lost_items(&now, &spec),
                    })
                    .collect()
            }
        }
    }

    /// Rebuilds the power-loss image that lost exactly `lost` (as listed by
    /// [`SimFs::crash_images`] on the same state). `InvalidInput` if an item does
    /// not fit this state.
    pub fn crash_image_with(&self, lost: &[LostItem]) -> io::Result<SimFs> {
        let inner = self.lock();
        let spec = inner.state.spec_of(lost)?;
        inner
            .state
            .may_lose(&spec.lost_ops)
            .map_err(|why| io::Error::new(io::ErrorKind::InvalidInput, why))?;
        Ok(SimFs::from_state(
            inner.state.image(&inner.state.now(), &spec),
        ))
    }

    /// Every file reachable now, by absolute path, with its current content.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let inner = self.lock();
        let state = &inner.state;
        state
            .walk()
            .into_iter()
            .filter_map(|(path, ino)| match state.nodes.get(&ino) {
                Some(Node::File(file)) => Some((path, file.data.bytes().to_vec())),
                _ => None,
            })
            .collect()
    }

    /// Every name the file at `path` has now (hard links), itself included, sorted;
    /// empty if there is no file there.
    pub fn names_of(&self, path: &Path) -> Vec<PathBuf> {
        let inner = self.lock();
        let state = &inner.state;
        let Some(ino) = state.resolve(path) else {
            return Vec::new();
        };
        if !matches!(state.nodes.get(&ino), Some(Node::File(_))) {
            return Vec::new();
        }
        state
            .walk()
            .into_iter()
            .filter(|(_, i)| *i == ino)
            .map(|(p, _)| p)
            .collect()
    }

    /// Every directory reachable now, by absolute path (the root `/` included).
    pub fn snapshot_dirs(&self) -> BTreeSet<PathBuf> {
        let inner = self.lock();
        let state = &inner.state;
        state
            .walk()
            .into_iter()
            .filter(|(_, ino)| matches!(state.nodes.get(ino), Some(Node::Dir(_))))
            .map(|(path, _)| path)
            .collect()
    }

    /// Makes everything completed durable, as if every file and directory had been
    /// synced, without counting an operation. For setting up fixtures: a power
    /// loss right after `settle` can lose nothing.
    pub fn settle(&self) {
        self.lock().state.settle();
    }

    /// Directory operations completed but not yet durable.
    pub fn pending_dir_ops(&self) -> usize {
        self.lock().state.pending.len()
    }

    /// Runs a non-mutating call; fails after the crash.
    fn read<T>(&self, f: impl FnOnce(&State) -> io::Result<T>) -> io::Result<T> {
        let inner = self.lock();
        if inner.control.crashed {
            return Err(io::Error::other(CRASH_MESSAGE));
        }
        f(&inner.state)
    }

    /// Runs a mutating call through the crash and fault gates. A crashed or injected
    /// call changes nothing; the state operations check before they change anything
    /// (except `create_dir_all`, which like std keeps the directories it made).
    fn mutate(
        &self,
        call: Call,
        path: &Path,
        f: impl FnOnce(&mut State) -> io::Result<()>,
    ) -> io::Result<()> {
        self.mutate_or(call, path, f, |_, _| Ok(()))
    }

    /// [`SimFs::mutate`], where a fault of [`SimFs::fail_nth_with`] first runs
    /// `on_fault` (what the failing call still leaves, e.g. a short write's prefix).
    fn mutate_or(
        &self,
        call: Call,
        path: &Path,
        f: impl FnOnce(&mut State) -> io::Result<()>,
        on_fault: impl FnOnce(&mut State, FaultKind) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let control = &mut inner.control;
        if control.crashed || control.crash_before == Some(control.ops) {
            control.crashed = true;
            return Err(io::Error::other(CRASH_MESSAGE));
        }
        let k = control.ops;
        control.ops += 1;
        if control.fail_ops.remove(&k) {
            return Err(io::Error::other(INJECTED_MESSAGE));
        }
        if let Some(kind) = control.faults.remove(&k) {
            control.fired.push(FiredFault {
                op: k,
                call,
                path: path.display().to_string(),
                kind,
            });
            on_fault(&mut inner.state, kind)?;
            return Err(kind.error());
        }
        if control.full_from.is_some_and(|from| k >= from) && call.needs_space() {
            control.fired.push(FiredFault {
                op: k,
                call,
                path: path.display().to_string(),
                kind: FaultKind::DiskFull,
            });
            return Err(FaultKind::DiskFull.error());
        }
        f(&mut inner.state)
    }
}

impl FileSystem for SimFs {
    /// In memory, outside the counted calls (faults and crash points never land
    /// on it, and numbering of the other calls stays as it was). As on a real disk,
    /// a missing parent directory is `NotFound`; unlike it, no file is created.
    fn try_lock(&self, path: &Path) -> io::Result<FileLock> {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        if parent.is_some_and(|p| !self.is_dir(p)) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no directory for {}", path.display()),
            ));
        }
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        if !locks.insert(path.to_path_buf()) {
            return Err(crate::fs::LockHeld { holder_pid: None }.into_error());
        }
        Ok(FileLock::new(SimLock {
            locks: Arc::clone(&self.locks),
            path: path.to_path_buf(),
        }))
    }

    /// The simulated tree has no symbolic links: the path normalised.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        Ok(super::normalize_lexically(path))
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.mutate(Call::CreateDirAll, path, |s| s.create_dir_all(path))
    }

    fn create_file(&self, path: &Path) -> io::Result<()> {
        self.mutate(Call::CreateFile, path, |s| s.create_file(path))
    }

    fn append(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.touch(path, descriptors::Use::Write);
        self.mutate_or(
            Call::Append,
            path,
            |s| s.file_mut(path).map(|file| file.append(data)),
            |s, kind| {
                let kept = kind.kept_bytes(data.len());
                if kept == 0 {
                    return Ok(());
                }
                s.file_mut(path).map(|file| file.append(&data[..kept]))
            },
        )
    }

    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut inner = self.lock();
        if inner.control.crashed {
            return Err(io::Error::other(CRASH_MESSAGE));
        }
        let inner = &mut *inner;
        let data = inner.state.file(path)?.data.bytes();
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(data.len());
        let n = buf.len().min(data.len() - start);
        buf[..n].copy_from_slice(&data[start..start + n]);
        // The one read hook, under the same lock: `read_all` and `map` are the
        // trait's defaults over `read_at`.
        inner.reads.note(&inner.state, path, n);
        if let Some(count) = inner.descriptors.as_mut() {
            let locks = self.locks_held();
            count.touch(path, descriptors::Use::Read, locks);
        }
        Ok(n)
    }

    /// Checks that the file exists and changes nothing: a power loss may keep any
    /// prefix of the unsynced appends with or without the hint, so it adds no
    /// crash state, and it is no call the sweeps fail or crash at.
    fn start_writeback(&self, path: &Path) -> io::Result<()> {
        self.touch(path, descriptors::Use::Read);
        self.read(|s| s.file(path).map(|_| ()))
    }

    fn set_len(&self, path: &Path, len: u64) -> io::Result<()> {
        let len = usize::try_from(len)
            .map_err(|_| error(io::ErrorKind::InvalidInput, path, "length too large"))?;
        self.touch(path, descriptors::Use::Write);
        self.mutate(Call::SetLen, path, |s| {
            s.file_mut(path).map(|file| file.set_len(len))
        })
    }

    fn sync_file(&self, path: &Path) -> io::Result<()> {
        self.touch(path, descriptors::Use::Sync);
        self.sync(Call::SyncFile, "sync_file", path, |fs| {
            fs.mutate_or(
                Call::SyncFile,
                path,
                |s| s.file_mut(path).map(|file| file.sync()),
                |s, kind| {
                    // The writeback failed: those pages will never reach the disk.
                    // (Out of descriptors, the fsync never ran: nothing doomed.)
                    if kind != FaultKind::Emfile {
                        if let Ok(file) = s.file_mut(path) {
                            file.doom_unsynced();
                        }
                    }
                    Ok(())
                },
            )
        })
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.sync(Call::SyncDir, "sync_dir", path, |fs| {
            fs.mutate(Call::SyncDir, path, |s| s.sync_dir(path))
        })
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.forget(from);
        self.forget(to);
        self.mutate(Call::Rename, from, |s| s.rename(from, to))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.mutate(Call::HardLink, from, |s| s.hard_link(from, to))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.forget(path);
        self.mutate(Call::RemoveFile, path, |s| s.remove(path, false))
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.forget(path);
        self.mutate(Call::RemoveDirAll, path, |s| s.remove(path, true))
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        // BTreeMap keys are already sorted.
        self.read(|s| Ok(s.dir(path)?.1.entries.keys().cloned().collect()))
    }

    fn exists(&self, path: &Path) -> bool {
        self.lock().state.resolve(path).is_some()
    }

    fn is_dir(&self, path: &Path) -> bool {
        let inner = self.lock();
        let state = &inner.state;
        state
            .resolve(path)
            .is_some_and(|ino| matches!(state.nodes.get(&ino), Some(Node::Dir(_))))
    }

    fn len(&self, path: &Path) -> io::Result<u64> {
        self.read(|s| Ok(s.file(path)?.data.len() as u64))
    }
}

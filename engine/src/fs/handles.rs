//! [`Handles`]: the open files a [`StdFs`](super::StdFs) keeps between calls, at
//! most a budget of them, the least recently used closed first. The simulated file
//! system keeps the same cache over stand-ins (`super::sim`'s descriptor count):
//! the cache is generic over what it holds ([`Pinned`]).
//!
//! The cache decides; [`StdFs`](super::StdFs) opens. A handle leaves the cache
//! when a new one needs its place (`make_room`), when its path is renamed or
//! removed (`forget`), or when an open finds the process out of descriptors
//! (`evict_clean`). Leaving the cache drops the cache's reference only: a caller
//! that holds the [`Handle`] keeps its descriptor open until it lets go.
//!
//! A handle with writes that no `sync_file` has made durable yet (`dirty`) is
//! never evicted, only forgotten: closing the last descriptor of a file with
//! unsynced pages lets the kernel drop the inode, and with it a write-back error
//! that the next `fsync` would have reported (fsyncgate). The engine syncs every
//! file it writes before it leaves it (a roll syncs the closed segment's three
//! files), so the pinned handles are the active segment's few and the budget is
//! exceeded only by as many files as are being written at once.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Handles kept by [`StdFs::new`](super::StdFs::new): well under the common soft
/// limit of 1,024 descriptors, leaving room for the rest of the process.
pub const OPEN_FILES_MAX_DEFAULT: usize = 256;

/// One open file and whether it holds writes not yet synced.
#[derive(Debug)]
pub(super) struct Handle {
    file: File,
    dirty: AtomicBool,
}

impl Handle {
    pub(super) fn new(file: File) -> Self {
        Handle {
            file,
            dirty: AtomicBool::new(false),
        }
    }

    pub(super) fn file(&self) -> &File {
        &self.file
    }

    /// Marks the file as written (after the write: a sync that clears the mark
    /// before this store still runs after the write and covers it; one that clears
    /// it after runs later still).
    pub(super) fn wrote(&self) {
        self.dirty.store(true, Ordering::Release);
    }

    /// Clears the mark before a sync; `true` if it was set, for
    /// [`Handle::sync_failed`] to put back.
    pub(super) fn take_dirty(&self) -> bool {
        self.dirty.swap(false, Ordering::AcqRel)
    }

    /// A sync failed: the writes it was for are still not durable.
    pub(super) fn sync_failed(&self) {
        self.wrote();
    }

    fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::Acquire)
    }
}

/// What the cache holds: something that may carry writes no sync has made
/// durable yet, which pins it.
pub(super) trait Pinned {
    /// True while it holds unsynced writes (never evicted then, only forgotten).
    fn is_dirty(&self) -> bool;
}

impl Pinned for Handle {
    fn is_dirty(&self) -> bool {
        Handle::is_dirty(self)
    }
}

/// A cached handle and when it was last handed out.
#[derive(Debug)]
struct Cached<H> {
    handle: Arc<H>,
    used: u64,
}

/// The cache: every handle by path, and the same paths by last use.
#[derive(Debug)]
pub(super) struct Handles<H = Handle> {
    by_path: HashMap<PathBuf, Cached<H>>,
    /// Each cached path under its `used` tick: the first entry is the least
    /// recently used.
    by_use: BTreeMap<u64, PathBuf>,
    used_last: u64,
    /// The handle returned last, matched by its path's bytes: a run of appends asks
    /// for the same file each time, and this spares hashing its path (`Path`'s hash
    /// walks the components) on every call. Invariant: it is cached (in `by_path`)
    /// and it is the most recently used one, so serving it again changes no order;
    /// whatever removes it from `by_path` clears this too, so it never keeps an
    /// evicted descriptor open.
    last: Option<(PathBuf, Arc<H>)>,
    open_files_max: usize,
}

impl<H: Pinned> Handles<H> {
    /// An empty cache of at most `open_files_max` handles (at least one).
    pub(super) fn new(open_files_max: usize) -> Self {
        Handles {
            by_path: HashMap::new(),
            by_use: BTreeMap::new(),
            used_last: 0,
            last: None,
            open_files_max: open_files_max.max(1),
        }
    }

    pub(super) fn open_files_max(&self) -> usize {
        self.open_files_max
    }

    /// How many handles the cache holds.
    pub(super) fn len(&self) -> usize {
        debug_assert_eq!(self.by_path.len(), self.by_use.len());
        self.by_path.len()
    }

    /// How many cached handles hold unsynced writes.
    pub(super) fn dirty_count(&self) -> usize {
        self.by_path
            .values()
            .filter(|cached| cached.handle.is_dirty())
            .count()
    }

    /// The cached handle of `path`, now the most recently used.
    pub(super) fn get(&mut self, path: &Path) -> Option<Arc<H>> {
        if let Some((last, handle)) = &self.last {
            if last.as_os_str() == path.as_os_str() {
                return Some(Arc::clone(handle));
            }
        }
        self.used_last += 1;
        let used = self.used_last;
        let cached = self.by_path.get_mut(path)?;
        let before = std::mem::replace(&mut cached.used, used);
        let handle = Arc::clone(&cached.handle);
        let moved = self.by_use.remove(&before);
        assert!(moved.is_some(), "a cached path is in the use order");
        self.by_use.insert(used, path.to_path_buf());
        self.last = Some((path.to_path_buf(), Arc::clone(&handle)));
        Some(handle)
    }

    /// Evicts the least recently used handles without unsynced writes until one
    /// more fits the budget (or none of those is left).
    pub(super) fn make_room(&mut self) {
        while self.len() >= self.open_files_max {
            if !self.evict_one() {
                break;
            }
        }
    }

    /// Caches `handle` for `path` as the most recently used one. The caller made
    /// room first ([`Handles::make_room`]).
    pub(super) fn insert(&mut self, path: &Path, handle: Arc<H>) {
        self.used_last += 1;
        let used = self.used_last;
        let cached = Cached {
            handle: Arc::clone(&handle),
            used,
        };
        if let Some(old) = self.by_path.insert(path.to_path_buf(), cached) {
            self.by_use.remove(&old.used);
        }
        self.by_use.insert(used, path.to_path_buf());
        self.last = Some((path.to_path_buf(), handle));
    }

    /// Drops every handle without unsynced writes (the process ran out of
    /// descriptors); how many it dropped.
    pub(super) fn evict_clean(&mut self) -> usize {
        let mut evicted = 0;
        while self.evict_one() {
            evicted += 1;
        }
        evicted
    }

    /// Drops the handles of `path` and of every path under it (it is being renamed
    /// or removed), unsynced writes or not.
    pub(super) fn forget(&mut self, path: &Path) {
        let by_use = &mut self.by_use;
        self.by_path.retain(|cached, entry| {
            let keep = !cached.starts_with(path);
            if !keep {
                by_use.remove(&entry.used);
            }
            keep
        });
        if self
            .last
            .as_ref()
            .is_some_and(|(last, _)| last.starts_with(path))
        {
            self.last = None;
        }
    }

    /// Drops the least recently used handle without unsynced writes; `false` if
    /// there is none.
    fn evict_one(&mut self) -> bool {
        let victim = self.by_use.iter().find_map(|(&used, path)| {
            let cached = self.by_path.get(path)?;
            (!cached.handle.is_dirty()).then(|| (used, path.clone()))
        });
        let Some((used, path)) = victim else {
            return false;
        };
        self.by_use.remove(&used);
        let removed = self.by_path.remove(&path);
        assert!(removed.is_some(), "an ordered path is cached");
        if self.last.as_ref().is_some_and(|(last, _)| *last == path) {
            self.last = None;
        }
        true
    }
}

//! Descriptor counting: the descriptors the real file system ([`StdFs`]) would hold
//! for the calls the engine makes, so a stage can hold an open or a read to a
//! budget without a real disk.
//!
//! [`SimFs::count_descriptors`] starts it with a budget. From then on every call
//! that `StdFs` serves through its handle cache (`read_at`, and `read_all` and
//! `map` through it; `append`, `set_len`, `sync_file`, `start_writeback`) goes
//! through the same cache (`crate::fs::handles::Handles`, least recently used
//! closed first, a file with writes no `sync_file` has made durable pinned), over a
//! stand-in for the file; a rename or removal forgets the path, as `StdFs` does.
//! The count is the cache's handles plus the writer locks held. [`SimFs::descriptors`]
//! reports the peak, the unsynced handles at that peak, and the most the count
//! ever went past the budget beside the locks and the unsynced handles.
//!
//! [`StdFs`]: crate::fs::StdFs

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::super::handles::{Handles, Pinned};
use super::SimFs;

/// A cached file: whether it holds unsynced writes.
#[derive(Debug, Default)]
pub(super) struct Stand {
    dirty: AtomicBool,
}

impl Pinned for Stand {
    fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::Acquire)
    }
}

/// How a call uses its file's handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Use {
    Read,
    Write,
    Sync,
}

/// The cache and its peaks.
#[derive(Debug)]
pub(super) struct Descriptors {
    handles: Handles<Stand>,
    count: DescriptorCount,
}

/// What [`SimFs::descriptors`] reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DescriptorCount {
    /// The budget of cached handles (`StdFs::with_open_files_max`).
    pub open_files_max: usize,
    /// Descriptors held now: cached handles and writer locks.
    pub open: usize,
    /// The most descriptors held at once: cached handles and writer locks.
    pub peak: usize,
    /// Of `peak`, the handles with unsynced writes (pinned past the budget).
    pub peak_unsynced: usize,
    /// Of `peak`, the writer locks.
    pub peak_locks: usize,
    /// The most the count ever went past the budget plus the locks and the
    /// unsynced handles held then (0: never).
    pub over_budget: usize,
}

impl Descriptors {
    fn new(open_files_max: usize) -> Self {
        Descriptors {
            handles: Handles::new(open_files_max),
            count: DescriptorCount {
                open_files_max: open_files_max.max(1),
                ..DescriptorCount::default()
            },
        }
    }

    /// The handle of `path` as `StdFs::handle` finds or opens it, used as `how`;
    /// then the count with `locks` writer locks held.
    pub(super) fn touch(&mut self, path: &Path, how: Use, locks: usize) {
        let handle = match self.handles.get(path) {
            Some(handle) => handle,
            None => {
                self.handles.make_room();
                let handle = Arc::new(Stand::default());
                self.handles.insert(path, Arc::clone(&handle));
                handle
            }
        };
        match how {
            Use::Read => {}
            Use::Write => handle.dirty.store(true, Ordering::Release),
            Use::Sync => handle.dirty.store(false, Ordering::Release),
        }
        self.note(locks);
    }

    /// `path` (and everything under it) renamed or removed.
    pub(super) fn forget(&mut self, path: &Path) {
        self.handles.forget(path);
    }

    /// The count now, with `locks` writer locks held: the peaks follow.
    pub(super) fn note(&mut self, locks: usize) {
        let unsynced = self.handles.dirty_count();
        let open = self.handles.len() + locks;
        let count = &mut self.count;
        count.open = open;
        if open > count.peak {
            count.peak = open;
            count.peak_unsynced = unsynced;
            count.peak_locks = locks;
        }
        let allowed = count.open_files_max + locks + unsynced;
        count.over_budget = count.over_budget.max(open.saturating_sub(allowed));
    }
}

impl SimFs {
    /// Counts, from now on, the descriptors `StdFs` with a budget of
    /// `open_files_max` cached handles would hold for this file system's calls
    /// (see the module docs), starting from none.
    pub fn count_descriptors(&self, open_files_max: usize) {
        self.lock().descriptors = Some(Descriptors::new(open_files_max));
    }

    /// The count since [`SimFs::count_descriptors`], if it was started.
    pub fn descriptors(&self) -> Option<DescriptorCount> {
        let locks = self.locks_held();
        let mut inner = self.lock();
        let descriptors = inner.descriptors.as_mut()?;
        descriptors.note(locks);
        Some(descriptors.count)
    }
}

//! Cleaning without holding the append path (docs/design.md section 6
//! "Concurrent cleaning"): a [`CleanSnapshot`] taken under the log's lock (segment
//! list, clean point, `map_end = next_offset`), a build from it that needs no
//! `&mut Log` ([`CleanSnapshot::build`]: the closed segments are immutable while
//! retention is excluded, and the map reads the active segment only up to the
//! snapshot), and a swap under the lock again ([`Log::clean_swap`](crate::log::Log::clean_swap)) that links the
//! tail and commits. `Log::clean` is the three with nothing in between.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::install::{InstallPaths, Trash};

use super::build::build_from;
use super::options::{BuildFrom, Built};
use super::{CleanOptions, CompactOptions, CompactionReport};

/// Test-only: the swap and its deliberately broken forms (the shared design's
/// refuted variants).
#[cfg(any(test, feature = "test-variants"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CleanVariant {
    /// Snapshot, build, swap linking the tail under the lock.
    #[default]
    Ours,
    /// `stale-tail-copy`: the active segment is copied at snapshot time and the swap
    /// links nothing: appends during the build are lost.
    StaleTailCopy,
    /// `unlocked-swap`: appends and rolls are not held during the swap's steps
    /// (the workload runs them between the tail's links and the manifest).
    UnlockedSwap,
    /// `unbounded-map`: the build maps the active segment to its end as it finds
    /// it, not to the snapshot: records appended during the build enter the map.
    UnboundedMap,
    /// `unflushed-swap`: the swap links the tail and writes a recovery point naming
    /// its bytes without flushing the appends made since the snapshot first.
    UnflushedSwap,
}

/// What a cleaning pass saw under the log's lock.
#[derive(Debug, Clone)]
pub struct CleanSnapshot {
    pub(crate) fs: Arc<dyn FileSystem>,
    pub(crate) dir: PathBuf,
    /// The segments at the snapshot, ascending; the last one was active.
    pub(crate) bases: Vec<i64>,
    /// The active segment's length at the snapshot.
    pub(crate) active_len: u64,
    /// `next_offset` at the snapshot: the map covers offsets below it only.
    pub(crate) map_end: i64,
    pub(crate) options: CompactOptions,
    pub(crate) knobs: CleanOptions,
    pub(crate) index_interval_bytes: u64,
    /// The broken `stale-tail-copy`: copy the active segment, link no tail.
    pub(crate) copy_active: bool,
    /// The broken `unbounded-map`: map the active segment to its end at build time.
    pub(crate) unbounded_map: bool,
    /// The broken `unflushed-swap`: the swap does not flush the tail first.
    pub(crate) unflushed_swap: bool,
}

/// A built temp dir waiting for its swap (or its abort).
#[derive(Debug)]
pub struct CleanBuild {
    pub(crate) snapshot: CleanSnapshot,
    pub(crate) built: Option<Built>,
}

/// What a swap did, and the trash to remove once the lock is released.
#[derive(Debug)]
pub struct Swapped {
    /// The pass's report.
    pub report: CompactionReport,
    /// `D.compact-trash`, to remove without the lock (`None`: nothing installed).
    pub trash: Option<Trash>,
}

impl CleanSnapshot {
    /// `next_offset` when the snapshot was taken.
    pub fn map_end(&self) -> i64 {
        self.map_end
    }

    /// The active segment's base at the snapshot: the tail starts here.
    pub fn active_base(&self) -> i64 {
        *self.bases.last().expect("a log has a segment")
    }

    /// Test builds only: the broken `stale-tail-copy` (see [`CleanVariant`]).
    #[cfg(feature = "test-variants")]
    pub(crate) fn stale_tail_copy(mut self) -> CleanSnapshot {
        self.copy_active = true;
        self
    }

    /// Test builds only: the broken `unbounded-map` (see [`CleanVariant`]).
    #[cfg(feature = "test-variants")]
    pub(crate) fn unbounded_map(mut self) -> CleanSnapshot {
        self.unbounded_map = true;
        self
    }

    /// Test builds only: the broken `unflushed-swap` (see [`CleanVariant`]).
    #[cfg(feature = "test-variants")]
    pub(crate) fn unflushed_swap(mut self) -> CleanSnapshot {
        self.unflushed_swap = true;
        self
    }

    /// Install step 1 from the snapshot, without the log: the compacted closed
    /// segments into `D.compact-tmp`. On an error the temp dir may be half built:
    /// [`CleanBuild`] is not returned, and the next open (or `abort_dir`) removes it.
    pub fn build(self) -> Result<CleanBuild> {
        let from = BuildFrom {
            bases: Some(&self.bases),
            active_len: (!self.unbounded_map).then_some(self.active_len),
            copy_active: self.copy_active,
        };
        let built = build_from(
            self.fs.as_ref(),
            &self.dir,
            self.options,
            self.knobs,
            self.index_interval_bytes,
            &from,
        )?;
        Ok(CleanBuild {
            snapshot: self,
            built,
        })
    }
}

impl CleanBuild {
    /// The snapshot this was built from.
    pub fn snapshot(&self) -> &CleanSnapshot {
        &self.snapshot
    }

    /// Drops the built temp dir before the commit point: the cleaning never happened.
    pub fn abort(self) -> Result<()> {
        abort_dir(self.snapshot.fs.as_ref(), &self.snapshot.dir)
    }
}

/// Removes a cleaning's temp dir next to `dir` (an abort before the commit point).
pub fn abort_dir(fs: &dyn FileSystem, dir: &std::path::Path) -> Result<()> {
    let paths = InstallPaths::new(dir)?;
    if fs.exists(&paths.tmp) {
        fs.remove_dir_all(&paths.tmp)
            .map_err(|e| Error::io(&paths.tmp, e))?;
    }
    Ok(())
}

//! Cleaning without holding the append path (issue 13, docs/design.md section 6
//! "Concurrent cleaning"): a [`CleanSnapshot`] taken under the log's lock (segment
//! list, clean point, `map_end = next_offset`), a build from it that needs no
//! `&mut Log` ([`CleanSnapshot::build`]: the closed segments are immutable while
//! retention is excluded, and the map reads the active segment only up to the
//! snapshot), and a swap under the lock again ([`Log::clean_swap`]) that links the
//! tail and commits. `Log::clean` is the three with nothing in between.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::install::{InstallPaths, Trash};
use crate::log::Log;

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
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    /// The segments at the snapshot, ascending; the last one was active.
    bases: Vec<i64>,
    /// The active segment's length at the snapshot.
    active_len: u64,
    /// `next_offset` at the snapshot: the map covers offsets below it only.
    map_end: i64,
    options: CompactOptions,
    knobs: CleanOptions,
    index_interval_bytes: u64,
    /// The broken `stale-tail-copy`: copy the active segment, link no tail.
    copy_active: bool,
    /// The broken `unbounded-map`: map the active segment to its end at build time.
    unbounded_map: bool,
    /// The broken `unflushed-swap`: the swap does not flush the tail first.
    unflushed_swap: bool,
}

/// A built temp dir waiting for its swap (or its abort).
#[derive(Debug)]
pub struct CleanBuild {
    snapshot: CleanSnapshot,
    built: Option<Built>,
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
    #[cfg(any(test, feature = "test-variants"))]
    pub fn stale_tail_copy(mut self) -> CleanSnapshot {
        self.copy_active = true;
        self
    }

    /// Test builds only: the broken `unbounded-map` (see [`CleanVariant`]).
    #[cfg(any(test, feature = "test-variants"))]
    pub fn unbounded_map(mut self) -> CleanSnapshot {
        self.unbounded_map = true;
        self
    }

    /// Test builds only: the broken `unflushed-swap` (see [`CleanVariant`]).
    #[cfg(any(test, feature = "test-variants"))]
    pub fn unflushed_swap(mut self) -> CleanSnapshot {
        self.unflushed_swap = true;
        self
    }

    /// Install step 1 from the snapshot, without the log: the compacted closed
    /// segments into `D.compact-tmp`. On an error the temp dir may be half built:
    /// [`CleanBuild`] is not returned, and the next open (or [`abort_dir`]) removes it.
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

impl CleanSnapshot {
    /// [`CleanSnapshot::build`] with every file-system call of the build made
    /// through `fs` (the same files behind a wrapper: the sweep's deterministic
    /// interleaving gate); the swap uses the log's own file system again.
    #[cfg(feature = "suite")]
    pub fn build_through(mut self, fs: Arc<dyn FileSystem>) -> Result<CleanBuild> {
        let own = std::mem::replace(&mut self.fs, fs);
        let mut built = self.build()?;
        built.snapshot.fs = own;
        Ok(built)
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

impl Log {
    /// A cleaning's snapshot (call under the log's lock): checks the arguments,
    /// flushes (the closed segments and the snapshot's bytes are durable), and
    /// records the segment list and `map_end`. `None` when there is no closed
    /// segment.
    pub fn clean_snapshot(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
        knobs: CleanOptions,
    ) -> Result<Option<CleanSnapshot>> {
        let Some(options) = self.clean_prepare(now, delete_retention_ms, segment_bytes, knobs)?
        else {
            return Ok(None);
        };
        let segments = self.segments();
        let active = segments.last().expect("a log has a segment");
        Ok(Some(CleanSnapshot {
            fs: Arc::clone(self.fs()),
            dir: self.dir().to_path_buf(),
            bases: segments.iter().map(|s| s.base_offset).collect(),
            active_len: active.bytes,
            map_end: self.next_offset(),
            options,
            knobs,
            index_interval_bytes: self.config().index_interval_bytes,
            copy_active: false,
            unbounded_map: false,
            unflushed_swap: false,
        }))
    }

    /// The swap (call under the log's lock; steps a-e of docs/design.md section 6):
    /// flushes the tail, links it into the built temp dir, commits and renames, and
    /// adopts the built segments below the tail (no reopen). The returned trash is
    /// removed by the caller after releasing the lock. If the log's closed region
    /// changed since the snapshot (a retention ran, against the cleaning lock) the
    /// build is aborted and the result is `InvalidArgument`.
    pub fn clean_swap(&mut self, build: CleanBuild) -> Result<Swapped> {
        let CleanBuild { snapshot, built } = build;
        let Some(built) = built else {
            return Ok(Swapped {
                report: CompactionReport::default(),
                trash: None,
            });
        };
        let active_base = snapshot.active_base();
        let bases: Vec<i64> = self.segments().iter().map(|s| s.base_offset).collect();
        let closed_now: Vec<i64> = bases.iter().copied().filter(|b| *b < active_base).collect();
        if closed_now != snapshot.bases[..snapshot.bases.len() - 1] || !bases.contains(&active_base)
        {
            if let Err(e) = abort_dir(snapshot.fs.as_ref(), &snapshot.dir) {
                self.poison();
                return Err(e);
            }
            return Err(Error::InvalidArgument(format!(
                "the log's closed segments changed under the cleaner ({:?} then {closed_now:?}); the pass was aborted",
                &snapshot.bases[..snapshot.bases.len() - 1]
            )));
        }
        #[cfg(any(test, feature = "test-variants"))]
        if snapshot.copy_active {
            return self.clean_swap_stale(built);
        }
        let flushed = if snapshot.unflushed_swap {
            Ok(())
        } else {
            self.flush()
        };
        let result = flushed.and_then(|()| {
            let tail = self.tail_segments(active_base);
            let tail_bases: Vec<i64> = tail.iter().map(|s| s.base_offset).collect();
            let mut manifest = built.manifest.clone();
            let fs = Arc::clone(self.fs());
            let mut all = built.segments.clone();
            all.extend(tail);
            crate::install::swap(
                fs.as_ref(),
                self.dir(),
                &mut manifest,
                &tail_bases,
                self.next_offset(),
                |tmp| super::finish::write_recovery_point(fs.as_ref(), tmp, &all),
            )
        });
        let trash = match result {
            Ok(trash) => trash,
            Err(e) => {
                // Half done: the next open's install recovery finishes or undoes it.
                self.poison();
                return Err(e);
            }
        };
        let (log_start_offset, next_offset) = (self.log_start_offset(), self.next_offset());
        self.adopt_cleaned(built.segments, active_base);
        assert_eq!(self.log_start_offset(), log_start_offset);
        assert_eq!(self.next_offset(), next_offset);
        Ok(Swapped {
            report: built.report,
            trash: Some(trash),
        })
    }

    /// The broken `stale-tail-copy` swap: the temp dir holds the snapshot's copy
    /// of the active segment and nothing is linked; the log reopens to show what
    /// the directory now holds.
    #[cfg(any(test, feature = "test-variants"))]
    fn clean_swap_stale(&mut self, built: Built) -> Result<Swapped> {
        let fs = Arc::clone(self.fs());
        let dir = self.dir().to_path_buf();
        let result = self
            .flush()
            .and_then(|()| crate::install::install(fs.as_ref(), &dir, &built.manifest));
        self.reopen_after(result)?;
        Ok(Swapped {
            report: built.report,
            trash: None,
        })
    }

    /// The broken `unlocked-swap`: step a (the tail's links) runs, then `during`
    /// (appends, rolls) runs while the swap is not finished, then the manifest and
    /// the renames; the log reopens to show what the directory now holds.
    #[cfg(any(test, feature = "test-variants"))]
    pub fn clean_swap_unlocked(
        &mut self,
        build: CleanBuild,
        during: impl FnOnce(&mut Log) -> Result<()>,
    ) -> Result<CompactionReport> {
        let CleanBuild { snapshot, built } = build;
        let Some(built) = built else {
            during(self)?;
            return Ok(CompactionReport::default());
        };
        let fs = Arc::clone(self.fs());
        let dir = self.dir().to_path_buf();
        let paths = InstallPaths::new(&dir)?;
        let active_base = snapshot.active_base();
        self.flush()?;
        let tail: Vec<i64> = self
            .segments()
            .iter()
            .map(|s| s.base_offset)
            .filter(|b| *b >= active_base)
            .collect();
        crate::install::tail::link(fs.as_ref(), &paths, &tail)?;
        let mut all = built.segments.clone();
        all.extend(self.tail_segments(active_base));
        super::finish::write_recovery_point(fs.as_ref(), &paths.tmp, &all)?;
        crate::install::tail::sync_tmp(fs.as_ref(), &paths)?;
        during(self)?;
        let mut manifest = built.manifest.clone();
        let result = crate::install::tail::complete_manifest(
            fs.as_ref(),
            &paths,
            &mut manifest,
            &tail,
            self.next_offset(),
        )
        .and_then(|()| crate::install::finish(fs.as_ref(), &paths, &manifest))
        .and_then(|trash| trash.remove(fs.as_ref()));
        self.reopen_after(result)?;
        Ok(built.report)
    }
}

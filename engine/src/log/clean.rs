//! The log's side of cleaning without holding the append path: the snapshot taken
//! under the lock ([`Log::clean_snapshot`]), the swap under the lock again
//! ([`Log::clean_swap`]) that links the tail and commits, and [`Log::clean`], the
//! three with nothing in between. The build between them is compaction's
//! ([`crate::compaction::CleanSnapshot::build`]): it needs no `&mut Log`.

use std::sync::Arc;

#[cfg(any(test, feature = "test-variants"))]
use crate::compaction::options::Built;
use crate::compaction::snapshot::abort_dir;
use crate::compaction::{CleanBuild, CleanOptions, CleanSnapshot, CompactionReport, Swapped};
use crate::error::{Error, Result};
#[cfg(feature = "test-variants")]
use crate::install::InstallPaths;

use super::Log;

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

    /// The swap (call under the log's lock; steps a to 6 of docs/design.md section 6):
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
                |tmp| crate::compaction::finish::write_recovery_point(fs.as_ref(), tmp, &all),
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
    #[cfg(feature = "test-variants")]
    pub(crate) fn clean_swap_unlocked(
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
        crate::compaction::finish::write_recovery_point(fs.as_ref(), &paths.tmp, &all)?;
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

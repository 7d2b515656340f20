//! Compaction of an open [`Log`]: flush, build and install (steps 1 to 6), then
//! adopt the installed segments (no reopen: the build described them, index entries
//! included, so nothing is scanned again). Also the cleaner's view of the log: its
//! clean point and dirty ratio ([`Log::cleanable`]), and the cleaning that runs only
//! when the ratio says so ([`Log::compact_if_dirty`]).

#[cfg(feature = "test-variants")]
use crate::compaction::build::build_indexed;
use crate::compaction::cleanable::Cleanable;
#[cfg(feature = "test-variants")]
use crate::compaction::options::Built;
use crate::compaction::section::{first_uncleanable, read_clean_point, stable_bound};
use crate::compaction::{CleanOptions, CompactOptions, CompactionReport};
use crate::error::{Error, Result};

use super::Log;

impl Log {
    /// The cleaner's clean point: `[log_start_offset, clean_point)` holds at most one
    /// record per key. Read from `cleaner-offset.checkpoint` (the log start without
    /// one); a damaged one is ignored (the log start: the next pass rebuilds it).
    pub fn clean_point(&self) -> Result<i64> {
        let segments = self.segments();
        let active_base = segments.last().map_or(0, |s| s.base_offset);
        read_clean_point(
            self.fs().as_ref(),
            self.dir(),
            self.log_start_offset(),
            active_base,
        )
    }

    /// The dirty ratio at clock `now` under the log's `min_compaction_lag_ms` and
    /// its last stable offset, from the segment list and the transaction state (no
    /// segment is read).
    pub fn cleanable(&self, now: i64) -> Result<Cleanable> {
        self.cleanable_at(now, self.config().min_compaction_lag_ms)
    }

    /// [`Log::cleanable`] under `min_compaction_lag_ms` (a pass's own knob, as
    /// [`Log::clean`] takes it) instead of the log's.
    pub fn cleanable_at(&self, now: i64, min_compaction_lag_ms: i64) -> Result<Cleanable> {
        let clean_point = self.clean_point()?;
        let mut metas = self.segment_metas();
        // A segment is clean when its own last batch ends at the clean point (the
        // spec's rule), not the next segment's base: they differ after a gap.
        for (meta, own) in metas.iter_mut().zip(self.segment_next_offsets()) {
            meta.next_offset = own;
        }
        let active_base = metas.last().map_or(0, |s| s.base_offset);
        let closed: Vec<(i64, i64, i64)> = metas
            .iter()
            .filter(|s| s.closed)
            .map(|s| (s.base_offset, s.next_offset, s.max_timestamp))
            .collect();
        let bases: Vec<i64> = metas.iter().map(|s| s.base_offset).collect();
        let first_uncleanable_offset = stable_bound(
            first_uncleanable(
                &closed,
                active_base,
                clean_point,
                now,
                min_compaction_lag_ms,
            ),
            self.last_stable_offset()?,
            &bases,
        );
        let (mut clean_bytes, mut cleanable_bytes) = (0, 0);
        for segment in metas.iter().filter(|s| s.closed) {
            if segment.next_offset <= clean_point {
                clean_bytes += segment.bytes;
            } else if segment.base_offset < first_uncleanable_offset {
                cleanable_bytes += segment.bytes;
            }
        }
        let total = clean_bytes + cleanable_bytes;
        Ok(Cleanable {
            clean_point,
            first_uncleanable_offset,
            clean_bytes,
            cleanable_bytes,
            dirty_ratio: if total == 0 {
                0.0
            } else {
                cleanable_bytes as f64 / total as f64
            },
        })
    }

    /// Compacts the closed segments (docs/design.md section 1) and installs the
    /// result crash-safely (section 6): one cleaning pass under the log's own knobs
    /// (`dedupe_buffer_bytes`, `min_compaction_lag_ms`), from its clean point.
    /// `segment_bytes` groups the output segments (default: the log's own
    /// `segment_bytes`). With no closed segment nothing happens and the report is all
    /// zeros. `delete_retention_ms < 0` is `InvalidArgument`.
    pub fn compact(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
    ) -> Result<CompactionReport> {
        let knobs = self.config().clean_options();
        self.clean(now, delete_retention_ms, segment_bytes, knobs)
    }

    /// [`Log::compact`] only when [`Log::cleanable`] says the dirty ratio is above
    /// `min_cleanable_dirty_ratio`: `None` when it is not (the log is still flushed:
    /// a durability point either way).
    pub fn compact_if_dirty(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
    ) -> Result<Option<CompactionReport>> {
        if self.is_poisoned() {
            return Err(Error::Poisoned);
        }
        let cleanable = self.cleanable(now)?;
        if !cleanable.should_clean(self.config().min_cleanable_dirty_ratio) {
            self.flush()?;
            return Ok(None);
        }
        self.compact(now, delete_retention_ms, segment_bytes)
            .map(Some)
    }

    /// One cleaning pass with explicit knobs (see [`Log::compact`]): snapshot,
    /// build and swap (`crate::compaction::snapshot`) with nothing in between, then the
    /// trash removed.
    pub fn clean(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
        knobs: CleanOptions,
    ) -> Result<CompactionReport> {
        let Some(snapshot) = self.clean_snapshot(now, delete_retention_ms, segment_bytes, knobs)?
        else {
            return Ok(CompactionReport::default());
        };
        let build = match snapshot.build() {
            Ok(build) => build,
            Err(Error::InvalidArgument(reason)) => return Err(Error::InvalidArgument(reason)),
            Err(e) => {
                // Half built: the next open's install recovery removes the temp dir.
                self.poison();
                return Err(e);
            }
        };
        let swapped = self.clean_swap(build)?;
        if let Some(trash) = swapped.trash {
            let fs = std::sync::Arc::clone(self.fs());
            if let Err(e) = trash.remove(fs.as_ref()) {
                // The install is complete; the next open removes the trash.
                self.poison();
                return Err(e);
            }
        }
        Ok(swapped.report)
    }

    /// Checks the arguments and flushes; `None` when there is no closed segment.
    pub(crate) fn clean_prepare(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
        knobs: CleanOptions,
    ) -> Result<Option<CompactOptions>> {
        if self.is_poisoned() {
            return Err(Error::Poisoned);
        }
        let options = CompactOptions {
            now,
            delete_retention_ms,
            segment_bytes: segment_bytes.unwrap_or(self.config().segment_bytes),
        };
        if delete_retention_ms < 0 || options.segment_bytes == 0 {
            return Err(Error::InvalidArgument(format!(
                "delete_retention_ms must be >= 0 and segment_bytes > 0, got {delete_retention_ms} and {}",
                options.segment_bytes
            )));
        }
        knobs.validate()?;
        // A durability point even when there is nothing to compact.
        self.flush()?;
        if self.segments().len() < 2 {
            return Ok(None);
        }
        Ok(Some(options))
    }

    /// Refreshes the log after an install (or poisons it if the install failed).
    /// A refusal of the arguments (a batch alone larger than the offset map) comes
    /// before the build writes anything: the log stays usable.
    /// The log adopts the installed segments as the build described them (their
    /// index files and recovery point are in the new directory): no reopen, no scan.
    #[cfg(feature = "test-variants")]
    fn clean_finish(&mut self, result: Result<Option<Built>>) -> Result<CompactionReport> {
        let built = match result {
            Ok(Some(built)) => built,
            Ok(None) => return Ok(CompactionReport::default()),
            Err(Error::InvalidArgument(reason)) => return Err(Error::InvalidArgument(reason)),
            Err(e) => {
                // Half done: the next open's install recovery finishes or undoes it.
                self.poison();
                return Err(e);
            }
        };
        let log_start_offset = self.log_start_offset();
        let next_offset = self.next_offset();
        self.adopt_segments(built.segments);
        assert_eq!(self.log_start_offset(), log_start_offset);
        assert_eq!(self.next_offset(), next_offset);
        Ok(built.report)
    }

    /// Test builds only: the broken order of model (c)'s `clean-point-first`: the
    /// new clean point is made durable in the live directory (temp, fsync, rename,
    /// dir fsync) before the install commits. A crash in between leaves the old,
    /// uncleaned segments under a clean point that calls them clean.
    #[cfg(feature = "test-variants")]
    pub(crate) fn clean_with_clean_point_first(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
        knobs: CleanOptions,
    ) -> Result<CompactionReport> {
        let Some(options) = self.clean_prepare(now, delete_retention_ms, segment_bytes, knobs)?
        else {
            return Ok(CompactionReport::default());
        };
        let fs = std::sync::Arc::clone(self.fs());
        let dir = self.dir().to_path_buf();
        let interval = self.config().index_interval_bytes;
        let result = build_indexed(fs.as_ref(), &dir, options, knobs, interval).and_then(|built| {
            let Some(built) = built else { return Ok(None) };
            write_clean_point_live(fs.as_ref(), &dir, built.report.clean_point_after)?;
            crate::install::install(fs.as_ref(), &dir, &built.manifest)?;
            Ok(Some(built))
        });
        self.clean_finish(result)
    }
}

impl Log {
    /// Test builds only: model (b)'s broken `point-on-reopen`, the protocol
    /// without "no reopen after cleanup": the temp dir carries neither index files
    /// nor a recovery point, and the log reopens after the install (a full scan that
    /// writes the recovery point). A crash between the commit point and that reopen
    /// leaves new content that no recovery point vouches for.
    #[cfg(feature = "test-variants")]
    pub(crate) fn clean_with_point_on_reopen(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
        knobs: CleanOptions,
    ) -> Result<CompactionReport> {
        let Some(options) = self.clean_prepare(now, delete_retention_ms, segment_bytes, knobs)?
        else {
            return Ok(CompactionReport::default());
        };
        let fs = std::sync::Arc::clone(self.fs());
        let dir = self.dir().to_path_buf();
        let interval = self.config().index_interval_bytes;
        let result =
            crate::compaction::build::build_bare(fs.as_ref(), &dir, options, knobs, interval)
                .and_then(|built| {
                    let Some(built) = built else {
                        return Ok(CompactionReport::default());
                    };
                    crate::install::install(fs.as_ref(), &dir, &built.manifest)?;
                    Ok(built.report)
                });
        if let Err(Error::InvalidArgument(reason)) = result {
            return Err(Error::InvalidArgument(reason));
        }
        self.reopen_after(result)
    }
}

/// The broken variant's write: `cleaner-offset.checkpoint` in the live directory.
#[cfg(feature = "test-variants")]
fn write_clean_point_live(
    fs: &dyn crate::fs::FileSystem,
    dir: &std::path::Path,
    clean_point: i64,
) -> Result<()> {
    use crate::format::checkpoint;
    let tmp = dir.join(format!("{}.tmp", checkpoint::CLEAN_POINT_NAME));
    let target = dir.join(checkpoint::CLEAN_POINT_NAME);
    fs.write_new(&tmp, &checkpoint::encode_clean_point(clean_point))
        .map_err(|e| Error::io(&tmp, e))?;
    fs.sync_file(&tmp).map_err(|e| Error::io(&tmp, e))?;
    fs.rename(&tmp, &target)
        .map_err(|e| Error::io(&target, e))?;
    fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

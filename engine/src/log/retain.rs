//! Retention on an open [`Log`]: plan from its segments, delete checkpoint first,
//! then drop the deleted prefix from the open log's segment list (no reopen: the
//! surviving segments are unchanged, so nothing needs scanning again).

use crate::error::{Error, Result};
use crate::retention::{delete_prefix, DeleteOutcome, Plan};
use crate::segment::files::SegmentMeta;

use super::Log;

impl Log {
    /// The prefix of closed segments retention would delete now (pure; see
    /// [`crate::retention::plan`]).
    pub fn retention_plan(
        &self,
        now: i64,
        retention_ms: Option<i64>,
        retention_bytes: Option<i64>,
    ) -> Result<Plan> {
        crate::retention::plan(&self.segment_metas(), now, retention_ms, retention_bytes)
    }

    /// The log's segments as retention and the cleaner see them.
    pub fn segment_metas(&self) -> Vec<SegmentMeta> {
        let segments = self.segments();
        let next_offsets: Vec<i64> = segments
            .iter()
            .skip(1)
            .map(|s| s.base_offset)
            .chain([self.next_offset()])
            .collect();
        segments
            .iter()
            .zip(next_offsets)
            .map(|(s, next_offset)| SegmentMeta {
                base_offset: s.base_offset,
                closed: s.closed,
                bytes: s.bytes,
                records: s.records,
                max_timestamp: s.max_timestamp,
                next_offset,
            })
            .collect()
    }

    /// Applies time and size retention (docs/design.md section 1): deletes the
    /// planned prefix of closed segments. `retention_ms < 0` and
    /// `retention_bytes <= 0` are `InvalidArgument`.
    pub fn retain(
        &mut self,
        now: i64,
        retention_ms: Option<i64>,
        retention_bytes: Option<i64>,
    ) -> Result<DeleteOutcome> {
        let plan = self.retention_plan(now, retention_ms, retention_bytes)?;
        // Retention is a durability point even when it deletes nothing: everything
        // appended before it is durable when it returns (docs/design.md section 1).
        self.flush()?;
        self.delete_segments(&plan.delete)
    }

    /// The deletion API: `bases` must be exactly the first `bases.len()` closed
    /// segments (checked here against the log and again against the directory).
    /// The new log start offset is made durable before any file is removed.
    pub fn delete_segments(&mut self, bases: &[i64]) -> Result<DeleteOutcome> {
        if self.is_poisoned() {
            return Err(Error::Poisoned);
        }
        let closed: Vec<i64> = self
            .segments()
            .iter()
            .filter(|s| s.closed)
            .map(|s| s.base_offset)
            .collect();
        if bases.len() > closed.len() || closed[..bases.len()] != *bases {
            return Err(Error::InvalidArgument(format!(
                "segments {bases:?} are not a prefix of the closed segments {closed:?}"
            )));
        }
        if bases.is_empty() {
            return Ok(DeleteOutcome {
                deleted_segments: Vec::new(),
                log_start_offset: self.log_start_offset(),
            });
        }
        self.flush()?;
        match delete_prefix(self.fs().as_ref(), self.dir(), bases) {
            Ok(outcome) => {
                self.forget_prefix(bases.len());
                assert_eq!(self.log_start_offset(), outcome.log_start_offset);
                Ok(outcome)
            }
            Err(e) => {
                // Half done: the next open's retention recovery finishes it.
                self.poison();
                Err(e)
            }
        }
    }

    /// Reopens the log after a directory-level change, or poisons it if the change
    /// failed half way (the next open's recovery finishes or undoes it). Only the
    /// broken test variants still reopen: `retain` and `compact` update the log.
    #[cfg(any(test, feature = "test-variants"))]
    pub(crate) fn reopen_after<T>(&mut self, result: Result<T>) -> Result<T> {
        let value = match result {
            Ok(value) => value,
            Err(e) => {
                self.poison();
                return Err(e);
            }
        };
        let fs = std::sync::Arc::clone(self.fs());
        let dir = self.dir().to_path_buf();
        // The reopen takes the writer lock itself.
        self.release_lock();
        match Log::open_with(fs, dir, self.config().clone()) {
            Ok((mut log, _report)) => {
                log.set_clock(std::sync::Arc::clone(self.clock()));
                *self = log;
                Ok(value)
            }
            Err(e) => {
                self.poison();
                Err(e)
            }
        }
    }
}

//! Compaction of an open [`Log`]: flush, build and install (steps 1 to 6), then
//! reopen the log on the same file system.

use crate::error::{Error, Result};
use crate::log::Log;

use super::{compact_dir, CompactOptions, CompactionReport};

impl Log {
    /// Compacts the closed segments (docs/design.md section 1) and installs the
    /// result crash-safely (section 6). `segment_bytes` groups the output segments
    /// (default: the log's own `segment_bytes`). With no closed segment nothing
    /// happens and the report is all zeros. `delete_retention_ms < 0` is
    /// `InvalidArgument`.
    pub fn compact(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
    ) -> Result<CompactionReport> {
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
        // A durability point even when there is nothing to compact.
        self.flush()?;
        if self.segments().len() < 2 {
            return Ok(CompactionReport::default());
        }
        let log_start_offset = self.log_start_offset();
        let next_offset = self.next_offset();
        let result = compact_dir(self.fs().as_ref(), self.dir(), options)
            .map(|report| report.unwrap_or_default());
        let report = self.reopen_after(result)?;
        assert_eq!(self.log_start_offset(), log_start_offset);
        assert_eq!(self.next_offset(), next_offset);
        Ok(report)
    }
}

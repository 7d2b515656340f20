//! Retention: a pure plan (which prefix of closed segments goes) and its application.

use super::{SpecError, SpecLog};

impl SpecLog {
    /// The bases of the closed segments retention would delete, oldest first: time
    /// first (`max_timestamp < now - retention_ms`, stopping at the first segment that
    /// is not expired), then size (while the unselected bytes, active included, exceed
    /// `retention_bytes`). Always a prefix of the closed segments.
    pub fn retention_plan(
        &self,
        now: i64,
        retention_ms: Option<i64>,
        retention_bytes: Option<i64>,
    ) -> Result<Vec<i64>, SpecError> {
        if let Some(ms) = retention_ms {
            if ms < 0 {
                return Err(SpecError::InvalidArgument(format!("retention_ms {ms} < 0")));
            }
        }
        if let Some(bytes) = retention_bytes {
            if bytes <= 0 {
                return Err(SpecError::InvalidArgument(format!(
                    "retention_bytes {bytes} <= 0"
                )));
            }
        }
        let closed = self.closed_segments();
        let mut selected = 0;
        if let Some(ms) = retention_ms {
            let boundary = now.saturating_sub(ms);
            while selected < closed.len() && closed[selected].max_timestamp() < boundary {
                selected += 1;
            }
        }
        if let Some(limit) = retention_bytes {
            let limit = limit as u64;
            let mut remaining: u64 = self.raw_segments()[selected..]
                .iter()
                .map(|s| s.bytes())
                .sum();
            while selected < closed.len() && remaining > limit {
                remaining -= closed[selected].bytes();
                selected += 1;
            }
        }
        Ok(closed[..selected].iter().map(|s| s.base_offset).collect())
    }

    /// Applies retention; returns the deleted bases. `log_start_offset` becomes the base
    /// of the first surviving segment.
    pub fn retain(
        &mut self,
        now: i64,
        retention_ms: Option<i64>,
        retention_bytes: Option<i64>,
    ) -> Result<Vec<i64>, SpecError> {
        let plan = self.retention_plan(now, retention_ms, retention_bytes)?;
        self.delete_prefix(&plan)?;
        Ok(plan)
    }

    /// Deletes closed segments by base; the bases must be exactly the first closed
    /// segments (the engine's deletion API re-checks the same).
    pub fn delete_prefix(&mut self, bases: &[i64]) -> Result<(), SpecError> {
        let closed = self.closed_segments();
        if bases.len() > closed.len() {
            return Err(SpecError::InvalidArgument(
                "cannot delete the active segment".into(),
            ));
        }
        let prefix: Vec<i64> = closed[..bases.len()]
            .iter()
            .map(|s| s.base_offset)
            .collect();
        if prefix != bases {
            return Err(SpecError::InvalidArgument(format!(
                "{bases:?} is not the prefix {prefix:?} of closed segments"
            )));
        }
        let start_before = self.log_start_offset();
        self.segments.drain(..bases.len());
        assert!(self.log_start_offset() >= start_before);
        // The clean section loses its deleted prefix; it never starts before the log.
        self.clean_point = self.clean_point.max(self.log_start_offset());
        Ok(())
    }
}

//! Retention: which prefix of closed segments may go (a pure [`plan`]), and the
//! crash-safe deletion of that prefix (`executor`) with its recovery (`recovery`).
//!
//! Rules (docs/design.md section 1): only a continuous prefix of *closed* segments is
//! ever selected; time first (`max_timestamp < now - retention_ms`, stop at the first
//! segment that is not expired), then size (while the bytes of all unselected segments,
//! the active one included, exceed `retention_bytes`, select the next closed segment).

pub(crate) mod executor;
pub(crate) mod recovery;

#[cfg(feature = "serde")]
use serde::Serialize;

use crate::error::{Error, Result};
use crate::segment::files::SegmentMeta;

pub use executor::{delete_prefix, DeleteOutcome};
#[cfg(any(test, feature = "test-variants"))]
pub use executor::{delete_prefix_with, RetentionOrder};
pub use executor::{read_checkpoint, write_checkpoint};
pub use recovery::{recover, wholly_below, RetentionRecovery};

/// Why a segment was selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Reason {
    /// Its `max_timestamp` is older than `now - retention_ms`.
    Time,
    /// The log is larger than `retention_bytes` without it.
    Size,
}

/// The decision of [`plan`]: the prefix to delete and the resulting log start offset.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct Plan {
    /// Base offsets of the selected segments, oldest first: always the first
    /// `delete.len()` closed segments.
    pub delete: Vec<i64>,
    /// Why each of `delete` was selected (same order).
    pub reasons: Vec<Reason>,
    /// Base offset of the first surviving segment.
    pub log_start_offset: i64,
}

/// Checks the retention arguments: negative time and non-positive bytes are rejected.
pub fn check_arguments(retention_ms: Option<i64>, retention_bytes: Option<i64>) -> Result<()> {
    if let Some(ms) = retention_ms {
        if ms < 0 {
            return Err(Error::InvalidArgument(format!(
                "retention_ms must be >= 0, got {ms}"
            )));
        }
    }
    if let Some(bytes) = retention_bytes {
        if bytes <= 0 {
            return Err(Error::InvalidArgument(format!(
                "retention_bytes must be > 0, got {bytes}"
            )));
        }
    }
    Ok(())
}

/// Chooses the prefix of closed segments to delete. Pure. `segments` is the whole log
/// in offset order; the last one is the active segment.
pub fn plan(
    segments: &[SegmentMeta],
    now: i64,
    retention_ms: Option<i64>,
    retention_bytes: Option<i64>,
) -> Result<Plan> {
    check_arguments(retention_ms, retention_bytes)?;
    let Some(active) = segments.last() else {
        return Err(Error::InvalidArgument(
            "a log has at least one segment".into(),
        ));
    };
    assert!(!active.closed, "the last segment must be the active one");
    assert!(
        segments
            .windows(2)
            .all(|w| w[0].base_offset < w[1].base_offset),
        "segments out of order"
    );
    let closed = &segments[..segments.len() - 1];
    let mut delete = Vec::new();
    let mut reasons = Vec::new();
    if let Some(ms) = retention_ms {
        // i128: `now - retention_ms` must not wrap for extreme arguments.
        let boundary = i128::from(now) - i128::from(ms);
        for segment in closed {
            if i128::from(segment.max_timestamp) >= boundary {
                break;
            }
            delete.push(segment.base_offset);
            reasons.push(Reason::Time);
        }
    }
    if let Some(bytes_max) = retention_bytes {
        let mut remaining: u128 = segments
            .iter()
            .skip(delete.len())
            .map(|s| u128::from(s.bytes))
            .sum();
        for segment in closed.iter().skip(delete.len()) {
            if remaining <= bytes_max as u128 {
                break;
            }
            remaining -= u128::from(segment.bytes);
            delete.push(segment.base_offset);
            reasons.push(Reason::Size);
        }
    }
    assert!(
        delete.len() < segments.len(),
        "the active segment is never selected"
    );
    let log_start_offset = segments[delete.len()].base_offset;
    Ok(Plan {
        delete,
        reasons,
        log_start_offset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(base_offset: i64, bytes: u64, max_timestamp: i64) -> SegmentMeta {
        SegmentMeta {
            base_offset,
            closed: true,
            bytes,
            records: 1,
            max_timestamp,
            next_offset: base_offset + 1,
        }
    }

    fn log(metas: &[(i64, u64, i64)]) -> Vec<SegmentMeta> {
        let mut out: Vec<SegmentMeta> = metas.iter().map(|&(b, n, t)| seg(b, n, t)).collect();
        out.last_mut().unwrap().closed = false;
        out
    }

    #[test]
    fn minikafka_example_time() {
        // Seed: maxima 0, 50, 150 closed, 250 active, now 300, retention 100 -> 0, 1, 2.
        let segments = log(&[(0, 70, 0), (1, 70, 50), (2, 70, 150), (3, 70, 250)]);
        let plan = plan(&segments, 300, Some(100), None).unwrap();
        assert_eq!(plan.delete, vec![0, 1, 2]);
        assert_eq!(plan.log_start_offset, 3);
        assert_eq!(plan.reasons, vec![Reason::Time; 3]);
    }

    #[test]
    fn time_stops_at_first_unexpired_segment() {
        // Seed exercise 1: maxima 250, 0, 0: nothing goes (prefix invariant).
        let segments = log(&[(0, 70, 250), (1, 70, 0), (2, 70, 0), (3, 70, 0)]);
        let plan = plan(&segments, 300, Some(100), None).unwrap();
        assert!(plan.delete.is_empty());
        assert_eq!(plan.log_start_offset, 0);
        // boundary is exclusive: max_timestamp == now - retention_ms is kept.
        let segments = log(&[(0, 70, 200), (1, 70, 0)]);
        assert!(plan_of(&segments, 300, Some(100), None).is_empty());
    }

    fn plan_of(s: &[SegmentMeta], now: i64, ms: Option<i64>, bytes: Option<i64>) -> Vec<i64> {
        plan(s, now, ms, bytes).unwrap().delete
    }

    #[test]
    fn active_segment_is_never_selected() {
        let segments = log(&[(0, 100, 0), (5, 100, 0)]);
        assert_eq!(plan_of(&segments, 1_000, Some(0), Some(1)), vec![0]);
        let single = log(&[(0, 100, 0)]);
        assert!(plan_of(&single, 1_000, Some(0), Some(1)).is_empty());
    }

    #[test]
    fn size_continues_after_time() {
        let segments = log(&[(0, 100, 0), (10, 100, 900), (20, 100, 900), (30, 50, 900)]);
        // Time selects 0; then 250 bytes remain > 200 -> select 10; 150 <= 200 stop.
        let plan = plan(&segments, 1_000, Some(500), Some(200)).unwrap();
        assert_eq!(plan.delete, vec![0, 10]);
        assert_eq!(plan.reasons, vec![Reason::Time, Reason::Size]);
        assert_eq!(plan.log_start_offset, 20);
        // Exactly at the limit: nothing goes by size.
        assert!(plan_of(&segments, 1_000, None, Some(350)).is_empty());
        assert_eq!(plan_of(&segments, 1_000, None, Some(349)), vec![0]);
    }

    #[test]
    fn bad_arguments_are_rejected() {
        let segments = log(&[(0, 100, 0)]);
        assert!(matches!(
            plan(&segments, 0, Some(-1), None),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            plan(&segments, 0, None, Some(0)),
            Err(Error::InvalidArgument(_))
        ));
        assert!(plan(&segments, 0, Some(0), Some(1)).is_ok());
        assert!(plan(&segments, i64::MIN, Some(i64::MAX), None).is_ok());
    }
}

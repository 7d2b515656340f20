//! Boundary values picked on purpose: the generator keeps a shadow of the log (the
//! spec, applying each generated step as if no crash lost anything) and resolves a
//! drawn "edge" step against it, so that a comparison in the engine meets equality:
//!
//! * retention by time with `now - retention_ms` equal to a closed segment's
//!   `max_timestamp` (kept: the rule is `<`), picked among the segments the walk
//!   reaches (every earlier one has a smaller maximum);
//! * retention by size with `retention_bytes` equal to the bytes of a suffix of the
//!   log (the remaining bytes are then exactly the limit: nothing more goes);
//! * compaction with `now - timestamp` equal to `delete_retention_ms` for a latest
//!   tombstone in the closed region (kept: the rule is `>`), and with a grouping
//!   `segment_bytes` equal to the compacted bytes of the first two closed segments
//!   (the second joins the group exactly at the bound);
//! * an append whose batch exactly fills the rest of the active segment, or exactly
//!   `segment_bytes` (no roll: the rule is `>`).
//!
//! Without this a random generator meets these equalities only by chance (an age
//! equal to `delete_retention_ms` never came up), and an off-by-one in any of these
//! rules (`>=` for `>`, `<=` for `<`) passed the whole suite.

use seglog_model::spec::{Batch, Rec, SpecLog};

pub use seglog_model::spec::edges::{
    delete_retention_edge, group_bytes_edge, retention_bytes_edge, retention_ms_edge,
};

use crate::workload::RecordSpec;

/// The key of the record an edge append writes (`None` for keyless).
pub type EdgeKey = Option<u8>;

/// One record whose batch, appended to `log` now, takes exactly the rest of the
/// active segment (or all of `segment_bytes` when `whole_segment`, or when the rest
/// is too small for any batch): the padding of its value is searched for an exact
/// fit, with and without the key. The closest smaller batch if none fits exactly.
pub fn filling_record(
    log: &SpecLog,
    key: EdgeKey,
    value: u8,
    ts: i64,
    whole_segment: bool,
) -> RecordSpec {
    let active_bytes = log.active().bytes();
    let segment_bytes = log.segment_bytes();
    let offset = log.next_offset();
    let bytes_of = |key: Option<&str>, value: &str| {
        let rec = Rec::new(offset, key.map(str::as_bytes), Some(value.as_bytes()), ts);
        Batch {
            base_offset: offset,
            last_offset_delta: 0,
            control: false,
            base_timestamp: ts,
            max_timestamp: ts,
            records: vec![rec],
            codec: 0,
            log_append_time: false,
            delete_horizon: None,
            producer_id: -1,
            producer_epoch: -1,
            transactional: false,
        }
        .bytes()
    };
    let key = key.map(|k| format!("k{k}"));
    let smallest = bytes_of(key.as_deref(), &format!("v{value}"));
    let rest = segment_bytes.saturating_sub(active_bytes);
    let target = if whole_segment || active_bytes == 0 || rest < smallest {
        segment_bytes
    } else {
        rest
    };
    let mut best = (0, String::new(), key.clone());
    for key in [key.clone(), None] {
        for padding in 0..=target as usize {
            let value = format!("v{value}{}", ".".repeat(padding));
            let bytes = bytes_of(key.as_deref(), &value);
            if bytes > target {
                break;
            }
            if bytes > best.0 {
                best = (bytes, value, key.clone());
            }
            if bytes == target {
                break;
            }
        }
        if best.0 == target {
            break;
        }
    }
    RecordSpec {
        key: best.2,
        value: Some(best.1),
        ts,
    }
}

#[cfg(test)]
mod tests {
    use seglog_model::spec::SpecRecordInput;

    use super::*;

    fn input(key: Option<&str>, value: Option<&str>, timestamp: i64) -> SpecRecordInput {
        SpecRecordInput {
            key: key.map(|k| k.as_bytes().to_vec()),
            value: value.map(|v| v.as_bytes().to_vec()),
            timestamp,
        }
    }

    /// Three closed segments (max timestamps 10, 30, 20; a tombstone for `a` at 12)
    /// and an active one.
    fn log() -> SpecLog {
        let mut log = SpecLog::new(256);
        log.append(&[input(Some("a"), Some("1"), 10)]).unwrap();
        log.append(&[input(Some("a"), None, 12)]).unwrap();
        log.roll();
        log.append(&[input(Some("b"), Some("1"), 30)]).unwrap();
        log.roll();
        log.append(&[input(Some("c"), Some("1"), 20)]).unwrap();
        log.roll();
        log.append(&[input(None, Some("x"), 40)]).unwrap();
        log
    }

    #[test]
    fn retention_ms_edges_sit_on_a_reached_maximum() {
        let log = log();
        // Segment 2's maximum (20) is below segment 1's (30): the walk never tests it.
        assert_eq!(retention_ms_edge(&log, 100, 0), Some(100 - 12));
        assert_eq!(retention_ms_edge(&log, 100, 1), Some(100 - 30));
        assert_eq!(retention_ms_edge(&log, 100, 2), Some(100 - 12));
        for pick in 0..2 {
            let ms = retention_ms_edge(&log, 100, pick).unwrap();
            let plan = log.retention_plan(100, Some(ms), None).unwrap();
            // The boundary segment is kept, exactly the earlier ones go.
            assert_eq!(plan.len(), pick);
            assert!(log.retention_plan(101, Some(ms), None).unwrap().len() > pick);
        }
        assert_eq!(retention_ms_edge(&log, 11, 0), None);
    }

    #[test]
    fn retention_bytes_edges_leave_exactly_the_limit() {
        let log = log();
        for pick in 0..3 {
            let limit = retention_bytes_edge(&log, pick).unwrap();
            let deleted = log.retention_plan(0, None, Some(limit)).unwrap();
            assert_eq!(deleted.len(), 1 + pick);
            let fewer = log.retention_plan(0, None, Some(limit - 1)).unwrap();
            assert_eq!(fewer.len(), 2 + pick.min(1));
        }
    }

    #[test]
    fn delete_retention_edge_keeps_the_tombstone_one_more_ms_drops_it() {
        let log = log();
        let ms = delete_retention_edge(&log, 100, 0).unwrap();
        assert_eq!(ms, 88);
        let tombstones = |log: &SpecLog| log.records().filter(|(r, _)| r.value.is_none()).count();
        let mut kept = log.clone();
        kept.compact(100, ms, None).unwrap();
        assert_eq!(tombstones(&kept), 1);
        let mut dropped = log.clone();
        dropped.compact(101, ms, None).unwrap();
        assert_eq!(tombstones(&dropped), 0);
    }

    #[test]
    fn group_bytes_edge_joins_the_second_segment_exactly() {
        let log = log();
        let bytes = group_bytes_edge(&log, 0, 1_000).unwrap();
        let mut at = log.clone();
        at.compact(0, 1_000, Some(bytes)).unwrap();
        let mut below = log.clone();
        below.compact(0, 1_000, Some(bytes - 1)).unwrap();
        assert_eq!(
            at.closed_segments().len() + 1,
            below.closed_segments().len()
        );
    }

    #[test]
    fn filling_records_fill_the_segment_exactly() {
        let mut log = log();
        for whole in [false, true] {
            let record = filling_record(&log, Some(1), 7, 50, whole);
            let target = if whole {
                256
            } else {
                256 - log.active().bytes()
            };
            let mut probe = log.clone();
            let segments = probe.raw_segments().len();
            let input = input(record.key.as_deref(), record.value.as_deref(), 50);
            probe.append(&[input]).unwrap();
            assert_eq!(probe.active().batches.last().unwrap().bytes(), target);
            assert_eq!(probe.raw_segments().len(), segments + usize::from(whole));
            assert_eq!(probe.active().bytes(), 256);
            log = probe;
        }
    }
}

//! Boundary values of the retention and compaction rules on a given log, for the
//! generators that aim at them (conformance, `spec_random`, `cleanup_log`): a value
//! that makes the engine's comparison meet equality (`<` for time retention, `>` for
//! the tombstone age, the byte limits), so an off-by-one in a rule cannot pass
//! unnoticed. Each is a function of the spec's state only.

use super::{latest_closed_tombstones, SpecLog};

/// `retention_ms` with `now - retention_ms` equal to the `max_timestamp` of a closed
/// segment the time walk reaches (number `pick` of them); `None` if there is none
/// with `max_timestamp <= now`.
pub fn retention_ms_edge(log: &SpecLog, now: i64, pick: usize) -> Option<i64> {
    let mut reached = Vec::new();
    let mut earlier_max = i64::MIN;
    for segment in log.closed_segments() {
        let max = segment.max_timestamp();
        if max > earlier_max && max <= now {
            reached.push(max);
        }
        earlier_max = earlier_max.max(max);
    }
    let max = *reached.get(pick % reached.len().max(1))?;
    now.checked_sub(max)
}

/// `retention_bytes` equal to the bytes of the log's segments from closed segment
/// number `1 + pick % closed` on (active included): size retention deletes exactly
/// the segments before it and stops with the remaining bytes equal to the limit.
/// With no closed segment, the active segment's bytes. `None` for an empty log.
pub fn retention_bytes_edge(log: &SpecLog, pick: usize) -> Option<i64> {
    let segments = log.raw_segments();
    let closed = segments.len() - 1;
    let from = if closed == 0 { 0 } else { 1 + pick % closed };
    let bytes: u64 = segments[from..].iter().map(|s| s.bytes()).sum();
    (bytes > 0).then(|| i64::try_from(bytes).expect("a small log"))
}

/// `delete_retention_ms` equal to the age at `now` of a latest tombstone in the
/// closed region (number `pick` of them); `None` if there is none not newer than `now`.
pub fn delete_retention_edge(log: &SpecLog, now: i64, pick: usize) -> Option<i64> {
    let ages: Vec<i64> = latest_closed_tombstones(log)
        .into_iter()
        .filter_map(|r| now.checked_sub(r.timestamp))
        .filter(|age| *age >= 0)
        .collect();
    ages.get(pick % ages.len().max(1)).copied()
}

/// A grouping `segment_bytes` equal to the compacted bytes of the first two closed
/// segments (compacted at `now` with `delete_retention_ms`): the second source
/// joins the first's group exactly at the bound. `None` with fewer than two closed
/// segments or when nothing is left of them.
pub fn group_bytes_edge(log: &SpecLog, now: i64, delete_retention_ms: i64) -> Option<u64> {
    if log.closed_segments().len() < 2 || delete_retention_ms < 0 {
        return None;
    }
    // Each source alone in its group (but an empty one joins the group before it):
    // the first two groups' bytes.
    let mut alone = log.clone();
    alone.compact(now, delete_retention_ms, Some(1)).ok()?;
    let bytes: u64 = alone
        .closed_segments()
        .get(..2)?
        .iter()
        .map(|s| s.bytes())
        .sum();
    (bytes > 0).then_some(bytes)
}

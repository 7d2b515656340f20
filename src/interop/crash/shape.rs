//! Kafka's crash workload as a seglog workload ([`workload`]): the same steps on
//! the same keys, so that seglog's own protocols go through the crash explorer
//! (`alice`) in the shape Kafka's log layer does, under the same persistence
//! models, and the two stand side by side in `seglog kafka-crash`'s report.
//!
//! Step for step with the harness's `CrashWorkload.run`:
//! * appends of keys `k0..k5` with values `v<round>-<key>`, a tombstone of `k2`;
//! * flushes where Kafka flushes (each `seglog` command closes the log, which
//!   syncs it, so a flush needs no command of its own: `alice::command`);
//! * the two explicit rolls;
//! * one compaction of the closed segments (Kafka's `Cleaner` round), with a
//!   delete retention that keeps the tombstone, as Kafka's does;
//! * size retention that deletes the oldest segment ([`RETENTION_BYTES`]: the
//!   log's size less that segment's, as Kafka's `retention.bytes` is set);
//! * more appends and a close.
//!
//! The segments are small ([`SEGMENT_BYTES`], Kafka's is 250 bytes), so appends
//! roll by size as Kafka's do.

use crate::sweep::Workload;
use crate::workload::{Op, RecordSpec};
use seglog::log::LogConfig;

/// The workload's segment size.
pub const SEGMENT_BYTES: u64 = 250;

/// The retention step's `retention_bytes`: the log's size before it less its
/// oldest segment (a test holds that it deletes exactly one segment).
pub const RETENTION_BYTES: i64 = 183;

/// The workload's record timestamps start here, one millisecond a step.
const T0: i64 = 1_000;

/// Keys `k<from>..k<to - 1>` with values `v<round>-<key>` (Kafka's `batch`).
fn batch(round: u32, from: u32, to: u32, ts: i64) -> Op {
    Op::append(
        (from..to)
            .map(|k| RecordSpec {
                key: Some(format!("k{k}")),
                value: Some(format!("v{round}-{k}")),
                ts,
            })
            .collect(),
    )
}

/// One batch of `(key, value)` pairs (`None`: a tombstone).
fn pairs(records: &[(&str, Option<&str>)], ts: i64) -> Op {
    Op::append(
        records
            .iter()
            .map(|(k, v)| RecordSpec {
                key: Some((*k).to_string()),
                value: v.map(str::to_string),
                ts,
            })
            .collect(),
    )
}

/// Kafka's crash workload, in seglog's operations.
pub fn workload() -> Workload {
    let now = T0 + 100;
    Workload {
        name: "kafka-crash-shape".into(),
        description: "Kafka's crash workload: appends and flushes, two rolls, one compaction \
                      of the closed segments, size retention of the oldest segment, more \
                      appends and a close"
            .into(),
        config: LogConfig {
            segment_bytes: SEGMENT_BYTES,
            index_interval_bytes: 128,
            ..LogConfig::default()
        },
        variant: "manifest".into(),
        ops: vec![
            batch(0, 0, 6, T0),
            batch(1, 0, 6, T0 + 1),
            Op::Flush,
            batch(2, 0, 6, T0 + 2),
            Op::Roll,
            pairs(
                &[("k1", Some("v3-1")), ("k2", None), ("k3", Some("v3-3"))],
                T0 + 3,
            ),
            pairs(&[("k0", Some("v4-0")), ("k4", Some("v4-4"))], T0 + 4),
            Op::Flush,
            Op::Roll,
            Op::Compact {
                now,
                delete_retention_ms: 86_400_000,
                segment_bytes: None,
            },
            Op::Retain {
                now,
                retention_ms: None,
                retention_bytes: Some(RETENTION_BYTES),
            },
            batch(5, 2, 5, T0 + 5),
            batch(6, 0, 2, T0 + 6),
            Op::Flush,
            batch(7, 4, 6, T0 + 7),
            Op::Close,
        ],
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::workload::engine;
    use seglog::fs::sim::SimFs;
    use seglog::log::Log;

    #[test]
    fn the_retention_step_deletes_exactly_the_oldest_segment() {
        let workload = workload();
        let fs = Arc::new(SimFs::new());
        let (mut log, _) = Log::open_with(fs, "/data/log", workload.config.clone()).unwrap();
        let retain = workload
            .ops
            .iter()
            .position(|op| matches!(op, Op::Retain { .. }))
            .unwrap();
        for op in &workload.ops[..retain] {
            engine::apply(&mut log, op).unwrap();
        }
        let before = engine::view(&log).unwrap();
        let sizes: Vec<u64> = before.segments.iter().map(|s| s.bytes).collect();
        engine::apply(&mut log, &workload.ops[retain]).unwrap();
        let after = engine::view(&log).unwrap();
        assert_eq!(
            after.segments.len() + 1,
            before.segments.len(),
            "sizes before {sizes:?}, after {:?}",
            after.segments
        );
        assert_eq!(after.log_start_offset, before.segments[1].base_offset);
        assert!(before.segments.len() > 2, "one segment deleted, one kept");
    }
}

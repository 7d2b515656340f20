//! Batches that end in a compaction gap (`lastOffsetDelta` past the last stored
//! record), in closed segments (left by this engine's compaction) and at the end
//! of the active segment (left by another Kafka-format writer).
//!
//! The bug class: a batch's end taken from its last stored record instead of
//! `baseOffset + lastOffsetDelta` when a segment is opened. Record reads cannot see
//! it (the missing end holds no record), but a fetch or `read_raw` from inside the
//! gap skips the batch, `next_offset` goes backwards on a log whose active segment
//! ends in such a gap, and the next append reuses offsets a reader has seen.
//!
//! Invariant: after open, `next_offset` = the last batch's `baseOffset +
//! lastOffsetDelta + 1`; `fetch` and `read_raw` from any offset up to a batch's last
//! offset return that batch, and `Fetch::next_offset` is its last offset + 1; the
//! next append starts at `next_offset`.

mod support;

use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;

use seglog::format::{filename, RecordBatch};
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{Log, LogConfig, NewRecord};
use seglog_suite::conformance::{run_case, Backend, ForeignBatch, Step};
use seglog_suite::workload::{Op, RecordSpec};
use support::batches;

fn rec(key: &str, value: Option<&str>, ts: i64) -> RecordSpec {
    RecordSpec {
        key: Some(key.into()),
        value: value.map(Into::into),
        ts,
    }
}

fn append(records: Vec<RecordSpec>) -> Step {
    Step::Op(Op::append(records))
}

/// Closed segment: batch [0, 2] whose last two records are superseded by the next
/// batch; compaction leaves it ending in a gap and reopens the log.
#[test]
fn a_compacted_batch_end_survives_reopen() {
    let steps = vec![
        append(vec![
            rec("a", Some("1"), 10),
            rec("b", Some("1"), 10),
            rec("c", Some("1"), 10),
        ]),
        Step::Op(Op::Roll),
        append(vec![rec("b", Some("2"), 11), rec("c", Some("2"), 11)]),
        Step::Op(Op::Roll),
        Step::Op(Op::Compact {
            now: 20,
            delete_retention_ms: 0,
            segment_bytes: Some(1),
        }),
        Step::Reopen,
        append(vec![rec("d", Some("1"), 12)]),
    ];
    for backend in [Backend::Sim, Backend::Disk] {
        run_case(&steps, backend, "manifest").unwrap_or_else(|d| panic!("{d}"));
    }
}

/// Active segment: a foreign batch [n, n+3] holding only its first record, the log
/// reopened, then appended to.
#[test]
fn a_foreign_batch_end_in_the_active_segment_is_kept() {
    let steps = vec![
        append(vec![rec("a", Some("1"), 10)]),
        Step::Foreign(ForeignBatch {
            gap: 1,
            records: vec![
                rec("b", Some("1"), 11),
                rec("c", Some("1"), 12),
                rec("d", None, 13),
                rec("e", Some("1"), 14),
            ],
            kept: vec![true, false, true, false],
        }),
        append(vec![rec("f", Some("1"), 15)]),
        Step::Reopen,
        Step::Op(Op::Roll),
        Step::Op(Op::Compact {
            now: 20,
            delete_retention_ms: 100,
            segment_bytes: None,
        }),
    ];
    for backend in [Backend::Sim, Backend::Disk] {
        run_case(&steps, backend, "manifest").unwrap_or_else(|d| panic!("{d}"));
    }
}

/// The records of a foreign batch: `(key, has value)` and which are still stored.
fn foreign_batch() -> impl Strategy<Value = (u8, Vec<(u8, bool)>, Vec<bool>)> {
    (1usize..6).prop_flat_map(|len| {
        (
            0u8..3,
            prop::collection::vec((0u8..4, any::<bool>()), len),
            prop::collection::vec(any::<bool>(), len),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Written straight to the active `.log` on SimFs (no conformance machinery):
    /// `appended` batches by the engine, then a foreign batch whose kept records
    /// are `kept` (the last one usually not), reopened.
    #[test]
    fn the_end_of_a_foreign_batch_is_its_last_offset_delta(
        appended in 0usize..4,
        (gap, records, mut kept) in foreign_batch(),
        drop_last in any::<bool>(),
    ) {
        if drop_last && kept.len() > 1 {
            *kept.last_mut().unwrap() = false;
        }
        if !kept.contains(&true) {
            kept[0] = true;
        }
        let fs = Arc::new(SimFs::new());
        let dir = Path::new("/p0");
        let config = LogConfig { segment_bytes: 1 << 20, index_interval_bytes: 64, ..LogConfig::default() };
        let (mut log, _) = Log::open_with(fs.clone(), dir, config.clone()).unwrap();
        for i in 0..appended {
            log.append(&[NewRecord::new(Some(vec![b'x']), Some(vec![i as u8]), 5)]).unwrap();
        }
        let base = log.next_offset() + i64::from(gap);
        log.close().unwrap();
        let new: Vec<NewRecord> = records
            .iter()
            .map(|(k, v)| NewRecord::new(Some(vec![*k]), v.then(|| vec![1]), 7))
            .collect();
        let mut flags = kept.iter();
        let batch = RecordBatch::build(base, &new)
            .retain(|_| *flags.next().unwrap())
            .unwrap();
        let last = batch.last_offset();
        let path = dir.join(filename::build(0, filename::LOG_SUFFIX));
        fs.append(&path, &batch.encode()).unwrap();
        let (mut log, _) = Log::open_with(fs.clone(), dir, config).unwrap();
        prop_assert_eq!(log.next_offset(), last + 1);
        for from in base..=last {
            let fetch = log.fetch(from, 1).unwrap();
            prop_assert_eq!(batches(fetch.bytes()), vec![(base, last, batch.records.len())]);
            prop_assert_eq!(fetch.next_offset(), last + 1);
            prop_assert_eq!(
                batches(&log.read_raw(from, usize::MAX).unwrap()),
                vec![(base, last, batch.records.len())]
            );
        }
        let empty = log.fetch(last + 1, usize::MAX).unwrap();
        prop_assert!(empty.is_empty());
        prop_assert_eq!(empty.next_offset(), last + 1);
        let info = log.append(&[NewRecord::new(None, Some(vec![2]), 9)]).unwrap();
        prop_assert_eq!(info.base_offset, last + 1);
        prop_assert_eq!(log.next_offset(), last + 2);
    }
}

//! An open transaction bounds the cleanable section.
//!
//! Invariants checked: under both policies, a log whose only closed segment holds
//! the last stable offset has nothing cleanable (`Log::cleanable` says ratio 0,
//! `compact_if_dirty` installs nothing, and the spec's `cleanable` agrees); once
//! the transaction commits, the same segment is cleanable and a pass removes the
//! superseded record.

use std::sync::Arc;

use seglog::compaction::CompactionPolicy;
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{ControlKind, Log, LogConfig, NewRecord, Producer};
use seglog_model::spec::{SpecLog, SpecRecordInput};

fn record(key: &str, value: &str, ts: i64) -> NewRecord {
    NewRecord::new(
        Some(key.as_bytes().to_vec()),
        Some(value.as_bytes().to_vec()),
        ts,
    )
}

fn spec_record(key: &str, value: &str, ts: i64) -> SpecRecordInput {
    SpecRecordInput {
        key: Some(key.as_bytes().to_vec()),
        value: Some(value.as_bytes().to_vec()),
        timestamp: ts,
    }
}

const PRODUCER: Producer = Producer {
    id: 7,
    epoch: 0,
    base_sequence: -1,
};

/// The example: a@0, the open transaction's b@1, a@2, roll, c@3; the
/// spec's log beside it.
fn example(policy: CompactionPolicy) -> (Log, SpecLog) {
    let fs = Arc::new(SimFs::new());
    let config = LogConfig {
        compaction_policy: policy,
        ..LogConfig::default()
    };
    let (mut log, _) = Log::open_with(fs as Arc<dyn FileSystem>, "/log", config).unwrap();
    let mut spec = SpecLog::new(LogConfig::default().segment_bytes);
    log.append(&[record("a", "1", 1)]).unwrap();
    spec.append(&[spec_record("a", "1", 1)]).unwrap();
    log.append_transactional(PRODUCER, &[record("b", "2", 2)])
        .unwrap();
    spec.append_transactional(7, &[spec_record("b", "2", 2)])
        .unwrap();
    log.append(&[record("a", "3", 3)]).unwrap();
    spec.append(&[spec_record("a", "3", 3)]).unwrap();
    log.roll().unwrap();
    spec.roll();
    log.append(&[record("c", "4", 4)]).unwrap();
    spec.append(&[spec_record("c", "4", 4)]).unwrap();
    (log, spec)
}

#[test]
fn an_open_transaction_in_the_only_closed_segment_leaves_nothing_cleanable() {
    for policy in [CompactionPolicy::Seed, CompactionPolicy::Kafka] {
        let (mut log, mut spec) = example(policy);
        assert_eq!(log.last_stable_offset().unwrap(), 1);
        let cleanable = log.cleanable(100).unwrap();
        let expected = spec.cleanable(100, 0);
        assert_eq!(cleanable.first_uncleanable_offset, 0, "{policy:?}");
        assert_eq!(
            cleanable.first_uncleanable_offset, expected.first_uncleanable_offset,
            "{policy:?}"
        );
        assert_eq!(cleanable.cleanable_bytes, 0, "{policy:?}");
        assert_eq!(expected.cleanable_bytes, 0, "{policy:?}");
        assert_eq!(cleanable.dirty_ratio, 0.0, "{policy:?}");
        for _ in 0..3 {
            let report = log.compact_if_dirty(100, 1000, None).unwrap();
            assert_eq!(report, None, "{policy:?}: not dirty, nothing installed");
        }
        assert_eq!(log.clean_point().unwrap(), 0, "{policy:?}");

        // Committed: the bound lifts, the segment is cleanable, a@0 goes.
        log.append_control(ControlKind::Commit, PRODUCER.id, PRODUCER.epoch, 5)
            .unwrap();
        spec.append_control_of(7, true, 5);
        log.roll().unwrap();
        spec.roll();
        log.append(&[record("d", "6", 6)]).unwrap();
        spec.append(&[spec_record("d", "6", 6)]).unwrap();
        let cleanable = log.cleanable(100).unwrap();
        let expected = spec.cleanable(100, 0);
        assert_eq!(cleanable.first_uncleanable_offset, 5, "{policy:?}");
        assert_eq!(
            cleanable.first_uncleanable_offset, expected.first_uncleanable_offset,
            "{policy:?}"
        );
        assert!(cleanable.cleanable_bytes > 0, "{policy:?}");
        assert!(cleanable.should_clean(0.5), "{policy:?}");
        let report = log.compact_if_dirty(100, 1000, None).unwrap();
        let report = report.expect("dirty: cleaned");
        assert!(
            report.records_after < report.records_before,
            "{policy:?}: a@0 is superseded: {report:?}"
        );
    }
}

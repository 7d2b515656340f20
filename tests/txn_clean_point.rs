//! The clean point: a `seed` pass over a log holding transactional data
//! put the clean point back at the log start, so the log never stopped being
//! dirty: `Log::cleanable` (and the spec's `cleanable`) reported the section just
//! cleaned as dirty again (ratio 1.0), `compact --if-dirty` cleaned and installed
//! an unchanged copy every time, and the `LogManager` picked that log every round.
//! The fix (spec first, `model/src/spec/txn_log.rs`; engine
//! `engine/src/compaction/cleaner.rs`): the pass moves the clean point to the first offset
//! it did not clean, `min(active base, last stable offset)`, never back, as Kafka's
//! cleaner does; whether the rules apply is decided over the whole log.
//!
//! Invariants checked: under both policies, after a pass over a log with a
//! committed transaction the next `compact_if_dirty` installs nothing (engine and
//! CLI, whose files stay byte for byte), the engine's clean point and `cleanable`
//! equal the spec's after every step; with an open transaction in a later segment
//! the clean point stops at the last stable offset, that segment stays uncleanable
//! until the transaction ends, and then it is cleaned once.

mod cli_support;

use std::sync::Arc;

use serde_json::{json, Value};

use seglog::compaction::CompactionPolicy;
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{ControlKind, Log, LogConfig, NewRecord, Producer};
use seglog_model::spec::{CleanKnobs, SpecLog, SpecRecordInput};

use cli_support::{ok, snapshot};

const NOW: i64 = 100;
const DELETE_RETENTION_MS: i64 = 1000;

const PRODUCER: Producer = Producer {
    id: 7,
    epoch: 0,
    base_sequence: -1,
};

/// The engine's log and the spec's, appended to and cleaned in step.
struct Pair {
    log: Log,
    spec: SpecLog,
    policy: CompactionPolicy,
}

impl Pair {
    fn new(policy: CompactionPolicy) -> Pair {
        let fs = Arc::new(SimFs::new());
        let config = LogConfig {
            compaction_policy: policy,
            ..LogConfig::default()
        };
        let (log, _) = Log::open_with(fs as Arc<dyn FileSystem>, "/log", config).unwrap();
        let spec = SpecLog::new(LogConfig::default().segment_bytes);
        Pair { log, spec, policy }
    }

    fn append(&mut self, key: &str, value: &str, ts: i64) {
        let rec = NewRecord::new(
            Some(key.as_bytes().to_vec()),
            Some(value.as_bytes().to_vec()),
            ts,
        );
        self.log.append(&[rec]).unwrap();
        self.spec.append(&[spec_record(key, value, ts)]).unwrap();
    }

    fn append_transactional(&mut self, key: &str, value: &str, ts: i64) {
        let rec = NewRecord::new(
            Some(key.as_bytes().to_vec()),
            Some(value.as_bytes().to_vec()),
            ts,
        );
        self.log.append_transactional(PRODUCER, &[rec]).unwrap();
        self.spec
            .append_transactional(PRODUCER.id, &[spec_record(key, value, ts)])
            .unwrap();
    }

    fn commit(&mut self, ts: i64) {
        self.log
            .append_control(ControlKind::Commit, PRODUCER.id, PRODUCER.epoch, ts)
            .unwrap();
        self.spec.append_control_of(PRODUCER.id, true, ts);
    }

    fn roll(&mut self) {
        self.log.roll().unwrap();
        self.spec.roll();
    }

    /// `compact_if_dirty` on both; true if it cleaned. Checks that the engine's
    /// dirty ratio, clean point and records equal the spec's before and after.
    fn compact_if_dirty(&mut self) -> bool {
        let policy = self.policy;
        let cleanable = self.log.cleanable(NOW).unwrap();
        let want = self.spec.cleanable(NOW, 0);
        assert_eq!(cleanable.clean_point, want.clean_point, "{policy:?}");
        assert_eq!(
            cleanable.first_uncleanable_offset, want.first_uncleanable_offset,
            "{policy:?}"
        );
        assert_eq!(cleanable.clean_bytes, want.clean_bytes, "{policy:?}");
        assert_eq!(
            cleanable.cleanable_bytes, want.cleanable_bytes,
            "{policy:?}"
        );
        let dirty = want.should_clean(LogConfig::default().min_cleanable_dirty_ratio);
        let report = self
            .log
            .compact_if_dirty(NOW, DELETE_RETENTION_MS, None)
            .unwrap();
        assert_eq!(report.is_some(), dirty, "{policy:?}: {cleanable:?}");
        if dirty {
            let knobs = CleanKnobs {
                policy: match policy {
                    CompactionPolicy::Seed => seglog_model::spec::CompactionPolicy::Seed,
                    CompactionPolicy::Kafka => seglog_model::spec::CompactionPolicy::Kafka,
                },
                ..CleanKnobs::default()
            };
            self.spec
                .clean(NOW, DELETE_RETENTION_MS, None, knobs)
                .unwrap();
        }
        assert_eq!(
            self.log.clean_point().unwrap(),
            self.spec.clean_point(),
            "{policy:?}"
        );
        let offsets: Vec<i64> = self
            .log
            .read(0, usize::MAX)
            .unwrap()
            .iter()
            .map(|r| r.offset)
            .collect();
        let want: Vec<i64> = self.spec.records().map(|(r, _)| r.offset).collect();
        assert_eq!(offsets, want, "{policy:?}");
        dirty
    }
}

fn spec_record(key: &str, value: &str, ts: i64) -> SpecRecordInput {
    SpecRecordInput {
        key: Some(key.as_bytes().to_vec()),
        value: Some(value.as_bytes().to_vec()),
        timestamp: ts,
    }
}

/// a@0, the committed transaction's b@1 and its marker @2, a@3, roll, c@4.
fn committed_example(policy: CompactionPolicy) -> Pair {
    let mut pair = Pair::new(policy);
    pair.append("a", "1", 1);
    pair.append_transactional("b", "2", 2);
    pair.commit(2);
    pair.append("a", "3", 3);
    pair.roll();
    pair.append("c", "4", 4);
    pair
}

#[test]
fn a_cleaned_log_with_a_committed_transaction_is_not_dirty_again() {
    for policy in [CompactionPolicy::Seed, CompactionPolicy::Kafka] {
        let mut pair = committed_example(policy);
        assert!(pair.compact_if_dirty(), "{policy:?}: all dirty, cleaned");
        assert_eq!(pair.log.clean_point().unwrap(), 4, "{policy:?}");
        for _ in 0..2 {
            assert!(!pair.compact_if_dirty(), "{policy:?}: not dirty again");
        }
        // New dirt past the clean point (more bytes than the clean section) is
        // cleaned once, then the log is clean.
        for key in ["a", "b", "c", "x", "y"] {
            pair.append(key, "5", 5);
        }
        pair.roll();
        pair.append("d", "6", 6);
        assert!(pair.compact_if_dirty(), "{policy:?}: the new segment");
        assert!(!pair.compact_if_dirty(), "{policy:?}");
    }
}

#[test]
fn an_open_transaction_in_a_later_segment_stops_the_clean_point_at_it() {
    for policy in [CompactionPolicy::Seed, CompactionPolicy::Kafka] {
        let mut pair = committed_example(policy);
        pair.append_transactional("e", "5", 5); // 5: the last stable offset
        pair.roll();
        pair.append("f", "6", 6);
        assert_eq!(pair.log.last_stable_offset().unwrap(), 5);
        assert!(pair.compact_if_dirty(), "{policy:?}: the first segment");
        // The seed pass stops at the last stable offset; the kafka pass at the base
        // of its segment (its map ends there).
        let want = match policy {
            CompactionPolicy::Seed => 5,
            CompactionPolicy::Kafka => 4,
        };
        assert_eq!(pair.log.clean_point().unwrap(), want, "{policy:?}");
        assert!(
            !pair.compact_if_dirty(),
            "{policy:?}: held by the transaction"
        );
        pair.commit(7);
        pair.roll();
        pair.append("g", "8", 8);
        assert!(pair.compact_if_dirty(), "{policy:?}: committed, cleaned");
        assert_eq!(pair.log.clean_point().unwrap(), 8, "{policy:?}");
        assert!(!pair.compact_if_dirty(), "{policy:?}");
    }
}

/// The CLI example of the issue with the transaction committed: the first
/// `--if-dirty` cleans (ratio 1), the second and third find nothing dirty and
/// leave every file as it was.
#[test]
fn compact_if_dirty_on_the_cli_cleans_a_transactional_log_once() {
    for policy in ["seed", "kafka"] {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("T");
        let dir = dir.to_str().unwrap();
        let run = |args: &[&str]| -> Value {
            let mut all = args.to_vec();
            all.extend_from_slice(&["--policy", policy]);
            serde_json::from_str(&ok(&all)).unwrap()
        };
        run(&[
            "append",
            dir,
            "--batch",
            r#"[{"key":"a","value":"1","ts":1}]"#,
        ]);
        run(&[
            "append",
            dir,
            "--producer-id",
            "7",
            "--batch",
            r#"[{"key":"b","value":"2","ts":2}]"#,
        ]);
        run(&[
            "append",
            dir,
            "--producer-id",
            "7",
            "--control",
            "commit",
            "--timestamp",
            "2",
        ]);
        run(&[
            "append",
            dir,
            "--batch",
            r#"[{"key":"a","value":"3","ts":3}]"#,
        ]);
        run(&["roll", dir]);
        run(&[
            "append",
            dir,
            "--batch",
            r#"[{"key":"c","value":"4","ts":4}]"#,
        ]);
        let compact = || {
            run(&[
                "compact",
                dir,
                "--if-dirty",
                "--now",
                "100",
                "--delete-retention-ms",
                "1000",
            ])
        };
        let first = compact();
        assert_eq!(first["compacted"], json!(true), "{policy}: {first}");
        assert_eq!(first["cleanable"]["dirty_ratio"], json!(1.0), "{policy}");
        assert_eq!(first["clean_point_after"], json!(4), "{policy}: {first}");
        let before = snapshot(std::path::Path::new(dir));
        for _ in 0..2 {
            let again = compact();
            assert_eq!(again["compacted"], json!(false), "{policy}: {again}");
            assert_eq!(again["cleanable"]["cleanable_bytes"], json!(0), "{policy}");
            assert_eq!(again["cleanable"]["dirty_ratio"], json!(0.0), "{policy}");
            assert_eq!(again["records_before"], json!(0), "{policy}");
            assert_eq!(snapshot(std::path::Path::new(dir)), before, "{policy}");
        }
    }
}

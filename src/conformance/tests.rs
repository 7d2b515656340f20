use std::sync::Arc;

use seglog_model::spec::{SpecLog, SpecRecordInput};

use super::compare::{compare, engine_spec, structure_diff};
use super::*;
use crate::workload::RecordSpec;
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::log::Log;

fn append(key: &str, value: Option<&str>, ts: i64) -> Step {
    Step::Op(Op::Append {
        records: vec![RecordSpec {
            key: Some(key.into()),
            value: value.map(str::to_string),
            ts,
        }],
        codec: None,
        log_append_time: None,
    })
}

#[test]
fn case_steps_are_deterministic_per_seed() {
    let a = case_steps(42, 30);
    assert_eq!(a, case_steps(42, 30));
    // 30 drawn steps, after the configuration step of a LogAppendTime case.
    let config = usize::from(is_log_append_time(&a));
    assert_eq!(a.len(), 30 + config);
    assert_ne!(a, case_steps(43, 30));
    assert_ne!(case_seed(0, 0), case_seed(0, 1));
    assert_ne!(case_seed(0, 0), case_seed(1, 0));
}

#[test]
fn generated_cases_cover_every_step_kind() {
    let steps: Vec<Step> = (0..20).flat_map(|seed| case_steps(seed, 40)).collect();
    let has = |f: &dyn Fn(&Step) -> bool| steps.iter().any(f);
    assert!(has(&|s| matches!(s, Step::Op(Op::Append { .. }))));
    assert!(has(&|s| matches!(s, Step::Op(Op::AppendControl { .. }))));
    assert!(has(&|s| matches!(s, Step::Op(Op::AppendTxn { .. }))));
    assert!(has(&|s| matches!(s, Step::Op(Op::Roll))));
    assert!(has(&|s| matches!(s, Step::Op(Op::Flush))));
    assert!(has(&|s| matches!(s, Step::Op(Op::Retain { .. }))));
    assert!(has(&|s| matches!(s, Step::Op(Op::Compact { .. }))));
    assert!(has(&|s| matches!(s, Step::Op(Op::Read { .. }))));
    assert!(has(&|s| matches!(s, Step::AdvanceClock(_))));
    assert!(has(&|s| matches!(s, Step::CrashReopen { .. })));
    assert!(has(&|s| matches!(s, Step::Reopen)));
    // Null keys and tombstones are drawn.
    let records: Vec<&RecordSpec> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Op(Op::Append { records, .. }) => Some(records),
            _ => None,
        })
        .flatten()
        .collect();
    assert!(records.iter().any(|r| r.key.is_none()));
    assert!(records.iter().any(|r| r.value.is_none()));
}

/// Transactions are drawn with their ends, and cleanings reach the transaction
/// rules: in 100 cases of 40 steps, replayed on a spec shadow (as if no crash lost
/// anything), transactional batches that a later COMMIT ends and others a later
/// ABORT ends, and passes of each policy that remove an aborted batch or run while
/// a transaction is open (coverage marks: the rules' code is reached). Measured
/// when written: 42 committed, 38 aborted, aborted batches removed by 18 seed and
/// 5 kafka passes, 114 seed and 41 kafka passes with a transaction open.
#[test]
fn generated_cases_draw_committed_and_aborted_transactions() {
    #[derive(Debug, Default)]
    struct Marks {
        committed: u64,
        aborted: u64,
        /// (seed, kafka): passes that removed an aborted batch.
        aborted_removed: [u64; 2],
        /// (seed, kafka): passes on a log with an open transaction.
        open_held: [u64; 2],
    }
    let mut marks = Marks::default();
    for seed in 0..100 {
        let mut log = SpecLog::new(case_config().segment_bytes);
        let mut open = false;
        for step in case_steps(seed, 40) {
            let Step::Op(op) = step else { continue };
            match &op {
                Op::AppendTxn { .. } => open = true,
                Op::AppendControl { commit, .. } if open => {
                    open = false;
                    if *commit {
                        marks.committed += 1;
                    } else {
                        marks.aborted += 1;
                    }
                }
                _ => {}
            }
            let policy = match &op {
                Op::Clean { policy, .. } => Some(usize::from(
                    *policy == seglog::compaction::CompactionPolicy::Kafka,
                )),
                Op::Compact { .. } => Some(0),
                _ => None,
            };
            let before = log.clone();
            crate::workload::spec::apply(&mut log, &op);
            let Some(policy) = policy else { continue };
            if before.last_stable_offset() < before.next_offset() {
                marks.open_held[policy] += 1;
            }
            let aborted = before
                .kafka_txn_rules()
                .map(|r| r.aborted)
                .unwrap_or_default();
            // Removed, or emptied (an active producer's last batch, rule 5).
            let kept: std::collections::BTreeSet<i64> = log
                .batches()
                .filter(|b| !b.records.is_empty())
                .map(|b| b.base_offset)
                .collect();
            if aborted.iter().any(|b| !kept.contains(b)) {
                marks.aborted_removed[policy] += 1;
            }
        }
    }
    let often = [
        marks.committed,
        marks.aborted,
        marks.aborted_removed[0],
        marks.open_held[0],
        marks.open_held[1],
    ];
    assert!(often.iter().all(|n| *n >= 10), "{marks:?}");
    // Rarer: a seed pass usually removes an aborted batch first, and a kafka pass
    // cleans only below the segment of an open transaction.
    assert!(marks.aborted_removed[1] >= 3, "{marks:?}");
}

#[test]
fn shrink_deletes_every_step_the_failure_does_not_need() {
    // Fails when the case holds a Roll followed (anywhere later) by a Reopen.
    let needs = |steps: &[Step]| -> Option<Divergence> {
        let roll = steps.iter().position(|s| *s == Step::Op(Op::Roll))?;
        let reopen = steps.iter().skip(roll).position(|s| *s == Step::Reopen)? + roll;
        Some(Divergence {
            seed: 0,
            backend: Backend::Sim,
            steps: steps.to_vec(),
            step: reopen,
            detail: "planted".into(),
            crash_lost: None,
        })
    };
    let steps = vec![
        append("a", Some("1"), 0),
        Step::AdvanceClock(5),
        Step::Op(Op::Roll),
        append("b", Some("1"), 1),
        Step::Op(Op::Flush),
        Step::Reopen,
        Step::Op(Op::Roll),
    ];
    let first = needs(&steps).expect("the full case fails");
    let shrunk = shrink(Divergence { seed: 9, ..first }, needs);
    assert_eq!(shrunk.steps, vec![Step::Op(Op::Roll), Step::Reopen]);
    assert_eq!(shrunk.step, 1);
    assert_eq!(shrunk.seed, 9);
}

#[test]
fn a_hand_written_case_passes_on_both_backends() {
    let steps = vec![
        append("a", Some("1"), 0),
        append("b", Some("1"), 1),
        Step::Op(Op::Roll),
        append("a", None, 2),
        Step::Op(Op::AppendControl {
            commit: true,
            ts: 3,
            producer: crate::workload::TXN_PRODUCER,
        }),
        Step::Op(Op::Roll),
        append("c", Some("1"), 4),
        Step::Op(Op::Compact {
            now: 10,
            delete_retention_ms: 100,
            segment_bytes: None,
        }),
        Step::Reopen,
        Step::Op(Op::Retain {
            now: 10,
            retention_ms: None,
            retention_bytes: Some(100),
        }),
        Step::Op(Op::Read { from: 3 }),
        Step::CrashReopen { image: 0 },
    ];
    for backend in [Backend::Sim, Backend::Disk] {
        let stats = run_case(&steps, backend, "manifest").unwrap_or_else(|d| panic!("{d}"));
        assert_eq!(stats.steps, steps.len() as u64);
        assert_eq!(stats.crashes, 1);
        assert!(stats.reads > 0);
    }
}

#[test]
fn a_power_loss_may_take_the_unflushed_tail_and_the_run_goes_on() {
    // Image 2 = power loss "only durable": the unflushed append is gone.
    let steps = vec![
        append("a", Some("1"), 0),
        Step::Op(Op::Flush),
        append("b", Some("1"), 1),
        Step::CrashReopen { image: 2 },
        append("c", Some("1"), 2),
        Step::Op(Op::Read { from: 0 }),
    ];
    let stats = run_case(&steps, Backend::Sim, "manifest").unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(stats.crashes, 1);
    assert_eq!(stats.crashes_lost_tail, 1);
    // On the real disk a crash loses nothing.
    let stats = run_case(&steps, Backend::Disk, "manifest").unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(stats.crashes_lost_tail, 0);
}

#[test]
fn compare_catches_an_engine_that_differs_from_the_spec() {
    let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
    let (mut log, _) = Log::open_with(fs, "/data/log", case_config()).expect("open");
    let mut spec = SpecLog::new(case_config().segment_bytes);
    let input = |ts| SpecRecordInput {
        key: Some(b"k".to_vec()),
        value: Some(b"v".to_vec()),
        timestamp: ts,
    };
    log.append(&[seglog::NewRecord::new(
        Some(b"k".to_vec()),
        Some(b"v".to_vec()),
        5,
    )])
    .expect("append");
    spec.append(&[input(5)]).expect("spec append");
    assert!(compare(&log, &spec).is_ok());
    // Same offsets and keys, another timestamp: caught.
    let mut other = SpecLog::new(case_config().segment_bytes);
    other.append(&[input(6)]).expect("spec append");
    let diff = compare(&log, &other).expect_err("a timestamp differs");
    assert!(diff.contains("segment 0"), "{diff}");
    // One record more in the spec: caught.
    spec.append(&[input(7)]).expect("spec append");
    let diff = compare(&log, &spec).expect_err("a record is missing");
    assert!(diff.contains("next_offset"), "{diff}");
    let engine = engine_spec(&log, case_config().segment_bytes).expect("decode");
    assert!(structure_diff(&engine, &engine).is_none());
}

#[test]
fn divergence_becomes_a_replayable_scenario() {
    let steps = vec![
        append("a", Some("1"), 0),
        Step::Op(Op::Flush),
        append("b", Some("1"), 1),
        Step::CrashReopen { image: 2 },
    ];
    let divergence = Divergence {
        seed: 7,
        backend: Backend::Sim,
        steps: steps.clone(),
        step: 3,
        detail: "example".into(),
        crash_lost: None,
    };
    let scenario = divergence.to_scenario("manifest");
    assert_eq!(scenario.ops.len(), 3);
    let crash = scenario
        .crash
        .clone()
        .expect("a crash step gives a crash spec");
    assert_eq!(crash.semantics, crate::scenario::Semantics::PowerLoss);
    assert!(
        !crash.lost.is_empty(),
        "the only-durable image loses the tail"
    );
    let reparsed = crate::scenario::Scenario::parse(&scenario.to_toml()).expect("parses");
    let replayed = crate::scenario::replay(&reparsed, None);
    assert!(replayed.passed, "{:?}", replayed.diff);
    // The only-durable image: the state of the flush, before the last append.
    assert_eq!(replayed.actual, "allowed");
    // Without a crash: no crash spec, the spec's state expected.
    let no_crash = Divergence {
        step: 2,
        ..divergence
    }
    .to_scenario("manifest");
    assert!(no_crash.crash.is_none());
    assert!(crate::scenario::replay(&no_crash, None).passed);
}

#[test]
fn the_allowed_range_starts_at_the_last_durability_point() {
    use super::runner::Durable;
    use crate::workload::spec::apply;
    let mut log = SpecLog::new(case_config().segment_bytes);
    let mut durable = Durable::new(&log);
    let mut states = vec![log.clone()];
    let ops = [
        Op::Append {
            records: vec![RecordSpec {
                key: None,
                value: Some("1".into()),
                ts: 0,
            }],
            codec: None,
            log_append_time: None,
        },
        Op::Flush,
        Op::Append {
            records: vec![RecordSpec {
                key: None,
                value: Some("2".into()),
                ts: 0,
            }],
            codec: None,
            log_append_time: None,
        },
        Op::Append {
            records: vec![RecordSpec {
                key: None,
                value: Some("3".into()),
                ts: 0,
            }],
            codec: None,
            log_append_time: None,
        },
    ];
    for op in &ops {
        let before = log.clone();
        apply(&mut log, op);
        durable.after(op, &before, &log, None);
        states.push(log.clone());
    }
    // Allowed: the flushed state (flush does not change the spec, so states 1 and 2
    // are equal) and the two unflushed appends; never the empty log, which would
    // lose the flushed record.
    assert_eq!(durable.states, states[2..].to_vec());
    assert!(!durable.states.contains(&states[0]));
    // An append that auto-rolls makes everything before its batch durable.
    let big = "x".repeat(300);
    let op = Op::Append {
        records: vec![RecordSpec {
            key: None,
            value: Some(big),
            ts: 0,
        }],
        codec: None,
        log_append_time: None,
    };
    let before = log.clone();
    apply(&mut log, &op);
    assert!(log.raw_segments().len() > before.raw_segments().len());
    durable.after(&op, &before, &log, None);
    let mut rolled = before.clone();
    rolled.roll();
    assert_eq!(durable.states, vec![rolled, log.clone()]);
}

fn raw(
    records: &[(&str, i64)],
    codec: Option<seglog::format::Compression>,
) -> crate::workload::RawBatchSpec {
    crate::workload::RawBatchSpec {
        records: records
            .iter()
            .map(|(key, ts)| RecordSpec {
                key: Some((*key).into()),
                value: Some("v".into()),
                ts: *ts,
            })
            .collect(),
        codec,
        defect: None,
    }
}

/// A LogAppendTime case: produce requests (`Log::append_batches`), plain and
/// transactional appends are stamped with the case's clock on both sides, through a
/// clock move, a close, an operator's index drop, a crash and a compaction. The
/// stamps differ from every record's create time, so an engine that leaves one path
/// unstamped (the raw path's `maxTimestamp`, say) diverges from the spec here.
#[test]
fn log_append_time_case_stamps_raw_plain_and_transactional_appends() {
    let produce = |batches| Step::Op(Op::AppendRaw { batches });
    let steps = vec![
        Step::LogAppendTime,
        produce(vec![raw(&[("a", 5), ("b", 300)], None)]),
        Step::AdvanceClock(20),
        append("c", Some("1"), 7),
        Step::Op(Op::AppendTxn {
            records: vec![RecordSpec {
                key: Some("d".into()),
                value: Some("1".into()),
                ts: 8,
            }],
            producer: crate::workload::TXN_PRODUCER,
        }),
        Step::Op(Op::AppendControl {
            commit: true,
            ts: 9,
            producer: crate::workload::TXN_PRODUCER,
        }),
        Step::Op(Op::Close),
        produce(vec![
            raw(&[("h", 10)], Some(seglog::format::Compression::Gzip)),
            raw(&[("e", 11), ("f", 12)], None),
        ]),
        Step::Op(Op::Roll),
        Step::Op(Op::DropIndexes),
        Step::AdvanceClock(30),
        produce(vec![raw(&[("i", 13)], None)]),
        Step::CrashReopen { image: 0 },
        produce(vec![raw(&[("g", 14)], None)]),
        Step::Op(Op::Compact {
            now: 150,
            delete_retention_ms: 100,
            segment_bytes: None,
        }),
        Step::Op(Op::Read { from: 0 }),
    ];
    for backend in [Backend::Sim, Backend::Disk] {
        let stats = run_case(&steps, backend, "manifest").unwrap_or_else(|d| panic!("{d}"));
        // Every step but the configuration.
        assert_eq!(stats.steps, steps.len() as u64 - 1);
    }
    // The spec the engine was held to stamps every data batch with the clock: 100
    // for the first request, 120 up to the index drop, 150 after it; the marker
    // keeps its 9.
    let mut log = SpecLog::new(case_config().segment_bytes);
    let mut clock = CASE_CLOCK_START;
    for step in &steps {
        match step {
            Step::AdvanceClock(ms) => clock += ms,
            Step::Op(op) => {
                crate::workload::spec::apply_stamped(&mut log, op, Some(clock));
            }
            _ => {}
        }
    }
    let stamps: Vec<(i64, i64)> = log
        .read(0)
        .expect("read")
        .iter()
        .map(|r| (r.offset, r.timestamp))
        .collect();
    assert_eq!(
        stamps,
        [
            (0, 100),
            (1, 100),
            (2, 120),
            (3, 120),
            (4, 9),
            (5, 120),
            (6, 120),
            (7, 120),
            (8, 150),
            (9, 150)
        ]
    );
}

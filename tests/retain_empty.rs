//! The `kafka` policy's empty batches (Kafka's `RETAIN_EMPTY`, rule 5 of
//! `model/src/spec/kafka_txn.rs`), engine against spec: a conformance case that
//! keeps an active producer's aborted last batch, its superseded last batch and a
//! marker-only producer's markers as empty batches, then removes them once the
//! producers expire, checked step by step on SimFs (with crash images) and on disk.
//! The spec's own log is replayed alongside to prove the case meets each of these.

use seglog::compaction::CompactionPolicy;
use seglog::compaction::PRODUCER_ID_EXPIRATION_MS_DEFAULT;
use seglog_model::spec::SpecLog;
use seglog_suite::conformance::{case_config, run_case, Backend, Step};
use seglog_suite::workload::{spec, Op, RecordSpec};

fn rec(key: &str, value: Option<&str>, ts: i64) -> RecordSpec {
    RecordSpec {
        key: Some(key.to_string()),
        value: value.map(str::to_string),
        ts,
    }
}

fn txn(producer: i64, records: Vec<RecordSpec>) -> Step {
    Step::Op(Op::AppendTxn { records, producer })
}

fn marker(producer: i64, commit: bool, ts: i64) -> Step {
    Step::Op(Op::AppendControl {
        commit,
        ts,
        producer,
    })
}

fn append(records: Vec<RecordSpec>) -> Step {
    Step::Op(Op::Append {
        records,
        codec: None,
        log_append_time: None,
    })
}

fn clean(now: i64, producer_id_expiration_ms: i64) -> Step {
    Step::Op(Op::Clean {
        now,
        delete_retention_ms: 5,
        segment_bytes: None,
        dedupe_buffer_bytes: None,
        min_compaction_lag_ms: 0,
        policy: CompactionPolicy::Kafka,
        producer_id_expiration_ms,
    })
}

fn steps() -> Vec<Step> {
    vec![
        txn(2, vec![rec("a", Some("x"), 10)]), // 0: producer 2, aborted
        marker(2, false, 11),                  // 1
        txn(1, vec![rec("b", Some("1"), 12)]), // 2: producer 1, committed
        marker(1, true, 13),                   // 3
        append(vec![rec("b", Some("2"), 14)]), // 4: supersedes b@2
        marker(3, true, 15),                   // 5: producer 3, markers alone
        Step::Op(Op::Roll),
        append(vec![rec("c", Some("1"), 16)]), // 6
        Step::Op(Op::Roll),
        clean(20, PRODUCER_ID_EXPIRATION_MS_DEFAULT),
        append(vec![rec("d", Some("1"), 21)]),
        Step::Op(Op::Roll),
        clean(30, PRODUCER_ID_EXPIRATION_MS_DEFAULT),
        Step::CrashReopen { image: 7 },
        append(vec![rec("e", Some("1"), 31)]),
        Step::Op(Op::Roll),
        // Every producer's last batch is older than 20 ms: all expire.
        clean(40, 20),
        append(vec![rec("f", Some("1"), 41)]),
        Step::Op(Op::Roll),
        clean(50, 20),
    ]
}

/// The base offsets of the spec's empty batches after each step.
fn empties_by_step() -> Vec<Vec<i64>> {
    let mut log = SpecLog::new(case_config().segment_bytes);
    steps()
        .iter()
        .map(|step| {
            if let Step::Op(op) = step {
                spec::apply(&mut log, op);
            }
            log.batches()
                .filter(|b| b.records.is_empty())
                .map(|b| b.base_offset)
                .collect()
        })
        .collect()
}

#[test]
fn the_case_keeps_and_then_removes_empty_batches() {
    let empties = empties_by_step();
    let first_clean = 9;
    // Producer 2's aborted batch, producer 1's superseded batch, producer 3's
    // marker (stamped by this pass, so not yet emptied).
    assert_eq!(empties[first_clean], vec![0, 2], "{empties:?}");
    assert!(
        empties.iter().any(|e| e.contains(&5)),
        "the marker-only producer's marker is emptied at its horizon: {empties:?}"
    );
    assert_eq!(
        empties.last().unwrap(),
        &Vec::<i64>::new(),
        "expired producers keep nothing: {empties:?}"
    );
}

#[test]
fn engine_matches_spec_on_empty_batches() {
    for backend in [Backend::Sim, Backend::Disk] {
        if let Err(divergence) = run_case(&steps(), backend, "manifest") {
            panic!("{divergence}");
        }
    }
}

/// A `seed` pass and a full compaction after the kafka pass that left empty
/// batches (a log may change policy): both sides remove them alike.
#[test]
fn seed_passes_take_the_empty_batches_alike() {
    let mut steps: Vec<Step> = steps().into_iter().take(10).collect();
    steps.push(append(vec![rec("g", Some("1"), 22)]));
    steps.push(Step::Op(Op::Roll));
    steps.push(Step::Op(Op::Clean {
        now: 25,
        delete_retention_ms: 5,
        segment_bytes: None,
        dedupe_buffer_bytes: None,
        min_compaction_lag_ms: 0,
        policy: CompactionPolicy::Seed,
        producer_id_expiration_ms: PRODUCER_ID_EXPIRATION_MS_DEFAULT,
    }));
    steps.push(clean(26, PRODUCER_ID_EXPIRATION_MS_DEFAULT));
    steps.push(Step::Op(Op::Compact {
        now: 27,
        delete_retention_ms: 5,
        segment_bytes: None,
    }));
    for backend in [Backend::Sim, Backend::Disk] {
        if let Err(divergence) = run_case(&steps, backend, "manifest") {
            panic!("{divergence}");
        }
    }
}

use super::*;
use crate::interop::crash::acks::{Segment, Step};

fn rec(offset: i64, key: &str, value: Option<&str>) -> Record {
    Record {
        offset,
        key: Some(key.into()),
        value: value.map(Into::into),
    }
}

fn step(what: &str, start: i64, end: i64) -> Step {
    Step {
        what: what.into(),
        log_start_offset: start,
        log_end_offset: end,
        ..Step::default()
    }
}

/// open; append 0..3; flush; append 3..5; flush; roll; clean to 5; retain (log
/// start 3); close.
fn acks() -> Acks {
    let latest: BTreeMap<String, Option<String>> =
        [("k0", Some("b")), ("k1", None), ("k2", Some("a"))]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.map(String::from)))
            .collect();
    let mut steps = vec![
        step("open", 0, 0),
        Step {
            records: vec![
                rec(0, "k0", Some("a")),
                rec(1, "k1", Some("a")),
                rec(2, "k2", Some("a")),
            ],
            ..step("append", 0, 3)
        },
        Step {
            flushed_to: Some(3),
            checkpointed: true,
            ..step("flush", 0, 3)
        },
        Step {
            records: vec![rec(3, "k0", Some("b")), rec(4, "k1", None)],
            ..step("append", 0, 5)
        },
        Step {
            flushed_to: Some(5),
            checkpointed: true,
            ..step("flush", 0, 5)
        },
        step("roll", 0, 5),
        Step {
            cleaned_to_offset: Some(5),
            latest_before: Some(latest.clone()),
            latest_after: Some(latest),
            ..step("clean", 0, 5)
        },
        Step {
            checkpointed: true,
            ..step("retain", 3, 5)
        },
        Step {
            flushed_to: Some(5),
            checkpointed: true,
            ..step("close", 3, 5)
        },
    ];
    for (i, s) in steps.iter_mut().enumerate() {
        s.step = i;
    }
    Acks {
        variant: None,
        steps,
    }
}

fn served(records: &[Record]) -> Served {
    let end = records.last().map_or(0, |r| r.offset + 1);
    Served::Log(ServedLog {
        log_start_offset: records.first().map_or(0, |r| r.offset),
        log_end_offset: end,
        recovery_point: 0,
        segments: vec![Segment {
            base_offset: 0,
            next_offset: end,
        }],
        records: records.to_vec(),
        read_ends_at: None,
    })
}

fn all() -> Vec<Record> {
    acks().appended().values().map(|r| (*r).clone()).collect()
}

fn kinds(findings: &[Finding]) -> Vec<FindingKind> {
    findings.iter().map(|f| f.kind).collect()
}

/// Markers completed once the step named `what` (the `nth` of them) is acknowledged.
fn after(what: &str, nth: usize) -> usize {
    acks()
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.what == what)
        .nth(nth)
        .map(|(i, _)| i + 1)
        .unwrap()
}

#[test]
fn everything_served_is_fine_at_every_crash_point() {
    let acks = acks();
    for completed in 0..=acks.steps.len() {
        let start = Promise::at(&acks, completed).checkpointed_start;
        let records: Vec<Record> = all().into_iter().filter(|r| r.offset >= start).collect();
        assert_eq!(
            judge(&acks, completed, &served(&records)),
            vec![],
            "{completed}"
        );
    }
}

#[test]
fn a_durable_record_not_served_is_a_loss() {
    let acks = acks();
    let mut records = all();
    records.remove(1);
    let findings = judge(&acks, after("flush", 0), &served(&records));
    assert_eq!(kinds(&findings), vec![FindingKind::Loss]);
    assert_eq!(findings[0].offsets, vec![1]);
    // Before the flush's acknowledgment the record may be lost.
    assert_eq!(
        judge(&acks, after("flush", 0) - 1, &served(&records)),
        vec![]
    );
}

#[test]
fn a_missing_partition_after_a_flush_loses_its_records() {
    let acks = acks();
    let findings = judge(&acks, after("flush", 0), &Served::Absent);
    assert_eq!(kinds(&findings), vec![FindingKind::Loss]);
    assert_eq!(findings[0].offsets, vec![0, 1, 2]);
    assert_eq!(judge(&acks, after("open", 0), &Served::Absent), vec![]);
}

#[test]
fn an_offset_never_appended_is_a_phantom() {
    let mut records = all();
    records.push(rec(5, "k9", Some("z")));
    let findings = judge(&acks(), after("flush", 1), &served(&records));
    assert_eq!(kinds(&findings), vec![FindingKind::Phantom]);
    assert_eq!(findings[0].offsets, vec![5]);
}

#[test]
fn an_offset_with_another_record_has_moved() {
    let mut records = all();
    records[1] = rec(1, "k2", Some("a"));
    let findings = judge(&acks(), after("flush", 0), &served(&records));
    assert_eq!(kinds(&findings), vec![FindingKind::Moved]);
    assert_eq!(findings[0].offsets, vec![1]);
}

#[test]
fn an_offset_served_twice_is_a_duplicate() {
    let mut records = all();
    records.insert(2, rec(1, "k1", Some("a")));
    let findings = judge(&acks(), after("flush", 0), &served(&records));
    assert_eq!(kinds(&findings), vec![FindingKind::Duplicate]);
}

#[test]
fn a_key_served_with_an_old_value_after_the_cleaner_is_a_mixed_state() {
    let acks = acks();
    // k0's latest (offset 3) is gone, its superseded value (offset 0) served.
    let records: Vec<Record> = all().into_iter().filter(|r| r.offset != 3).collect();
    let findings = judge(&acks, after("clean", 0), &served(&records));
    assert_eq!(
        kinds(&findings),
        vec![FindingKind::Loss, FindingKind::MixedClean]
    );
    assert_eq!(findings[1].offsets, vec![0]);
}

#[test]
fn what_the_cleaner_and_retention_may_drop_is_no_loss() {
    let acks = acks();
    // The cleaner drops k0's and k1's superseded records, once under way.
    let cleaned: Vec<Record> = all()
        .into_iter()
        .filter(|r| r.offset != 0 && r.offset != 1)
        .collect();
    assert_eq!(judge(&acks, after("roll", 0), &served(&cleaned)), vec![]);
    assert_eq!(
        kinds(&judge(&acks, after("roll", 0) - 1, &served(&cleaned))),
        vec![FindingKind::Loss]
    );
    // Retention drops everything below 3 while under way.
    let retained: Vec<Record> = all().into_iter().filter(|r| r.offset >= 3).collect();
    assert_eq!(judge(&acks, after("clean", 0), &served(&retained)), vec![]);
}

#[test]
fn a_log_start_below_the_checkpointed_one_moved_back() {
    let acks = acks();
    let findings = judge(&acks, after("retain", 0), &served(&all()));
    assert_eq!(kinds(&findings), vec![FindingKind::LogStartBack]);
    let retained: Vec<Record> = all().into_iter().filter(|r| r.offset >= 3).collect();
    assert_eq!(judge(&acks, after("retain", 0), &served(&retained)), vec![]);
}

#[test]
fn overlapping_segments_are_a_finding() {
    let Served::Log(mut log) = served(&all()) else {
        unreachable!()
    };
    log.segments = vec![
        Segment {
            base_offset: 0,
            next_offset: 4,
        },
        Segment {
            base_offset: 3,
            next_offset: 5,
        },
    ];
    let findings = judge(&acks(), after("flush", 1), &Served::Log(log));
    assert_eq!(kinds(&findings), vec![FindingKind::Overlap]);
}

#[test]
fn a_throwing_load_is_a_finding() {
    let served = Served::Error {
        class: "org.apache.kafka.common.errors.CorruptRecordException".into(),
        message: "bad".into(),
    };
    let findings = judge(&acks(), 0, &served);
    assert_eq!(kinds(&findings), vec![FindingKind::LoadThrows]);
    assert!(findings[0].detail.contains("CorruptRecordException"));
}

#[test]
fn crash_loads_answers_read_into_served() {
    let absent = serde_json::json!({"dir": "/x", "absent": true});
    assert_eq!(Served::from_value(&absent).unwrap(), Served::Absent);
    let error = serde_json::json!({"dir": "/x", "error": {"class": "E", "message": "m"}});
    assert!(matches!(
        Served::from_value(&error).unwrap(),
        Served::Error { .. }
    ));
    let log = serde_json::json!({
        "dir": "/x", "recovery-point-offset-checkpoint": 3,
        "log_start_offset": 0, "log_end_offset": 1, "recovery_point": 1,
        "segments": [{"base_offset": 0, "next_offset": 1}],
        "records": [{"offset": 0, "key": "k0", "value": null}]
    });
    let Served::Log(log) = Served::from_value(&log).unwrap() else {
        panic!("a log")
    };
    assert_eq!(
        log.records,
        vec![Record {
            offset: 0,
            key: Some("k0".into()),
            value: None
        }]
    );
    assert!(Served::from_value(&serde_json::json!({"records": 3})).is_err());
}

#[test]
fn what_a_crash_point_owes_grows_with_flushes_and_shrinks_with_maintenance() {
    let acks = acks();
    let offsets =
        |completed| -> Vec<i64> { owed(&acks, completed).iter().map(|r| r.offset).collect() };
    assert_eq!(offsets(after("flush", 0) - 1), Vec::<i64>::new());
    assert_eq!(offsets(after("flush", 0)), vec![0, 1, 2]);
    assert_eq!(offsets(after("flush", 1)), vec![0, 1, 2, 3, 4]);
    // Under way, the cleaner may drop k0's and k1's superseded records.
    assert_eq!(offsets(after("roll", 0)), vec![2, 3, 4]);
    // Under way, retention may move the log start to 3.
    assert_eq!(offsets(after("clean", 0)), vec![3, 4]);
}

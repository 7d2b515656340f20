//! Each invariant accepts the spec's own transitions and rejects a hand-broken one
//! (positive and negative space).

use super::*;
use crate::spec::{Batch, SpecRecordInput, SpecSegment};

const BIG: u64 = 1 << 20;
const GRACE: Grace = Grace {
    now: 500,
    delete_retention_ms: 1000,
};

fn put(log: &mut SpecLog, key: Option<&str>, value: Option<&str>, ts: i64) {
    log.append(&[SpecRecordInput {
        key: key.map(|k| k.as_bytes().to_vec()),
        value: value.map(|v| v.as_bytes().to_vec()),
        timestamp: ts,
    }])
    .unwrap();
}

/// a=1, b=x, a=2, keyless, a tombstone of b, a control marker; two closed segments.
fn sample() -> SpecLog {
    let mut log = SpecLog::new(BIG);
    put(&mut log, Some("a"), Some("1"), 0);
    put(&mut log, Some("b"), Some("x"), 10);
    log.roll();
    put(&mut log, Some("a"), Some("2"), 20);
    put(&mut log, None, Some("e"), 30);
    put(&mut log, Some("b"), None, 100);
    log.append_control(true, 110);
    log.roll();
    put(&mut log, Some("c"), Some("3"), 120);
    log
}

/// Rebuilds `log` with `edit` applied to its raw segments.
fn edited(log: &SpecLog, edit: impl FnOnce(&mut Vec<SpecSegment>)) -> SpecLog {
    let mut segments = log.raw_segments().to_vec();
    edit(&mut segments);
    let start = segments[0].base_offset;
    SpecLog::from_parts(log.segment_bytes(), start, segments).unwrap()
}

fn compacted(log: &SpecLog, grace: Grace) -> SpecLog {
    let mut out = log.clone();
    out.compact(grace.now, grace.delete_retention_ms, None)
        .unwrap();
    out
}

#[test]
fn spec_transitions_pass_every_check() {
    let before = sample();
    let after = compacted(&before, GRACE);
    assert_eq!(
        check_step(&before, &after, StepKind::Compact(GRACE)),
        vec![]
    );
    let mut retained = after.clone();
    retained.retain(1000, Some(100), None).unwrap();
    assert_eq!(retained.log_start_offset(), 6);
    assert_eq!(check_step(&after, &retained, StepKind::Retain), vec![]);
    let mut appended = retained.clone();
    put(&mut appended, Some("a"), Some("9"), 200);
    assert_eq!(check_step(&retained, &appended, StepKind::Append), vec![]);
}

#[test]
fn prefix_only_deletion_rejects_a_middle_hole() {
    let before = sample();
    let hole = edited(&before, |s| {
        s.remove(1);
    });
    let err = prefix_only_deletion(&before, &hole).unwrap_err();
    assert_eq!(err.invariant, "prefix_only_deletion");
    let no_active = edited(&before, |s| {
        s.pop();
    });
    assert!(prefix_only_deletion(&before, &no_active).is_err());
}

#[test]
fn latest_per_key_rejects_a_superseded_value() {
    let before = sample();
    let after = compacted(&before, GRACE);
    assert!(latest_per_key(&before, &after).is_ok());
    // Not compacting at all leaves a=1 beside a=2 in the closed region.
    assert_eq!(
        latest_per_key(&before, &before).unwrap_err().invariant,
        "latest_per_key"
    );
}

#[test]
fn tombstone_grace_rejects_an_early_drop_and_a_resurrection() {
    let before = sample();
    let after = compacted(&before, GRACE);
    assert!(tombstone_grace(&before, &after, GRACE).is_ok());
    // Dropping the young tombstone of b (offset 4) early.
    // Compaction merged both closed segments into one: the closed region is s[0].
    assert_eq!(after.closed_segments().len(), 1);
    let early = edited(&after, |s| {
        for batch in &mut s[0].batches {
            batch.records.retain(|r| r.offset != 4);
        }
        s[0].batches.retain(|b| !b.records.is_empty());
    });
    assert!(tombstone_grace(&before, &early, GRACE).is_err());
    // Expired tombstone: dropping it is fine, but b=x must not come back.
    let late = Grace {
        now: 5000,
        delete_retention_ms: 1000,
    };
    let expired = compacted(&before, late);
    assert!(tombstone_grace(&before, &expired, late).is_ok());
    let resurrected = edited(&expired, |s| {
        s[0].batches.insert(
            0,
            Batch {
                base_offset: 1,
                last_offset_delta: 0,
                control: false,
                base_timestamp: 10,
                max_timestamp: 10,
                records: vec![Rec::new(1, Some(b"b"), Some(b"x"), 10)],
                codec: 0,
                log_append_time: false,
                delete_horizon: None,
                producer_id: -1,
                producer_epoch: -1,
                transactional: false,
            },
        );
        s[0].batches.sort();
    });
    assert!(tombstone_grace(&before, &resurrected, late).is_err());
    assert!(same_latest_view(&before, &resurrected, late).is_err());
}

#[test]
fn offset_stability_rejects_renumbering_and_going_back() {
    let before = sample();
    let renumbered = edited(&before, |s| {
        s[0].batches[1].records[0].value = Some(b"y".to_vec());
    });
    assert_eq!(
        offset_stability(&before, &renumbered)
            .unwrap_err()
            .invariant,
        "offset_stability"
    );
    let mut shorter = SpecLog::new(BIG);
    put(&mut shorter, Some("a"), Some("1"), 0);
    assert!(offset_stability(&before, &shorter).is_err());
}

#[test]
fn keyless_and_control_records_must_survive() {
    let before = sample();
    let no_keyless = edited(&before, |s| {
        s[1].batches.retain(|b| b.base_offset != 3);
    });
    assert!(keyless_retained(&before, &no_keyless).is_err());
    assert!(control_retained(&before, &no_keyless).is_ok());
    let no_control = edited(&before, |s| {
        s[1].batches.retain(|b| !b.control);
    });
    assert!(control_retained(&before, &no_control).is_err());
    assert!(keyless_retained(&before, &no_control).is_ok());
}

#[test]
fn kafka_removes_a_control_record_only_past_its_horizon() {
    let before = sample();
    let now = Grace { now: 500, ..GRACE };
    let no_control = edited(&before, |s| {
        s[1].batches.retain(|b| !b.control);
    });
    // Not stamped: it must stay.
    assert!(kafka::control_past_horizon(&before, &no_control, now).is_err());
    assert!(kafka::control_past_horizon(&before, &before, now).is_ok());
    let stamped = |h: i64| {
        edited(&before, |s| {
            for b in s[1].batches.iter_mut().filter(|b| b.control) {
                b.delete_horizon = Some(h);
                b.base_timestamp = h;
            }
        })
    };
    // Stamped at or before now: it may go, or stay; after now: it stays.
    assert!(kafka::control_past_horizon(&stamped(500), &no_control, now).is_ok());
    assert!(kafka::control_past_horizon(&stamped(500), &stamped(500), now).is_ok());
    assert!(kafka::control_past_horizon(&stamped(501), &no_control, now).is_err());
    // A kept control record is unchanged (stamping keeps its record).
    assert!(kafka::control_past_horizon(&before, &stamped(700), now).is_ok());
    let moved = edited(&before, |s| {
        for b in s[1].batches.iter_mut().filter(|b| b.control) {
            b.records[0].timestamp += 1;
            b.max_timestamp += 1;
        }
    });
    assert!(kafka::control_past_horizon(&before, &moved, now).is_err());
}

#[test]
fn same_latest_view_rejects_a_changed_value() {
    let before = sample();
    let after = compacted(&before, GRACE);
    assert!(same_latest_view(&before, &after, GRACE).is_ok());
    let changed = edited(&after, |s| {
        for batch in &mut s[0].batches {
            for rec in &mut batch.records {
                if rec.key.as_deref() == Some(b"a") {
                    rec.value = Some(b"7".to_vec());
                }
            }
        }
    });
    assert!(same_latest_view(&before, &changed, GRACE).is_err());
    assert_eq!(NAMES.len(), 7);
}

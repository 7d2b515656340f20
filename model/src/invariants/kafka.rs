//! The invariants of a `kafka`-policy cleaning pass (docs/design.md section 4), in
//! place of the seed policy's `keyless_retained`, `same_latest_view` and
//! `tombstone_grace`, which Kafka's rules break on purpose; `control_retained` is
//! [`control_past_horizon`] here (Kafka removes markers past their delete horizon).

use std::collections::BTreeMap;

use super::{fail, latest_records, Grace, Violation};
use crate::spec::{Rec, SpecLog};

/// A keyless record goes only below the new clean point (a cleaned segment).
pub fn keyless_above_clean_point(before: &SpecLog, after: &SpecLog) -> Result<(), Violation> {
    let kept: Vec<&Rec> = after
        .records()
        .filter(|(r, c)| !c && r.key.is_none())
        .map(|(r, _)| r)
        .collect();
    for (rec, control) in before.records() {
        if !control
            && rec.key.is_none()
            && rec.offset >= after.clean_point()
            && !kept.contains(&rec)
        {
            return fail(
                "keyless_retained",
                format!(
                    "keyless record at {} lost above the clean point",
                    rec.offset
                ),
            );
        }
    }
    Ok(())
}

/// Every key reads as before (its latest record unchanged), except a key whose
/// latest record is a tombstone in a batch whose delete horizon is at or before
/// `now`: it may vanish. No key appears.
pub fn same_latest_view_kafka(
    before: &SpecLog,
    after: &SpecLog,
    grace: Grace,
) -> Result<(), Violation> {
    let mut horizon_passed: BTreeMap<i64, bool> = BTreeMap::new();
    for batch in before.batches().filter(|b| !b.control) {
        for rec in &batch.records {
            horizon_passed.insert(
                rec.offset,
                rec.value.is_none() && batch.delete_horizon.is_some_and(|h| h <= grace.now),
            );
        }
    }
    let (old, new) = (latest_records(before), latest_records(after));
    if let Some(key) = new.keys().find(|k| !old.contains_key(*k)) {
        return fail("same_latest_view", format!("key {key:?} appeared"));
    }
    for (key, rec) in &old {
        match new.get(key) {
            Some(now_latest) if now_latest == rec => {}
            None if horizon_passed.get(&rec.offset) == Some(&true) => {}
            other => {
                return fail(
                    "same_latest_view",
                    format!("key {key:?} read {rec:?}, now {other:?}"),
                )
            }
        }
    }
    Ok(())
}

/// A pass that moved the clean point cleaned every segment below it: every keyed
/// tombstone there sits in a batch stamped with a delete horizon (its
/// `base_timestamp`), which is `now + delete_retention_ms` unless the batch had one.
pub fn tombstone_horizon(before: &SpecLog, after: &SpecLog, grace: Grace) -> Result<(), Violation> {
    if after.clean_point() <= before.clean_point() {
        return Ok(());
    }
    let old: BTreeMap<i64, Option<i64>> = before
        .batches()
        .map(|b| (b.base_offset, b.delete_horizon))
        .collect();
    let fresh = crate::spec::delete_horizon(grace.now, grace.delete_retention_ms);
    for batch in after
        .batches()
        .filter(|b| !b.control && b.last_offset() < after.clean_point())
    {
        if !batch
            .records
            .iter()
            .any(|r| r.value.is_none() && r.key.is_some())
        {
            continue;
        }
        let want = old
            .get(&batch.base_offset)
            .copied()
            .flatten()
            .unwrap_or(fresh);
        if batch.delete_horizon != Some(want) || batch.base_timestamp != want {
            return fail(
                "tombstone_grace",
                format!(
                    "batch {} keeps a tombstone below the clean point with horizon {:?} and base timestamp {} (want {want})",
                    batch.base_offset, batch.delete_horizon, batch.base_timestamp
                ),
            );
        }
    }
    Ok(())
}

/// `control_retained` under the `kafka` policy: a control record still in the
/// log's range stays unchanged unless its batch had a delete horizon at or before
/// `now` (stamped by an earlier pass that found its transaction without data); then
/// it may go.
pub fn control_past_horizon(
    before: &SpecLog,
    after: &SpecLog,
    grace: Grace,
) -> Result<(), Violation> {
    let kept: BTreeMap<i64, (&Rec, bool)> =
        after.records().map(|(r, c)| (r.offset, (r, c))).collect();
    for batch in before.batches().filter(|b| b.control) {
        let expired = batch.delete_horizon.is_some_and(|h| grace.now >= h);
        for rec in &batch.records {
            if rec.offset < after.log_start_offset() {
                continue;
            }
            match kept.get(&rec.offset) {
                Some(found) if *found == (rec, true) => {}
                None if expired => {}
                _ => {
                    return fail(
                        "control_retained",
                        format!("control record at {} lost or changed", rec.offset),
                    )
                }
            }
        }
    }
    Ok(())
}

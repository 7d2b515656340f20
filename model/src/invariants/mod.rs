//! The named invariants every checker holds the log to (docs/design.md section 4).
//!
//! Each takes the log before and after one operation and returns `Err(Violation)`
//! naming itself. They are declarative: they say *what* must hold, never recompute the
//! spec's procedure, so they can judge the spec (in the stateright log model), and the
//! engine (its state converted with [`SpecLog::from_parts`]).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::spec::{Rec, SpecLog};

/// A broken invariant: its name and what was seen.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Violation {
    pub invariant: &'static str,
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.invariant, self.detail)
    }
}

impl std::error::Error for Violation {}

/// The clock and tombstone grace of a compaction, needed to tell an expired tombstone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Grace {
    pub now: i64,
    pub delete_retention_ms: i64,
}

impl Grace {
    fn expired(&self, rec: &Rec) -> bool {
        rec.value.is_none()
            && crate::spec::past_grace(rec.timestamp, self.now, self.delete_retention_ms)
    }
}

/// The names of all invariants, in the order checkers report them.
pub const NAMES: [&str; 7] = [
    "prefix_only_deletion",
    "latest_per_key",
    "tombstone_grace",
    "offset_stability",
    "keyless_retained",
    "control_retained",
    "same_latest_view",
];

fn fail(invariant: &'static str, detail: String) -> Result<(), Violation> {
    Err(Violation { invariant, detail })
}

/// Latest record of every key in the whole log (data batches only).
fn latest_records(log: &SpecLog) -> BTreeMap<Vec<u8>, Rec> {
    let mut latest = BTreeMap::new();
    for (rec, control) in log.records() {
        if let (false, Some(key)) = (control, &rec.key) {
            latest.insert(key.clone(), rec.clone());
        }
    }
    latest
}

/// Offset of the first record of the active segment region (records below it are closed).
fn active_base(log: &SpecLog) -> i64 {
    log.active().base_offset
}

/// Retention removed exactly a prefix of closed segments (the surviving segments are a
/// suffix of the old list, unchanged), the active segment survives, and
/// `log_start_offset` never decreases.
pub fn prefix_only_deletion(before: &SpecLog, after: &SpecLog) -> Result<(), Violation> {
    const NAME: &str = "prefix_only_deletion";
    let (old, new) = (before.raw_segments(), after.raw_segments());
    if new.len() > old.len() {
        return fail(
            NAME,
            format!("{} segments grew to {}", old.len(), new.len()),
        );
    }
    let removed = old.len() - new.len();
    if old[removed..] != *new {
        return fail(
            NAME,
            format!(
                "survivors are not the last {} segments unchanged",
                new.len()
            ),
        );
    }
    if before.active() != after.active() {
        return fail(NAME, "the active segment did not survive".into());
    }
    if after.log_start_offset() < before.log_start_offset() {
        return fail(
            NAME,
            format!(
                "log_start_offset went back from {} to {}",
                before.log_start_offset(),
                after.log_start_offset()
            ),
        );
    }
    Ok(())
}

/// After compaction, each key has at most one record in the closed region, and it is
/// the record with the highest offset for that key in the whole log.
pub fn latest_per_key(before: &SpecLog, after: &SpecLog) -> Result<(), Violation> {
    const NAME: &str = "latest_per_key";
    let latest = latest_records(before);
    let mut seen = BTreeMap::new();
    for (rec, control) in after.records() {
        if control || rec.offset >= active_base(after) {
            continue;
        }
        let Some(key) = &rec.key else { continue };
        if let Some(other) = seen.insert(key.clone(), rec.offset) {
            return fail(
                NAME,
                format!("key {key:?} kept twice, at {other} and {}", rec.offset),
            );
        }
        if latest.get(key) != Some(rec) {
            return fail(
                NAME,
                format!("key {key:?} kept at {} which is not its latest", rec.offset),
            );
        }
    }
    Ok(())
}

/// A latest tombstone younger than `delete_retention_ms` survives, and no older value
/// of a deleted key survives in the compacted region (no resurrection).
pub fn tombstone_grace(before: &SpecLog, after: &SpecLog, grace: Grace) -> Result<(), Violation> {
    tombstone_grace_below(before, after, grace, None)
}

/// [`tombstone_grace`] for a cleaning pass that stopped at `after`'s clean point
/// (`Some(horizon)`): only a tombstone below the horizon has been applied, so only
/// its key must be free of older values.
fn tombstone_grace_below(
    before: &SpecLog,
    after: &SpecLog,
    grace: Grace,
    horizon: Option<i64>,
) -> Result<(), Violation> {
    const NAME: &str = "tombstone_grace";
    let after_records: BTreeMap<i64, &Rec> = after.records().map(|(r, _)| (r.offset, r)).collect();
    for (key, latest) in latest_records(before) {
        if latest.value.is_some() {
            continue;
        }
        if !grace.expired(&latest) && after_records.get(&latest.offset) != Some(&&latest) {
            return fail(
                NAME,
                format!("young tombstone of {key:?} at {} dropped", latest.offset),
            );
        }
        // The active segment is copied unchanged and may hold older values: only the
        // compacted (closed) region must be free of them.
        if horizon.is_some_and(|h| latest.offset >= h) {
            continue;
        }
        let resurrected = after.records().find(|(r, control)| {
            !control
                && r.key.as_ref() == Some(&key)
                && r.offset < latest.offset
                && r.offset < active_base(after)
        });
        if let Some((rec, _)) = resurrected {
            return fail(
                NAME,
                format!("deleted key {key:?} resurrected by offset {}", rec.offset),
            );
        }
    }
    Ok(())
}

/// Surviving records keep their offsets and content, offsets strictly increase through
/// the log, `next_offset` never decreases, and no offset below the old `next_offset`
/// holds a record it did not hold before (no reuse).
pub fn offset_stability(before: &SpecLog, after: &SpecLog) -> Result<(), Violation> {
    const NAME: &str = "offset_stability";
    if after.next_offset() < before.next_offset() {
        return fail(
            NAME,
            format!(
                "next_offset went back from {} to {}",
                before.next_offset(),
                after.next_offset()
            ),
        );
    }
    let old: BTreeMap<i64, &Rec> = before.records().map(|(r, _)| (r.offset, r)).collect();
    let mut prev: Option<i64> = None;
    for (rec, _) in after.records() {
        if prev.is_some_and(|p| rec.offset <= p) {
            return fail(NAME, format!("offset {} does not increase", rec.offset));
        }
        prev = Some(rec.offset);
        if rec.offset < before.next_offset() && old.get(&rec.offset) != Some(&rec) {
            return fail(NAME, format!("offset {} reused or renumbered", rec.offset));
        }
        if rec.offset >= after.next_offset() || rec.offset < after.log_start_offset() {
            return fail(
                NAME,
                format!("offset {} outside the log's range", rec.offset),
            );
        }
    }
    Ok(())
}

/// Every keyless data record still in the log's range survives.
pub fn keyless_retained(before: &SpecLog, after: &SpecLog) -> Result<(), Violation> {
    retained(before, after, "keyless_retained", |r, control| {
        !control && r.key.is_none()
    })
}

/// Every control record still in the log's range survives.
pub fn control_retained(before: &SpecLog, after: &SpecLog) -> Result<(), Violation> {
    retained(before, after, "control_retained", |_, control| control)
}

fn retained(
    before: &SpecLog,
    after: &SpecLog,
    name: &'static str,
    selected: impl Fn(&Rec, bool) -> bool,
) -> Result<(), Violation> {
    let kept: BTreeMap<i64, (&Rec, bool)> =
        after.records().map(|(r, c)| (r.offset, (r, c))).collect();
    for (rec, control) in before.records() {
        if rec.offset < after.log_start_offset() || !selected(rec, control) {
            continue;
        }
        if kept.get(&rec.offset) != Some(&(rec, control)) {
            return fail(name, format!("record at {} lost", rec.offset));
        }
    }
    Ok(())
}

/// The latest view: per key its latest record (tombstones included, expired tombstones
/// and their keys removed), plus the set of keyless records.
fn latest_view(log: &SpecLog, grace: Grace, from: i64) -> (BTreeMap<Vec<u8>, Rec>, Vec<Rec>) {
    let mut latest = latest_records(log);
    latest.retain(|_, r| r.offset >= from && !grace.expired(r));
    let keyless = log
        .records()
        .filter(|(r, c)| !c && r.key.is_none() && r.offset >= from)
        .map(|(r, _)| r.clone())
        .collect();
    (latest, keyless)
}

/// Compaction never changes the latest value (or deletedness, modulo expired
/// tombstones) of any key, nor the set of keyless records.
pub fn same_latest_view(before: &SpecLog, after: &SpecLog, grace: Grace) -> Result<(), Violation> {
    const NAME: &str = "same_latest_view";
    let from = after.log_start_offset();
    let (old_latest, old_keyless) = latest_view(before, grace, from);
    let (new_latest, new_keyless) = latest_view(after, grace, from);
    for key in old_latest.keys().chain(new_latest.keys()) {
        if old_latest.get(key) != new_latest.get(key) {
            return fail(
                NAME,
                format!(
                    "key {key:?}: latest {:?} became {:?}",
                    old_latest.get(key).map(|r| r.offset),
                    new_latest.get(key).map(|r| r.offset)
                ),
            );
        }
    }
    if old_keyless != new_keyless {
        return fail(NAME, "the keyless records changed".into());
    }
    Ok(())
}

/// The clean point lies in `[log_start_offset, active base]` and the clean section
/// below it holds at most one record per key (docs/design.md section 1).
pub fn clean_point_sound(after: &SpecLog) -> Result<(), Violation> {
    const NAME: &str = "clean_section_deduplicated";
    let clean_point = after.clean_point();
    if clean_point < after.log_start_offset() || clean_point > active_base(after) {
        return fail(
            NAME,
            format!(
                "clean point {clean_point} outside [{}, {}]",
                after.log_start_offset(),
                active_base(after)
            ),
        );
    }
    match after.clean_section_duplicate() {
        Some(key) => fail(
            NAME,
            format!("key {key:?} twice below clean point {clean_point}"),
        ),
        None => Ok(()),
    }
}

/// A cleaning pass that may stop short (bounded map, lag): the clean point never
/// moves back, and the invariants of a compaction hold for the section it cleaned.
fn clean_pass(before: &SpecLog, after: &SpecLog, grace: Grace) -> Vec<Result<(), Violation>> {
    let mut checks = vec![
        tombstone_grace_below(before, after, grace, Some(after.clean_point())),
        same_latest_view(before, after, grace),
    ];
    if after.clean_point() < before.clean_point() {
        checks.push(fail(
            "clean_section_deduplicated",
            "a cleaning moved the clean point back".into(),
        ));
    }
    checks
}

/// The operation a before/after pair spans, to pick the invariants that apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum StepKind {
    Append,
    Roll,
    Retain,
    Compact(Grace),
    /// One cleaning pass with a bounded map or a compaction lag ([`SpecLog::clean`]).
    Clean(Grace),
    /// One cleaning pass under the `kafka` policy ([`kafka`]'s invariants replace
    /// `keyless_retained`, `same_latest_view` and `tombstone_grace`).
    KafkaClean(Grace),
}

/// Every invariant that applies to `step`, all violations found.
pub fn check_step(before: &SpecLog, after: &SpecLog, step: StepKind) -> Vec<Violation> {
    let compaction = matches!(
        step,
        StepKind::Compact(_) | StepKind::Clean(_) | StepKind::KafkaClean(_)
    );
    if compaction && before.holds_transactional_data() {
        // The transaction rules' invariants ([`txn`]) replace the plain ones.
        let mut checks = vec![
            offset_stability(before, after),
            clean_point_sound(after),
            txn::same_committed_view(before, after),
            txn::open_retained(before, after),
            txn::markers_follow_data(before, after),
        ];
        if let StepKind::KafkaClean(grace) = step {
            checks.push(kafka::control_past_horizon(before, after, grace));
        }
        if after.clean_point() < before.clean_point() {
            checks.push(fail(
                "clean_section_deduplicated",
                "a cleaning moved the clean point back".into(),
            ));
        }
        if after.active() != before.active() {
            checks.push(fail(
                "offset_stability",
                "a compaction changed the active segment".into(),
            ));
        }
        return checks.into_iter().filter_map(Result::err).collect();
    }
    let mut checks: Vec<Result<(), Violation>> = vec![
        offset_stability(before, after),
        match step {
            StepKind::KafkaClean(grace) => kafka::control_past_horizon(before, after, grace),
            _ => control_retained(before, after),
        },
        clean_point_sound(after),
    ];
    if !matches!(step, StepKind::KafkaClean(_)) {
        checks.push(keyless_retained(before, after));
    }
    if after.log_start_offset() < before.log_start_offset() {
        checks.push(fail(
            "prefix_only_deletion",
            "log_start_offset decreased".into(),
        ));
    }
    match step {
        StepKind::Append | StepKind::Roll => {
            if after.log_start_offset() != before.log_start_offset() {
                checks.push(fail(
                    "prefix_only_deletion",
                    "append or roll moved log_start_offset".into(),
                ));
            }
        }
        StepKind::Retain => checks.push(prefix_only_deletion(before, after)),
        StepKind::Compact(grace) => {
            checks.push(latest_per_key(before, after));
            checks.push(tombstone_grace(before, after, grace));
            checks.push(same_latest_view(before, after, grace));
            if after.active() != before.active() {
                checks.push(fail(
                    "offset_stability",
                    "compaction changed the active segment".into(),
                ));
            }
        }
        StepKind::KafkaClean(grace) => {
            checks.push(kafka::keyless_above_clean_point(before, after));
            checks.push(kafka::same_latest_view_kafka(before, after, grace));
            checks.push(kafka::tombstone_horizon(before, after, grace));
            if after.clean_point() < before.clean_point() {
                checks.push(fail(
                    "clean_section_deduplicated",
                    "a cleaning moved the clean point back".into(),
                ));
            }
            if after.active() != before.active() {
                checks.push(fail(
                    "offset_stability",
                    "a cleaning changed the active segment".into(),
                ));
            }
        }
        StepKind::Clean(grace) => {
            checks.extend(clean_pass(before, after, grace));
            if after.active() != before.active() {
                checks.push(fail(
                    "offset_stability",
                    "a cleaning changed the active segment".into(),
                ));
            }
        }
    }
    checks.into_iter().filter_map(Result::err).collect()
}

pub mod kafka;
#[cfg(test)]
mod tests;
pub mod txn;

//! The oracle of Kafka's crash images: a pure function of the workload's
//! acknowledgments, how many of them the crash point follows, and what Kafka
//! served from the image ([`judge`]).
//!
//! A crash point follows `completed` markers: the steps `0..completed` were
//! acknowledged, and step `completed` (if any) was under way. From them:
//! * the durable offset: the highest `flushed_to` of an acknowledged step (a flush
//!   or the close); every appended record below it must be served with its offset,
//!   key and value, unless removed legitimately: below the highest log start
//!   offset of a step acknowledged or under way (retention), or, once the cleaner
//!   round is acknowledged or under way, below its `cleaned_to_offset` with a
//!   later record of the same key there (what the cleaner may drop);
//! * no offset is served that the workload never appended, none twice, and each
//!   one holds the key and value appended at it;
//! * once the cleaner round started, each key's latest value served below its
//!   `cleaned_to_offset` is the latest before the round or the latest after it;
//! * the served log start offset is not below the highest log start offset an
//!   acknowledged step checkpointed;
//! * the loaded segments do not overlap;
//! * the load does not throw (an image without the partition directory serves
//!   nothing: the durable records are then lost).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::acks::{Acks, Record, Served, ServedLog};

/// What is wrong with one image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// A durable record is not served (a silent loss).
    Loss,
    /// An offset the workload never appended is served.
    Phantom,
    /// An offset is served with another key or value than appended there.
    Moved,
    /// An offset is served twice, or out of order.
    Duplicate,
    /// A key's latest value below the cleaned offset is neither the old log's nor
    /// the cleaned log's.
    MixedClean,
    /// The log start offset is below one a checkpoint acknowledged.
    LogStartBack,
    /// Two loaded segments hold the same offsets.
    Overlap,
    /// Loading the image threw.
    LoadThrows,
}

impl FindingKind {
    /// The kind's name, as the reports print it.
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::Loss => "loss",
            FindingKind::Phantom => "phantom",
            FindingKind::Moved => "moved",
            FindingKind::Duplicate => "duplicate",
            FindingKind::MixedClean => "mixed-clean",
            FindingKind::LogStartBack => "log-start-back",
            FindingKind::Overlap => "overlap",
            FindingKind::LoadThrows => "load-throws",
        }
    }
}

/// One finding: its kind, the offsets it is about, and what was seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub offsets: Vec<i64>,
    pub detail: String,
}

/// What the acknowledgments promise at a crash point after `completed` markers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Promise {
    /// Appended records below it must be served.
    pub durable_to: i64,
    /// Records below it may be gone (retention acknowledged or under way).
    pub may_start_at: i64,
    /// The served log start offset must not be below it.
    pub checkpointed_start: i64,
    /// The cleaner round's end, once it is acknowledged or under way.
    pub cleaned_to: Option<i64>,
}

impl Promise {
    /// The promise of `acks` at a crash point after `completed` markers.
    pub fn at(acks: &Acks, completed: usize) -> Promise {
        let done = &acks.steps[..completed.min(acks.steps.len())];
        let started = &acks.steps[..(completed + 1).min(acks.steps.len())];
        Promise {
            durable_to: done.iter().filter_map(|s| s.flushed_to).max().unwrap_or(0),
            may_start_at: started
                .iter()
                .map(|s| s.log_start_offset)
                .max()
                .unwrap_or(0),
            checkpointed_start: done
                .iter()
                .filter(|s| s.checkpointed)
                .map(|s| s.log_start_offset)
                .max()
                .unwrap_or(0),
            cleaned_to: started.iter().find_map(|s| s.cleaned_to_offset),
        }
    }
}

/// The findings of one image: what Kafka `served` from a crash image after
/// `completed` markers of the workload `acks` (empty: the image is fine).
pub fn judge(acks: &Acks, completed: usize, served: &Served) -> Vec<Finding> {
    let empty = ServedLog::default();
    let log = match served {
        Served::Error { class, message } => {
            return vec![Finding {
                kind: FindingKind::LoadThrows,
                offsets: Vec::new(),
                detail: format!("{class}: {message}"),
            }]
        }
        Served::Absent => &empty,
        Served::Log(log) => log,
    };
    let promise = Promise::at(acks, completed);
    let appended = acks.appended();
    let mut findings = Vec::new();
    findings.extend(overlaps(log));
    findings.extend(order(log));
    findings.extend(phantoms_and_moves(&appended, log));
    findings.extend(losses(&appended, &promise, log));
    findings.extend(mixed_clean(acks, &promise, log));
    if matches!(served, Served::Log(_)) && log.log_start_offset < promise.checkpointed_start {
        findings.push(Finding {
            kind: FindingKind::LogStartBack,
            offsets: vec![log.log_start_offset],
            detail: format!(
                "log start {} is below the checkpointed {}",
                log.log_start_offset, promise.checkpointed_start
            ),
        });
    }
    findings
}

fn overlaps(log: &ServedLog) -> Option<Finding> {
    let mut segments = log.segments.clone();
    segments.sort_by_key(|s| s.base_offset);
    let bad: Vec<i64> = segments
        .windows(2)
        .filter(|w| w[0].next_offset > w[1].base_offset || w[0].base_offset == w[1].base_offset)
        .map(|w| w[1].base_offset)
        .collect();
    (!bad.is_empty()).then(|| Finding {
        kind: FindingKind::Overlap,
        detail: format!("segments overlap at bases {bad:?}: {:?}", log.segments),
        offsets: bad,
    })
}

fn order(log: &ServedLog) -> Option<Finding> {
    let bad: Vec<i64> = log
        .records
        .windows(2)
        .filter(|w| w[1].offset <= w[0].offset)
        .map(|w| w[1].offset)
        .collect();
    (!bad.is_empty()).then(|| Finding {
        kind: FindingKind::Duplicate,
        detail: format!("offsets served again or out of order: {bad:?}"),
        offsets: bad,
    })
}

fn phantoms_and_moves(appended: &BTreeMap<i64, &Record>, log: &ServedLog) -> Vec<Finding> {
    let mut phantom = Vec::new();
    let mut moved = Vec::new();
    for r in &log.records {
        match appended.get(&r.offset) {
            None => phantom.push(r.offset),
            Some(a) if a.key != r.key || a.value != r.value => moved.push(r.offset),
            Some(_) => {}
        }
    }
    let end = appended.keys().next_back().map_or(0, |o| o + 1);
    let mut out = Vec::new();
    if !phantom.is_empty() || log.log_end_offset > end {
        out.push(Finding {
            kind: FindingKind::Phantom,
            detail: format!(
                "never appended: offsets {phantom:?}, log end {} (appended up to {end})",
                log.log_end_offset
            ),
            offsets: phantom,
        });
    }
    if !moved.is_empty() {
        out.push(Finding {
            kind: FindingKind::Moved,
            detail: format!("served with another key or value: offsets {moved:?}"),
            offsets: moved,
        });
    }
    out
}

/// The appended records a crash point after `completed` markers owes: below the
/// durable offset, and neither below a log start retention may have moved to nor
/// dropped by the cleaner for a later record of their key.
pub fn owed(acks: &Acks, completed: usize) -> Vec<Record> {
    owed_of(&acks.appended(), &Promise::at(acks, completed))
}

fn owed_of(appended: &BTreeMap<i64, &Record>, promise: &Promise) -> Vec<Record> {
    let cleanable = |r: &Record| {
        promise.cleaned_to.is_some_and(|to| {
            r.offset < to
                && appended
                    .range(r.offset + 1..to)
                    .any(|(_, later)| later.key == r.key)
        })
    };
    appended
        .range(..promise.durable_to)
        .filter(|(o, r)| **o >= promise.may_start_at && !cleanable(r))
        .map(|(_, r)| (*r).clone())
        .collect()
}

fn losses(
    appended: &BTreeMap<i64, &Record>,
    promise: &Promise,
    log: &ServedLog,
) -> Option<Finding> {
    let served: BTreeSet<i64> = log.records.iter().map(|r| r.offset).collect();
    let lost: Vec<i64> = owed_of(appended, promise)
        .iter()
        .map(|r| r.offset)
        .filter(|o| !served.contains(o))
        .collect();
    (!lost.is_empty()).then(|| Finding {
        kind: FindingKind::Loss,
        detail: format!(
            "durable below {} but not served: offsets {lost:?} (log start {}, end {})",
            promise.durable_to, log.log_start_offset, log.log_end_offset
        ),
        offsets: lost,
    })
}

fn mixed_clean(acks: &Acks, promise: &Promise, log: &ServedLog) -> Option<Finding> {
    let cleaned_to = promise.cleaned_to?;
    let clean = acks.steps.iter().find(|s| s.cleaned_to_offset.is_some())?;
    let before = clean.latest_before.clone().unwrap_or_default();
    let after = clean.latest_after.clone().unwrap_or_default();
    let mut latest: BTreeMap<&str, &Record> = BTreeMap::new();
    for r in log.records.iter().filter(|r| r.offset < cleaned_to) {
        if let Some(key) = &r.key {
            latest.insert(key, r);
        }
    }
    let mut bad = Vec::new();
    let mut detail = Vec::new();
    for (key, r) in latest {
        let allowed = [before.get(key), after.get(key)];
        if !allowed.iter().flatten().any(|v| **v == r.value) {
            bad.push(r.offset);
            detail.push(format!(
                "{key}={:?} at {} (before {:?}, after {:?})",
                r.value,
                r.offset,
                before.get(key),
                after.get(key)
            ));
        }
    }
    (!bad.is_empty()).then(|| Finding {
        kind: FindingKind::MixedClean,
        detail: format!("latest values of neither log: {}", detail.join(", ")),
        offsets: bad,
    })
}

#[cfg(test)]
mod tests;

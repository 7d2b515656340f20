//! The timeline of a case ([`case_timeline`]): the recording's calls up to the
//! case's crash point, each with its fate at the power loss (durable, kept or lost
//! by the image: `scenario::timeline`), grouped by the workload step that made
//! them, and what Kafka owed against what it served ([`records`]).
//!
//! The calls are the recording's as `FileSystem` calls (`alice::image::replay`
//! through a `TraceFs`): memory-mapped index writes and their `mmap`/`msync` are
//! not among them (an image's indexes are zero-filled, `explore`).

use std::collections::BTreeMap;
use std::sync::Arc;

use seglog::fs::sim::LostItem;
use seglog::fs::TraceFs;

use super::acks::{Acks, Record, Served};
use super::explore::Case;
use super::oracle;
use super::Recording;
use crate::alice::image;
use crate::alice::strace::SysCall;
use crate::scenario::timeline::{timeline, TimelineRow};

/// The timeline of `case`: rows numbered among the `FileSystem` calls, each
/// row's workload op the step (marker number) whose calls it is among.
pub fn case_timeline(recording: &Recording, case: &Case) -> Result<Vec<TimelineRow>, String> {
    let sim = recording.replayed(0)?;
    let traced = TraceFs::new(Arc::new(sim));
    let mut op_starts = vec![0];
    for (i, call) in recording.calls.iter().take(case.crash_point).enumerate() {
        image::replay(&traced, &recording.root, call)
            .map_err(|e| format!("system call {i} ({call}) does not replay: {e}"))?;
        if matches!(call, SysCall::Mark(_)) {
            op_starts.push(traced.len());
        }
    }
    let lost = case
        .lost
        .iter()
        .map(|l| l.parse::<LostItem>().map_err(|e| format!("{l}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(timeline(&traced.ops(), &op_starts, &lost))
}

/// One offset of a case: the record the crash point owes there (acknowledged
/// durable and not legitimately removed), and the record Kafka served there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetRow {
    pub offset: i64,
    pub owed: Option<Record>,
    pub served: Option<Record>,
}

/// Every offset owed or served at a crash point after `completed` markers, in
/// order.
pub fn records(acks: &Acks, completed: usize, served: &Served) -> Vec<OffsetRow> {
    let served: &[Record] = match served {
        Served::Log(log) => &log.records,
        Served::Absent | Served::Error { .. } => &[],
    };
    let mut rows: BTreeMap<i64, OffsetRow> = BTreeMap::new();
    let row = |offset| OffsetRow {
        offset,
        owed: None,
        served: None,
    };
    for record in oracle::owed(acks, completed) {
        let offset = record.offset;
        rows.entry(offset).or_insert_with_key(|o| row(*o)).owed = Some(record);
    }
    for record in served {
        rows.entry(record.offset)
            .or_insert_with_key(|o| row(*o))
            .served = Some(record.clone());
    }
    rows.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::crash::acks::{ServedLog, Step};

    fn rec(offset: i64, key: &str, value: &str) -> Record {
        Record {
            offset,
            key: Some(key.into()),
            value: Some(value.into()),
        }
    }

    #[test]
    fn every_offset_owed_or_served_is_a_row() {
        let acks = Acks {
            variant: None,
            steps: vec![
                Step {
                    what: "append".into(),
                    records: vec![rec(0, "a", "1"), rec(1, "b", "1")],
                    ..Step::default()
                },
                Step {
                    what: "flush".into(),
                    flushed_to: Some(2),
                    ..Step::default()
                },
                Step {
                    what: "append".into(),
                    step: 2,
                    records: vec![rec(2, "a", "2")],
                    ..Step::default()
                },
            ],
        };
        let served = Served::Log(ServedLog {
            records: vec![rec(1, "b", "1"), rec(2, "a", "2")],
            ..ServedLog::default()
        });
        let rows = records(&acks, 2, &served);
        let row = |offset, owed: Option<Record>, served: Option<Record>| OffsetRow {
            offset,
            owed,
            served,
        };
        assert_eq!(
            rows,
            vec![
                row(0, Some(rec(0, "a", "1")), None),
                row(1, Some(rec(1, "b", "1")), Some(rec(1, "b", "1"))),
                row(2, None, Some(rec(2, "a", "2"))),
            ]
        );
        assert_eq!(records(&acks, 1, &Served::Absent), vec![]);
        assert_eq!(
            acks.steps[0].describe(),
            "append offsets 0..=1: a=1 b=1, log end 0"
        );
    }
}

//! Model (g): two processes on one log directory. Each process opens the log
//! writable (recovery truncates the file to its valid prefix and the process caches
//! the next offset), appends records (each acknowledged with the offset it got),
//! closes, or is killed (`kill -9`: its memory is gone, the file keeps what it
//! wrote, the kernel releases its locks). The file is shared; a record is valid
//! only if its offset follows the previous one, so the scan of the next open stops
//! at the first record out of order and truncates the rest.
//!
//! - `writer-lock` (ours): a writable open takes an exclusive lock on the log's lock
//!   file first and holds it until close; a second open while it is held is refused
//!   and changes nothing.
//! - `no-writer-lock`: opens take no lock. Two processes cache the same next offset
//!   and both acknowledge it: a reader finds only the first record there, so the
//!   second process's acknowledged record is lost (and the next open truncates it).
//!
//! Property `acknowledged_records_readable`: every acknowledged record is what a
//! reader of the valid prefix finds at its offset.

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

/// Processes.
pub const PROCESSES: usize = 2;
/// Appends each process may make in all (bounds the state space).
const APPENDS_PER_PROCESS: u8 = 2;
/// Writable opens each process may make in all.
const OPENS_PER_PROCESS: u8 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WritersVariant {
    WriterLock,
    NoWriterLock,
}

/// A record in the shared file: its offset and who wrote it (the value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Record {
    pub offset: u8,
    pub writer: u8,
    /// The writer's append number (distinguishes its records).
    pub seq: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Process {
    /// Not running a writable open.
    Closed,
    /// Holds the log open, with the next offset it will hand out.
    Open { next: u8 },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WritersState {
    pub file: Vec<Record>,
    pub processes: [Process; PROCESSES],
    /// The process holding the lock file's lock.
    pub lock: Option<u8>,
    pub appends: [u8; PROCESSES],
    pub opens: [u8; PROCESSES],
    /// Every acknowledged record.
    pub acked: Vec<Record>,
    /// Opens refused because another process held the lock.
    pub refused: u8,
}

impl WritersState {
    /// The valid prefix: records whose offsets follow one another from 0.
    pub fn valid(&self) -> &[Record] {
        let n = self
            .file
            .iter()
            .enumerate()
            .take_while(|(i, r)| usize::from(r.offset) == *i)
            .count();
        &self.file[..n]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WritersAction {
    /// A writable open (lock, recovery, cache the next offset).
    Open(u8),
    Append(u8),
    Close(u8),
    /// `kill -9`: the process's memory and lock are gone.
    Kill(u8),
}

#[derive(Clone, Debug)]
pub struct WritersModel {
    pub variant: WritersVariant,
}

impl WritersModel {
    pub fn new(variant: WritersVariant) -> WritersModel {
        WritersModel { variant }
    }
}

impl Model for WritersModel {
    type State = WritersState;
    type Action = WritersAction;

    fn init_states(&self) -> Vec<WritersState> {
        vec![WritersState {
            file: Vec::new(),
            processes: [Process::Closed; PROCESSES],
            lock: None,
            appends: [0; PROCESSES],
            opens: [0; PROCESSES],
            acked: Vec::new(),
            refused: 0,
        }]
    }

    fn actions(&self, state: &WritersState, actions: &mut Vec<WritersAction>) {
        for p in 0..PROCESSES {
            let id = p as u8;
            match state.processes[p] {
                Process::Closed => {
                    if state.opens[p] < OPENS_PER_PROCESS {
                        actions.push(WritersAction::Open(id));
                    }
                }
                Process::Open { .. } => {
                    if state.appends[p] < APPENDS_PER_PROCESS {
                        actions.push(WritersAction::Append(id));
                    }
                    actions.push(WritersAction::Close(id));
                    actions.push(WritersAction::Kill(id));
                }
            }
        }
    }

    fn next_state(&self, state: &WritersState, action: WritersAction) -> Option<WritersState> {
        let mut next = state.clone();
        match action {
            WritersAction::Open(id) => {
                let p = usize::from(id);
                next.opens[p] += 1;
                if self.variant == WritersVariant::WriterLock {
                    if next.lock.is_some() {
                        // Refused: `Locked`, nothing changed.
                        next.refused += 1;
                        return Some(next);
                    }
                    next.lock = Some(id);
                }
                let valid = next.valid().len();
                next.file.truncate(valid);
                next.processes[p] = Process::Open { next: valid as u8 };
            }
            WritersAction::Append(id) => {
                let p = usize::from(id);
                let Process::Open { next: offset } = next.processes[p] else {
                    return None;
                };
                let record = Record {
                    offset,
                    writer: id,
                    seq: next.appends[p],
                };
                next.appends[p] += 1;
                next.file.push(record);
                next.acked.push(record);
                next.processes[p] = Process::Open { next: offset + 1 };
            }
            WritersAction::Close(id) | WritersAction::Kill(id) => {
                next.processes[usize::from(id)] = Process::Closed;
                if next.lock == Some(id) {
                    next.lock = None;
                }
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::<Self>::always("acknowledged_records_readable", |_, s| {
                let valid = s.valid();
                s.acked
                    .iter()
                    .all(|r| valid.get(usize::from(r.offset)) == Some(r))
            }),
            Property::<Self>::always("one_writer", |_, s| {
                s.processes
                    .iter()
                    .filter(|p| matches!(p, Process::Open { .. }))
                    .count()
                    <= 1
            }),
            Property::<Self>::sometimes("second_writer_refused", |_, s| s.refused > 0),
            Property::<Self>::sometimes("both_wrote", |_, s| {
                s.acked.iter().any(|r| r.writer == 0) && s.acked.iter().any(|r| r.writer == 1)
            }),
        ]
    }
}

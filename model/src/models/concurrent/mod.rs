//! Model (f): concurrent cleaning. An appender, cleaner threads, retention
//! and a reader on one partition, whose steps interleave, with a crash anywhere
//! (process crash or power loss: unsynced directory operations and unsynced file data
//! lost independently, as in models (b) and (d)) followed by recovery.
//!
//! - Appender: `Append` (acknowledged when the step completes; rolls first when the
//!   active segment holds [`ConcurrentModel::segment_records`]), `Flush`, `Roll` (fsyncs
//!   the closed segment, creates the next one and fsyncs the directory).
//! - Cleaner: the shared design (docs/design.md, "Model (f): concurrent cleaning"):
//!   snapshot under the lock; build without it; swap steps a to e each one atomic step
//!   holding the append lock; f (remove the trash) after releasing it; abort before the
//!   commit point.
//! - Retention: checkpoint first (model (d)), one prefix segment, never while the
//!   partition is being cleaned.
//! - Reader: takes the segment list (and each file's length) in one step, reads the
//!   bytes in a later one; the files it holds stay readable after a swap.
//!
//! Every completed operation is also applied to the sequential spec's view
//! ([`state::SpecView`]), at its linearization point (a cleaning at its install, step
//! d); the properties compare the engine-side state with it.

pub mod history;
pub mod recovery;
pub mod state;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use crate::models::dir::{subsets, DirOp};
use history::{record, LogOp, LogRet, Thread};
use state::{
    Cleaner, CleanerPhase, ConcurrentState, DirObj, Expected, FileId, LogDir, Mem, PName, PObj,
    Phase, Read, Rec, RetentionPhase, Snapshot,
};

/// The design and its refuted variants (names shared with the engine's test variants).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConcurrentVariant {
    /// The shared design: snapshot, build unlocked, link the tail at swap under the lock.
    Ours,
    /// The tail is copied at snapshot time instead of linked at swap: appends during
    /// the build are lost.
    StaleTailCopy,
    /// Retention may delete from a partition being cleaned (and a cleaning may start
    /// while retention deletes).
    NoCleaningLock,
    /// Appends and rolls are not held during the swap steps a to e.
    UnlockedSwap,
    /// The build maps the active segment as it finds it, not up to the snapshot's
    /// `map_end`: records appended during the build enter this pass's map.
    UnboundedMap,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ConcurrentModel {
    pub variant: ConcurrentVariant,
    pub keys: u8,
    pub appends_max: i64,
    pub segment_records: usize,
    pub cleaner_threads: usize,
    pub cleanings_max: u8,
    pub retentions_max: u8,
    pub reads_max: u8,
    pub crashes_max: u8,
    /// Test knob: cleaner threads skip the per-partition guard (teeth for
    /// `one_cleaner_per_partition`).
    pub unguarded_cleaners: bool,
    /// Offer `Roll` on a non-empty active segment besides the roll an append makes
    /// when the active segment is full.
    pub explicit_rolls: bool,
    /// Record every run's history for stateright's `LinearizabilityTester` (property
    /// `history_linearizable`).
    pub history: bool,
}

impl ConcurrentModel {
    /// The checked space of `variant`. `unbounded-map` needs a record of a key in a
    /// closed segment appended during a build, which the default space (rolls only
    /// when a segment is full, three appends) cannot reach: it gets explicit rolls
    /// and two appends, a space where ours holds too (tests).
    pub fn new(variant: ConcurrentVariant) -> ConcurrentModel {
        let unbounded = variant == ConcurrentVariant::UnboundedMap;
        ConcurrentModel {
            variant,
            keys: 2,
            appends_max: if unbounded { 2 } else { 3 },
            segment_records: 2,
            cleaner_threads: 1,
            cleanings_max: 1,
            retentions_max: 1,
            reads_max: 1,
            crashes_max: 1,
            unguarded_cleaners: false,
            explicit_rolls: unbounded,
            history: false,
        }
    }

    fn locked(&self, state: &ConcurrentState) -> bool {
        self.variant != ConcurrentVariant::UnlockedSwap && state.locked()
    }

    /// Retention and cleaning exclude each other on a partition (ours).
    fn exclusive(&self) -> bool {
        self.variant != ConcurrentVariant::NoCleaningLock
    }
}

/// What a power loss dropped (a process crash drops nothing: the empty list).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Lost {
    /// The n-th unsynced operation of the parent directory.
    ParentOp(usize),
    /// The n-th unsynced entry operation of a log directory.
    DirOp { dir: DirObj, n: usize },
    /// A file kept only its first `kept` records (at least its fsynced ones).
    Tail { file: FileId, kept: usize },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConcurrentAction {
    Append {
        key: u8,
    },
    Flush,
    Roll,
    /// Retention step 1: the new log start is durable (and in memory).
    RetentionCheckpoint,
    /// Retention step 2: unlink the segment below it.
    RetentionUnlink,
    /// Retention step 3: fsync the log directory.
    RetentionSyncDir,
    Snapshot {
        thread: u8,
    },
    Build {
        thread: u8,
    },
    /// One swap step; `to` is the phase it completes.
    Swap {
        thread: u8,
        to: CleanerPhase,
    },
    /// f: remove `D.compact-trash`, without the lock.
    RemoveTrash {
        thread: u8,
    },
    /// Abort before the commit point: drop the temp dir.
    Abort {
        thread: u8,
    },
    ReadStart,
    ReadEnd,
    Crash {
        lost: Vec<Lost>,
    },
    Recover,
}

const SWAP_STEPS: [(CleanerPhase, CleanerPhase); 7] = [
    (CleanerPhase::Built, CleanerPhase::Linked),
    (CleanerPhase::Linked, CleanerPhase::PointWritten),
    (CleanerPhase::PointWritten, CleanerPhase::Committed),
    (CleanerPhase::Committed, CleanerPhase::LiveRenamed),
    (CleanerPhase::LiveRenamed, CleanerPhase::Installed),
    (CleanerPhase::Installed, CleanerPhase::Trashed),
    (CleanerPhase::Trashed, CleanerPhase::Released),
];

/// Every way a crash can hit `state`: subsets of the unsynced directory operations,
/// times every prefix each file may keep of its unsynced records.
fn crashes(state: &ConcurrentState) -> Vec<Vec<Lost>> {
    let mut ops: Vec<Lost> = (0..state.parent.pending.len())
        .map(Lost::ParentOp)
        .collect();
    for (dir, log_dir) in &state.dirs {
        ops.extend((0..log_dir.segments.pending.len()).map(|n| Lost::DirOp { dir: *dir, n }));
    }
    let mut all: Vec<Vec<Lost>> = subsets(ops.len())
        .into_iter()
        .map(|s| s.into_iter().map(|i| ops[i].clone()).collect())
        .collect();
    for (i, file) in state.files.iter().enumerate() {
        let file_id = FileId::try_from(i).expect("few files");
        let keeps = file.durable..file.records.len();
        if keeps.is_empty() {
            continue;
        }
        let mut next = Vec::new();
        for lost in &all {
            next.push(lost.clone());
            for kept in keeps.clone() {
                let mut more = lost.clone();
                more.push(Lost::Tail {
                    file: file_id,
                    kept,
                });
                next.push(more);
            }
        }
        all = next;
    }
    all
}

fn apply_crash(state: &mut ConcurrentState, lost: &[Lost]) {
    let parent_lost: Vec<usize> = lost
        .iter()
        .filter_map(|l| match l {
            Lost::ParentOp(n) => Some(*n),
            _ => None,
        })
        .collect();
    state.parent.power_loss(&parent_lost);
    for (dir, log_dir) in state.dirs.iter_mut() {
        let dir_lost: Vec<usize> = lost
            .iter()
            .filter_map(|l| match l {
                Lost::DirOp { dir: d, n } if d == dir => Some(*n),
                _ => None,
            })
            .collect();
        log_dir.segments.power_loss(&dir_lost);
    }
    for l in lost {
        if let Lost::Tail { file, kept } = l {
            state.files[usize::from(*file)].records.truncate(*kept);
        }
    }
    for file in &mut state.files {
        file.durable = file.records.len();
    }
}

impl ConcurrentModel {
    fn roll(&self, s: &mut ConcurrentState) {
        let active = usize::from(s.active_file());
        s.files[active].durable = s.files[active].records.len();
        s.flushed_end = s.spec.next_offset;
        let base = s.spec.next_offset;
        let file = s.new_file(Vec::new(), true);
        let dir = s.dirs.get_mut(&s.mem.dir).expect("the log's directory");
        dir.segments.run(DirOp::Create(base, file));
        dir.segments.sync();
        s.mem.segments.push((base, file));
    }

    fn snapshot(&self, s: &ConcurrentState) -> Snapshot {
        let (active_base, active) = *s.mem.segments.last().expect("an active segment");
        let closed = s.mem.segments[..s.mem.segments.len() - 1].to_vec();
        Snapshot {
            generation: s.cleanings,
            log_start: s.mem.log_start,
            closed,
            active_base,
            map_end: s.spec.next_offset,
            tail_copy: (self.variant == ConcurrentVariant::StaleTailCopy)
                .then(|| s.files[usize::from(active)].records.clone()),
        }
    }

    /// Builds the temp dir: the snapshot's closed segments compacted (map over every
    /// offset below `map_end`), its files, entries and parent entry synced.
    fn build(&self, s: &mut ConcurrentState, thread: usize) {
        let snap = s.cleaners[thread].snapshot.clone().expect("a snapshot");
        // What the map covers: the snapshot's `map_end`, or for `unbounded-map` the
        // active segment as the build finds it.
        let map = match self.variant {
            ConcurrentVariant::UnboundedMap => Snapshot {
                map_end: i64::MAX,
                ..snap.clone()
            },
            _ => snap.clone(),
        };
        let mut among: Vec<Rec> = snap
            .closed
            .iter()
            .flat_map(|(_, f)| s.files[usize::from(*f)].records.iter().copied())
            .collect();
        let (_, active) = *s
            .mem
            .segments
            .iter()
            .find(|(b, _)| *b == snap.active_base)
            .unwrap_or(&(snap.active_base, 0));
        among.extend(
            s.files[usize::from(active)]
                .records
                .iter()
                .filter(|(o, _)| *o < map.map_end),
        );
        among.retain(|(o, _)| *o >= snap.log_start);
        let mut entries = Vec::new();
        for (base, file) in &snap.closed {
            let kept: Vec<Rec> = s.files[usize::from(*file)]
                .records
                .iter()
                .filter(|r| r.0 >= snap.log_start && !state::superseded(r, &among, &map))
                .copied()
                .collect();
            if !kept.is_empty() {
                entries.push((*base, s.new_file(kept, true)));
            }
        }
        if let Some(copy) = &snap.tail_copy {
            entries.push((snap.active_base, s.new_file(copy.clone(), true)));
        }
        let new = DirObj::New(snap.generation);
        s.dirs.insert(
            new,
            LogDir {
                segments: crate::models::dir::Dir::synced(entries.into_iter().collect()),
                log_start: snap.log_start,
            },
        );
        s.parent.run(DirOp::Create(PName::Temp, PObj::Dir(new)));
        s.parent.sync();
    }

    fn swap(&self, s: &mut ConcurrentState, thread: usize, to: CleanerPhase) {
        let snap = s.cleaners[thread].snapshot.clone().expect("a snapshot");
        let new = DirObj::New(snap.generation);
        match to {
            CleanerPhase::Linked => {
                if snap.tail_copy.is_none() {
                    let tail: Vec<(i64, FileId)> = s
                        .mem
                        .segments
                        .iter()
                        .filter(|(b, _)| *b >= snap.active_base)
                        .copied()
                        .collect();
                    let dir = s.dirs.get_mut(&new).expect("the temp dir");
                    for (base, file) in tail {
                        dir.segments.run(DirOp::Create(base, file));
                    }
                    dir.segments.sync();
                }
            }
            // b: the temp dir's recovery point and clean point: nothing this model
            // tracks (models (b) and (e) check them).
            CleanerPhase::PointWritten => {}
            CleanerPhase::Committed => {
                s.parent
                    .run(DirOp::Create(PName::Manifest, PObj::Manifest(new)));
                s.parent.sync();
            }
            CleanerPhase::LiveRenamed => s.parent.run(DirOp::Rename {
                from: PName::Live,
                to: PName::Backup,
            }),
            CleanerPhase::Installed => {
                s.parent.run(DirOp::Rename {
                    from: PName::Temp,
                    to: PName::Live,
                });
                let dir = &s.dirs[&new];
                s.mem = Mem {
                    dir: new,
                    segments: dir.segments.entries.iter().map(|(b, f)| (*b, *f)).collect(),
                    log_start: dir.log_start,
                };
                s.spec = s.spec.cleaned(&snap);
                if let Some(read) = &mut s.read {
                    read.across_swap = true;
                }
            }
            CleanerPhase::Trashed => {
                s.parent.run(DirOp::Rename {
                    from: PName::Backup,
                    to: PName::Trash,
                });
                s.parent.sync();
            }
            CleanerPhase::Released => {
                s.parent.run(DirOp::Remove(PName::Manifest));
                s.parent.sync();
            }
            _ => unreachable!("not a swap step: {to:?}"),
        }
        s.cleaners[thread].phase = to;
    }
}

impl Model for ConcurrentModel {
    type State = ConcurrentState;
    type Action = ConcurrentAction;

    fn init_states(&self) -> Vec<ConcurrentState> {
        let mut state = ConcurrentState::initial(self.cleaner_threads);
        if self.history {
            state.history = Some(state::History::new(state.spec.clone()));
        }
        vec![state]
    }

    fn actions(&self, s: &ConcurrentState, actions: &mut Vec<ConcurrentAction>) {
        match s.phase {
            Phase::Running => {}
            Phase::Crashed(_) => {
                actions.push(ConcurrentAction::Recover);
                return;
            }
            Phase::Recovered(_) | Phase::FailedClosed(_) => return,
        }
        let locked = self.locked(s);
        if !locked {
            if s.spec.next_offset < self.appends_max {
                // Keys are symmetric: a key is first used after every smaller one (the
                // first append writes key 0), which loses no behaviour up to renaming.
                let fresh = s
                    .files
                    .iter()
                    .flat_map(|f| &f.records)
                    .map(|r| r.1 + 1)
                    .max();
                for key in 0..self.keys.min(fresh.unwrap_or(0) + 1) {
                    actions.push(ConcurrentAction::Append { key });
                }
            }
            let active = &s.files[usize::from(s.active_file())];
            if active.durable < active.records.len() {
                actions.push(ConcurrentAction::Flush);
            }
            if self.explicit_rolls && !active.records.is_empty() {
                actions.push(ConcurrentAction::Roll);
            }
            match s.retention {
                None => {
                    if s.retentions < self.retentions_max
                        && s.mem.segments.len() >= 2
                        && !(self.exclusive() && s.in_cleaning())
                    {
                        actions.push(ConcurrentAction::RetentionCheckpoint);
                    }
                }
                Some(RetentionPhase::Checkpointed { .. }) => {
                    actions.push(ConcurrentAction::RetentionUnlink);
                }
                Some(RetentionPhase::Unlinked { .. }) => {
                    actions.push(ConcurrentAction::RetentionSyncDir);
                }
            }
        }
        for (i, cleaner) in s.cleaners.iter().enumerate() {
            let thread = u8::try_from(i).expect("few threads");
            match cleaner.phase {
                CleanerPhase::Idle => {
                    if s.cleanings < self.cleanings_max
                        && !locked
                        && (self.unguarded_cleaners || !s.in_cleaning())
                        && !(self.exclusive() && s.retention.is_some())
                    {
                        actions.push(ConcurrentAction::Snapshot { thread });
                    }
                }
                CleanerPhase::Snapshotted => actions.push(ConcurrentAction::Build { thread }),
                CleanerPhase::Released => actions.push(ConcurrentAction::RemoveTrash { thread }),
                CleanerPhase::Done => {}
                phase => {
                    let (_, to) = SWAP_STEPS
                        .iter()
                        .find(|(from, _)| *from == phase)
                        .expect("a swap phase");
                    // Taking the lock (step a) waits for every other holder.
                    let other_holds = s
                        .cleaners
                        .iter()
                        .enumerate()
                        .any(|(j, c)| j != i && c.phase.holds_lock());
                    if phase != CleanerPhase::Built
                        || self.variant == ConcurrentVariant::UnlockedSwap
                        || !other_holds
                    {
                        actions.push(ConcurrentAction::Swap { thread, to: *to });
                    }
                }
            }
            if cleaner.phase.abortable() {
                actions.push(ConcurrentAction::Abort { thread });
            }
        }
        match &s.read {
            None if s.reads < self.reads_max => actions.push(ConcurrentAction::ReadStart),
            None => {}
            Some(_) => actions.push(ConcurrentAction::ReadEnd),
        }
        if s.crashes < self.crashes_max {
            for lost in crashes(s) {
                actions.push(ConcurrentAction::Crash { lost });
            }
        }
    }

    fn next_state(&self, s: &ConcurrentState, action: ConcurrentAction) -> Option<ConcurrentState> {
        let mut n = s.clone();
        match action {
            ConcurrentAction::Append { key } => {
                let active = usize::from(n.active_file());
                if n.files[active].records.len() >= self.segment_records {
                    self.roll(&mut n);
                }
                let active = usize::from(n.active_file());
                let offset = n.spec.next_offset;
                n.files[active].records.push((offset, key));
                n.spec.append(key);
                record(
                    &mut n.history,
                    Thread::Appender as u8,
                    Some(LogOp::Append { key }),
                    Some(LogRet::Offset(offset)),
                );
                n.appended_during_build |= n
                    .cleaners
                    .iter()
                    .any(|c| matches!(c.phase, CleanerPhase::Snapshotted | CleanerPhase::Built));
            }
            ConcurrentAction::Flush => {
                let active = usize::from(n.active_file());
                n.files[active].durable = n.files[active].records.len();
                n.flushed_end = n.spec.next_offset;
            }
            ConcurrentAction::Roll => self.roll(&mut n),
            ConcurrentAction::RetentionCheckpoint => {
                let base = n.mem.segments[0].0;
                let log_start = n.mem.segments[1].0;
                let dir = n.mem.dir;
                n.dirs.get_mut(&dir).expect("the log's directory").log_start = log_start;
                n.mem.log_start = log_start;
                n.spec.retain_from(log_start);
                record(
                    &mut n.history,
                    Thread::Retention as u8,
                    Some(LogOp::Retain { log_start }),
                    None,
                );
                n.retention = Some(RetentionPhase::Checkpointed { dir, base });
                n.retentions += 1;
            }
            ConcurrentAction::RetentionUnlink => {
                let Some(RetentionPhase::Checkpointed { dir, base }) = n.retention else {
                    unreachable!("offered after the checkpoint");
                };
                n.dirs
                    .get_mut(&dir)
                    .expect("a directory object outlives its names")
                    .segments
                    .run(DirOp::Remove(base));
                if n.mem.dir == dir {
                    n.mem.segments.retain(|(b, _)| *b != base);
                }
                n.retention = Some(RetentionPhase::Unlinked { dir });
            }
            ConcurrentAction::RetentionSyncDir => {
                let Some(RetentionPhase::Unlinked { dir }) = n.retention else {
                    unreachable!("offered after the unlink");
                };
                n.dirs
                    .get_mut(&dir)
                    .expect("a directory object outlives its names")
                    .segments
                    .sync();
                n.retention = None;
                record(
                    &mut n.history,
                    Thread::Retention as u8,
                    None,
                    Some(LogRet::Done),
                );
            }
            ConcurrentAction::Snapshot { thread } => {
                let snap = self.snapshot(&n);
                record(
                    &mut n.history,
                    Thread::Cleaner as u8 + thread,
                    Some(LogOp::Clean(snap.clone())),
                    None,
                );
                let cleaner = &mut n.cleaners[usize::from(thread)];
                cleaner.snapshot = Some(snap);
                cleaner.phase = CleanerPhase::Snapshotted;
                n.cleanings += 1;
            }
            ConcurrentAction::Build { thread } => {
                self.build(&mut n, usize::from(thread));
                n.cleaners[usize::from(thread)].phase = CleanerPhase::Built;
            }
            ConcurrentAction::Swap { thread, to } => {
                self.swap(&mut n, usize::from(thread), to);
                if to == CleanerPhase::Released {
                    let cleaner = Thread::Cleaner as u8 + thread;
                    record(&mut n.history, cleaner, None, Some(LogRet::Done));
                }
            }
            ConcurrentAction::RemoveTrash { thread } => {
                n.parent.run(DirOp::Remove(PName::Trash));
                n.cleaners[usize::from(thread)].phase = CleanerPhase::Done;
            }
            ConcurrentAction::Abort { thread } => {
                if n.parent.get(&PName::Temp).is_some() {
                    n.parent.run(DirOp::Remove(PName::Temp));
                    n.parent.sync();
                }
                n.cleaners[usize::from(thread)].phase = CleanerPhase::Done;
                let cleaner = Thread::Cleaner as u8 + thread;
                record(&mut n.history, cleaner, None, Some(LogRet::Aborted));
            }
            ConcurrentAction::ReadStart => {
                record(
                    &mut n.history,
                    Thread::Reader as u8,
                    Some(LogOp::Read),
                    None,
                );
                n.read = Some(Read {
                    view: n
                        .mem
                        .segments
                        .iter()
                        .map(|(_, f)| (*f, n.files[usize::from(*f)].records.len()))
                        .collect(),
                    log_start: n.mem.log_start,
                    candidates: vec![n.spec.records.clone()],
                    across_swap: false,
                });
                n.reads += 1;
            }
            ConcurrentAction::ReadEnd => {
                let read = n.read.take().expect("a read in flight");
                let result: Vec<Rec> = read
                    .view
                    .iter()
                    .flat_map(|(f, len)| n.files[usize::from(*f)].records[..*len].iter())
                    .filter(|(o, _)| *o >= read.log_start)
                    .copied()
                    .collect();
                record(
                    &mut n.history,
                    Thread::Reader as u8,
                    None,
                    Some(LogRet::Records(result.clone())),
                );
                if read.candidates.contains(&result) {
                    n.read_across_swap |= read.across_swap;
                } else {
                    n.violated.push("reads_linearizable");
                }
            }
            ConcurrentAction::Crash { lost } => {
                let mut candidates = vec![n.spec.clone()];
                for cleaner in &n.cleaners {
                    if let Some(snap) = &cleaner.snapshot {
                        if cleaner.phase.in_cleaning() && cleaner.phase < CleanerPhase::Installed {
                            candidates.push(n.spec.cleaned(snap));
                        }
                    }
                }
                n.crashed_in_swap |= n.cleaners.iter().any(|c| c.phase.holds_lock());
                apply_crash(&mut n, &lost);
                for cleaner in &mut n.cleaners {
                    *cleaner = Cleaner {
                        phase: CleanerPhase::Done,
                        snapshot: None,
                    };
                }
                n.read = None;
                n.retention = None;
                n.crashes += 1;
                n.phase = Phase::Crashed(Expected {
                    candidates,
                    flushed_end: n.flushed_end,
                });
            }
            ConcurrentAction::Recover => {
                let Phase::Crashed(expected) = n.phase.clone() else {
                    unreachable!("offered after a crash");
                };
                n.phase = match recovery::recover(&mut n) {
                    Ok(_) => Phase::Recovered(expected),
                    Err(why) => Phase::FailedClosed(why),
                };
            }
        }
        if let Some(read) = &mut n.read {
            if read.candidates.last() != Some(&n.spec.records) {
                read.candidates.push(n.spec.records.clone());
            }
        }
        n.violated.sort_unstable();
        n.violated.dedup();
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::<Self>::always("no_acknowledged_record_lost", |_, s| {
                no_acknowledged_record_lost(s)
            }),
            Property::<Self>::always("reads_linearizable", |_, s| !s.broke("reads_linearizable")),
            Property::<Self>::always("one_cleaner_per_partition", |_, s| {
                s.cleaners.iter().filter(|c| c.phase.in_cleaning()).count() <= 1
            }),
            Property::<Self>::always("no_retention_while_cleaning", |_, s| {
                s.retention.is_none() || !s.in_cleaning()
            }),
            Property::<Self>::always("recovers_to_old_or_new_plus_appends", |_, s| {
                recovers_to_old_or_new_plus_appends(s)
            }),
            Property::<Self>::always("no_partial_log_exposed", |_, s| no_partial_log_exposed(s)),
            Property::<Self>::sometimes("append_during_build", |_, s| {
                s.appended_during_build
                    && s.cleaners
                        .iter()
                        .any(|c| c.phase >= CleanerPhase::Installed)
            }),
            Property::<Self>::sometimes("crash_in_swap_recovered", |_, s| {
                s.crashed_in_swap && matches!(s.phase, Phase::Recovered(_))
            }),
            Property::<Self>::sometimes("read_across_swap", |_, s| s.read_across_swap),
        ];
        if self.history {
            properties.push(Property::<Self>::always("history_linearizable", |_, s| {
                history::linearizable(&s.history)
            }));
        }
        properties
    }
}

/// Running: every acknowledged record the spec still holds is visible. Recovered:
/// every flushed one survives (in the old or the new content).
fn no_acknowledged_record_lost(s: &ConcurrentState) -> bool {
    let visible = s.visible();
    match &s.phase {
        Phase::Running => s.spec.records.iter().all(|r| visible.contains(r)),
        Phase::Recovered(e) => e
            .candidates
            .iter()
            .any(|c| c.below(e.flushed_end).iter().all(|r| visible.contains(r))),
        Phase::Crashed(_) | Phase::FailedClosed(_) => true,
    }
}

/// Recovery does not fail closed, leaves nothing but `D` (no temp, backup, trash or
/// manifest), and the recovered log is the old or the new content plus the appends,
/// cut no lower than the last flush.
fn recovers_to_old_or_new_plus_appends(s: &ConcurrentState) -> bool {
    match &s.phase {
        Phase::FailedClosed(_) => false,
        Phase::Recovered(e) => {
            if s.parent.entries.keys().any(|n| *n != PName::Live) {
                return false;
            }
            let visible = s.visible();
            e.candidates
                .iter()
                .any(|c| (e.flushed_end..=c.next_offset).any(|cut| c.below(cut) == visible))
        }
        Phase::Running | Phase::Crashed(_) => true,
    }
}

/// Running: what a read sees now is exactly the spec's view (nothing missing, nothing
/// resurrected), over a segment list in base order.
fn no_partial_log_exposed(s: &ConcurrentState) -> bool {
    if s.phase != Phase::Running {
        return true;
    }
    let ordered = s.mem.segments.windows(2).all(|w| w[0].0 < w[1].0);
    ordered && s.visible() == s.spec.records
}

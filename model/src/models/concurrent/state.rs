//! What model (f) tracks: files (shared by hard links), the log directories, the
//! parent directory of `D`, the in-memory segment list readers see, the sequential
//! spec's view of the log that every check compares against, and the history of
//! operations on that view the linearizability tester judges.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use stateright::semantics::LinearizabilityTester;

use crate::models::dir::Dir;

/// A record: its offset and its key (keys `0` and `1`; no values, no tombstones).
pub type Rec = (i64, u8);

/// Index into [`ConcurrentState::files`]: one inode.
pub type FileId = u8;

/// One segment file (an inode: every directory entry naming it shares its bytes).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct File {
    pub records: Vec<Rec>,
    /// Records fsynced: a power loss keeps at least these (and any longer prefix).
    pub durable: usize,
}

/// The log directories (objects the parent's names point at).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DirObj {
    /// The log directory the partition started with.
    Old,
    /// The `D.compact-tmp` of the cleaning with this number, built from its snapshot.
    New(u8),
}

/// Objects in the parent directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PObj {
    Dir(DirObj),
    /// The manifest: it lists the new directory's content, so recovery tells the new
    /// directory from the old by validating against it.
    Manifest(DirObj),
}

/// Names in the parent directory of `D`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PName {
    /// `D`
    Live,
    /// `D.compact-tmp`
    Temp,
    /// `D.compact-bak`
    Backup,
    /// `D.compact-trash` (new: never authoritative)
    Trash,
    /// `D.compact-manifest` (its temp, fsync and rename are one step here: model (b)
    /// checks that sequence)
    Manifest,
}

/// One log directory: its segment entries (`base -> inode`) and its durable
/// `log-start-offset.checkpoint` (written by temp + fsync + rename + dir fsync, one
/// step here: model (d) checks that order).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LogDir {
    pub segments: Dir<i64, FileId>,
    pub log_start: i64,
}

/// The partition's in-memory log: the segment list appends, rolls, retention and
/// readers use (an `Arc` snapshot in the engine), swapped whole at install.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Mem {
    /// The directory object the appender creates rolled segments in.
    pub dir: DirObj,
    pub segments: Vec<(i64, FileId)>,
    pub log_start: i64,
}

/// The sequential spec's view of the log: what a read from the log start returns.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SpecView {
    pub log_start: i64,
    pub next_offset: i64,
    pub records: Vec<Rec>,
}

impl SpecView {
    pub fn append(&mut self, key: u8) {
        self.records.push((self.next_offset, key));
        self.next_offset += 1;
    }

    /// Retention: every offset below `log_start` is gone.
    pub fn retain_from(&mut self, log_start: i64) {
        self.log_start = self.log_start.max(log_start);
        let start = self.log_start;
        self.records.retain(|(o, _)| *o >= start);
    }

    /// A clean pass of `snap` applied to the whole current log (design decision 1:
    /// the snapshot's pass, then everything appended since, untouched).
    pub fn cleaned(&self, snap: &Snapshot) -> SpecView {
        let mut next = self.clone();
        next.records = self
            .records
            .iter()
            .filter(|r| !superseded(r, &self.records, snap))
            .copied()
            .collect();
        next
    }

    /// This view with only the offsets below `cut` (a crash lost the rest).
    pub fn below(&self, cut: i64) -> Vec<Rec> {
        self.records
            .iter()
            .filter(|(o, _)| *o < cut)
            .copied()
            .collect()
    }
}

/// Whether `rec` is removed by the pass of `snap`: it lies below the horizon
/// `Y = min(map_end, active base of the snapshot)` and a later record of its key with
/// an offset below `map_end` (the mapped end) exists in `among`.
pub fn superseded(rec: &Rec, among: &[Rec], snap: &Snapshot) -> bool {
    let horizon = snap.map_end.min(snap.active_base);
    rec.0 < horizon
        && among
            .iter()
            .any(|(o, k)| *k == rec.1 && *o > rec.0 && *o < snap.map_end)
}

/// The tester over the spec's view, threads numbered by
/// [`super::history::Thread`].
pub type History = LinearizabilityTester<u8, SpecView>;

/// What a cleaning takes under the partition lock (design decision 1).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Snapshot {
    /// Which cleaning this is: its temp dir is [`DirObj::New`] of it.
    pub generation: u8,
    pub log_start: i64,
    /// The closed segments (`base`, inode).
    pub closed: Vec<(i64, FileId)>,
    pub active_base: i64,
    /// `next_offset` at the snapshot: the map covers offsets below it only.
    pub map_end: i64,
    /// `stale-tail-copy` only: the tail's records as they were at the snapshot.
    pub tail_copy: Option<Vec<Rec>>,
}

/// The cleaner's progress; the swap steps follow the shared design's lettering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CleanerPhase {
    Idle,
    /// Snapshot taken, lock released.
    Snapshotted,
    /// `D.compact-tmp` built (its files, entries and its own parent entry synced).
    Built,
    /// a: tail linked into the temp dir, `sync_dir(tmp)`; the lock is held from here.
    Linked,
    /// b: the temp dir's checkpoints written.
    PointWritten,
    /// c: the manifest durable (commit point).
    Committed,
    /// d, first rename: `D -> D.compact-bak`.
    LiveRenamed,
    /// d, second rename: `D.compact-tmp -> D`; the in-memory list is swapped.
    Installed,
    /// e, `D.compact-bak -> D.compact-trash`, `sync_dir(P)`.
    Trashed,
    /// e, manifest removed, `sync_dir(P)`; the lock is released.
    Released,
    /// f done (trash removed), or aborted.
    Done,
}

impl CleanerPhase {
    /// Between the snapshot and the lock's release: the partition is being cleaned.
    pub fn in_cleaning(self) -> bool {
        self > CleanerPhase::Idle && self < CleanerPhase::Released
    }

    /// Holding the partition's append lock (ours: steps a to e).
    pub fn holds_lock(self) -> bool {
        self >= CleanerPhase::Linked && self < CleanerPhase::Released
    }

    /// Before the commit point: an abort is still possible.
    pub fn abortable(self) -> bool {
        self.in_cleaning() && self < CleanerPhase::Committed
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cleaner {
    pub phase: CleanerPhase,
    pub snapshot: Option<Snapshot>,
}

/// Retention's progress (checkpoint first: model (d)'s order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RetentionPhase {
    /// The checkpoint is durable; the segment `base` of `dir` is still to unlink.
    Checkpointed { dir: DirObj, base: i64 },
    /// Unlinked (unsynced); the directory fsync is next.
    Unlinked { dir: DirObj },
}

/// A read in flight: the segment list and each file's length it took at its start,
/// and every spec view current at some point since.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Read {
    pub view: Vec<(FileId, usize)>,
    pub log_start: i64,
    pub candidates: Vec<Vec<Rec>>,
    /// A swap installed while it was in flight.
    pub across_swap: bool,
}

/// What a crash left to check after recovery.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Expected {
    /// The spec's view at the crash; with a cleaning in flight, also that view cleaned
    /// by the pass (old or new content, plus the appends).
    pub candidates: Vec<SpecView>,
    /// Every offset below was flushed before the crash: it must survive.
    pub flushed_end: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Phase {
    Running,
    Crashed(Expected),
    Recovered(Expected),
    FailedClosed(&'static str),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ConcurrentState {
    pub files: Vec<File>,
    pub dirs: BTreeMap<DirObj, LogDir>,
    pub parent: Dir<PName, PObj>,
    pub mem: Mem,
    pub spec: SpecView,
    /// `next_offset` at the last flush or roll (both fsync every record before it).
    pub flushed_end: i64,
    pub cleaners: Vec<Cleaner>,
    pub cleanings: u8,
    pub retention: Option<RetentionPhase>,
    pub retentions: u8,
    pub read: Option<Read>,
    pub reads: u8,
    pub crashes: u8,
    pub phase: Phase,
    /// Violations of properties judged at a transition (reads, appends during builds).
    pub violated: Vec<&'static str>,
    /// Coverage: an append completed while a cleaner was between snapshot and swap.
    pub appended_during_build: bool,
    /// Coverage: a crash hit while a cleaner was in the swap (steps a to e).
    pub crashed_in_swap: bool,
    /// Coverage: a read whose segment list predates an install completed correctly.
    pub read_across_swap: bool,
    /// The history for stateright's linearizability tester, when the model records one.
    #[serde(skip)]
    pub history: Option<History>,
}

impl ConcurrentState {
    pub fn initial(cleaner_threads: usize) -> ConcurrentState {
        let mut old = Dir::synced(BTreeMap::new());
        old.run(crate::models::dir::DirOp::Create(0, 0));
        old.sync();
        ConcurrentState {
            files: vec![File {
                records: Vec::new(),
                durable: 0,
            }],
            dirs: BTreeMap::from([(
                DirObj::Old,
                LogDir {
                    segments: old,
                    log_start: 0,
                },
            )]),
            parent: Dir::synced(BTreeMap::from([(PName::Live, PObj::Dir(DirObj::Old))])),
            mem: Mem {
                dir: DirObj::Old,
                segments: vec![(0, 0)],
                log_start: 0,
            },
            spec: SpecView::default(),
            flushed_end: 0,
            cleaners: vec![
                Cleaner {
                    phase: CleanerPhase::Idle,
                    snapshot: None,
                };
                cleaner_threads
            ],
            cleanings: 0,
            retention: None,
            retentions: 0,
            read: None,
            reads: 0,
            crashes: 0,
            phase: Phase::Running,
            violated: Vec::new(),
            appended_during_build: false,
            crashed_in_swap: false,
            read_across_swap: false,
            history: None,
        }
    }

    /// What a read of the whole in-memory log returns now.
    pub fn visible(&self) -> Vec<Rec> {
        let start = self.mem.log_start;
        self.mem
            .segments
            .iter()
            .flat_map(|(_, f)| self.files[usize::from(*f)].records.iter())
            .filter(|(o, _)| *o >= start)
            .copied()
            .collect()
    }

    pub fn active_file(&self) -> FileId {
        self.mem
            .segments
            .last()
            .expect("a log has an active segment")
            .1
    }

    pub fn locked(&self) -> bool {
        self.cleaners.iter().any(|c| c.phase.holds_lock())
    }

    pub fn in_cleaning(&self) -> bool {
        self.cleaners.iter().any(|c| c.phase.in_cleaning())
    }

    pub fn broke(&self, name: &str) -> bool {
        self.violated.contains(&name)
    }

    pub fn new_file(&mut self, records: Vec<Rec>, durable: bool) -> FileId {
        let durable = if durable { records.len() } else { 0 };
        self.files.push(File { records, durable });
        FileId::try_from(self.files.len() - 1).expect("few files")
    }
}

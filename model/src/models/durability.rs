//! Model (e): the durability of the log's own files. One partition directory holds
//! at most two segments (`S0`, and `S1` after a roll), each a `.log` with its
//! `.index` and `.timeindex`, plus two small checkpoint files:
//!
//! - `recovery-point.checkpoint`: the first segment recovery must re-check; every
//!   segment below it is *trusted*: opened from the summary in this file (length,
//!   next offset, counts) and its index files, without reading its data;
//! - `clean-shutdown`: written by a clean close; it carries the active segment's
//!   summary, so an open after a clean close reads no segment data at all.
//!
//! The process runs Append, Flush, Roll and Close in any order (bounded); a crash (a
//! process crash, or a power loss losing any subset of the unsynced directory
//! operations and, per file, the data written since its last fsync) can come between
//! any two file-system steps, including during recovery (one step at a time). After
//! recovery the process goes on, so a stale marker or checkpoint that outlives an
//! open is explored too.
//!
//! Ours:
//! - Flush: write the buffered index entries, fsync the `.log`. The index files are
//!   derived and the active segment is never trusted without the marker, so a crash
//!   rebuilds them; the directory entries were made durable when the segment was
//!   created. (The checker proves the index and directory fsyncs Kafka does here
//!   redundant: [`DurabilityVariant::FlushLikeKafka`] holds the same properties.)
//! - Roll: write the indexes, fsync the `.log`, `.index` and `.timeindex`, create the
//!   next segment, fsync the directory, then the recovery point (temp, fsync, rename,
//!   fsync the directory).
//! - Close: write the indexes, fsync all three files, then the marker (temp, fsync,
//!   rename, fsync the directory).
//! - Open: trust what the durable checkpoints cover (a trusted segment whose length
//!   differs from its summary is an error: something claimed more than was durable),
//!   scan the rest and rebuild their short indexes (no fsync: derived files, checked
//!   at every open), fsync every closed segment it scanned and write a recovery
//!   point vouching for it (also when the current one already did: an operator may
//!   delete a closed segment's index files while the log is down, and the rebuilt
//!   ones need not be byte-identical), cut a torn tail (no fsync either: the next step's fsync of the active
//!   `.log` or the next acknowledgement's covers it), remove temps and the
//!   marker unless it vouched for the last segment as it is, fsync the
//!   directory unless the open trusted that marker and changed nothing (the
//!   close that wrote it fsynced the directory after every other entry).
//! - A kept marker stays while appends extend its segment (an open trusts the
//!   vouched prefix and scans the rest); a roll removes it before the next segment
//!   exists, and a close that finds it describing the segment as it is, with the
//!   files durable, issues nothing.
//!
//! Simplifications, each on the conservative side: a segment's three files share one
//! directory entry (created and lost together); a file keeps either all or none of
//! its unsynced data (a torn batch in between is truncated by the scan like a lost
//! one); one batch is one index entry.

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use super::dir::{subsets, Dir, DirOp};

/// Segments a run may hold (a single roll).
const SEGMENTS_MAX: u8 = 2;

/// Closes a run may do: a second one after a reopen, which writes nothing when
/// nothing changed since the marker.
const CLOSES_MAX: u8 = 2;

/// True if the marker in the directory describes segment `s` as it is, with its
/// three files durable and no index entry buffered: a close has nothing to do.
fn unchanged_since_marker(state: &DState, s: u8) -> bool {
    let marker = state.checkpoint(DName::Marker);
    let log = state.file(s, FileKind::Log);
    marker.is_some_and(|m| m.point == s && m.len == log.written)
        && state.buffered[s as usize] == 0
        && [FileKind::Log, FileKind::Index, FileKind::TimeIndex]
            .iter()
            .all(|k| state.file(s, *k).written == state.file(s, *k).synced)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DName {
    /// A segment's three files, by segment number.
    Segment(u8),
    RecoveryPoint,
    RecoveryPointTemp,
    Marker,
    MarkerTemp,
}

/// The content of a checkpoint file: `point` segments are trusted at the `lens` given,
/// `torn` if a power loss took data that was never synced (it fails its checksum).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Recovery point: segments numbered below it are trusted. Marker: the number of
    /// the active segment it describes.
    pub point: u8,
    /// Recovery point: the batches of segment 0 (the only one a single roll closes).
    /// Marker: the batches of the active segment.
    pub len: u8,
    pub synced: bool,
    pub torn: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DObj {
    Segment,
    Checkpoint(Checkpoint),
}

/// Which of a segment's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum FileKind {
    Log,
    Index,
    TimeIndex,
}

/// Batches (or index entries) a file holds, and how many of them are durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileData {
    pub written: u8,
    pub synced: u8,
}

/// The sync steps, by name: what the sync ablation's judge removes one at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SyncStep {
    FlushLog = 0,
    RollLog = 1,
    RollIndex = 2,
    RollTimeIndex = 3,
    RollDir = 4,
    RecoveryPointTemp = 5,
    CloseLog = 7,
    CloseIndex = 8,
    CloseTimeIndex = 9,
    MarkerTemp = 10,
    MarkerDir = 11,
    OpenDir = 12,
    OpenRecoveryPointTemp = 17,
    /// Open: the files of each closed segment it scanned (index files rebuilt, or a
    /// crashed process's page cache), before a recovery point vouches for them or,
    /// when one already does, before anything can crash past the open.
    OpenScanned = 18,
    /// The first change after an open that kept the marker: the marker's removal
    /// made durable before the segment it describes changes.
    UnmarkDir = 19,
    /// Kafka's flush: the index files and the directory too (not ours).
    FlushIndex = 14,
    FlushTimeIndex = 15,
    FlushDir = 16,
}

impl SyncStep {
    /// The sync steps of our protocol (the others belong to a variant only).
    pub const OURS: [SyncStep; 15] = [
        SyncStep::FlushLog,
        SyncStep::RollLog,
        SyncStep::RollIndex,
        SyncStep::RollTimeIndex,
        SyncStep::RollDir,
        SyncStep::RecoveryPointTemp,
        SyncStep::CloseLog,
        SyncStep::CloseIndex,
        SyncStep::CloseTimeIndex,
        SyncStep::MarkerTemp,
        SyncStep::MarkerDir,
        SyncStep::OpenDir,
        SyncStep::OpenRecoveryPointTemp,
        SyncStep::OpenScanned,
        SyncStep::UnmarkDir,
    ];
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DOp {
    /// Append the buffered index entries of segment `s` to its index files.
    WriteIndexes(u8),
    Sync(u8, FileKind, SyncStep),
    SyncDir(SyncStep),
    CreateSegment(u8),
    /// Write the recovery point temp: segments below `point` are trusted.
    WriteRecoveryPointTemp(u8),
    RenameRecoveryPoint,
    WriteMarkerTemp,
    RenameMarker,
    SyncTemp(DName, SyncStep),
    /// Recovery: rewrite the index files of segment `s` from its `.log`.
    RebuildIndexes(u8),
    Remove(DName),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DurabilityVariant {
    /// The protocol in the module docs.
    Ours,
    /// Roll writes the recovery point before it fsyncs the closed segment: a power
    /// loss keeps the checkpoint and loses data it vouches for.
    RecoveryPointBeforeFlush,
    /// Open does not fsync the directory it found: after a process crash the entries
    /// it opened may not be durable (a roll's new segment, before the roll's
    /// directory fsync), and flush fsyncs only the `.log`.
    NoOpenDirSync,
    /// Flush as Kafka does it (index files and directory fsynced too).
    FlushLikeKafka,
    /// When the current recovery point vouches for every closed segment, open
    /// neither fsyncs the index files it rebuilt nor rewrites the point (what the
    /// sweep's `drop-indexes` workload refutes): after an operator dropped index
    /// files, a power loss after the open leaves a trusted segment to rescan.
    SyncScannedOnlyForNewPoint,
    /// The marker an open kept stays while appends and a roll go on under it (no
    /// `Unmark`): a power loss that takes the appended batch and keeps the index
    /// entries written for it leaves the marker vouching for a segment whose index
    /// files must be rebuilt.
    MarkerThroughAppends,
    /// Ours without the sync steps whose bits are set (bit n: `SyncStep` n).
    WithoutSyncs(u32),
}

impl DurabilityVariant {
    fn keeps(self, step: SyncStep) -> bool {
        match self {
            DurabilityVariant::WithoutSyncs(mask) => mask & (1 << step as u32) == 0,
            DurabilityVariant::NoOpenDirSync => step != SyncStep::OpenDir,
            _ => true,
        }
    }

    fn filter(self, ops: Vec<DOp>) -> Vec<DOp> {
        ops.into_iter()
            .filter(|op| match op {
                DOp::Sync(_, _, step) | DOp::SyncDir(step) | DOp::SyncTemp(_, step) => {
                    self.keeps(*step)
                }
                _ => true,
            })
            .collect()
    }

    fn flush(self, s: u8) -> Vec<DOp> {
        let mut ops = vec![
            DOp::WriteIndexes(s),
            DOp::Sync(s, FileKind::Log, SyncStep::FlushLog),
        ];
        if self == DurabilityVariant::FlushLikeKafka {
            ops.extend([
                DOp::Sync(s, FileKind::Index, SyncStep::FlushIndex),
                DOp::Sync(s, FileKind::TimeIndex, SyncStep::FlushTimeIndex),
                DOp::SyncDir(SyncStep::FlushDir),
            ]);
        }
        self.filter(ops)
    }

    fn roll(self, s: u8) -> Vec<DOp> {
        let segment = [
            DOp::Sync(s, FileKind::Log, SyncStep::RollLog),
            DOp::Sync(s, FileKind::Index, SyncStep::RollIndex),
            DOp::Sync(s, FileKind::TimeIndex, SyncStep::RollTimeIndex),
        ];
        // One directory fsync covers the next segment's entry and the checkpoint's
        // rename: a power loss keeping the rename but not the create leaves the closed
        // segment last, and the last segment is never trusted by the recovery point.
        let entries = [
            DOp::CreateSegment(s + 1),
            DOp::WriteRecoveryPointTemp(s + 1),
            DOp::SyncTemp(DName::RecoveryPointTemp, SyncStep::RecoveryPointTemp),
            DOp::RenameRecoveryPoint,
            DOp::SyncDir(SyncStep::RollDir),
        ];
        let ops: Vec<DOp> = if self == DurabilityVariant::RecoveryPointBeforeFlush {
            [DOp::WriteIndexes(s)]
                .into_iter()
                .chain(entries)
                .chain(segment)
                .collect()
        } else {
            [DOp::WriteIndexes(s)]
                .into_iter()
                .chain(segment)
                .chain(entries)
                .collect()
        };
        self.filter(ops)
    }

    fn unmark(self) -> Vec<DOp> {
        self.filter(vec![
            DOp::Remove(DName::Marker),
            DOp::SyncDir(SyncStep::UnmarkDir),
        ])
    }

    fn close(self, s: u8) -> Vec<DOp> {
        self.filter(vec![
            DOp::WriteIndexes(s),
            DOp::Sync(s, FileKind::Log, SyncStep::CloseLog),
            DOp::Sync(s, FileKind::Index, SyncStep::CloseIndex),
            DOp::Sync(s, FileKind::TimeIndex, SyncStep::CloseTimeIndex),
            DOp::WriteMarkerTemp,
            DOp::SyncTemp(DName::MarkerTemp, SyncStep::MarkerTemp),
            DOp::RenameMarker,
            DOp::SyncDir(SyncStep::MarkerDir),
        ])
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Proc {
    Flush,
    Roll,
    Close,
    Open,
    /// Before the first append or roll after an open that kept the marker.
    Unmark,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DAction {
    Append,
    /// While the log is down after a clean close, an operator deletes every closed
    /// segment's index files (Kafka rebuilds missing ones at open). Modelled as the
    /// files' content gone, durably (their names share the segment's entry here).
    DropIndexes,
    Start(Proc),
    Step {
        n: usize,
        op: DOp,
    },
    /// Power loss dropping the listed pending directory operations and the unsynced
    /// data of the listed files (index into the state's unsynced-file list); `process`
    /// is a process crash (nothing lost).
    Crash {
        process: bool,
        lost_dir_ops: Vec<usize>,
        lost_data: Vec<usize>,
    },
}

/// Why an open refused the directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpenError {
    /// No segment left: the directory lost its only segment.
    NoSegment,
    /// A trusted segment's length differs from its summary: a checkpoint claimed
    /// more than was durable.
    TrustedLengthMismatch,
    /// A closed segment the recovery point summarizes is gone. This model has no
    /// retention (the log start never moves), so every summarized segment counts:
    /// the engine's `CorruptKind::SegmentsLost` (docs/design.md section 3c).
    SummarizedSegmentMissing,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DPhase {
    /// The process is up and idle.
    Idle,
    Running {
        proc: Proc,
        ops: Vec<DOp>,
        done: usize,
    },
    /// Closed cleanly; the next open finds the marker.
    Closed,
    Crashed,
    /// Recovery refused to open.
    Failed(OpenError),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DState {
    pub dir: Dir<DName, DObj>,
    /// Per segment number: `.log`, `.index`, `.timeindex`.
    pub data: [[FileData; 3]; SEGMENTS_MAX as usize],
    /// The process's view: segments, and index entries buffered per segment.
    pub segments: u8,
    pub buffered: [u8; SEGMENTS_MAX as usize],
    /// Batches per segment a flush, roll or close reported durable.
    pub acked: [u8; SEGMENTS_MAX as usize],
    /// Segments the last open trusted (bit per segment), and whether it had to
    /// rebuild the indexes of one of them.
    pub trusted: u8,
    pub rescanned_trusted: bool,
    /// An operator dropped index files since the last completed open: the opens
    /// until one completes may rescan trusted segments (not a crash's doing).
    pub dropped: bool,
    pub drops: u8,
    /// Set by a clean close, cleared by the next open; `unclean_after_close` records an
    /// open after a clean close (and nothing but crashes since) that did not trust
    /// every segment.
    pub after_close: bool,
    pub unclean_after_close: bool,
    /// A crash came between a close's marker rename and its directory fsync: the
    /// marker may be visible and not durable, which no later open can tell, so an
    /// open that trusts it and a close that finds it current issue nothing, and a
    /// power loss after them costs the next open a scan (never data).
    pub close_window: bool,
    pub appends: u8,
    pub rolls: u8,
    pub closes: u8,
    pub crashes: u8,
    pub opens: u8,
    pub phase: DPhase,
}

impl DState {
    fn file(&self, s: u8, kind: FileKind) -> &FileData {
        &self.data[s as usize][kind as usize]
    }

    fn file_mut(&mut self, s: u8, kind: FileKind) -> &mut FileData {
        &mut self.data[s as usize][kind as usize]
    }

    /// Segment numbers present in the directory, ascending.
    pub fn segments_on_disk(&self) -> Vec<u8> {
        self.dir
            .entries
            .keys()
            .filter_map(|n| match n {
                DName::Segment(s) => Some(*s),
                _ => None,
            })
            .collect()
    }

    fn checkpoint(&self, name: DName) -> Option<Checkpoint> {
        match self.dir.get(&name) {
            Some(DObj::Checkpoint(c)) if !c.torn => Some(*c),
            _ => None,
        }
    }

    /// Files with data written since their last fsync, in a fixed order: what a power
    /// loss may drop (by position in this list).
    fn unsynced_files(&self) -> Vec<Unsynced> {
        let mut out = Vec::new();
        for s in self.segments_on_disk() {
            for kind in [FileKind::Log, FileKind::Index, FileKind::TimeIndex] {
                let f = self.file(s, kind);
                if f.written > f.synced {
                    out.push(Unsynced::Segment(s, kind));
                }
            }
        }
        for name in [
            DName::RecoveryPoint,
            DName::RecoveryPointTemp,
            DName::Marker,
            DName::MarkerTemp,
        ] {
            if let Some(DObj::Checkpoint(c)) = self.dir.get(&name) {
                if !c.synced && !c.torn {
                    out.push(Unsynced::Checkpoint(name));
                }
            }
        }
        out
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unsynced {
    Segment(u8, FileKind),
    Checkpoint(DName),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DurabilityModel {
    pub variant: DurabilityVariant,
    pub appends_max: u8,
    pub crashes_max: u8,
    pub opens_max: u8,
    pub drops_max: u8,
}

impl DurabilityModel {
    pub fn new(variant: DurabilityVariant) -> DurabilityModel {
        DurabilityModel {
            variant,
            appends_max: 3,
            crashes_max: 2,
            opens_max: 2,
            drops_max: 1,
        }
    }

    /// What an open does on this disk: the steps, the trusted segments, and the
    /// error it stops with if a trusted segment is not what its summary says.
    fn open_plan(&self, state: &DState) -> Result<(Vec<DOp>, u8, bool), OpenError> {
        let segments = state.segments_on_disk();
        let Some(&last) = segments.last() else {
            return Err(OpenError::NoSegment);
        };
        let point = state.checkpoint(DName::RecoveryPoint);
        // Evidence, not a hint: a readable recovery point names the closed segments
        // that existed, whole, when it was renamed into place. One of them gone is
        // lost data to refuse, never a wrong hint to drop (`open_succeeds` proves
        // that no crash leaves it).
        if point.is_some_and(|p| (0..p.point).any(|s| !segments.contains(&s))) {
            return Err(OpenError::SummarizedSegmentMissing);
        }
        let marker = state.checkpoint(DName::Marker).filter(|m| m.point == last);
        let mut trusted = 0u8;
        let mut rescan = false;
        let mut ops = Vec::new();
        let mut scanned_closed = Vec::new();
        for &s in &segments {
            let summary = if s == last {
                marker.map(|m| m.len)
            } else {
                point.filter(|p| s < p.point).map(|p| p.len)
            };
            let log = state.file(s, FileKind::Log).written;
            // The last segment may have grown past the marker (a stale marker, or
            // another writer): the vouched prefix stands and the rest is scanned.
            let summary = match summary {
                Some(len) if log < len || (log > len && s != last) => {
                    return Err(OpenError::TrustedLengthMismatch);
                }
                Some(len) if log > len => None,
                other => other,
            };
            if summary.is_some() {
                trusted |= 1 << s;
            }
            let complete = [FileKind::Index, FileKind::TimeIndex]
                .iter()
                .all(|k| state.file(s, *k).written == log);
            if !complete {
                // Rebuilt without an fsync: the active segment's indexes are never
                // trusted before a roll or close fsyncs them, and a closed segment's
                // are complete (fsynced before the next segment existed), so only
                // damage, outside this model, makes one short.
                rescan |= summary.is_some();
                ops.push(DOp::RebuildIndexes(s));
            }
            if s != last && (summary.is_none() || !complete) {
                scanned_closed.push(s);
            }
        }
        // What this open scanned of a closed segment (its rebuilt index files, or
        // a crashed process's page cache) is made durable before a recovery point
        // vouches for it, or, when the current one already does (the operator
        // dropped its index files), before the open returns.
        let current = point.is_some_and(|p| p.point == last);
        // Rebuilt index files need not equal the ones the point summarized (a sparse
        // index depends on where the writer's entry interval started, and Kafka's
        // open restarts it): a point that vouches for a rebuilt segment is rewritten.
        // This model abstracts index bytes away, so only the engine's sweep
        // (`drop-indexes`) can see a stale checksum; here the rewrite is one more
        // point write after the syncs.
        let mut rewrite_point = !current || rescan;
        if self.variant == DurabilityVariant::SyncScannedOnlyForNewPoint && current {
            scanned_closed.clear();
            rewrite_point = false;
        }
        for s in scanned_closed {
            for kind in [FileKind::Log, FileKind::Index, FileKind::TimeIndex] {
                ops.push(DOp::Sync(s, kind, SyncStep::OpenScanned));
            }
        }
        // A recovery point that vouches for the last segment is stale: the roll that
        // wrote it lost its next segment to a power loss, and the segment it describes
        // is active again and will grow. It goes before anything is appended; a
        // recovery point behind the last segment is brought up to it.
        let stale = point.is_some_and(|p| p.point > last);
        // A marker that vouched for the last segment as it is stays: it still
        // describes the segment (appends only extend it, and an open trusts the
        // vouched prefix of a longer file), so a close that changes nothing need
        // not write it again. Any other is removed.
        let marker_trusted = marker.is_some() && trusted & (1 << last) != 0;
        for name in [DName::RecoveryPointTemp, DName::MarkerTemp, DName::Marker] {
            if state.dir.get(&name).is_some() && !(name == DName::Marker && marker_trusted) {
                ops.push(DOp::Remove(name));
            }
        }
        if last > 0 && rewrite_point {
            ops.extend([
                DOp::WriteRecoveryPointTemp(last),
                DOp::SyncTemp(DName::RecoveryPointTemp, SyncStep::OpenRecoveryPointTemp),
                DOp::RenameRecoveryPoint,
            ]);
        } else if stale {
            ops.push(DOp::Remove(DName::RecoveryPoint));
        }
        // An open that trusted every segment by the marker a clean close left and
        // has nothing to do issues nothing: that close fsynced the directory after
        // every entry but possibly its own rename, whose loss costs the next open
        // a scan, never data.
        if !(ops.is_empty() && marker_trusted) {
            ops.push(DOp::SyncDir(SyncStep::OpenDir));
        }
        Ok((self.variant.filter(ops), trusted, rescan))
    }
}

fn run_op(state: &mut DState, op: DOp) {
    match op {
        DOp::WriteIndexes(s) => {
            let n = std::mem::take(&mut state.buffered[s as usize]);
            state.file_mut(s, FileKind::Index).written += n;
            state.file_mut(s, FileKind::TimeIndex).written += n;
        }
        DOp::Sync(s, kind, _) => {
            let f = state.file_mut(s, kind);
            f.synced = f.written;
        }
        DOp::SyncDir(_) => state.dir.sync(),
        DOp::CreateSegment(s) => {
            state.data[s as usize] = Default::default();
            state
                .dir
                .run(DirOp::Create(DName::Segment(s), DObj::Segment));
            state.segments = s + 1;
        }
        DOp::WriteRecoveryPointTemp(point) => {
            let len = state.file(0, FileKind::Log).written;
            state.dir.run(DirOp::Create(
                DName::RecoveryPointTemp,
                DObj::Checkpoint(Checkpoint {
                    point,
                    len,
                    synced: false,
                    torn: false,
                }),
            ));
        }
        DOp::RenameRecoveryPoint => state.dir.run(DirOp::Rename {
            from: DName::RecoveryPointTemp,
            to: DName::RecoveryPoint,
        }),
        DOp::WriteMarkerTemp => {
            let active = state.segments - 1;
            let len = state.file(active, FileKind::Log).written;
            state.dir.run(DirOp::Create(
                DName::MarkerTemp,
                DObj::Checkpoint(Checkpoint {
                    point: active,
                    len,
                    synced: false,
                    torn: false,
                }),
            ));
        }
        DOp::RenameMarker => state.dir.run(DirOp::Rename {
            from: DName::MarkerTemp,
            to: DName::Marker,
        }),
        DOp::SyncTemp(name, _) => {
            if let Some(DObj::Checkpoint(c)) = state.dir.entries.get_mut(&name) {
                c.synced = true;
            }
        }
        DOp::RebuildIndexes(s) => {
            let log = state.file(s, FileKind::Log).written;
            for kind in [FileKind::Index, FileKind::TimeIndex] {
                // Rewritten whole: nothing of it is durable until its fsync.
                *state.file_mut(s, kind) = FileData {
                    written: log,
                    synced: 0,
                };
            }
        }
        DOp::Remove(name) => state.dir.run(DirOp::Remove(name)),
    }
}

/// What a completed procedure reports durable.
fn on_done(state: &mut DState, proc: Proc) {
    match proc {
        Proc::Flush | Proc::Close => {
            let s = state.segments - 1;
            state.acked[s as usize] = state.file(s, FileKind::Log).written;
            if proc == Proc::Close {
                state.phase = DPhase::Closed;
                state.after_close = true;
                state.closes += 1;
                return;
            }
        }
        Proc::Roll => {
            state.acked[0] = state.file(0, FileKind::Log).written;
            state.rolls += 1;
        }
        Proc::Open | Proc::Unmark => {}
    }
    state.phase = DPhase::Idle;
}

impl Model for DurabilityModel {
    type State = DState;
    type Action = DAction;

    fn init_states(&self) -> Vec<DState> {
        let mut dir = Dir::synced(Default::default());
        dir.run(DirOp::Create(DName::Segment(0), DObj::Segment));
        dir.sync();
        vec![DState {
            dir,
            data: Default::default(),
            segments: 1,
            buffered: [0; SEGMENTS_MAX as usize],
            acked: [0; SEGMENTS_MAX as usize],
            trusted: 0,
            rescanned_trusted: false,
            dropped: false,
            drops: 0,
            after_close: false,
            unclean_after_close: false,
            close_window: false,
            appends: 0,
            rolls: 0,
            closes: 0,
            crashes: 0,
            opens: 0,
            phase: DPhase::Idle,
        }]
    }

    fn actions(&self, state: &DState, actions: &mut Vec<DAction>) {
        match &state.phase {
            DPhase::Idle => {
                let active = state.segments - 1;
                let log = state.file(active, FileKind::Log).written;
                // A marker the open kept goes, durably, before the segment changes.
                let marked = state.dir.get(&DName::Marker).is_some()
                    && self.variant != DurabilityVariant::MarkerThroughAppends;
                if marked {
                    actions.push(DAction::Start(Proc::Unmark));
                }
                if !marked && state.appends < self.appends_max {
                    actions.push(DAction::Append);
                }
                if log > state.acked[active as usize] {
                    actions.push(DAction::Start(Proc::Flush));
                }
                if !marked && log > 0 && state.segments < SEGMENTS_MAX && state.rolls == 0 {
                    actions.push(DAction::Start(Proc::Roll));
                }
                if state.closes < CLOSES_MAX && state.appends > 0 {
                    actions.push(DAction::Start(Proc::Close));
                }
            }
            DPhase::Running { ops, done, .. } => {
                actions.push(DAction::Step {
                    n: *done,
                    op: ops[*done],
                });
            }
            DPhase::Closed | DPhase::Crashed => {
                if state.opens < self.opens_max {
                    actions.push(DAction::Start(Proc::Open));
                }
                if matches!(state.phase, DPhase::Closed)
                    && state.drops < self.drops_max
                    && state.segments_on_disk().len() > 1
                {
                    actions.push(DAction::DropIndexes);
                }
            }
            DPhase::Failed(_) => return,
        }
        if state.crashes >= self.crashes_max || matches!(state.phase, DPhase::Crashed) {
            return;
        }
        actions.push(DAction::Crash {
            process: true,
            lost_dir_ops: Vec::new(),
            lost_data: Vec::new(),
        });
        let unsynced = state.unsynced_files().len();
        for lost_dir_ops in subsets(state.dir.pending.len()) {
            for lost_data in subsets(unsynced) {
                if lost_dir_ops.is_empty() && lost_data.is_empty() && unsynced == 0 {
                    // Same as the process crash.
                    continue;
                }
                actions.push(DAction::Crash {
                    process: false,
                    lost_dir_ops: lost_dir_ops.clone(),
                    lost_data,
                });
            }
        }
    }

    fn next_state(&self, state: &DState, action: DAction) -> Option<DState> {
        let mut next = state.clone();
        match action {
            DAction::DropIndexes => {
                let disk = next.segments_on_disk();
                for &s in &disk[..disk.len() - 1] {
                    for kind in [FileKind::Index, FileKind::TimeIndex] {
                        *next.file_mut(s, kind) = FileData::default();
                    }
                }
                next.drops += 1;
                next.dropped = true;
            }
            DAction::Append => {
                let s = next.segments - 1;
                next.file_mut(s, FileKind::Log).written += 1;
                next.buffered[s as usize] += 1;
                next.appends += 1;
            }
            DAction::Start(proc) => {
                let s = next.segments - 1;
                let ops = match proc {
                    Proc::Flush => self.variant.flush(s),
                    Proc::Roll => self.variant.roll(s),
                    Proc::Unmark => self.variant.unmark(),
                    // A close of a log the marker already describes, whose files
                    // are durable, writes nothing.
                    Proc::Close if unchanged_since_marker(&next, s) => Vec::new(),
                    Proc::Close => self.variant.close(s),
                    Proc::Open => {
                        next.opens += 1;
                        match self.open_plan(&next) {
                            Ok((ops, trusted, rescan)) => {
                                let all = (1u8 << next.segments_on_disk().len()) - 1;
                                next.unclean_after_close |= next.after_close && trusted != all;
                                next.after_close = false;
                                next.trusted = trusted;
                                // Rebuilding what an operator dropped is no crash's doing.
                                next.rescanned_trusted = rescan && !next.dropped;
                                ops
                            }
                            Err(why) => {
                                next.phase = DPhase::Failed(why);
                                return Some(next);
                            }
                        }
                    }
                };
                next.phase = DPhase::Running { proc, ops, done: 0 };
                if let DPhase::Running { ops, .. } = &next.phase {
                    if ops.is_empty() {
                        if proc == Proc::Open {
                            open_done(&mut next);
                        }
                        on_done(&mut next, proc);
                    }
                }
            }
            DAction::Step { n, op } => {
                run_op(&mut next, op);
                let DPhase::Running { proc, ops, .. } = &state.phase else {
                    unreachable!("Step is only offered while running");
                };
                if n + 1 == ops.len() {
                    if *proc == Proc::Open {
                        open_done(&mut next);
                    }
                    on_done(&mut next, *proc);
                } else {
                    next.phase = DPhase::Running {
                        proc: *proc,
                        ops: ops.clone(),
                        done: n + 1,
                    };
                }
            }
            DAction::Crash {
                process,
                lost_dir_ops,
                lost_data,
            } => {
                if let DPhase::Running {
                    proc: Proc::Close,
                    ops,
                    done,
                } = &state.phase
                {
                    let ran = &ops[..*done];
                    next.close_window |= ran.contains(&DOp::RenameMarker)
                        && !ran.contains(&DOp::SyncDir(SyncStep::MarkerDir));
                }
                if !process {
                    let unsynced = next.unsynced_files();
                    for (i, file) in unsynced.iter().enumerate() {
                        let lost = lost_data.contains(&i);
                        match *file {
                            Unsynced::Segment(s, kind) => {
                                let f = next.file_mut(s, kind);
                                if lost {
                                    f.written = f.synced;
                                }
                            }
                            Unsynced::Checkpoint(name) => {
                                if let Some(DObj::Checkpoint(c)) = next.dir.entries.get_mut(&name) {
                                    c.torn = lost;
                                }
                            }
                        }
                    }
                    // The same object may sit under a pending rename: tear it there too.
                    let torn: Vec<DName> = unsynced
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| lost_data.contains(i))
                        .filter_map(|(_, f)| match f {
                            Unsynced::Checkpoint(name) => Some(*name),
                            Unsynced::Segment(..) => None,
                        })
                        .collect();
                    tear_pending(&mut next.dir, &torn);
                    next.dir.power_loss(&lost_dir_ops);
                    for s in 0..SEGMENTS_MAX {
                        for f in &mut next.data[s as usize] {
                            f.synced = f.written;
                        }
                    }
                    for obj in next.dir.entries.values_mut() {
                        if let DObj::Checkpoint(c) = obj {
                            c.synced = true;
                        }
                    }
                    next.dir.sync();
                }
                next.buffered = [0; SEGMENTS_MAX as usize];
                next.crashes += 1;
                next.phase = DPhase::Crashed;
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::<Self>::always("open_succeeds", |_, s| {
                !matches!(s.phase, DPhase::Failed(_))
            }),
            Property::<Self>::always("acknowledged_survives", |_, s| {
                // Checked whenever the process is up after an open: every batch a
                // flush, roll or close reported durable is still there.
                if s.opens == 0 || !matches!(s.phase, DPhase::Idle) {
                    return true;
                }
                let disk = s.segments_on_disk();
                (0..SEGMENTS_MAX).all(|seg| {
                    let acked = s.acked[seg as usize];
                    acked == 0
                        || (disk.contains(&seg) && s.file(seg, FileKind::Log).written >= acked)
                })
            }),
            Property::<Self>::always("trusted_needs_no_rescan", |_, s| {
                // A crash never leaves a segment that a checkpoint vouches for with
                // index files that must be rebuilt from its data.
                !s.rescanned_trusted
            }),
            Property::<Self>::always("clean_close_opens_without_scan", |_, s| {
                // An open after a clean close (power loss after it included) trusts
                // every segment: it reads no segment data. Unless a crash hit an
                // earlier close between its marker's rename and its directory fsync
                // (`close_window`): no open can tell that marker is not durable.
                !s.unclean_after_close || s.close_window
            }),
            Property::<Self>::always("open_leaves_only_a_true_marker", |_, s| {
                // After an open, no temp is left, and a marker left vouches for the
                // last segment exactly as it is (it goes before the segment changes).
                let last = s.segments_on_disk().last().copied();
                s.opens == 0
                    || !matches!(s.phase, DPhase::Idle)
                    || (s.dir.get(&DName::MarkerTemp).is_none()
                        && s.dir.get(&DName::RecoveryPointTemp).is_none()
                        && s.dir.get(&DName::Marker).is_none_or(|_| {
                            s.checkpoint(DName::Marker).is_some_and(|m| {
                                Some(m.point) == last
                                    && m.len == s.file(m.point, FileKind::Log).written
                            })
                        }))
            }),
            Property::<Self>::sometimes("clean_open_trusts_everything", |_, s| {
                s.opens > 0
                    && matches!(s.phase, DPhase::Idle)
                    && s.segments_on_disk().len() == 2
                    && s.trusted == 0b11
            }),
            Property::<Self>::sometimes("dropped_indexes_rebuilt", |_, s| {
                // The operator's drop is followed by an open that completes.
                s.drops > 0 && !s.dropped && s.opens > 0 && matches!(s.phase, DPhase::Idle)
            }),
            Property::<Self>::sometimes("crash_open_trusts_closed_segment", |_, s| {
                s.opens > 0 && s.crashes > 0 && s.closes == 0 && s.trusted == 0b01
            }),
        ]
    }
}

/// Marks torn every checkpoint object that a pending rename moves from `names`
/// (a power loss tears the data, wherever the kept rename puts the file).
fn tear_pending(dir: &mut Dir<DName, DObj>, names: &[DName]) {
    for op in &mut dir.pending {
        if let DirOp::Create(name, DObj::Checkpoint(c)) = op {
            if names.contains(name) && !c.synced {
                c.torn = true;
            }
        }
    }
    for name in names {
        if let Some(DObj::Checkpoint(c)) = dir.durable.get_mut(name) {
            if !c.synced {
                c.torn = true;
            }
        }
    }
}

/// The process's view after a successful open: what is on disk.
fn open_done(state: &mut DState) {
    state.dropped = false;
    let segments = state.segments_on_disk();
    state.segments = segments.last().map_or(1, |s| s + 1);
    state.buffered = [0; SEGMENTS_MAX as usize];
}

#[cfg(test)]
mod tests {
    use super::*;
    use stateright::Checker;

    fn check(variant: DurabilityVariant) -> impl Checker<DurabilityModel> {
        DurabilityModel::new(variant).checker().spawn_bfs().join()
    }

    #[test]
    fn ours_holds_every_property() {
        let checker = check(DurabilityVariant::Ours);
        checker.assert_properties();
        // Pinned: a model that silently shrinks fails here.
        // 21,362 before a second close after a reopen and the kept marker's
        // removal (`Unmark`).
        assert_eq!(checker.unique_state_count(), 41_478);
    }

    #[test]
    fn a_summarized_segment_gone_is_refused() {
        let model = DurabilityModel::new(DurabilityVariant::Ours);
        let mut state = model.init_states().remove(0);
        assert!(model.open_plan(&state).is_ok());
        state
            .dir
            .run(DirOp::Create(DName::Segment(1), DObj::Segment));
        let point = Checkpoint {
            point: 1,
            len: 0,
            synced: true,
            torn: false,
        };
        state
            .dir
            .run(DirOp::Create(DName::RecoveryPoint, DObj::Checkpoint(point)));
        assert!(model.open_plan(&state).is_ok());
        state.dir.run(DirOp::Remove(DName::Segment(0)));
        assert_eq!(
            model.open_plan(&state).err(),
            Some(OpenError::SummarizedSegmentMissing)
        );
        // A torn point is a hint: the open scans what is there.
        let torn = Checkpoint {
            torn: true,
            ..point
        };
        state
            .dir
            .run(DirOp::Create(DName::RecoveryPoint, DObj::Checkpoint(torn)));
        assert!(model.open_plan(&state).is_ok());
    }

    /// Why the first append after a quiet reopen removes the marker, durably: the
    /// model's counterexample before `Unmark` existed.
    #[test]
    fn keeping_the_marker_through_appends_is_refuted() {
        let checker = check(DurabilityVariant::MarkerThroughAppends);
        checker.assert_any_discovery("trusted_needs_no_rescan");
    }

    #[test]
    fn sync_scanned_only_for_a_new_point_is_refuted() {
        let checker = check(DurabilityVariant::SyncScannedOnlyForNewPoint);
        checker.assert_any_discovery("trusted_needs_no_rescan");
    }

    #[test]
    fn recovery_point_before_flush_is_refuted() {
        let checker = check(DurabilityVariant::RecoveryPointBeforeFlush);
        checker.assert_any_discovery("open_succeeds");
    }

    #[test]
    fn open_without_dir_sync_is_refuted() {
        let checker = check(DurabilityVariant::NoOpenDirSync);
        checker.assert_any_discovery("open_succeeds");
    }

    #[test]
    fn kafka_flush_syncs_are_redundant_here() {
        check(DurabilityVariant::FlushLikeKafka).assert_properties();
    }

    #[test]
    fn every_sync_of_ours_is_needed() {
        let mut wrong = Vec::new();
        for step in SyncStep::OURS {
            let checker = check(DurabilityVariant::WithoutSyncs(1 << step as u32));
            let broken = checker.model().properties().iter().any(|p| {
                p.expectation == stateright::Expectation::Always
                    && checker.discovery(p.name).is_some()
            });
            if !broken {
                wrong.push(step);
            }
        }
        assert!(wrong.is_empty(), "redundant in the model: {wrong:?}");
    }
}

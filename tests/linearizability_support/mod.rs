//! Shared by tests/linearizability.rs (real threads) and
//! tests/shuttle_linearizability.rs (shuttle's schedulers): a recorder of
//! invocations and returns of operations on one `LogManager` partition, the
//! sequential spec they are judged against ([`SpecPartition`], the model's
//! `SpecLog` behind stateright's `SequentialSpec`) and the concurrent scenario.
//!
//! Recording: each operation takes the recorder's lock once to record its
//! invocation and once to record its return, never across the engine call, so
//! operations overlap in the history as they did in the engine.
#![allow(dead_code, reason = "each test file that includes this uses a part")]

use std::sync::Arc;

use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::manager::{CleanupPolicy, LogManager, ManagerConfig, Partition, PartitionConfig};
use seglog::sync::{lock, thread, Mutex};
use seglog::{LogConfig, ManualClock, NewRecord};
use seglog_model::spec::{
    CleanKnobs, CompactionSummary, SpecError, SpecLog, SpecRecordInput, SpecSegment,
};
use stateright::semantics::{ConsistencyTester, LinearizabilityTester, SequentialSpec};

/// The clock of every run: no record's age changes during a history.
pub const NOW_MS: i64 = 100;
/// Tombstones of the scenario (timestamp 0) are younger than this: cleaning keeps them.
pub const DELETE_RETENTION_MS: i64 = 1000;
/// Retention by size: deletes closed segments while the log holds more.
pub const RETENTION_BYTES: i64 = 300;

/// An operation on the partition, as the spec replays it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// One batch of `(key, value)` records, timestamp 0 (`value` `None`: a tombstone).
    Append(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    /// Closes the active segment.
    Roll,
    /// Every record from `from`.
    Read { from: i64 },
    /// Every record from the log start read in the same lock section.
    ReadAll,
    /// A cleaner's snapshot (`Log::clean_snapshot`): takes the cleaning.
    CleanSnapshot,
    /// The swap of the pass built from the snapshot that returned these values.
    CleanSwap {
        closed: Vec<i64>,
        active_base: i64,
        map_end: i64,
    },
    /// One retention round of the manager (by size).
    Retain,
}

/// What an operation returned (the engine's values, reduced to what the spec says).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ret {
    Appended {
        base_offset: i64,
        last_offset: i64,
    },
    Rolled {
        active_base: i64,
    },
    Records(Vec<Rec>),
    RecordsFrom {
        log_start: i64,
        records: Vec<Rec>,
    },
    OutOfRange,
    /// `None`: nothing to clean (no closed segment).
    Snapshot(Option<(Vec<i64>, i64, i64)>),
    Swapped(Summary),
    /// `None`: skipped (a cleaner held the partition).
    Retained(Option<Vec<i64>>),
    /// An engine error (the spec never returns one: such a history is not linearizable).
    Failed(String),
}

/// A record as read: offset, key, value.
pub type Rec = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

/// The engine's `CompactionReport` and the spec's `CompactionSummary` agree on these.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Summary {
    pub records_before: u64,
    pub records_after: u64,
    pub segments_before: u64,
    pub segments_after: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

impl From<&CompactionSummary> for Summary {
    fn from(s: &CompactionSummary) -> Summary {
        Summary {
            records_before: s.records_before,
            records_after: s.records_after,
            segments_before: s.segments_before,
            segments_after: s.segments_after,
            bytes_before: s.bytes_before,
            bytes_after: s.bytes_after,
        }
    }
}

/// The sequential spec: the model's log, and whether a cleaner holds it (between
/// its snapshot and its swap, where the manager's cleaning states keep retention out).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SpecPartition {
    pub log: SpecLog,
    pub cleaning: bool,
}

impl SpecPartition {
    pub fn new(segment_bytes: u64) -> SpecPartition {
        SpecPartition {
            log: SpecLog::new(segment_bytes),
            cleaning: false,
        }
    }

    fn read(&self, from: i64) -> Result<Vec<Rec>, SpecError> {
        Ok(self
            .log
            .read(from)?
            .into_iter()
            .map(|r| (r.offset, r.key, r.value))
            .collect())
    }

    /// The pass of a snapshot at `(closed, active_base, map_end)` applied now: the
    /// segments closed at the snapshot are cleaned with a map of the records below
    /// `map_end` (what the build saw); the segments from `active_base` on (the
    /// snapshot's active one and any rolled since) stay as they are.
    fn swap(&mut self, closed: &[i64], active_base: i64, map_end: i64) -> Result<Ret, SpecError> {
        let segments = self.log.raw_segments();
        let closed_now: Vec<i64> = segments
            .iter()
            .map(|s| s.base_offset)
            .filter(|b| *b < active_base)
            .collect();
        if closed_now != closed {
            // The engine aborts such a pass with an error; with the cleaning lock
            // it cannot happen.
            return Ok(Ret::Failed(
                "closed segments changed under the cleaner".into(),
            ));
        }
        let mut at_snapshot: Vec<SpecSegment> = segments
            .iter()
            .filter(|s| s.base_offset < active_base)
            .cloned()
            .collect();
        let tail: Vec<SpecSegment> = segments
            .iter()
            .filter(|s| s.base_offset >= active_base)
            .cloned()
            .collect();
        at_snapshot.push(SpecSegment {
            base_offset: active_base,
            batches: tail
                .iter()
                .flat_map(|s| s.batches.iter())
                .filter(|b| b.base_offset < map_end)
                .cloned()
                .collect(),
        });
        let start = self.log.log_start_offset();
        let mut snapshot = SpecLog::from_parts(self.log.segment_bytes(), start, at_snapshot)?;
        snapshot.set_clean_point(self.log.clean_point())?;
        let summary = snapshot.clean(NOW_MS, DELETE_RETENTION_MS, None, CleanKnobs::default())?;
        let cleaned = snapshot.raw_segments();
        let mut after: Vec<SpecSegment> = cleaned[..cleaned.len() - 1].to_vec();
        after.extend(tail);
        let mut log = SpecLog::from_parts(self.log.segment_bytes(), start, after)?;
        log.set_clean_point(snapshot.clean_point())?;
        self.log = log;
        Ok(Ret::Swapped(Summary::from(&summary)))
    }

    fn apply(&mut self, op: &Op) -> Result<Ret, SpecError> {
        Ok(match op {
            Op::Append(records) => {
                let inputs: Vec<SpecRecordInput> = records
                    .iter()
                    .map(|(k, v)| SpecRecordInput {
                        key: Some(k.clone()),
                        value: v.clone(),
                        timestamp: 0,
                    })
                    .collect();
                let (base_offset, last_offset) = self.log.append(&inputs)?;
                Ret::Appended {
                    base_offset,
                    last_offset,
                }
            }
            Op::Roll => {
                self.log.roll();
                Ret::Rolled {
                    active_base: self.log.active().base_offset,
                }
            }
            Op::Read { from } => match self.read(*from) {
                Ok(records) => Ret::Records(records),
                Err(SpecError::OffsetOutOfRange { .. }) => Ret::OutOfRange,
                Err(e) => return Err(e),
            },
            Op::ReadAll => {
                let log_start = self.log.log_start_offset();
                Ret::RecordsFrom {
                    log_start,
                    records: self.read(log_start)?,
                }
            }
            Op::CleanSnapshot => {
                let segments = self.log.raw_segments();
                if segments.len() < 2 {
                    Ret::Snapshot(None)
                } else {
                    self.cleaning = true;
                    let active = self.log.active().base_offset;
                    let closed = segments[..segments.len() - 1]
                        .iter()
                        .map(|s| s.base_offset)
                        .collect();
                    Ret::Snapshot(Some((closed, active, self.log.next_offset())))
                }
            }
            Op::CleanSwap {
                closed,
                active_base,
                map_end,
            } => {
                self.cleaning = false;
                self.swap(closed, *active_base, *map_end)?
            }
            Op::Retain => {
                if self.cleaning {
                    // The round must skip a partition a cleaner holds.
                    Ret::Retained(None)
                } else {
                    Ret::Retained(Some(self.log.retain(
                        NOW_MS,
                        None,
                        Some(RETENTION_BYTES),
                    )?))
                }
            }
        })
    }
}

impl SequentialSpec for SpecPartition {
    type Op = Op;
    type Ret = Ret;

    fn invoke(&mut self, op: &Op) -> Ret {
        self.apply(op)
            .unwrap_or_else(|e| Ret::Failed(format!("spec: {e}")))
    }

    fn is_valid_step(&mut self, op: &Op, ret: &Ret) -> bool {
        // A retention round may also skip when a cleaner took the partition's
        // cleaning state just before its snapshot: a skip changes nothing.
        if let (Op::Retain, Ret::Retained(None)) = (op, ret) {
            return true;
        }
        &self.invoke(op) == ret
    }
}

/// A history under construction; thread ids are `u8`.
pub type History = LinearizabilityTester<u8, SpecPartition>;

/// Records invocations and returns from many threads.
pub struct Recorder {
    history: Mutex<History>,
}

impl Recorder {
    pub fn new(spec: SpecPartition) -> Recorder {
        Recorder {
            history: Mutex::new(LinearizabilityTester::new(spec)),
        }
    }

    /// Records `op`'s invocation, runs `call` without the recorder's lock, and
    /// records what it returned.
    pub fn run<T>(&self, thread_id: u8, op: Op, call: impl FnOnce() -> (T, Ret)) -> T {
        lock(&self.history)
            .on_invoke(thread_id, op)
            .expect("one operation in flight per thread");
        let (out, ret) = call();
        lock(&self.history)
            .on_return(thread_id, ret)
            .expect("a return follows its invocation");
        out
    }

    /// The history so far (a copy).
    pub fn history(&self) -> History {
        lock(&self.history).clone()
    }
}

/// True if some total order of the history's operations, respecting real time, is
/// one the spec accepts.
pub fn linearizable(history: &History) -> bool {
    history.is_consistent()
}

/// The engine's broken forms the scenario can run (feature `test-variants`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Ours,
    /// The cleaner copies the active segment at its snapshot and links no tail.
    StaleTailCopy,
    /// Retention ignores the cleaning states.
    NoCleaningLock,
}

/// A small deterministic generator (xorshift) for the ops of a run.
pub struct Gen(u64);

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn err(e: seglog::Error) -> Ret {
    Ret::Failed(e.to_string())
}

fn append(p: &Partition, rec: &Recorder, thread_id: u8, records: Vec<(Vec<u8>, Option<Vec<u8>>)>) {
    let input: Vec<NewRecord> = records
        .iter()
        .map(|(k, v)| NewRecord::new(Some(k.clone()), v.clone(), 0))
        .collect();
    rec.run(thread_id, Op::Append(records), || {
        let ret = match p.append(&input) {
            Ok(info) => Ret::Appended {
                base_offset: info.base_offset,
                last_offset: info.last_offset,
            },
            Err(e) => err(e),
        };
        ((), ret)
    });
}

fn roll(p: &Partition, rec: &Recorder, thread_id: u8) {
    rec.run(thread_id, Op::Roll, || {
        let ret = match p.roll() {
            Ok(active_base) => Ret::Rolled { active_base },
            Err(e) => err(e),
        };
        ((), ret)
    });
}

fn records(read: seglog::ReadRecords) -> Vec<Rec> {
    read.into_iter()
        .map(|r| {
            (
                r.offset,
                r.key.map(|k| k.to_vec()),
                r.value.map(|v| v.to_vec()),
            )
        })
        .collect()
}

pub fn read(p: &Partition, rec: &Recorder, thread_id: u8, from: i64) {
    rec.run(thread_id, Op::Read { from }, || {
        let ret = match p.read(from, usize::MAX) {
            Ok(read) => Ret::Records(records(read)),
            Err(seglog::Error::OffsetOutOfRange { .. }) => Ret::OutOfRange,
            Err(e) => err(e),
        };
        ((), ret)
    });
}

pub fn read_all(p: &Partition, rec: &Recorder, thread_id: u8) {
    rec.run(thread_id, Op::ReadAll, || {
        let ret = p.with_log(|log| {
            let log_start = log.log_start_offset();
            match log.read(log_start, usize::MAX) {
                Ok(read) => Ret::RecordsFrom {
                    log_start,
                    records: records(read),
                },
                Err(e) => err(e),
            }
        });
        ((), ret)
    });
}

/// One cleaning as `manager::cleaner::clean_partition` does it (cleaning state,
/// snapshot under the write lock, build without it, swap under it, trash after),
/// with the snapshot and the swap recorded as two operations.
fn clean(manager: &LogManager, p: &Partition, rec: &Recorder, thread_id: u8, variant: Variant) {
    let states = manager.cleaning_states();
    if !states.begin_clean(p.name()) {
        return;
    }
    let snapshot = rec.run(thread_id, Op::CleanSnapshot, || {
        let taken = p.with_log_mut(|log| {
            let snapshot = log.clean_snapshot(
                NOW_MS,
                DELETE_RETENTION_MS,
                None,
                log.config().clean_options(),
            )?;
            let closed: Vec<i64> = log
                .segments()
                .iter()
                .map(|s| s.base_offset)
                .filter(|b| snapshot.as_ref().is_some_and(|s| *b < s.active_base()))
                .collect();
            Ok::<_, seglog::Error>(snapshot.map(|s| (s, closed)))
        });
        match taken {
            Ok(Some((snapshot, closed))) => {
                let seen = (closed.clone(), snapshot.active_base(), snapshot.map_end());
                (Some((snapshot, seen.clone())), Ret::Snapshot(Some(seen)))
            }
            Ok(None) => (None, Ret::Snapshot(None)),
            Err(e) => (None, err(e)),
        }
    });
    let Some((snapshot, (closed, active_base, map_end))) = snapshot else {
        states.end_clean(p.name());
        return;
    };
    #[cfg(feature = "test-variants")]
    let snapshot = if variant == Variant::StaleTailCopy {
        seglog::testing::variants::stale_tail_copy(snapshot)
    } else {
        snapshot
    };
    #[cfg(not(feature = "test-variants"))]
    assert_eq!(
        variant,
        Variant::Ours,
        "variants need --features test-variants"
    );
    let op = Op::CleanSwap {
        closed,
        active_base,
        map_end,
    };
    let fs = p.with_log(|log| Arc::clone(log.fs()));
    rec.run(thread_id, op, || {
        // No lock while the temp dir is built: appends and reads go on.
        let build = match snapshot.build() {
            Ok(build) => build,
            Err(e) => return ((), err(e)),
        };
        let swapped = p.with_log_mut(|log| log.clean_swap(build));
        let ret = match swapped {
            Ok(swapped) => {
                if let Some(trash) = swapped.trash {
                    trash.remove(fs.as_ref()).expect("trash removed");
                }
                let r = swapped.report;
                Ret::Swapped(Summary {
                    records_before: r.records_before,
                    records_after: r.records_after,
                    segments_before: r.segments_before,
                    segments_after: r.segments_after,
                    bytes_before: r.bytes_before,
                    bytes_after: r.bytes_after,
                })
            }
            Err(e) => err(e),
        };
        ((), ret)
    });
    states.end_clean(p.name());
}

fn retain(manager: &LogManager, rec: &Recorder, thread_id: u8) {
    rec.run(thread_id, Op::Retain, || {
        let ret = match manager.run_retention_once() {
            Ok(rounds) => {
                assert_eq!(rounds.len(), 1, "one partition");
                Ret::Retained(rounds[0].deleted_segments.clone())
            }
            Err(e) => err(e),
        };
        ((), ret)
    });
}

fn key(g: &mut Gen) -> Vec<u8> {
    vec![b'a' + g.below(3) as u8]
}

/// Thread ids of the scenario.
pub const MAIN: u8 = 0;
pub const APPENDER: u8 = 1;
pub const CLEANER: u8 = 2;
pub const RETENTION: u8 = 3;
pub const READER: u8 = 4;

/// One run: a partition filled with a few closed segments (by the main thread),
/// then an appender, a cleaner, a retention thread and a reader at once, then a
/// last read of everything. Returns the history. The ops depend on `seed`; the
/// interleaving on the scheduler.
pub fn scenario(seed: u64, variant: Variant) -> History {
    let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
    let clock = Arc::new(ManualClock::new(NOW_MS));
    let manager = LogManager::new(fs, "/data", ManagerConfig::default(), clock).unwrap();
    #[cfg(feature = "test-variants")]
    if variant == Variant::NoCleaningLock {
        seglog::testing::variants::set_no_cleaning_lock(&manager);
    }
    let config = PartitionConfig {
        log: LogConfig {
            min_cleanable_dirty_ratio: 0.0,
            ..LogConfig::default()
        },
        cleanup_policy: CleanupPolicy::CompactDelete,
        retention_bytes: Some(RETENTION_BYTES),
        delete_retention_ms: DELETE_RETENTION_MS,
        ..PartitionConfig::default()
    };
    let p = manager.create("l", 0, config).unwrap();
    let segment_bytes = p.with_log(|log| log.config().segment_bytes);
    let rec = Arc::new(Recorder::new(SpecPartition::new(segment_bytes)));
    let mut g = Gen::new(seed);
    for i in 0..4u32 {
        let k = key(&mut g);
        append(
            &p,
            &rec,
            MAIN,
            vec![(k, Some(format!("p{i}").into_bytes()))],
        );
        if g.below(2) == 0 {
            roll(&p, &rec, MAIN);
        }
    }
    roll(&p, &rec, MAIN);
    let manager = Arc::new(manager);
    let appender = {
        let (p, rec) = (p.clone(), Arc::clone(&rec));
        let mut g = Gen::new(seed ^ 0xA);
        thread::spawn(move || {
            for i in 0..3u32 {
                let k = key(&mut g);
                let value = (g.below(5) != 0).then(|| format!("a{i}").into_bytes());
                append(&p, &rec, APPENDER, vec![(k, value)]);
                if g.below(3) == 0 {
                    roll(&p, &rec, APPENDER);
                }
            }
        })
    };
    let cleaner = {
        let (manager, p, rec) = (Arc::clone(&manager), p.clone(), Arc::clone(&rec));
        thread::spawn(move || clean(&manager, &p, &rec, CLEANER, variant))
    };
    let retention = {
        let (manager, rec) = (Arc::clone(&manager), Arc::clone(&rec));
        thread::spawn(move || retain(&manager, &rec, RETENTION))
    };
    let reader = {
        let (p, rec) = (p.clone(), Arc::clone(&rec));
        let from = g.below(6) as i64;
        thread::spawn(move || {
            read(&p, &rec, READER, from);
            read_all(&p, &rec, READER);
        })
    };
    for handle in [appender, cleaner, retention, reader] {
        handle.join().unwrap();
    }
    read_all(&p, &rec, MAIN);
    rec.history()
}

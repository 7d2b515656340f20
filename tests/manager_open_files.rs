//! A `LogManager` of many partitions, each of many segments, within one
//! descriptor budget.
//!
//! The failure: every partition's log kept a descriptor open for each segment file
//! it had touched, so a manager's descriptors grew with partitions times segments
//! and a busy manager ran out of them (EMFILE) where one log would not.
//!
//! The invariant: the partitions share the manager's file system, and with it one
//! budget of cached handles (`StdFs::with_open_files_max`). Between calls, the
//! process's descriptors beyond those it had before the manager are at most
//!
//! ```text
//! budget + PARTITIONS (one writer lock each, never cached)
//!        + 3 * PARTITIONS (the active segment's .log, .index and .timeindex,
//!          pinned while they hold writes not yet synced)
//! ```
//!
//! whatever the segment count: the cache evicts only handles without unsynced
//! writes, so it holds at most the budget or the unsynced handles plus one, and
//! the engine syncs every other file it writes (a roll syncs the closed segment's
//! three, a cleaning and a checkpoint sync what they write) before it leaves it.
//! The same run with an unbounded budget holds a descriptor for every file it
//! touched, several times the bound, which shows that the count sees the
//! partitions' files. Checked after appends (some partitions flushed, some not),
//! a read of every record, a cleaning round, a retention round and more unflushed
//! appends; after the manager closes, nothing is left open.
//!
//! One test in its own target: the count is of the whole process's descriptors.
#![cfg(target_os = "linux")]

use std::sync::Arc;

use seglog::fs::{FileSystem, StdFs};
use seglog::manager::{
    CleanOutcome, CleanupPolicy, LogManager, ManagerConfig, Partition, PartitionConfig,
};
use seglog::{LogConfig, ManualClock, NewRecord};

const PARTITIONS: u32 = 40;

/// The manager's budget of cached handles in the bounded run.
const BUDGET: usize = 32;

/// Files of a partition that may hold unsynced writes at once: its active
/// segment's `.log`, `.index` and `.timeindex`.
const UNSYNCED_PER_PARTITION: usize = 3;

/// Appends per partition before the first checkpoint: about a segment each.
const ROUNDS: i64 = 10;

/// Records per appended batch, over as many keys (every batch rewrites them).
const KEYS: usize = 8;

/// Small enough that each batch of [`KEYS`] records fills a segment.
const SEGMENT_BYTES: u64 = 1024;

/// Timestamps: round `r` appends at `r * TICK_MS`.
const TICK_MS: i64 = 1000;

/// The most descriptors the design allows beyond the process's own (see the
/// module's documentation).
fn descriptors_bound(budget: usize) -> usize {
    let partitions = PARTITIONS as usize;
    budget + partitions + UNSYNCED_PER_PARTITION * partitions
}

/// How many descriptors this process has open (the listing's own included, as
/// in every count, so differences cancel it).
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn config() -> PartitionConfig {
    PartitionConfig {
        log: LogConfig {
            segment_bytes: SEGMENT_BYTES,
            min_cleanable_dirty_ratio: 0.0,
            ..LogConfig::default()
        },
        cleanup_policy: CleanupPolicy::CompactDelete,
        // The retention round at `ROUNDS * TICK_MS` deletes the first half.
        retention_ms: Some(ROUNDS / 2 * TICK_MS),
        delete_retention_ms: 0,
        ..PartitionConfig::default()
    }
}

/// One batch of [`KEYS`] records, round `round`'s values.
fn batch(round: i64) -> Vec<NewRecord> {
    (0..KEYS)
        .map(|k| {
            NewRecord::new(
                Some(format!("k{k}").into_bytes()),
                Some(format!("{round:04}{}", "v".repeat(90)).into_bytes()),
                round * TICK_MS,
            )
        })
        .collect()
}

/// Reads every record of `partition` in small steps (so every segment is read);
/// how many there are.
fn read_all(partition: &Partition) -> usize {
    let mut from = partition.log_start_offset();
    let mut records = 0;
    while let Some(last) = partition.read(from, 512).unwrap().last() {
        records += (last.offset + 1 - from) as usize;
        from = last.offset + 1;
    }
    records
}

/// Runs the workload on a manager of [`PARTITIONS`] partitions sharing one
/// `StdFs` of `budget` handles; the descriptors open at each checkpoint beyond
/// those open before the manager.
fn checkpoints(budget: usize) -> Vec<(&'static str, usize)> {
    let root = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(0));
    let before = open_descriptors();
    let net = || open_descriptors().saturating_sub(before);
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs::with_open_files_max(budget));
    let manager =
        LogManager::new(fs, root.path(), ManagerConfig::default(), clock.clone()).unwrap();
    let partitions: Vec<Partition> = (0..PARTITIONS)
        .map(|i| manager.create("t", i, config()).unwrap())
        .collect();
    let mut counts = vec![("created", net())];

    for round in 0..ROUNDS {
        for (i, partition) in partitions.iter().enumerate() {
            partition.append(&batch(round)).unwrap();
            // Every other partition is flushed now and then; the rest keep
            // unsynced appends in their active segment.
            if i % 2 == 0 && round % 3 == 0 {
                partition.flush().unwrap();
            }
        }
    }
    let segments: usize = partitions
        .iter()
        .map(|p| p.with_log(|log| log.segments().len()))
        .sum();
    assert!(
        segments >= PARTITIONS as usize * (ROUNDS as usize - 1),
        "{segments} segments: each batch should fill one"
    );
    counts.push(("appended", net()));

    for partition in &partitions {
        assert_eq!(read_all(partition), KEYS * ROUNDS as usize);
    }
    counts.push(("read", net()));

    let mut cleaned = 0;
    for _ in 0..PARTITIONS {
        let Some(round) = manager.run_cleaner_once().unwrap() else {
            break;
        };
        assert!(
            matches!(round.outcome, CleanOutcome::Cleaned(_)),
            "{round:?}"
        );
        cleaned += 1;
    }
    assert_eq!(cleaned, PARTITIONS, "every partition is cleaned once");
    counts.push(("cleaned", net()));

    clock.set_ms(ROUNDS * TICK_MS);
    let retained = manager.run_retention_once().unwrap();
    let deleted: usize = retained
        .iter()
        .filter_map(|r| r.deleted_segments.as_ref().map(Vec::len))
        .sum();
    assert!(deleted > 0, "retention deleted nothing: {retained:?}");
    counts.push(("retained", net()));

    for round in ROUNDS..ROUNDS + 3 {
        for partition in &partitions {
            partition.append(&batch(round)).unwrap();
        }
    }
    for partition in &partitions {
        assert!(read_all(partition) > 0);
    }
    counts.push(("appended and read again", net()));

    manager.close().unwrap();
    drop(partitions);
    counts.push(("closed", net()));
    counts
}

#[test]
fn a_manager_of_many_partitions_holds_its_budget() {
    let bounded = checkpoints(BUDGET);
    let unbounded = checkpoints(usize::MAX);
    let bound = descriptors_bound(BUDGET);
    eprintln!(
        "descriptors beyond the process's own, {PARTITIONS} partitions, bound {bound}: with a budget of {BUDGET} {bounded:?}; without {unbounded:?}"
    );
    for (checkpoint, open) in &bounded {
        assert!(
            *open <= bound,
            "{open} descriptors {checkpoint}, more than {bound}"
        );
    }
    assert_eq!(bounded.last(), Some(&("closed", 0)), "nothing left open");
    // The count sees the partitions' files: without a budget it passes the bound.
    let most = unbounded.iter().map(|(_, open)| *open).max().unwrap();
    assert!(most > 2 * bound, "{most} descriptors without a budget");
}

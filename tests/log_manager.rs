//! `LogManager`: partitions by name, the cleaner's choice, the cleaning
//! states shared with retention, pause/resume/abort, close.
//!
//! Invariants checked: the dirtiest cleanable partition is cleaned first (the
//! selection order, not timing); a cleaned partition, transactional data or not, is
//! not chosen again until it is dirty again; retention never deletes from a partition a cleaner
//! holds; a paused partition is not cleaned; deleting a partition aborts its
//! cleaning before the commit point and leaves no temp dir; appends from another
//! thread while the cleaner runs are never lost; `close` stops the threads and
//! writes every log's clean-shutdown marker.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::install::InstallPaths;
use seglog::manager::{
    CleanOutcome, CleaningState, CleanupPolicy, LogManager, ManagerConfig, PartitionConfig,
};
use seglog::{Log, LogConfig, ManualClock, NewRecord};

const ROOT: &str = "/data";

fn manager(fs: &Arc<SimFs>, clock: &Arc<ManualClock>) -> LogManager {
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    LogManager::new(dyn_fs, ROOT, ManagerConfig::default(), clock.clone()).unwrap()
}

fn compacted() -> PartitionConfig {
    PartitionConfig {
        log: LogConfig {
            min_cleanable_dirty_ratio: 0.0,
            ..LogConfig::default()
        },
        cleanup_policy: CleanupPolicy::Compact,
        delete_retention_ms: 1000,
        ..PartitionConfig::default()
    }
}

fn record(key: &str, value: &str, ts: i64) -> NewRecord {
    NewRecord::new(
        Some(key.as_bytes().to_vec()),
        Some(value.as_bytes().to_vec()),
        ts,
    )
}

/// Appends `segments` closed segments of `keys` keys each (rewriting the same keys).
fn fill(partition: &seglog::manager::Partition, segments: usize, keys: usize, ts: i64) {
    for s in 0..segments {
        let records: Vec<NewRecord> = (0..keys)
            .map(|k| record(&format!("k{k}"), &format!("v{s}"), ts))
            .collect();
        partition.append(&records).unwrap();
        partition.roll().unwrap();
    }
}

#[test]
fn partitions_are_created_opened_and_found_by_name() {
    let (fs, clock) = (Arc::new(SimFs::new()), Arc::new(ManualClock::new(0)));
    let manager = manager(&fs, &clock);
    let p = manager.create("orders", 0, compacted()).unwrap();
    assert_eq!(p.name(), "orders-0");
    assert!(fs.is_dir(Path::new("/data/orders-0")));
    assert!(manager.create("orders", 0, compacted()).is_err(), "exists");
    assert!(
        manager.open("orders", 1, compacted()).is_err(),
        "no such dir"
    );
    assert!(
        manager.create("../x", 0, compacted()).is_err(),
        "not a plain name"
    );
    p.append(&[record("a", "1", 0)]).unwrap();
    let again = manager.get("orders", 0).unwrap();
    assert_eq!(again.next_offset(), 1, "one log behind both handles");
    assert!(manager.get("orders", 1).is_none());
    manager.close().unwrap();

    let manager = self::manager(&fs, &clock);
    let p = manager.open("orders", 0, compacted()).unwrap();
    assert_eq!(p.read(0, usize::MAX).unwrap().len(), 1);
    manager.close().unwrap();
}

#[test]
fn the_dirtiest_partition_is_cleaned_first() {
    let (fs, clock) = (Arc::new(SimFs::new()), Arc::new(ManualClock::new(100)));
    let manager = manager(&fs, &clock);
    let partitions: Vec<_> = (0..8)
        .map(|i| manager.create("t", i, compacted()).unwrap())
        .collect();
    for p in &partitions {
        fill(p, 2, 20, 0);
    }
    // First round: every partition is all dirty (ratio 1): each is cleaned once.
    let mut first = Vec::new();
    while let Some(cleaned) = manager.run_cleaner_once().unwrap() {
        assert!(matches!(cleaned.outcome, CleanOutcome::Cleaned(_)));
        first.push(cleaned.partition);
    }
    assert_eq!(first.len(), 8);
    // Now partition i gets a dirty section whose ratio grows with a scrambled rank.
    let rank = [3, 7, 0, 5, 1, 6, 2, 4];
    for (p, r) in partitions.iter().zip(rank) {
        fill(p, 1 + r, 5, 0);
    }
    let ratios: BTreeMap<String, f64> = partitions
        .iter()
        .map(|p| {
            let c = p.with_log(|log| log.cleanable(100)).unwrap();
            (p.name().to_string(), c.dirty_ratio)
        })
        .collect();
    let mut expected: Vec<(String, f64)> = ratios.clone().into_iter().collect();
    expected.sort_by(|a, b| b.1.total_cmp(&a.1));
    let expected: Vec<String> = expected.into_iter().map(|(n, _)| n).collect();
    let mut order = Vec::new();
    while let Some(cleaned) = manager.run_cleaner_once().unwrap() {
        order.push(cleaned.partition);
    }
    assert_eq!(order, expected, "ratios {ratios:?}");
    assert_eq!(order[0], "t-1", "rank 7 is the dirtiest");
    assert_eq!(order[7], "t-2", "rank 0 is the cleanest");
    manager.close().unwrap();
}

/// [`compacted`] under `policy`.
fn compacted_by(policy: seglog::compaction::CompactionPolicy) -> PartitionConfig {
    PartitionConfig {
        log: LogConfig {
            compaction_policy: policy,
            ..compacted().log
        },
        ..compacted()
    }
}

/// The transactional producer of the open-transaction cases.
const PRODUCER: seglog::Producer = seglog::Producer {
    id: 7,
    epoch: 0,
    base_sequence: -1,
};

/// A partition whose only closed segment holds an open transaction has
/// nothing cleanable (a pass would change nothing): under both policies the
/// cleaner cleans the other partitions, dirtiest first, and never picks it.
#[test]
fn a_partition_held_by_an_open_transaction_is_never_chosen() {
    use seglog::compaction::CompactionPolicy;
    for policy in [CompactionPolicy::Seed, CompactionPolicy::Kafka] {
        let (fs, clock) = (Arc::new(SimFs::new()), Arc::new(ManualClock::new(100)));
        let manager = manager(&fs, &clock);
        let config = compacted_by(policy);
        let held = manager.create("held", 0, config.clone()).unwrap();
        held.append(&[record("a", "1", 1)]).unwrap();

        held.with_log_mut(|log| log.append_transactional(PRODUCER, &[record("b", "2", 2)]))
            .unwrap();
        held.append(&[record("a", "3", 3)]).unwrap();
        held.roll().unwrap();
        held.append(&[record("c", "4", 4)]).unwrap();
        // Two cleanable partitions: "low" cleaned once, then a smaller dirty section.
        let low = manager.create("low", 0, config.clone()).unwrap();
        let high = manager.create("high", 0, config).unwrap();
        fill(&low, 2, 20, 0);
        fill(&high, 2, 20, 0);
        let mut order = Vec::new();
        for _ in 0..6 {
            let Some(cleaned) = manager.run_cleaner_once().unwrap() else {
                break;
            };
            order.push(cleaned.partition);
        }
        assert_eq!(order.len(), 2, "{policy:?}: {order:?}");
        assert!(
            !order.contains(&"held-0".to_string()),
            "{policy:?}: {order:?}"
        );
        fill(&low, 1, 5, 0);
        fill(&high, 3, 5, 0);
        let ratio = |p: &seglog::manager::Partition| {
            p.with_log(|log| log.cleanable(100)).unwrap().dirty_ratio
        };
        assert!(ratio(&high) > ratio(&low), "{policy:?}");
        assert_eq!(ratio(&held), 0.0, "{policy:?}");
        let mut order = Vec::new();
        for _ in 0..6 {
            let Some(cleaned) = manager.run_cleaner_once().unwrap() else {
                break;
            };
            assert!(matches!(cleaned.outcome, CleanOutcome::Cleaned(_)));
            order.push(cleaned.partition);
        }
        assert_eq!(order, ["high-0", "low-0"], "{policy:?}");
        manager.close().unwrap();
    }
}

/// A regression case: a `seed` pass that puts the clean point of a log holding
/// transactional data back at the log start makes the cleaner choose that
/// partition again every round.
/// A partition with a committed transaction in its closed segment and an open one
/// in its active segment is cleaned once beside a plain one; then neither is chosen
/// until new data makes the plain one dirty, and the transactional one is not
/// chosen with it.
#[test]
fn a_cleaned_partition_with_transactions_is_not_chosen_again() {
    use seglog::compaction::CompactionPolicy;
    use seglog::ControlKind;
    for policy in [CompactionPolicy::Seed, CompactionPolicy::Kafka] {
        let (fs, clock) = (Arc::new(SimFs::new()), Arc::new(ManualClock::new(100)));
        let manager = manager(&fs, &clock);
        let config = compacted_by(policy);
        let txn = manager.create("txn", 0, config.clone()).unwrap();

        txn.append(&[record("a", "1", 1)]).unwrap();
        txn.with_log_mut(|log| log.append_transactional(PRODUCER, &[record("b", "2", 2)]))
            .unwrap();
        txn.with_log_mut(|log| log.append_control(ControlKind::Commit, 7, 0, 2))
            .unwrap();
        txn.append(&[record("a", "3", 3)]).unwrap();
        txn.roll().unwrap();
        txn.with_log_mut(|log| log.append_transactional(PRODUCER, &[record("e", "5", 5)]))
            .unwrap(); // open: the last stable offset, the active base
        txn.append(&[record("f", "6", 6)]).unwrap();
        let plain = manager.create("plain", 0, config).unwrap();
        fill(&plain, 2, 20, 0);
        let mut order = Vec::new();
        for _ in 0..6 {
            let Some(cleaned) = manager.run_cleaner_once().unwrap() else {
                break;
            };
            assert!(matches!(cleaned.outcome, CleanOutcome::Cleaned(_)));
            order.push(cleaned.partition);
        }
        order.sort();
        assert_eq!(order, ["plain-0", "txn-0"], "{policy:?}: each once");
        let ratio = |p: &seglog::manager::Partition| {
            p.with_log(|log| log.cleanable(100)).unwrap().dirty_ratio
        };
        assert_eq!(ratio(&txn), 0.0, "{policy:?}");
        fill(&plain, 3, 5, 0);
        let mut order = Vec::new();
        for _ in 0..6 {
            let Some(cleaned) = manager.run_cleaner_once().unwrap() else {
                break;
            };
            order.push(cleaned.partition);
        }
        assert_eq!(order, ["plain-0"], "{policy:?}");
        manager.close().unwrap();
    }
}

#[test]
fn retention_skips_a_partition_a_cleaner_holds_and_cleaning_skips_a_paused_one() {
    let (fs, clock) = (Arc::new(SimFs::new()), Arc::new(ManualClock::new(10_000)));
    let manager = manager(&fs, &clock);
    let config = PartitionConfig {
        cleanup_policy: CleanupPolicy::CompactDelete,
        retention_ms: Some(1000),
        ..compacted()
    };
    let p = manager.create("r", 0, config).unwrap();
    fill(&p, 3, 4, 0);
    let states = manager.cleaning_states();
    assert!(states.begin_clean("r-0"));
    let round = manager.run_retention_once().unwrap();
    assert_eq!(round[0].deleted_segments, None, "skipped while cleaned");
    assert_eq!(p.log_start_offset(), 0);
    assert_eq!(
        manager.run_cleaner_once().unwrap(),
        None,
        "one cleaner at a time"
    );
    states.end_clean("r-0");

    manager.pause_cleaning("r", 0).unwrap();
    assert_eq!(
        manager.cleaning_state("r", 0).unwrap(),
        CleaningState::Paused(1)
    );
    assert_eq!(manager.run_cleaner_once().unwrap(), None, "paused");
    let round = manager.run_retention_once().unwrap();
    assert_eq!(round[0].deleted_segments.as_ref().map(Vec::len), Some(3));
    assert_eq!(
        manager.cleaning_state("r", 0).unwrap(),
        CleaningState::Paused(1)
    );
    manager.resume_cleaning("r", 0).unwrap();
    assert_eq!(manager.cleaning_state("r", 0).unwrap(), CleaningState::Idle);
    assert!(manager.resume_cleaning("r", 0).is_err());
    manager.close().unwrap();
}

#[test]
fn deleting_a_partition_aborts_its_cleaning_before_the_commit_point() {
    let (fs, clock) = (Arc::new(SimFs::new()), Arc::new(ManualClock::new(100)));
    let manager = Arc::new(manager(&fs, &clock));
    let p = manager.create("d", 0, compacted()).unwrap();
    fill(&p, 3, 4, 0);
    let states = manager.cleaning_states();
    assert!(states.begin_clean("d-0"));
    let deleter = {
        let manager = Arc::clone(&manager);
        std::thread::spawn(move || manager.delete_partition("d", 0))
    };
    while states.get("d-0") != CleaningState::Aborted {
        std::thread::yield_now();
    }
    let outcome = seglog::manager::clean_partition(&p, states, 100).unwrap();
    assert_eq!(outcome, CleanOutcome::Aborted);
    let paths = InstallPaths::new(Path::new("/data/d-0")).unwrap();
    assert!(!fs.exists(&paths.tmp) && !fs.exists(&paths.manifest));
    states.end_clean("d-0");
    deleter.join().unwrap().unwrap();
    assert!(!fs.exists(Path::new("/data/d-0")));
    assert!(manager.get("d", 0).is_none());
    assert_eq!(states.get("d-0"), CleaningState::Idle);
}

#[test]
fn appends_from_another_thread_survive_concurrent_cleanings() {
    let (fs, clock) = (Arc::new(SimFs::new()), Arc::new(ManualClock::new(100)));
    let manager = manager(&fs, &clock);
    let config = PartitionConfig {
        log: LogConfig {
            segment_bytes: 2048,
            min_cleanable_dirty_ratio: 0.0,
            ..LogConfig::default()
        },
        ..compacted()
    };
    let p = manager.create("c", 0, config).unwrap();
    // Cleanings finished so far. Halfway through, the appender waits for the first
    // one, so a cleaning always overlaps the appends, however the threads are
    // scheduled (without the wait, a busy scheduler can let the appender finish all
    // 1,500 appends before the cleaner's first turn).
    let cleanings = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let appender = {
        let p = p.clone();
        let cleanings = Arc::clone(&cleanings);
        std::thread::spawn(move || {
            let mut acked = BTreeMap::new();
            for i in 0..1500 {
                if i == 750 {
                    while cleanings.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                        std::thread::yield_now();
                    }
                }
                // Keys rewritten often (cleanable) and some written once.
                let key = if i % 3 == 0 {
                    format!("u{i}")
                } else {
                    format!("k{}", i % 7)
                };
                let info = p.append(&[record(&key, &format!("v{i}"), 0)]).unwrap();
                acked.insert(key, (info.base_offset, format!("v{i}")));
            }
            acked
        })
    };
    let mut cleaned = 0;
    while !appender.is_finished() {
        if let Some(c) = manager.run_cleaner_once().unwrap() {
            assert!(matches!(
                c.outcome,
                CleanOutcome::Cleaned(_) | CleanOutcome::NothingToClean
            ));
            cleaned += 1;
            cleanings.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        // A reader sees a consistent log at every moment: offsets ascending.
        let offsets: Vec<i64> = p
            .read(p.log_start_offset(), usize::MAX)
            .unwrap()
            .iter()
            .map(|r| r.offset)
            .collect();
        assert!(offsets.windows(2).all(|w| w[0] < w[1]));
    }
    let acked = appender.join().unwrap();
    assert!(cleaned > 0, "the cleaner ran during the appends");
    let latest: BTreeMap<String, (i64, String)> = p
        .read(0, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|r| {
            let key = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
            let value = String::from_utf8(r.value.unwrap().to_vec()).unwrap();
            (key, (r.offset, value))
        })
        .collect();
    assert_eq!(
        latest, acked,
        "the latest record of every key is the acknowledged one"
    );
    manager.close().unwrap();
}

#[test]
fn close_stops_the_threads_and_closes_every_log_cleanly() {
    let (fs, clock) = (Arc::new(SimFs::new()), Arc::new(ManualClock::new(100)));
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let config = ManagerConfig {
        cleaner_threads: 2,
        retention_check_interval_ms: 1,
        cleaner_backoff_ms: 1,
        cleaner_backoff_ms_max: 4,
    };
    let mut manager = LogManager::new(dyn_fs.clone(), ROOT, config, clock.clone()).unwrap();
    let p = manager.create("s", 0, compacted()).unwrap();
    fill(&p, 3, 4, 0);
    manager.start();
    // The background cleaner cleans it (polled; no timing is asserted).
    let deadline = Instant::now() + Duration::from_secs(60);
    while p.with_log(|log| log.clean_point()).unwrap() == 0 {
        assert!(
            Instant::now() < deadline,
            "the cleaner thread never cleaned"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    manager.close().unwrap();
    let (_, report) = Log::open_with(dyn_fs, "/data/s-0", compacted().log).unwrap();
    assert!(report.clean_shutdown, "{report:?}");
    assert_eq!(report.scanned_segments, 0);
}

/// A partition whose own options cannot clean it (a map budget of two keys, a
/// batch of five distinct keys) is reported `Uncleanable` once, changes nothing,
/// and is passed over after that: the cleaner goes on with the next dirtiest
/// partition instead of failing on the same one every round.
#[test]
fn a_partition_its_own_options_cannot_clean_is_passed_over() {
    let (fs, clock) = (Arc::new(SimFs::new()), Arc::new(ManualClock::new(100)));
    let manager = manager(&fs, &clock);
    let tight = PartitionConfig {
        log: LogConfig {
            dedupe_buffer_bytes: Some(2 * 24),
            ..compacted().log
        },
        ..compacted()
    };
    // Both all dirty (ratio 1): the tie goes to the first name, the stuck one.
    let stuck = manager.create("a", 0, tight).unwrap();
    let other = manager.create("b", 0, compacted()).unwrap();
    fill(&stuck, 3, 5, 0);
    fill(&other, 3, 5, 0);
    let before = stuck.with_log(|log| log.read(0, usize::MAX)).unwrap();
    let mut outcomes = Vec::new();
    for _ in 0..4 {
        let Some(cleaned) = manager.run_cleaner_once().unwrap() else {
            break;
        };
        outcomes.push((cleaned.partition, cleaned.outcome));
    }
    assert_eq!(outcomes.len(), 2, "{outcomes:?}");
    assert!(
        matches!(&outcomes[0], (name, CleanOutcome::Uncleanable { reason })
            if name == "a-0" && reason.contains("offset map")),
        "{outcomes:?}"
    );
    assert!(
        matches!(&outcomes[1], (name, CleanOutcome::Cleaned(_)) if name == "b-0"),
        "{outcomes:?}"
    );
    assert_eq!(
        stuck.with_log(|log| log.read(0, usize::MAX)).unwrap(),
        before
    );
    assert!(manager.uncleanable_partitions().contains_key("a-0"));
    manager.close().unwrap();
}

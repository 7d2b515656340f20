//! The manager's synchronisation under a controlled scheduler (the `shuttle` crate):
//! an appender, a cleaner, a retention thread and a reader on one SimFs-backed
//! partition, thousands of schedules of `check_random` and `check_pct`.
//!
//! Invariants checked (inside the threads and at the end of each schedule): no
//! cleaning round fails; a reader sees offsets ascending and every record whole
//! (its value names its key); retention deletes only while no cleaner holds the
//! partition (an assertion in `manager::retention`); at the end the latest record
//! of every key not below the log start is the last one acknowledged for it.
//! Teeth: the refuted variant `no-cleaning-lock` (retention ignores the cleaning
//! states) fails under a fixed seed.
//!
//! Run: `RUSTFLAGS="--cfg shuttle" CARGO_TARGET_DIR=target/shuttle cargo test
//! --features test-variants --test shuttle_partition` (the cfg swaps `engine/src/sync.rs`
//! to shuttle's primitives; a separate target dir keeps the normal build's cache).
//! `SEGLOG_SHUTTLE_ITERATIONS` sets the schedules per scheduler (default 1000).
#![cfg(shuttle)]

use std::collections::BTreeMap;
use std::sync::Arc;

use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::manager::{CleanupPolicy, LogManager, ManagerConfig, PartitionConfig};
use seglog::sync::{thread, Mutex};
use seglog::{LogConfig, ManualClock, NewRecord};

fn iterations() -> usize {
    std::env::var("SEGLOG_SHUTTLE_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

fn record(key: &str, i: u32) -> NewRecord {
    NewRecord::new(
        Some(key.as_bytes().to_vec()),
        Some(format!("{key}:{i}").into_bytes()),
        0,
    )
}

/// key -> (offset, value) of the last acknowledged append.
type Acked = Arc<Mutex<BTreeMap<String, (i64, String)>>>;

fn append(p: &seglog::manager::Partition, acked: &Acked, key: &str, i: u32) {
    // The ack is recorded under the same lock order every time: append, then note.
    let info = p.append(&[record(key, i)]).expect("append");
    seglog::sync::lock(acked).insert(key.to_string(), (info.base_offset, format!("{key}:{i}")));
}

fn scenario(no_cleaning_lock: bool) {
    let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
    let clock = Arc::new(ManualClock::new(100));
    let manager = LogManager::new(fs, "/data", ManagerConfig::default(), clock).unwrap();
    #[cfg(feature = "test-variants")]
    if no_cleaning_lock {
        seglog::testing::variants::set_no_cleaning_lock(&manager);
    }
    #[cfg(not(feature = "test-variants"))]
    assert!(
        !no_cleaning_lock,
        "the variant needs --features test-variants"
    );
    let config = PartitionConfig {
        log: LogConfig {
            min_cleanable_dirty_ratio: 0.0,
            ..LogConfig::default()
        },
        cleanup_policy: CleanupPolicy::CompactDelete,
        retention_bytes: Some(200),
        delete_retention_ms: 1000,
        ..PartitionConfig::default()
    };
    let p = manager.create("s", 0, config).unwrap();
    let acked: Acked = Arc::new(Mutex::new(BTreeMap::new()));
    for (i, key) in ["a", "b", "a", "c", "b", "a"].into_iter().enumerate() {
        append(&p, &acked, key, i as u32);
        if i % 2 == 1 {
            p.roll().unwrap();
        }
    }
    let manager = Arc::new(manager);
    let appender = {
        let (p, acked) = (p.clone(), Arc::clone(&acked));
        thread::spawn(move || {
            append(&p, &acked, "a", 10);
            append(&p, &acked, "d", 11);
            p.roll().unwrap();
            append(&p, &acked, "b", 12);
        })
    };
    let cleaner = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            let round = manager.run_cleaner_once();
            assert!(round.is_ok(), "a cleaning round failed: {round:?}");
        })
    };
    let retention = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            manager.run_retention_once().expect("retention");
        })
    };
    let reader = {
        let p = p.clone();
        thread::spawn(move || {
            let records = p
                .with_log(|log| log.read(log.log_start_offset(), usize::MAX))
                .expect("read");
            assert!(records.windows(2).all(|w| w[0].offset < w[1].offset));
            for r in &records {
                let key = String::from_utf8(r.key.clone().unwrap().to_vec()).unwrap();
                let value = String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap();
                assert!(value.starts_with(&format!("{key}:")), "{key} = {value}");
            }
        })
    };
    for handle in [appender, cleaner, retention, reader] {
        handle.join().unwrap();
    }
    let start = p.log_start_offset();
    let latest: BTreeMap<String, (i64, String)> = p
        .read(start, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|r| {
            let key = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
            let value = String::from_utf8(r.value.unwrap().to_vec()).unwrap();
            (key, (r.offset, value))
        })
        .collect();
    for (key, (offset, value)) in seglog::sync::lock(&acked).iter() {
        if *offset >= start {
            assert_eq!(
                latest.get(key),
                Some(&(*offset, value.clone())),
                "acknowledged {key}@{offset} lost"
            );
        }
    }
}

#[test]
fn random_schedules_keep_every_acknowledged_record() {
    shuttle::check_random(|| scenario(false), iterations());
}

#[test]
fn pct_schedules_keep_every_acknowledged_record() {
    shuttle::check_pct(|| scenario(false), iterations(), 3);
}

/// Teeth: with retention free to delete while a cleaner builds, some schedule
/// fails (a fixed seed makes it the same schedules every run).
#[cfg(feature = "test-variants")]
#[test]
fn retention_without_the_cleaning_lock_is_caught() {
    use shuttle::scheduler::RandomScheduler;
    use shuttle::{Config, Runner};
    let caught = std::panic::catch_unwind(|| {
        let scheduler = RandomScheduler::new_from_seed(7, iterations());
        Runner::new(scheduler, Config::default()).run(|| scenario(true));
    });
    assert!(caught.is_err(), "no schedule caught no-cleaning-lock");
}

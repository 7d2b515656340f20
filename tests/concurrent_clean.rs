//! Cleaning while appends go on (docs/design.md section 6 "Concurrent
//! cleaning"): snapshot, build without the log, swap under the log's lock.
//!
//! Invariants checked: records appended (and segments rolled) between the build and
//! the swap are all in the log after the swap and after a reopen; the pass's map
//! ends at the snapshot's `next_offset` (a key rewritten after the snapshot does not
//! drop its older record in this pass, the next pass does); the result equals the
//! spec's `compact` on the snapshot followed by the appends; a leftover
//! `D.compact-trash` is removed by the next open; a retention between build and
//! swap aborts the pass (temp dir removed, log usable). With `test-variants`, the
//! broken swaps `stale-tail-copy` and `unlocked-swap` lose acknowledged records.

use std::path::Path;
use std::sync::Arc;

use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::install::InstallPaths;
use seglog::{Error, Log, LogConfig, NewRecord};
use seglog_model::spec::SpecLog;
use seglog_suite::workload::{engine, spec, Op, RecordSpec};

const DIR: &str = "/data/log";

fn config() -> LogConfig {
    LogConfig {
        index_interval_bytes: 64,
        ..LogConfig::default()
    }
}

fn rec(key: &str, value: &str, ts: i64) -> RecordSpec {
    RecordSpec {
        key: Some(key.into()),
        value: Some(value.into()),
        ts,
    }
}

/// Two closed segments and an active one, through the engine and the spec.
fn prepare() -> (Arc<SimFs>, Log, SpecLog) {
    let fs = Arc::new(SimFs::new());
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let (mut log, _) = Log::open_with(dyn_fs, DIR, config()).unwrap();
    let mut spec = SpecLog::new(config().segment_bytes);
    let ops = [
        Op::append(vec![rec("a", "1", 0), rec("b", "1", 1)]),
        Op::Roll,
        Op::append(vec![rec("a", "2", 2), rec("c", "1", 3)]),
        Op::Roll,
        Op::append(vec![rec("b", "2", 4)]),
    ];
    for op in &ops {
        engine::apply(&mut log, op).unwrap();
        spec::apply(&mut spec, op);
    }
    (fs, log, spec)
}

fn append(log: &mut Log, key: &str, value: &str, ts: i64) {
    log.append(&[NewRecord::new(
        Some(key.as_bytes().to_vec()),
        Some(value.as_bytes().to_vec()),
        ts,
    )])
    .unwrap();
}

fn values(log: &Log) -> Vec<(i64, String)> {
    log.read(log.log_start_offset(), usize::MAX)
        .unwrap()
        .into_iter()
        .map(|r| {
            let value = r.value.map(|v| String::from_utf8(v.to_vec()).unwrap());
            (r.offset, value.unwrap_or_default())
        })
        .collect()
}

fn siblings(fs: &SimFs) -> Vec<String> {
    let paths = InstallPaths::new(Path::new(DIR)).unwrap();
    [
        &paths.tmp,
        &paths.backup,
        &paths.trash,
        &paths.manifest,
        &paths.manifest_tmp,
    ]
    .into_iter()
    .filter(|p| fs.exists(p))
    .map(|p| p.display().to_string())
    .collect()
}

fn reopen(fs: &Arc<SimFs>, log: Log) -> Log {
    log.close().unwrap();
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    Log::open_with(dyn_fs, DIR, config()).unwrap().0
}

#[test]
fn appends_and_a_roll_during_the_build_survive_the_swap() {
    let (fs, mut log, mut expected) = prepare();
    let snapshot = log
        .clean_snapshot(10, 1000, None, log.config().clean_options())
        .unwrap()
        .expect("two closed segments");
    assert_eq!(snapshot.map_end(), 5);
    let build = snapshot.build().unwrap();
    // The writer goes on while the temp dir waits for its swap.
    append(&mut log, "t0", "w0", 10);
    append(&mut log, "t1", "w1", 10);
    log.roll().unwrap();
    append(&mut log, "t0", "w2", 10);
    let swapped = log.clean_swap(build).unwrap();
    assert!(swapped.report.records_after < swapped.report.records_before);
    let trash = swapped.trash.expect("installed");
    assert!(
        fs.exists(trash.path()),
        "the old content waits in the trash"
    );
    trash.remove(&*fs).unwrap();
    assert!(siblings(&fs).is_empty(), "{:?}", siblings(&fs));

    // The spec: `compact` on the snapshot's log, then the same appends.
    expected.compact(10, 1000, None).unwrap();
    let op = |records| Op::append(records);
    spec::apply(&mut expected, &op(vec![rec("t0", "w0", 10)]));
    spec::apply(&mut expected, &op(vec![rec("t1", "w1", 10)]));
    expected.roll();
    spec::apply(&mut expected, &op(vec![rec("t0", "w2", 10)]));
    assert_eq!(engine::view(&log).unwrap(), spec::view(&expected));
    let tail: Vec<_> = values(&log).into_iter().filter(|(o, _)| *o >= 5).collect();
    assert_eq!(
        tail,
        vec![(5, "w0".into()), (6, "w1".into()), (7, "w2".into())]
    );
    // The linked tail is the live log's own files: appends after the swap land.
    append(&mut log, "t1", "w3", 11);
    let log = reopen(&fs, log);
    assert_eq!(values(&log).last(), Some(&(8, "w3".to_string())));
    assert_eq!(log.next_offset(), 9);
}

#[test]
fn the_map_ends_at_the_snapshot() {
    let (_fs, mut log, _) = prepare();
    let snapshot = log
        .clean_snapshot(10, 1000, None, log.config().clean_options())
        .unwrap()
        .unwrap();
    // `c` is rewritten after the snapshot, before the build reads the active
    // segment (a concurrent writer): this pass must keep c=1 (offset 3).
    append(&mut log, "c", "2", 10);
    log.flush().unwrap(); // in the file the build reads
    let build = snapshot.build().unwrap();
    log.clean_swap(build)
        .unwrap()
        .trash
        .unwrap()
        .remove(log.fs().as_ref())
        .unwrap();
    assert!(values(&log).contains(&(3, "1".to_string())));
    // The next pass maps it and drops it.
    log.roll().unwrap();
    log.compact(20, 1000, None).unwrap();
    assert!(!values(&log).contains(&(3, "1".to_string())));
    assert!(values(&log).contains(&(5, "2".to_string())));
}

#[test]
fn a_leftover_trash_is_removed_by_the_next_open() {
    let (fs, mut log, _) = prepare();
    let before = engine::view(&log).unwrap();
    let snapshot = log
        .clean_snapshot(10, 1000, None, log.config().clean_options())
        .unwrap()
        .unwrap();
    let build = snapshot.build().unwrap();
    let trash = log.clean_swap(build).unwrap().trash.unwrap();
    let trash_path = trash.path().to_path_buf();
    drop(trash); // the process stops before step f
    assert!(fs.exists(&trash_path));
    let after = engine::view(&log).unwrap();
    assert_eq!(after.records.len() + 2, before.records.len());
    let log = reopen(&fs, log);
    assert!(!fs.exists(&trash_path));
    assert!(siblings(&fs).is_empty(), "{:?}", siblings(&fs));
    assert_eq!(engine::view(&log).unwrap(), after);
}

#[test]
fn a_retention_between_build_and_swap_aborts_the_pass() {
    let (fs, mut log, _) = prepare();
    let snapshot = log
        .clean_snapshot(10, 1000, None, log.config().clean_options())
        .unwrap()
        .unwrap();
    let build = snapshot.build().unwrap();
    let before = engine::view(&log).unwrap();
    let deleted = log.retain(100, Some(97), None).unwrap();
    assert_eq!(deleted.deleted_segments.len(), 1);
    let retained = engine::view(&log).unwrap();
    assert_ne!(retained, before);
    match log.clean_swap(build) {
        Err(Error::InvalidArgument(reason)) => assert!(reason.contains("aborted"), "{reason}"),
        other => panic!("expected an aborted pass, got {other:?}"),
    }
    assert!(siblings(&fs).is_empty(), "{:?}", siblings(&fs));
    assert_eq!(engine::view(&log).unwrap(), retained);
    append(&mut log, "d", "1", 12);
}

/// The broken swaps lose records the log acknowledged (the sweep catches them in
/// every crash state too: `tests/sweep_teeth.rs`).
#[cfg(feature = "test-variants")]
#[test]
fn broken_swaps_lose_acknowledged_records() {
    let op = Op::CleanWithAppends {
        now: 10,
        delete_retention_ms: 1000,
        records: 3,
        roll: true,
        appends_at: None,
    };
    for (variant, caught) in [
        ("manifest", false),
        ("stale-tail-copy", true),
        ("unlocked-swap", true),
    ] {
        let (fs, mut log, mut expected) = prepare();
        engine::apply_with(&mut log, &op, engine::Variant::parse(variant).unwrap()).unwrap();
        spec::apply(&mut expected, &op);
        let log = reopen(&fs, log);
        let lost = engine::view(&log).unwrap() != spec::view(&expected);
        assert_eq!(lost, caught, "{variant}");
        if caught {
            assert!(log.next_offset() < expected.next_offset(), "{variant}");
        }
    }
}

/// A log with transactions cleaned concurrently: the build rewrites the closed
/// segments' `.txnindex` under the transaction rules, and an abort appended after
/// the snapshot (its `.txnindex` entry in the tail) comes with the tail at the swap.
#[test]
fn an_abort_appended_during_the_build_keeps_its_txnindex() {
    use seglog::format::filename::{self, TXN_INDEX_SUFFIX};
    use seglog::{ControlKind, Isolation, Producer};
    let fs = Arc::new(SimFs::new());
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let (mut log, _) = Log::open_with(dyn_fs, DIR, config()).unwrap();
    let record = |key: &str, value: &str| {
        [NewRecord::new(
            Some(key.as_bytes().to_vec()),
            Some(value.as_bytes().to_vec()),
            1,
        )]
    };
    log.append_transactional(Producer::new(7, 0), &record("a", "committed"))
        .unwrap();
    log.append_control(ControlKind::Commit, 7, 0, 1).unwrap();
    log.append_transactional(Producer::new(8, 0), &record("a", "aborted-early"))
        .unwrap();
    log.append_control(ControlKind::Abort, 8, 0, 1).unwrap();
    log.roll().unwrap();
    log.append_transactional(Producer::new(7, 0), &record("b", "committed"))
        .unwrap();
    log.append_control(ControlKind::Commit, 7, 0, 1).unwrap();
    log.roll().unwrap();
    let committed = |log: &Log| -> Vec<(i64, String)> {
        log.read_with(log.log_start_offset(), usize::MAX, Isolation::ReadCommitted)
            .unwrap()
            .into_iter()
            .map(|r| {
                (
                    r.offset,
                    String::from_utf8(r.value.unwrap().to_vec()).unwrap(),
                )
            })
            .collect()
    };
    let snapshot = log
        .clean_snapshot(10, 1000, None, log.config().clean_options())
        .unwrap()
        .expect("two closed segments");
    let tail_base = log.next_offset();
    let build = snapshot.build().unwrap();
    log.append_transactional(Producer::new(9, 0), &record("a", "aborted-late"))
        .unwrap();
    log.append_control(ControlKind::Abort, 9, 0, 1).unwrap();
    let tail_txn_index = Path::new(DIR).join(filename::build(tail_base, TXN_INDEX_SUFFIX));
    assert!(fs.exists(&tail_txn_index), "the abort wrote its entry");
    let before = committed(&log);
    log.clean_swap(build).unwrap();
    assert!(
        fs.exists(&tail_txn_index),
        "the tail's .txnindex came with it"
    );
    assert_eq!(committed(&log), before);
    assert_eq!(
        before.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>(),
        ["committed", "committed"]
    );
    let log = reopen(&fs, log);
    assert_eq!(committed(&log), before);
}

/// The kafka policy's build under a snapshot: the active segment is left to the
/// swap like the seed policy's (its appends during the build survive), and what
/// the snapshot's closed segments held is cleaned by Kafka's rules (keyless dropped).
#[test]
fn a_kafka_policy_pass_takes_the_same_tail() {
    let fs = Arc::new(SimFs::new());
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let config = LogConfig {
        compaction_policy: seglog::compaction::CompactionPolicy::Kafka,
        ..config()
    };
    let (mut log, _) = Log::open_with(dyn_fs, DIR, config).unwrap();
    append(&mut log, "a", "1", 0);
    log.append(&[NewRecord::new(None, Some(b"keyless".to_vec()), 1)])
        .unwrap();
    append(&mut log, "a", "2", 2);
    log.roll().unwrap();
    append(&mut log, "b", "1", 3);
    let snapshot = log
        .clean_snapshot(10, 1000, None, log.config().clean_options())
        .unwrap()
        .expect("a closed segment");
    let build = snapshot.build().unwrap();
    append(&mut log, "b", "2", 10);
    log.roll().unwrap();
    append(&mut log, "c", "1", 11);
    let swapped = log.clean_swap(build).unwrap();
    assert_eq!(swapped.report.keyless_dropped, 1);
    if let Some(trash) = swapped.trash {
        trash.remove(&*fs).unwrap();
    }
    let want = vec![
        (2, "2".to_string()),
        (3, "1".to_string()),
        (4, "2".to_string()),
        (5, "1".to_string()),
    ];
    assert_eq!(values(&log), want);
    let log = reopen(&fs, log);
    assert_eq!(values(&log), want);
    assert!(siblings(&fs).is_empty(), "{:?}", siblings(&fs));
}

/// A second pass whose snapshot's closed segments hold the keys its appends
/// rewrite (`t0`, `t1`: `workload::clean_with_appends_steps`), run under `variant`
/// with the appends before call `at` of its build (the deterministic interleaving
/// of the crash sweep): whether the engine's log equals the spec's after it and
/// after a reopen, and whether the appends ran during the build.
fn second_pass_with_appends_at(variant: &str, at: u64) -> (bool, bool, bool) {
    let (fs, mut log, mut expected) = prepare();
    let variant = engine::Variant::parse(variant).unwrap();
    let first = Op::CleanWithAppends {
        now: 10,
        delete_retention_ms: 1000,
        records: 3,
        roll: true,
        appends_at: None,
    };
    for op in [first, Op::Roll] {
        engine::apply_with(&mut log, &op, variant).unwrap();
        spec::apply(&mut expected, &op);
    }
    let (_, during) =
        engine::clean_with_appends(&mut log, 2000, 1000, 2, true, Some(at), variant).unwrap();
    spec::apply(
        &mut expected,
        &Op::CleanWithAppends {
            now: 2000,
            delete_retention_ms: 1000,
            records: 2,
            roll: true,
            appends_at: Some(at),
        },
    );
    let equal = engine::view(&log).unwrap() == spec::view(&expected);
    let log = reopen(&fs, log);
    let equal_reopened = engine::view(&log).unwrap() == spec::view(&expected);
    (equal, equal_reopened, during)
}

/// Every interleaving of the appender with the build, at the granularity of the
/// build's file-system calls: the appends (a key the snapshot's segments hold
/// rewritten, and a roll) before each call of the build leave exactly the spec's
/// log, before and after a reopen.
#[test]
fn appends_before_every_call_of_the_build_give_the_spec() {
    let mut interleavings = 0;
    for at in 0.. {
        let (equal, equal_reopened, during) = second_pass_with_appends_at("manifest", at);
        assert!(equal && equal_reopened, "appends before build call {at}");
        if !during {
            break;
        }
        interleavings += 1;
    }
    // The build of two closed segments creates, writes and syncs several files.
    assert!(interleavings >= 6, "only {interleavings} build calls");
}

/// `unbounded-map` (the build maps the active segment to its end as it finds it)
/// is invisible when the appends come after the build, and caught when they come
/// during it: the interleaving is what finds it.
#[cfg(feature = "test-variants")]
#[test]
fn a_build_that_maps_past_its_snapshot_is_caught_only_by_interleaving() {
    let (equal, _, during) = second_pass_with_appends_at("unbounded-map", u64::MAX);
    assert!(!during);
    assert!(equal, "appends after the build cannot show it");
    let caught = (0..64).any(|at| {
        let (equal, equal_reopened, during) = second_pass_with_appends_at("unbounded-map", at);
        during && !(equal && equal_reopened)
    });
    assert!(caught, "no interleaving caught unbounded-map");
}

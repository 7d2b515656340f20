//! Fail-point crash tests for the retention, compaction and install paths.
//!
//! Invariants checked: for every fail point on these paths, the `seglog` binary
//! (built with `--features failpoints`) running `retain` or `compact`, crashed there
//! (`FAILPOINTS=<name>=return` aborts at once, like `kill -9`), leaves a directory
//! that the next `Log::open` turns into exactly the old or the new content as the
//! reference spec (`seglog_model::spec::SpecLog`) computes it: same
//! `log_start_offset`, `next_offset`, segment metadata and records, with no sibling
//! directory, manifest, temp checkpoint or unknown file left. Crashing the recovery
//! itself (`seglog recover`), then opening again, ends the same way. The test fails
//! if some fail point on these paths is never crashed at.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use seglog::fs::failpoint::{self as fp, ALL};
use seglog::fs::{FileSystem, StdFs};
use seglog::install::{InstallCase, InstallPaths};
use seglog::{Log, LogConfig};
use seglog_model::spec::SpecLog;

mod cleanup_support;
use cleanup_support::{apply_steps, seed_retention_steps, siblings, Rec};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Retain,
    Compact,
    /// A compaction after an incremental pass wrote key summaries and a dirty key
    /// touched one segment: the untouched ones are hard-linked.
    Carry,
}

/// The steps that build the log before the crashed operation.
fn workload(op: Op) -> Vec<Option<Vec<Rec>>> {
    // `None` is a roll.
    match op {
        Op::Compact | Op::Carry => vec![
            Some(vec![(Some("a"), Some("1"), 0), (Some("b"), Some("x"), 1)]),
            Some(vec![(Some("c"), Some("1"), 2)]),
            None,
            Some(vec![(Some("a"), Some("2"), 3), (None, Some("event"), 4)]),
            Some(vec![(Some("b"), None, 5)]),
            None,
            Some(vec![(Some("c"), Some("2"), 6)]),
            None,
            Some(vec![(Some("a"), Some("3"), 7)]),
        ],
        Op::Retain => seed_retention_steps(),
    }
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1 << 20,
        index_interval_bytes: 1,
        ..LogConfig::default()
    }
}

/// Writes the workload into `dir` through the engine and the spec.
fn prepare(op: Op, dir: &Path) -> SpecLog {
    let (mut log, _) = Log::open(dir, config()).unwrap();
    let mut spec = SpecLog::new(config().segment_bytes);
    apply_steps(&mut log, &mut spec, &workload(op));
    if op == Op::Carry {
        // An incremental pass (a bounded map) writes the key summaries; then key
        // `a` is written again, so the next compaction rewrites only its segments.
        let clean = seglog_suite::workload::Op::Clean {
            now: NOW_COMPACT,
            delete_retention_ms: DELETE_RETENTION_MS,
            segment_bytes: Some(1),
            dedupe_buffer_bytes: Some(1000 * 24),
            min_compaction_lag_ms: 0,
            policy: seglog::compaction::CompactionPolicy::Seed,
            producer_id_expiration_ms: seglog::compaction::PRODUCER_ID_EXPIRATION_MS_DEFAULT,
        };
        seglog_suite::workload::engine::apply(&mut log, &clean).unwrap();
        seglog_suite::workload::spec::apply(&mut spec, &clean);
        apply_steps(
            &mut log,
            &mut spec,
            &[Some(vec![(Some("a"), Some("4"), 8)]), None],
        );
    }
    log.close().unwrap();
    spec
}

const NOW_RETAIN: i64 = 300;
const RETENTION_MS: i64 = 100;
const NOW_COMPACT: i64 = 10_000;
const DELETE_RETENTION_MS: i64 = 100;

fn args(op: Op, dir: &Path) -> Vec<String> {
    let dir = dir.to_str().unwrap().to_string();
    match op {
        Op::Retain => vec![
            "retain".into(),
            dir,
            "--now".into(),
            NOW_RETAIN.to_string(),
            "--retention-ms".into(),
            RETENTION_MS.to_string(),
        ],
        Op::Compact => vec![
            "compact".into(),
            dir,
            "--now".into(),
            NOW_COMPACT.to_string(),
            "--delete-retention-ms".into(),
            DELETE_RETENTION_MS.to_string(),
            "--segment-bytes".into(),
            config().segment_bytes.to_string(),
        ],
        Op::Carry => vec![
            "compact".into(),
            dir,
            "--now".into(),
            NOW_COMPACT.to_string(),
            "--delete-retention-ms".into(),
            DELETE_RETENTION_MS.to_string(),
            "--segment-bytes".into(),
            "1".into(),
        ],
    }
}

/// The spec after the operation.
fn apply(op: Op, spec: &SpecLog) -> SpecLog {
    let mut spec = spec.clone();
    match op {
        Op::Retain => {
            let deleted = spec.retain(NOW_RETAIN, Some(RETENTION_MS), None).unwrap();
            assert_eq!(deleted.len(), 3);
        }
        Op::Compact => {
            let summary = spec
                .compact(NOW_COMPACT, DELETE_RETENTION_MS, None)
                .unwrap();
            assert!(summary.records_after < summary.records_before);
        }
        Op::Carry => {
            let summary = spec
                .compact(NOW_COMPACT, DELETE_RETENTION_MS, Some(1))
                .unwrap();
            assert!(summary.records_after < summary.records_before);
        }
    }
    spec
}

/// One crash: run `op`, crash at the `hit`-th reach of `point`; optionally damage the
/// temp dir, then crash the recovery at `recovery`.
struct Case {
    op: Op,
    point: &'static str,
    hit: u32,
    tamper_tmp: bool,
    recovery: Option<(&'static str, u32)>,
    /// Whether the result must be the new content.
    expect_new: bool,
}

const fn case(op: Op, point: &'static str, hit: u32, expect_new: bool) -> Case {
    Case {
        op,
        point,
        hit,
        tamper_tmp: false,
        recovery: None,
        expect_new,
    }
}

fn cases() -> Vec<Case> {
    use Op::*;
    let mut out = vec![
        case(Compact, fp::COMPACTION_BUILD_SYNC_FILE, 1, false),
        case(Compact, fp::COMPACTION_BUILD_SYNC_FILE, 2, false),
        case(Compact, fp::COMPACTION_BUILD_SYNC_CLEAN_POINT, 1, false),
        case(Compact, fp::COMPACTION_BUILD_SYNC_RECOVERY_POINT, 1, false),
        case(Compact, fp::COMPACTION_BUILD_SYNC_TMP_DIR, 1, false),
        case(Carry, fp::COMPACTION_BUILD_LINK_CARRIED, 1, false),
        case(Carry, fp::COMPACTION_BUILD_LINK_CARRIED, 4, false),
        case(Carry, fp::COMPACTION_BUILD_SYNC_TMP_DIR, 1, false),
        case(Carry, fp::INSTALL_MANIFEST_SYNC_PARENT, 1, true),
        case(Carry, fp::INSTALL_TRASH_RENAME, 1, true),
        case(Compact, fp::INSTALL_MANIFEST_SYNC_TEMP_ENTRY, 1, false),
        case(Compact, fp::INSTALL_MANIFEST_SYNC_TMP, 1, false),
        case(Compact, fp::INSTALL_MANIFEST_RENAME, 1, false),
        case(Compact, fp::INSTALL_MANIFEST_SYNC_PARENT, 1, true),
        case(Compact, fp::INSTALL_SWAP_RENAME_LIVE_BACKUP, 1, true),
        case(Compact, fp::INSTALL_SWAP_RENAME_TMP_LIVE, 1, true),
        case(Compact, fp::INSTALL_TAIL_LINK, 1, false),
        case(Compact, fp::INSTALL_TAIL_LINK, 2, false),
        case(Compact, fp::INSTALL_TAIL_SYNC_TMP, 1, false),
        case(Compact, fp::INSTALL_TRASH_RENAME, 1, true),
        case(Compact, fp::INSTALL_TRASH_SYNC_PARENT, 1, true),
        case(Compact, fp::INSTALL_TRASH_REMOVE, 1, true),
        case(Compact, fp::INSTALL_CLEANUP_REMOVE_MANIFEST, 1, true),
        case(Compact, fp::INSTALL_CLEANUP_SYNC_PARENT_MANIFEST, 1, true),
        case(Retain, fp::RETENTION_CHECKPOINT_SYNC_TMP, 1, false),
        case(Retain, fp::RETENTION_CHECKPOINT_RENAME, 1, false),
        case(Retain, fp::RETENTION_CHECKPOINT_SYNC_DIR, 1, true),
        case(Retain, fp::RETENTION_DELETE_REMOVE_FILE, 1, true),
        case(Retain, fp::RETENTION_DELETE_REMOVE_FILE, 5, true),
        case(Retain, fp::RETENTION_DELETE_REMOVE_FILE, 9, true),
    ];
    let during_recovery = [
        (
            fp::INSTALL_MANIFEST_RENAME,
            fp::INSTALL_RECOVER_REMOVE_MANIFEST_TMP,
            1,
            false,
        ),
        (
            fp::COMPACTION_BUILD_SYNC_TMP_DIR,
            fp::INSTALL_RECOVER_REMOVE_TMP,
            1,
            false,
        ),
        (
            fp::INSTALL_SWAP_RENAME_LIVE_BACKUP,
            fp::INSTALL_RECOVER_RENAME_LIVE_ASIDE,
            1,
            true,
        ),
        (
            fp::INSTALL_SWAP_RENAME_LIVE_BACKUP,
            fp::INSTALL_RECOVER_RENAME_TMP_LIVE,
            1,
            true,
        ),
        (
            fp::INSTALL_SWAP_RENAME_TMP_LIVE,
            fp::INSTALL_RECOVER_RENAME_TMP_LIVE,
            1,
            true,
        ),
        (
            fp::INSTALL_SWAP_RENAME_TMP_LIVE,
            fp::INSTALL_RECOVER_SYNC_PARENT,
            1,
            true,
        ),
        (
            fp::INSTALL_SWAP_RENAME_TMP_LIVE,
            fp::INSTALL_RECOVER_SYNC_PARENT,
            2,
            true,
        ),
        (
            fp::INSTALL_SWAP_RENAME_TMP_LIVE,
            fp::INSTALL_RECOVER_REMOVE_BACKUP,
            1,
            true,
        ),
        (
            fp::INSTALL_SWAP_RENAME_TMP_LIVE,
            fp::INSTALL_RECOVER_REMOVE_MANIFEST,
            1,
            true,
        ),
        (
            fp::INSTALL_CLEANUP_REMOVE_MANIFEST,
            fp::INSTALL_RECOVER_REMOVE_MANIFEST,
            1,
            true,
        ),
        (
            fp::INSTALL_SWAP_RENAME_LIVE_BACKUP,
            fp::INSTALL_RECOVER_SYNC_PARENT_FIRST,
            1,
            true,
        ),
        (
            fp::COMPACTION_BUILD_SYNC_TMP_DIR,
            fp::INSTALL_RECOVER_SYNC_PARENT_FIRST,
            1,
            false,
        ),
        // A trash left by a finished swap: recovery removes it (never authoritative).
        (
            fp::INSTALL_TRASH_REMOVE,
            fp::INSTALL_RECOVER_REMOVE_TRASH,
            1,
            true,
        ),
        (
            fp::INSTALL_CLEANUP_REMOVE_MANIFEST,
            fp::INSTALL_RECOVER_REMOVE_TRASH,
            1,
            true,
        ),
    ];
    for (point, recovery_point, hit, expect_new) in during_recovery {
        out.push(Case {
            recovery: Some((recovery_point, hit)),
            ..case(Op::Compact, point, 1, expect_new)
        });
    }
    for recovery_point in [
        fp::INSTALL_RECOVER_RENAME_BACKUP_LIVE,
        fp::INSTALL_RECOVER_REMOVE_TMP,
        fp::INSTALL_RECOVER_REMOVE_MANIFEST,
    ] {
        // The temp dir is damaged after the swap began: roll back from the backup.
        out.push(Case {
            tamper_tmp: true,
            recovery: Some((recovery_point, 1)),
            ..case(Op::Compact, fp::INSTALL_SWAP_RENAME_TMP_LIVE, 1, false)
        });
    }
    for (recovery_point, hit) in [
        (fp::RETENTION_RECOVER_REMOVE_FILE, 1),
        (fp::RETENTION_RECOVER_REMOVE_FILE, 4),
        // The open's phase 9 directory sync makes retention recovery's removals durable.
        (fp::LOG_RECOVERY_SYNC_LOG_DIR, 1),
        (fp::RETENTION_RECOVER_SYNC_DIR_FIRST, 1),
    ] {
        out.push(Case {
            recovery: Some((recovery_point, hit)),
            ..case(Op::Retain, fp::RETENTION_CHECKPOINT_SYNC_DIR, 1, true)
        });
    }
    out
}

fn action(hit: u32) -> String {
    if hit <= 1 {
        "return".to_string()
    } else {
        format!("{}*off->return", hit - 1)
    }
}

/// Runs `seglog ARGS` with a crash configured at `point`, expecting the crash.
fn crash_binary(args: &[String], point: &str, hit: u32) {
    let output = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(args)
        .env("FAILPOINTS", format!("{point}={}", action(hit)))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.code().is_none(),
        "{args:?} did not crash at {point} (hit {hit}): {:?} {stderr}",
        output.status
    );
    assert!(
        stderr.contains(&format!("crashed at fail point {point}")),
        "{args:?}: {stderr}"
    );
}

/// Everything observable, engine side.
type View = seglog_suite::workload::LogView;

fn engine_view(log: &Log) -> View {
    seglog_suite::workload::engine::view(log).expect("read the whole log")
}

fn spec_view(spec: &SpecLog) -> View {
    seglog_suite::workload::spec::view(spec)
}

fn check_case(c: &Case) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("log");
    let old = prepare(c.op, &dir);
    let new = apply(c.op, &old);
    assert_ne!(spec_view(&old), spec_view(&new));
    crash_binary(&args(c.op, &dir), c.point, c.hit);
    if c.tamper_tmp {
        let fs = StdFs::new();
        let tmp = InstallPaths::new(&dir).unwrap().tmp;
        // A segment file: the derived index files and recovery point are outside
        // the manifest (damage to them is the damaged-data stage's `temp_derived`).
        let first = fs
            .list_dir(&tmp)
            .unwrap()
            .into_iter()
            .find(|n| n.ends_with(".log"))
            .unwrap();
        fs.append(&tmp.join(first), b"damage").unwrap();
    }
    if let Some((point, hit)) = c.recovery {
        crash_binary(
            &["recover".to_string(), dir.to_str().unwrap().to_string()],
            point,
            hit,
        );
    }
    let (log, report) = Log::open(&dir, config()).unwrap();
    let expected = if c.expect_new { &new } else { &old };
    assert_eq!(
        engine_view(&log),
        spec_view(expected),
        "{:?} at {} (hit {}), recovery {:?}: {report:?}",
        c.op,
        c.point,
        c.hit,
        c.recovery
    );
    assert_eq!(log.next_offset(), old.next_offset());
    assert!(siblings(&dir).is_empty(), "leftovers: {:?}", siblings(&dir));
    assert!(
        report.unknown_files.is_empty(),
        "{:?}",
        report.unknown_files
    );
    log.close().unwrap();
    // Recovery is idempotent: a second open finds nothing to do.
    let (_, again) = Log::open(&dir, config()).unwrap();
    assert_eq!(again.install.case, InstallCase::Clean);
    assert!(again.retention.removed_files.is_empty());
    assert!(again.removed_files.is_empty());
}

#[test]
fn every_cleanup_fail_point_crash_recovers_to_old_or_new() {
    let mut crashed: BTreeSet<&str> = BTreeSet::new();
    for c in cases() {
        check_case(&c);
        crashed.insert(c.point);
        if let Some((point, _)) = c.recovery {
            crashed.insert(point);
        }
    }
    let missing: Vec<&&str> = ALL
        .iter()
        .filter(|name| {
            ["retention::", "compaction::", "install::"]
                .iter()
                .any(|prefix| name.starts_with(prefix))
        })
        .filter(|name| !crashed.contains(**name))
        .collect();
    assert!(
        missing.is_empty(),
        "fail points never crashed at: {missing:?}"
    );
}

#[test]
fn binary_lists_every_cleanup_fail_point() {
    let output = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .arg("failpoints")
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let listed: Vec<&str> = json["failpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for name in [
        fp::RETENTION_CHECKPOINT_RENAME,
        fp::COMPACTION_BUILD_SYNC_FILE,
        fp::INSTALL_SWAP_RENAME_TMP_LIVE,
        fp::INSTALL_RECOVER_SYNC_PARENT,
    ] {
        assert!(listed.contains(&name), "{name} not listed");
    }
    assert_eq!(listed, ALL);
}

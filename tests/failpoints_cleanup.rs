//! Fail-point crash tests for the retention, compaction and install paths.
//!
//! Invariants checked: for every fail point on these paths, a child process that
//! runs the operation and is crashed there (`FAILPOINTS=<name>=return` aborts at
//! once, like `kill -9`) leaves a directory that the next open's recovery turns
//! into exactly the old or the new content (same rows, `log_start_offset`,
//! `next_offset`), with no sibling directory, manifest, temp checkpoint or orphan
//! index left. Crashing the recovery itself, then recovering again, ends the same
//! way. The run fails if some fail point on these paths is never crashed at.
//!
//! Runs without the libtest harness (`harness = false`): the same binary is the
//! child (`SEGLOG_FP_CHILD=<op>`), so the fail-point registry of the parent is
//! never configured. Needs `--features failpoints`.

mod cleanup_support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use cleanup_support::*;
use seglog::compaction::{compact_dir, source, CompactOptions};
use seglog::format::{checkpoint, filename};
use seglog::fs::failpoint::{self as fp, ALL};
use seglog::fs::{FileSystem, StdFs};
use seglog::install::InstallPaths;
use seglog::{install, retention};

const COMPACT: CompactOptions = CompactOptions {
    now: 10_000,
    delete_retention_ms: 100,
    segment_bytes: 1 << 20,
};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Retain,
    Compact,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Retain => "retain",
            Op::Compact => "compact",
        }
    }
}

fn workload(op: Op, fs: &dyn FileSystem, dir: &Path) {
    match op {
        Op::Compact => {
            write_log(
                fs,
                dir,
                0,
                &[
                    vec![
                        vec![rec(Some("a"), Some("1"), 0), rec(Some("b"), Some("x"), 1)],
                        vec![rec(Some("c"), Some("1"), 2)],
                    ],
                    vec![
                        vec![rec(Some("a"), Some("2"), 3), rec(None, Some("event"), 4)],
                        vec![rec(Some("b"), None, 5)],
                    ],
                    vec![vec![rec(Some("c"), Some("2"), 6)]],
                    vec![vec![rec(Some("a"), Some("3"), 7)]],
                ],
            );
        }
        Op::Retain => {
            let bases = write_log(
                fs,
                dir,
                0,
                &[
                    vec![vec![rec(None, Some("0"), 0)]],
                    vec![vec![rec(None, Some("50"), 50)]],
                    vec![vec![rec(None, Some("150"), 150)]],
                    vec![vec![rec(None, Some("250"), 250)]],
                ],
            );
            for base in bases {
                for suffix in [filename::INDEX_SUFFIX, filename::TIME_INDEX_SUFFIX] {
                    fs.write_new(&dir.join(filename::build(base, suffix)), b"")
                        .unwrap();
                }
            }
        }
    }
}

fn run(op: &str, fs: &dyn FileSystem, dir: &Path) -> seglog::Result<()> {
    match op {
        "retain" => {
            let metas = source::scan(fs, dir)?;
            let plan = retention::plan(&metas, 300, Some(100), None)?;
            retention::delete_prefix(fs, dir, &plan.delete)?;
        }
        "compact" => {
            compact_dir(fs, dir, COMPACT)?;
        }
        "recover" => recover(fs, dir)?,
        other => panic!("unknown op {other}"),
    }
    Ok(())
}

fn recover(fs: &dyn FileSystem, dir: &Path) -> seglog::Result<()> {
    install::recover(fs, dir)?;
    retention::recover(fs, dir)?;
    Ok(())
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
        case(Compact, fp::COMPACTION_BUILD_SYNC_TMP_DIR, 1, false),
        case(Compact, fp::INSTALL_MANIFEST_SYNC_TMP, 1, false),
        case(Compact, fp::INSTALL_MANIFEST_RENAME, 1, false),
        case(Compact, fp::INSTALL_MANIFEST_SYNC_PARENT, 1, true),
        case(Compact, fp::INSTALL_SWAP_RENAME_LIVE_BACKUP, 1, true),
        case(Compact, fp::INSTALL_SWAP_SYNC_PARENT_BACKUP, 1, true),
        case(Compact, fp::INSTALL_SWAP_RENAME_TMP_LIVE, 1, true),
        case(Compact, fp::INSTALL_SWAP_SYNC_PARENT_LIVE, 1, true),
        case(Compact, fp::INSTALL_CLEANUP_REMOVE_BACKUP, 1, true),
        case(Compact, fp::INSTALL_CLEANUP_SYNC_PARENT_BACKUP, 1, true),
        case(Compact, fp::INSTALL_CLEANUP_REMOVE_MANIFEST, 1, true),
        case(Compact, fp::INSTALL_CLEANUP_SYNC_PARENT_MANIFEST, 1, true),
        case(Retain, fp::RETENTION_CHECKPOINT_SYNC_TMP, 1, false),
        case(Retain, fp::RETENTION_CHECKPOINT_RENAME, 1, false),
        case(Retain, fp::RETENTION_CHECKPOINT_SYNC_DIR, 1, true),
        case(Retain, fp::RETENTION_DELETE_REMOVE_FILE, 1, true),
        case(Retain, fp::RETENTION_DELETE_REMOVE_FILE, 5, true),
        case(Retain, fp::RETENTION_DELETE_REMOVE_FILE, 9, true),
        case(Retain, fp::RETENTION_DELETE_SYNC_DIR, 1, true),
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
        (fp::RETENTION_RECOVER_REMOVE_FILE, 3),
        (fp::RETENTION_RECOVER_SYNC_DIR, 1),
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

/// Runs `op` in a child process, expecting it to crash at `point`.
fn crash_child(op: &str, dir: &Path, point: &str, hit: u32) {
    let output = Command::new(std::env::current_exe().unwrap())
        .env("SEGLOG_FP_CHILD", op)
        .env("SEGLOG_FP_DIR", dir)
        .env("FAILPOINTS", format!("{point}={}", action(hit)))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && output.status.code().is_none(),
        "{op} did not crash at {point} (hit {hit}): {:?} {stderr}",
        output.status
    );
    assert!(
        stderr.contains(&format!("crashed at fail point {point}")),
        "{op}: {stderr}"
    );
}

fn outcome(op: Op) -> (Dump, Dump) {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    workload(op, &fs, &dir);
    let old = dump(&fs, &dir);
    run(op.name(), &fs, &dir).unwrap();
    recover(&fs, &dir).unwrap();
    let new = dump(&fs, &dir);
    assert_ne!(old, new);
    (old, new)
}

fn check_case(c: &Case, old: &Dump, new: &Dump) {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    workload(c.op, &fs, &dir);
    crash_child(c.op.name(), &dir, c.point, c.hit);
    let fs = StdFs::new();
    if c.tamper_tmp {
        let tmp = InstallPaths::new(&dir).unwrap().tmp;
        let first = fs.list_dir(&tmp).unwrap().remove(0);
        fs.append(&tmp.join(first), b"damage").unwrap();
    }
    if let Some((point, hit)) = c.recovery {
        crash_child("recover", &dir, point, hit);
    }
    // A fresh handle cache: the child renamed directories under the paths the
    // workload's `StdFs` still holds open handles for.
    let fs = StdFs::new();
    recover(&fs, &dir).unwrap();
    let after = dump(&fs, &dir);
    let expected = if c.expect_new { new } else { old };
    assert_eq!(
        &after,
        expected,
        "{} at {} (hit {})",
        c.op.name(),
        c.point,
        c.hit
    );
    assert_eq!(after.next_offset, old.next_offset);
    assert!(siblings(&dir).is_empty(), "leftovers: {:?}", siblings(&dir));
    for name in non_log_files(&dir) {
        if name == checkpoint::CHECKPOINT_NAME {
            continue;
        }
        let (base, _) = filename::parse(&name).expect("unknown leftover file");
        assert!(after.segments.iter().any(|s| s.0 == base), "orphan {name}");
    }
}

fn main() {
    if let Ok(op) = std::env::var("SEGLOG_FP_CHILD") {
        let _scenario = fail::FailScenario::setup();
        let dir = std::env::var("SEGLOG_FP_DIR").unwrap();
        run(&op, &StdFs::new(), Path::new(&dir)).unwrap();
        return;
    }
    let compact = outcome(Op::Compact);
    let retain = outcome(Op::Retain);
    let mut crashed: BTreeSet<&str> = BTreeSet::new();
    let all = cases();
    for c in &all {
        let (old, new) = if c.op == Op::Compact {
            &compact
        } else {
            &retain
        };
        check_case(c, old, new);
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
    println!(
        "failpoints_cleanup: {} crash cases passed, {} fail points covered",
        all.len(),
        crashed.len()
    );
}

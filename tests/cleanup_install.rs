//! The install protocol under a crash at every mutating file-system call.
//!
//! Invariants checked: after a crash at any call of a compaction (build and install
//! steps 1 to 6), and after a crash at any call of the recovery that follows, the
//! next recovery leaves the log exactly the old or the new content (same rows,
//! `log_start_offset` and `next_offset`), with no sibling directory or manifest left;
//! both outcomes are reached; recovery is idempotent.

mod cleanup_support;

use std::path::Path;

use cleanup_support::*;
use seglog::compaction::{compact_dir, CompactOptions};
use seglog::format::manifest::Manifest;
use seglog::fs::{FileSystem, StdFs};
use seglog::install::{self, InstallCase, InstallPaths};
use seglog::{retention, Error};

const OPTIONS: CompactOptions = CompactOptions {
    now: 10_000,
    delete_retention_ms: 100,
    segment_bytes: 1 << 20,
};

fn workload(fs: &dyn FileSystem, dir: &Path) {
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

/// Old and new content of the workload.
fn outcomes() -> (Dump, Dump) {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    workload(&fs, &dir);
    let old = dump(&fs, &dir);
    let report = compact_dir(&fs, &dir, OPTIONS).unwrap().unwrap();
    let new = dump(&fs, &dir);
    assert_eq!(report.records_before, 7);
    assert_eq!(
        report.records_after, 2,
        "event and c=2 survive; b=null expired"
    );
    assert_eq!(report.segments_before, 3);
    assert_eq!(report.segments_after, 1);
    assert_ne!(old, new);
    assert_eq!(old.next_offset, new.next_offset);
    assert_eq!(old.log_start_offset, new.log_start_offset);
    let offsets: Vec<i64> = new.rows.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![4, 6, 7]);
    assert!(siblings(&dir).is_empty());
    (old, new)
}

fn recover_all(fs: &dyn FileSystem, dir: &Path) -> seglog::Result<InstallCase> {
    let report = install::recover(fs, dir)?;
    retention::recover(fs, dir)?;
    Ok(report.case)
}

fn check_recovered(dir: &Path, old: &Dump, new: &Dump) -> bool {
    let fs = StdFs::new();
    // Idempotent: a second recovery finds nothing to do.
    assert_eq!(recover_all(&fs, dir).unwrap(), InstallCase::Clean);
    let now = dump(&fs, dir);
    assert!(now == *old || now == *new, "neither old nor new: {now:#?}");
    assert!(siblings(dir).is_empty(), "leftovers: {:?}", siblings(dir));
    // The new content carries the clean point its compaction installed, the index
    // files of every segment and a recovery point (no scan when it is opened); the
    // old content (never cleaned, never opened) has none of them.
    let expected: Vec<String> = if now == *new {
        let mut names = vec![
            seglog::format::checkpoint::CLEAN_POINT_NAME.to_string(),
            seglog::format::recovery_point::RECOVERY_POINT_NAME.to_string(),
        ];
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if let Some(stem) = name.strip_suffix(".log") {
                names.push(format!("{stem}.index"));
                names.push(format!("{stem}.timeindex"));
            }
        }
        names.sort();
        names
    } else {
        Vec::new()
    };
    assert_eq!(non_log_files(dir), expected);
    now == *new
}

#[test]
fn crash_at_every_call_of_compaction_then_recover() {
    let (old, new) = outcomes();
    let (mut saw_old, mut saw_new) = (false, false);
    let mut cases = std::collections::BTreeSet::new();
    for budget in 0.. {
        let (_root, dir) = temp_log();
        workload(&StdFs::new(), &dir);
        let crashing = CrashAfter::new(budget);
        let result = compact_dir(&*crashing, &dir, OPTIONS);
        if !crashing.crashed() {
            result.unwrap();
            assert!(budget > 10, "the protocol has more than 10 calls");
            break;
        }
        assert!(result.is_err());
        let case = recover_all(&StdFs::new(), &dir).unwrap();
        cases.insert(format!("{case:?}"));
        if check_recovered(&dir, &old, &new) {
            saw_new = true;
        } else {
            saw_old = true;
        }
    }
    assert!(saw_old && saw_new);
    for case in ["NotCommitted", "CommittedLiveIsNew", "CommittedRollForward"] {
        assert!(cases.contains(case), "{case} never reached: {cases:?}");
    }
}

#[test]
fn crash_during_recovery_is_recovered_by_the_next_open() {
    let (old, new) = outcomes();
    let mut nested = 0;
    for budget in 0.. {
        let (_root, dir) = temp_log();
        workload(&StdFs::new(), &dir);
        let crashing = CrashAfter::new(budget);
        if compact_dir(&*crashing, &dir, OPTIONS).is_ok() {
            break;
        }
        for recovery_budget in 0.. {
            let (_root2, dir2) = temp_log();
            copy_tree(dir.parent().unwrap(), dir2.parent().unwrap());
            let crashing = CrashAfter::new(recovery_budget);
            let first = recover_all(&*crashing, &dir2);
            if !crashing.crashed() {
                first.unwrap();
                break;
            }
            nested += 1;
            recover_all(&StdFs::new(), &dir2).unwrap();
            check_recovered(&dir2, &old, &new);
        }
    }
    assert!(nested > 10, "recovery crashed only {nested} times");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Builds the temp dir and commits the manifest, without swapping.
fn committed(dir: &Path) -> (InstallPaths, Manifest) {
    let fs = StdFs::new();
    workload(&fs, dir);
    let built = seglog::compaction::build(&fs, dir, OPTIONS)
        .unwrap()
        .unwrap();
    let paths = InstallPaths::new(dir).unwrap();
    fs.write_new(&paths.manifest, &built.manifest.encode())
        .unwrap();
    (paths, built.manifest)
}

#[test]
fn committed_but_temp_damaged_rolls_back_from_backup() {
    let (old, _new) = outcomes();
    let (_root, dir) = temp_log();
    let (paths, manifest) = committed(&dir);
    let fs = StdFs::new();
    fs.rename(&paths.live, &paths.backup).unwrap();
    let victim = paths.tmp.join(&manifest.files[0].name);
    fs.append(&victim, b"x").unwrap();
    let report = install::recover(&fs, &dir).unwrap();
    assert_eq!(report.case, InstallCase::RolledBackFromBackup);
    assert_eq!(dump(&fs, &dir), old);
    assert!(siblings(&dir).is_empty());
}

#[test]
fn committed_but_temp_damaged_with_live_rolls_back() {
    let (old, _new) = outcomes();
    let (_root, dir) = temp_log();
    let (paths, manifest) = committed(&dir);
    let fs = StdFs::new();
    fs.remove_file(&paths.tmp.join(&manifest.files[0].name))
        .unwrap();
    let report = install::recover(&fs, &dir).unwrap();
    assert_eq!(report.case, InstallCase::RolledBack);
    assert_eq!(dump(&fs, &dir), old);
    assert!(siblings(&dir).is_empty());
}

#[test]
fn ambiguous_states_fail_closed_and_delete_nothing() {
    let fs = StdFs::new();
    // A backup without a manifest.
    let (_root, dir) = temp_log();
    workload(&fs, &dir);
    let paths = InstallPaths::new(&dir).unwrap();
    fs.create_dir_all(&paths.backup).unwrap();
    let before = siblings(&dir);
    let err = install::recover(&fs, &dir).unwrap_err();
    assert!(matches!(err, Error::Ambiguous { .. }), "{err}");
    assert!(err.to_string().contains("log.compact-bak"), "{err}");
    assert_eq!(siblings(&dir), before);
    // A temp dir without a manifest and no live dir.
    let (_root, dir) = temp_log();
    let paths = InstallPaths::new(&dir).unwrap();
    fs.create_dir_all(&paths.tmp).unwrap();
    assert!(matches!(
        install::recover(&fs, &dir),
        Err(Error::Ambiguous { .. })
    ));
    assert!(fs.is_dir(&paths.tmp));
    // A committed manifest with neither old nor new content.
    let (_root, dir) = temp_log();
    let (paths, _) = committed(&dir);
    fs.remove_dir_all(&paths.tmp).unwrap();
    fs.rename(&paths.live, &paths.live.with_file_name("elsewhere"))
        .unwrap();
    assert!(matches!(
        install::recover(&fs, &dir),
        Err(Error::Ambiguous { .. })
    ));
    assert!(fs.exists(&paths.manifest));
}

#[test]
fn damaged_manifest_is_corrupt_and_deletes_nothing() {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    let (paths, _) = committed(&dir);
    let mut bytes = fs.read_all(&paths.manifest).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xFF;
    fs.write_new(&paths.manifest, &bytes).unwrap();
    let before = siblings(&dir);
    let err = install::recover(&fs, &dir).unwrap_err();
    assert!(err.is_corrupt(), "{err}");
    assert!(err.to_string().contains("log.compact-manifest"), "{err}");
    assert_eq!(siblings(&dir), before);
    // A truncated one too.
    fs.write_new(&paths.manifest, &bytes[..10]).unwrap();
    assert!(install::recover(&fs, &dir).unwrap_err().is_corrupt());
    assert!(fs.is_dir(&paths.tmp));
}

#[test]
fn manifest_temp_file_alone_is_removed() {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    workload(&fs, &dir);
    let paths = InstallPaths::new(&dir).unwrap();
    fs.write_new(&paths.manifest_tmp, b"half a manifest")
        .unwrap();
    let report = install::recover(&fs, &dir).unwrap();
    assert_eq!(report.case, InstallCase::NotCommitted);
    assert!(siblings(&dir).is_empty());
    assert_eq!(
        install::recover(&fs, &dir).unwrap().case,
        InstallCase::Clean
    );
}

#[test]
fn no_log_dir_at_all_is_clean() {
    let (_root, dir) = temp_log();
    assert_eq!(
        install::recover(&StdFs::new(), &dir).unwrap().case,
        InstallCase::Clean
    );
}

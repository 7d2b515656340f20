//! Retention deletion under a crash at every mutating call, the deletion API's
//! prefix re-check, and retention recovery.
//!
//! Invariants checked: after a crash anywhere in a retention deletion and a recovery,
//! the log is the old or the new content (never a hole: the segments are a suffix of
//! the old ones with the same rows from their base on), `next_offset` unchanged, no
//! temp checkpoint or orphan index left; a damaged checkpoint deletes nothing.

mod cleanup_support;

use std::path::Path;

use cleanup_support::source;
use cleanup_support::*;
use seglog::format::{checkpoint, filename};
use seglog::fs::{FileSystem, StdFs};
use seglog::{retention, Error};

fn workload(fs: &dyn FileSystem, dir: &Path) -> Vec<i64> {
    write_log(
        fs,
        dir,
        0,
        &[
            vec![vec![rec(None, Some("0"), 0)]],
            vec![
                vec![rec(None, Some("50"), 50)],
                vec![rec(None, Some("60"), 60)],
            ],
            vec![vec![rec(None, Some("150"), 150)]],
            vec![vec![rec(None, Some("250"), 250)]],
        ],
    )
}

fn add_indexes(fs: &dyn FileSystem, dir: &Path, bases: &[i64]) {
    for &base in bases {
        for suffix in [filename::INDEX_SUFFIX, filename::TIME_INDEX_SUFFIX] {
            fs.write_new(&dir.join(filename::build(base, suffix)), b"")
                .unwrap();
        }
    }
}

fn retain(fs: &dyn FileSystem, dir: &Path) -> seglog::Result<retention::DeleteOutcome> {
    let metas = source::scan(fs, dir)?;
    let plan = retention::plan(&metas, 300, Some(100), None)?;
    retention::delete_prefix(fs, dir, &plan.delete)
}

#[test]
fn seed_example_deletes_the_expired_prefix() {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    let bases = workload(&fs, &dir);
    assert_eq!(bases, vec![0, 1, 3, 4]);
    let outcome = retain(&fs, &dir).unwrap();
    assert_eq!(outcome.deleted_segments, vec![0, 1, 3]);
    assert_eq!(outcome.log_start_offset, 4);
    assert_eq!(retention::read_checkpoint(&fs, &dir).unwrap(), Some(4));
    let after = dump(&fs, &dir);
    assert_eq!(after.log_start_offset, 4);
    assert_eq!(after.next_offset, 5);
    assert_eq!(
        non_log_files(&dir),
        vec![checkpoint::CHECKPOINT_NAME.to_string()]
    );
}

#[test]
fn deletion_api_rechecks_the_exact_prefix() {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    workload(&fs, &dir);
    let before = dump(&fs, &dir);
    for bad in [vec![1], vec![0, 3], vec![0, 1, 3, 4], vec![3, 1, 0]] {
        let err = retention::delete_prefix(&fs, &dir, &bad).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{bad:?}: {err}");
    }
    assert_eq!(dump(&fs, &dir), before);
    assert!(
        non_log_files(&dir).is_empty(),
        "nothing written on a rejected request"
    );
    let outcome = retention::delete_prefix(&fs, &dir, &[]).unwrap();
    assert_eq!(outcome.log_start_offset, 0);
    assert!(non_log_files(&dir).is_empty());
}

#[test]
fn crash_at_every_call_then_recover_leaves_old_or_new() {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    let bases = workload(&fs, &dir);
    add_indexes(&fs, &dir, &bases);
    let old = dump(&fs, &dir);
    retain(&fs, &dir).unwrap();
    retention::recover(&fs, &dir).unwrap();
    let new = dump(&fs, &dir);
    let (mut saw_old, mut saw_new, mut saw_partial) = (false, false, false);
    for budget in 0.. {
        let (_root, dir) = temp_log();
        let bases = workload(&fs, &dir);
        add_indexes(&fs, &dir, &bases);
        let crashing = CrashAfter::new(budget);
        let result = retain(&*crashing, &dir);
        if !crashing.crashed() {
            result.unwrap();
            break;
        }
        // Before recovery the prefix may be partly deleted: never a hole.
        let mid = dump(&fs, &dir);
        assert_eq!(mid.next_offset, old.next_offset);
        assert!(
            old.segments.ends_with(&mid.segments),
            "hole: {:?}",
            mid.segments
        );
        saw_partial |= mid != old && mid != new;
        let report = retention::recover(&fs, &dir).unwrap();
        let after = dump(&fs, &dir);
        assert!(after == old || after == new, "{after:#?} after {report:?}");
        saw_old |= after == old;
        saw_new |= after == new;
        let leftovers: Vec<String> = non_log_files(&dir)
            .into_iter()
            .filter(|n| n != checkpoint::CHECKPOINT_NAME)
            .filter(|n| {
                let (base, _) = filename::parse(n).unwrap();
                !after.segments.iter().any(|(b, _)| *b == base)
            })
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        if let Some(start) = retention::read_checkpoint(&fs, &dir).unwrap() {
            assert_eq!(
                after.log_start_offset, start,
                "checkpoint durable => prefix gone"
            );
        }
    }
    assert!(saw_old && saw_new && saw_partial);
}

#[test]
fn recovery_removes_segments_wholly_below_the_checkpoint() {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    let bases = workload(&fs, &dir);
    add_indexes(&fs, &dir, &bases);
    retention::write_checkpoint(&fs, &dir, 3).unwrap();
    // An orphan index (left to the log's own recovery phase) and a stale temp checkpoint.
    fs.write_new(&dir.join(filename::build(99, filename::INDEX_SUFFIX)), b"")
        .unwrap();
    fs.write_new(&dir.join(checkpoint::CHECKPOINT_TMP_NAME), b"junk")
        .unwrap();
    let report = retention::recover(&fs, &dir).unwrap();
    assert_eq!(report.checkpoint, Some(3));
    assert_eq!(report.removed_segments, vec![0, 1]);
    assert_eq!(report.removed_files.len(), 1 + 3 + 3);
    assert!(fs.exists(&dir.join(filename::build(99, filename::INDEX_SUFFIX))));
    assert_eq!(source::list_segments(&fs, &dir).unwrap(), vec![3, 4]);
    // Idempotent.
    let again = retention::recover(&fs, &dir).unwrap();
    assert!(again.removed_files.is_empty());
}

#[test]
fn checkpoint_inside_a_segment_keeps_that_segment() {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    workload(&fs, &dir);
    // Offset 2 lies inside segment 1 (offsets 1..=2): segment 1 holds it and stays.
    retention::write_checkpoint(&fs, &dir, 2).unwrap();
    let report = retention::recover(&fs, &dir).unwrap();
    assert_eq!(report.removed_segments, vec![0]);
    // Past the log's end: no retention wrote it, so it is corrupt and nothing goes
    // (tests/checkpoint_meaning.rs).
    retention::write_checkpoint(&fs, &dir, 1_000).unwrap();
    let err = retention::recover(&fs, &dir).unwrap_err();
    assert!(
        matches!(
            &err,
            seglog::Error::Corrupt {
                kind: seglog::CorruptKind::PastLogEnd { offset: 1_000, .. },
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(source::list_segments(&fs, &dir).unwrap(), vec![1, 3, 4]);
}

#[test]
fn damaged_checkpoint_is_corrupt_and_nothing_is_removed() {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    workload(&fs, &dir);
    let path = dir.join(checkpoint::CHECKPOINT_NAME);
    fs.write_new(&path, &checkpoint::encode(4)[..10]).unwrap();
    let err = retention::recover(&fs, &dir).unwrap_err();
    assert!(err.is_corrupt(), "{err}");
    assert!(err.to_string().contains(checkpoint::CHECKPOINT_NAME));
    assert_eq!(source::list_segments(&fs, &dir).unwrap(), vec![0, 1, 3, 4]);
    fs.write_new(&path, b"garbage garbage garbage").unwrap();
    assert!(retention::recover(&fs, &dir).unwrap_err().is_corrupt());
    assert_eq!(source::list_segments(&fs, &dir).unwrap(), vec![0, 1, 3, 4]);
}

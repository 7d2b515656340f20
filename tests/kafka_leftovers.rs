//! Kafka's leftovers in a log directory. A directory Kafka's cleaner left
//! mid-swap (a segment's data only in `NNN.log.swap`, its `.log` already deleted)
//! was opened as if the range had never existed: the `.swap` was listed under
//! `unknown_files` and every command carried on; `.cleaned` and `.deleted` files
//! stayed forever and a compaction carried them into its new directory.
//!
//! The invariant, as Kafka's `LogLoader` judges them: a `.swap` (a swap cut short,
//! whose data may be the only copy) makes every open refuse with the file named and
//! changes nothing; `.cleaned` (output before a swap) and `.deleted` (already out of
//! the log) are removed by a writable open and listed in `removed_files` by every
//! open.

mod cli_support;

mod open_support;

use std::path::Path;
use std::sync::Arc;

use open_support::{files, OPENS};
use seglog::format::{filename, recovery_point};
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{Error, Log, LogConfig, NewRecord};

fn record(key: &str) -> NewRecord {
    NewRecord::new(Some(key.as_bytes().to_vec()), Some(b"v".to_vec()), 1)
}

/// Segments 0, 2 and the active 3, closed cleanly, without our recovery point and
/// marker (a directory Kafka wrote keeps neither).
fn kafka_like_log(fs: &Arc<dyn FileSystem>, dir: &Path) {
    let (mut log, _) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    log.append(&[record("a"), record("b")]).unwrap();
    log.roll().unwrap();
    log.append(&[record("c")]).unwrap();
    log.roll().unwrap();
    log.append(&[record("d")]).unwrap();
    log.close().unwrap();
    for name in [
        recovery_point::RECOVERY_POINT_NAME,
        recovery_point::CLEAN_SHUTDOWN_NAME,
    ] {
        fs.remove_file(&dir.join(name)).unwrap();
    }
}

#[test]
fn a_swap_cut_short_is_refused_by_every_open_with_the_file_named() {
    let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
    let dir = Path::new("/log");
    kafka_like_log(&fs, dir);
    // Kafka's cleaner renamed its output to .swap and deleted the old .log; the
    // broker stopped before renaming the .swap into place.
    let log = dir.join(filename::build(2, ".log"));
    let swap = dir.join(format!("{}.swap", filename::build(2, ".log")));
    fs.rename(&log, &swap).unwrap();
    let before = files(fs.as_ref(), dir);
    for (name, open) in OPENS {
        match open(fs.clone(), dir, LogConfig::default()) {
            Err(Error::Ambiguous { reason, dirs }) => {
                assert!(reason.contains("00000000000000000002.log.swap"), "{reason}");
                assert_eq!(dirs, vec![swap.clone()], "{name}");
            }
            Err(other) => panic!("{name}: {other:?}"),
            Ok((_, report)) => panic!("{name} open went on: {report:?}"),
        }
        assert_eq!(
            files(fs.as_ref(), dir),
            before,
            "{name} changed the directory"
        );
    }
}

#[test]
fn cleaned_and_deleted_leftovers_are_removed_and_reported() {
    let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
    let dir = Path::new("/log");
    kafka_like_log(&fs, dir);
    let cleaned = format!("{}.cleaned", filename::build(0, ".log"));
    let deleted = format!("{}.deleted", filename::build(2, ".index"));
    fs.write_new(&dir.join(&cleaned), b"cleaner output")
        .unwrap();
    fs.write_new(&dir.join(&deleted), b"old index").unwrap();
    let before = files(fs.as_ref(), dir);

    let (_, report) = Log::open_read_only(fs.clone(), dir, LogConfig::default()).unwrap();
    assert!(report.removed_files.contains(&cleaned), "{report:?}");
    assert!(report.removed_files.contains(&deleted), "{report:?}");
    assert!(report.unknown_files.is_empty(), "{report:?}");
    assert_eq!(
        files(fs.as_ref(), dir),
        before,
        "the read-only open changed files"
    );

    let (log, report) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    assert!(report.removed_files.contains(&cleaned), "{report:?}");
    assert!(report.removed_files.contains(&deleted), "{report:?}");
    assert!(report.unknown_files.is_empty(), "{report:?}");
    assert_eq!(log.next_offset(), 4);
    assert!(!fs.exists(&dir.join(&cleaned)));
    assert!(!fs.exists(&dir.join(&deleted)));
}

#[test]
fn cli_names_the_swap_file_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let fs: Arc<dyn FileSystem> = Arc::new(seglog::fs::StdFs::new());
    kafka_like_log(&fs, &dir);
    let log = dir.join(filename::build(2, ".log"));
    std::fs::rename(&log, dir.join("00000000000000000002.log.swap")).unwrap();
    let before = cli_support::snapshot(&dir);
    let d = dir.to_str().unwrap();
    let batch = r#"[{"key":"x","value":"y","ts":9}]"#;
    for args in [
        vec!["dump", d],
        vec!["recover", d],
        vec!["append", d, "--batch", batch],
        vec!["compact", d, "--now", "10", "--delete-retention-ms", "1000"],
    ] {
        let out = cli_support::seglog(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(
            stderr.contains("00000000000000000002.log.swap"),
            "{args:?}: {stderr}"
        );
        assert_eq!(cli_support::snapshot(&dir), before, "{args:?}");
    }
}

//! Opening costs what a crash left (README, "Guarantees").
//!
//! The failure: every writable open removed the clean-shutdown marker and fsynced
//! the directory, and every close wrote the marker again (temp, fsync, rename,
//! directory fsync) after fsyncing the active segment's three files, though nothing
//! had changed: a restart that only reads cost ten file-system calls that write,
//! and nothing checked it (an engine that rewrote the recovery point at every open
//! passed every check as well).
//!
//! The invariant, traced through the seam (`TraceFs` over `SimFs`): a writable open
//! and close of a cleanly closed log of several segments, and a read-only open with
//! a read of every record, issue no write, fsync, rename or remove; the log still
//! opens as cleanly closed afterwards. The first append after such an open removes
//! the marker and fsyncs the directory before it writes, so no crash after it finds
//! a marker for a segment that grew; a marker that vouches for a segment other than
//! the last one is ignored, and the report says so.
//!
//! The fix: the open keeps a marker it trusted (`trust::settle`) and skips its
//! directory fsync when it changed nothing; the close returns when the marker there
//! is the one it would write; `Log::unmark` removes it before the first change
//! (model (e): `open_leaves_only_a_true_marker`, `trusted_needs_no_rescan`).

use std::path::Path;
use std::sync::Arc;

use seglog::format::recovery_point::CLEAN_SHUTDOWN_NAME;
use seglog::fs::sim::{CrashMode, SimFs};
use seglog::fs::FileSystem;
use seglog::fs::{TraceCall, TraceFs};
use seglog::{Log, LogConfig, NewRecord};

const DIR: &str = "/data/orders-0";

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        ..LogConfig::default()
    }
}

fn record(i: usize) -> NewRecord {
    NewRecord::new(
        Some(format!("k{}", i % 7).into_bytes()),
        Some(vec![b'v'; 40]),
        1_000 + i as i64,
    )
}

/// A log of several segments on `fs`, closed cleanly.
fn closed_log(fs: &Arc<SimFs>) -> usize {
    let (mut log, _) = Log::open_with(fs.clone(), DIR, config()).unwrap();
    for i in 0..30 {
        log.append(&[record(i), record(i + 100)]).unwrap();
    }
    let segments = log.segments().len();
    log.close().unwrap();
    assert!(segments >= 3, "{segments} segments");
    segments
}

/// The calls `traced` recorded, the writer lock's aside.
fn calls(traced: &TraceFs) -> Vec<String> {
    traced
        .ops()
        .into_iter()
        .filter(|op| op.call != TraceCall::Lock)
        .map(|op| op.to_string())
        .collect()
}

#[test]
fn a_reopen_and_close_of_a_cleanly_closed_log_issue_no_call() {
    let fs = Arc::new(SimFs::new());
    closed_log(&fs);
    let records = {
        let (log, _) = Log::open_read_only(fs.clone(), DIR, config()).unwrap();
        log.read(0, usize::MAX).unwrap().len()
    };
    for round in 0..2 {
        let traced = Arc::new(TraceFs::new(fs.clone()));
        let (log, report) = Log::open_with(traced.clone(), DIR, config()).unwrap();
        assert!(
            report.clean_shutdown && report.scanned_segments == 0,
            "{report:?}"
        );
        log.close().unwrap();
        assert_eq!(calls(&traced), Vec::<String>::new(), "round {round}");
    }
    let traced = Arc::new(TraceFs::new(fs.clone()));
    let (log, report) = Log::open_read_only(traced.clone(), DIR, config()).unwrap();
    assert!(report.clean_shutdown, "{report:?}");
    assert_eq!(log.read(0, usize::MAX).unwrap().len(), records);
    drop(log);
    assert_eq!(calls(&traced), Vec::<String>::new());
}

#[test]
fn the_first_append_after_a_quiet_open_removes_the_marker_durably_first() {
    let fs = Arc::new(SimFs::new());
    closed_log(&fs);
    let traced = Arc::new(TraceFs::new(fs.clone()));
    let (mut log, _) = Log::open_with(traced.clone(), DIR, config()).unwrap();
    log.append(&[record(1)]).unwrap();
    let calls = calls(&traced);
    let marker = Path::new(DIR).join(CLEAN_SHUTDOWN_NAME);
    assert_eq!(
        calls[..2],
        [
            format!("remove_file {}", marker.display()),
            format!("sync_dir {DIR}")
        ],
        "{calls:?}"
    );
    // The marker's removal is durable: no power loss now brings it back.
    let images = fs.crash_images(CrashMode::PowerLoss, 1_000);
    assert!(!images.is_empty());
    for image in &images {
        assert!(!image.fs.exists(&marker), "{:?}", image.lost);
    }
    // Later appends (and the rolls they cause) leave the marker alone: it is gone.
    let before = traced.len();
    for i in 0..5 {
        log.append(&[record(i)]).unwrap();
    }
    let more: Vec<String> = traced.ops()[before..]
        .iter()
        .map(|op| op.to_string())
        .collect();
    assert!(
        !more.iter().any(|op| op.contains(CLEAN_SHUTDOWN_NAME)),
        "{more:?}"
    );
}

#[test]
fn a_marker_for_a_segment_that_is_not_the_last_is_ignored_and_reported() {
    let fs = Arc::new(SimFs::new());
    closed_log(&fs);
    let marker = Path::new(DIR).join(CLEAN_SHUTDOWN_NAME);
    let stale = fs.read_all(&marker).unwrap();
    let (mut log, _) = Log::open_with(fs.clone(), DIR, config()).unwrap();
    log.append(&[record(3)]).unwrap();
    log.roll().unwrap();
    log.append(&[record(4)]).unwrap();
    log.flush().unwrap();
    drop(log);
    // A crash that lost the marker's removal (here: the file put back).
    fs.write_new(&marker, &stale).unwrap();
    let (_, report) = Log::open_with(fs.clone(), DIR, config()).unwrap();
    assert!(!report.clean_shutdown, "{report:?}");
    assert!(
        report
            .ignored_checkpoints
            .iter()
            .any(|i| i.contains(CLEAN_SHUTDOWN_NAME) && i.contains("last segment")),
        "{:?}",
        report.ignored_checkpoints
    );
}

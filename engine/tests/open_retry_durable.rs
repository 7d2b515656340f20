//! Regression: a failed first open left the log's directory path unsynced for good.
//!
//! An I/O-error sweep case (`src/sweep/io_errors.rs`, workload `seed-retention`,
//! `EIO` at file-system call 1). The first `Log::open` of `/data/log` creates `/data`
//! and `/data/log`, then syncs `/` to make the `data` entry durable; that sync failed,
//! so the open returned the error. The retried open found the directories present,
//! so it did not sync any parent (it only syncs the parents of directories it
//! creates itself). Every later flush synced `/data/log` but never `/`: a power loss
//! after appends and a successful flush took the whole log away.
//!
//! Invariant: after `flush` returns `Ok`, every record appended before it survives a
//! power loss. Fix (`log::recovery::recovery_sync_path`): an open of an existing log
//! that holds no data (no segment, or only empty ones) makes the directory and every
//! ancestor durable, since an earlier open may have died before doing so.

use std::path::Path;
use std::sync::Arc;

use seglog::format::NewRecord;
use seglog::fs::sim::{CrashMode, FaultKind, SimFs};
use seglog::fs::FileSystem;
use seglog::log::{Log, LogConfig};

fn open(fs: &Arc<SimFs>) -> seglog::Result<Log> {
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    Log::open_with(dyn_fs, "/data/log", LogConfig::default()).map(|(log, _)| log)
}

#[test]
fn a_retried_first_open_makes_the_log_path_durable() {
    // Every call of the first open, failed in turn: whichever failed, the retried
    // open, an append and a flush leave the record in every power-loss image.
    let clean = Arc::new(SimFs::new());
    open(&clean).unwrap();
    let first_open_calls = clean.mutating_ops();
    assert!(
        first_open_calls >= 6,
        "mkdir, 2 parent syncs, 3 creates, dir sync"
    );
    for k in 0..first_open_calls {
        let fs = Arc::new(SimFs::new());
        fs.fail_nth_with(k, FaultKind::Eio);
        assert!(open(&fs).is_err(), "call {k}: the first open must fail");
        assert_eq!(fs.fired_faults().len(), 1);
        let mut log = open(&fs).unwrap();
        log.append(&[NewRecord::new(None, Some(b"v".to_vec()), 1)])
            .unwrap();
        log.flush().unwrap();
        drop(log);
        for image in fs.crash_images(CrashMode::PowerLoss, 64) {
            let image = Arc::new(image.fs);
            assert!(
                image.exists(Path::new("/data/log")),
                "call {k}: the log directory is gone"
            );
            let log = open(&image).unwrap();
            assert_eq!(log.next_offset(), 1, "call {k}: the flushed record is lost");
        }
        assert_eq!(
            fs.pending_dir_ops(),
            0,
            "call {k}: a directory entry is not durable"
        );
    }
}

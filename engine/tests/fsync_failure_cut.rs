//! Regression (fsyncgate): a failed fsync of the active `.log` must not leave the
//! pages it failed to write in the file.
//!
//! An I/O-error sweep case (`src/sweep/io_errors.rs`), with SimFs modelling
//! Linux's behaviour: the pages whose writeback failed are marked clean, so they
//! still read back (after a reopen too), but no later fsync writes them. The log
//! was poisoned and reopened, recovery read the batch from those pages, appends
//! went on after it and a later flush returned `Ok`; a power loss then left zeros
//! where the batch was, recovery cut the segment there, and the records that
//! flush had reported durable were gone.
//!
//! Invariant: after `flush` returns `Ok`, every record appended before it survives a
//! power loss. Fix (`log::write::sync_active_log`): when the fsync of the active
//! `.log` fails, cut the file back to its length at the last successful fsync; what
//! is cut was never reported durable.

use std::path::Path;
use std::sync::Arc;

use seglog::format::NewRecord;
use seglog::fs::sim::{CrashMode, FaultKind, SimFs};
use seglog::fs::FileSystem;
use seglog::log::{Log, LogConfig};
use seglog::Error;

const SEGMENT: &str = "/log/00000000000000000000.log";

fn open(fs: &Arc<SimFs>) -> Log {
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    Log::open_with(dyn_fs, "/log", LogConfig::default())
        .unwrap()
        .0
}

fn record(value: &str) -> [NewRecord; 1] {
    [NewRecord::new(None, Some(value.as_bytes().to_vec()), 1)]
}

#[test]
fn a_failed_fsync_cuts_the_unsynced_tail_and_later_flushes_hold() {
    for kind in [FaultKind::Eio, FaultKind::Enospc] {
        let fs = Arc::new(SimFs::new());
        let mut log = open(&fs);
        log.append(&record("a")).unwrap();
        log.flush().unwrap();
        let synced = fs.len(Path::new(SEGMENT)).unwrap();
        log.append(&record("b")).unwrap();
        // flush: the first call is the fsync of the .log.
        fs.fail_nth_with(fs.mutating_ops(), kind);
        assert!(matches!(log.flush(), Err(Error::Io { .. })), "{kind}");
        assert!(matches!(log.flush(), Err(Error::Poisoned)));
        assert_eq!(
            fs.len(Path::new(SEGMENT)).unwrap(),
            synced,
            "{kind}: the batch in the doomed pages is cut"
        );
        drop(log);

        let mut log = open(&fs);
        assert_eq!(log.next_offset(), 1, "{kind}: `b` was never durable");
        log.append(&record("c")).unwrap();
        log.flush().unwrap();
        drop(log);
        for image in fs.crash_images(CrashMode::PowerLoss, usize::MAX) {
            let lost: Vec<String> = image.lost.iter().map(ToString::to_string).collect();
            let log = open(&Arc::new(image.fs));
            let values: Vec<Vec<u8>> = log
                .read(0, usize::MAX)
                .unwrap()
                .into_iter()
                .filter_map(|r| r.value.map(|v| v.to_vec()))
                .collect();
            assert_eq!(
                values,
                vec![b"a".to_vec(), b"c".to_vec()],
                "{kind}: image lost {lost:?}"
            );
        }
    }
}

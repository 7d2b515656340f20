//! A read-only open takes no lock, so a writer may work beside it at any point of
//! it. Every file-system call of a read-only open and of its read is a stop
//! (`workload::interleave`, deterministic): at each, a writer opens the log
//! (which removes the clean-shutdown marker the reader may be about to read),
//! appends and flushes, and either closes (which writes the marker again) or
//! leaves the log open (the marker stays gone). The read-only
//! open and its read succeed at every stop and see every record acknowledged
//! before they began, in offset order, nothing else but the writer's appends.

use std::path::Path;
use std::sync::Arc;

use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{Log, LogConfig, NewRecord};
use seglog_suite::workload::interleave::interleave;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 400,
        ..LogConfig::default()
    }
}

fn record(i: i64) -> NewRecord {
    NewRecord::new(
        Some(format!("k{i}").into_bytes()),
        Some(format!("v{i}").into_bytes()),
        i,
    )
}

/// Appends `n` records from offset `from`, one batch each, flushes, and closes
/// the log (the clean-shutdown marker written) if `close`, else leaves it as a
/// writer still at work does (no marker).
fn write(fs: &Arc<dyn FileSystem>, dir: &Path, from: i64, n: i64, close: bool) {
    let (mut log, _) = Log::open_with(Arc::clone(fs), dir, config()).unwrap();
    for i in from..from + n {
        log.append(&[record(i)]).unwrap();
    }
    log.flush().unwrap();
    if close {
        log.close().unwrap();
    }
}

#[test]
fn a_read_only_open_reads_every_acknowledged_record_whatever_a_writer_does_beside_it() {
    for close in [true, false] {
        walk_every_stop(close);
    }
}

fn walk_every_stop(close: bool) {
    let dir = Path::new("/log");
    let before = 12; // a few segments of 400 bytes
    let mut at = 0u64;
    loop {
        let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
        fs.create_dir_all(dir).unwrap();
        write(&fs, dir, 0, before, true);
        let (read, (), during) = interleave(
            &fs,
            at,
            |gate| -> seglog::Result<Vec<i64>> {
                let (log, _) = Log::open_read_only(gate, dir, config())?;
                let records = log.read(0, usize::MAX)?;
                Ok(records.iter().map(|r| r.offset).collect())
            },
            || write(&fs, dir, before, 3, close),
        );
        let offsets = read.unwrap_or_else(|e| panic!("stop {at} (close {close}): {e}"));
        assert!(
            offsets.len() >= before as usize && offsets.len() <= before as usize + 3,
            "stop {at}: {offsets:?}"
        );
        let expected: Vec<i64> = (0..offsets.len() as i64).collect();
        assert_eq!(offsets, expected, "stop {at}");
        if !during {
            break; // past the last call of the open and its read
        }
        at += 1;
    }
    assert!(at > 10, "the open and its read made {at} calls");
}

//! What the trusting-open tests share: a small log of many segments, closed
//! cleanly, so that the recovery point and the marker vouch for all of it.
#![allow(dead_code)] // each test binary uses a part of it

use std::path::Path;
use std::sync::Arc;

use seglog::format::filename;
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{Log, LogConfig, NewRecord};

/// About 1 KB segments, an offset index entry every 256 bytes.
pub fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1_000,
        index_interval_bytes: 256,
        ..LogConfig::default()
    }
}

/// Appends one record a call (timestamp = offset) until `dir` has `segments`
/// segments, then closes cleanly.
pub fn fill(fs: Arc<dyn FileSystem>, dir: &Path, segments: usize) {
    let (mut log, _) = Log::open_with(fs, dir, config()).unwrap();
    let mut ts = 0;
    while log.segments().len() < segments {
        let record = NewRecord::new(
            Some(format!("k{ts}").into_bytes()),
            Some(vec![b'v'; 90]),
            ts,
        );
        log.append(std::slice::from_ref(&record)).unwrap();
        ts += 1;
    }
    log.close().unwrap();
}

/// A cleanly closed log of `segments` segments at `/log` on a new SimFs.
pub fn closed_log(segments: usize) -> (Arc<SimFs>, &'static Path) {
    let fs = Arc::new(SimFs::new());
    let dir = Path::new("/log");
    fill(fs.clone(), dir, segments);
    (fs, dir)
}

/// The base offsets of the segments of `dir`, ascending (the last one active).
pub fn segment_bases(fs: &SimFs, dir: &Path) -> Vec<i64> {
    let mut bases: Vec<i64> = fs
        .list_dir(dir)
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(filename::LOG_SUFFIX))
        .map(|n| filename::parse(n).unwrap().0)
        .collect();
    bases.sort();
    bases
}

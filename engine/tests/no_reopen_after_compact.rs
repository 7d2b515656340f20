//! `compact` adopts the segments it installed instead of reopening the log ("no
//! reopen after cleanup"). A reopen would scan and CRC-check every segment of the
//! new directory if the build wrote only `.log` files: no index file and no
//! recovery point. The build writes each new segment's `.index` and
//! `.timeindex` and a recovery point into the temp dir, all listed in the manifest
//! (model (b), property `installed_content_trusted`; variant `point-on-reopen`
//! refuted).
//!
//! Invariants checked:
//! - after the temp dir is renamed to the live directory, neither `compact` nor
//!   `retain` reads a `.log` of the live directory (a file system wrapper counts
//!   every read; the same counter sees the full scan of `Log::open_checked`, so it
//!   can fail);
//! - the open log reads, appends and rolls on as the spec says;
//! - an open after a crash (the handle dropped) trusts every new closed segment and
//!   scans only the active one; an open after a clean close reads no segment data.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use seglog::fs::{FileSystem, StdFs};
use seglog::{Log, LogConfig, NewRecord};

/// [`StdFs`] counting the bytes read from `.log` files of `live` once `armed`;
/// the swap of the install (the rename of the temp dir onto `live`) arms it.
#[derive(Debug)]
struct Counting {
    inner: StdFs,
    live: PathBuf,
    armed: AtomicBool,
    log_bytes_read: AtomicU64,
}

impl Counting {
    fn count(&self, path: &Path, bytes: u64) {
        let segment = path.extension().is_some_and(|e| e == "log");
        if self.armed.load(Ordering::SeqCst) && segment && path.starts_with(&self.live) {
            self.log_bytes_read.fetch_add(bytes, Ordering::SeqCst);
        }
    }

    fn take(&self) -> u64 {
        self.log_bytes_read.swap(0, Ordering::SeqCst)
    }
}

impl FileSystem for Counting {
    fn try_lock(&self, path: &Path) -> std::io::Result<seglog::fs::FileLock> {
        self.inner.try_lock(path)
    }
    fn create_dir_all(&self, path: &Path) -> std::io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn create_file(&self, path: &Path) -> std::io::Result<()> {
        self.inner.create_file(path)
    }
    fn append(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        self.inner.append(path, data)
    }
    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read_at(path, offset, buf)?;
        self.count(path, n as u64);
        Ok(n)
    }
    fn set_len(&self, path: &Path, len: u64) -> std::io::Result<()> {
        self.inner.set_len(path, len)
    }
    fn sync_file(&self, path: &Path) -> std::io::Result<()> {
        self.inner.sync_file(path)
    }
    fn sync_dir(&self, path: &Path) -> std::io::Result<()> {
        self.inner.sync_dir(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.inner.rename(from, to)?;
        if to == self.live {
            self.armed.store(true, Ordering::SeqCst);
        }
        Ok(())
    }
    fn hard_link(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.inner.hard_link(from, to)
    }
    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        self.inner.remove_file(path)
    }
    fn remove_dir_all(&self, path: &Path) -> std::io::Result<()> {
        self.inner.remove_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> std::io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }
    fn len(&self, path: &Path) -> std::io::Result<u64> {
        self.inner.len(path)
    }
    fn map(&self, path: &Path) -> std::io::Result<bytes::Bytes> {
        let bytes = self.inner.map(path)?;
        self.count(path, bytes.len() as u64);
        Ok(bytes)
    }
}

fn record(key: &str, value: &str, ts: i64) -> NewRecord {
    NewRecord::new(
        Some(key.as_bytes().to_vec()),
        Some(value.as_bytes().to_vec()),
        ts,
    )
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 400,
        index_interval_bytes: 100,
        ..LogConfig::default()
    }
}

#[test]
fn compact_and_retain_read_no_segment_after_the_install() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("p0");
    let fs = Arc::new(Counting {
        inner: StdFs::new(),
        live: dir.clone(),
        armed: AtomicBool::new(false),
        log_bytes_read: AtomicU64::new(0),
    });
    let (mut log, _) = Log::open_with(fs.clone(), &dir, config()).unwrap();
    for round in 0..3 {
        for key in 0..8 {
            let value = format!("v{round}");
            log.append(&[record(&format!("k{key}"), &value, round * 100 + key)])
                .unwrap();
        }
    }
    log.roll().unwrap();
    log.append(&[record("k0", "active", 1_000)]).unwrap();
    let closed_before = log.segments().len() - 1;
    assert!(closed_before >= 3, "{:?}", log.segments());

    let report = log.compact(1_000, 86_400_000, None).unwrap();
    assert!(
        fs.armed.load(Ordering::SeqCst),
        "the install swapped directories"
    );
    assert_eq!(
        fs.take(),
        0,
        "compact read the live segments after the swap"
    );
    assert_eq!(report.records_after, 7, "{report:?}"); // k1..k7 round 2; k0 is active
    let closed_after = log.segments().len() - 1;
    assert_eq!(report.segments_after as usize, closed_after);

    // The adopted log is the one an open would find.
    let read: Vec<(i64, String)> = log
        .read(0, 1 << 20)
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.offset,
                String::from_utf8(r.value.unwrap().to_vec()).unwrap(),
            )
        })
        .collect();
    assert_eq!(read.len(), 8);
    assert!(read[..7].iter().all(|(_, v)| v == "v2"), "{read:?}");
    assert_eq!(read[7], (24, "active".to_string()));
    fs.take();
    log.append(&[record("k9", "after", 1_001)]).unwrap();
    log.roll().unwrap();
    log.append(&[record("k9", "last", 1_002)]).unwrap();

    // Retention too: it forgets the deleted prefix, nothing is read.
    let first = log.segments()[0].base_offset;
    let outcome = log.retain(2_000, Some(1_500), None).unwrap();
    assert!(outcome.deleted_segments.contains(&first), "{outcome:?}");
    assert_eq!(fs.take(), 0, "retain read a live segment");
    log.flush().unwrap();
    let closed = log.segments().len() as u64 - 1;
    drop(log); // a crash: no clean close

    // After a crash only the active segment is scanned: the compaction's recovery
    // point (carried forward by the roll) vouches for every closed segment.
    let (log, report) = Log::open_with(fs.clone(), &dir, config()).unwrap();
    assert_eq!(report.trusted_segments, closed, "{report:?}");
    assert_eq!(report.scanned_segments, 1, "{report:?}");
    assert!(report.rescanned.is_empty(), "{report:?}");
    log.close().unwrap();
    fs.take();
    let (log, report) = Log::open_with(fs.clone(), &dir, config()).unwrap();
    assert_eq!(report.scanned_bytes, 0, "{report:?}");
    // Only the header of the active segment's one batch: the open takes the next
    // offset from the batches after the last index entry (`seglog::segment::tail`).
    assert_eq!(fs.take(), seglog::format::batch::HEADER_LEN as u64);
    drop(log);

    // The counter sees a scan: a full check reads every segment.
    let (_log, report) = Log::open_checked(fs.clone(), &dir, config()).unwrap();
    assert!(report.scanned_bytes > 0);
    assert_eq!(fs.take(), report.scanned_bytes);
}

#[test]
fn an_open_after_a_crash_right_after_compact_trusts_the_new_segments() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("p0");
    let (mut log, _) = Log::open(&dir, config()).unwrap();
    for key in 0..40 {
        log.append(&[record(&format!("k{}", key % 10), "v", key)])
            .unwrap();
    }
    log.roll().unwrap();
    log.append(&[record("k0", "active", 100)]).unwrap();
    let report = log.compact(100, 86_400_000, None).unwrap();
    let expected = log.read(0, 1 << 20).unwrap();
    let closed = report.segments_after;
    assert!(closed >= 1);
    drop(log); // a crash right after the install

    let (log, report) = Log::open(&dir, config()).unwrap();
    assert_eq!(report.recovery_point, Some(40), "{report:?}");
    assert_eq!(report.trusted_segments, closed, "{report:?}");
    assert_eq!(report.scanned_segments, 1, "{report:?}");
    assert!(report.rebuilt_indexes.is_empty(), "{report:?}");
    assert_eq!(log.read(0, 1 << 20).unwrap(), expected);
    // The index files the build wrote are the ones a full check keeps.
    drop(log);
    let (_log, checked) = Log::open_checked(Arc::new(StdFs::new()), &dir, config()).unwrap();
    assert!(checked.rebuilt_indexes.is_empty(), "{checked:?}");
}

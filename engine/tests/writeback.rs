//! `LogConfig::writeback_bytes`: append starts the write-back of the active
//! segment each time it grows past another multiple of that many bytes
//! (`FileSystem::start_writeback`, `sync_file_range(SYNC_FILE_RANGE_WRITE)` on
//! the real disk), and the hint never changes an outcome.
//!
//! Invariants checked:
//! * a hint is started exactly when an append (structured, compressed or raw)
//!   takes the active segment's `.log` across a multiple of `writeback_bytes`
//!   (per segment: a roll starts the count again), on that file, and never with
//!   `writeback_bytes = 0`;
//! * a hint that fails changes nothing: no append, flush or roll fails, the log is
//!   not poisoned, and every record reads back after a reopen (a write-back error
//!   is the next fsync's to report; docs/design.md section 1).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use seglog::format::{filename, Compression, NewRecord, RecordBatch};
use seglog::fs::sim::SimFs;
use seglog::fs::{FileSystem, StdFs};
use seglog::log::{Log, LogConfig};

/// A file system that records every write-back hint (its path) and can fail them.
#[derive(Debug)]
struct Hinted {
    inner: Arc<dyn FileSystem>,
    hints: Mutex<Vec<PathBuf>>,
    fail_hints: AtomicBool,
}

impl Hinted {
    fn new(inner: Arc<dyn FileSystem>) -> Arc<Hinted> {
        Arc::new(Hinted {
            inner,
            hints: Mutex::new(Vec::new()),
            fail_hints: AtomicBool::new(false),
        })
    }

    fn hints(&self) -> Vec<PathBuf> {
        self.hints.lock().unwrap().clone()
    }
}

impl FileSystem for Hinted {
    fn try_lock(&self, path: &Path) -> std::io::Result<seglog::fs::FileLock> {
        self.inner.try_lock(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn create_file(&self, path: &Path) -> io::Result<()> {
        self.inner.create_file(path)
    }
    fn append(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.inner.append(path, data)
    }
    fn append_vectored(&self, path: &Path, parts: &[&[u8]]) -> io::Result<()> {
        self.inner.append_vectored(path, parts)
    }
    fn start_writeback(&self, path: &Path) -> io::Result<()> {
        self.hints.lock().unwrap().push(path.to_path_buf());
        if self.fail_hints.load(Ordering::SeqCst) {
            return Err(io::Error::other("injected write-back failure"));
        }
        self.inner.start_writeback(path)
    }
    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_at(path, offset, buf)
    }
    fn set_len(&self, path: &Path, len: u64) -> io::Result<()> {
        self.inner.set_len(path, len)
    }
    fn sync_file(&self, path: &Path) -> io::Result<()> {
        self.inner.sync_file(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.sync_dir(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.hard_link(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }
    fn len(&self, path: &Path) -> io::Result<u64> {
        self.inner.len(path)
    }
    fn map(&self, path: &Path) -> io::Result<bytes::Bytes> {
        self.inner.map(path)
    }
}

/// Records of sizes that vary from append to append (so the multiples are
/// crossed at every phase), `n` of them from `seed`.
fn records(seed: u64, n: usize) -> Vec<NewRecord> {
    (0..n as u64)
        .map(|i| {
            let len = ((seed * 7919 + i * 104_729) % 700) as usize;
            NewRecord::new(
                Some(format!("k{}", (seed + i) % 13).into_bytes()),
                Some(vec![b'v'; len]),
                1_700_000_000_000 + seed as i64,
            )
        })
        .collect()
}

/// The active segment's `.log` and its length.
fn active(log: &Log) -> (PathBuf, u64) {
    let last = log.segments().pop().unwrap();
    let path = log.dir().join(filename::build(last.base_offset, ".log"));
    (path, last.bytes)
}

/// How an append is made.
#[derive(Debug, Clone, Copy)]
enum Way {
    Structured,
    Compressed,
    Raw,
}

fn append(log: &mut Log, way: Way, seed: u64) {
    let records = records(seed, 1 + (seed % 5) as usize);
    match way {
        Way::Structured => {
            log.append(&records).unwrap();
        }
        Way::Compressed => {
            // The compressed path (without the codecs built: stamped
            // LogAppendTime, which takes the same path).
            if Compression::Gzip.is_available() {
                log.append_with(&records, Compression::Gzip, None).unwrap();
            } else {
                log.append_with(&records, Compression::None, Some(1_700_000_000_000))
                    .unwrap();
            }
        }
        Way::Raw => {
            // Two producer batches in one request: one write for both.
            let mut request = RecordBatch::build(0, &records).encode();
            request.extend(RecordBatch::build(0, &records[..1]).encode());
            log.append_batches(&request).unwrap();
        }
    }
}

/// Appends with every way, checking after each append that a hint was started
/// exactly when the active `.log` crossed a multiple of `every`, on that file.
fn hints_follow_the_multiples(fs: Arc<dyn FileSystem>, dir: &Path, every: u64, segment: u64) {
    let hinted = Hinted::new(fs);
    let config = LogConfig {
        segment_bytes: segment,
        writeback_bytes: every,
        ..LogConfig::default()
    };
    let (mut log, _) = Log::open_with(hinted.clone(), dir, config).unwrap();
    let (mut crossings, mut rolls) = (0, 0);
    for seed in 0..240u64 {
        let way = [Way::Structured, Way::Compressed, Way::Raw][(seed % 3) as usize];
        let (path_before, len_before) = active(&log);
        let hints_before = hinted.hints().len();
        append(&mut log, way, seed);
        let (path_after, len_after) = active(&log);
        // The segments this append wrote to: the one active before it and, after
        // a roll, the new one from 0 (a raw request's first batch may still fit
        // the old segment, its second not).
        let mut written = vec![(
            path_before.clone(),
            len_before,
            hinted.len(&path_before).unwrap(),
        )];
        if path_after != path_before {
            rolls += 1;
            written.push((path_after.clone(), 0, len_after));
        }
        let want: Vec<PathBuf> = written
            .iter()
            .filter(|(_, from, to)| every > 0 && from / every != to / every)
            .map(|(path, _, _)| path.clone())
            .collect();
        crossings += want.len();
        let new_hints = &hinted.hints()[hints_before..];
        assert_eq!(
            new_hints,
            &want[..],
            "append {seed} ({way:?}) wrote {written:?}, multiples of {every}"
        );
    }
    log.flush().unwrap();
    if every > 0 {
        assert!(
            crossings > 20,
            "only {crossings} crossings: the test lost its reach"
        );
    }
    if segment < 1 << 20 {
        assert!(rolls > 2, "only {rolls} rolls: the test lost its reach");
    }
    assert_eq!(hinted.hints().len(), crossings);
}

#[test]
fn a_hint_starts_exactly_when_the_active_segment_crosses_a_multiple() {
    for (every, segment) in [(1000, 1 << 30), (4096, 20_000), (777, 9_000)] {
        let sim = Arc::new(SimFs::new());
        hints_follow_the_multiples(sim, Path::new("/log"), every, segment);
        let tmp = tempfile::tempdir().unwrap();
        hints_follow_the_multiples(Arc::new(StdFs::new()), tmp.path(), every, segment);
    }
}

#[test]
fn no_hint_when_writeback_bytes_is_zero() {
    let sim = Arc::new(SimFs::new());
    hints_follow_the_multiples(sim, Path::new("/log"), 0, 20_000);
}

#[test]
fn a_failing_hint_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let hinted = Hinted::new(Arc::new(StdFs::new()));
    hinted.fail_hints.store(true, Ordering::SeqCst);
    let config = LogConfig {
        segment_bytes: 30_000,
        writeback_bytes: 512,
        ..LogConfig::default()
    };
    let (mut log, _) = Log::open_with(hinted.clone(), tmp.path(), config.clone()).unwrap();
    let mut appended = 0;
    for seed in 0..120u64 {
        let way = [Way::Structured, Way::Compressed, Way::Raw][(seed % 3) as usize];
        append(&mut log, way, seed);
        appended = log.next_offset();
        if seed % 17 == 0 {
            log.flush().unwrap();
        }
    }
    assert!(
        hinted.hints().len() > 50,
        "the failing hint must have been met"
    );
    assert!(log.segments().len() > 2, "rolls must have been met too");
    assert!(!log.is_poisoned());
    log.flush().unwrap();
    let want = log.read(0, usize::MAX).unwrap();
    log.close().unwrap();
    let (log, report) = Log::open(tmp.path(), config).unwrap();
    assert_eq!(report.truncated_bytes, 0, "{report:?}");
    assert_eq!(log.next_offset(), appended);
    assert_eq!(log.read(0, usize::MAX).unwrap(), want);
    assert_eq!(want.len() as i64, appended);
}

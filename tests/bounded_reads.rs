//! Files of ours grown (sparse) to 1 GiB: a `recovery-point.checkpoint`,
//! `clean-shutdown`, `cleaner-offset.checkpoint` or `.index` made an open
//! allocate and read the whole file (1-2 GiB for one `append`) before looking at
//! it. Every file's size is checked against what its format allows first (a
//! checkpoint is 18 bytes, a recovery point its segments' summaries, an index one
//! entry per batch or Kafka's preallocated size): a too-large derived hint is not
//! read, ignored and reported (the index rebuilt), and a too-large authoritative
//! file (the log start checkpoint) is `Corrupt` with nothing deleted.
//!
//! The file system below records every read; the tests check that none of the
//! grown file was read at all (no wall-clock assertions).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use seglog::format::{checkpoint, filename, recovery_point};
use seglog::fs::{FileSystem, StdFs};
use seglog::{CorruptKind, Error, Log, LogConfig, NewRecord};

const GIB: u64 = 1 << 30;

/// An incremental cleaning (a bounded offset map): it writes key summaries.
const KNOBS: seglog::compaction::CleanOptions = seglog::compaction::CleanOptions {
    dedupe_buffer_bytes: Some(1 << 20),
    min_compaction_lag_ms: 0,
    policy: seglog::compaction::CompactionPolicy::Seed,
    producer_id_expiration_ms: seglog::compaction::PRODUCER_ID_EXPIRATION_MS_DEFAULT,
};

/// [`StdFs`] that records the bytes each read asks for, by path.
#[derive(Debug, Default)]
struct ReadLog {
    inner: StdFs,
    reads: Mutex<Vec<(PathBuf, u64)>>,
}

impl ReadLog {
    fn note(&self, path: &Path, bytes: u64) {
        self.reads.lock().unwrap().push((path.to_path_buf(), bytes));
    }

    /// Bytes asked of `path` by every read so far.
    fn bytes_read(&self, path: &Path) -> u64 {
        let reads = self.reads.lock().unwrap();
        reads
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, n)| n)
            .sum()
    }
}

impl FileSystem for ReadLog {
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
    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.note(path, buf.len() as u64);
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
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.note(path, self.inner.len(path)?);
        self.inner.read_all(path)
    }
    fn map(&self, path: &Path) -> io::Result<seglog::Bytes> {
        self.note(path, self.inner.len(path)?);
        self.inner.map(path)
    }
}

fn record(key: &str) -> NewRecord {
    NewRecord::new(Some(key.as_bytes().to_vec()), Some(b"v".to_vec()), 1)
}

/// A closed log of segments 0 (offsets 0, 1) and the active 2 (offset 2) in a
/// temp dir, and the recording file system over it.
fn closed_log() -> (tempfile::TempDir, PathBuf, Arc<ReadLog>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let fs = Arc::new(ReadLog::default());
    let (mut log, _) = Log::open_with(fs.clone(), &dir, LogConfig::default()).unwrap();
    log.append(&[record("a"), record("b")]).unwrap();
    log.roll().unwrap();
    log.append(&[record("c")]).unwrap();
    log.close().unwrap();
    (tmp, dir, fs)
}

/// Grows `path` (sparse) to 1 GiB, creating it if needed.
fn grow(path: &Path) {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap();
    file.set_len(GIB).unwrap();
}

/// Opens `dir` after growing `name` to 1 GiB: the open succeeds without reading the
/// file, reports `name` ignored, and the log reads all three records.
fn grown_hint_is_ignored_unread(name: &str) {
    let (_tmp, dir, fs) = closed_log();
    let path = dir.join(name);
    grow(&path);
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let (log, report) = Log::open_with(dyn_fs, &dir, LogConfig::default()).unwrap();
    assert_eq!(fs.bytes_read(&path), 0, "{name} was read");
    assert_eq!(report.ignored_checkpoints.len(), 1, "{report:?}");
    assert!(report.ignored_checkpoints[0].contains(name), "{report:?}");
    assert!(
        report.ignored_checkpoints[0].contains("larger than"),
        "{report:?}"
    );
    assert_eq!(log.next_offset(), 3);
    assert_eq!(log.read(0, usize::MAX).unwrap().len(), 3);
}

#[test]
fn a_grown_recovery_point_is_ignored_unread() {
    grown_hint_is_ignored_unread(recovery_point::RECOVERY_POINT_NAME);
}

#[test]
fn a_grown_clean_shutdown_marker_is_ignored_unread() {
    grown_hint_is_ignored_unread(recovery_point::CLEAN_SHUTDOWN_NAME);
}

#[test]
fn a_grown_clean_point_is_ignored_unread() {
    grown_hint_is_ignored_unread(checkpoint::CLEAN_POINT_NAME);
}

#[test]
fn a_grown_log_start_checkpoint_is_corrupt_unread_and_deletes_nothing() {
    let (_tmp, dir, fs) = closed_log();
    let path = dir.join(checkpoint::CHECKPOINT_NAME);
    grow(&path);
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let error = Log::open_with(dyn_fs, &dir, LogConfig::default()).unwrap_err();
    match error {
        Error::Corrupt { path: p, kind, .. } => {
            assert_eq!(p, path);
            assert_eq!(
                kind,
                CorruptKind::TooLarge {
                    bytes: GIB,
                    bytes_max: checkpoint::CHECKPOINT_LEN as u64
                }
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fs.bytes_read(&path), 0);
    assert!(dir.join(filename::build(0, filename::LOG_SUFFIX)).exists());
}

/// A grown `.index` of the closed segment 0 (trusted by the recovery point) or of
/// the active segment 2 (after a crash: no marker, so it is scanned) is not read,
/// and is rebuilt.
#[test]
fn a_grown_index_is_rebuilt_unread() {
    for (base, crash) in [(0, false), (2, true)] {
        let (_tmp, dir, fs) = closed_log();
        if crash {
            std::fs::remove_file(dir.join(recovery_point::CLEAN_SHUTDOWN_NAME)).unwrap();
        }
        let path = dir.join(filename::build(base, filename::INDEX_SUFFIX));
        grow(&path);
        let dyn_fs: Arc<dyn FileSystem> = fs.clone();
        let (log, report) = Log::open_with(dyn_fs, &dir, LogConfig::default()).unwrap();
        assert_eq!(fs.bytes_read(&path), 0, "segment {base}");
        let rebuilt: Vec<_> = report
            .rebuilt_indexes
            .iter()
            .map(|r| r.file.clone())
            .collect();
        assert_eq!(
            rebuilt,
            vec![filename::build(base, filename::INDEX_SUFFIX)],
            "{report:?}"
        );
        assert_eq!(
            report.rebuilt_indexes[0].rule,
            seglog::segment::IndexRule::TooLarge
        );
        assert!(std::fs::metadata(&path).unwrap().len() < 1024);
        assert_eq!(log.read(0, usize::MAX).unwrap().len(), 3);
    }
}

#[test]
fn a_grown_manifest_is_corrupt_unread() {
    let (_tmp, dir, fs) = closed_log();
    let paths = seglog::install::InstallPaths::new(&dir).unwrap();
    grow(&paths.manifest);
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let error = Log::open_with(dyn_fs, &dir, LogConfig::default()).unwrap_err();
    match error {
        Error::Corrupt {
            path,
            kind: CorruptKind::TooLarge { bytes, .. },
            ..
        } => {
            assert_eq!(path, paths.manifest);
            assert_eq!(bytes, GIB);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fs.bytes_read(&paths.manifest), 0);
    assert!(dir.join(filename::build(0, filename::LOG_SUFFIX)).exists());
}

#[test]
fn a_grown_key_summary_is_not_read_and_its_segment_is_rewritten() {
    let (_tmp, dir, fs) = closed_log();
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let (mut log, _) = Log::open_with(dyn_fs.clone(), &dir, LogConfig::default()).unwrap();
    // An incremental pass (a bounded map) writes a key summary per output segment.
    log.clean(10, 1000, Some(1), KNOBS).unwrap();
    log.append(&[record("d")]).unwrap();
    log.roll().unwrap();
    log.close().unwrap();
    let keys: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "keys"))
        .collect();
    assert!(!keys.is_empty(), "the cleaning wrote key summaries");
    for path in &keys {
        grow(path);
    }
    let (mut log, _) = Log::open_with(dyn_fs, &dir, LogConfig::default()).unwrap();
    let report = log.clean(10, 1000, Some(1), KNOBS).unwrap();
    assert_eq!(report.segments_carried, 0, "no summary is trusted");
    for path in &keys {
        assert_eq!(fs.bytes_read(path), 0, "{}", path.display());
    }
    assert_eq!(log.read(0, usize::MAX).unwrap().len(), 4);
}

#[test]
fn a_grown_txn_index_is_not_read_and_is_rewritten() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let fs = Arc::new(ReadLog::default());
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let (mut log, _) = Log::open_with(dyn_fs.clone(), &dir, LogConfig::default()).unwrap();
    let producer = seglog::Producer::new(7, 0);
    log.append_transactional(producer, &[record("t")]).unwrap();
    log.append_control(seglog::ControlKind::Abort, 7, 0, 1)
        .unwrap();
    log.append(&[record("a")]).unwrap();
    log.roll().unwrap();
    log.close().unwrap();
    let path = dir.join(filename::build(0, filename::TXN_INDEX_SUFFIX));
    assert!(path.exists(), "the abort wrote the segment's .txnindex");
    grow(&path);
    let (log, _) = Log::open_with(dyn_fs, &dir, LogConfig::default()).unwrap();
    assert_eq!(log.last_stable_offset().unwrap(), 3);
    let committed = log
        .read_with(0, usize::MAX, seglog::Isolation::ReadCommitted)
        .unwrap();
    assert_eq!(committed.len(), 1, "the aborted record is still hidden");
    assert_eq!(fs.bytes_read(&path), 0);
    assert!(std::fs::metadata(&path).unwrap().len() < 1024, "rewritten");
}

/// A closed segment's `.txnindex` grown to 1 GiB under a kafka-policy cleaning of
/// transactional data. The cleaner reads each closed segment's aborted-transaction
/// entries; one entry per ABORT marker, each a whole batch of the `.log`, bounds
/// the file by the segment's length: the grown one is not read at all.
#[test]
fn a_grown_txn_index_is_not_read_by_the_kafka_cleaner() {
    use seglog::{ControlKind, Producer};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let fs = Arc::new(ReadLog::default());
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let (mut log, _) = Log::open_with(dyn_fs.clone(), &dir, LogConfig::default()).unwrap();
    let producer = Producer::new(7, 0);
    log.append_transactional(producer, &[record("a")]).unwrap();
    log.append_control(ControlKind::Abort, 7, 0, 1).unwrap();
    log.append(&[record("a"), record("b")]).unwrap();
    log.roll().unwrap();
    log.append(&[record("c")]).unwrap();
    log.close().unwrap();
    let path = dir.join(filename::build(0, filename::TXN_INDEX_SUFFIX));
    grow(&path);
    let (mut log, _) = Log::open_with(dyn_fs, &dir, LogConfig::default()).unwrap();
    let kafka = seglog::compaction::CleanOptions {
        policy: seglog::compaction::CompactionPolicy::Kafka,
        dedupe_buffer_bytes: None,
        ..KNOBS
    };
    // The grown index is ignored like an undecodable one (the log's own state
    // pass rewrites it): the cleaning succeeds, and removes the aborted record.
    let report = log.clean(10, 1000, None, kafka).unwrap();
    assert!(report.records_after < report.records_before, "{report:?}");
    assert_eq!(fs.bytes_read(&path), 0, "the grown .txnindex was read");
}

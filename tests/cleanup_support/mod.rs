//! Shared helpers of the `cleanup_*` tests: writing a log directory straight from
//! batches, dumping one, and a file system that "crashes" after N mutating calls.
#![allow(dead_code)]

pub mod source;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use seglog::format::{filename, NewRecord, RecordBatch};
use seglog::fs::{FileSystem, StdFs};
use seglog::Log;
use seglog_model::spec::SpecLog;
use seglog_suite::workload;

/// A record for tests: `k`/`v` of `None` mean a null key/value.
pub fn rec(key: Option<&str>, value: Option<&str>, ts: i64) -> NewRecord {
    NewRecord::new(
        key.map(|k| k.as_bytes().to_vec()),
        value.map(|v| v.as_bytes().to_vec()),
        ts,
    )
}

/// One appended record of a workload step: key, value, timestamp.
pub type Rec = (Option<&'static str>, Option<&'static str>, i64);

/// The seeds' retention log as workload steps: one keyless record per segment,
/// closed maxima 0, 50, 150, active 250 (with now 300 and `retention_ms` 100,
/// retention deletes the first three segments).
pub fn seed_retention_steps() -> Vec<Option<Vec<Rec>>> {
    vec![
        Some(vec![(None, Some("0"), 0)]),
        None,
        Some(vec![(None, Some("50"), 50)]),
        None,
        Some(vec![(None, Some("150"), 150)]),
        None,
        Some(vec![(None, Some("250"), 250)]),
    ]
}

/// Applies workload `steps` to the engine and to the spec alike: `None` is a roll,
/// `Some(records)` one appended batch.
pub fn apply_steps(log: &mut Log, spec: &mut SpecLog, steps: &[Option<Vec<Rec>>]) {
    for step in steps {
        let op = match step {
            None => workload::Op::Roll,
            Some(records) => workload::Op::Append {
                records: records
                    .iter()
                    .map(|(k, v, ts)| workload::RecordSpec {
                        key: k.map(str::to_string),
                        value: v.map(str::to_string),
                        ts: *ts,
                    })
                    .collect(),
                codec: None,
                log_append_time: None,
            },
        };
        workload::engine::apply(log, &op).unwrap();
        workload::spec::apply(spec, &op);
    }
}

/// Writes a log directory: each inner list is one segment's batches (records at
/// consecutive offsets from `first_offset`); an empty inner list is an empty segment.
/// The last segment is the active one. Returns the segments' base offsets.
pub fn write_log(
    fs: &dyn FileSystem,
    dir: &Path,
    first_offset: i64,
    segments: &[Vec<Vec<NewRecord>>],
) -> Vec<i64> {
    fs.create_dir_all(dir).unwrap();
    let mut next = first_offset;
    let mut bases = Vec::new();
    for batches in segments {
        let path = dir.join(filename::build(next, filename::LOG_SUFFIX));
        bases.push(next);
        fs.create_file(&path).unwrap();
        for records in batches {
            let batch = RecordBatch::build(next, records);
            fs.append(&path, &batch.encode()).unwrap();
            next = batch.next_offset();
        }
        fs.sync_file(&path).unwrap();
    }
    fs.sync_dir(dir).unwrap();
    bases
}

/// One stored record as a reader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub timestamp: i64,
    pub control: bool,
}

/// The reader's view of a log directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dump {
    pub log_start_offset: i64,
    pub next_offset: i64,
    pub segments: Vec<(i64, u64)>,
    pub rows: Vec<Row>,
}

pub fn dump(fs: &dyn FileSystem, dir: &Path) -> Dump {
    let metas = source::scan(fs, dir).unwrap();
    assert!(!metas.is_empty(), "a log has an active segment");
    for pair in metas.windows(2) {
        assert!(
            pair[0].next_offset <= pair[1].base_offset,
            "segments overlap"
        );
    }
    let mut rows = Vec::new();
    for meta in &metas {
        let path = source::segment_path(dir, meta.base_offset, filename::LOG_SUFFIX);
        for batch in source::read_batches(fs, &path, meta.base_offset).unwrap() {
            for record in &batch.records {
                rows.push(Row {
                    offset: batch.offset_of(record),
                    key: record.key.clone(),
                    value: record.value.clone(),
                    timestamp: batch.timestamp_of(record),
                    control: batch.is_control(),
                });
            }
        }
    }
    Dump {
        log_start_offset: metas[0].base_offset,
        next_offset: metas.last().unwrap().next_offset,
        segments: metas.iter().map(|m| (m.base_offset, m.bytes)).collect(),
        rows,
    }
}

/// Names in `dir`'s parent that start with `dir`'s name, other than `dir` itself.
pub fn siblings(dir: &Path) -> Vec<String> {
    // The writer lock's file stays beside the log (empty, as Kafka's `.lock`): it
    // is not an install leftover.
    let is_lock_file = |name: &str, n: &str| {
        n.strip_prefix(name) == Some(seglog::log::LOCK_SUFFIX)
            && std::fs::metadata(dir.parent().unwrap().join(n)).is_ok_and(|m| m.len() == 0)
    };
    let name = dir.file_name().unwrap().to_str().unwrap().to_string();
    let mut out: Vec<String> = std::fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(&name) && *n != name && !is_lock_file(&name, n))
        .collect();
    out.sort();
    out
}

/// Names in `dir` that are not segment `.log` files.
pub fn non_log_files(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !matches!(filename::parse(n), Some((_, filename::LOG_SUFFIX))))
        .collect();
    out.sort();
    out
}

/// A real file system whose mutating calls fail once `budget` of them have run,
/// leaving the disk exactly as a process crash at that call would (every completed
/// syscall persists; nothing after it happens).
#[derive(Debug)]
pub struct CrashAfter {
    inner: StdFs,
    budget: AtomicI64,
    pub crashed: std::sync::atomic::AtomicBool,
}

impl CrashAfter {
    pub fn new(budget: i64) -> Arc<CrashAfter> {
        Arc::new(CrashAfter {
            inner: StdFs::new(),
            budget: AtomicI64::new(budget),
            crashed: false.into(),
        })
    }

    pub fn crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }

    fn step(&self) -> io::Result<()> {
        if self.budget.fetch_sub(1, Ordering::SeqCst) <= 0 {
            self.crashed.store(true, Ordering::SeqCst);
            return Err(io::Error::other("simulated crash"));
        }
        Ok(())
    }
}

impl FileSystem for CrashAfter {
    fn try_lock(&self, path: &Path) -> std::io::Result<seglog::fs::FileLock> {
        self.inner.try_lock(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.step()?;
        self.inner.create_dir_all(path)
    }
    fn create_file(&self, path: &Path) -> io::Result<()> {
        self.step()?;
        self.inner.create_file(path)
    }
    fn append(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.step()?;
        self.inner.append(path, data)
    }
    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_at(path, offset, buf)
    }
    fn set_len(&self, path: &Path, len: u64) -> io::Result<()> {
        self.step()?;
        self.inner.set_len(path, len)
    }
    fn sync_file(&self, path: &Path) -> io::Result<()> {
        self.step()?;
        self.inner.sync_file(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.step()?;
        self.inner.sync_dir(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.step()?;
        self.inner.rename(from, to)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.step()?;
        self.inner.hard_link(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.step()?;
        self.inner.remove_file(path)
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.step()?;
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
}

/// A fresh temp dir with a `log` path inside (not created).
pub fn temp_log() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("log");
    (root, dir)
}

//! The log engine through its public API on a real directory: append, read, roll,
//! reopen, torn tails, corruption of closed segments, index rebuild, timestamps, gaps.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use seglog::format::batch::CRC_OFFSET;
use seglog::fs::{FileSystem, StdFs};
use seglog::log::RebuildReason;
use seglog::{ControlKind, CorruptKind, Error, Log, LogConfig, NewRecord, RecordBatch};

fn config(segment_bytes: u64, index_interval_bytes: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        index_interval_bytes,
        ..LogConfig::default()
    }
}

fn record(i: i64) -> NewRecord {
    NewRecord::new(
        Some(format!("key-{}", i % 7).into_bytes()),
        Some(format!("value-{i}").into_bytes()),
        1_000 + (i * 37) % 101,
    )
}

/// Appends `batches` batches of `per_batch` records; returns all appended records by offset.
fn fill(log: &mut Log, batches: i64, per_batch: i64) -> Vec<NewRecord> {
    let mut all = Vec::new();
    for b in 0..batches {
        let records: Vec<NewRecord> = (0..per_batch).map(|i| record(b * per_batch + i)).collect();
        let info = log.append(&records).unwrap();
        assert_eq!(info.base_offset, all.len() as i64);
        assert_eq!(info.last_offset, all.len() as i64 + per_batch - 1);
        all.extend(records);
    }
    all
}

fn read_all(log: &Log, from: i64) -> Vec<seglog::ReadRecord> {
    let mut out = Vec::new();
    let mut from = from;
    loop {
        let batch = log.read(from, 300).unwrap();
        let Some(last) = batch.last() else { break };
        from = last.offset + 1;
        out.extend(batch);
    }
    out
}

/// Every file of the directory with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        files.insert(
            entry.file_name().to_string_lossy().into_owned(),
            std::fs::read(entry.path()).unwrap(),
        );
    }
    files
}

fn seg_path(dir: &Path, base: i64, suffix: &str) -> PathBuf {
    dir.join(seglog::format::filename::build(base, suffix))
}

/// Batch start positions in a `.log` (walking the declared lengths).
fn batch_positions(bytes: &[u8]) -> Vec<usize> {
    let mut positions = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        positions.push(at);
        let (_, used) = seglog::format::batch::decode(&bytes[at..]).unwrap();
        at += used;
    }
    positions
}

#[test]
fn append_read_roll_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let (mut log, report) = Log::open(&dir, config(1_000, 100)).unwrap();
    assert!(report.created);
    assert_eq!(log.segments().len(), 1);
    assert_eq!((log.log_start_offset(), log.next_offset()), (0, 0));
    assert_eq!(log.read(0, 100).unwrap(), vec![]);
    let all = fill(&mut log, 40, 3);
    let segments = log.segments();
    assert!(segments.len() > 3, "auto-roll must have happened");
    for (i, s) in segments.iter().enumerate() {
        assert_eq!(s.closed, i + 1 < segments.len());
        assert!(s.bytes <= 1_000);
        if s.closed {
            assert!(s.records > 0);
        }
    }
    assert_eq!(segments.iter().map(|s| s.records).sum::<u64>(), 120);
    let read = read_all(&log, 0);
    assert_eq!(read.len(), all.len());
    for (i, (r, want)) in read.iter().zip(&all).enumerate() {
        assert_eq!(r.offset, i as i64);
        assert_eq!(r.key.as_deref(), want.key.as_deref());
        assert_eq!(r.value.as_deref(), want.value.as_deref());
        assert_eq!(r.timestamp, want.timestamp);
        assert!(!r.control);
    }
    let before = log.segments();
    log.close().unwrap();
    let (log, report) = Log::open(&dir, config(1_000, 100)).unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(log.segments(), before);
    assert_eq!(log.next_offset(), 120);
    assert_eq!(read_all(&log, 57).len(), 120 - 57);
}

#[test]
fn roll_rules_and_auto_roll_boundary() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(tmp.path(), config(10_000, 4096)).unwrap();
    assert_eq!(
        log.roll().unwrap(),
        0,
        "roll on an empty active segment is a no-op"
    );
    assert_eq!(log.segments().len(), 1);
    let one = log.append(&[record(0)]).unwrap();
    let size = log.segments()[0].bytes;
    assert_eq!(log.roll().unwrap(), one.last_offset + 1);
    assert_eq!(log.roll().unwrap(), 1, "second roll is a no-op");
    assert_eq!(log.segments().len(), 2);
    drop(log);
    // A segment limit of exactly two batches: the third batch rolls.
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(tmp.path(), config(2 * size, 4096)).unwrap();
    for i in 0..3 {
        log.append(&[record(0)]).unwrap();
        assert_eq!(log.segments().len(), if i < 2 { 1 } else { 2 });
    }
    // A batch larger than segment_bytes goes alone into an empty segment.
    let big = NewRecord::new(None, Some(vec![7; 3 * size as usize]), 5);
    log.append(std::slice::from_ref(&big)).unwrap();
    log.append(&[big]).unwrap();
    let segments = log.segments();
    assert_eq!(segments.len(), 4);
    assert_eq!(segments[2].records, 1);
    assert_eq!(segments[3].records, 1);
}

#[test]
fn read_bounds_and_max_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(tmp.path(), config(1 << 20, 4096)).unwrap();
    fill(&mut log, 5, 4);
    assert!(matches!(
        log.read(21, 10),
        Err(Error::OffsetOutOfRange { offset: 21, .. })
    ));
    assert!(matches!(
        log.read(-1, 10),
        Err(Error::OffsetOutOfRange { .. })
    ));
    assert!(log.read(20, 10).unwrap().is_empty());
    // max_bytes smaller than a batch still returns the batch holding `from`.
    let one = log.read(5, 1).unwrap();
    assert_eq!(
        one.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![5, 6, 7]
    );
    let everything = log.read(0, usize::MAX).unwrap();
    assert_eq!(everything.len(), 20);
    assert!(matches!(log.append(&[]), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        log.append(&[NewRecord::new(None, None, -2)]),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn control_batches_are_read_back_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(tmp.path(), LogConfig::default()).unwrap();
    log.append(&[record(1)]).unwrap();
    let info = log
        .append_control(ControlKind::Commit, 9, 2, 1_500)
        .unwrap();
    assert_eq!((info.base_offset, info.last_offset), (1, 1));
    let read = log.read(0, 1 << 20).unwrap();
    assert_eq!(read.len(), 2);
    assert!(!read.first().unwrap().control);
    assert!(read.get(1).unwrap().control);
    assert_eq!(read.get(1).unwrap().timestamp, 1_500);
    let batches = log.segment_batches(0).unwrap();
    assert_eq!(batches.len(), 2);
    assert!(batches[1].is_control());
    assert_eq!(
        batches[1].records[0].control_kind(),
        Some(ControlKind::Commit)
    );
    assert_eq!(log.segments()[0].records, 2);
}

#[test]
fn torn_tail_is_truncated_at_every_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    let (mut log, _) = Log::open(&source, config(1 << 20, 64)).unwrap();
    fill(&mut log, 6, 3);
    log.close().unwrap();
    let log_file = seg_path(&source, 0, ".log");
    let bytes = std::fs::read(&log_file).unwrap();
    let last_start = *batch_positions(&bytes).last().unwrap();
    for cut in last_start..bytes.len() {
        let dir = tmp.path().join(format!("cut-{cut}"));
        std::fs::create_dir(&dir).unwrap();
        for (name, data) in snapshot(&source) {
            std::fs::write(dir.join(name), data).unwrap();
        }
        std::fs::write(seg_path(&dir, 0, ".log"), &bytes[..cut]).unwrap();
        let (mut log, report) = Log::open(&dir, config(1 << 20, 64)).unwrap();
        if cut == last_start {
            assert_eq!(report.truncated_bytes, 0, "cut {cut}");
        } else {
            assert_eq!(
                report.truncated_bytes,
                (cut - last_start) as u64,
                "cut {cut}"
            );
            assert_eq!(report.truncated_batches, 1, "cut {cut}");
            assert_eq!(report.truncated_segment, Some(0));
        }
        assert_eq!(log.next_offset(), 15, "cut {cut}");
        assert_eq!(
            std::fs::metadata(seg_path(&dir, 0, ".log")).unwrap().len(),
            last_start as u64
        );
        assert_eq!(read_all(&log, 0).len(), 15);
        // The log keeps working, and its indexes agree with a fresh scan.
        log.append(&[record(99)]).unwrap();
        log.close().unwrap();
        let (log, report) = Log::open(&dir, config(1 << 20, 64)).unwrap();
        assert!(report.is_clean(), "cut {cut}: {report:?}");
        assert_eq!(log.next_offset(), 16);
    }
}

#[test]
fn corruption_in_a_closed_segment_is_an_error_and_modifies_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (mut log, _) = Log::open(dir, config(400, 64)).unwrap();
    fill(&mut log, 12, 2);
    // Leave an unflushed-index situation and an orphan too: nothing may change.
    log.close().unwrap();
    std::fs::write(seg_path(dir, 9_999, ".index"), b"orphan").unwrap();
    std::fs::remove_file(seg_path(dir, 0, ".timeindex")).unwrap();
    let closed = seg_path(dir, 0, ".log");
    let mut bytes = std::fs::read(&closed).unwrap();
    let positions = batch_positions(&bytes);
    let victim = positions[1];
    bytes[victim + 40] ^= 0x01; // inside the CRC-covered header
    std::fs::write(&closed, &bytes).unwrap();
    let before = snapshot(dir);
    let err = Log::open(dir, config(400, 64)).unwrap_err();
    match &err {
        Error::Corrupt {
            path,
            position,
            kind,
        } => {
            assert_eq!(path, &closed);
            assert_eq!(*position, (victim + CRC_OFFSET) as u64);
            assert!(
                matches!(kind, CorruptKind::ChecksumMismatch { .. }),
                "{kind:?}"
            );
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(err.to_string().contains("00000000000000000000.log"));
    assert_eq!(
        snapshot(dir),
        before,
        "a failed open must not modify anything"
    );
}

#[test]
fn misplaced_base_offset_in_a_closed_segment_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Segment 0 holds offsets 0..=4, and a later segment claims to start at 3.
    let first = RecordBatch::build(0, &(0..5).map(record).collect::<Vec<_>>()).encode();
    std::fs::write(seg_path(dir, 0, ".log"), &first).unwrap();
    std::fs::write(seg_path(dir, 3, ".log"), b"").unwrap();
    let before = snapshot(dir);
    let err = Log::open(dir, LogConfig::default()).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Corrupt {
                position: 0,
                kind: CorruptKind::BaseOffset { got: 0, .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(snapshot(dir), before);
}

#[test]
fn invalid_batch_in_the_middle_of_the_last_segment_truncates_from_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (mut log, _) = Log::open(dir, config(1 << 20, 64)).unwrap();
    fill(&mut log, 5, 2);
    // A crash, not a clean close: after a clean close the marker vouches for the
    // active segment and the open does not read it (damage is then a read error).
    log.flush().unwrap();
    drop(log);
    let file = seg_path(dir, 0, ".log");
    let mut bytes = std::fs::read(&file).unwrap();
    let positions = batch_positions(&bytes);
    bytes[positions[2] + 70] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();
    let (log, report) = Log::open(dir, config(1 << 20, 64)).unwrap();
    assert_eq!(report.truncated_bytes, (bytes.len() - positions[2]) as u64);
    assert_eq!(report.truncated_batches, 3);
    assert_eq!(log.next_offset(), 4);
}

#[test]
fn indexes_are_rebuilt_when_missing_short_or_garbled() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cfg = config(2_000, 50);
    let (mut log, _) = Log::open(dir, cfg.clone()).unwrap();
    fill(&mut log, 30, 2);
    log.close().unwrap();
    // The recovery point and the marker are the open's to rewrite or remove.
    let segment_files = |dir: &Path| {
        let mut files = snapshot(dir);
        files.retain(|name, _| !seglog::format::recovery_point::NAMES.contains(&name.as_str()));
        files
    };
    let pristine = segment_files(dir);
    let index0 = seg_path(dir, 0, ".index");
    let time0 = seg_path(dir, 0, ".timeindex");
    assert!(
        pristine[&file_name(&index0)].len() >= 16,
        "the test needs index entries"
    );
    assert!(!pristine[&file_name(&time0)].is_empty());

    let cases: Vec<(PathBuf, Damage, RebuildReason)> = vec![
        (
            index0.clone(),
            Box::new(|p: &Path| std::fs::remove_file(p).unwrap()),
            RebuildReason::Missing,
        ),
        (
            index0.clone(),
            Box::new(|p: &Path| {
                let b = std::fs::read(p).unwrap();
                std::fs::write(p, &b[..b.len() - 5]).unwrap()
            }),
            RebuildReason::Short,
        ),
        (
            time0.clone(),
            Box::new(|p: &Path| {
                let mut b = std::fs::read(p).unwrap();
                b[3] ^= 0x10;
                std::fs::write(p, &b).unwrap()
            }),
            RebuildReason::Inconsistent,
        ),
        (
            index0.clone(),
            Box::new(|p: &Path| {
                let mut b = std::fs::read(p).unwrap();
                b.extend_from_slice(&[0, 0, 1, 0, 0, 0, 2, 0]);
                std::fs::write(p, &b).unwrap()
            }),
            RebuildReason::Inconsistent,
        ),
    ];
    for (path, damage, reason) in cases {
        let before = std::fs::metadata(&path).unwrap().len();
        damage(&path);
        assert_ne!(segment_files(dir), pristine);
        let garbled = std::fs::metadata(&path).is_ok_and(|m| m.len() == before);
        let (log, report) = if garbled {
            // The same length: the open takes the recovery point's word (it reads
            // no closed segment's index file), the first lookup in the segment
            // finds the checksum wrong and rebuilds the index in memory, lookups
            // stay right, and the log names the file; the checked open of `seglog
            // recover` rewrites it (`seglog::segment::vouched`).
            let (log, report) = Log::open(dir, cfg.clone()).unwrap();
            assert!(report.rebuilt_indexes.is_empty(), "{report:?}");
            assert_eq!(read_all(&log, 0).len(), 60);
            let rebuilt = log.rebuilt_indexes();
            assert_eq!(rebuilt.len(), 1, "{rebuilt:?}");
            assert_eq!(rebuilt[0].0, path);
            log.close().unwrap();
            Log::open_checked(Arc::new(StdFs::new()), dir, cfg.clone()).unwrap()
        } else {
            Log::open(dir, cfg.clone()).unwrap()
        };
        assert_eq!(report.rebuilt_indexes.len(), 1, "{report:?}");
        assert_eq!(report.rebuilt_indexes[0].file, file_name(&path));
        assert_eq!(report.rebuilt_indexes[0].reason, reason);
        // Segment 0 is closed: the recovery point vouched for it, the length of
        // its index file contradicted it, and the open scanned it after all (the
        // checked open scans every segment).
        if !garbled {
            assert_eq!(report.rescanned.len(), 1, "{report:?}");
        }
        assert_eq!(
            segment_files(dir),
            pristine,
            "rebuilt index must equal the original"
        );
        assert_eq!(read_all(&log, 33).len(), 60 - 33);
    }
}

/// A way to damage an index file.
type Damage = Box<dyn Fn(&Path)>;

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn orphans_are_removed_and_unknown_files_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (mut log, _) = Log::open(dir, LogConfig::default()).unwrap();
    log.append(&[record(0)]).unwrap();
    log.close().unwrap();
    std::fs::write(seg_path(dir, 500, ".index"), b"").unwrap();
    std::fs::write(seg_path(dir, 500, ".timeindex"), b"x").unwrap();
    std::fs::write(dir.join("notes.txt"), b"keep me").unwrap();
    std::fs::create_dir(dir.join("00000000000000000000.cleaned")).unwrap();
    let (_, report) = Log::open(dir, LogConfig::default()).unwrap();
    assert_eq!(
        report.removed_files,
        vec![
            "00000000000000000500.index",
            "00000000000000000500.timeindex"
        ]
    );
    assert_eq!(
        report.unknown_files,
        vec!["00000000000000000000.cleaned", "notes.txt"]
    );
    assert!(dir.join("notes.txt").exists());
    assert!(!seg_path(dir, 500, ".index").exists());
}

#[test]
fn offset_for_timestamp_matches_a_linear_scan() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(tmp.path(), config(700, 60)).unwrap();
    let all = fill(&mut log, 40, 3);
    assert!(log.segments().len() > 3);
    let check = |log: &Log| {
        for ts in 990..1_110 {
            let want = all.iter().position(|r| r.timestamp >= ts).map(|i| i as i64);
            assert_eq!(log.offset_for_timestamp(ts).unwrap(), want, "ts {ts}");
        }
    };
    check(&log);
    log.roll().unwrap();
    log.close().unwrap();
    let (log, _) = Log::open(tmp.path(), config(700, 60)).unwrap();
    check(&log);
    assert_eq!(log.offset_for_timestamp(5_000).unwrap(), None);
}

#[test]
fn reads_skip_compaction_gaps() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Segment 0: offsets 0..=9 in two batches, only even offsets kept.
    // Segment 20: offsets 20..=22 (10..=19 were compacted away entirely).
    let mut first = Vec::new();
    for base in [0, 5] {
        let batch = RecordBatch::build(base, &(0..5).map(|i| record(base + i)).collect::<Vec<_>>());
        let kept = batch
            .retain(|r| (base + i64::from(r.offset_delta)) % 2 == 0)
            .unwrap();
        kept.encode_into(&mut first);
    }
    std::fs::write(seg_path(dir, 0, ".log"), &first).unwrap();
    let second = RecordBatch::build(20, &(0..3).map(record).collect::<Vec<_>>()).encode();
    std::fs::write(seg_path(dir, 20, ".log"), &second).unwrap();
    let (mut log, report) = Log::open(dir, LogConfig::default()).unwrap();
    assert_eq!(report.rebuilt_indexes.len(), 4, "indexes were missing");
    assert_eq!((log.log_start_offset(), log.next_offset()), (0, 23));
    let offsets = |from| {
        read_all(&log, from)
            .iter()
            .map(|r| r.offset)
            .collect::<Vec<_>>()
    };
    assert_eq!(offsets(0), vec![0, 2, 4, 6, 8, 20, 21, 22]);
    assert_eq!(offsets(3), vec![4, 6, 8, 20, 21, 22]);
    assert_eq!(offsets(9), vec![20, 21, 22]);
    assert_eq!(offsets(12), vec![20, 21, 22]);
    assert_eq!(log.segments()[0].records, 5);
    assert_eq!(log.append(&[record(1)]).unwrap().base_offset, 23);
}

/// A StdFs whose syncs fail once `fail_syncs` is set.
#[derive(Debug, Default)]
struct FailingFs {
    inner: StdFs,
    fail_syncs: AtomicBool,
}

impl FileSystem for FailingFs {
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
    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_at(path, offset, buf)
    }
    fn set_len(&self, path: &Path, len: u64) -> io::Result<()> {
        self.inner.set_len(path, len)
    }
    fn sync_file(&self, path: &Path) -> io::Result<()> {
        if self.fail_syncs.load(Ordering::SeqCst) {
            return Err(io::Error::other("injected fsync failure"));
        }
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
}

#[test]
fn a_failed_fsync_poisons_the_log_until_reopened() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = Arc::new(FailingFs::default());
    let (mut log, _) = Log::open_with(fs.clone(), tmp.path(), LogConfig::default()).unwrap();
    log.append(&[record(0)]).unwrap();
    log.flush().unwrap();
    log.append(&[record(1)]).unwrap();
    fs.fail_syncs.store(true, Ordering::SeqCst);
    assert!(matches!(log.flush(), Err(Error::Io { .. })));
    assert!(log.is_poisoned());
    assert!(matches!(log.append(&[record(2)]), Err(Error::Poisoned)));
    assert!(matches!(log.roll(), Err(Error::Poisoned)));
    assert!(matches!(log.read(0, 100), Err(Error::Poisoned)));
    fs.fail_syncs.store(false, Ordering::SeqCst);
    drop(log);
    let (log, _) = Log::open_with(fs, tmp.path(), LogConfig::default()).unwrap();
    assert!(log.next_offset() >= 1, "flushed data survives");
    assert!(!log.is_poisoned());
}

#[test]
fn read_only_open_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (mut log, _) = Log::open(dir, config(1 << 20, 64)).unwrap();
    fill(&mut log, 4, 2);
    log.close().unwrap();
    let file = seg_path(dir, 0, ".log");
    let len = std::fs::metadata(&file).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    std::fs::remove_file(seg_path(dir, 0, ".index")).unwrap();
    let before = snapshot(dir);
    let (mut log, report) =
        Log::open_read_only(Arc::new(StdFs::new()), dir, config(1 << 20, 64)).unwrap();
    assert!(report.read_only);
    assert!(report.truncated_bytes > 0);
    assert_eq!(log.next_offset(), 6);
    assert_eq!(read_all(&log, 0).len(), 6);
    assert!(matches!(
        log.append(&[record(0)]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(log.flush(), Err(Error::InvalidArgument(_))));
    log.close().unwrap();
    assert_eq!(snapshot(dir), before);
    assert!(Log::open_read_only(
        Arc::new(StdFs::new()),
        dir.join("missing"),
        LogConfig::default()
    )
    .is_err());
    assert!(!dir.join("missing").exists());
}

#[test]
fn read_raw_returns_whole_batches_from_the_one_holding_from() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(tmp.path(), config(600, 64)).unwrap();
    fill(&mut log, 20, 3);
    let mut offsets = Vec::new();
    let mut from = 4;
    loop {
        let raw = log.read_raw(from, 250).unwrap();
        if raw.is_empty() {
            break;
        }
        let mut at = 0;
        while at < raw.len() {
            let (batch, used) = seglog::format::batch::decode(&raw[at..]).unwrap();
            offsets.extend(
                batch
                    .records
                    .iter()
                    .map(|r| batch.offset_of(r))
                    .filter(|o| *o >= from),
            );
            from = batch.next_offset();
            at += used;
        }
    }
    assert_eq!(offsets, (4..60).collect::<Vec<i64>>());
    assert!(matches!(
        log.read_raw(61, 10),
        Err(Error::OffsetOutOfRange { .. })
    ));
    // A flipped bit in a batch is reported with the file and the CRC position.
    log.close().unwrap();
    let file = seg_path(tmp.path(), 0, ".log");
    let mut bytes = std::fs::read(&file).unwrap();
    let (log, _) = Log::open(tmp.path(), config(600, 64)).unwrap();
    bytes[70] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    match log.read_raw(0, 100) {
        Err(Error::Corrupt { path, position, .. }) => {
            assert_eq!(path, file);
            assert_eq!(position, CRC_OFFSET as u64);
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    // The zero-copy fetch and the decoded read check the same CRC.
    match log.fetch(0, 100) {
        Err(Error::Corrupt { path, position, .. }) => {
            assert_eq!(path, file);
            assert_eq!(position, CRC_OFFSET as u64);
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(matches!(log.read(0, 100), Err(Error::Corrupt { .. })));
}

/// Every structured append path checks its records while encoding them (one pass)
/// and refuses alike, with `check_records`' messages: no record, a timestamp
/// below -1 anywhere in the batch, an encoded batch over `BATCH_BYTES_MAX` (in one
/// record, or summed over many). Nothing is written, the log is not poisoned, and
/// the next valid append takes the same offset.
#[test]
fn every_structured_append_path_refuses_alike() {
    use seglog::format::batch::BATCH_BYTES_MAX;
    use seglog::format::{Compression, TimestampType};
    let big = |n: usize| NewRecord::new(None, Some(vec![7; n]), 5);
    let at = |ts: i64| NewRecord::new(Some(b"k".to_vec()), Some(b"v".to_vec()), ts);
    let cases: Vec<(Vec<NewRecord>, &str)> = vec![
        (vec![], "an append needs at least one record"),
        (vec![record(1), at(-2)], "timestamp -2 is below -1"),
        (vec![at(i64::MIN)], "is below -1"),
        (vec![big(BATCH_BYTES_MAX)], "exceeds the limit of"),
        (
            (0..65).map(|_| big(1 << 20)).collect(),
            "exceeds the limit of",
        ),
        // Both broken: the timestamp is reported, as the separate checks did.
        (
            (0..65).map(|_| big(1 << 20)).chain([at(-5)]).collect(),
            "timestamp -5 is below -1",
        ),
    ];
    let codec = if Compression::Lz4.is_available() {
        Compression::Lz4
    } else {
        Compression::None
    };
    let configs = [
        LogConfig::default(),
        LogConfig {
            compression: codec,
            ..LogConfig::default()
        },
        LogConfig {
            timestamp_type: TimestampType::LogAppendTime,
            ..LogConfig::default()
        },
    ];
    for (c, config) in configs.into_iter().enumerate() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(tmp.path(), config).unwrap();
        log.append(&[record(0)]).unwrap();
        for (records, want) in &cases {
            let results = [
                log.append(records),
                log.append_with(records, codec, None),
                log.append_with(records, Compression::None, Some(7)),
            ];
            for (way, result) in results.into_iter().enumerate() {
                match result {
                    Err(Error::InvalidArgument(message)) => assert!(
                        message.contains(want),
                        "config {c}, way {way}: {message:?} lacks {want:?}"
                    ),
                    other => panic!("config {c}, way {way}: {other:?}, want {want:?}"),
                }
            }
            assert!(!log.is_poisoned());
            assert_eq!(log.next_offset(), 1);
        }
        assert_eq!(log.append(&[record(1)]).unwrap().base_offset, 1);
        assert_eq!(log.read(0, usize::MAX).unwrap().len(), 2);
    }
}

//! Regression: LogAppendTime is honoured, and compaction keeps it.
//!
//! What failed: for a batch whose timestamp type is LogAppendTime (attribute bit
//! 3), Kafka reads every record's timestamp as the batch's `maxTimestamp` (the
//! time the broker appended it), but `read`, `fetch` and `seglog dump` gave the
//! producer's create times from the record deltas. Worse, when compaction kept part
//! of such a batch it recomputed `maxTimestamp` from the kept records' create
//! times, so Kafka read other timestamps after compaction than before.
//!
//! Invariant: under LogAppendTime every record reads as the batch's
//! `maxTimestamp` on every read path, the time index and time retention see that
//! time, compaction's tombstone horizon measures a tombstone's age from it, and a
//! partly kept batch keeps `maxTimestamp` (and so every timestamp) unchanged.
//! `LogConfig::timestamp_type = LogAppendTime` stamps appended batches with the
//! log's clock.
//!
//! Fix: `TimestampType` (engine/src/format/timestamp_type.rs), honoured by
//! `BatchView::timestamp_of` / `RecordBatch::timestamp_of` and every reader, and
//! kept by `RecordBatch::retain` and the compaction splice.

use std::path::Path;
use std::sync::Arc;

use seglog::format::batch::MAX_TIMESTAMP_OFFSET;
use seglog::format::compression::Compression;
use seglog::format::{filename, TimestampType};
use seglog::{Log, LogConfig, ManualClock, NewRecord, RecordBatch};

const STAMP: i64 = 50_000;

fn config(compression: Compression) -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        index_interval_bytes: 64,
        compression,
        timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    }
}

fn rec(key: &str, value: Option<&str>, ts: i64) -> NewRecord {
    NewRecord::new(
        Some(key.as_bytes().to_vec()),
        value.map(|v| v.as_bytes().to_vec()),
        ts,
    )
}

fn timestamps(log: &Log) -> Vec<(i64, i64)> {
    log.read(log.log_start_offset(), usize::MAX)
        .unwrap()
        .into_iter()
        .map(|r| (r.offset, r.timestamp))
        .collect()
}

fn fetched_timestamps(log: &Log) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut from = log.log_start_offset();
    while from < log.next_offset() {
        let fetch = log.fetch(from, 1 << 20).unwrap();
        out.extend(fetch.records().map(|r| {
            let r = r.unwrap();
            (r.offset, r.timestamp)
        }));
        from = fetch.next_offset();
    }
    out
}

fn open(path: &Path, compression: Compression, clock: &Arc<ManualClock>) -> Log {
    let (mut log, _) = Log::open(path, config(compression)).unwrap();
    log.set_clock(clock.clone());
    log
}

#[test]
fn append_stamps_and_reads_log_append_time() {
    for compression in [Compression::None, Compression::Lz4] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p0");
        let clock = Arc::new(ManualClock::new(STAMP));
        let mut log = open(&path, compression, &clock);
        // Create times far in the past and out of order; the log stamps STAMP.
        log.append(&[rec("a", Some("1"), 10), rec("b", Some("2"), 5)])
            .unwrap();
        clock.set_ms(STAMP + 100);
        log.append(&[rec("c", Some("3"), 20)]).unwrap();
        let want = vec![(0, STAMP), (1, STAMP), (2, STAMP + 100)];
        assert_eq!(timestamps(&log), want, "{compression}");
        assert_eq!(fetched_timestamps(&log), want, "{compression}");
        // The time index answers by append time, not create time.
        assert_eq!(log.offset_for_timestamp(11).unwrap(), Some(0));
        assert_eq!(log.offset_for_timestamp(STAMP + 1).unwrap(), Some(2));
        assert_eq!(log.offset_for_timestamp(STAMP + 101).unwrap(), None);
        // The stored batch: bit 3 set, maxTimestamp the stamp, deltas the producer's.
        let batches = log.segment_batches(0).unwrap();
        assert_eq!(batches[0].timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(batches[0].max_timestamp, STAMP);
        assert_eq!(batches[0].base_timestamp, 10);
        log.close().unwrap();
        // After a reopen (recovery rebuilds from the batches) the same.
        let log = open(&path, compression, &clock);
        assert_eq!(timestamps(&log), want, "{compression}");
    }
}

/// A LogAppendTime batch written by another writer (Kafka's broker), read back.
#[test]
fn a_foreign_log_append_time_batch_reads_as_its_max_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p0");
    std::fs::create_dir_all(&path).unwrap();
    let batch = RecordBatch::build(0, &[rec("a", Some("1"), 100), rec("b", Some("2"), 200)])
        .with_log_append_time(STAMP);
    std::fs::write(
        path.join(filename::build(0, filename::LOG_SUFFIX)),
        batch.encode(),
    )
    .unwrap();
    let (log, _) = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(timestamps(&log), vec![(0, STAMP), (1, STAMP)]);
    drop(log);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(["dump", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let dump: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ts: Vec<i64> = dump["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ts"].as_i64().unwrap())
        .collect();
    assert_eq!(ts, vec![STAMP, STAMP]);
}

#[test]
fn compaction_keeps_max_timestamp_of_a_partly_kept_batch() {
    for compression in [Compression::None, Compression::Gzip, Compression::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p0");
        let clock = Arc::new(ManualClock::new(STAMP));
        let mut log = open(&path, compression, &clock);
        // Batch 0: a (create time 900, the max) is superseded later, b (100) stays.
        log.append(&[rec("a", Some("old"), 900), rec("b", Some("keep"), 100)])
            .unwrap();
        log.roll().unwrap();
        clock.set_ms(STAMP + 10);
        log.append(&[rec("a", Some("new"), 1)]).unwrap();
        let before = timestamps(&log);
        let report = log.compact(STAMP + 20, 1_000, None).unwrap();
        assert_eq!((report.records_before, report.records_after), (2, 1));
        let after = timestamps(&log);
        assert_eq!(after, vec![(1, STAMP), (2, STAMP + 10)], "{compression}");
        assert!(after.iter().all(|row| before.contains(row)));
        // The rewritten batch's header still says STAMP, not b's create time.
        let file = std::fs::read(path.join(filename::build(0, filename::LOG_SUFFIX))).unwrap();
        let max = i64::from_be_bytes(
            file[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
                .try_into()
                .unwrap(),
        );
        assert_eq!(max, STAMP, "{compression}");
        let batches = log.segment_batches(0).unwrap();
        assert_eq!(batches[0].timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(batches[0].compression(), compression);
        assert_eq!(batches[0].base_offset, 0);
        assert_eq!(batches[0].last_offset_delta, 1);
    }
}

/// A tombstone's age is measured from its append time: created long ago but
/// appended recently, it stays within `delete_retention_ms`.
#[test]
fn tombstone_age_is_measured_from_the_append_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p0");
    let clock = Arc::new(ManualClock::new(STAMP));
    let mut log = open(&path, Compression::None, &clock);
    log.append(&[rec("t", None, 0)]).unwrap();
    log.roll().unwrap();
    log.append(&[rec("other", Some("x"), 0)]).unwrap();
    // Create time 0 is 60 s old; the append time STAMP is 0.5 s old.
    log.compact(STAMP + 500, 1_000, None).unwrap();
    assert_eq!(timestamps(&log), vec![(0, STAMP), (1, STAMP)]);
}

/// Time retention expires a segment by when its batches were appended.
#[test]
fn retention_uses_the_append_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p0");
    let clock = Arc::new(ManualClock::new(STAMP));
    let mut log = open(&path, Compression::Snappy, &clock);
    log.append(&[rec("a", Some("1"), 0)]).unwrap();
    log.roll().unwrap();
    log.append(&[rec("b", Some("2"), 0)]).unwrap();
    // Created at 0 (ancient), appended at STAMP: not expired 1 s later.
    let kept = log.retain(STAMP + 1_000, Some(10_000), None).unwrap();
    assert!(kept.deleted_segments.is_empty());
    assert_eq!(log.segments()[0].max_timestamp, STAMP);
    // 11 s after the append it is.
    let expired = log.retain(STAMP + 11_000, Some(10_000), None).unwrap();
    assert_eq!(expired.deleted_segments, vec![0]);
}

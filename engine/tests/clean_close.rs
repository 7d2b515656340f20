//! Regression: the active segment is closed with Kafka's close-time time index
//! entry.
//!
//! Kafka closes a partition's active segment with `onBecomeInactiveSegment`
//! (`UnifiedLog.prepareActiveSegmentForClose` in a broker's clean shutdown): the
//! time index gets a final `(maxTimestampSoFar, offsetOfMaxTimestampSoFar)` entry and
//! the index files are trimmed. With that entry only on roll, Kafka, loading a
//! directory seglog closed as cleanly shut down, reads the active segment's max
//! timestamp from its time index as -1: `ListOffsets(MAX_TIMESTAMP)` answers
//! wrongly and time retention deletes a segment holding a fresh record.
//!
//! Invariant: after `Log::close`, every segment's `.timeindex` ends with the
//! segment's max timestamp (when it has one) at the last offset of the batch that
//! first reached it, and the files are exactly what Kafka leaves for the same
//! appends (computed here by hand from Kafka's rule); reopening keeps them as they
//! are. Fix: `Segment::close_active`, called by `Log::close` (and `roll`).

use std::path::Path;

use seglog::{Log, LogConfig, NewRecord};

#[allow(
    clippy::needless_update,
    reason = "LogConfig gains fields (codec, timestamp type) in a parallel branch"
)]
fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1 << 20,
        index_interval_bytes: 4096,
        ..LogConfig::default()
    }
}

fn record(i: i64, timestamp: i64) -> NewRecord {
    NewRecord::new(
        Some(format!("k{i}").into_bytes()),
        Some(vec![b'v'; 40]),
        timestamp,
    )
}

fn file(dir: &Path, suffix: &str) -> Vec<u8> {
    std::fs::read(dir.join(format!("00000000000000000000{suffix}"))).unwrap()
}

/// Kafka's `.timeindex` entry: timestamp i64, relative offset u32, big-endian.
fn time_entry(timestamp: i64, relative_offset: u32) -> Vec<u8> {
    let mut out = timestamp.to_be_bytes().to_vec();
    out.extend_from_slice(&relative_offset.to_be_bytes());
    out
}

#[test]
fn close_appends_kafkas_final_time_entry_to_the_active_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (mut log, _) = Log::open(dir, config()).unwrap();
    // Three small batches (far below index_interval_bytes: no entry on append).
    // The max timestamp, 9_000, is first reached by the batch ending at offset 3
    // and only equalled later.
    log.append(&[record(0, 1_000), record(1, 2_000)]).unwrap();
    log.append(&[record(2, 9_000), record(3, 3_000)]).unwrap();
    log.append(&[record(4, 9_000)]).unwrap();
    assert!(
        file(dir, ".timeindex").is_empty(),
        "nothing indexed on append"
    );
    log.close().unwrap();
    // What Kafka leaves after the same appends and a clean shutdown: no offset
    // entry (the first batch is never indexed, 4096 bytes were not reached) and the
    // one close-time entry (9000 at offset 3).
    assert_eq!(file(dir, ".index"), Vec::<u8>::new());
    assert_eq!(file(dir, ".timeindex"), time_entry(9_000, 3));

    // Reopened, the files are valid and kept; appends continue after the entry.
    let (mut log, report) = Log::open(dir, config()).unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert!(report.kept_indexes.is_empty(), "{report:?}");
    assert_eq!(log.offset_for_timestamp(9_000).unwrap(), Some(2));
    log.append(&[record(5, 8_000)]).unwrap();
    log.close().unwrap();
    assert_eq!(
        file(dir, ".timeindex"),
        time_entry(9_000, 3),
        "max unchanged"
    );
    let (mut log, _) = Log::open(dir, config()).unwrap();
    log.append(&[record(6, 12_000)]).unwrap();
    log.close().unwrap();
    let mut both = time_entry(9_000, 3);
    both.extend(time_entry(12_000, 6));
    assert_eq!(file(dir, ".timeindex"), both);
}

#[test]
fn kafkas_clean_load_reads_the_true_max_timestamp_of_every_segment() {
    // Kafka, loading a cleanly shut down log, takes a segment's max timestamp from
    // the last entry of its time index (LogSegment.maxTimestampSoFar) without
    // reading the .log. That must be the segment's real max for each segment.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cfg = {
        #[allow(
            clippy::needless_update,
            reason = "LogConfig gains fields (codec, timestamp type) in a parallel branch"
        )]
        let config = LogConfig {
            segment_bytes: 600,
            index_interval_bytes: 150,
            ..LogConfig::default()
        };
        config
    };
    let (mut log, _) = Log::open(dir, cfg.clone()).unwrap();
    for i in 0..40 {
        log.append(&[record(i, 1_000 + (i * 7919) % 500)]).unwrap();
    }
    // The active segment's max comes with its last batch: no append indexes it.
    log.append(&[record(40, 10_000)]).unwrap();
    let segments = log.segments();
    assert!(segments.len() > 3);
    log.close().unwrap();
    for segment in &segments {
        let name = format!("{:020}.timeindex", segment.base_offset);
        let bytes = std::fs::read(dir.join(&name)).unwrap();
        let last = bytes.rchunks_exact(12).next().expect("an entry");
        let timestamp = i64::from_be_bytes(last[..8].try_into().unwrap());
        assert_eq!(timestamp, segment.max_timestamp, "{name}");
    }
    let (_, report) = Log::open(dir, cfg).unwrap();
    assert!(report.is_clean(), "{report:?}");
}

#[test]
fn close_of_a_log_without_timestamps_adds_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (mut log, _) = Log::open(dir, config()).unwrap();
    log.append(&[record(0, -1)]).unwrap();
    log.close().unwrap();
    assert!(file(dir, ".timeindex").is_empty());
    let (log, _) = Log::open(dir, config()).unwrap();
    log.close().unwrap();
    assert!(file(dir, ".timeindex").is_empty());
}

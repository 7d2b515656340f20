//! Regression: recovery keeps valid Kafka indexes instead of rewriting them.
//!
//! `seglog recover` on a cleanly closed Kafka directory reported the active
//! `.timeindex` as inconsistent and rewrote it, because recovery compared each index
//! file byte for byte with its own rebuild: Kafka's close-time entry (and an offset
//! entry Kafka writes for an append of several batches) is not in that rebuild.
//!
//! Invariant: an index valid by Kafka's rules (whole entries, strictly increasing,
//! pointing at batch boundaries within the valid `.log`, time entries equal to the
//! max timestamp so far at their batch) is kept byte for byte and used for lookups;
//! only an invalid one is rewritten, and the report names the rule it broke. Fix:
//! `segment::validate` and `log::index_check` (recovery phase 4).

use std::collections::BTreeMap;
use std::path::Path;

use seglog::log::RebuildReason;
use seglog::segment::IndexRule;
use seglog::{Log, LogConfig, NewRecord, RecordBatch};

#[allow(
    clippy::needless_update,
    reason = "LogConfig gains fields (codec, timestamp type) in a parallel branch"
)]
fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1 << 20,
        // Kafka wrote with index.interval.bytes = 100 (below); seglog opens with its
        // default, as `seglog recover` does without --index-interval-bytes: its own
        // rebuild would differ from Kafka's files in every entry.
        index_interval_bytes: 4096,
        ..LogConfig::default()
    }
}

fn batch(base: i64, count: i64, timestamp: i64) -> Vec<u8> {
    let records: Vec<NewRecord> = (0..count)
        .map(|i| {
            NewRecord::new(
                Some(format!("k{}", base + i).into_bytes()),
                Some(vec![b'v'; 30]),
                timestamp + i,
            )
        })
        .collect();
    RecordBatch::build(base, &records).encode()
}

fn offset_entry(relative: u32, position: usize) -> Vec<u8> {
    let mut out = relative.to_be_bytes().to_vec();
    out.extend_from_slice(&(position as u32).to_be_bytes());
    out
}

fn time_entry(timestamp: i64, relative: u32) -> Vec<u8> {
    let mut out = timestamp.to_be_bytes().to_vec();
    out.extend_from_slice(&relative.to_be_bytes());
    out
}

/// The directory's files, without seglog's own recovery point and clean-shutdown
/// marker (a seglog open or close writes them beside Kafka's files; Kafka ignores
/// them).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            !seglog::format::recovery_point::NAMES.contains(&name.to_string_lossy().as_ref())
        })
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// A cleanly closed Kafka partition, written as Kafka 4.0 writes it (4.0's
/// `LogSegment.append` indexes a whole append; 4.4 indexes per batch): one segment
/// of four batches (offsets 0..=11), appended as one single-batch append, then one
/// append of two batches, as a follower appends fetched data (indexed once: its
/// last offset at its first batch's position), then one more batch; the index interval (100 bytes) is passed before
/// the second and the third append. Closed with `prepareActiveSegmentForClose`,
/// whose final entry adds nothing here: the max, 6_002 at offset 8, was indexed on
/// the third append.
fn kafka_directory(dir: &Path) {
    let b0 = batch(0, 3, 1_000);
    let b1 = batch(3, 3, 5_000);
    let b2 = batch(6, 3, 6_000);
    let b3 = batch(9, 3, 2_000);
    let p1 = b0.len();
    let p3 = p1 + b1.len() + b2.len();
    assert!(b0.len() > 100, "the first append passes the index interval");
    let log: Vec<u8> = [b0, b1, b2, b3].concat();
    std::fs::write(dir.join("00000000000000000000.log"), &log).unwrap();
    // Append 2 (batches 1 and 2) at p1, indexed by its last offset 8; append 3 at p3.
    let index = [offset_entry(8, p1), offset_entry(11, p3)].concat();
    std::fs::write(dir.join("00000000000000000000.index"), index).unwrap();
    // maybeAppend at each offset entry: the max so far 5_002 (batch ending at 5)
    // on the second append, 6_002 (batch ending at 8) on the third.
    let time = [time_entry(5_002, 5), time_entry(6_002, 8)].concat();
    std::fs::write(dir.join("00000000000000000000.timeindex"), time).unwrap();
    // Kafka's own files beside the segments, left alone by seglog.
    std::fs::write(dir.join("leader-epoch-checkpoint"), b"0\n1\n0 0\n").unwrap();
}

#[test]
fn valid_kafka_indexes_are_kept_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("orders-0");
    std::fs::create_dir(&dir).unwrap();
    kafka_directory(&dir);
    let before = snapshot(&dir);
    let (log, report) = Log::open(&dir, config()).unwrap();
    assert!(report.rebuilt_indexes.is_empty(), "{report:?}");
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(
        report.kept_indexes,
        vec![
            "00000000000000000000.index",
            "00000000000000000000.timeindex"
        ],
        "both differ from seglog's own rebuild and are kept"
    );
    assert_eq!(snapshot(&dir), before, "nothing rewritten");
    // The kept indexes serve every lookup right.
    for offset in 0..12 {
        assert_eq!(log.read(offset, 1).unwrap().first().unwrap().offset, offset);
    }
    assert_eq!(log.offset_for_timestamp(5_002).unwrap(), Some(5));
    assert_eq!(log.offset_for_timestamp(5_003).unwrap(), Some(6));
    assert_eq!(log.offset_for_timestamp(6_002).unwrap(), Some(8));
    assert_eq!(log.offset_for_timestamp(2_000).unwrap(), Some(3));
    assert_eq!(log.offset_for_timestamp(6_003).unwrap(), None);
    drop(log);
    // The CLI says the same (the JSON fields are a public contract).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(["recover", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["rebuilt_indexes"], serde_json::json!([]));
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn an_invalid_kafka_index_is_rebuilt_and_the_report_names_the_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("orders-0");
    std::fs::create_dir(&dir).unwrap();
    kafka_directory(&dir);
    // A time entry at the wrong offset (the batch ending at 8 has max 6_002),
    // and a preallocated offset index Kafka did not trim (a crash before close).
    std::fs::write(
        dir.join("00000000000000000000.timeindex"),
        time_entry(5_002, 8),
    )
    .unwrap();
    let mut index = std::fs::read(dir.join("00000000000000000000.index")).unwrap();
    index.resize(index.len() + 8 * 64, 0);
    std::fs::write(dir.join("00000000000000000000.index"), &index).unwrap();
    let (log, report) = Log::open(&dir, config()).unwrap();
    let rules: Vec<(String, RebuildReason, IndexRule)> = report
        .rebuilt_indexes
        .iter()
        .map(|r| (r.file.clone(), r.reason, r.rule))
        .collect();
    assert_eq!(
        rules,
        vec![
            (
                "00000000000000000000.index".to_string(),
                RebuildReason::Inconsistent,
                IndexRule::Untrimmed
            ),
            (
                "00000000000000000000.timeindex".to_string(),
                RebuildReason::Inconsistent,
                IndexRule::WrongTimestamp
            ),
        ]
    );
    assert!(
        report.rebuilt_indexes[1].detail.contains("at byte 0"),
        "{report:?}"
    );
    assert_eq!(log.offset_for_timestamp(5_002).unwrap(), Some(5));
    drop(log);
    // Rebuilt as Kafka's LogSegment.recover builds them: valid, kept on the next open.
    let (_, again) = Log::open(&dir, config()).unwrap();
    assert!(again.is_clean(), "{again:?}");
    assert!(again.kept_indexes.is_empty(), "{again:?}");
}

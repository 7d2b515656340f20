//! Empty batches (a header, record count 0), as Kafka's cleaner leaves them
//! (`BatchRetention.RETAIN_EMPTY`: a producer's last batch whose records all went,
//! docs/design.md section 1, "The `kafka` compaction policy").
//!
//! Invariant: an empty batch is a valid batch, never a torn tail: opening keeps it
//! (clean or with the indexes rebuilt), `next_offset` is past its last offset, a
//! transactional one opens its producer's transaction as any data batch does (its
//! ABORT then lists it from its base offset), `read`/`read_with(ReadCommitted)`
//! return no record of it and read on past it,
//! `fetch` from inside its range returns it and moves on past it, it counts in a
//! segment's bytes, and retention deletes the segment holding it.

mod support;

use std::path::Path;
use std::sync::Arc;

use seglog::format::batch::ATTR_TRANSACTIONAL;
use seglog::format::{filename, ControlKind, RecordBatch};
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{Isolation, Log, LogConfig, NewRecord};
use support::batches;

fn record(key: &str, ts: i64) -> NewRecord {
    NewRecord::new(Some(key.as_bytes().to_vec()), Some(b"v".to_vec()), ts)
}

/// The batch `[base, base + 1]` of producer 7 with its records removed, as Kafka
/// 4.4 writes it (`DefaultRecordBatch.writeEmptyHeader`: no codec, base timestamp
/// -1, the source's max timestamp, no delete horizon, record count 0).
fn empty_batch(base: i64) -> RecordBatch {
    let mut batch = RecordBatch::build(base, &[record("x", 20), record("y", 21)]);
    batch.producer_id = 7;
    batch.producer_epoch = 0;
    batch.base_sequence = 0;
    batch.attributes = ATTR_TRANSACTIONAL;
    batch.base_timestamp = -1;
    batch.records.clear();
    batch
}

/// The offsets of the data records `read` returns from `from` (markers left out).
fn offsets(log: &Log, from: i64) -> Vec<i64> {
    log.read(from, usize::MAX)
        .unwrap()
        .iter()
        .filter(|r| !r.control)
        .map(|r| r.offset)
        .collect()
}

fn committed(log: &Log, from: i64) -> Vec<i64> {
    log.read_with(from, usize::MAX, Isolation::ReadCommitted)
        .unwrap()
        .iter()
        .filter(|r| !r.control)
        .map(|r| r.offset)
        .collect()
}

fn check_reads(log: &Log) {
    assert_eq!(offsets(log, 0), vec![0, 1, 2, 6, 7]);
    assert_eq!(offsets(log, 3), vec![6, 7]);
    // The empty batch's transaction is aborted (its ABORT at 5) and closed.
    assert_eq!(log.last_stable_offset().unwrap(), log.next_offset());
    assert_eq!(committed(log, 0), vec![0, 1, 2, 6, 7]);
    assert_eq!(committed(log, 4), vec![6, 7]);
    let aborted = log.aborted_transactions(0, log.next_offset()).unwrap();
    assert_eq!(aborted.len(), 1, "{aborted:?}");
    assert_eq!(
        (
            aborted[0].producer_id,
            aborted[0].first_offset,
            aborted[0].last_offset
        ),
        (7, 3, 5)
    );
    for from in [3, 4] {
        let fetch = log.fetch(from, 1).unwrap();
        assert_eq!(batches(fetch.bytes()), vec![(3, 4, 0)], "fetch from {from}");
        assert_eq!(fetch.next_offset(), 5, "fetch from {from}");
        assert_eq!(
            batches(&log.read_raw(from, 1).unwrap()),
            vec![(3, 4, 0)],
            "read_raw from {from}"
        );
    }
    assert_eq!(log.offset_for_timestamp(20).unwrap(), Some(5));
    assert_eq!(log.offset_for_timestamp(26).unwrap(), Some(6));
}

#[test]
fn an_empty_batch_is_opened_read_fetched_recovered_and_retained() {
    let fs = Arc::new(SimFs::new());
    let dir = Path::new("/p0");
    let config = LogConfig {
        segment_bytes: 1 << 20,
        index_interval_bytes: 1,
        ..LogConfig::default()
    };
    let (mut log, _) = Log::open_with(fs.clone(), dir, config.clone()).unwrap();
    log.append(&[record("a", 10), record("b", 11), record("c", 12)])
        .unwrap();
    log.close().unwrap();
    // The empty batch ends the active segment: kept, not a torn tail.
    let empty = empty_batch(3).encode();
    let path = dir.join(filename::build(0, filename::LOG_SUFFIX));
    fs.append(&path, &empty).unwrap();
    let (mut log, report) = Log::open_with(fs.clone(), dir, config.clone()).unwrap();
    assert_eq!(report.truncated_bytes, 0, "{report:?}");
    assert_eq!(log.next_offset(), 5);
    // Its producer's transaction, opened by the empty batch, is aborted.
    assert_eq!(log.last_stable_offset().unwrap(), 3);
    let marker = log.append_control(ControlKind::Abort, 7, 0, 25).unwrap();
    assert_eq!(marker.base_offset, 5);
    assert_eq!(log.append(&[record("d", 30)]).unwrap().base_offset, 6);
    log.roll().unwrap();
    assert_eq!(log.append(&[record("e", 31)]).unwrap().base_offset, 7);
    check_reads(&log);
    let first = log.segments()[0].clone();
    assert_eq!(first.records, 5);
    log.close().unwrap();

    // Reopened cleanly, then with every index rebuilt from the batches.
    let (log, _) = Log::open_with(fs.clone(), dir, config.clone()).unwrap();
    check_reads(&log);
    assert_eq!(log.segments()[0].bytes, first.bytes);
    log.close().unwrap();
    for suffix in [filename::INDEX_SUFFIX, filename::TIME_INDEX_SUFFIX] {
        fs.remove_file(&dir.join(filename::build(0, suffix)))
            .unwrap();
    }
    let (mut log, report) = Log::open_with(fs.clone(), dir, config).unwrap();
    assert_eq!(report.truncated_bytes, 0, "{report:?}");
    check_reads(&log);

    // Size retention counts the empty batch's bytes: the segment holding it goes.
    let bytes = log.segments()[1].bytes as i64;
    let outcome = log.retain(100, None, Some(bytes)).unwrap();
    assert_eq!(outcome.deleted_segments, vec![0]);
    assert_eq!(log.log_start_offset(), 7);
    assert_eq!(offsets(&log, 7), vec![7]);
}

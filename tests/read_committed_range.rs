//! `read_with(from, .., ReadCommitted)` past the log end was `Ok(empty)` while
//! `read` (and Kafka's `Log.read` at any isolation level) is `OffsetOutOfRange`:
//! the committed read returned early when `from` was at or past the last stable
//! offset, before any range check. A conformance case, drawing transactional
//! batches and comparing `read_committed` from every position (case: one
//! `append_txn`, then `read_committed(2)` on a log ending at offset 1). Invariant:
//! both isolation levels accept the same range `[log_start_offset, next_offset]`.
//! Fix: `Log::read_with` checks the range first (`engine/src/log/txn.rs`).

use std::sync::Arc;

use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{Error, Isolation, Log, LogConfig, NewRecord, Producer};
use seglog_model::spec::{SpecLog, SpecRecordInput, TXN_PRODUCER_ID};

#[test]
fn read_committed_past_the_end_is_out_of_range_like_read() {
    let fs = Arc::new(SimFs::new());
    let (mut log, _) = Log::open_with(
        Arc::clone(&fs) as Arc<dyn FileSystem>,
        "/log",
        LogConfig::default(),
    )
    .expect("open");
    let record = NewRecord::new(Some(b"k".to_vec()), Some(b"v".to_vec()), 100);
    log.append_transactional(Producer::new(TXN_PRODUCER_ID, 0), &[record])
        .expect("append");
    let mut spec = SpecLog::new(LogConfig::default().segment_bytes);
    spec.append_transactional(
        TXN_PRODUCER_ID,
        &[SpecRecordInput {
            key: Some(b"k".to_vec()),
            value: Some(b"v".to_vec()),
            timestamp: 100,
        }],
    )
    .expect("spec append");
    for from in [-1, 0, 1, 2] {
        let uncommitted = log.read_with(from, usize::MAX, Isolation::ReadUncommitted);
        let committed = log.read_with(from, usize::MAX, Isolation::ReadCommitted);
        let out_of_range = |r: &Result<_, Error>| matches!(r, Err(Error::OffsetOutOfRange { .. }));
        assert_eq!(
            out_of_range(&uncommitted),
            out_of_range(&committed),
            "from {from}"
        );
        assert_eq!(
            out_of_range(&committed),
            spec.read_committed(from).is_err(),
            "from {from}"
        );
        if let Ok(records) = committed {
            // The transaction is open: nothing is committed yet.
            assert!(records.is_empty(), "from {from}");
        }
    }
    assert!(matches!(
        log.read_with(2, usize::MAX, Isolation::ReadCommitted),
        Err(Error::OffsetOutOfRange { .. })
    ));
}

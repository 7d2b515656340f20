//! The checks of the `append_batches` fuzz target. Shared with `tests/fuzz_corpus.rs`
//! (included by path), so `cargo test` replays the committed seeds through exactly
//! what the fuzzer runs. The function panics with a description when an invariant
//! breaks.

use std::path::Path;
use std::sync::Arc;

use seglog::format::batch::{decode, ATTR_CONTROL};
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{Error, Log, LogConfig, NewRecord, RecordBatch};

/// What one input did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawOutcome {
    /// `append_batches` took the bytes: this many batches.
    Accepted { batches: usize },
    /// It refused them (`Error::InvalidBatch`).
    Refused,
}

/// A record as the log must read it back.
type Expected = (i64, i64, Option<Vec<u8>>, Option<Vec<u8>>);

fn snapshot(fs: &SimFs, dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut names = fs.list_dir(dir).expect("list the log dir");
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let bytes = fs.read_all(&dir.join(&name)).expect("read a log file");
            (name, bytes)
        })
        .collect()
}

/// The records the batches `data` hold, decoded independently of the produce rules
/// (`format::batch::decode`, owned copies), at offsets from `next`; `None` if any
/// batch does not decode or breaks a rule a producer batch must keep.
fn expected(data: &[u8], mut next: i64) -> Option<(Vec<Expected>, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut batches = 0;
    while at < data.len() {
        let (batch, used) = decode(&data[at..]).ok()?;
        let count = batch.records.len() as i64;
        if batch.attributes & ATTR_CONTROL != 0
            || count == 0
            || i64::from(batch.last_offset_delta) != count - 1
            || (batch.producer_id >= 0 && batch.base_sequence < 0)
        {
            return None;
        }
        for (i, record) in batch.records.iter().enumerate() {
            let ts = batch.base_timestamp.wrapping_add(record.timestamp_delta);
            if i64::from(record.offset_delta) != i as i64 || ts < -1 {
                return None;
            }
            out.push((
                next + i as i64,
                ts,
                record.key.clone(),
                record.value.clone(),
            ));
        }
        next += count;
        at += used;
        batches += 1;
    }
    (batches > 0).then_some((out, batches))
}

/// Feeds arbitrary bytes to `Log::append_batches`, between two valid appends.
///
/// Invariants checked:
/// - `append_batches` returns `Ok` or `Error::InvalidBatch`, never panics, never
///   poisons the log;
/// - it accepts exactly the inputs whose every batch decodes and keeps a producer
///   batch's rules (control bit clear, `recordCount == lastOffsetDelta + 1 > 0`,
///   offset deltas `0..count`, timestamps >= -1, a sequence with a producer id),
///   checked here by an independent full decode;
/// - a refused input changes no byte of any file;
/// - the log reads back exactly what was acknowledged (offsets, timestamps, keys,
///   values of the valid batch before, the accepted input, the valid batch after),
///   and the same after a clean close and reopen.
pub fn append_batches(data: &[u8]) -> RawOutcome {
    let sim = Arc::new(SimFs::new());
    let fs: Arc<dyn FileSystem> = sim.clone();
    let dir = Path::new("/fuzz/log");
    let config = LogConfig {
        segment_bytes: 512,
        index_interval_bytes: 64,
        ..LogConfig::default()
    };
    let (mut log, _) = Log::open_with(Arc::clone(&fs), dir, config.clone()).expect("open");
    let first = NewRecord::new(Some(b"k".to_vec()), Some(b"before".to_vec()), 1);
    let valid = RecordBatch::build(0, std::slice::from_ref(&first)).encode();
    log.append_batches(&valid).expect("a valid batch is taken");
    let mut want: Vec<Expected> = vec![(0, 1, first.key.clone(), first.value.clone())];
    let before = snapshot(&sim, dir);
    let oracle = expected(data, log.next_offset());
    let outcome = match log.append_batches(data) {
        Ok(info) => {
            let (records, batches) = oracle.unwrap_or_else(|| {
                panic!("accepted an input the independent decode refuses: {data:?}")
            });
            assert_eq!(info.base_offset, 1);
            assert_eq!(info.last_offset, records.last().map_or(0, |r| r.0));
            want.extend(records);
            RawOutcome::Accepted { batches }
        }
        Err(Error::InvalidBatch {
            batch, position, ..
        }) => {
            assert!(
                oracle.is_none(),
                "refused batch {batch} at {position} of an input the decode accepts"
            );
            assert!(position as usize <= data.len());
            assert_eq!(
                snapshot(&sim, dir),
                before,
                "a refused input changed a file"
            );
            RawOutcome::Refused
        }
        Err(other) => panic!("append_batches failed otherwise: {other}"),
    };
    assert!(!log.is_poisoned());
    let last = NewRecord::new(None, Some(b"after".to_vec()), 2);
    let info = log
        .append_batches(&RecordBatch::build(0, std::slice::from_ref(&last)).encode())
        .expect("the log stays usable");
    want.push((info.base_offset, 2, None, last.value.clone()));
    let read = |log: &Log| -> Vec<Expected> {
        log.read(0, usize::MAX / 2)
            .expect("read back")
            .into_iter()
            .map(|r| {
                (
                    r.offset,
                    r.timestamp,
                    r.key.map(|k| k.to_vec()),
                    r.value.map(|v| v.to_vec()),
                )
            })
            .collect()
    };
    assert_eq!(read(&log), want, "the log reads back what was acknowledged");
    log.close().expect("close");
    let (reopened, report) = Log::open_with(fs, dir, config).expect("reopen");
    assert_eq!(report.truncated_bytes, 0);
    assert_eq!(read(&reopened), want, "and so after a reopen");
    outcome
}

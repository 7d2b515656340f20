//! `Log::retain` and `Log::compact` against the reference spec
//! (`seglog_model::spec::SpecLog`), operation by operation.
//!
//! Invariants checked: after every append, roll, retain and compact, the engine and
//! the spec agree on `log_start_offset`, `next_offset`, every segment's metadata
//! (base, closed, bytes, records, max_timestamp) and every stored record; retain
//! deletes the same bases, compact reports the same counts; rejected arguments are
//! rejected by both; reopening the log changes nothing.
//!
//! Boundary values are drawn on purpose and resolved against the spec's state:
//! retention with `now - retention_ms` equal to a closed segment's `max_timestamp`
//! or `retention_bytes` equal to the bytes of a suffix of the log, compaction with a
//! latest tombstone's age equal to `delete_retention_ms`, appends whose batch fills
//! the segment exactly, and timestamps -1, `i64::MAX` and `i64::MIN` (rejected).

use proptest::prelude::*;
use seglog::{Error, Log, LogConfig, NewRecord};
use seglog_model::spec::{edges, SpecLog, SpecRecordInput};

#[derive(Debug, Clone)]
enum Op {
    Append(Vec<(Option<u8>, Option<u8>, i64)>),
    Control(bool, i64),
    Roll,
    Retain(i64, Option<i64>, Option<i64>),
    Compact(i64, i64, Option<u64>),
    Reopen,
    /// Retention at `now` on a boundary of the current log: by time (`false`) or size.
    RetainEdge(i64, usize, bool),
    /// Compaction at `now` at a latest tombstone's age.
    CompactEdge(i64, usize),
    /// One record (key, ts) whose batch fills the rest of the active segment exactly.
    Fill(Option<u8>, i64),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop::collection::vec(
            (
                prop::option::weighted(0.8, 0u8..5),
                prop::option::weighted(0.8, 0u8..4),
                prop_oneof![20 => 0i64..300, 1 => Just(-1i64), 1 => Just(i64::MAX), 1 => Just(i64::MIN)],
            ),
            1..4
        )
        .prop_map(Op::Append),
        1 => (any::<bool>(), 0i64..300).prop_map(|(c, ts)| Op::Control(c, ts)),
        2 => Just(Op::Roll),
        1 => (0i64..400, prop::option::of(-1i64..300), prop::option::of(-1i64..600))
            .prop_map(|(now, ms, bytes)| Op::Retain(now, ms, bytes)),
        2 => (0i64..500, -1i64..200, prop::option::of(0u64..400))
            .prop_map(|(now, drm, bytes)| Op::Compact(now, drm, bytes)),
        1 => Just(Op::Reopen),
        1 => (0i64..400, 0usize..8, any::<bool>()).prop_map(|(now, pick, bytes)| Op::RetainEdge(now, pick, bytes)),
        1 => (0i64..500, 0usize..8).prop_map(|(now, pick)| Op::CompactEdge(now, pick)),
        1 => (prop::option::of(0u8..5), 0i64..300).prop_map(|(key, ts)| Op::Fill(key, ts)),
    ]
}

/// `(retention_ms, retention_bytes)` on a boundary of `spec`
/// (`spec::edges`): time retention at a reached segment's `max_timestamp`, or (`bytes`)
/// a limit equal to the bytes of a suffix of the log.
fn retain_edge(spec: &SpecLog, now: i64, pick: usize, bytes: bool) -> (Option<i64>, Option<i64>) {
    if bytes {
        (
            None,
            Some(edges::retention_bytes_edge(spec, pick).unwrap_or(1)),
        )
    } else {
        (
            Some(edges::retention_ms_edge(spec, now, pick).unwrap_or(0)),
            None,
        )
    }
}

/// `delete_retention_ms` equal to the age at `now` of latest tombstone `pick` of the
/// closed region (`pick * 10` if there is none).
fn tombstone_edge(spec: &SpecLog, now: i64, pick: usize) -> i64 {
    edges::delete_retention_edge(spec, now, pick).unwrap_or(pick as i64 * 10)
}

/// The value length whose one-record batch (key `key`, timestamp `ts`) makes the
/// active segment exactly `segment_bytes` long (or a whole segment when the rest
/// is too small); the closest shorter one if none is exact.
fn filling_value(spec: &SpecLog, key: &Option<Vec<u8>>, ts: i64) -> usize {
    let target = spec.segment_bytes();
    let mut best = 0;
    for len in 0..target as usize {
        let mut probe = spec.clone();
        let input = SpecRecordInput {
            key: key.clone(),
            value: Some(vec![b'f'; len]),
            timestamp: ts,
        };
        probe.append(&[input]).unwrap();
        match probe.active().bytes() {
            bytes if bytes == target => return len,
            bytes if bytes < target => best = len,
            _ => break,
        }
    }
    best
}

fn bytes_of(tag: Option<u8>, prefix: u8, len: u8) -> Option<Vec<u8>> {
    tag.map(|t| {
        let mut v = vec![prefix, t];
        v.extend(std::iter::repeat_n(b'.', len as usize));
        v
    })
}

/// One stored record as engine and spec are compared: offset, key, value,
/// timestamp, control.
type Row = (i64, Option<Vec<u8>>, Option<Vec<u8>>, i64, bool);

/// A [`Row`] from either reader's record (the engine's bytes or the spec's vectors).
fn row(
    offset: i64,
    key: Option<impl AsRef<[u8]>>,
    value: Option<impl AsRef<[u8]>>,
    timestamp: i64,
    control: bool,
) -> Row {
    (
        offset,
        key.map(|b| b.as_ref().to_vec()),
        value.map(|b| b.as_ref().to_vec()),
        timestamp,
        control,
    )
}

fn check_same(log: &Log, spec: &SpecLog) {
    assert_eq!(log.log_start_offset(), spec.log_start_offset());
    assert_eq!(log.next_offset(), spec.next_offset());
    let engine: Vec<_> = log
        .segments()
        .iter()
        .map(|s| (s.base_offset, s.closed, s.bytes, s.records, s.max_timestamp))
        .collect();
    let reference: Vec<_> = spec
        .segments()
        .iter()
        .map(|s| (s.base_offset, s.closed, s.bytes, s.records, s.max_timestamp))
        .collect();
    assert_eq!(engine, reference);
    let rows: Vec<Row> = log
        .read(log.log_start_offset(), usize::MAX)
        .unwrap()
        .into_iter()
        .map(|r| row(r.offset, r.key, r.value, r.timestamp, r.control))
        .collect();
    let expected: Vec<Row> = spec
        .read(spec.log_start_offset())
        .unwrap()
        .into_iter()
        .map(|r| row(r.offset, r.key, r.value, r.timestamp, r.control))
        .collect();
    assert_eq!(rows, expected);
}

fn run(ops: &[Op], segment_bytes: u64) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("log");
    let config = LogConfig {
        segment_bytes,
        index_interval_bytes: 64,
        ..LogConfig::default()
    };
    let (mut log, _) = Log::open(&dir, config.clone()).unwrap();
    let mut spec = SpecLog::new(segment_bytes);
    for op in ops {
        match op {
            Op::Append(records) => {
                let new: Vec<NewRecord> = records
                    .iter()
                    .map(|(k, v, ts)| {
                        NewRecord::new(bytes_of(*k, b'k', 0), bytes_of(*v, b'v', 20), *ts)
                    })
                    .collect();
                let input: Vec<SpecRecordInput> = new
                    .iter()
                    .map(|r| SpecRecordInput {
                        key: r.key.clone(),
                        value: r.value.clone(),
                        timestamp: r.timestamp,
                    })
                    .collect();
                if input.iter().any(|r| r.timestamp < -1) {
                    assert!(matches!(log.append(&new), Err(Error::InvalidArgument(_))));
                    assert!(spec.append(&input).is_err());
                } else {
                    let info = log.append(&new).unwrap();
                    let (base, last) = spec.append(&input).unwrap();
                    assert_eq!((info.base_offset, info.last_offset), (base, last));
                }
            }
            Op::Fill(key, ts) => {
                let key = bytes_of(*key, b'k', 0);
                let value = vec![b'f'; filling_value(&spec, &key, *ts)];
                let info = log
                    .append(&[NewRecord::new(key.clone(), Some(value.clone()), *ts)])
                    .unwrap();
                let input = SpecRecordInput {
                    key,
                    value: Some(value),
                    timestamp: *ts,
                };
                let (base, last) = spec.append(&[input]).unwrap();
                assert_eq!((info.base_offset, info.last_offset), (base, last));
            }
            Op::RetainEdge(now, pick, bytes) => {
                let (ms, limit) = retain_edge(&spec, *now, *pick, *bytes);
                let outcome = log.retain(*now, ms, limit).unwrap();
                assert_eq!(
                    outcome.deleted_segments,
                    spec.retain(*now, ms, limit).unwrap()
                );
            }
            Op::CompactEdge(now, pick) => {
                let drm = tombstone_edge(&spec, *now, *pick);
                let report = log.compact(*now, drm, None).unwrap();
                let summary = spec.compact(*now, drm, None).unwrap();
                assert_eq!(
                    (report.records_after, report.bytes_after),
                    (summary.records_after, summary.bytes_after)
                );
            }
            Op::Control(commit, ts) => {
                let kind = if *commit {
                    seglog::ControlKind::Commit
                } else {
                    seglog::ControlKind::Abort
                };
                let info = log.append_control(kind, 7, 0, *ts).unwrap();
                let (base, _) = spec.append_control(*commit, *ts);
                assert_eq!(info.base_offset, base);
            }
            Op::Roll => {
                log.roll().unwrap();
                spec.roll();
            }
            Op::Retain(now, ms, bytes) => match (
                log.retain(*now, *ms, *bytes),
                spec.retain(*now, *ms, *bytes),
            ) {
                (Ok(outcome), Ok(deleted)) => {
                    assert_eq!(outcome.deleted_segments, deleted);
                    assert_eq!(outcome.log_start_offset, spec.log_start_offset());
                }
                (Err(Error::InvalidArgument(_)), Err(_)) => {}
                (a, b) => panic!("retain disagrees: {a:?} vs {b:?}"),
            },
            Op::Compact(now, drm, bytes) => match (
                log.compact(*now, *drm, *bytes),
                spec.compact(*now, *drm, *bytes),
            ) {
                (Ok(report), Ok(summary)) => {
                    assert_eq!(
                        (
                            report.records_before,
                            report.records_after,
                            report.segments_before,
                            report.segments_after,
                            report.bytes_before,
                            report.bytes_after
                        ),
                        (
                            summary.records_before,
                            summary.records_after,
                            summary.segments_before,
                            summary.segments_after,
                            summary.bytes_before,
                            summary.bytes_after
                        )
                    );
                }
                (Err(Error::InvalidArgument(_)), Err(_)) => {}
                (a, b) => panic!("compact disagrees: {a:?} vs {b:?}"),
            },
            Op::Reopen => {
                log.close().unwrap();
                let (reopened, report) = Log::open(&dir, config.clone()).unwrap();
                assert_eq!(report.install.case, seglog::install::InstallCase::Clean);
                assert!(report.retention.removed_files.is_empty());
                log = reopened;
            }
        }
        check_same(&log, &spec);
    }
    log.close().unwrap();
}

#[test]
fn seed_example_compaction_and_retention() {
    run(
        &[
            Op::Append(vec![(Some(0), Some(1), 0), (Some(1), Some(2), 1)]),
            Op::Roll,
            Op::Append(vec![(Some(0), Some(3), 2), (None, Some(0), 3)]),
            Op::Roll,
            Op::Append(vec![(Some(4), Some(0), 4)]),
            Op::Compact(10, 1000, None),
            Op::Reopen,
            Op::Retain(300, Some(100), None),
        ],
        1 << 20,
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn engine_matches_spec(ops in prop::collection::vec(arb_op(), 1..24), segment_bytes in 80u64..400) {
        run(&ops, segment_bytes);
    }
}

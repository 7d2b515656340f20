//! Compaction end to end on real directories, against a naive reference of the
//! rules in docs/design.md section 1.
//!
//! Invariants checked: the compacted log holds exactly the records the reference
//! keeps, at their original offsets; batches keep base offset and last offset delta;
//! output segments follow the greedy grouping by compacted bytes and are named by
//! the first source segment; the active segment is byte-identical; `log_start_offset`
//! and `next_offset` are unchanged; the report counts the closed region only.

mod cleanup_support;

use cleanup_support::source;
use cleanup_support::*;
use proptest::prelude::*;
use seglog::compaction::{compact_dir, CompactOptions, Horizon};
use seglog::format::{filename, NewRecord};
use seglog::fs::{FileSystem, StdFs};
use seglog_suite::conformance::compactor::{Compactor, SourceSegment};
use std::collections::HashMap;

/// The rules, written as plainly as possible (a map of key -> latest offset over
/// every row, active included). Returns the rows the closed region keeps.
fn reference(closed: &[Row], active: &[Row], now: i64, delete_retention_ms: i64) -> Vec<Row> {
    let mut latest: HashMap<Vec<u8>, i64> = HashMap::new();
    for row in closed.iter().chain(active) {
        if let (Some(key), false) = (&row.key, row.control) {
            latest.insert(key.clone(), row.offset);
        }
    }
    closed
        .iter()
        .filter(|row| {
            if row.control {
                return true;
            }
            let Some(key) = &row.key else { return true };
            if latest[key] != row.offset {
                return false;
            }
            !(row.value.is_none()
                && (now as i128 - row.timestamp as i128) > delete_retention_ms as i128)
        })
        .cloned()
        .collect()
}

fn split_rows(dump: &Dump) -> (Vec<Row>, Vec<Row>) {
    let active_base = dump.segments.last().unwrap().0;
    dump.rows
        .iter()
        .cloned()
        .partition(|r| r.offset < active_base)
}

fn check(segments: &[Vec<Vec<NewRecord>>], options: CompactOptions) {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    write_log(&fs, &dir, 5, segments);
    let before = dump(&fs, &dir);
    let active_base = before.segments.last().unwrap().0;
    let active_path = dir.join(filename::build(active_base, filename::LOG_SUFFIX));
    let active_bytes = fs.read_all(&active_path).unwrap();
    let closed_sizes: Vec<u64> = before.segments[..before.segments.len() - 1]
        .iter()
        .map(|s| s.1)
        .collect();
    let sources: Vec<SourceSegment> = before
        .segments
        .iter()
        .map(|(base, _)| SourceSegment {
            base_offset: *base,
            batches: source::read_batches(
                &fs,
                &source::segment_path(&dir, *base, filename::LOG_SUFFIX),
                *base,
            )
            .unwrap(),
        })
        .collect();
    let horizon = Horizon {
        now: options.now,
        delete_retention_ms: options.delete_retention_ms,
    };
    let plan = Compactor::plan(&sources, horizon, options.segment_bytes);
    let report = compact_dir(&fs, &dir, options).unwrap();
    let after = dump(&fs, &dir);
    // The streaming executor writes exactly what the pure plan says.
    let written: Vec<(i64, Vec<seglog::format::RecordBatch>)> = after.segments
        [..after.segments.len() - 1]
        .iter()
        .map(|(base, _)| {
            let path = source::segment_path(&dir, *base, filename::LOG_SUFFIX);
            (*base, source::read_batches(&fs, &path, *base).unwrap())
        })
        .collect();
    let planned: Vec<(i64, Vec<seglog::format::RecordBatch>)> = plan
        .closed
        .iter()
        .map(|s| (s.base_offset, s.batches.clone()))
        .collect();
    if let Some(r) = &report {
        assert_eq!(written, planned);
        assert_eq!(
            (
                r.records_before,
                r.records_after,
                r.segments_before,
                r.segments_after,
                r.bytes_before,
                r.bytes_after
            ),
            (
                plan.report.records_before,
                plan.report.records_after,
                plan.report.segments_before,
                plan.report.segments_after,
                plan.report.bytes_before,
                plan.report.bytes_after
            )
        );
    }
    let Some(report) = report else {
        assert_eq!(segments.len(), 1, "no closed segment is the only no-op");
        assert_eq!(after, before);
        return;
    };
    let (closed, active) = split_rows(&before);
    let expected = reference(&closed, &active, options.now, options.delete_retention_ms);
    let (closed_after, active_after) = split_rows(&after);
    assert_eq!(closed_after, expected);
    assert_eq!(active_after, active);
    assert_eq!(fs.read_all(&active_path).unwrap(), active_bytes);
    assert_eq!(after.log_start_offset, before.log_start_offset);
    assert_eq!(after.next_offset, before.next_offset);
    assert_eq!(report.records_before, closed.len() as u64);
    assert_eq!(report.records_after, expected.len() as u64);
    assert_eq!(report.segments_before, closed_sizes.len() as u64);
    assert_eq!(report.bytes_before, closed_sizes.iter().sum::<u64>());
    let out_closed = &after.segments[..after.segments.len() - 1];
    assert_eq!(report.segments_after, out_closed.len() as u64);
    assert_eq!(
        report.bytes_after,
        out_closed.iter().map(|s| s.1).sum::<u64>()
    );
    assert_eq!(out_closed[0].0, before.log_start_offset);
    // Grouping: output bases are source bases, each group's bytes fit unless it is
    // a single source segment.
    let source_bases: Vec<i64> = before.segments.iter().map(|s| s.0).collect();
    for (i, (base, bytes)) in out_closed.iter().enumerate() {
        assert!(source_bases.contains(base));
        let next = out_closed.get(i + 1).map_or(active_base, |s| s.0);
        let sources = source_bases
            .iter()
            .filter(|b| **b >= *base && **b < next)
            .count();
        assert!(
            sources == 1 || *bytes <= options.segment_bytes,
            "group {base} too big"
        );
        // Batches are Kafka-shaped: never an offset beyond the next segment.
        let path = source::segment_path(&dir, *base, filename::LOG_SUFFIX);
        for batch in source::read_batches(&fs, &path, *base).unwrap() {
            assert!(batch.last_offset() < next);
        }
    }
    assert!(siblings(&dir).is_empty());
}

#[test]
fn seed_example() {
    let segments = vec![
        vec![vec![
            rec(Some("a"), Some("1"), 0),
            rec(Some("b"), Some("x"), 1),
        ]],
        vec![vec![
            rec(Some("a"), Some("2"), 2),
            rec(None, Some("event"), 3),
        ]],
        vec![vec![rec(Some("active"), Some("keep"), 4)]],
    ];
    let options = CompactOptions {
        now: 10,
        delete_retention_ms: 1000,
        segment_bytes: 1 << 20,
    };
    check(&segments, options);
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    write_log(&fs, &dir, 0, &segments);
    let report = compact_dir(&fs, &dir, options).unwrap().unwrap();
    assert_eq!((report.records_before, report.records_after), (4, 3));
    let offsets: Vec<i64> = dump(&fs, &dir).rows.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![1, 2, 3, 4]);
    assert_eq!(report.map_keys, 3);
    assert_eq!(report.map_bytes, 3 * 24);
}

#[test]
fn fully_dropped_segment_may_leave_an_empty_output_segment() {
    // Source 0 is wholly obsolete and alone in its group when segment_bytes is tiny.
    let segments = vec![
        vec![vec![rec(Some("a"), Some("1"), 0)]],
        vec![vec![rec(Some("a"), Some("2"), 0)]],
        vec![],
    ];
    let options = CompactOptions {
        now: 0,
        delete_retention_ms: 0,
        segment_bytes: 1,
    };
    check(&segments, options);
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    write_log(&fs, &dir, 0, &segments);
    compact_dir(&fs, &dir, options).unwrap().unwrap();
    // Group 1: source 0 (0 bytes); source 1 (78 bytes) does not fit 1 byte.
    assert_eq!(dump(&fs, &dir).segments[0], (0, 0));
}

#[test]
fn no_closed_segment_is_a_no_op() {
    check(
        &[vec![vec![
            rec(Some("a"), Some("1"), 0),
            rec(Some("a"), Some("2"), 0),
        ]]],
        CompactOptions {
            now: 0,
            delete_retention_ms: 0,
            segment_bytes: 100,
        },
    );
}

#[test]
fn bad_arguments_are_rejected() {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    write_log(
        &fs,
        &dir,
        0,
        &[vec![vec![rec(Some("a"), Some("1"), 0)]], vec![]],
    );
    for (drm, bytes) in [(-1, 100), (0, 0)] {
        let options = CompactOptions {
            now: 0,
            delete_retention_ms: drm,
            segment_bytes: bytes,
        };
        assert!(matches!(
            compact_dir(&fs, &dir, options),
            Err(seglog::Error::InvalidArgument(_))
        ));
    }
    assert!(siblings(&dir).is_empty());
}

fn arb_record() -> impl Strategy<Value = NewRecord> {
    (
        prop::option::weighted(0.85, 0u8..6),
        prop::option::weighted(0.8, 0u8..3),
        0i64..200,
    )
        .prop_map(|(key, value, ts)| {
            NewRecord::new(
                key.map(|k| vec![b'k', k]),
                value.map(|v| vec![b'v'; v as usize]),
                ts,
            )
        })
}

fn arb_log() -> impl Strategy<Value = Vec<Vec<Vec<NewRecord>>>> {
    // Closed segments are never empty (roll on an empty active segment is a no-op);
    // the active one may be.
    let batch = || prop::collection::vec(arb_record(), 1..4);
    (
        prop::collection::vec(prop::collection::vec(batch(), 1..4), 0..4),
        prop::collection::vec(batch(), 0..4),
    )
        .prop_map(|(mut closed, active)| {
            closed.push(active);
            closed
        })
}

/// The age at `now` of tombstone `pick` (of those not newer than `now`) in the
/// closed segments (all but the last), if any.
fn tombstone_age(segments: &[Vec<Vec<NewRecord>>], now: i64, pick: usize) -> Option<i64> {
    let ages: Vec<i64> = segments[..segments.len() - 1]
        .iter()
        .flatten()
        .flatten()
        .filter(|r| r.value.is_none() && r.key.is_some() && r.timestamp <= now)
        .map(|r| now - r.timestamp)
        .collect();
    ages.get(pick % ages.len().max(1)).copied()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn matches_the_reference(
        segments in arb_log(),
        now in 0i64..400,
        delete_retention_ms in 0i64..200,
        segment_bytes in 1u64..400,
        tombstone_edge in prop::option::weighted(0.5, 0usize..8),
    ) {
        // Half the time the grace is the exact age of a tombstone in the closed
        // region: kept at `now - ts == delete_retention_ms` (the rule is `>`).
        let delete_retention_ms = tombstone_edge
            .and_then(|pick| tombstone_age(&segments, now, pick))
            .unwrap_or(delete_retention_ms);
        check(&segments, CompactOptions { now, delete_retention_ms, segment_bytes });
    }
}

#[test]
fn files_the_log_does_not_own_move_with_it_and_directories_are_refused() {
    let fs = StdFs::new();
    let (_root, dir) = temp_log();
    write_log(
        &fs,
        &dir,
        0,
        &[
            vec![vec![rec(Some("a"), Some("1"), 0)]],
            vec![vec![rec(Some("a"), Some("2"), 1)]],
        ],
    );
    fs.write_new(&dir.join("notes.txt"), b"keep me").unwrap();
    seglog::retention::write_checkpoint(&fs, &dir, 0).unwrap();
    let options = CompactOptions {
        now: 0,
        delete_retention_ms: 0,
        segment_bytes: 1 << 20,
    };
    compact_dir(&fs, &dir, options).unwrap().unwrap();
    assert_eq!(fs.read_all(&dir.join("notes.txt")).unwrap(), b"keep me");
    assert_eq!(
        seglog::retention::read_checkpoint(&fs, &dir).unwrap(),
        Some(0)
    );
    std::fs::create_dir(dir.join("subdir")).unwrap();
    let err = compact_dir(&fs, &dir, options).unwrap_err();
    assert!(matches!(err, seglog::Error::InvalidArgument(_)), "{err}");
    assert!(
        siblings(&dir).is_empty(),
        "nothing built for a refused compaction"
    );
}

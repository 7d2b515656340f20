//! A trusted closed segment (vouched for by the recovery point, not scanned at
//! open) whose batch base offset was damaged (outside the CRC) so that its offsets
//! overlap the batch before: `read` reports it as corruption naming the file, as
//! `fetch` does, instead of serving overlapping offsets. A damaged-data stage
//! case on the `concurrent-clean` workload (a compacted segment whose first batch
//! lost its first records).

use std::path::Path;
use std::sync::Arc;

use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{CorruptKind, Error, Log, LogConfig, NewRecord};

fn record(key: &str) -> NewRecord {
    NewRecord::new(Some(key.as_bytes().to_vec()), Some(b"v".to_vec()), 1)
}

/// A log at `/log` on `fs` with the default config.
fn open(fs: &Arc<dyn FileSystem>) -> Log {
    Log::open_with(fs.clone(), Path::new("/log"), LogConfig::default())
        .unwrap()
        .0
}

#[test]
fn overlapping_offsets_in_a_trusted_segment_are_corruption() {
    let fs = Arc::new(SimFs::new());
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let dir = Path::new("/log");
    let mut log = open(&dyn_fs);
    log.append(&[record("a"), record("b")]).unwrap();
    log.append(&[record("b")]).unwrap();
    log.roll().unwrap();
    log.append(&[record("c")]).unwrap();
    // The first batch keeps `a` at 0 and its last offset delta 1 (`b` at 1 is
    // superseded): a batch whose last offset is past its last record.
    log.compact(10, 1000, None).unwrap();
    log.close().unwrap();
    let path = dir.join(seglog::format::filename::build(0, ".log"));
    let mut bytes = fs.read_all(&path).unwrap();
    // Its base offset 0 -> 1: its record reads as 1 and its last offset 2 overlaps
    // the next batch's 2, while the records alone still ascend (1, 2).
    assert_eq!(i64::from_be_bytes(bytes[..8].try_into().unwrap()), 0);
    bytes[7] = 1;
    fs.write_new(&path, &bytes).unwrap();
    let (log, report) = Log::open_with(dyn_fs, dir, LogConfig::default()).unwrap();
    assert_eq!(
        report.scanned_segments, 0,
        "nothing is scanned after a clean close"
    );
    let error = log.read(0, usize::MAX).unwrap_err();
    assert!(
        matches!(
            &error,
            Error::Corrupt { path: p, kind: CorruptKind::BaseOffset { got: 2, previous: 2 }, .. } if *p == path
        ),
        "{error:?}"
    );
    // The borrowed read checks the same, and fails with the same error.
    let each = log.read_each(0, usize::MAX, |_| {}).unwrap_err();
    assert_eq!(each.to_string(), error.to_string());
}

/// Cleans a log of three segments (closed 0 and 4, active 5) after damaging the
/// first batch's base offset of segment `segment` (0: the first file) to `base`,
/// with every policy. The cleaning must fail with `PastSegmentEnd` naming that
/// file and the moved batch's `last` offset, and leave every `.log` file as it was.
fn clean_after_moving_a_batch(segment: usize, base: u8, last: i64) {
    for policy in [
        seglog::compaction::CompactionPolicy::Seed,
        seglog::compaction::CompactionPolicy::Kafka,
    ] {
        let fs = Arc::new(SimFs::new());
        let dyn_fs: Arc<dyn FileSystem> = fs.clone();
        let dir = Path::new("/log");
        let mut log = open(&dyn_fs);
        log.append(&[record("a"), record("b")]).unwrap();
        log.append(&[record("b")]).unwrap();
        log.append(&[record("c")]).unwrap();
        log.roll().unwrap();
        log.append(&[record("d")]).unwrap();
        log.roll().unwrap();
        log.append(&[record("c")]).unwrap();
        log.close().unwrap();
        let base_of = [0i64, 4, 5][segment];
        let path = dir.join(seglog::format::filename::build(base_of, ".log"));
        let mut bytes = fs.read_all(&path).unwrap();
        assert_eq!(i64::from_be_bytes(bytes[..8].try_into().unwrap()), base_of);
        bytes[7] = base;
        fs.write_new(&path, &bytes).unwrap();
        let logs = |fs: &SimFs| -> Vec<(String, Vec<u8>)> {
            let mut names = fs.list_dir(dir).unwrap();
            names.retain(|n| n.ends_with(".log"));
            names.sort();
            names
                .into_iter()
                .map(|n| (n.clone(), fs.read_all(&dir.join(&n)).unwrap()))
                .collect()
        };
        let before = logs(&fs);
        let mut log = open(&dyn_fs);
        let knobs = seglog::compaction::CleanOptions {
            dedupe_buffer_bytes: None,
            min_compaction_lag_ms: 0,
            policy,
            ..Default::default()
        };
        // An error, not a panic (the log's segment invariant after the install, an
        // index's relative offset, or the swap's manifest check).
        let error = log.clean(20, 1000, None, knobs).unwrap_err();
        assert!(
            matches!(
                &error,
                Error::Corrupt { path: p, kind: CorruptKind::PastSegmentEnd { offset, .. }, .. }
                    if *p == path && *offset == last
            ),
            "{policy:?}: {error:?}"
        );
        drop(log);
        assert_eq!(
            logs(&fs),
            before,
            "{policy:?}: the failed cleaning changed a segment"
        );
        assert!(!fs.exists(Path::new("/log.compact-manifest")));
    }
}

#[test]
fn a_closed_batch_moved_into_the_next_segment_fails_the_cleaning() {
    // Segment 4's batch `d` moved to offset 5: the active segment's base.
    clean_after_moving_a_batch(1, 5, 5);
    // Segment 0's first batch (`a`, `b`) moved from 0..1 to 200..201.
    clean_after_moving_a_batch(0, 200, 201);
}

/// The active segment's batch `c` moved from 5 to 200 (the log assigned up to 5):
/// the open reads the active segment's batch headers after its last index entry
/// (`seglog::segment::tail`), so the marker's next offset 6 and the batches' 201
/// disagree at open. The marker is a hint: ignored for the segment, named in the
/// report with both offsets, and the segment scanned as after a crash, where the
/// base offset is outside the CRC and the moved batch is served (Kafka's blind
/// spot, the damage stage's `undetectable`). Before the check the log took the
/// marker's word and failed later, at the first read or cleaning of the batch.
#[test]
fn an_active_batch_moved_past_the_log_end_is_reported_at_open() {
    let fs = Arc::new(SimFs::new());
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let dir = Path::new("/log");
    let mut log = open(&dyn_fs);
    log.append(&[record("a")]).unwrap();
    log.roll().unwrap();
    log.append(&[record("c")]).unwrap();
    log.close().unwrap();
    let path = dir.join(seglog::format::filename::build(1, ".log"));
    let mut bytes = fs.read_all(&path).unwrap();
    bytes[7] = 200;
    fs.write_new(&path, &bytes).unwrap();
    let (log, report) = Log::open_with(dyn_fs, dir, LogConfig::default()).unwrap();
    assert_eq!(report.scanned_segments, 1, "{report:?}");
    assert!(
        report
            .ignored_checkpoints
            .iter()
            .any(|why| why.contains("clean-shutdown")
                && why.contains("ends at offset 2")
                && why.contains("at 201")),
        "{report:?}"
    );
    assert_eq!(log.next_offset(), 201);
}

//! A trusted closed segment (vouched for by the recovery point, not scanned at
//! open) whose batch base offset was damaged (outside the CRC) so that its offsets
//! overlap the batch before: `read` reports it as corruption naming the file, as
//! `fetch` does, instead of serving overlapping offsets. Found by the damaged-data
//! stage on the `concurrent-clean` workload (a compacted segment whose first batch
//! lost its first records).

use std::path::Path;
use std::sync::Arc;

use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{CorruptKind, Error, Log, LogConfig, NewRecord};

#[test]
fn overlapping_offsets_in_a_trusted_segment_are_corruption() {
    let fs = Arc::new(SimFs::new());
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let dir = Path::new("/log");
    let record = |k: &str| NewRecord::new(Some(k.as_bytes().to_vec()), Some(b"v".to_vec()), 1);
    let (mut log, _) = Log::open_with(dyn_fs.clone(), dir, LogConfig::default()).unwrap();
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

//! A batch whose CRC-32C checks out but whose header is impossible: a base offset
//! (outside the CRC) near `i64::MAX` with a `lastOffsetDelta` that carries its last
//! offset past `i64::MAX`. Its last offset was computed with plain `+`, which
//! overflowed (a panic in a debug build, a wrapped negative offset and then an
//! assertion in `Segment::on_batch` in a release build), so `dump`, `recover`,
//! `retain`, `compact` and `append` exited 101 and the log could not be opened to
//! repair it. Every number read from disk is combined with checked arithmetic:
//! the impossible batch is `Corrupt` naming file and position in a closed segment,
//! and the active segment's invalid tail (truncated by a writable open) otherwise.

mod cli_support;

use std::path::Path;
use std::sync::Arc;

use seglog::format::batch::RecordBatch;
use seglog::format::filename;
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{CorruptKind, Error, Log, LogConfig, NewRecord};

use cli_support::{ok, seglog};

fn record(key: &str) -> NewRecord {
    NewRecord::new(Some(key.as_bytes().to_vec()), Some(b"v".to_vec()), 1)
}

/// One CRC-valid batch of one record at `base_offset` with `last_offset_delta`.
fn impossible_batch(base_offset: i64, last_offset_delta: i32) -> Vec<u8> {
    let mut batch = RecordBatch::build(base_offset, &[record("x")]);
    batch.last_offset_delta = last_offset_delta;
    batch.encode()
}

/// A log of a closed segment 0 (offsets 0..2) and an active segment 2 (offset 2).
fn two_segments(fs: &Arc<dyn FileSystem>, dir: &Path) {
    let (mut log, _) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    log.append(&[record("a"), record("b")]).unwrap();
    log.roll().unwrap();
    log.append(&[record("c")]).unwrap();
    log.close().unwrap();
}

fn overflowing() -> Vec<u8> {
    impossible_batch(i64::MAX - 5, i32::MAX)
}

#[test]
fn overflowing_last_offset_in_a_closed_segment_is_corrupt() {
    let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
    let dir = Path::new("/log");
    two_segments(&fs, dir);
    let path = dir.join(filename::build(0, filename::LOG_SUFFIX));
    let mut bytes = fs.read_all(&path).unwrap();
    let good = bytes.len() as u64;
    bytes.extend_from_slice(&overflowing());
    fs.write_new(&path, &bytes).unwrap();
    let error = Log::open_checked(fs.clone(), dir, LogConfig::default()).unwrap_err();
    match &error {
        Error::Corrupt {
            path: p,
            position,
            kind,
        } => {
            assert_eq!(p, &path);
            assert_eq!(*position, good);
            assert!(
                matches!(kind, CorruptKind::OffsetOverflow { .. }),
                "{kind:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fs.read_all(&path).unwrap(), bytes, "nothing is modified");
}

#[test]
fn overflowing_last_offset_in_the_active_segment_is_its_invalid_tail() {
    let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
    let dir = Path::new("/log");
    two_segments(&fs, dir);
    let path = dir.join(filename::build(2, filename::LOG_SUFFIX));
    let mut bytes = fs.read_all(&path).unwrap();
    let good = bytes.len() as u64;
    bytes.extend_from_slice(&overflowing());
    fs.write_new(&path, &bytes).unwrap();
    let (log, report) = Log::open_checked(fs.clone(), dir, LogConfig::default()).unwrap();
    assert_eq!(report.truncated_segment, Some(2));
    assert_eq!(report.truncated_bytes, bytes.len() as u64 - good);
    assert!(report
        .truncated_reason
        .as_deref()
        .unwrap()
        .contains("overflow"));
    assert_eq!(log.next_offset(), 3);
    assert_eq!(fs.len(&path).unwrap(), good);
}

/// A trusted closed segment (the clean close's recovery point vouches for it, so
/// the open reads none of its bytes) whose first batch declares a negative
/// `lastOffsetDelta`, its CRC resealed. The read walk skipped it by its header
/// (a "last offset" of -1 is below every offset read) and served the log without
/// its records, with no error (a case of the damage stage's forged class). Every
/// such header is refused where it is decoded: the read fails naming the field.
#[test]
fn a_forged_negative_delta_in_a_trusted_segment_fails_the_read() {
    use seglog::format::batch::{LAST_OFFSET_DELTA_OFFSET, RECORD_COUNT_OFFSET};
    use seglog_suite::damage::{Change, Seal};
    for (position, value) in [
        (LAST_OFFSET_DELTA_OFFSET, -1),
        (RECORD_COUNT_OFFSET, -1),
        (RECORD_COUNT_OFFSET, 3),
    ] {
        let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
        let dir = Path::new("/log");
        two_segments(&fs, dir);
        let path = dir.join(filename::build(0, filename::LOG_SUFFIX));
        let bytes = fs.read_all(&path).unwrap();
        let forged = Change::Forge {
            position: position as u64,
            len: 4,
            value,
            seal: Seal::Batch,
        }
        .apply(&bytes)
        .unwrap();
        assert!(seglog::format::batch_view::check_batch_crc(&forged).is_ok());
        fs.write_new(&path, &forged).unwrap();
        let (log, _) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
        match log.read(0, usize::MAX) {
            Err(Error::Corrupt {
                path: p,
                position: at,
                ..
            }) => {
                assert_eq!(p, path);
                assert_eq!(at, position as u64, "{value}");
            }
            other => panic!("field at {position} = {value}: {other:?}"),
        }
    }
}

/// Exit 2 with a one-line message naming `needle`, never a panic (exit 101).
fn fails(args: &[&str], needle: &str) {
    let out = seglog(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: {stderr:?} lacks {needle:?}"
    );
}

/// A CLI log at `dir`: closed segment 0 (offsets 0, 1), active segment 2.
fn cli_log(dir: &str) {
    ok(&[
        "append",
        dir,
        "--batch",
        r#"[{"key":"a","value":"1","ts":1},{"key":"b","value":"2","ts":2}]"#,
    ]);
    ok(&["roll", dir]);
    ok(&[
        "append",
        dir,
        "--batch",
        r#"[{"key":"c","value":"3","ts":3}]"#,
    ]);
}

#[test]
fn cli_refuses_an_overflowing_closed_segment_without_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let d = dir.to_str().unwrap();
    cli_log(d);
    let closed = dir.join(filename::build(0, filename::LOG_SUFFIX));
    let mut bytes = std::fs::read(&closed).unwrap();
    bytes.extend_from_slice(&overflowing());
    std::fs::write(&closed, &bytes).unwrap();
    // No recovery point vouches for it: every open scans it.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path
            .extension()
            .is_some_and(|e| e == "checkpoint" || e == "clean-shutdown")
        {
            std::fs::remove_file(path).unwrap();
        }
    }
    for command in [
        &["dump", d][..],
        &["recover", d],
        &["retain", d, "--now", "0", "--retention-bytes", "1"],
        &["compact", d, "--now", "0", "--delete-retention-ms", "0"],
        &["append", d, "--batch", r#"[{"ts":4}]"#],
    ] {
        fails(command, "00000000000000000000.log");
        assert_eq!(std::fs::read(&closed).unwrap(), bytes, "{command:?}");
    }
}

#[test]
fn cli_truncates_an_overflowing_active_tail_without_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let d = dir.to_str().unwrap();
    cli_log(d);
    let active = dir.join(filename::build(2, filename::LOG_SUFFIX));
    let mut bytes = std::fs::read(&active).unwrap();
    let good = bytes.len() as u64;
    bytes.extend_from_slice(&overflowing());
    std::fs::write(&active, &bytes).unwrap();
    let dump = ok(&["dump", d]);
    assert!(dump.contains("\"next_offset\":3"), "{dump}");
    let report = ok(&["recover", d]);
    assert!(report.contains("\"truncated_segment\":2"), "{report}");
    assert_eq!(std::fs::metadata(&active).unwrap().len(), good);
    ok(&["append", d, "--batch", r#"[{"ts":4}]"#]);
}

mod extreme_fields {
    //! Extreme header fields (`i64::MIN`/`MAX` base offsets and timestamps,
    //! `i32::MIN`/`MAX` deltas, counts and lengths), re-sealed with a valid CRC,
    //! in a segment whose file name may itself be near `i64::MAX`, beside index
    //! files of arbitrary bytes: decoding, opening (checked and read-only),
    //! reading, appending and rolling return `Ok` or `Err`, never panic.
    use super::*;
    use proptest::prelude::*;
    use seglog::format::batch::{
        self, BASE_OFFSET_OFFSET, CRC_OFFSET, LAST_OFFSET_DELTA_OFFSET, LENGTH_OFFSET,
        MAX_TIMESTAMP_OFFSET, RECORD_COUNT_OFFSET,
    };

    fn edge_i64() -> impl Strategy<Value = i64> {
        prop_oneof![
            Just(i64::MIN),
            Just(i64::MIN + 1),
            Just(-1i64),
            Just(0i64),
            Just(1i64),
            Just(i64::MAX - 1),
            Just(i64::MAX),
            any::<i64>(),
        ]
    }

    fn edge_i32() -> impl Strategy<Value = i32> {
        prop_oneof![
            Just(i32::MIN),
            Just(-1i32),
            Just(0i32),
            Just(1i32),
            Just(i32::MAX - 1),
            Just(i32::MAX),
            any::<i32>(),
        ]
    }

    /// A CRC-valid one-record batch with the given header fields written over it.
    fn hostile(
        base_offset: i64,
        last_offset_delta: i32,
        record_count: Option<i32>,
        length: Option<i32>,
        max_timestamp: i64,
    ) -> Vec<u8> {
        let mut bytes = RecordBatch::build(0, &[record("k")]).encode();
        bytes[BASE_OFFSET_OFFSET..BASE_OFFSET_OFFSET + 8]
            .copy_from_slice(&base_offset.to_be_bytes());
        bytes[LAST_OFFSET_DELTA_OFFSET..LAST_OFFSET_DELTA_OFFSET + 4]
            .copy_from_slice(&last_offset_delta.to_be_bytes());
        bytes[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
            .copy_from_slice(&max_timestamp.to_be_bytes());
        if let Some(count) = record_count {
            bytes[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4]
                .copy_from_slice(&count.to_be_bytes());
        }
        if let Some(length) = length {
            bytes[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
        }
        let crc = seglog::format::crc::crc32c(&bytes[batch::ATTRIBUTES_OFFSET..]);
        bytes[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        bytes
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn extreme_headers_never_panic(
            segment_base in prop_oneof![Just(0i64), Just(3i64), Just(i64::MAX - 2), Just(i64::MAX)],
            base_offset in edge_i64(),
            last_offset_delta in edge_i32(),
            record_count in proptest::option::of(edge_i32()),
            length in proptest::option::of(edge_i32()),
            max_timestamp in edge_i64(),
            closed in any::<bool>(),
            index in proptest::collection::vec(any::<u8>(), 0..40),
            time_index in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            let bytes = hostile(base_offset, last_offset_delta, record_count, length, max_timestamp);
            // The decoders alone.
            let _ = batch::decode_header(&bytes);
            let _ = batch::decode(&bytes);
            let _ = seglog::format::BatchView::decode(&bytes);
            let _ = seglog::format::produce::check(&bytes, usize::MAX);
            // The segment and the log around it.
            let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
            let dir = Path::new("/log");
            fs.create_dir_all(dir).unwrap();
            let paths = seglog::segment::SegmentPaths::new(dir, segment_base);
            fs.write_new(&paths.log, &bytes).unwrap();
            fs.write_new(&paths.index, &index).unwrap();
            fs.write_new(&paths.time_index, &time_index).unwrap();
            if closed {
                // A last, active segment after it makes the hostile one closed.
                let next = segment_base.saturating_add(1);
                let after = seglog::segment::SegmentPaths::new(dir, next);
                if after.log != paths.log {
                    fs.write_new(&after.log, &[]).unwrap();
                }
            }
            if let Ok((log, _)) = Log::open_read_only(fs.clone(), dir, LogConfig::default()) {
                let _ = log.read(log.log_start_offset(), 1 << 20);
            }
            if let Ok((mut log, _)) = Log::open_checked(fs.clone(), dir, LogConfig::default()) {
                let _ = log.read(log.log_start_offset(), 1 << 20);
                // And appends after it: offsets near `i64::MAX` are refused.
                let _ = log.append(&[record("z")]);
                let _ = log.append_batches(&RecordBatch::build(0, &[record("y")]).encode());
                let _ = log.roll();
            }
        }
    }
}

/// A log whose active segment's file name is near `i64::MAX` has that many offsets
/// left: an append that would pass `i64::MAX` is refused (`InvalidArgument`,
/// nothing written, the log usable), where the sum overflowed before.
#[test]
fn appends_past_i64_max_are_refused() {
    let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
    let dir = Path::new("/log");
    fs.create_dir_all(dir).unwrap();
    fs.write_new(
        &dir.join(filename::build(i64::MAX - 1, filename::LOG_SUFFIX)),
        &[],
    )
    .unwrap();
    let (mut log, _) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    assert_eq!(log.next_offset(), i64::MAX - 1);
    let info = log.append(&[record("a")]).unwrap();
    assert_eq!(info.last_offset, i64::MAX - 1);
    assert_eq!(log.next_offset(), i64::MAX);
    let refused =
        |e: Error| matches!(e, Error::InvalidArgument(ref why) if why.contains("exhausted"));
    assert!(refused(log.append(&[record("b")]).unwrap_err()));
    let raw = RecordBatch::build(0, &[record("c")]).encode();
    assert!(refused(log.append_batches(&raw).unwrap_err()));
    let producer = seglog::Producer::new(1, 0);
    assert!(refused(
        log.append_transactional(producer, &[record("d")])
            .unwrap_err()
    ));
    // Not poisoned: the log still reads and closes.
    assert_eq!(log.read(i64::MAX - 1, usize::MAX).unwrap().len(), 1);
    log.close().unwrap();
    let (log, _) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    assert_eq!(log.next_offset(), i64::MAX);
}

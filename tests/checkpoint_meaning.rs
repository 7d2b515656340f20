//! Checkpoint files whose checksums are valid but whose meaning is impossible.
//!
//! A `log-start-offset.checkpoint` holding a start past the log's end made every
//! open delete every closed segment (all of them are "wholly below" such a start),
//! silently, again at every roll and reopen. And a damaged clean point
//! (`cleaner-offset.checkpoint`) refused every writable open, `recover` included,
//! though it is only a hint a cleaning pass rebuilds.
//!
//! The invariant: the authoritative file (the log start) is checked for meaning
//! before anything is deleted on its word, and a start past the end is `Corrupt`
//! naming it, with nothing deleted; a derived hint (the clean point) that does not
//! decode or names an offset past the active segment is ignored, reported in the
//! recovery report's `ignored_checkpoints`, and the cleaner starts from the log
//! start, its next pass writing a fresh one.

mod open_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use open_support::files;
use seglog::format::checkpoint;
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{CorruptKind, Error, Log, LogConfig, NewRecord};

fn record(key: &str) -> NewRecord {
    NewRecord::new(Some(key.as_bytes().to_vec()), Some(b"v".to_vec()), 1)
}

/// Segments 0 (offsets 0, 1), 2 (offset 2) and the active 3 (offset 3), closed.
fn three_segments() -> (Arc<dyn FileSystem>, &'static Path) {
    let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
    let dir = Path::new("/log");
    let (mut log, _) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    log.append(&[record("a"), record("b")]).unwrap();
    log.roll().unwrap();
    log.append(&[record("a")]).unwrap();
    log.roll().unwrap();
    log.append(&[record("c")]).unwrap();
    log.close().unwrap();
    (fs, dir)
}

fn accept_loss() -> LogConfig {
    LogConfig {
        recovery_mode: seglog::RecoveryMode::AcceptLoss,
        ..LogConfig::default()
    }
}

#[test]
fn a_start_past_the_end_is_corrupt_and_deletes_nothing() {
    let (fs, dir) = three_segments();
    let path = dir.join(checkpoint::CHECKPOINT_NAME);
    fs.write_new(&path, &checkpoint::encode(1000)).unwrap();
    let before = files(fs.as_ref(), dir);
    let want = |error: Error| match error {
        Error::Corrupt {
            path: p,
            position,
            kind,
        } => {
            assert_eq!(p, path);
            assert_eq!(position, 6);
            assert_eq!(
                kind,
                CorruptKind::PastLogEnd {
                    offset: 1000,
                    end: 4
                }
            );
        }
        other => panic!("{other:?}"),
    };
    want(Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap_err());
    assert_eq!(files(fs.as_ref(), dir), before, "nothing deleted");
    want(Log::open_read_only(fs.clone(), dir, LogConfig::default()).unwrap_err());
    want(Log::open_checked(fs.clone(), dir, LogConfig::default()).unwrap_err());
    assert_eq!(files(fs.as_ref(), dir), before, "nothing deleted");
}

#[test]
fn a_start_at_the_end_or_a_segment_base_is_honoured() {
    for (start, first) in [(2, 2), (3, 3), (4, 3)] {
        let (fs, dir) = three_segments();
        fs.write_new(
            &dir.join(checkpoint::CHECKPOINT_NAME),
            &checkpoint::encode(start),
        )
        .unwrap();
        let (log, report) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
        assert_eq!(log.log_start_offset(), first, "start {start}");
        assert_eq!(report.retention.checkpoint, Some(start));
        assert_eq!(log.next_offset(), 4);
    }
}

fn write_clean_point(fs: &dyn FileSystem, dir: &Path, bytes: &[u8]) -> PathBuf {
    let path = dir.join(checkpoint::CLEAN_POINT_NAME);
    if fs.exists(&path) {
        fs.remove_file(&path).unwrap();
    }
    fs.write_new(&path, bytes).unwrap();
    path
}

/// Damaged clean points, and clean points past the active segment's base.
fn bad_clean_points() -> Vec<(&'static str, Vec<u8>)> {
    let mut flipped = checkpoint::encode_clean_point(2);
    flipped[9] ^= 0x10;
    vec![
        ("flipped", flipped),
        ("short", checkpoint::encode_clean_point(2)[..7].to_vec()),
        ("past the active base", checkpoint::encode_clean_point(1000)),
        ("past by one", checkpoint::encode_clean_point(4)),
    ]
}

#[test]
fn a_bad_clean_point_is_ignored_reported_and_rebuilt() {
    for (what, bytes) in bad_clean_points() {
        let (fs, dir) = three_segments();
        let path = write_clean_point(fs.as_ref(), dir, &bytes);
        let (mut log, report) = Log::open_with(fs.clone(), dir, LogConfig::default())
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(report.ignored_checkpoints.len(), 1, "{what}: {report:?}");
        assert!(
            report.ignored_checkpoints[0].contains(checkpoint::CLEAN_POINT_NAME),
            "{what}: {:?}",
            report.ignored_checkpoints
        );
        assert_eq!(log.clean_point().unwrap(), 0, "{what}: the log start");
        // The next pass cleans from the log start and writes a fresh clean point.
        log.compact(10, 1000, None).unwrap();
        let fresh = checkpoint::decode_clean_point(&fs.read_all(&path).unwrap()).unwrap();
        assert_eq!(fresh, log.clean_point().unwrap(), "{what}");
        assert!(fresh > 0, "{what}");
        log.close().unwrap();
        let (_, report) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
        assert!(report.ignored_checkpoints.is_empty(), "{what}: {report:?}");
    }
}

#[test]
fn a_good_clean_point_is_not_reported() {
    let (fs, dir) = three_segments();
    write_clean_point(fs.as_ref(), dir, &checkpoint::encode_clean_point(3));
    let (log, report) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    assert!(report.ignored_checkpoints.is_empty(), "{report:?}");
    assert_eq!(log.clean_point().unwrap(), 3);
}

fn seglog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(args)
        .output()
        .expect("run seglog")
}

fn ok(args: &[&str]) -> serde_json::Value {
    let out = seglog(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// A CLI log at `dir` with closed segments 0 and 2 and the active segment 3.
fn cli_log(d: &str) {
    ok(&[
        "append",
        d,
        "--batch",
        r#"[{"key":"a","ts":1},{"key":"b","ts":1}]"#,
    ]);
    ok(&["roll", d]);
    ok(&["append", d, "--batch", r#"[{"key":"a","ts":1}]"#]);
    ok(&["roll", d]);
    ok(&["append", d, "--batch", r#"[{"key":"c","ts":1}]"#]);
}

#[test]
fn cli_refuses_a_start_past_the_end_and_deletes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let d = dir.to_str().unwrap();
    cli_log(d);
    std::fs::write(
        dir.join(checkpoint::CHECKPOINT_NAME),
        checkpoint::encode(1000),
    )
    .unwrap();
    let before = snapshot(&dir);
    for args in [
        &["append", d, "--batch", r#"[{"ts":2}]"#][..],
        &["roll", d],
        &["recover", d],
        &["dump", d],
    ] {
        let out = seglog(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(checkpoint::CHECKPOINT_NAME), "{stderr}");
        assert!(stderr.contains("past the log's end"), "{stderr}");
        assert_eq!(snapshot(&dir), before, "{args:?} deleted or changed files");
    }
}

#[test]
fn cli_opens_past_a_damaged_clean_point() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let d = dir.to_str().unwrap();
    cli_log(d);
    let path = dir.join(checkpoint::CLEAN_POINT_NAME);
    std::fs::write(&path, b"not a clean point").unwrap();
    let report = ok(&["recover", d]);
    let ignored = report["ignored_checkpoints"].as_array().unwrap();
    assert_eq!(ignored.len(), 1, "{report}");
    assert!(ignored[0]
        .as_str()
        .unwrap()
        .contains(checkpoint::CLEAN_POINT_NAME));
    ok(&["append", d, "--batch", r#"[{"ts":2}]"#]);
    ok(&["roll", d]);
    ok(&["compact", d, "--now", "10", "--delete-retention-ms", "1000"]);
    assert!(checkpoint::decode_clean_point(&std::fs::read(&path).unwrap()).is_ok());
    let report = ok(&["recover", d]);
    assert_eq!(report["ignored_checkpoints"], serde_json::json!([]));
}

/// Segments 0 (two batches: offsets 0 and 1), 2 (offset 2) and the active 3,
/// closed: the recovery point vouches for 0 and 2.
fn two_batch_first_segment() -> (Arc<dyn FileSystem>, &'static Path, u64) {
    let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
    let dir = Path::new("/log");
    let (mut log, _) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    log.append(&[record("a")]).unwrap();
    let first_batch_bytes = log.segments()[0].bytes;
    log.append(&[record("b")]).unwrap();
    log.roll().unwrap();
    log.append(&[record("c")]).unwrap();
    log.roll().unwrap();
    log.append(&[record("d")]).unwrap();
    log.close().unwrap();
    (fs, dir, first_batch_bytes)
}

#[test]
fn a_recovery_point_length_the_file_contradicts_is_ignored_and_the_segment_scanned() {
    let (fs, dir, first_batch_bytes) = two_batch_first_segment();
    let path = dir.join(seglog::format::filename::build(0, ".log"));
    // Cut at the batch boundary: the scan finds a valid (shorter) segment. Lost
    // data: only the explicit `AcceptLoss` opens past it (tests/vanished_segments.rs).
    fs.set_len(&path, first_batch_bytes).unwrap();
    let (log, report) = Log::open_with(fs.clone(), dir, accept_loss()).unwrap();
    assert_eq!(report.ignored_checkpoints.len(), 1, "{report:?}");
    assert!(
        report.ignored_checkpoints[0].contains("recovery-point.checkpoint"),
        "{report:?}"
    );
    assert_eq!(report.scanned_segments, 1, "{report:?}");
    let offsets: Vec<i64> = log
        .read(0, usize::MAX)
        .unwrap()
        .iter()
        .map(|r| r.offset)
        .collect();
    assert_eq!(offsets, vec![0, 2, 3]);
    // The fresh recovery point vouches for what is there: the next open is clean.
    log.close().unwrap();
    let (_, report) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    assert!(report.ignored_checkpoints.is_empty(), "{report:?}");
    assert_eq!(report.scanned_segments, 0, "{report:?}");
}

#[test]
fn a_closed_segment_cut_inside_a_batch_is_still_corrupt() {
    let (fs, dir, first_batch_bytes) = two_batch_first_segment();
    let path = dir.join(seglog::format::filename::build(0, ".log"));
    fs.set_len(&path, first_batch_bytes + 5).unwrap();
    let error = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap_err();
    match error {
        Error::Corrupt {
            path: p, position, ..
        } => {
            assert_eq!(p, path);
            assert_eq!(position, first_batch_bytes);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        fs.len(&path).unwrap(),
        first_batch_bytes + 5,
        "nothing truncated"
    );
}

#[test]
fn a_recovery_point_naming_a_missing_middle_segment_is_ignored() {
    let (fs, dir) = three_segments();
    for suffix in [".log", ".index", ".timeindex"] {
        fs.remove_file(&dir.join(seglog::format::filename::build(2, suffix)))
            .unwrap();
    }
    // Lost data: only the explicit `AcceptLoss` opens past it
    // (tests/vanished_segments.rs).
    let (log, report) = Log::open_with(fs.clone(), dir, accept_loss()).unwrap();
    assert_eq!(report.ignored_checkpoints.len(), 1, "{report:?}");
    assert!(
        report.ignored_checkpoints[0].contains("segment 2"),
        "{report:?}"
    );
    assert_eq!(
        report.trusted_segments, 1,
        "only the marker's active segment"
    );
    assert_eq!(log.next_offset(), 4);
    log.close().unwrap();
    let (_, report) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    assert!(report.ignored_checkpoints.is_empty(), "{report:?}");
}

/// A checkpoint that outlived every segment (all files removed by hand) still says
/// which offsets were handed out: the first open creates the active segment at the
/// checkpointed start, never at 0, so a later open agrees with the checkpoint and no
/// offset is handed out twice. (The `open_dir` fuzz target's case: a first open that
/// creates segment 0 under a start of 3 makes the second open refuse the log.)
#[test]
fn a_checkpoint_without_segments_starts_the_log_at_its_offset() {
    let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
    let dir = Path::new("/log");
    fs.create_dir_all(dir).unwrap();
    fs.write_new(
        &dir.join(checkpoint::CHECKPOINT_NAME),
        &checkpoint::encode(3),
    )
    .unwrap();
    let (mut log, report) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    assert!(report.created, "{report:?}");
    assert_eq!((log.log_start_offset(), log.next_offset()), (3, 3));
    assert_eq!(log.append(&[record("a")]).unwrap().base_offset, 3);
    log.close().unwrap();
    let (log, report) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!((log.log_start_offset(), log.next_offset()), (3, 4));
}

/// A clean-shutdown marker whose seal holds but whose next offset is not the one
/// its segment's batches end at (a forged or foreign marker; the damage stage's
/// `forge summary[0].next_offset` found it served as the log's next offset): the
/// open takes the next offset from the batches after the last index entry, as
/// Kafka's `readNextOffset` does, ignores the marker for the segment and scans it,
/// and appends continue at the right offset.
#[test]
fn a_marker_whose_next_offset_the_batches_contradict_is_ignored() {
    use seglog::format::recovery_point::{self, SummaryKind, CLEAN_SHUTDOWN_NAME};
    for forged in [1_000_000, 4, 3] {
        let (fs, dir) = three_segments();
        let path = dir.join(CLEAN_SHUTDOWN_NAME);
        let mut marker =
            recovery_point::decode(SummaryKind::CleanShutdown, &fs.read_all(&path).unwrap())
                .unwrap();
        assert_eq!(marker.summaries[0].next_offset, 4);
        marker.summaries[0].next_offset = forged;
        fs.write_new(
            &path,
            &recovery_point::encode(SummaryKind::CleanShutdown, &marker),
        )
        .unwrap();
        let (mut log, report) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
        if forged == 4 {
            // The marker's own value: trusted, nothing scanned.
            assert_eq!(report.scanned_segments, 0, "{report:?}");
            assert!(report.ignored_checkpoints.is_empty(), "{report:?}");
        } else {
            assert_eq!(report.scanned_segments, 1, "{report:?}");
            assert!(
                report
                    .ignored_checkpoints
                    .iter()
                    .any(|why| why.contains(CLEAN_SHUTDOWN_NAME)),
                "{report:?}"
            );
        }
        assert_eq!(log.next_offset(), 4, "forged {forged}");
        assert_eq!(
            log.append(&[record("d")]).unwrap().base_offset,
            4,
            "forged {forged}"
        );
    }
}

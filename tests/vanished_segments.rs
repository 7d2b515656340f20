//! Data that vanished is never silent. A closed segment removed from the
//! middle or the front, cut exactly at a batch boundary, emptied, or replaced by a
//! directory lost acknowledged, flushed records, and every open went on without a
//! word: the recovery point's summaries said exactly what existed, but the open took
//! a recovery point that the files contradicted for a wrong hint, dropped it and
//! scanned what was left, and a scan cannot see bytes that are gone; the read-only
//! open and `recover` did not compare at all.
//!
//! The invariant: a CRC-valid recovery point whose closed segments at or above the
//! durable log start are missing, shorter than their summary or not regular files is
//! evidence of loss. Every open (writable, `recover`'s checked open, read-only)
//! refuses with `CorruptKind::SegmentsLost`, naming each segment file, its bytes and
//! the offsets lost, and changes nothing. Segments wholly below a start checkpoint
//! (what retention removes) may be gone. `RecoveryMode::AcceptLoss` opens anyway,
//! lists the lost ranges in the report and writes a fresh recovery point, so the
//! next open is clean.

mod cli_support;

mod open_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use open_support::{files, OPENS};
use seglog::format::{checkpoint, filename, recovery_point};
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{CorruptKind, Error, Log, LogConfig, Loss, LostSegment, NewRecord, RecoveryMode};

fn record(key: &str) -> NewRecord {
    NewRecord::new(Some(key.as_bytes().to_vec()), Some(b"v".to_vec()), 1)
}

/// Segments 0 (offsets 0, 1: two batches), 2 (offset 2) and the active 3 (offset
/// 3), closed cleanly: the recovery point summarizes 0 and 2, the marker 3. Returns
/// the bytes of segment 0's first batch and of segments 0 and 2.
fn three_segments(fs: &Arc<dyn FileSystem>, dir: &Path) -> (u64, u64, u64) {
    let (mut log, _) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    log.append(&[record("a")]).unwrap();
    let first_batch_bytes = log.segments()[0].bytes;
    log.append(&[record("b")]).unwrap();
    log.roll().unwrap();
    log.append(&[record("c")]).unwrap();
    log.roll().unwrap();
    log.append(&[record("d")]).unwrap();
    let (bytes0, bytes2) = (log.segments()[0].bytes, log.segments()[1].bytes);
    log.close().unwrap();
    (first_batch_bytes, bytes0, bytes2)
}

fn sim() -> (Arc<dyn FileSystem>, &'static Path) {
    (Arc::new(SimFs::new()), Path::new("/log"))
}

fn path(dir: &Path, base: i64, suffix: &str) -> PathBuf {
    dir.join(filename::build(base, suffix))
}

fn remove_segment(fs: &dyn FileSystem, dir: &Path, base: i64) {
    for suffix in [".log", ".index", ".timeindex"] {
        fs.remove_file(&path(dir, base, suffix)).unwrap();
    }
}

fn accept_loss() -> LogConfig {
    LogConfig {
        recovery_mode: RecoveryMode::AcceptLoss,
        ..LogConfig::default()
    }
}

/// Every open refuses with `SegmentsLost` at `expected[0]`'s file, listing exactly
/// `expected`, and the directory is byte for byte what it was.
fn every_open_refuses(fs: &Arc<dyn FileSystem>, dir: &Path, expected: &[LostSegment]) {
    let before = files(fs.as_ref(), dir);
    for mode in [RecoveryMode::TornTail, RecoveryMode::Strict] {
        for (name, open) in OPENS {
            let config = LogConfig {
                recovery_mode: mode,
                ..LogConfig::default()
            };
            let error = match open(fs.clone(), dir, config) {
                Ok((_, report)) => panic!("{name} {mode} open went on: {report:?}"),
                Err(error) => error,
            };
            let message = error.to_string();
            match error {
                Error::Corrupt {
                    path: p,
                    kind: CorruptKind::SegmentsLost { lost },
                    ..
                } => {
                    assert_eq!(p, dir.join(&expected[0].segment), "{name}");
                    assert_eq!(lost, expected, "{name}");
                }
                other => panic!("{name} {mode}: {other:?}"),
            }
            for lost in expected {
                assert!(message.contains(&lost.segment), "{message}");
            }
            assert_eq!(
                files(fs.as_ref(), dir),
                before,
                "{name} {mode} changed the directory"
            );
        }
    }
}

/// An open in `AcceptLoss` goes on with what is there, lists `expected` and writes a
/// fresh recovery point: the next default open is clean and lists nothing.
fn accept_loss_opens(fs: &Arc<dyn FileSystem>, dir: &Path, expected: &[LostSegment]) -> Vec<i64> {
    let (log, report) = Log::open_with(fs.clone(), dir, accept_loss()).unwrap();
    assert_eq!(report.lost, expected, "{report:?}");
    let offsets = log
        .read(log.log_start_offset(), usize::MAX)
        .unwrap()
        .iter()
        .map(|r| r.offset)
        .collect();
    drop(log);
    let (_, report) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    assert!(report.lost.is_empty(), "{report:?}");
    offsets
}

fn lost(base: i64, loss: Loss, offsets: (i64, i64), bytes: u64) -> LostSegment {
    LostSegment {
        segment: filename::build(base, ".log"),
        loss,
        first_offset: offsets.0,
        last_offset: offsets.1,
        bytes,
    }
}

#[test]
fn a_closed_segment_removed_from_the_middle_is_refused() {
    let (fs, dir) = sim();
    let (_, _, bytes2) = three_segments(&fs, dir);
    remove_segment(fs.as_ref(), dir, 2);
    let expected = [lost(2, Loss::Missing, (2, 2), bytes2)];
    every_open_refuses(&fs, dir, &expected);
    assert_eq!(accept_loss_opens(&fs, dir, &expected), vec![0, 1, 3]);
}

#[test]
fn the_first_closed_segment_removed_without_retention_is_refused() {
    let (fs, dir) = sim();
    let (_, bytes0, _) = three_segments(&fs, dir);
    remove_segment(fs.as_ref(), dir, 0);
    let expected = [lost(0, Loss::Missing, (0, 1), bytes0)];
    every_open_refuses(&fs, dir, &expected);
    assert_eq!(accept_loss_opens(&fs, dir, &expected), vec![2, 3]);
}

#[test]
fn only_the_log_removed_is_refused() {
    let (fs, dir) = sim();
    let (_, _, bytes2) = three_segments(&fs, dir);
    fs.remove_file(&path(dir, 2, ".log")).unwrap();
    every_open_refuses(&fs, dir, &[lost(2, Loss::Missing, (2, 2), bytes2)]);
}

#[test]
fn a_closed_segment_cut_at_a_batch_boundary_is_refused_with_marker_and_point_intact() {
    let (fs, dir) = sim();
    let (first_batch_bytes, bytes0, _) = three_segments(&fs, dir);
    assert!(fs.exists(&dir.join(recovery_point::CLEAN_SHUTDOWN_NAME)));
    fs.set_len(&path(dir, 0, ".log"), first_batch_bytes)
        .unwrap();
    let expected = [lost(
        0,
        Loss::Shorter {
            file_bytes: first_batch_bytes,
        },
        (1, 1),
        bytes0 - first_batch_bytes,
    )];
    every_open_refuses(&fs, dir, &expected);
    assert_eq!(accept_loss_opens(&fs, dir, &expected), vec![0, 2, 3]);
}

#[test]
fn a_closed_segment_emptied_after_a_crash_is_refused() {
    let (fs, dir) = sim();
    let (_, bytes0, _) = three_segments(&fs, dir);
    // What a crash leaves: no clean-shutdown marker.
    fs.remove_file(&dir.join(recovery_point::CLEAN_SHUTDOWN_NAME))
        .unwrap();
    fs.set_len(&path(dir, 0, ".log"), 0).unwrap();
    let expected = [lost(0, Loss::Shorter { file_bytes: 0 }, (0, 1), bytes0)];
    every_open_refuses(&fs, dir, &expected);
    assert_eq!(accept_loss_opens(&fs, dir, &expected), vec![2, 3]);
}

#[test]
fn a_log_replaced_by_a_directory_is_refused() {
    let (fs, dir) = sim();
    let (_, _, bytes2) = three_segments(&fs, dir);
    let log = path(dir, 2, ".log");
    fs.remove_file(&log).unwrap();
    fs.create_dir_all(&log).unwrap();
    let expected = [lost(2, Loss::NotAFile, (2, 2), bytes2)];
    every_open_refuses(&fs, dir, &expected);
    assert_eq!(accept_loss_opens(&fs, dir, &expected), vec![0, 1, 3]);
}

#[test]
fn every_lost_segment_is_named() {
    let (fs, dir) = sim();
    let (_, bytes0, bytes2) = three_segments(&fs, dir);
    remove_segment(fs.as_ref(), dir, 0);
    fs.set_len(&path(dir, 2, ".log"), 0).unwrap();
    every_open_refuses(
        &fs,
        dir,
        &[
            lost(0, Loss::Missing, (0, 1), bytes0),
            lost(2, Loss::Shorter { file_bytes: 0 }, (2, 2), bytes2),
        ],
    );
}

/// The negative space: retention removes the segments wholly below the start it
/// checkpoints first, and the recovery point still summarizes them until the next
/// roll. Those may be gone; the segment holding the start may not.
#[test]
fn segments_wholly_below_the_start_checkpoint_may_be_gone() {
    let (fs, dir) = sim();
    let (_, bytes0, _) = three_segments(&fs, dir);
    fs.write_new(
        &dir.join(checkpoint::CHECKPOINT_NAME),
        &checkpoint::encode(1),
    )
    .unwrap();
    remove_segment(fs.as_ref(), dir, 0);
    // Start 1 is inside segment 0 (offsets 0 and 1): offset 1 is lost.
    every_open_refuses(&fs, dir, &[lost(0, Loss::Missing, (0, 1), bytes0)]);
    fs.write_new(
        &dir.join(checkpoint::CHECKPOINT_NAME),
        &checkpoint::encode(2),
    )
    .unwrap();
    let (log, report) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    assert!(report.lost.is_empty(), "{report:?}");
    assert_eq!((log.log_start_offset(), log.next_offset()), (2, 4));
    drop(log);
    let (_, report) = Log::open_read_only(fs.clone(), dir, LogConfig::default()).unwrap();
    assert!(report.lost.is_empty(), "{report:?}");
}

/// A recovery point that fails its checksum is a hint: ignored and reported, never
/// a refusal, even when segments it once summarized are gone.
#[test]
fn a_damaged_recovery_point_stays_a_hint() {
    let (fs, dir) = sim();
    three_segments(&fs, dir);
    remove_segment(fs.as_ref(), dir, 2);
    let point = dir.join(recovery_point::RECOVERY_POINT_NAME);
    let mut bytes = fs.read_all(&point).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs.write_new(&point, &bytes).unwrap();
    let (_, report) = Log::open_with(fs.clone(), dir, LogConfig::default()).unwrap();
    assert!(report.lost.is_empty(), "{report:?}");
    assert_eq!(report.ignored_checkpoints.len(), 1, "{report:?}");
}

#[test]
fn cli_refuses_every_command_and_accept_loss_names_the_range() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let d = dir.to_str().unwrap();
    let fs: Arc<dyn FileSystem> = Arc::new(seglog::fs::StdFs::new());
    let (_, _, bytes2) = three_segments(&fs, &dir);
    for suffix in [".log", ".index", ".timeindex"] {
        std::fs::remove_file(path(&dir, 2, suffix)).unwrap();
    }
    let before = cli_support::snapshot(&dir);
    let batch = r#"[{"key":"x","value":"y","ts":9}]"#;
    for args in [
        vec!["dump", d],
        vec!["recover", d],
        vec!["append", d, "--batch", batch],
        vec!["compact", d, "--now", "10", "--delete-retention-ms", "1000"],
        vec!["retain", d, "--now", "10", "--retention-ms", "1"],
    ] {
        let out = cli_support::seglog(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(
            stderr.contains("00000000000000000002.log missing"),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("offsets 2..=2"), "{args:?}: {stderr}");
        assert_eq!(cli_support::snapshot(&dir), before, "{args:?}");
    }
    let out = cli_support::seglog(&["recover", d, "--recovery-mode", "accept-loss"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["lost"],
        serde_json::json!([{
            "segment": "00000000000000000002.log",
            "loss": "missing",
            "first_offset": 2,
            "last_offset": 2,
            "bytes": bytes2,
        }])
    );
    cli_support::ok(&["recover", d]);
}

/// Segments 0, 2 and the active 3 in a temp dir, closed cleanly, with segment 2
/// removed; the dir's path.
fn cli_log_without_segment_2(tmp: &tempfile::TempDir) -> (PathBuf, u64) {
    let dir = tmp.path().join("p0");
    let fs: Arc<dyn FileSystem> = Arc::new(seglog::fs::StdFs::new());
    let (_, _, bytes2) = three_segments(&fs, &dir);
    for suffix in [".log", ".index", ".timeindex"] {
        std::fs::remove_file(path(&dir, 2, suffix)).unwrap();
    }
    (dir, bytes2)
}

/// A writable command in `accept-loss` says what it went past: `"recovery"."lost"`
/// in its JSON and a warning on stderr naming the segment; the next command, in
/// the default mode, finds nothing to say.
#[test]
fn cli_accept_loss_names_the_loss_in_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, bytes2) = cli_log_without_segment_2(&tmp);
    let d = dir.to_str().unwrap();
    let expected = serde_json::json!([{
        "segment": "00000000000000000002.log",
        "loss": "missing",
        "first_offset": 2,
        "last_offset": 2,
        "bytes": bytes2,
    }]);
    let out = cli_support::seglog(&["dump", d, "--recovery-mode", "accept-loss"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["lost"], expected);
    let offsets: Vec<i64> = value["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, vec![0, 1, 3]);

    let batch = r#"[{"key":"x","value":"y","ts":9}]"#;
    let out = cli_support::seglog(&[
        "append",
        d,
        "--recovery-mode",
        "accept-loss",
        "--batch",
        batch,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning") && stderr.contains("00000000000000000002.log missing"),
        "{stderr}"
    );
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["base_offset"], 4);
    assert_eq!(value["recovery"]["lost"], expected);
    assert_eq!(value["recovery"]["truncated_bytes"], 0);

    let out = cli_support::seglog(&["append", d, "--batch", batch]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["base_offset"], 5);
    assert!(value.get("recovery").is_none(), "{value}");
}

/// A writable command's JSON carries the open's findings whenever it found
/// anything, not only a truncation: here a recovery point that fails its CRC (a
/// hint, ignored and rewritten).
#[test]
fn cli_writable_commands_report_an_ignored_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let fs: Arc<dyn FileSystem> = Arc::new(seglog::fs::StdFs::new());
    three_segments(&fs, &dir);
    let point = dir.join(recovery_point::RECOVERY_POINT_NAME);
    let mut bytes = std::fs::read(&point).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&point, bytes).unwrap();
    let d = dir.to_str().unwrap();
    let value: serde_json::Value = serde_json::from_str(&cli_support::ok(&["roll", d])).unwrap();
    assert_eq!(value["active_base_offset"], 4);
    let ignored = value["recovery"]["ignored_checkpoints"].as_array().unwrap();
    assert_eq!(ignored.len(), 1, "{value}");
    assert!(
        ignored[0]
            .as_str()
            .unwrap()
            .contains(recovery_point::RECOVERY_POINT_NAME),
        "{value}"
    );
    assert_eq!(value["recovery"]["lost"], serde_json::json!([]));
    let value: serde_json::Value = serde_json::from_str(&cli_support::ok(&["roll", d])).unwrap();
    assert!(value.get("recovery").is_none(), "{value}");
}

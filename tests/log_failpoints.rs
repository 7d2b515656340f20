//! Crash and error injection at every `log::` fail point, through the binary
//! (`FAILPOINTS` env var, one child process per case: a crash is a real abort).
//!
//! Invariants checked: after a crash at any fail point of append, roll, flush or
//! recovery, the log reopens; `next_offset` is at least what was flushed before the
//! crashed command; every flushed record reads back unchanged; a second open finds
//! nothing left to repair. With `return(error)` the command exits 2 naming the point.

use std::path::Path;
use std::process::{Command, Output};

use seglog::fs::failpoint::ALL;
use seglog::{Log, LogConfig, NewRecord};

fn cfg() -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        index_interval_bytes: 50,
        ..LogConfig::default()
    }
}

fn seglog(args: &[&str], failpoints: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(args)
        .args(["--segment-bytes", "300", "--index-interval-bytes", "50"])
        .env("FAILPOINTS", failpoints)
        .output()
        .unwrap()
}

/// A log with 12 flushed records, a torn tail, a missing index and an orphan, so
/// that every recovery fail point is on the path of the next open.
fn prepare(dir: &Path, damaged: bool) -> Vec<NewRecord> {
    let (mut log, _) = Log::open(dir, cfg()).unwrap();
    let mut all = Vec::new();
    for i in 0..6 {
        let batch = vec![
            NewRecord::new(
                Some(format!("k{i}").into_bytes()),
                Some(vec![i as u8; 20]),
                i,
            ),
            NewRecord::new(None, Some(b"v".to_vec()), i),
        ];
        log.append(&batch).unwrap();
        all.extend(batch);
    }
    let active = log.segments().last().unwrap().base_offset;
    log.close().unwrap();
    if damaged {
        let name = |suffix| dir.join(seglog::format::filename::build(active, suffix));
        std::fs::OpenOptions::new()
            .append(true)
            .open(name(".log"))
            .unwrap()
            .set_len(std::fs::metadata(name(".log")).unwrap().len() + 7)
            .unwrap();
        std::fs::remove_file(name(".timeindex")).unwrap();
        std::fs::write(
            dir.join(seglog::format::filename::build(9_999, ".index")),
            b"",
        )
        .unwrap();
        // No recovery point (the open writes one, after syncing what it scanned) and
        // a closed segment's index to rebuild (durably: the new point vouches for it).
        std::fs::remove_file(dir.join(seglog::format::recovery_point::RECOVERY_POINT_NAME))
            .unwrap();
        std::fs::remove_file(dir.join(seglog::format::filename::build(0, ".timeindex"))).unwrap();
    }
    all
}

fn check_recovers(dir: &Path, flushed: &[NewRecord], case: &str) {
    let (log, _) = Log::open(dir, cfg()).unwrap_or_else(|e| panic!("{case}: reopen failed: {e}"));
    assert!(log.next_offset() >= flushed.len() as i64, "{case}");
    let read = log.read(0, usize::MAX).unwrap();
    let mut all = read.to_vec();
    let mut from = all.last().map_or(0, |r| r.offset + 1);
    while from < log.next_offset() {
        let more = log.read(from, usize::MAX).unwrap();
        from = more.last().unwrap().offset + 1;
        all.extend(more);
    }
    for (i, want) in flushed.iter().enumerate() {
        assert_eq!(all[i].offset, i as i64, "{case}");
        assert_eq!(all[i].value.as_deref(), want.value.as_deref(), "{case}");
    }
    drop(log);
    let (_, again) = Log::open(dir, cfg()).unwrap();
    assert!(
        again.is_clean(),
        "{case}: second open still repaired: {again:?}"
    );
}

const APPEND_BATCHES: &str = "[{\"key\":\"x\",\"value\":\"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\",\"ts\":50},{\"key\":null,\"value\":\"z\",\"ts\":51}]";

#[test]
fn crash_at_every_fail_point_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    let mut reached = Vec::new();
    // retention::, compaction:: and install:: points are crashed at by
    // tests/failpoints_cleanup.rs (which checks their coverage itself).
    let log_points: Vec<&&str> = ALL.iter().filter(|n| n.starts_with("log::")).collect();
    for (n, name) in log_points.iter().copied().enumerate() {
        let recovery = name.starts_with("log::recovery::");
        let dir = tmp.path().join(format!("crash-{n}"));
        let flushed = prepare(&dir, recovery);
        let d = dir.to_str().unwrap();
        let lines = tmp.path().join(format!("batches-{n}.jsonl"));
        std::fs::write(&lines, format!("{APPEND_BATCHES}\n").repeat(8)).unwrap();
        let args: Vec<&str> = if name.starts_with("log::roll::") {
            vec!["roll", d]
        } else if recovery {
            vec!["recover", d]
        } else {
            vec!["append", d, "--batch-file", lines.to_str().unwrap()]
        };
        let out = seglog(&args, &format!("{name}=return"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains(&format!("crashed at fail point {name}")) {
            assert_eq!(out.status.code(), None, "{name}: a crash is an abort");
            reached.push(*name);
        } else {
            assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        }
        check_recovers(&dir, &flushed, name);
    }
    // The creation points need a created directory (the next test); everything else
    // is reached here.
    let missed: Vec<_> = log_points
        .iter()
        .copied()
        .filter(|n| {
            !reached.contains(n)
                && **n != "log::recovery::create_segment"
                && **n != "log::recovery::sync_dir"
                && **n != "log::recovery::sync_parent"
                // The CLI never flushes without closing; the crash sweep and the
                // I/O-error sweep reach it through the API.
                && **n != "log::flush::sync_log"
                // Need transactional data: `crash_at_the_txn_index_fail_points`.
                && !n.starts_with("log::txn_index::")
        })
        .collect();
    assert!(missed.is_empty(), "fail points never reached: {missed:?}");
}

#[test]
fn crash_while_creating_a_log_leaves_an_openable_dir() {
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "log::recovery::create_segment",
        "log::recovery::sync_dir",
        "log::recovery::sync_parent",
    ] {
        // Two new levels: phase 1 syncs the outer one's entry (`sync_dir`), phase 9
        // the log directory's own (`sync_parent`).
        let dir = tmp.path().join(name.replace("::", "_")).join("log");
        // `append` creates a log (the other commands refuse a missing one); the
        // crash comes in its open, before anything is appended.
        let out = seglog(
            &["append", dir.to_str().unwrap(), "--batch", r#"[{"ts":1}]"#],
            &format!("{name}=return"),
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("crashed at fail point {name}")),
            "{name} not reached"
        );
        check_recovers(&dir, &[], name);
    }
}

#[test]
fn injected_errors_exit_2_and_name_the_point() {
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "log::append::write",
        "log::close::sync_log",
        "log::roll::sync_closed",
    ] {
        let dir = tmp.path().join(name.replace("::", "_"));
        let flushed = prepare(&dir, false);
        let d = dir.to_str().unwrap();
        let args: Vec<&str> = if name.contains("roll") {
            vec!["roll", d]
        } else {
            vec!["append", d, "--batch", APPEND_BATCHES]
        };
        let out = seglog(&args, &format!("{name}=return(error)"));
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(name));
        check_recovers(&dir, &flushed, name);
    }
}

/// The `.txnindex` fail points, crashed at through the binary: an ABORT marker's
/// entry append (`append --control abort`), and the rewrite of a missing
/// `.txnindex` by the first transactional call after an open. After either crash
/// the log reopens, every flushed record reads back, `read_committed` never shows
/// the aborted records, and once a transactional call has run again no
/// `.txnindex` is left to rewrite.
#[test]
fn crash_at_the_txn_index_fail_points() {
    use seglog::{ControlKind, Isolation, Producer};
    let tmp = tempfile::tempdir().unwrap();
    let aborted = |v: &str| {
        vec![NewRecord::new(
            Some(b"k".to_vec()),
            Some(v.as_bytes().to_vec()),
            3,
        )]
    };
    let check = |dir: &Path, flushed: &[NewRecord], case: &str| {
        check_recovers(dir, flushed, case);
        let (mut log, _) = Log::open(dir, cfg()).unwrap();
        let committed = log
            .read_with(0, usize::MAX, Isolation::ReadCommitted)
            .unwrap();
        assert!(
            committed.iter().all(|r| r.value != Some(&b"aborted"[..])),
            "{case}: an aborted record is visible"
        );
        // The next transactional call repairs what the crash left; then nothing.
        log.append_transactional(Producer::new(9, 0), &aborted("later"))
            .unwrap();
        log.close().unwrap();
        let (log, _) = Log::open(dir, cfg()).unwrap();
        log.read_with(0, usize::MAX, Isolation::ReadCommitted)
            .unwrap();
        assert!(
            log.txn_index_rebuilds().unwrap().is_empty(),
            "{case}: still rewriting"
        );
    };

    // The marker's entry append.
    let dir = tmp.path().join("append");
    let mut flushed = prepare(&dir, false);
    let (mut log, _) = Log::open(&dir, cfg()).unwrap();
    log.append_transactional(Producer::new(8, 0), &aborted("aborted"))
        .unwrap();
    log.close().unwrap();
    flushed.extend(aborted("aborted"));
    let d = dir.to_str().unwrap();
    let out = seglog(
        &["append", d, "--control", "abort", "--producer-id", "8"],
        "log::txn_index::append=return",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("crashed at fail point log::txn_index::append"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), None, "a crash is an abort");
    check(&dir, &flushed, "log::txn_index::append");

    // The rewrite of a missing `.txnindex`.
    let dir = tmp.path().join("rewrite");
    let mut flushed = prepare(&dir, false);
    let (mut log, _) = Log::open(&dir, cfg()).unwrap();
    log.append_transactional(Producer::new(8, 0), &aborted("aborted"))
        .unwrap();
    log.append_control(ControlKind::Abort, 8, 0, 4).unwrap();
    log.close().unwrap();
    flushed.extend(aborted("aborted"));
    let txn_indexes: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txnindex"))
        .collect();
    assert_eq!(txn_indexes.len(), 1, "the abort wrote one entry");
    std::fs::remove_file(&txn_indexes[0]).unwrap();
    let d = dir.to_str().unwrap();
    let out = seglog(
        &[
            "append",
            d,
            "--batch",
            "[{\"key\":\"t\",\"value\":\"v\",\"ts\":5}]",
            "--producer-id",
            "9",
        ],
        "log::txn_index::rewrite=return",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("crashed at fail point log::txn_index::rewrite"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), None, "a crash is an abort");
    check(&dir, &flushed, "log::txn_index::rewrite");
}

//! `seglog retain`, `seglog compact` and the install rows of `seglog recover`, run
//! as a user would: the built binary on temp dirs.
//!
//! Invariants checked: the JSON contract (field names and values of the seeds'
//! examples), exit codes (0 ok, 2 bad input or error), and that rejected input or
//! an undecidable install state modifies nothing.
#![cfg(feature = "suite")] // the suite, its binary or seglog-model

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

fn seglog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(args)
        .env_remove("FAILPOINTS")
        .output()
        .unwrap()
}

fn ok_json(args: &[&str]) -> Value {
    let out = seglog(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn snapshot(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The seeds' retention log: closed maxima 0, 50, 150; active 250.
fn retention_log(dir: &str) {
    for ts in [0, 50, 150] {
        ok_json(&[
            "append",
            dir,
            "--batch",
            &format!(r#"[{{"value":"{ts}","ts":{ts}}}]"#),
        ]);
        ok_json(&["roll", dir]);
    }
    ok_json(&["append", dir, "--batch", r#"[{"value":"250","ts":250}]"#]);
}

/// The seeds' compaction log.
fn compaction_log(dir: &str) {
    ok_json(&[
        "append",
        dir,
        "--batch",
        r#"[{"key":"a","value":"1","ts":0},{"key":"b","value":"x","ts":1}]"#,
    ]);
    ok_json(&["roll", dir]);
    ok_json(&[
        "append",
        dir,
        "--batch",
        r#"[{"key":"a","value":"2","ts":2},{"key":null,"value":"event","ts":3}]"#,
    ]);
    ok_json(&["roll", dir]);
    ok_json(&[
        "append",
        dir,
        "--batch",
        r#"[{"key":"active","value":"keep","ts":4}]"#,
    ]);
}

#[test]
fn retain_seed_example() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("log");
    let d = dir.to_str().unwrap();
    retention_log(d);
    let out = ok_json(&["retain", d, "--now", "300", "--retention-ms", "100"]);
    assert_eq!(
        out,
        json!({"deleted_segments": [0, 1, 2], "log_start_offset": 3})
    );
    let dump = ok_json(&["dump", d]);
    assert_eq!(dump["log_start_offset"], 3);
    assert_eq!(dump["next_offset"], 4);
    // Nothing more to delete; a size limit never takes the active segment.
    let out = ok_json(&["retain", d, "--now", "300", "--retention-bytes", "1"]);
    assert_eq!(out, json!({"deleted_segments": [], "log_start_offset": 3}));
    // Reading below the new start is out of range.
    assert_eq!(seglog(&["dump", d, "--from", "0"]).status.code(), Some(2));
}

#[test]
fn compact_seed_example() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("log");
    let d = dir.to_str().unwrap();
    compaction_log(d);
    let out = ok_json(&["compact", d, "--now", "10", "--delete-retention-ms", "1000"]);
    assert_eq!(out["records_before"], 4);
    assert_eq!(out["records_after"], 3);
    assert_eq!(out["segments_before"], 2);
    assert_eq!(out["segments_after"], 1);
    assert!(out["bytes_after"].as_u64().unwrap() < out["bytes_before"].as_u64().unwrap());
    let keys: Vec<&str> = out
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 6, "exactly the contract's fields: {keys:?}");
    let dump = ok_json(&["dump", d]);
    let offsets: Vec<i64> = dump["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, vec![1, 2, 3, 4]);
    let recover = ok_json(&["recover", d]);
    assert_eq!(recover["install"]["case"], "clean");
    // Compacting again changes nothing.
    let again = ok_json(&["compact", d, "--now", "10", "--delete-retention-ms", "1000"]);
    assert_eq!(again["records_before"], again["records_after"]);
}

#[test]
fn bad_input_exits_2_and_modifies_nothing() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("log");
    let d = dir.to_str().unwrap();
    retention_log(d);
    let before = snapshot(root.path());
    for args in [
        vec!["retain", d, "--now", "300", "--retention-ms", "-1"],
        vec!["retain", d, "--now", "300", "--retention-bytes", "0"],
        vec!["retain", d, "--retention-ms", "1"],
        vec!["compact", d, "--now", "1", "--delete-retention-ms", "-5"],
        vec!["compact", d, "--now", "1"],
        vec![
            "compact",
            d,
            "--now",
            "1",
            "--delete-retention-ms",
            "1",
            "--segment-bytes",
            "0",
        ],
    ] {
        let out = seglog(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty());
        assert!(out.stdout.is_empty());
        assert_eq!(snapshot(root.path()), before, "{args:?} modified files");
    }
    let missing = root.path().join("missing");
    let out = seglog(&[
        "retain",
        missing.to_str().unwrap(),
        "--now",
        "1",
        "--retention-ms",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!missing.exists(), "retain must not create a log");
    let out = seglog(&[
        "compact",
        missing.to_str().unwrap(),
        "--now",
        "1",
        "--delete-retention-ms",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!missing.exists());
}

#[test]
fn recover_reports_the_install_row_and_dump_refuses_a_pending_install() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("log");
    let d = dir.to_str().unwrap();
    compaction_log(d);
    // A committed compaction crashed between steps 3 and 4: no live dir at all.
    let fs = seglog::fs::StdFs::new();
    let built = seglog::compaction::build(
        &fs,
        &dir,
        seglog::compaction::CompactOptions {
            now: 10,
            delete_retention_ms: 1000,
            segment_bytes: 1 << 20,
        },
    )
    .unwrap()
    .unwrap();
    let paths = seglog::install::InstallPaths::new(&dir).unwrap();
    std::fs::write(&paths.manifest, built.manifest.encode()).unwrap();
    std::fs::rename(&paths.live, &paths.backup).unwrap();
    let before = snapshot(root.path());
    let out = seglog(&["dump", d]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("install is pending"));
    assert_eq!(snapshot(root.path()), before);
    let report = ok_json(&["recover", d]);
    assert_eq!(report["install"]["case"], "committed_roll_forward");
    let dump = ok_json(&["dump", d]);
    assert_eq!(dump["records"].as_array().unwrap().len(), 4);
    assert!(!paths.backup.exists() && !paths.manifest.exists() && !paths.tmp.exists());
}

#[test]
fn damaged_manifest_is_an_error_and_nothing_is_deleted() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("log");
    let d = dir.to_str().unwrap();
    compaction_log(d);
    let paths = seglog::install::InstallPaths::new(&dir).unwrap();
    std::fs::create_dir(&paths.tmp).unwrap();
    std::fs::write(&paths.manifest, b"SLMF not really a manifest").unwrap();
    let before = snapshot(root.path());
    let out = seglog(&["recover", d]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("log.compact-manifest"), "{stderr}");
    assert_eq!(snapshot(root.path()), before);
}

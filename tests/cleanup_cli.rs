//! `seglog retain`, `seglog compact` and the install rows of `seglog recover`, run
//! as a user would: the built binary on temp dirs.
//!
//! Invariants checked: the JSON contract (field names and values of the seeds'
//! examples), exit codes (0 ok, 2 bad input or error), and that rejected input or
//! an undecidable install state modifies nothing.

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
fn compact_kafka_policy_example() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("log");
    let d = dir.to_str().unwrap();
    compaction_log(d);
    let out = ok_json(&[
        "compact",
        d,
        "--now",
        "10",
        "--delete-retention-ms",
        "1000",
        "--policy",
        "kafka",
    ]);
    // The seed policy keeps 3 (the keyless record); Kafka's drops it.
    assert_eq!(out["policy"], "kafka");
    assert_eq!(out["records_before"], 4);
    assert_eq!(out["records_after"], 2);
    assert_eq!(out["keyless_dropped"], 1);
    assert_eq!(out["empty_batches"], 0, "no producer: nothing kept empty");
    assert_eq!(out["clean_point_after"], 4);
    let dump = ok_json(&["dump", d]);
    let offsets: Vec<i64> = dump["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, vec![1, 2, 4]);
    assert_eq!(
        seglog(&[
            "compact",
            d,
            "--now",
            "1",
            "--delete-retention-ms",
            "1",
            "--policy",
            "nope"
        ])
        .status
        .code(),
        Some(2)
    );
    for bad in ["0", "-5"] {
        let out = seglog(&[
            "compact",
            d,
            "--now",
            "1",
            "--delete-retention-ms",
            "1",
            "--policy",
            "kafka",
            "--producer-id-expiration-ms",
            bad,
        ]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "--producer-id-expiration-ms {bad}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("producer_id_expiration_ms"), "{stderr}");
    }
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
    // The contract's six fields, then the cleaner's (fields are added, never renamed).
    assert_eq!(
        keys,
        [
            "records_before",
            "records_after",
            "segments_before",
            "segments_after",
            "bytes_before",
            "bytes_after",
            "compacted",
            "clean_point_before",
            "clean_point_after",
            "mapped_end_offset",
            "map_keys",
            "map_bytes_peak",
            "cleanable",
            "policy",
            "keyless_dropped",
            "empty_batches",
        ],
        "exactly the contract's fields"
    );
    assert_eq!(out["policy"], "seed");
    assert_eq!(out["keyless_dropped"], 0);
    assert_eq!(out["empty_batches"], 0);
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

/// `compact --if-dirty`: a fresh log is all dirty (ratio 1) and is cleaned; right
/// after, nothing is dirty and nothing runs (the files stay byte for byte); one
/// more dirty segment makes the ratio 1/3, below the default 0.5 and above 0.1.
/// The JSON keeps every old field and adds the cleaner's.
#[test]
fn compact_if_dirty_follows_the_dirty_ratio() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("p0");
    let dir = dir.to_str().unwrap();
    let put = |batch: &str| {
        ok_json(&["append", dir, "--batch", batch]);
        ok_json(&["roll", dir]);
    };
    put(r#"[{"key":"a","value":"1","ts":0},{"key":"b","value":"1","ts":0}]"#);
    put(r#"[{"key":"a","value":"2","ts":1}]"#);
    let compact = |extra: &[&str]| {
        let mut args = vec![
            "compact",
            dir,
            "--now",
            "10",
            "--delete-retention-ms",
            "100",
            "--if-dirty",
        ];
        args.extend_from_slice(extra);
        ok_json(&args)
    };
    let first = compact(&[]);
    assert_eq!(first["compacted"], json!(true));
    assert_eq!(first["cleanable"]["dirty_ratio"], json!(1.0));
    assert_eq!(
        (
            first["records_before"].clone(),
            first["records_after"].clone()
        ),
        (json!(3), json!(2))
    );
    assert_eq!(
        (
            first["clean_point_before"].clone(),
            first["clean_point_after"].clone()
        ),
        (json!(0), json!(3))
    );
    let before = snapshot(root.path());
    let second = compact(&[]);
    assert_eq!(second["compacted"], json!(false));
    assert_eq!(second["cleanable"]["cleanable_bytes"], json!(0));
    assert_eq!(second["records_before"], json!(0));
    assert_eq!(snapshot(root.path()), before);
    put(r#"[{"key":"b","value":"2","ts":2}]"#);
    let below = compact(&[]);
    assert_eq!(below["compacted"], json!(false));
    let ratio = below["cleanable"]["dirty_ratio"].as_f64().unwrap();
    assert!(ratio > 0.1 && ratio < 0.5, "{ratio}");
    let above = compact(&["--min-cleanable-dirty-ratio", "0.1"]);
    assert_eq!(above["compacted"], json!(true));
    // Incremental: the map holds only the dirty key b; the clean a=2 survives.
    assert_eq!(above["map_keys"], json!(1));
    assert_eq!(
        (
            above["clean_point_before"].clone(),
            above["clean_point_after"].clone()
        ),
        (json!(3), json!(4))
    );
    let dump = ok_json(&["dump", dir]);
    let offsets: Vec<i64> = dump["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, vec![2, 3]);
}

/// A two-key map over three keys: `compact --dedupe-buffer-bytes 48` cleans part
/// way, and the next run continues from the clean point it left.
#[test]
fn compact_with_a_small_map_takes_passes() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("p0");
    let dir = dir.to_str().unwrap();
    for (i, key) in ["a", "b", "c", "a", "b", "c"].iter().enumerate() {
        ok_json(&[
            "append",
            dir,
            "--batch",
            &format!(r#"[{{"key":"{key}","value":"{i}","ts":{i}}}]"#),
        ]);
        ok_json(&["roll", dir]);
    }
    let pass = || {
        ok_json(&[
            "compact",
            dir,
            "--now",
            "10",
            "--delete-retention-ms",
            "100",
            "--dedupe-buffer-bytes",
            "48",
        ])
    };
    let points: Vec<(i64, i64)> = (0..3)
        .map(|_| {
            let r = pass();
            assert!(r["map_keys"].as_u64().unwrap() <= 2, "{r}");
            (
                r["clean_point_before"].as_i64().unwrap(),
                r["clean_point_after"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(points, vec![(0, 2), (2, 4), (4, 6)]);
    let dump = ok_json(&["dump", dir]);
    let offsets: Vec<i64> = dump["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, vec![3, 4, 5]);
    // A map smaller than one key is refused (exit 2), nothing changes.
    let before = snapshot(root.path());
    let out = seglog(&[
        "compact",
        dir,
        "--now",
        "10",
        "--delete-retention-ms",
        "100",
        "--dedupe-buffer-bytes",
        "23",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(snapshot(root.path()), before);
}

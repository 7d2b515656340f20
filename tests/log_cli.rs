//! The `seglog` binary on temp dirs: happy paths, exit codes, malformed input and
//! corrupt segments (which must leave every file untouched).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

fn seglog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(args)
        .output()
        .expect("run seglog")
}

fn ok_json(args: &[&str]) -> Value {
    let out = seglog(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.lines().count(),
        1,
        "one JSON object on one line: {text}"
    );
    serde_json::from_str(&text).unwrap()
}

/// `seglog append DIR --batch BATCH`, which must succeed.
fn append_ok(dir: &str, batch: &str) -> Value {
    ok_json(&["append", dir, "--batch", batch])
}

/// Exit code 2, one line on stderr containing `needle`, nothing on stdout.
fn fails(args: &[&str], needle: &str) {
    let out = seglog(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?}");
    assert_eq!(stderr.lines().count(), 1, "one-line error: {stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: {stderr:?} lacks {needle:?}"
    );
    assert!(!stderr.contains("panicked"));
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

#[test]
fn append_roll_dump_recover() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let d = dir.to_str().unwrap();
    let first = ok_json(&[
        "append",
        d,
        "--batch",
        r#"[{"key":"a","value":"1","ts":10},{"key":null,"value":"2","ts":5}]"#,
    ]);
    assert_eq!(first, json!({"base_offset": 0, "last_offset": 1}));
    assert_eq!(ok_json(&["roll", d]), json!({"active_base_offset": 2}));
    assert_eq!(ok_json(&["roll", d]), json!({"active_base_offset": 2}));
    let lines = tmp.path().join("batches.jsonl");
    std::fs::write(
        &lines,
        "[{\"key\":\"b\",\"value\":null,\"ts\":20}]\n\n[{\"key\":\"c\",\"value\":\"x\",\"ts\":30},{\"key\":\"d\",\"value\":\"y\",\"ts\":31}]\n",
    )
    .unwrap();
    let many = ok_json(&["append", d, "--batch-file", lines.to_str().unwrap()]);
    assert_eq!(
        many,
        json!([{"base_offset": 2, "last_offset": 2}, {"base_offset": 3, "last_offset": 4}])
    );
    let dump = ok_json(&["dump", d]);
    assert_eq!(dump["log_start_offset"], 0);
    assert_eq!(dump["next_offset"], 5);
    let segments = dump["segments"].as_array().unwrap();
    assert_eq!(segments.len(), 2);
    assert_eq!(segments[0]["closed"], true);
    assert_eq!(segments[0]["records"], 2);
    assert_eq!(segments[0]["max_timestamp"], 10);
    assert_eq!(segments[1]["closed"], false);
    assert_eq!(segments[1]["base_offset"], 2);
    assert_eq!(
        dump["records"][0],
        json!({"offset": 0, "key": "a", "value": "1", "ts": 10})
    );
    assert_eq!(
        dump["records"][2],
        json!({"offset": 2, "key": "b", "value": null, "ts": 20})
    );
    assert_eq!(dump["records"].as_array().unwrap().len(), 5);
    let from = ok_json(&["dump", d, "--from", "3"]);
    assert_eq!(from["records"].as_array().unwrap().len(), 2);
    assert_eq!(from["records"][0]["offset"], 3);
    let report = ok_json(&["recover", d]);
    assert_eq!(report["truncated_bytes"], 0);
    assert_eq!(report["segments"], 2);
    assert_eq!(report["next_offset"], 5);
    let pretty = seglog(&["dump", d, "--pretty"]);
    assert!(String::from_utf8(pretty.stdout).unwrap().lines().count() > 10);
}

/// `append --raw-file`: producer batches back to back, the same JSON as `append`
/// (plus `batches`), the same records as a structured append; a bad file is exit 2
/// and appends nothing.
#[test]
fn append_raw_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let d = dir.to_str().unwrap();
    append_ok(d, r#"[{"key":"a","value":"1","ts":10}]"#);
    let build = |key: &str, ts: i64| {
        let records = [seglog::NewRecord::new(
            Some(key.as_bytes().to_vec()),
            Some(b"v".to_vec()),
            ts,
        )];
        seglog::RecordBatch::build(0, &records).encode()
    };
    let raw = tmp.path().join("request.bin");
    std::fs::write(
        &raw,
        [build("b", 20), build("c", 30), build("d", 40)].concat(),
    )
    .unwrap();
    let out = ok_json(&["append", d, "--raw-file", raw.to_str().unwrap()]);
    assert_eq!(
        out,
        json!({"base_offset": 1, "last_offset": 3, "batches": 3})
    );
    let dump = ok_json(&["dump", d]);
    assert_eq!(
        dump["records"][3],
        json!({"offset": 3, "key": "d", "value": "v", "ts": 40})
    );
    let before = snapshot(&dir);
    let mut bad = [build("e", 50), build("f", 60)].concat();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    std::fs::write(&raw, &bad).unwrap();
    fails(
        &["append", d, "--raw-file", raw.to_str().unwrap()],
        "batch 1",
    );
    assert_eq!(snapshot(&dir), before, "a bad raw file appends nothing");
    fails(
        &["append", d, "--raw-file", "x", "--batch", "[]"],
        "cannot be used with",
    );
}

#[test]
fn failpoints_are_listed() {
    let value = ok_json(&["failpoints"]);
    let names: Vec<&str> = value["failpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(names, seglog::fs::failpoint::ALL);
}

#[test]
fn bad_usage_and_bad_input_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let d = dir.to_str().unwrap();
    fails(&["dump", d], "no log directory");
    assert!(!dir.exists(), "dump must not create the directory");
    fails(
        &["append", d, "--batch", "[{\"key\":1,\"ts\":1}]"],
        "malformed batch JSON",
    );
    fails(
        &["append", d, "--batch", "not json"],
        "malformed batch JSON",
    );
    fails(&["append", d, "--batch", "[]"], "empty batch");
    fails(
        &["append", d, "--batch", "[{\"value\":\"v\"}]"],
        "missing field `ts`",
    );
    fails(
        &[
            "append",
            d,
            "--segment-bytes",
            "-5",
            "--batch",
            "[{\"ts\":1}]",
        ],
        "-5",
    );
    fails(
        &[
            "append",
            d,
            "--segment-bytes",
            "0",
            "--batch",
            "[{\"ts\":1}]",
        ],
        "segment_bytes",
    );
    assert!(!dir.exists(), "bad input must not create anything");
    fails(&["frobnicate"], "frobnicate");
    fails(&["append", d], "--batch");
    ok_json(&[
        "append",
        d,
        "--batch",
        "[{\"key\":\"k\",\"value\":\"v\",\"ts\":1}]",
    ]);
    fails(&["dump", d, "--from", "7"], "out of range");
    let before = snapshot(&dir);
    let lines = tmp.path().join("bad.jsonl");
    std::fs::write(&lines, "[{\"ts\":1}]\n[{\"ts\":\n").unwrap();
    fails(
        &["append", d, "--batch-file", lines.to_str().unwrap()],
        "line 2",
    );
    assert_eq!(snapshot(&dir), before, "a bad batch file appends nothing");
}

#[test]
fn corrupt_closed_segment_is_an_error_and_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let d = dir.to_str().unwrap();
    append_ok(d, r#"[{"key":"a","value":"hello","ts":1}]"#);
    ok_json(&["roll", d]);
    append_ok(d, r#"[{"key":"b","value":"world","ts":2}]"#);
    let closed = dir.join("00000000000000000000.log");
    let mut bytes = std::fs::read(&closed).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    std::fs::write(&closed, &bytes).unwrap();
    let before = snapshot(&dir);
    // The commands that check every segment fail, naming the file, changing nothing.
    for command in ["dump", "recover"] {
        fails(&[command, d], "00000000000000000000.log");
        assert_eq!(snapshot(&dir), before, "{command} modified files");
    }
    // Roll and append read none of a segment the recovery point vouches for: they
    // work, and the damage is still there for the next read or recover to report.
    ok_json(&["roll", d]);
    append_ok(d, r#"[{"ts":3}]"#);
    assert_eq!(std::fs::read(&closed).unwrap(), bytes);
    fails(&["recover", d], "checksum");
}

#[test]
fn torn_tail_dump_is_read_only_and_recover_truncates() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let d = dir.to_str().unwrap();
    append_ok(d, r#"[{"key":"a","value":"1","ts":1}]"#);
    append_ok(d, r#"[{"key":"b","value":"2","ts":2}]"#);
    let file = dir.join("00000000000000000000.log");
    let len = std::fs::metadata(&file).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(len - 4)
        .unwrap();
    let before = snapshot(&dir);
    let out = seglog(&["dump", d]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning"));
    let dump: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(dump["next_offset"], 1);
    assert_eq!(snapshot(&dir), before, "dump must not truncate");
    let report = ok_json(&["recover", d]);
    assert_eq!(
        report["truncated_bytes"].as_u64().unwrap(),
        len - 4 - (len / 2)
    );
    assert_eq!(report["truncated_batches"], 1);
    assert_eq!(report["truncated_segment"], 0);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), len / 2);
}

#[test]
fn non_utf8_values_are_printed_as_base64() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let (mut log, _) = seglog::Log::open(&dir, seglog::LogConfig::default()).unwrap();
    log.append(&[seglog::NewRecord::new(
        Some(vec![0xff, 0x00]),
        Some(b"ok".to_vec()),
        4,
    )])
    .unwrap();
    log.append_control(seglog::ControlKind::Abort, 1, 0, 5)
        .unwrap();
    log.close().unwrap();
    let dump = ok_json(&["dump", dir.to_str().unwrap()]);
    assert_eq!(
        dump["records"][0],
        json!({"offset": 0, "key": null, "key_b64": "/wA=", "value": "ok", "ts": 4})
    );
    assert_eq!(dump["records"][1]["control"], true);
    assert_eq!(dump["records"][1]["offset"], 1);
}

#[test]
fn bench_prints_every_comparison_with_its_baseline() {
    let out = ok_json(&[
        "bench",
        "--records",
        "700",
        "--iterations",
        "2",
        "--compact-keys",
        "300",
    ]);
    assert_eq!(out["records"], 700);
    assert_eq!(out["iterations"], 2);
    let results = out["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "append/log",
            "append/raw",
            "append/structured_flush",
            "append/raw_open_close",
            "append/raw_vs_writeback_baseline",
            "append/structured_vs_writeback_baseline",
            "read/fetch",
            "read/read_raw",
            "read/fetch_records",
            "read/log",
            "compact/build",
            "open/clean",
            "open/after_crash",
            "open/read_only_dump_tail",
            "open/read_only_dump_tail_vs_checked"
        ]
    );
    for result in results {
        assert!(result["baseline"].as_str().unwrap().contains("baseline"));
        for field in [
            "median_ms",
            "baseline_median_ms",
            "ratio",
            "ratio_min",
            "ratio_max",
        ] {
            assert!(result[field].as_f64().unwrap() > 0.0, "{field} of {result}");
        }
        assert!(result["ratio_min"].as_f64() <= result["ratio_max"].as_f64());
        let target = match result["name"].as_str().unwrap() {
            "open/read_only_dump_tail" | "open/read_only_dump_tail_vs_checked" => None,
            "compact/build" | "read/log" => Some(0.5),
            "open/clean" => Some(100.0),
            "open/after_crash"
            | "append/raw_open_close"
            | "append/raw_vs_writeback_baseline"
            | "append/structured_vs_writeback_baseline" => None,
            "append/raw" => Some(0.9),
            _ => Some(0.8),
        };
        match target {
            Some(target) => {
                assert_eq!(result["target"], target);
                assert!(result["met"].is_boolean());
            }
            None => assert!(result["target"].is_null() && result["met"].is_null()),
        }
    }
    let only_read = ok_json(&[
        "bench",
        "--records",
        "300",
        "--iterations",
        "1",
        "--only",
        "read",
    ]);
    assert_eq!(only_read["results"].as_array().unwrap().len(), 4);
    fails(&["bench", "--iterations", "0"], "at least 1");
    fails(
        &["bench", "--only", "compact", "--compact-keys", "1"],
        "2 keys",
    );
    fails(&["bench", "--only", "everything"], "everything");
    let existing = tempfile::tempdir().unwrap();
    fails(
        &[
            "bench",
            "--records",
            "10",
            "--dir",
            existing.path().to_str().unwrap(),
        ],
        "exists",
    );
}

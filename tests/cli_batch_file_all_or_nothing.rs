//! `append --batch-file` whose second line is well-formed JSON but an invalid
//! batch (a timestamp below -1) stored the first line's batch, then exited 2
//! without saying what it had stored. Every line is now checked as the log checks
//! an append before the log is opened: a bad line stores nothing, and the error
//! names the line.

mod cli_support;

use cli_support::{seglog, snapshot};

#[test]
fn an_invalid_later_line_stores_nothing_and_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let d = dir.to_str().unwrap();
    let lines = tmp.path().join("batches.jsonl");
    let l = lines.to_str().unwrap();
    // Without a log: nothing is created.
    std::fs::write(
        &lines,
        "[{\"key\":\"a\",\"ts\":1}]\n\n[{\"key\":\"b\",\"ts\":-5}]\n",
    )
    .unwrap();
    let out = seglog(&["append", d, "--batch-file", l]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("line 3"), "{stderr}");
    assert!(stderr.contains("-5"), "{stderr}");
    assert!(!dir.exists(), "a refused batch file creates nothing");
    // With a log: nothing is appended.
    let out = seglog(&["append", d, "--batch", r#"[{"ts":1}]"#]);
    assert_eq!(out.status.code(), Some(0));
    let before = snapshot(&dir);
    let out = seglog(&["append", d, "--batch-file", l]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_eq!(
        snapshot(&dir),
        before,
        "a refused batch file appends nothing"
    );
    let dump: serde_json::Value = serde_json::from_slice(&seglog(&["dump", d]).stdout).unwrap();
    assert_eq!(dump["next_offset"], 1);
    // The same file with the bad line fixed appends both batches.
    std::fs::write(
        &lines,
        "[{\"key\":\"a\",\"ts\":1}]\n[{\"key\":\"b\",\"ts\":-1}]\n",
    )
    .unwrap();
    let out = seglog(&["append", d, "--batch-file", l]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let infos: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        infos,
        serde_json::json!([{"base_offset": 1, "last_offset": 1}, {"base_offset": 2, "last_offset": 2}])
    );
}

//! `seglog soak`: a short soak without and with `--kill`, its JSON
//! report, and its teeth: the broken cleaning swap `stale-tail-copy` in the
//! workers must make it fail. No assertion on timing or throughput.

use std::process::{Command, Output};

use serde_json::Value;

fn soak(args: &[&str]) -> (Output, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .arg("soak")
        .args(args)
        .arg("--quiet")
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, json)
}

fn count(report: &Value, check: &str) -> u64 {
    report["checks"][check]["count"].as_u64().unwrap_or(0)
}

/// Every check ran at least once and none failed; the counters are there.
fn assert_passed(report: &Value, checks: &[&str]) {
    assert_eq!(report["passed"], true, "{report:#}");
    assert_eq!(report["first_failure"], Value::Null);
    for check in checks {
        assert!(count(report, check) > 0, "{check} never ran: {report:#}");
        assert_eq!(report["checks"][check]["failures"], 0, "{check}");
    }
    for field in [
        "records_appended",
        "records_acknowledged",
        "records_read",
        "cleanings",
        "retention_deletions",
        "background_errors",
    ] {
        assert!(report[field].is_u64(), "{field}: {report:#}");
    }
    assert!(report["records_acknowledged"].as_u64().unwrap() > 0);
    assert!(report["records_appended"].as_u64() >= report["records_acknowledged"].as_u64());
    assert_eq!(report["background_errors"], 0);
    for field in ["p50_us", "p99_us", "p999_us", "max_us"] {
        assert!(report["append_latency"][field].is_f64(), "{field}");
    }
    let latency = &report["append_latency"];
    assert!(latency["p50_us"].as_f64() <= latency["p99_us"].as_f64());
    assert!(latency["p99_us"].as_f64() <= latency["max_us"].as_f64());
    assert!(report["append_records_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_soak_without_kill_passes_every_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("soak");
    let (out, report) = soak(&[
        path.to_str().unwrap(),
        "--partitions",
        "2",
        "--seconds",
        "3",
        "--seed",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert_passed(
        &report,
        &[
            "ack_offsets_increasing",
            "acked_present_or_gone",
            "offsets_not_reused",
            "reopen",
            "work",
            "read_offsets_increasing",
            "read_at_or_above_log_start",
            "read_matches_append",
        ],
    );
    assert_eq!(report["rounds"], 1);
    assert_eq!(report["kills"], 0);
    assert_eq!(report["kill"], false);
    // The log holds the partitions, in Kafka's layout.
    assert!(path.join("soak-0").is_dir() && path.join("soak-1").is_dir());
    assert!(!path.join("soak-2").exists());
    // A second soak on the same directory starts from what the first left.
    let (out, again) = soak(&[
        path.to_str().unwrap(),
        "--partitions",
        "2",
        "--seconds",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{again:#}");
    assert_eq!(again["passed"], true);
}

#[test]
fn a_soak_with_kill_reopens_and_checks_round_after_round() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("soak");
    let (out, report) = soak(&[
        path.to_str().unwrap(),
        "--partitions",
        "2",
        "--seconds",
        "4",
        "--kill",
        "--seed",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert_passed(
        &report,
        &[
            "ack_offsets_increasing",
            "acked_present_or_gone",
            "offsets_not_reused",
            "log_start_monotonic",
            "reopen",
            "child_exit",
        ],
    );
    // Each round is killed within 1.5 s: 4 s hold at least two rounds and a kill.
    assert!(report["rounds"].as_u64().unwrap() >= 2, "{report:#}");
    assert!(report["kills"].as_u64().unwrap() >= 1, "{report:#}");
    assert_eq!(
        count(&report, "reopen"),
        report["rounds"].as_u64().unwrap() + 1
    );
}

#[test]
fn bad_arguments_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args([
            "soak",
            dir.path().to_str().unwrap(),
            "--partitions",
            "0",
            "--seconds",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Teeth: the cleaner's broken `stale-tail-copy` swap loses the appends made
/// while it built: the soak must fail, naming a check.
#[cfg(feature = "test-variants")]
#[test]
fn the_soak_catches_a_swap_that_drops_appends() {
    for kill in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("soak");
        let mut args = vec![
            path.to_str().unwrap(),
            "--partitions",
            "2",
            "--seconds",
            "4",
            "--variant",
            "stale-tail-copy",
        ];
        if kill {
            args.push("--kill");
        }
        let (out, report) = soak(&args);
        assert_eq!(out.status.code(), Some(1), "kill {kill}: {report:#}");
        assert_eq!(report["passed"], false);
        let first = report["first_failure"].as_str().unwrap();
        assert!(!first.is_empty());
        let failed: u64 = report["checks"]
            .as_object()
            .unwrap()
            .values()
            .map(|c| c["failures"].as_u64().unwrap())
            .sum();
        assert!(failed > 0, "{report:#}");
    }
}

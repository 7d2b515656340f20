//! `seglog bench --kafka` end to end on a small fixture: Apache Kafka 4.4's own log
//! layer (the Java harness's `bench` command, one JVM) and seglog alternate their
//! rounds of every shared workload (append, append_raw, fetch, fetch_records,
//! compact).
//!
//! Invariants checked: every shared workload has a row; its ratio and spread are
//! finite and positive, the ratio within its spread; every round of both sides
//! timed something; both sides went through the same record count (and, for
//! compact, kept the same records), the count the fixture holds; the `--json` file
//! holds the report printed on stdout. No time is asserted.
//!
//! Needs `java` (17) and `mvn` on the PATH; without them `--kafka` must fail with a
//! message naming what is missing, and the test passes, unless
//! `SEGLOG_REQUIRE_KAFKA_INTEROP=1` (the nightly tier sets it) makes that a failure.

mod cli_support;

use cli_support::seglog;

const RECORDS: u64 = 5_000;
const COMPACT_KEYS: u64 = 3_000;

#[test]
#[ignore = "nightly tier (.ci/nightly): builds the Java harness and times Kafka 4.4 beside seglog"]
fn bench_kafka_pairs_every_shared_workload_on_the_same_records() {
    let tmp = tempfile::tempdir().unwrap();
    let json_path = tmp.path().join("kafka.json");
    let (records, keys) = (RECORDS.to_string(), COMPACT_KEYS.to_string());
    let out = seglog(&[
        "bench",
        "--kafka",
        "--records",
        &records,
        "--compact-keys",
        &keys,
        "--iterations",
        "3",
        "--json",
        json_path.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(reason) = seglog_suite::interop::harness::unavailable() {
        assert!(
            std::env::var("SEGLOG_REQUIRE_KAFKA_INTEROP").as_deref() != Ok("1"),
            "seglog bench --kafka was required but cannot run: {reason}"
        );
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&reason), "{stderr}");
        eprintln!("kafka_bench skipped: {reason}");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(printed, written);
    let kafka = &printed["kafka"];
    assert_eq!(kafka["kafka_version"], "4.4.0");
    let rows = kafka["workloads"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["workload"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["append", "append_raw", "fetch", "fetch_records", "compact"]
    );
    for row in rows {
        let name = row["workload"].as_str().unwrap();
        let figure = |key: &str| row[key].as_f64().unwrap();
        let (ratio, min, max) = (figure("ratio"), figure("ratio_min"), figure("ratio_max"));
        for value in [ratio, min, max] {
            assert!(value.is_finite() && value > 0.0, "{name}: {row}");
        }
        assert!(min <= ratio && ratio <= max, "{name}: {row}");
        for side in ["seglog_ms", "kafka_ms"] {
            let times = row[side].as_array().unwrap();
            assert_eq!(times.len(), 3, "{name} {side}");
            assert!(
                times.iter().all(|t| t.as_f64().is_some_and(|t| t > 0.0)),
                "{name} {side}: {times:?}"
            );
        }
        // The record count both sides reported for every round (the bench fails a
        // pair that differs), and what the fixture holds.
        let expected = if name == "compact" {
            2 * COMPACT_KEYS
        } else {
            RECORDS
        };
        assert_eq!(row["records"].as_u64(), Some(expected), "{name}: {row}");
        if name == "compact" {
            assert_eq!(row["records_kept"].as_u64(), Some(COMPACT_KEYS), "{row}");
        }
        assert!(!row["seglog_times"].as_str().unwrap().is_empty());
        assert!(!row["kafka_times"].as_str().unwrap().is_empty());
        assert!(
            stderr.contains(row["kafka_times"].as_str().unwrap()),
            "{stderr}"
        );
    }
    // The fetches moved the same bytes on both sides.
    let fetch = &rows[2];
    assert_eq!(fetch["seglog_bytes"], fetch["kafka_bytes"], "{fetch}");
    let records = &rows[3];
    assert_eq!(records["seglog_bytes"], records["kafka_bytes"], "{records}");
}

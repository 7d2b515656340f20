//! `--shard K/N` and `--junit FILE` on `seglog sweep` and `seglog verify`: the shards
//! of a run are pairwise disjoint and together are exactly the unsharded run (the
//! units each ran, and the numbers add up), bad shard values are a clear usage
//! error, and the JUnit XML parses and names what failed.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

fn seglog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seglog"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("run seglog")
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn units(value: &serde_json::Value) -> Vec<String> {
    value["shard_units"]
        .as_array()
        .unwrap_or_else(|| panic!("no shard_units in {value}"))
        .iter()
        .map(|u| u.as_str().expect("unit is a string").to_string())
        .collect()
}

/// Asserts that `parts` are pairwise disjoint and that their union is `whole`.
fn assert_partition(whole: &[String], parts: &[Vec<String>], what: &str) {
    let whole_set: BTreeSet<&String> = whole.iter().collect();
    assert_eq!(whole_set.len(), whole.len(), "{what}: a unit ran twice");
    let mut union = BTreeSet::new();
    for (i, part) in parts.iter().enumerate() {
        for unit in part {
            assert!(
                union.insert(unit),
                "{what}: {unit} in shard {} and another",
                i + 1
            );
        }
    }
    assert_eq!(
        union, whole_set,
        "{what}: the shards are not the unsharded run"
    );
}

/// The JUnit document at `path`, parsed: (test case name, failure message) pairs.
fn junit_cases(path: &Path) -> Vec<(String, Option<String>)> {
    let text = std::fs::read_to_string(path).expect("junit file written");
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .expect("a testsuite");
    let cases: Vec<(String, Option<String>)> = suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|case| {
            let failure = case
                .children()
                .find(|n| n.has_tag_name("failure"))
                .map(|f| f.text().unwrap_or_default().to_string());
            (
                case.attribute("name").unwrap_or_default().to_string(),
                failure,
            )
        })
        .collect();
    let failures = cases.iter().filter(|(_, f)| f.is_some()).count();
    assert_eq!(
        suite.attribute("tests"),
        Some(cases.len().to_string().as_str())
    );
    assert_eq!(
        suite.attribute("failures"),
        Some(failures.to_string().as_str())
    );
    cases
}

const SWEEP: &[&str] = &[
    "sweep",
    "--workload",
    "seed-retention",
    "--workload",
    "seed-compaction",
    "--images-per-point",
    "2",
    "--recovery-crash-images",
    "1",
];

#[test]
fn sweep_shards_partition_the_crash_points() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("sweep.xml");
    let mut whole_args = SWEEP.to_vec();
    whole_args.extend(["--shard", "1/1", "--junit", junit.to_str().unwrap()]);
    let whole_out = seglog(&whole_args);
    assert_eq!(whole_out.status.code(), Some(0));
    let whole = json(&whole_out);
    // The unsharded run's units are every crash point of both workloads.
    let per_workload = whole["per_workload"].as_array().unwrap();
    let expected: usize = per_workload
        .iter()
        .map(|w| w["operations"].as_u64().unwrap() as usize + 1)
        .sum();
    assert_eq!(units(&whole).len(), expected);
    let cases = junit_cases(&junit);
    let names: Vec<&str> = cases.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["seed-retention", "seed-compaction"]);
    assert!(cases.iter().all(|(_, failure)| failure.is_none()));

    let mut parts = Vec::new();
    let (mut crash_points, mut disk_images) = (0, 0);
    for shard in ["1/3", "2/3", "3/3"] {
        let mut args = SWEEP.to_vec();
        args.extend(["--shard", shard]);
        let out = seglog(&args);
        assert_eq!(out.status.code(), Some(0), "{shard}");
        let part = json(&out);
        assert!(!units(&part).is_empty(), "{shard} ran nothing");
        crash_points += part["crash_points"].as_u64().unwrap();
        disk_images += part["disk_images"].as_u64().unwrap();
        parts.push(units(&part));
    }
    assert_partition(&units(&whole), &parts, "sweep");
    assert_eq!(crash_points, whole["crash_points"].as_u64().unwrap());
    assert_eq!(disk_images, whole["disk_images"].as_u64().unwrap());
}

#[test]
fn bad_shards_are_usage_errors() {
    for command in ["sweep", "verify"] {
        for bad in ["0/2", "3/2", "x", "1/0"] {
            let out = seglog(&[command, "--shard", bad]);
            assert_eq!(out.status.code(), Some(2), "{command} --shard {bad}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("--shard") && stderr.contains(bad),
                "{command} --shard {bad}: {stderr}"
            );
            assert!(out.stdout.is_empty());
        }
    }
    let out = seglog(&["sweep", "--errors", "--shard", "1/2"]);
    assert_eq!(out.status.code(), Some(2));
}

#[cfg(feature = "test-variants")]
#[test]
fn sweep_junit_names_the_failing_workload() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("sweep.xml");
    let out = seglog(&[
        "sweep",
        "--variant",
        "two-rename",
        "--workload",
        "seed-retention",
        "--workload",
        "seed-compaction",
        "--images-per-point",
        "2",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let cases = junit_cases(&junit);
    let failed: Vec<&str> = cases
        .iter()
        .filter(|(_, f)| f.is_some())
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(failed, ["seed-compaction"]);
    let message = cases[1].1.as_deref().unwrap();
    assert!(message.contains("crash before fs op"), "{message}");
}

const VERIFY: &[&str] = &[
    "verify",
    "--quiet",
    "--json",
    "-",
    "--conformance-cases",
    "3",
    "--conformance-ops",
    "10",
    "--images-per-point",
    "1",
    "--recovery-crash-images",
    "0",
    // Three of the named workloads for the workload stages (the partition holds
    // for any selection; the pull-request tier's `verify --budget quick` runs them
    // all, in release).
    "--workload",
    "seed-compaction",
    "--workload",
    "retain-prefix",
    "--workload",
    "append-flush",
];

/// The three runs at once: one unsharded, two shards. The scenarios directory holds
/// one good scenario and one that does not parse, so the replay stage fails.
#[test]
fn verify_shards_partition_every_stage_and_junit_names_failures() {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir(&scenarios).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(
        root.join("crash-scenarios/torn-active-tail.toml"),
        scenarios.join("torn-active-tail.toml"),
    )
    .unwrap();
    std::fs::write(scenarios.join("broken.toml"), "name = [").unwrap();
    let junit = dir.path().join("verify.xml");
    let html = dir.path().join("verify.html");
    let runs: Vec<(String, Vec<String>)> = ["1/1", "1/2", "2/2"]
        .iter()
        .map(|shard| {
            let mut args: Vec<String> = VERIFY.iter().map(ToString::to_string).collect();
            args.extend(["--shard".into(), (*shard).into()]);
            args.extend(["--scenarios".into(), scenarios.display().to_string()]);
            if *shard == "1/1" {
                args.extend(["--junit".into(), junit.display().to_string()]);
                args.extend(["--html".into(), html.display().to_string()]);
            }
            ((*shard).to_string(), args)
        })
        .collect();
    let handles: Vec<_> = runs
        .into_iter()
        .map(|(shard, args)| {
            std::thread::spawn(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                (shard, seglog(&args))
            })
        })
        .collect();
    let reports: Vec<(String, serde_json::Value)> = handles
        .into_iter()
        .map(|h| {
            let (shard, out) = h.join().unwrap();
            let report = json(&out);
            // Only the shards that replay the broken file fail.
            let broken = units(&report["stages"]["replay"])
                .iter()
                .any(|f| f.ends_with("broken.toml"));
            assert_eq!(out.status.code(), Some(i32::from(broken)), "{shard}");
            assert_eq!(report["passed"], !broken, "{shard}");
            (shard, report)
        })
        .collect();
    let whole = &reports[0].1;
    let stages = whole["stages"].as_object().unwrap();
    assert!(stages.len() >= 7, "{stages:?}");
    for (stage, report) in stages {
        let parts: Vec<Vec<String>> = reports[1..]
            .iter()
            .map(|(_, r)| units(&r["stages"][stage]))
            .collect();
        assert_partition(&units(report), &parts, stage);
    }
    let sweep_points: u64 = reports[1..]
        .iter()
        .map(|(_, r)| r["stages"]["crash_sweep"]["crash_points"].as_u64().unwrap())
        .sum();
    assert_eq!(
        sweep_points,
        stages["crash_sweep"]["crash_points"].as_u64().unwrap()
    );
    assert_eq!(
        units(&stages["model"]).len(),
        8,
        "one unit per model, writers included"
    );
    for stage in ["crash_sweep", "io_errors", "damaged_data"] {
        assert_eq!(stages[stage]["workloads"], 3, "{stage}: --workload selects");
    }
    assert_eq!(units(&stages["conformance"]).len(), 3);
    assert_eq!(units(&stages["replay"]).len(), 2);

    let cases = junit_cases(&junit);
    let names: Vec<&str> = cases.iter().map(|(n, _)| n.as_str()).collect();
    let keys: Vec<&str> = stages.keys().map(String::as_str).collect();
    assert_eq!(names, keys);
    let failed: Vec<(&str, &str)> = cases
        .iter()
        .filter_map(|(n, f)| f.as_deref().map(|f| (n.as_str(), f)))
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].0, "replay");
    assert!(failed[0].1.contains("broken.toml"), "{}", failed[0].1);

    // The page: every stage with its numbers, and the failure named.
    let page = std::fs::read_to_string(&html).expect("verify --html wrote the page");
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(!page.contains("<script") && !page.contains("http"));
    for stage in keys {
        assert!(page.contains(&format!("<tr><td>{stage}</td>")), "{stage}");
    }
    let crash_points = stages["crash_sweep"]["crash_points"].as_u64().unwrap();
    assert!(page.contains(&format!("crash_points={crash_points}")));
    assert!(page.contains("Failures (1)"), "{page}");
    assert!(page.contains("replay: ") && page.contains("broken.toml"));
}

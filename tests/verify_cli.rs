//! `seglog verify` as users run it: the JSON report's contract (one object per stage;
//! the crash sweep's keys), exit codes, and that the suite fails against the seeds'
//! two-rename swap (the "prove a design change" workflow).

use std::process::Command;

fn verify(extra: &[&str]) -> (i32, serde_json::Value) {
    let output = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "verify",
            "--quiet",
            "--json",
            "-",
            "--conformance-cases",
            "4",
        ])
        .args(["--images-per-point", "4", "--recovery-crash-images", "1"])
        // Four of the named workloads for the workload stages, in the debug build:
        // the pull-request tier runs `verify --budget quick` on all of them in
        // release, and `--workload` is the user's way to the same narrowing.
        .args([
            "--workload",
            "seed-compaction",
            "--workload",
            "retain-prefix",
        ])
        .args([
            "--workload",
            "compact-tombstones",
            "--workload",
            "append-flush",
        ])
        .args(extra)
        .output()
        .expect("run seglog verify");
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().unwrap_or(-1), report)
}

#[test]
fn quick_verify_passes_and_reports_every_stage() {
    let emit = tempfile::tempdir().unwrap();
    let (code, report) = verify(&["--emit-scenario", emit.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["passed"], true);
    let stages = report["stages"].as_object().expect("stages object");
    for stage in ["model", "conformance", "crash_sweep", "replay"] {
        assert_eq!(
            stages[stage]["passed"], true,
            "{stage}: {:#}",
            stages[stage]
        );
    }
    let sweep = &stages["crash_sweep"];
    for key in [
        "workloads",
        "crash_points",
        "disk_images",
        "violations",
        "seconds",
    ] {
        assert!(sweep.get(key).is_some(), "crash_sweep lacks {key}");
    }
    assert_eq!(sweep["workloads"], 4, "--workload selects");
    assert!(sweep["disk_images"].as_u64().unwrap() > 500);
    assert_eq!(sweep["violations"], 0);
    let io_errors = &stages["io_errors"];
    assert_eq!(io_errors["passed"], true, "{io_errors:#}");
    for key in [
        "workloads",
        "error_points",
        "disk_images",
        "violations",
        "seconds",
        "not_reached",
        "conformance_cases",
        "conformance_io_errors",
    ] {
        assert!(io_errors.get(key).is_some(), "io_errors lacks {key}");
    }
    assert_eq!(io_errors["workloads"], 4, "--workload selects");
    assert!(io_errors["error_points"].as_u64().unwrap() >= 100);
    assert_eq!(io_errors["not_reached"], 0);
    let damaged = &stages["damaged_data"];
    assert_eq!(damaged["passed"], true, "{damaged:#}");
    for key in [
        "workloads",
        "damages",
        "violations",
        "undetectable",
        "seconds",
    ] {
        assert!(damaged.get(key).is_some(), "damaged_data lacks {key}");
    }
    assert_eq!(damaged["workloads"], 4, "--workload selects");
    assert!(damaged["damages"].as_u64().unwrap() > 1000);
    assert_eq!(damaged["violations"], 0);
    // The quick budget lists the Kafka interop stage as skipped, with the reason.
    let kafka = &stages["kafka_interop"];
    assert_eq!(kafka["passed"], true, "{kafka:#}");
    assert!(
        kafka["skipped"].as_str().unwrap().contains("quick budget"),
        "{kafka:#}"
    );
    assert_eq!(kafka["cases"], serde_json::json!([]));
    // So is the shuttle `schedules` stage: no schedule claimed, none run.
    let schedules = &stages["schedules"];
    assert_eq!(schedules["passed"], true, "{schedules:#}");
    assert!(
        schedules["skipped"]
            .as_str()
            .unwrap()
            .contains("quick budget"),
        "{schedules:#}"
    );
    assert_eq!(schedules["schedules"], 0, "{schedules:#}");
    assert_eq!(schedules["tests"], serde_json::json!([]));
    assert!(
        std::fs::read_dir(emit.path()).unwrap().next().is_none(),
        "nothing to emit on a pass"
    );
}

#[cfg(feature = "test-variants")]
#[test]
fn verify_fails_against_the_two_rename_swap_and_writes_a_counterexample() {
    let emit = tempfile::tempdir().unwrap();
    let (code, report) = verify(&[
        "--against-variant",
        "two-rename",
        "--emit-scenario",
        emit.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["passed"], false);
    let sweep = &report["stages"]["crash_sweep"];
    assert_eq!(sweep["passed"], false);
    assert!(sweep["violations"].as_u64().unwrap() > 0);
    let file = sweep["counterexample"]
        .as_str()
        .expect("a counterexample file");
    let command = sweep["replay_command"].as_str().expect("a replay command");
    assert!(command.contains(file));
    // The emitted scenario replays as the violation it describes.
    let replay = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(["replay", file])
        .output()
        .unwrap();
    assert_eq!(
        replay.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
}

#[test]
fn bad_arguments_exit_2_with_one_line() {
    let output = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(["verify", "--against-variant", "bogus"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("unknown variant"));
    for (args, says) in [
        (&["--workload", "no-such-workload"][..], "unknown workload"),
        (&["--jobs", "0"][..], "--jobs"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_seglog"))
            .arg("verify")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// `--shuttle-iterations` runs the `schedules` stage at any budget; a stand-in
/// cargo (`SEGLOG_CARGO`, a shell script) reports one failing shuttle test of the
/// second target, and the stage counts what ran, fails and names the test and the
/// command.
#[cfg(unix)]
#[test]
fn the_schedules_stage_reports_what_the_shuttle_tests_did() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("cargo");
    std::fs::write(
        &script,
        "#!/bin/sh\n\
         for last; do :; done\n\
         [ \"$SEGLOG_SHUTTLE_ITERATIONS\" = 3 ] || echo \"test iterations_passed ... FAILED\"\n\
         echo \"test random_schedules_give_linearizable_histories ... ok\"\n\
         [ \"$last\" = shuttle_partition ] && exit 0\n\
         echo \"test pct_schedules_give_linearizable_histories ... FAILED\"\n\
         exit 101\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("SEGLOG_CARGO", &script)
        .args([
            "verify",
            "--quiet",
            "--json",
            "-",
            "--conformance-cases",
            "4",
        ])
        .args(["--images-per-point", "4", "--recovery-crash-images", "1"])
        .args(["--workload", "append-flush"])
        .args(["--shuttle-iterations", "3"])
        .output()
        .expect("run seglog verify");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(1), "{report:#}");
    let schedules = &report["stages"]["schedules"];
    assert_eq!(schedules["passed"], false, "{schedules:#}");
    assert_eq!(schedules["skipped"], serde_json::Value::Null);
    assert_eq!(schedules["iterations"], 3);
    assert_eq!(
        schedules["schedules"], 9,
        "three exploring tests: {schedules:#}"
    );
    assert_eq!(
        schedules["failures"],
        serde_json::json!(["shuttle_linearizability::pct_schedules_give_linearizable_histories"])
    );
    assert!(schedules["replay_command"]
        .as_str()
        .unwrap()
        .contains("SEGLOG_SHUTTLE_ITERATIONS=3"));
    for other in ["model", "conformance", "crash_sweep"] {
        assert_eq!(report["stages"][other]["passed"], true, "{other}");
    }
}

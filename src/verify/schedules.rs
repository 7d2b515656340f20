//! The `schedules` stage (standard and overnight budgets): the shuttle tests
//! (engine/tests/shuttle_partition.rs, tests/shuttle_linearizability.rs) with more
//! schedules than `cargo test` runs. They need `--cfg shuttle` (engine/src/sync.rs swaps
//! to shuttle's primitives), so the stage runs `cargo test` in the checkout with
//! `RUSTFLAGS="--cfg shuttle"` in its own target dir `target/shuttle`, the
//! schedules per scheduler in `SEGLOG_SHUTTLE_ITERATIONS`, and reads libtest's
//! lines. Without a checkout or without cargo the stage is skipped, with the reason.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The shuttle test targets the stage runs.
pub const TARGETS: [&str; 2] = ["shuttle_partition", "shuttle_linearizability"];

/// The package whose test `target` is, and that test's file in the checkout: the
/// engine's (`engine/tests/`) or the suite's (`tests/`).
fn home(target: &str) -> (&'static str, PathBuf) {
    if target == "shuttle_partition" {
        (
            "seglog",
            Path::new("engine")
                .join("tests")
                .join(format!("{target}.rs")),
        )
    } else {
        (
            "seglog-suite",
            Path::new("tests").join(format!("{target}.rs")),
        )
    }
}

/// The environment variable that overrides the `cargo` program (tests point it at
/// a stand-in).
pub const CARGO_ENV: &str = "SEGLOG_CARGO";

/// One test's line: `test NAME ... ok` or `... FAILED`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TestLine {
    /// The target and test, `target::name`.
    pub name: String,
    pub passed: bool,
}

/// What a run found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SchedulesReport {
    /// Why the stage did not run, if it did not.
    pub skipped: Option<String>,
    /// Schedules per scheduler of each exploring test.
    pub iterations: u64,
    /// Schedules explored: `iterations` for every `random_schedules_*` and
    /// `pct_schedules_*` test that ran (the teeth tests run fixed seeds on top).
    pub schedules: u64,
    /// Every test line, in order.
    pub tests: Vec<TestLine>,
    /// The failing tests' names.
    pub failures: Vec<String>,
    /// Set when cargo itself failed (e.g. the build) before any test reported.
    pub error: Option<String>,
    /// The command run.
    pub command: String,
}

impl SchedulesReport {
    /// Passed: skipped, or every target ran, no test failed and cargo succeeded.
    pub fn passed(&self) -> bool {
        self.skipped.is_some()
            || (self.error.is_none() && self.failures.is_empty() && !self.tests.is_empty())
    }
}

/// The arguments of `cargo` that run one shuttle test target (with
/// `RUSTFLAGS="--cfg shuttle"`). One target a run, so every test line is known to
/// be of that target (cargo prints its `Running` lines on another stream).
pub fn command_args(target: &str) -> Vec<String> {
    [
        "test",
        "-p",
        home(target).0,
        "--features",
        "test-variants",
        "--test",
        target,
    ]
    .map(String::from)
    .to_vec()
}

/// The test lines of libtest's output for `target`.
pub fn parse(target: &str, output: &str) -> Vec<TestLine> {
    let mut lines = Vec::new();
    for line in output.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix("test ") else {
            continue;
        };
        let Some((name, status)) = rest.rsplit_once(" ... ") else {
            continue;
        };
        let passed = match status {
            "ok" => true,
            "FAILED" => false,
            _ => continue,
        };
        lines.push(TestLine {
            name: format!("{target}::{name}"),
            passed,
        });
    }
    lines
}

/// Runs the shuttle tests in the checkout `root` with `iterations` schedules per
/// scheduler, with `cargo` (or [`CARGO_ENV`]).
pub fn run(root: &Path, iterations: u64) -> SchedulesReport {
    let cargo = std::env::var(CARGO_ENV).unwrap_or_else(|_| "cargo".into());
    let target_dir = root.join("target").join("shuttle");
    let mut report = SchedulesReport {
        iterations,
        command: TARGETS
            .map(|t| {
                format!(
                    "RUSTFLAGS=\"--cfg shuttle\" CARGO_TARGET_DIR={} SEGLOG_SHUTTLE_ITERATIONS={iterations} {cargo} {}",
                    target_dir.display(),
                    command_args(t).join(" ")
                )
            })
            .join(" && "),
        ..SchedulesReport::default()
    };
    let missing = TARGETS.into_iter().any(|t| !root.join(home(t).1).is_file());
    if !root.join("Cargo.toml").is_file() || missing {
        report.skipped = Some(format!(
            "no seglog checkout at {} (the shuttle tests build from source)",
            root.display()
        ));
        return report;
    }
    for target in TARGETS {
        let output = match Command::new(&cargo)
            .args(command_args(target))
            .current_dir(root)
            .env("RUSTFLAGS", "--cfg shuttle")
            .env("CARGO_TARGET_DIR", &target_dir)
            .env("SEGLOG_SHUTTLE_ITERATIONS", iterations.to_string())
            .output()
        {
            Ok(output) => output,
            Err(e) => {
                report.skipped = Some(format!("cannot run {cargo}: {e}"));
                return report;
            }
        };
        let tests = parse(target, &String::from_utf8_lossy(&output.stdout));
        let failed = tests.iter().any(|t| !t.passed);
        if !output.status.success() && !failed && report.error.is_none() {
            // cargo failed before any test did (the build, a crash): its last words.
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
            report.error = Some(format!(
                "{target}: {cargo} exited with {}: {}",
                output.status,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        report.tests.extend(tests);
    }
    report.failures = report
        .tests
        .iter()
        .filter(|t| !t.passed)
        .map(|t| t.name.clone())
        .collect();
    let exploring = report
        .tests
        .iter()
        .filter(|t| {
            let name = t.name.rsplit("::").next().unwrap_or("");
            name.starts_with("random_schedules") || name.starts_with("pct_schedules")
        })
        .count() as u64;
    report.schedules = exploring * iterations;
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "running 3 tests\n\
test random_schedules_keep_every_acknowledged_record ... ok\n\
test pct_schedules_give_linearizable_histories ... FAILED\n\
test some_ignored ... ignored\n\
test result: FAILED. 1 passed; 1 failed\n";

    #[test]
    fn parses_libtest_lines() {
        let lines = parse("shuttle_partition", OUTPUT);
        assert_eq!(
            lines,
            vec![
                TestLine {
                    name: "shuttle_partition::random_schedules_keep_every_acknowledged_record"
                        .into(),
                    passed: true
                },
                TestLine {
                    name: "shuttle_partition::pct_schedules_give_linearizable_histories".into(),
                    passed: false
                },
            ]
        );
        assert!(parse("x", "").is_empty());
    }

    #[test]
    fn runs_each_target_with_the_shuttle_features() {
        for target in TARGETS {
            let args = command_args(target);
            assert_eq!(args[args.len() - 2..], ["--test", target]);
            assert!(args.contains(&"test-variants".to_string()));
            assert_eq!(args[1..3], ["-p", home(target).0]);
        }
    }

    /// A stand-in cargo (a shell script) proves the stage passes the iterations and
    /// the cfg, counts schedules from the lines, and reports a failing test.
    #[cfg(unix)]
    #[test]
    fn reports_what_a_run_printed_and_skips_without_a_checkout() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("checkout");
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::create_dir_all(root.join("engine").join("tests")).unwrap();
        std::fs::write(root.join("Cargo.toml"), "").unwrap();
        for t in TARGETS {
            std::fs::write(root.join(home(t).1), "").unwrap();
        }
        let script = dir.path().join("cargo");
        std::fs::write(
            &script,
            "#!/bin/sh\n\
             for last; do :; done\n\
             [ \"$last\" = shuttle_partition ] || [ \"$last\" = shuttle_linearizability ] || exit 2\n\
             echo \"test random_schedules_a ... ok\"\n\
             echo \"test pct_schedules_b ... $OUTCOME\"\n\
             echo \"test teeth ... ok\"\n\
             echo \"iterations=$SEGLOG_SHUTTLE_ITERATIONS flags=$RUSTFLAGS\" >&2\n\
             [ \"$SEGLOG_SHUTTLE_ITERATIONS\" = 7 ] && [ \"$RUSTFLAGS\" = \"--cfg shuttle\" ] || echo \"test env_passed ... FAILED\"\n\
             [ \"$OUTCOME\" = ok ]\n",
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        // One process-wide variable: both runs happen in this one test.
        std::env::set_var(CARGO_ENV, &script);
        std::env::set_var("OUTCOME", "ok");
        let ok = run(&root, 7);
        std::env::set_var("OUTCOME", "FAILED");
        let failed = run(&root, 7);
        let skipped = run(&dir.path().join("nowhere"), 7);
        std::env::set_var(CARGO_ENV, dir.path().join("no-such-cargo"));
        let no_cargo = run(&root, 7);
        std::env::remove_var(CARGO_ENV);
        std::env::remove_var("OUTCOME");

        assert_eq!(ok.skipped, None);
        assert_eq!(ok.tests.len(), 6, "three lines of each target: {ok:?}");
        assert!(ok.failures.is_empty(), "{ok:?}");
        assert_eq!(ok.schedules, 28, "two exploring tests a target, 7 each");
        assert!(ok.passed());
        assert_eq!(
            failed.failures,
            vec![
                "shuttle_partition::pct_schedules_b".to_string(),
                "shuttle_linearizability::pct_schedules_b".to_string()
            ]
        );
        assert!(!failed.passed());
        assert!(skipped.skipped.unwrap().contains("no seglog checkout"));
        assert!(no_cargo.skipped.unwrap().contains("cannot run"));
    }
}

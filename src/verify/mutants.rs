//! The mutation score (the `mutants` stage, overnight budget, and `.ci/nightly`'s
//! shards): `cargo mutants` changes the engine's code one mutant at a time
//! ([`MUTATED`]: the format, segments, the log, compaction, install, retention,
//! the LogManager and the real file system) and runs, against each, the test
//! command users trust on every change: the engine's unit tests and the
//! pull-request gate `seglog verify --budget quick` (`tests/quick_gate.rs`), built
//! in the `mutants` profile (release code). A mutant they do not catch (`missed`) is
//! a survivor: equivalent, or a hole in the gate (docs/verification.md lists the
//! sample's). Needs `cargo install --locked cargo-mutants`; without it the stage is
//! skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The engine's sources mutated (cargo-mutants `--file` globs).
pub const MUTATED: [&str; 8] = [
    "engine/src/format/**",
    "engine/src/segment/**",
    "engine/src/log/**",
    "engine/src/compaction/**",
    "engine/src/install/**",
    "engine/src/retention/**",
    "engine/src/manager/**",
    "engine/src/fs/std_fs.rs",
];

/// The cargo profile each mutant is built in.
pub const PROFILE: &str = "mutants";

/// The test command's targets: the engine's unit tests and the quick gate.
pub const TEST_TARGETS: [&str; 3] = ["--lib", "--test", "quick_gate"];

/// The arguments of `cargo` that run cargo-mutants over [`MUTATED`] (one `shard`
/// of them, `K/N` numbered from 0, round-robin, if given) with the quick gate as the test
/// command, writing to `output`.
pub fn command_args(output: &Path, shard: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "mutants".into(),
        "--no-shuffle".into(),
        "--profile".into(),
        PROFILE.into(),
    ];
    if let Some(shard) = shard {
        // Every N-th mutant: a shard samples every module, not one file's run.
        args.push("--sharding".into());
        args.push("round-robin".into());
        args.push("--shard".into());
        args.push(shard.into());
    }
    for glob in MUTATED {
        args.push("--file".into());
        args.push(glob.into());
    }
    // The engine's files are one package, the quick gate another's test: every
    // mutant runs the targets across the workspace.
    args.push("--test-workspace=true".into());
    args.push("--output".into());
    args.push(output.display().to_string());
    // The targets on every cargo call, so each mutant's build step builds only
    // them (not the other test binaries, which its tests never run).
    for target in TEST_TARGETS {
        args.push(format!("--cargo-arg={target}"));
    }
    // The gate is an ignored test (too slow unoptimised): run it here. The first
    // `--` ends cargo-mutants' options, the second cargo test's.
    args.push("--".into());
    args.push("--".into());
    args.push("--include-ignored".into());
    args
}

/// The mutants a run listed in `text` (one per line, as in `missed.txt`).
pub fn parse_list(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(ToString::to_string)
        .collect()
}

/// What a run found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct MutantsReport {
    /// Why the stage did not run, if it did not.
    pub skipped: Option<String>,
    /// Mutants the tests caught.
    pub caught: usize,
    /// Mutants that did not build.
    pub unviable: usize,
    /// Mutants whose tests timed out (counted as caught by cargo-mutants).
    pub timeouts: usize,
    /// The survivors: mutants no test caught, as cargo-mutants names them.
    pub survivors: Vec<String>,
    /// The command run.
    pub command: String,
    /// [`MutantsReport::measured_score`] of the run, for the JSON report.
    pub score: Option<f64>,
}

impl MutantsReport {
    /// Caught (timeouts included) over every viable mutant, survivors included
    /// (equivalent ones too: the triaged list in docs/verification.md tells them
    /// apart); `None` with no viable mutant.
    pub fn measured_score(&self) -> Option<f64> {
        let caught = self.caught + self.timeouts;
        let viable = caught + self.survivors.len();
        (viable > 0).then(|| caught as f64 / viable as f64)
    }
}

/// Runs cargo-mutants in the checkout `root`; its output goes to `root/target`.
pub fn run(root: &Path) -> MutantsReport {
    let installed = Command::new("cargo")
        .args(["mutants", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    let output = root.join("target");
    let args = command_args(&output, None);
    let mut report = MutantsReport {
        command: format!("cargo {}", args.join(" ")),
        ..MutantsReport::default()
    };
    if !installed {
        report.skipped =
            Some("cargo-mutants is not installed (`cargo install --locked cargo-mutants`)".into());
        return report;
    }
    // cargo-mutants exits non-zero when mutants survive; the lists say what happened.
    if let Err(e) = Command::new("cargo").args(&args).current_dir(root).status() {
        report.skipped = Some(format!("cannot run cargo mutants: {e}"));
        return report;
    }
    let list = |name: &str| -> Vec<String> {
        let path: PathBuf = output.join("mutants.out").join(name);
        std::fs::read_to_string(path)
            .map(|t| parse_list(&t))
            .unwrap_or_default()
    };
    report.caught = list("caught.txt").len();
    report.unviable = list("unviable.txt").len();
    report.timeouts = list("timeout.txt").len();
    report.survivors = list("missed.txt");
    report.score = report.measured_score();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutates_the_engine_and_tests_with_the_quick_gate() {
        let args = command_args(Path::new("/x/target"), Some("3/25"));
        let files: Vec<&str> = args
            .windows(2)
            .filter(|w| w[0] == "--file")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(files, MUTATED);
        let split = args.iter().position(|a| a == "--").expect("test args");
        assert!(args[..split]
            .windows(2)
            .any(|w| w == ["--profile", PROFILE]));
        assert!(args[..split].windows(2).any(|w| w == ["--shard", "3/25"]));
        assert!(args[..split]
            .windows(2)
            .any(|w| w == ["--sharding", "round-robin"]));
        assert!(args[..split].contains(&"/x/target".to_string()));
        let targets: Vec<&str> = args[..split]
            .iter()
            .filter_map(|a| a.strip_prefix("--cargo-arg="))
            .collect();
        assert_eq!(targets, ["--lib", "--test", "quick_gate"]);
        assert_eq!(args[split..], ["--", "--", "--include-ignored"]);
        let unsharded = command_args(Path::new("/x/target"), None);
        assert!(!unsharded.contains(&"--shard".to_string()));
    }

    #[test]
    fn the_score_counts_timeouts_as_caught_and_ignores_unviable_mutants() {
        let mut report = MutantsReport {
            caught: 7,
            timeouts: 2,
            unviable: 5,
            survivors: vec!["a".into()],
            ..MutantsReport::default()
        };
        assert_eq!(report.measured_score(), Some(0.9));
        report = MutantsReport::default();
        assert_eq!(report.measured_score(), None);
    }

    #[test]
    fn parses_a_mutant_list() {
        let text = "engine/src/fs/std_fs.rs:80:9: replace StdFs::sync_file -> io::Result<()> with Ok(())\n\n  engine/src/install/mod.rs:10:5: delete !\n";
        let parsed = parse_list(text);
        assert_eq!(parsed.len(), 2);
        assert!(parsed[0].starts_with("engine/src/fs/std_fs.rs:80:9"));
        assert_eq!(parsed[1], "engine/src/install/mod.rs:10:5: delete !");
        assert!(parse_list("").is_empty());
    }
}

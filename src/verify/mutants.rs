//! The `mutants` stage (overnight budget): `cargo mutants` changes the code of the
//! protocol and IO modules one mutant at a time (`src/install`, `src/retention`,
//! `src/compaction`, `src/fs`) and runs the quick suite's tests against each; a
//! mutant they do not catch (`missed`) is a survivor, a hole in the suite. Needs
//! `cargo install --locked cargo-mutants`; without it the stage is skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The source directories mutated.
pub const MUTATED: [&str; 4] = ["src/install", "src/retention", "src/compaction", "src/fs"];

/// The integration tests run against each mutant: those of the quick budget's
/// stages (crash sweep, I/O errors, damaged data, scenarios, conformance).
pub const QUICK_SUITE_TESTS: [&str; 5] = [
    "crash_sweep",
    "io_errors",
    "damaged_data",
    "crash_scenarios",
    "conformance",
];

/// The arguments of `cargo` that run cargo-mutants over [`MUTATED`] with
/// [`QUICK_SUITE_TESTS`] as the test command, writing to `output`.
pub fn command_args(output: &Path) -> Vec<String> {
    let mut args: Vec<String> = vec!["mutants".into(), "--no-shuffle".into()];
    for dir in MUTATED {
        args.push("--file".into());
        args.push(format!("{dir}/**"));
    }
    args.push("--output".into());
    args.push(output.display().to_string());
    args.push("--".into());
    for test in QUICK_SUITE_TESTS {
        args.push("--test".into());
        args.push(test.into());
    }
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
}

/// Runs cargo-mutants in the checkout `root`; its output goes to `root/target`.
pub fn run(root: &Path) -> MutantsReport {
    let installed = Command::new("cargo")
        .args(["mutants", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    let output = root.join("target");
    let args = command_args(&output);
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
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutates_the_four_modules_and_tests_with_the_quick_suite() {
        let args = command_args(Path::new("/x/target"));
        let files: Vec<&str> = args
            .windows(2)
            .filter(|w| w[0] == "--file")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(
            files,
            [
                "src/install/**",
                "src/retention/**",
                "src/compaction/**",
                "src/fs/**"
            ]
        );
        let split = args.iter().position(|a| a == "--").expect("test args");
        let tests: Vec<&str> = args[split..]
            .windows(2)
            .filter(|w| w[0] == "--test")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(tests, QUICK_SUITE_TESTS);
        assert!(args[..split].contains(&"/x/target".to_string()));
    }

    #[test]
    fn parses_a_mutant_list() {
        let text = "src/fs/std_fs.rs:80:9: replace StdFs::sync_file -> io::Result<()> with Ok(())\n\n  src/install/mod.rs:10:5: delete !\n";
        let parsed = parse_list(text);
        assert_eq!(parsed.len(), 2);
        assert!(parsed[0].starts_with("src/fs/std_fs.rs:80:9"));
        assert_eq!(parsed[1], "src/install/mod.rs:10:5: delete !");
        assert!(parse_list("").is_empty());
    }
}

//! The pull-request gate as a test: `seglog verify --budget quick`, every stage,
//! in this process. It is the test command of the mutation score
//! (`seglog_suite::verify::mutants`, docs/verification.md): cargo-mutants builds each
//! mutant in the `mutants` profile (release code) and runs the engine's unit tests
//! and this gate against it. Ignored in `cargo test` (unoptimised, the gate takes
//! many minutes): the nightly tier runs it, as a listed test and in its mutants
//! step; `cargo test --profile mutants --test quick_gate -- --ignored` runs it.

use seglog_suite::verify::{run, Budget, Progress, VerifyOptions};

#[test]
#[ignore = "nightly tier (.ci/nightly): the mutation score's test command (its mutants step runs it in the mutants profile); unoptimised it takes minutes"]
fn the_quick_gate_passes() {
    let options = VerifyOptions::for_budget(Budget::Quick);
    let report = run(&options, &mut Progress::new(true));
    let failed: Vec<String> = report
        .ordered
        .iter()
        .filter(|stage| !stage.passed)
        .map(|stage| format!("{}: {}", stage.stage, stage.summary))
        .collect();
    assert!(
        report.passed,
        "the quick gate failed:\n{}",
        failed.join("\n")
    );
}

//! Replays every file in `crash-scenarios/` on the simulated file system.
//!
//! Each scenario must reproduce its expectation against its own protocol variant and,
//! in builds with `test-variants`, against every variant its `[expect.variants]` names
//! (that is how the seeds' two-rename window is shown to fail there and pass here).
//! The scenario set must also cover every step of the install protocol and of
//! retention deletion (docs/design.md sections 5 and 6).

use std::collections::BTreeSet;
use std::path::PathBuf;

use seglog::fs::StdFs;
use seglog_suite::scenario::{self, load, scenario_paths, Outcome, Scenario};

fn scenarios() -> Vec<(PathBuf, Scenario)> {
    let fs = StdFs::new();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crash-scenarios");
    let paths = scenario_paths(&fs, &[dir]).expect("crash-scenarios/ lists");
    assert!(
        paths.len() >= 12,
        "at least 12 scenarios, found {}",
        paths.len()
    );
    paths
        .into_iter()
        .map(|p| {
            let s = load(&fs, &p).unwrap_or_else(|e| panic!("{e}"));
            (p, s)
        })
        .collect()
}

fn variant_available(name: &str) -> bool {
    seglog_suite::workload::engine::Variant::parse(name).is_ok()
}

#[test]
fn every_scenario_replays_as_expected() {
    let mut failures = Vec::new();
    let mut runs = 0;
    for (path, scenario) in scenarios() {
        let mut variants = vec![scenario.variant.clone()];
        variants.extend(scenario.expect.variants.keys().cloned());
        for variant in variants.into_iter().filter(|v| variant_available(v)) {
            runs += 1;
            let result = scenario::replay(&scenario, Some(&variant));
            if !result.passed {
                failures.push(format!(
                    "{} against {variant}: {:?}",
                    path.display(),
                    result
                ));
            }
            // A scenario whose crash window is never reached proves nothing.
            assert!(
                scenario.crash.is_none() || result.crash_before_op.is_some(),
                "{}: crash point not reached: {:?}",
                path.display(),
                result.diff
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(runs >= 12);
}

#[test]
fn the_seeds_two_rename_window_is_covered_both_ways() {
    let all = scenarios();
    let (_, window) = all
        .iter()
        .find(|(_, s)| s.name == "seed-two-rename-window")
        .expect("the seeds' window has a scenario");
    assert_eq!(window.expected_for("manifest"), Outcome::New);
    assert_eq!(window.expected_for("two-rename"), Outcome::Violation);
}

#[test]
fn every_protocol_step_has_a_scenario() {
    let steps = [
        "compaction::build::sync_file",
        "install::manifest::rename",
        "install::swap::rename_live_backup",
        "install::swap::rename_tmp_live",
        "install::trash::rename",
        "install::cleanup::remove_manifest",
        "retention::checkpoint::rename",
        "retention::delete::remove_file",
    ];
    let covered: BTreeSet<String> = scenarios()
        .into_iter()
        .filter_map(|(_, s)| s.crash.and_then(|c| c.failpoint))
        .collect();
    for step in steps {
        assert!(covered.contains(step), "no scenario crashes at {step}");
    }
    let kinds: BTreeSet<bool> = scenarios()
        .into_iter()
        .filter_map(|(_, s)| s.crash.map(|c| c.recovery_crash_before_op.is_some()))
        .collect();
    assert!(
        kinds.contains(&true),
        "a scenario must crash during recovery"
    );
}

#[test]
fn a_scenario_round_trips_through_toml() {
    for (path, scenario) in scenarios() {
        let again = Scenario::parse(&scenario.to_toml())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(again, scenario, "{}", path.display());
    }
}

#[test]
fn bad_scenario_files_are_clear_errors() {
    assert!(Scenario::parse("name = 1").is_err());
    let missing_point = r#"
name = "x"
description = "x"
invariant = "x"
ops = []
[crash]
semantics = "process"
[expect]
outcome = "old"
"#;
    let err = Scenario::parse(missing_point).unwrap_err();
    assert!(err.contains("failpoint or before_fs_op"), "{err}");
}

/// A scenario names its persistence model (`[crash] persistence`), and the replay
/// runs the workload under it. The temp-entry window (variant `no-temp-entry-sync`:
/// the parent is not synced after the temp dir's `mkdir`) is a violation under
/// `any-subset`, which may lose the `mkdir` and keep the later manifest rename; under
/// `ordered-metadata` that image cannot happen (a power loss keeps a prefix of the
/// directory operations), and the same crash recovers to the new content.
#[test]
fn a_scenario_replays_under_its_persistence_model() {
    use seglog::fs::sim::Persistence;
    let variant = "no-temp-entry-sync";
    if !variant_available(variant) {
        return;
    }
    let (_, any) = scenarios()
        .into_iter()
        .find(|(p, _)| p.ends_with("durable-manifest-without-temp-entry.toml"))
        .expect("the temp-entry scenario");
    let mut ordered = any.clone();
    ordered.crash.as_mut().expect("a crash").persistence = Persistence::OrderedMetadata;
    assert!(ordered
        .to_toml()
        .contains("persistence = \"ordered-metadata\""));
    assert_eq!(Scenario::parse(&ordered.to_toml()).unwrap(), ordered);
    assert_eq!(scenario::replay(&any, Some(variant)).actual, "violation");
    let result = scenario::replay(&ordered, Some(variant));
    assert_eq!(result.actual, "new", "{result:?}");
}

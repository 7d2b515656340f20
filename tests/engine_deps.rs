//! The engine alone stays small: `seglog` with `default-features = false` (no suite,
//! no CLI) has at most [`ENGINE_CRATES_MAX`] crates in its normal dependency tree,
//! none of them the suite's, and `fail` only with the `failpoints` feature.
//!
//! Counted with `cargo tree -e normal --no-default-features -p seglog`, the command an
//! embedder would run; every distinct package in its output counts, `seglog` itself
//! included. It runs `--offline` first (the crates are in the local cache once the
//! workspace has been built, as it has when this test runs) and only asks the
//! registry if that fails. docs/design.md, "Engine and suite".

use std::collections::BTreeSet;
use std::process::Command;

/// The budget of issue 17: an embedder pays for at most this many crates.
const ENGINE_CRATES_MAX: usize = 25;

/// Crates of the suite and the CLI that must never be engine dependencies.
const SUITE_ONLY: &[&str] = &[
    "seglog-model",
    "stateright",
    "proptest",
    "clap",
    "indicatif",
    "toml",
    "tempfile",
    "serde_json",
    "base64",
    "fail",
    "serde",
];

/// The distinct packages (`name version`) of `seglog`'s normal dependency tree with
/// the given feature arguments.
fn engine_tree(features: &[&str]) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let run = |offline: bool| {
        let mut command = Command::new(&cargo);
        command.args(["tree", "-e", "normal", "--prefix", "none", "-p", "seglog"]);
        command.args(["--manifest-path", manifest]);
        command.args(features);
        if offline {
            command.arg("--offline");
        }
        command
            .output()
            .unwrap_or_else(|e| panic!("cannot run `{cargo} tree`: {e}"))
    };
    let mut output = run(true);
    if !output.status.success() {
        output = run(false);
    }
    assert!(
        output.status.success(),
        "`cargo tree -e normal -p seglog {}` failed (offline and online):\n{}",
        features.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("cargo tree prints UTF-8");
    let packages: BTreeSet<String> = stdout
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            Some(format!("{} {}", words.next()?, words.next()?))
        })
        .collect();
    assert!(
        packages.iter().any(|p| p.starts_with("seglog v")),
        "cargo tree printed no `seglog` line:\n{stdout}"
    );
    packages
}

fn names(packages: &BTreeSet<String>) -> BTreeSet<&str> {
    packages
        .iter()
        .map(|p| p.split(' ').next().expect("a name"))
        .collect()
}

#[test]
fn the_engine_alone_has_at_most_25_crates_and_none_of_the_suite() {
    let packages = engine_tree(&["--no-default-features"]);
    let listing = packages.iter().cloned().collect::<Vec<_>>().join("\n  ");
    assert!(
        packages.len() <= ENGINE_CRATES_MAX,
        "the engine's normal dependency tree (`cargo tree -e normal --no-default-features \
         -p seglog`) has {} crates, more than the budget of {ENGINE_CRATES_MAX}; a dependency \
         the engine does not need crept in, or a new one belongs behind a feature:\n  {listing}",
        packages.len()
    );
    let names = names(&packages);
    let leaked: Vec<&str> = SUITE_ONLY
        .iter()
        .copied()
        .filter(|c| names.contains(c))
        .collect();
    assert!(
        leaked.is_empty(),
        "suite-only crates {leaked:?} are in the engine's tree without the `suite` feature \
         (make them optional and list them under `suite` in Cargo.toml):\n  {listing}"
    );
}

#[test]
fn fail_comes_only_with_the_failpoints_feature_and_the_suite_only_with_suite() {
    let failpoints = engine_tree(&["--no-default-features", "--features", "failpoints"]);
    assert!(
        names(&failpoints).contains("fail"),
        "`failpoints` must bring the `fail` crate"
    );
    assert!(!names(&failpoints).contains("stateright"));
    // The default build (the CLI, `cargo run -- verify`) still has the suite.
    let default = engine_tree(&[]);
    for suite_crate in ["seglog-model", "clap", "proptest", "serde_json"] {
        assert!(
            names(&default).contains(suite_crate),
            "the default features lost the suite's {suite_crate}"
        );
    }
    assert!(!names(&default).contains("fail"));
}

/// The codec crates: over the budget, so behind the `compression` feature.
const CODEC_CRATES: &[&str] = &["flate2", "snap", "lz4_flex", "twox-hash", "zstd"];

#[test]
fn the_codecs_come_only_with_the_compression_feature_which_the_suite_enables() {
    let engine = engine_tree(&["--no-default-features"]);
    let leaked: Vec<&str> = CODEC_CRATES
        .iter()
        .copied()
        .filter(|c| names(&engine).contains(c))
        .collect();
    assert!(
        leaked.is_empty(),
        "codec crates {leaked:?} are in the engine's tree without the `compression` feature"
    );
    let compression = engine_tree(&["--no-default-features", "--features", "compression"]);
    let default = engine_tree(&[]);
    for codec_crate in CODEC_CRATES {
        assert!(
            names(&compression).contains(codec_crate),
            "`compression` must bring {codec_crate}"
        );
        assert!(
            names(&default).contains(codec_crate),
            "the default features (the suite) lost the codecs' {codec_crate}"
        );
    }
    assert!(!names(&compression).contains("seglog-model"));
}

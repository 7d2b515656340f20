//! The engine stays small: `seglog` (no suite, no CLI) has at most
//! [`ENGINE_CRATES_MAX`] crates in its normal dependency tree with its default
//! features, at most [`WITH_CODECS_MAX`] with Kafka's codecs (`compression`), none of
//! them the suite's, and `fail` only with the `failpoints` feature.
//!
//! Counted with `cargo tree -e normal -p seglog`, the command an embedder would run; every distinct package in its output counts, `seglog` itself
//! included. It runs `--offline` first (the crates are in the local cache once the
//! workspace has been built, as it has when this test runs) and only asks the
//! registry if that fails. docs/design.md, "Crate layout".

use std::collections::BTreeSet;
use std::process::Command;

/// An embedder pays for at most this many crates.
const ENGINE_CRATES_MAX: usize = 20;

/// ... and at most this many with Kafka's codecs.
const WITH_CODECS_MAX: usize = 32;

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
fn the_engine_has_at_most_20_crates_and_none_of_the_suite() {
    for features in [&[][..], &["--no-default-features"][..]] {
        let packages = engine_tree(features);
        let listing = packages.iter().cloned().collect::<Vec<_>>().join("\n  ");
        assert!(
            packages.len() <= ENGINE_CRATES_MAX,
            "the engine's normal dependency tree (`cargo tree -e normal -p seglog {}`) has {} \
             crates, more than the budget of {ENGINE_CRATES_MAX}; a dependency the engine does \
             not need crept in, or a new one belongs behind a feature:\n  {listing}",
            features.join(" "),
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
            "suite-only crates {leaked:?} are in the engine's tree:\n  {listing}"
        );
    }
}

#[test]
fn with_the_codecs_the_engine_has_at_most_32_crates_and_none_of_the_suite() {
    let packages = engine_tree(&["--features", "compression"]);
    let listing = packages.iter().cloned().collect::<Vec<_>>().join("\n  ");
    assert!(
        packages.len() <= WITH_CODECS_MAX,
        "the engine's tree with `compression` has {} crates, more than the budget of \
         {WITH_CODECS_MAX}:\n  {listing}",
        packages.len()
    );
    let names = names(&packages);
    for codec_crate in CODEC_CRATES {
        assert!(
            names.contains(codec_crate),
            "`compression` must bring {codec_crate}"
        );
    }
    assert!(!SUITE_ONLY.iter().any(|c| names.contains(c)), "{listing}");
}

#[test]
fn fail_comes_only_with_the_failpoints_feature() {
    let failpoints = engine_tree(&["--features", "failpoints"]);
    assert!(
        names(&failpoints).contains("fail"),
        "`failpoints` must bring the `fail` crate"
    );
    assert!(!names(&failpoints).contains("stateright"));
    assert!(!names(&engine_tree(&[])).contains("fail"));
}

/// The codec crates: over the engine's budget, so behind the `compression` feature.
const CODEC_CRATES: &[&str] = &["flate2", "snap", "lz4_flex", "twox-hash", "zstd"];

#[test]
fn the_codecs_come_only_with_the_compression_feature() {
    let engine = engine_tree(&[]);
    let leaked: Vec<&str> = CODEC_CRATES
        .iter()
        .copied()
        .filter(|c| names(&engine).contains(c))
        .collect();
    assert!(
        leaked.is_empty(),
        "codec crates {leaked:?} are in the engine's tree without the `compression` feature"
    );
}

//! The engine's public surface changes only on purpose: the public items of the
//! `seglog` crate, listed from its rustdoc JSON by the `public-api` crate, equal the
//! committed listings in `engine/public-api/`:
//! * `default.txt`: what an embedder gets with the default features;
//! * `all-features.txt`: with every feature (the codecs, serde, fail points and the
//!   testing seam).
//!
//! A change to the surface (an item added, removed, renamed, or its signature
//! changed) fails here, printing the lines that differ, until the listing changes
//! with it: `SEGLOG_BLESS=1 cargo test --test public_api` rewrites both listings,
//! and the diff of the listing is then part of the change, for review.
//!
//! The listings omit blanket impls (`impl<T> From<T> for T`) and auto-trait impls
//! (`Send`, `Sync`, `Unpin`, ...): `cargo public-api -ss` prints the same lines.
//! The rustdoc JSON comes from the active toolchain (`RUSTC_BOOTSTRAP=1`, since the
//! JSON output is unstable), built in a target directory of its own. Its format
//! version must be the one the `public-api` dev-dependency reads; when a toolchain
//! update changes it, this test says so and names the crate to update.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The listings, beside the engine's manifest.
fn listing_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("engine")
        .join("public-api")
}

/// The rustdoc JSON of the engine's library with `features` (cargo's arguments),
/// built into `target_dir`.
fn rustdoc_json(features: &[&str], target_dir: &Path) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "rustdoc",
            "--quiet",
            "--lib",
            "-p",
            "seglog",
            "--manifest-path",
        ])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .args(features)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove("RUSTDOCFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo rustdoc (JSON) of the engine failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target_dir.join("doc").join("seglog.json")
}

/// The listing of the engine's public items with `features`. Both listings build
/// into one target directory (the dependencies are shared), one after the other
/// (each reads the JSON file the other would overwrite).
fn listing(features: &[&str]) -> String {
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("public-api");
    let json = rustdoc_json(features, &target_dir);
    let text = std::fs::read_to_string(&json).expect("rustdoc wrote its JSON");
    let format_version = serde_json::from_str::<serde_json::Value>(&text)
        .expect("rustdoc JSON parses")["format_version"]
        .as_u64();
    assert_eq!(
        format_version,
        Some(u64::from(rustdoc_types::FORMAT_VERSION)),
        "this toolchain's rustdoc writes JSON format {format_version:?}; the `public-api` \
         dev-dependency (with `rustdoc-types`) reads format {}: update both to the \
         release that reads the toolchain's format",
        rustdoc_types::FORMAT_VERSION
    );
    let api = public_api::Builder::from_rustdoc_json(&json)
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .build()
        .expect("the public-api crate reads the JSON");
    api.to_string()
}

/// Each line's count in `text`.
fn counts(text: &str) -> BTreeMap<&str, i64> {
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        *counts.entry(line).or_insert(0) += 1;
    }
    counts
}

/// The lines only one side has, `-` for the committed listing's and `+` for the
/// code's, in listing order.
fn differing_lines(committed: &str, actual: &str) -> Vec<String> {
    let mut net = counts(actual);
    for (line, n) in counts(committed) {
        *net.entry(line).or_insert(0) -= n;
    }
    net.into_iter()
        .filter(|(_, n)| *n != 0)
        .map(|(line, n)| format!("{} {line}", if n > 0 { '+' } else { '-' }))
        .collect()
}

fn check(name: &str, features: &[&str]) {
    let actual = listing(features);
    let path = listing_dir().join(format!("{name}.txt"));
    if std::env::var_os("SEGLOG_BLESS").is_some_and(|v| !v.is_empty()) {
        std::fs::create_dir_all(listing_dir()).expect("engine/public-api/ is writable");
        std::fs::write(&path, &actual).expect("the listing is writable");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != actual {
        let lines = differing_lines(&committed, &actual);
        panic!(
            "the engine's public surface ({name}) differs from {} in {} line(s):\n{}\n\
             If the change is on purpose: SEGLOG_BLESS=1 cargo test --test public_api, \
             and commit the listing with it.",
            path.display(),
            lines.len(),
            lines.join("\n")
        );
    }
}

#[test]
fn the_public_surface_is_the_listed_one() {
    check("default", &[]);
    check("all-features", &["--all-features"]);
}

#[test]
fn a_difference_names_each_line_once_with_its_side() {
    let committed = "pub fn a()\npub fn b()\npub fn b()\n";
    let actual = "pub fn b()\npub fn c()\n";
    assert_eq!(
        differing_lines(committed, actual),
        ["- pub fn a()", "- pub fn b()", "+ pub fn c()"]
    );
    assert!(differing_lines(actual, actual).is_empty());
}

//! Log directory paths the CLI must handle (issue "paths"):
//! * a log directory reached through a symbolic link: `compact` used to replace the
//!   link with a real directory (the old target kept stale segments and shared
//!   the active segment's inode); the link must stay a link to the compacted log,
//!   and `append`, `roll`, `retain`, `recover` must keep working through it;
//! * `D/.` and a trailing slash: `compact` must resolve them, not fail after the
//!   commit point;
//! * a directory name so long that the install's longest sibling
//!   (`D.compact-manifest.tmp`) exceeds the 255-byte file-name limit: `compact`
//!   must refuse up front, before building a temp dir it would leave behind, naming the path and the limit, with nothing created.

mod cli_support;

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use cli_support::{ok, seglog};

/// Appends one record per value of key "k" (all but the last superseded), in
/// small segments so that compaction has closed segments to clean.
fn fill(d: &str, values: std::ops::Range<u32>) {
    for i in values {
        let batch = format!(r#"[{{"key":"k","value":"v{i}","ts":1}}]"#);
        ok(&["append", d, "--segment-bytes", "200", "--batch", &batch]);
    }
}

fn compact(d: &str) -> String {
    ok(&["compact", d, "--now", "0", "--delete-retention-ms", "0"])
}

/// The names in `dir`.
fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// The values `dump` prints, in order.
fn values(d: &str) -> Vec<String> {
    let out = ok(&["dump", d]);
    let mut found = Vec::new();
    let mut rest = out.as_str();
    while let Some(at) = rest.find("\"value\":\"") {
        rest = &rest[at + 9..];
        let end = rest.find('"').unwrap();
        found.push(rest[..end].to_string());
        rest = &rest[end..];
    }
    found
}

#[test]
fn a_symlinked_log_stays_a_link_to_the_compacted_log() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink("real", &link).unwrap();
    let d = link.to_str().unwrap();
    fill(d, 0..6);
    let report = compact(d);
    assert!(report.contains(r#""compacted":true"#), "{report}");
    assert!(
        !report.contains(r#""records_before":0,"#),
        "nothing was cleaned: {report}"
    );

    // The link is still a link to the same directory, and nothing else appeared
    // but the writer lock's file, beside the real directory (so a writer through
    // the link and one through the target share one lock).
    let meta = std::fs::symlink_metadata(&link).unwrap();
    assert!(meta.file_type().is_symlink(), "compact replaced the link");
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("real"));
    assert_eq!(
        names(tmp.path()),
        BTreeSet::from([
            "link".to_string(),
            "real".to_string(),
            "real.lock".to_string()
        ])
    );
    // The target holds the compacted log: one record left, and no file of it is
    // a second name of another (the old copy sharing the active segment's inode).
    let left = values(d);
    assert!(left.len() < 6 && left.last().unwrap() == "v5", "{left:?}");
    assert_eq!(values(real.to_str().unwrap()), left);
    for name in names(&real) {
        let nlink = std::fs::metadata(real.join(&name)).unwrap().nlink();
        assert_eq!(nlink, 1, "{name} has {nlink} names");
    }

    // The other writable commands work through the link too, and keep it.
    fill(d, 6..9);
    ok(&["roll", d]);
    ok(&["retain", d, "--now", "0", "--retention-bytes", "1"]);
    ok(&["recover", d]);
    compact(d);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        names(tmp.path()),
        BTreeSet::from([
            "link".to_string(),
            "real".to_string(),
            "real.lock".to_string()
        ])
    );
}

#[test]
fn dot_and_trailing_slash_name_the_same_log() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p-0");
    let d = dir.to_str().unwrap();
    fill(d, 0..6);
    for spelled in [format!("{d}/."), format!("{d}/"), format!("{d}/../p-0/")] {
        fill(&spelled, 0..3);
        let before = values(d);
        let report = compact(&spelled);
        assert!(
            report.contains(r#""compacted":true"#),
            "{spelled}: {report}"
        );
        let after = values(d);
        assert!(after.len() < before.len(), "{spelled}: {after:?}");
        assert_eq!(after.last().unwrap(), "v2", "{spelled}");
        assert_eq!(
            names(tmp.path()),
            BTreeSet::from(["p-0".to_string(), "p-0.lock".to_string()]),
            "{spelled} left a sibling"
        );
    }
}

#[test]
fn a_name_too_long_for_the_install_siblings_is_refused_before_anything() {
    let tmp = tempfile::tempdir().unwrap();
    // 240 bytes (Kafka allows 249 for a topic): `D.compact-tmp` fits 255 bytes,
    // `D.compact-manifest.tmp` (261) does not.
    let name = "t".repeat(240);
    let dir = tmp.path().join(&name);
    let d = dir.to_str().unwrap();
    fill(d, 0..6);
    let parent_before = names(tmp.path());
    let log_before = names(&dir);
    let out = seglog(&["compact", d, "--now", "0", "--delete-retention-ms", "0"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(d), "{stderr} does not name the path");
    assert!(stderr.contains("255"), "{stderr} does not name the limit");
    assert_eq!(
        names(tmp.path()),
        parent_before,
        "compact created a sibling"
    );
    let log_after = names(&dir);
    assert!(
        log_after.is_subset(&log_before),
        "compact created {:?}",
        log_after.difference(&log_before).collect::<Vec<_>>()
    );
    assert_eq!(values(d).len(), 6);

    // A name whose longest sibling is exactly 255 bytes compacts.
    let name = "u".repeat(255 - ".compact-manifest.tmp".len());
    let dir = tmp.path().join(&name);
    let d = dir.to_str().unwrap();
    fill(d, 0..6);
    compact(d);
    let left = values(d);
    assert!(left.len() < 6 && left.last().unwrap() == "v5", "{left:?}");
}

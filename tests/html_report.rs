//! `seglog replay FILE --html OUT` (and `verify --html`, in `tests/shard_junit.rs`):
//! the page is self-contained, escapes what the run prints, and shows for a failure
//! the operation timeline with the call the crash image lost, the directory trees,
//! and the expected against the recovered records.

use std::path::Path;
use std::process::Command;

fn replay_html(args: &[&str], out: &Path) -> (i32, String) {
    let status = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("replay")
        .args(args)
        .arg("--html")
        .arg(out)
        .output()
        .expect("run seglog replay");
    let page = std::fs::read_to_string(out).expect("the page is written");
    (status.status.code().unwrap_or(-1), page)
}

fn assert_self_contained(page: &str) {
    assert!(page.starts_with("<!DOCTYPE html>"));
    for external in ["http:", "https:", "src=", "<script", "<link", "@import"] {
        assert!(!page.contains(external), "the page holds {external:?}");
    }
}

/// The `no-dir-sync` variant loses the manifest's rename: the page must name that
/// call as lost, the later calls as kept, and show the records recovery should
/// have kept beside its failure.
#[cfg(feature = "test-variants")]
#[test]
fn replay_page_names_the_lost_rename_and_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("replay.html");
    let (code, page) = replay_html(
        &["crash-scenarios/no-dir-sync-loses-manifest-rename.toml"],
        &out,
    );
    assert_eq!(code, 0, "the scenario expects this violation");
    assert_self_contained(&page);
    assert!(page.contains("VIOLATION (expected)"), "{page}");
    let lost_rows: Vec<&str> = page
        .lines()
        .filter(|l| l.starts_with("<tr class=\"lost\">"))
        .collect();
    assert_eq!(lost_rows.len(), 1, "{lost_rows:?}");
    assert!(
        lost_rows[0]
            .contains("rename /data/log.compact-manifest.tmp -&gt; /data/log.compact-manifest"),
        "{}",
        lost_rows[0]
    );
    // The crash's own call ends the timeline: the rename of the temp dir to live.
    let failed: Vec<&str> = page
        .lines()
        .filter(|l| l.starts_with("<tr class=\"failed\">"))
        .collect();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].contains("rename /data/log.compact-tmp -&gt; /data/log"));
    // The summary names the same call as the crash point.
    let crash_op = failed[0]
        .trim_start_matches("<tr class=\"failed\"><td>")
        .split("</td>")
        .next()
        .unwrap();
    assert!(crash_op.parse::<u64>().is_ok(), "{}", failed[0]);
    assert!(page.contains(&format!("crash before file-system operation {crash_op}")));
    let kept = page
        .lines()
        .filter(|l| l.starts_with("<tr class=\"kept\">"));
    assert!(kept
        .clone()
        .any(|l| l.contains("rename /data/log -&gt; /data/log.compact-bak")));
    // Trees: the backup and the temp dir at the crash, nothing after a failed recovery.
    assert!(page.contains("/data/log.compact-bak/00000000000000000000.log</td><td>79<"));
    assert!(page.contains("/data/log.compact-tmp</td><td>dir<"));
    assert!(page.contains("recovery failed: ambiguous state"));
    for record in [
        "0 key=&quot;a&quot; value=&quot;1&quot; ts=0",
        "4 key=&quot;active&quot; value=&quot;keep&quot; ts=4",
    ] {
        assert!(page.contains(record), "{record}");
    }
}

/// A scenario that fails against our protocol (it wants the old state, recovery
/// rolls forward) and whose file name is markup: the page escapes it and marks the
/// records that differ.
#[test]
fn replay_page_shows_a_failure_side_by_side_and_escapes_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(
        root.join("crash-scenarios/no-dir-sync-loses-manifest-rename.toml"),
    )
    .unwrap();
    let text = text
        .replace("variant = \"no-dir-sync\"", "variant = \"manifest\"")
        .replace("outcome = \"violation\"", "outcome = \"old\"")
        .replace("[expect.variants]\nmanifest = \"new\"\n", "");
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("wants-<script>'old'.toml");
    std::fs::write(&scenario, text).unwrap();
    let out = dir.path().join("replay.html");
    let (code, page) = replay_html(&[scenario.to_str().unwrap(), "--variant", "manifest"], &out);
    assert_eq!(code, 1, "the scenario must fail");
    assert_self_contained(&page);
    assert!(page.contains("FAIL "), "{page}");
    assert!(
        page.contains("expected <b>old</b>, got <b>new</b>"),
        "{page}"
    );
    assert!(page.contains("old vs recovered"), "the diff is shown");
    assert!(
        page.contains("wants-&lt;script&gt;&#39;old&#39;.toml"),
        "{page}"
    );
    // Compaction dropped the superseded `a=1`: that row differs.
    let differs: Vec<&str> = page
        .lines()
        .filter(|l| l.starts_with("<tr class=\"differs\">"))
        .collect();
    assert!(
        differs
            .iter()
            .any(|l| l.contains("0 key=&quot;a&quot; value=&quot;1&quot;")),
        "{differs:?}"
    );
    // Against ours the manifest's rename is durable: nothing is lost.
    assert!(!page.contains("<tr class=\"lost\">"));
    assert!(page.contains("after recovery"));
    assert!(page.contains("/data/log/00000000000000000000.log"));
}

/// A scenario whose recovery is itself cut by a power loss
/// (`install-power-loss-during-recovery`, made to fail by expecting the old log):
/// the page shows every recovery of the crash image, each with its own timeline and
/// trees: the first ends in its crash and names its own rename as lost, the second
/// runs to its end from the image that crash left, and the records shown are the
/// second one's.
#[test]
fn replay_page_shows_every_recovery_of_a_nested_crash() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(
        root.join("crash-scenarios/install-power-loss-during-recovery.toml"),
    )
    .unwrap();
    assert!(text.contains("recovery_lost = ["), "a nested power loss");
    let text = text.replace("outcome = \"new\"", "outcome = \"old\"");
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("nested.toml");
    std::fs::write(&scenario, text).unwrap();
    let out = dir.path().join("replay.html");
    let (code, page) = replay_html(&[scenario.to_str().unwrap()], &out);
    assert_eq!(code, 1, "the scenario must fail");
    assert_self_contained(&page);
    assert!(!page.contains("shows the first recovery"), "no caveat left");
    // Both recoveries, in order, each a section of its own.
    let first = page
        .find("<section class=\"recovery\" id=\"recovery-1\"><h3>Recovery 1 of 2: crashed before its file-system operation 2 (a power loss)</h3>")
        .expect("recovery 1");
    let second = page
        .find("<section class=\"recovery\" id=\"recovery-2\"><h3>Recovery 2 of 2: ran to its end")
        .expect("recovery 2");
    assert!(first < second);
    assert!(!page.contains("id=\"recovery-3\""));
    let one = &page[first..second];
    let two = &page[second..page[second..].find("</section>").unwrap() + second];
    // Recovery 1: its rename of the temp dir to live is lost, its sync is the crash.
    let lost: Vec<&str> = one
        .lines()
        .filter(|l| l.starts_with("<tr class=\"lost\">"))
        .collect();
    assert_eq!(lost.len(), 1, "{one}");
    assert!(lost[0].contains("rename /data/log.compact-tmp -&gt; /data/log"));
    let failed: Vec<&str> = one
        .lines()
        .filter(|l| l.starts_with("<tr class=\"failed\">"))
        .collect();
    assert_eq!(failed.len(), 1, "{one}");
    assert!(failed[0].contains("sync_dir /data failed: simulated crash"));
    assert!(one.contains("dir-op seq=27 dir=/data op=rename log.compact-tmp -&gt; log"));
    // The image the power loss left has no live dir again: backup and temp dir.
    let after_one = &one[one.find("<b>after recovery 1</b>").unwrap()..];
    assert!(after_one.contains("/data/log.compact-bak</td><td>dir<"));
    assert!(after_one.contains("/data/log.compact-tmp</td><td>dir<"));
    assert!(!after_one.contains("<td class=\"mono\">/data/log</td>"));
    // Recovery 2 starts there, renames the temp dir again, and ends with live only.
    let before_two = &two[two.find("<b>before recovery 2</b>").unwrap()
        ..two.find("<b>after recovery 2</b>").unwrap()];
    assert!(before_two.contains("/data/log.compact-tmp</td><td>dir<"));
    assert!(two.contains("rename /data/log.compact-tmp -&gt; /data/log</td>"));
    assert!(!two.contains("failed: simulated crash"));
    let after_two = &two[two.find("<b>after recovery 2</b>").unwrap()..];
    assert!(after_two.contains("<td class=\"mono\">/data/log</td>"));
    assert!(!after_two.contains("compact-"), "{after_two}");
    // The records recovered are the compacted ones (offset 0 dropped).
    assert!(
        page.contains("expected <b>old</b>, got <b>new</b>"),
        "{page}"
    );
    assert!(page.lines().any(|l| l.starts_with("<tr class=\"differs\">")
        && l.contains("0 key=&quot;a&quot; value=&quot;1&quot;")));
}

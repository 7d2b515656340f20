//! `seglog dump` reads a log this process may read but not write: another user's
//! log, or one on a read-only mount, is what a read-only open is for.
//!
//! The failure: `StdFs` opened every file it caches for reading and appending, so
//! the read-only open of such a log failed on its first file ("Permission denied"
//! on the recovery point). The invariant: a file that may not be opened for
//! writing is opened for reading, and the dump equals the writer's own; the
//! log's files are left as they were.
//!
//! Run as root (permissions do not bind root), the dump runs as `nobody`
//! (uid 65534); else as this user, on files made read-only.
#![cfg(target_os = "linux")]

mod cli_support;

use std::fs::Permissions;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// 40 one-record batches, a segment each at `--segment-bytes 300`.
fn batch_file(path: &std::path::Path) {
    let lines: String = (0..40)
        .map(|i| {
            format!(
                "[{{\"key\":\"k{i}\",\"value\":\"{}\",\"ts\":{i}}}]\n",
                "v".repeat(100)
            )
        })
        .collect();
    std::fs::write(path, lines).unwrap();
}

#[test]
fn dump_reads_a_log_it_may_not_write() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::set_permissions(root, Permissions::from_mode(0o755)).unwrap();
    let batches = root.join("batches.jsonl");
    batch_file(&batches);
    let dir = root.join("log");
    let dir_str = dir.to_str().unwrap();
    cli_support::ok(&[
        "append",
        dir_str,
        "--segment-bytes",
        "300",
        "--batch-file",
        batches.to_str().unwrap(),
    ]);
    let expected = cli_support::ok(&["dump", dir_str, "--from", "0"]);
    let before = cli_support::snapshot(&dir);
    assert!(before.len() > 40, "{} files", before.len());
    for name in before.keys() {
        std::fs::set_permissions(dir.join(name), Permissions::from_mode(0o444)).unwrap();
    }
    std::fs::set_permissions(&dir, Permissions::from_mode(0o555)).unwrap();
    let mut dump = Command::new(env!("CARGO_BIN_EXE_seglog"));
    dump.args(["dump", dir_str, "--from", "0"]);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        dump.uid(65534).gid(65534);
    }
    let out = dump.output().unwrap();
    std::fs::set_permissions(&dir, Permissions::from_mode(0o755)).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    assert_eq!(cli_support::snapshot(&dir), before);
}

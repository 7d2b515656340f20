//! `roll`, `recover` (and the other commands but `append`) on a mistyped path
//! created a new empty log there and reported success. Only `append` creates a
//! log: every other command refuses a path with no log (nor an install's temp dir,
//! backup or manifest beside it) with exit 2 and an error naming the path, and the
//! path still does not exist afterwards.

use std::process::{Command, Output};

fn seglog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(args)
        .output()
        .expect("run seglog")
}

#[test]
fn commands_other_than_append_refuse_a_missing_log_and_create_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("typo");
    let d = dir.to_str().unwrap();
    let commands: [&[&str]; 6] = [
        &["roll", d],
        &["recover", d],
        &["dump", d],
        &["retain", d, "--now", "0", "--retention-bytes", "1"],
        &["compact", d, "--now", "0", "--delete-retention-ms", "0"],
        &[
            "compact",
            d,
            "--now",
            "0",
            "--delete-retention-ms",
            "0",
            "--if-dirty",
        ],
    ];
    for args in commands {
        let out = seglog(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains(d),
            "{args:?}: {stderr:?} does not name the path"
        );
        assert!(!dir.exists(), "{args:?} created {d}");
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "{args:?}"
        );
    }
    // `append` still creates a log, and then every command finds it.
    let out = seglog(&["append", d, "--batch", r#"[{"ts":1}]"#]);
    assert_eq!(out.status.code(), Some(0));
    for args in commands {
        let out = seglog(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

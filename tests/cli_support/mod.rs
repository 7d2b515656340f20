//! What the CLI tests share: running the `seglog` binary and reading a directory.
#![allow(dead_code)] // each test binary uses a part of it

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

/// Runs the `seglog` binary built for these tests with `args`.
pub fn seglog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(args)
        .output()
        .expect("run seglog")
}

/// Runs `seglog args`, which must exit 0; its stdout.
pub fn ok(args: &[&str]) -> String {
    let out = seglog(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every file directly in `dir`, by name, with its bytes.
pub fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

//! What the open tests share: the three ways to open a log and a directory's files.
#![allow(dead_code)] // each test binary uses a part of it

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use seglog::fs::FileSystem;
use seglog::log::RecoveryReport;
use seglog::{Log, LogConfig};

/// One way to open a log.
pub type Open = fn(Arc<dyn FileSystem>, &Path, LogConfig) -> seglog::Result<(Log, RecoveryReport)>;

/// Every open, by name: writable, checked (`seglog recover`), read-only (`seglog dump`).
pub const OPENS: [(&str, Open); 3] = [
    ("writable", |fs, dir, config| {
        Log::open_with(fs, dir, config)
    }),
    ("checked", |fs, dir, config| {
        Log::open_checked(fs, dir, config)
    }),
    ("read-only", |fs, dir, config| {
        Log::open_read_only(fs, dir, config)
    }),
];

/// Every entry of `dir` with its bytes (`None`: a directory).
pub fn files(fs: &dyn FileSystem, dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    fs.list_dir(dir)
        .unwrap()
        .into_iter()
        .map(|name| {
            let path = dir.join(&name);
            let bytes = (!fs.is_dir(&path)).then(|| fs.read_all(&path).unwrap());
            (name, bytes)
        })
        .collect()
}

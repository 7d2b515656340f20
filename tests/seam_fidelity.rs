//! Seam fidelity: the real `seglog` binary, run under `strace -f`, makes exactly the
//! file-system system calls that the `FileSystem` operations it issued through the
//! seam account for, in the same order (the seam's own trace: `SEGLOG_TRACE_FS`).
//! A call the seam does not see (a library, `std`, a path around the trait) would
//! make every crash-sweep result about a different program.
//!
//! Compared, for paths under the test's directory: `mkdir` (a run of them is one
//! `create_dir_all`), `open` with `O_CREAT` (`create_file`), `write` (`append`),
//! `ftruncate` (`set_len`), `fsync`/`fdatasync` (`sync_file`, `sync_dir`),
//! `rename`, `link`/`linkat` (`hard_link`), `unlink` (`remove_file`), the `unlinkat`s and final `rmdir` of a
//! directory (`remove_dir_all`), and the writer lock (`try_lock`: an `open` with
//! `O_CREAT`, then `flock(LOCK_EX|LOCK_NB)` on that descriptor). Skipped only where `strace` is missing and
//! `SEGLOG_REQUIRE_STRACE` is unset (`.ci/run` sets it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One file-system effect, as both sides are reduced to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Effect {
    CreateDirAll(String),
    CreateFile(String),
    Append(String, u64),
    SetLen(String, u64),
    Sync(String),
    Rename(String, String),
    HardLink(String, String),
    RemoveFile(String),
    RemoveDirAll(String),
    Lock(String),
}

fn strace_available() -> bool {
    Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn seglog(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(args)
        .output()
        .expect("run seglog");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `seglog args` under strace with the seam's trace on; both sides' effects
/// on paths under `root`.
fn traced_run(root: &Path, args: &[&str]) -> (Vec<Effect>, Vec<Effect>) {
    let scratch = tempfile::tempdir().unwrap();
    let trace = scratch.path().join("seam.json");
    let strace_out = scratch.path().join("strace.txt");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-s", "0", "-o"])
        .arg(&strace_out)
        .args([
            "-e",
            "trace=open,openat,creat,write,pwrite64,writev,fsync,fdatasync,rename,renameat,\
             renameat2,link,linkat,unlink,unlinkat,mkdir,mkdirat,rmdir,ftruncate,close,dup,dup2,dup3,\
             flock",
        ])
        .arg(env!("CARGO_BIN_EXE_seglog"))
        .args(args)
        .env("SEGLOG_TRACE_FS", &trace)
        .output()
        .expect("run strace");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seam_text = std::fs::read_to_string(&trace).expect("the seam's trace");
    let seam: Vec<serde_json::Value> = serde_json::from_str(&seam_text).unwrap();
    let syscalls = std::fs::read_to_string(&strace_out).unwrap();
    let root = root.display().to_string();
    (
        seam_effects(&seam, &root),
        syscall_effects(&syscalls, &root),
    )
}

fn seam_effects(ops: &[serde_json::Value], root: &str) -> Vec<Effect> {
    let mut out = Vec::new();
    for op in ops {
        if !op["error"].is_null() {
            continue; // a failed call changed nothing
        }
        let path = op["path"].as_str().unwrap().to_string();
        if !path.starts_with(root) {
            continue;
        }
        let bytes = op["bytes"].as_u64().unwrap_or_default();
        if op["call"] == "append" && bytes == 0 {
            // `write_all` of nothing makes no system call, and changes nothing (the
            // compaction's rebuilt empty offset indexes).
            continue;
        }
        out.push(match op["call"].as_str().unwrap() {
            "create_dir_all" => Effect::CreateDirAll(path),
            "create_file" => Effect::CreateFile(path),
            "append" => Effect::Append(path, bytes),
            "set_len" => Effect::SetLen(path, bytes),
            "sync_file" | "sync_dir" => Effect::Sync(path),
            "rename" => Effect::Rename(path, op["to"].as_str().unwrap().to_string()),
            "hard_link" => Effect::HardLink(path, op["to"].as_str().unwrap().to_string()),
            "remove_file" => Effect::RemoveFile(path),
            "remove_dir_all" => Effect::RemoveDirAll(path),
            "lock" => Effect::Lock(path),
            other => panic!("unknown call {other}"),
        });
    }
    out
}

/// The quoted strings of a strace argument list, in order.
fn quoted(args: &str) -> Vec<String> {
    args.split('"')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

fn syscall_effects(text: &str, root: &str) -> Vec<Effect> {
    let mut fds: HashMap<i64, String> = HashMap::new();
    let mut raw = Vec::new();
    for line in text.lines() {
        // "PID name(args) = result"
        let line = line.split_once(' ').map_or(line, |(_, rest)| rest).trim();
        let Some((call, rest)) = line.split_once('(') else {
            continue;
        };
        // strace pads between the arguments and " = result".
        let Some((args, result)) = rest.rsplit_once(')') else {
            continue;
        };
        let Some(result) = result.trim_start().strip_prefix('=') else {
            continue;
        };
        let result: i64 = result
            .split_whitespace()
            .next()
            .and_then(|r| r.parse().ok())
            .unwrap_or(-1);
        let first_int = || {
            args.split(',')
                .next()
                .and_then(|a| a.trim().parse::<i64>().ok())
                .unwrap_or(-1)
        };
        let paths = quoted(args);
        // A path relative to a directory fd (the *at calls).
        let at = |name: &str| -> String {
            if name.starts_with('/') {
                return name.to_string();
            }
            let dirfd = first_int();
            let dir = fds.get(&dirfd).cloned().unwrap_or_default();
            format!("{dir}/{name}")
        };
        match call {
            "open" | "openat" | "creat" if result >= 0 => {
                let path = at(&paths[0]);
                if args.contains("O_CREAT") || call == "creat" {
                    raw.push(Effect::CreateFile(path.clone()));
                }
                fds.insert(result, path);
            }
            "close" => {
                fds.remove(&first_int());
            }
            "dup" | "dup2" | "dup3" if result >= 0 => {
                if let Some(p) = fds.get(&first_int()).cloned() {
                    fds.insert(result, p);
                }
            }
            "write" | "pwrite64" | "writev" if result >= 0 => {
                if let Some(p) = fds.get(&first_int()) {
                    raw.push(Effect::Append(p.clone(), result as u64));
                }
            }
            "ftruncate" if result == 0 => {
                let len = args.rsplit(',').next().unwrap().trim().parse().unwrap();
                if let Some(p) = fds.get(&first_int()) {
                    raw.push(Effect::SetLen(p.clone(), len));
                }
            }
            // try_lock: the O_CREAT open of the lock file and its flock are one call.
            "flock" if result == 0 && args.contains("LOCK_EX") => {
                if let Some(p) = fds.get(&first_int()).cloned() {
                    if raw.last() == Some(&Effect::CreateFile(p.clone())) {
                        raw.pop();
                    }
                    raw.push(Effect::Lock(p));
                }
            }
            "fsync" | "fdatasync" if result == 0 => {
                if let Some(p) = fds.get(&first_int()) {
                    raw.push(Effect::Sync(p.clone()));
                }
            }
            "rename" | "renameat" | "renameat2" if result == 0 => {
                raw.push(Effect::Rename(paths[0].clone(), paths[1].clone()));
            }
            // std::fs::hard_link: linkat(AT_FDCWD, from, AT_FDCWD, to, 0).
            "link" | "linkat" if result == 0 => {
                raw.push(Effect::HardLink(paths[0].clone(), paths[1].clone()));
            }
            "unlink" if result == 0 => raw.push(Effect::RemoveFile(paths[0].clone())),
            "unlinkat" if result == 0 => {
                let path = at(&paths[0]);
                raw.push(if args.contains("AT_REMOVEDIR") {
                    Effect::RemoveDirAll(path)
                } else {
                    Effect::RemoveFile(path)
                });
            }
            "rmdir" if result == 0 => raw.push(Effect::RemoveDirAll(paths[0].clone())),
            // A failed mkdir (EEXIST) is still the one call create_dir_all made.
            "mkdir" | "mkdirat" => raw.push(Effect::CreateDirAll(at(&paths[0]))),
            _ => {}
        }
    }
    let raw: Vec<Effect> = raw
        .into_iter()
        .filter(|e| match e {
            Effect::CreateDirAll(p)
            | Effect::CreateFile(p)
            | Effect::Append(p, _)
            | Effect::SetLen(p, _)
            | Effect::Sync(p)
            | Effect::Rename(p, _)
            | Effect::HardLink(p, _)
            | Effect::RemoveFile(p)
            | Effect::RemoveDirAll(p)
            | Effect::Lock(p) => p.starts_with(root),
        })
        .collect();
    collapse(raw)
}

/// One `create_dir_all` is a run of `mkdir`s down to its path; one
/// `remove_dir_all` is the removals inside a directory, then the directory.
fn collapse(raw: Vec<Effect>) -> Vec<Effect> {
    let mut out: Vec<Effect> = Vec::new();
    let inside = |p: &str, dir: &str| Path::new(p).starts_with(dir) && p != dir;
    for effect in raw {
        match &effect {
            Effect::CreateDirAll(p) => {
                while let Some(Effect::CreateDirAll(prev)) = out.last() {
                    if Path::new(p).starts_with(prev) && p != prev {
                        out.pop();
                    } else {
                        break;
                    }
                }
            }
            Effect::RemoveDirAll(dir) => {
                while let Some(Effect::RemoveFile(p) | Effect::RemoveDirAll(p)) = out.last() {
                    if inside(p, dir) {
                        out.pop();
                    } else {
                        break;
                    }
                }
            }
            _ => {}
        }
        out.push(effect);
    }
    out
}

fn check(root: &Path, args: &[&str]) -> Vec<Effect> {
    let (seam, syscalls) = traced_run(root, args);
    assert!(!seam.is_empty(), "{args:?}: the seam saw nothing");
    // Every command checked here is a writable open: the writer lock comes first.
    assert!(
        matches!(seam.first(), Some(Effect::Lock(p)) if p.ends_with(".lock")),
        "{args:?}: the writer lock is not the first call: {seam:?}"
    );
    assert_eq!(
        seam, syscalls,
        "{args:?}: the seam's operations (left) and the binary's system calls (right) differ"
    );
    seam
}

fn check_len(root: &Path, args: &[&str]) -> usize {
    check(root, args).len()
}

fn dir_arg(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn the_binary_makes_exactly_the_seams_file_system_calls() {
    if !strace_available() {
        assert!(
            std::env::var_os("SEGLOG_REQUIRE_STRACE").is_none(),
            "SEGLOG_REQUIRE_STRACE is set but strace is missing"
        );
        eprintln!("skipped: strace is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let log: PathBuf = root.join("orders-0");
    let d = dir_arg(&log);
    let batch = |key: &str, ts: i64| format!(r#"[{{"key":"{key}","value":"v{ts}","ts":{ts}}}]"#);
    let mut checked = 0;
    // append: a new log (mkdir, files, checkpoint), then an existing one.
    checked += check_len(&root, &["append", &d, "--batch", &batch("a", 0)]);
    checked += check_len(&root, &["append", &d, "--batch", &batch("a", 1)]);
    // append --raw-file: producer batches, each written as its rewritten header and
    // the caller's records in one `writev` (`FileSystem::append_vectored`).
    let raw = root.join("request.bin");
    let spec = |key: &str, ts: i64| seglog_suite::workload::RawBatchSpec {
        records: vec![seglog_suite::workload::RecordSpec {
            key: Some(key.into()),
            value: Some(format!("raw{ts}")),
            ts,
        }],
        codec: None,
        defect: None,
    };
    std::fs::write(
        &raw,
        seglog_suite::workload::raw::encode_request(&[spec("r", 1), spec("s", 1), spec("r", 1)]),
    )
    .unwrap();
    checked += check_len(&root, &["append", &d, "--raw-file", raw.to_str().unwrap()]);
    std::fs::remove_file(&raw).unwrap();
    // roll
    checked += check_len(&root, &["roll", &d]);
    seglog(&["append", &d, "--batch", &batch("b", 2)]);
    seglog(&["roll", &d]);
    seglog(&["append", &d, "--batch", &batch("a", 3)]);
    // compact: the install protocol (temp dir, manifest, renames, remove_dir_all).
    checked += check_len(
        &root,
        &[
            "compact",
            &d,
            "--now",
            "10",
            "--delete-retention-ms",
            "1000",
        ],
    );
    // retain: checkpoint first, then unlinks.
    seglog(&["roll", &d]);
    checked += check_len(
        &root,
        &["retain", &d, "--now", "100000", "--retention-ms", "10"],
    );
    // recover, clean.
    checked += check_len(&root, &["recover", &d]);
    // recover after a torn tail: garbage after the active segment's last batch.
    let active = std::fs::read_dir(&log)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .max()
        .unwrap();
    let mut bytes = std::fs::read(&active).unwrap();
    let bytes_before = bytes.len() as u64;
    bytes.extend_from_slice(&[0xab; 7]);
    std::fs::write(&active, bytes).unwrap();
    let torn = check(&root, &["recover", &d]);
    assert!(
        torn.contains(&Effect::SetLen(dir_arg(&active), bytes_before)),
        "the torn tail was not cut: {torn:?}"
    );
    checked += torn.len();
    // recover after leftovers: a compaction temp dir and a manifest temp file.
    let tmp_dir = root.join("orders-0.compact-tmp");
    std::fs::create_dir(&tmp_dir).unwrap();
    std::fs::write(tmp_dir.join("00000000000000000000.log"), b"partial").unwrap();
    std::fs::write(root.join("orders-0.compact-manifest.tmp"), b"partial").unwrap();
    let leftovers = check(&root, &["recover", &d]);
    assert!(
        leftovers.contains(&Effect::RemoveDirAll(dir_arg(&tmp_dir))),
        "{leftovers:?}"
    );
    checked += leftovers.len();
    // recover after leftovers in the log dir: a checkpoint's temp file.
    let checkpoint_tmp = log.join("recovery-point.checkpoint.tmp");
    std::fs::write(&checkpoint_tmp, b"partial").unwrap();
    let removed = check(&root, &["recover", &d]);
    assert!(
        removed.contains(&Effect::RemoveFile(dir_arg(&checkpoint_tmp))),
        "{removed:?}"
    );
    checked += removed.len();
    assert!(checked > 50, "{checked} operations compared");
}

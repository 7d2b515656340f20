//! A log of 400 one-batch segments under a process limit of 64 descriptors.
//!
//! The failure: `StdFs` kept an open handle for every file it had touched, so a
//! command that visits every segment (a dump, a recovery, a compaction) held one
//! descriptor per `.log`, `.index` and `.timeindex`, and every CLI command on such
//! a log failed under `ulimit -n 64` with `Too many open files` (EMFILE).
//!
//! The invariant: the descriptors a log holds do not grow with its segment count.
//! Each command run under the limit prints what the same command prints without
//! it, on a copy of the same log, and leaves the same bytes on disk.
//!
//! The fix: `StdFs` keeps at most a budget of handles (least recently used out,
//! `StdFs::with_open_files_max`), and an open that finds the process out of
//! descriptors closes the cached handles and tries once more, so a limit below the
//! budget costs reopens instead of failures.
//!
//! The budget is the log's: `LogConfig::max_open_files`, which `Log::open` and
//! the log commands (`--max-open-files`) build their file system with, so a
//! command given 8 keeps within 8 descriptors plus the writer lock and the active
//! segment's unsynced files, and prints what it prints with the default.
#![cfg(target_os = "linux")]

mod cli_support;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use seglog::fs::StdFs;
use seglog::{Log, LogConfig};

/// The soft and hard `RLIMIT_NOFILE` of the limited runs.
const DESCRIPTORS_MAX: u64 = 64;

const SEGMENTS: usize = 400;

/// Fields of a command's JSON that differ between runs of the same command on
/// copies of the same log, with no limit at all: `compact`'s `map_bytes_peak`
/// (the offset map's peak memory, which depends on how its keys hash under the
/// process's random key, not on what the compaction keeps).
const VARYING_FIELDS: &[&str] = &["map_bytes_peak"];

/// Small enough that each batch of [`batch_file`] fills a segment.
const SEGMENT_BYTES: &str = "300";

/// [`SEGMENTS`] lines, one batch of two records each, 50 keys in turn, timestamps
/// 1,000 to 1,399.
fn batch_file(path: &Path) {
    let lines: Vec<String> = (0..SEGMENTS)
        .map(|i| {
            serde_json::json!([
                {"key": format!("k{}", i % 50), "value": format!("{}{i}", "v".repeat(120)), "ts": 1000 + i},
                {"key": format!("k{}", (i + 7) % 50), "value": "w".repeat(100), "ts": 1000 + i},
            ])
            .to_string()
        })
        .collect();
    std::fs::write(path, lines.join("\n")).unwrap();
}

/// Runs `seglog args`, with `RLIMIT_NOFILE` at `limit` if there is one.
fn seglog(args: &[&str], limit: Option<u64>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_seglog"));
    command.args(args);
    if let Some(limit) = limit {
        // SAFETY: `setrlimit` is async-signal-safe and changes only the child.
        unsafe {
            command.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    command.output().expect("run seglog")
}

/// A built log of [`SEGMENTS`] segments, and a copy of it.
fn two_logs(root: &Path) -> (PathBuf, PathBuf) {
    let batches = root.join("many.jsonl");
    batch_file(&batches);
    let limited = root.join("limited");
    let free = root.join("free");
    cli_support::ok(&[
        "append",
        free.to_str().unwrap(),
        "--segment-bytes",
        SEGMENT_BYTES,
        "--batch-file",
        batches.to_str().unwrap(),
    ]);
    std::fs::create_dir(&limited).unwrap();
    for (name, bytes) in cli_support::snapshot(&free) {
        std::fs::write(limited.join(name), bytes).unwrap();
    }
    let logs = cli_support::snapshot(&free)
        .keys()
        .filter(|name| name.ends_with(".log"))
        .count();
    assert_eq!(logs, SEGMENTS);
    (limited, free)
}

/// Exit code, JSON (less [`VARYING_FIELDS`]) and stderr of one command, the
/// directory's path replaced by `<dir>`.
type Outcome = (Option<i32>, Option<serde_json::Value>, String);

/// Runs `command` (its name, then its flags) on `dir` with `RLIMIT_NOFILE` at
/// `limit` if there is one.
fn outcome(dir: &Path, command: &[&str], limit: Option<u64>) -> Outcome {
    let (name, rest) = command.split_first().unwrap();
    let mut args = vec![
        *name,
        dir.to_str().unwrap(),
        "--segment-bytes",
        SEGMENT_BYTES,
    ];
    args.extend_from_slice(rest);
    let out = seglog(&args, limit);
    let dir_text = dir.to_str().unwrap();
    let stdout = String::from_utf8(out.stdout)
        .unwrap()
        .replace(dir_text, "<dir>");
    let stderr = String::from_utf8(out.stderr)
        .unwrap()
        .replace(dir_text, "<dir>");
    let mut json: Option<serde_json::Value> = serde_json::from_str(&stdout).ok();
    if let Some(serde_json::Value::Object(fields)) = &mut json {
        for field in VARYING_FIELDS {
            fields.remove(*field);
        }
    }
    (out.status.code(), json, stderr)
}

/// `got` (a limited run of `command`) is `expected` (the unlimited run), which
/// succeeded and printed JSON.
fn assert_same_outcome(command: &[&str], got: &Outcome, expected: &Outcome) {
    assert_eq!(
        expected.0,
        Some(0),
        "{command:?} without a limit: {}",
        expected.2
    );
    assert!(expected.1.is_some(), "{command:?} printed JSON");
    if got != expected {
        let head = |json: &Option<serde_json::Value>| {
            let text = json.as_ref().map(|j| j.to_string()).unwrap_or_default();
            text.chars().take(300).collect::<String>()
        };
        panic!(
            "{command:?} under a limit: exit {:?}, stderr {:?}, stdout {}\n\
             without a limit: exit {:?}, stderr {:?}, stdout {}",
            got.0,
            got.2,
            head(&got.1),
            expected.0,
            expected.2,
            head(&expected.1),
        );
    }
}

/// Every command, each run on one log under the limit and on its copy without,
/// prints the same JSON and exits the same, and the two logs end byte for byte
/// the same.
#[test]
fn every_command_on_400_segments_works_under_64_descriptors() {
    let root = tempfile::tempdir().unwrap();
    let (limited, free) = two_logs(root.path());
    let commands: [&[&str]; 8] = [
        &["dump", "--from", "0"],
        &["recover"],
        &[
            "append",
            "--batch",
            r#"[{"key":"z","value":"1","ts":5000}]"#,
        ],
        &["roll"],
        &["dump", "--from", "0", "--isolation", "read_committed"],
        // Half the segments are older than `now - retention_ms`.
        &["retain", "--now", "10000", "--retention-ms", "8800"],
        &["compact", "--now", "10000", "--delete-retention-ms", "100"],
        &["dump"],
    ];
    for command in commands {
        let expected = outcome(&free, command, None);
        let got = outcome(&limited, command, Some(DESCRIPTORS_MAX));
        assert_same_outcome(command, &got, &expected);
    }
    let (limited, free) = (
        cli_support::snapshot(&limited),
        cli_support::snapshot(&free),
    );
    assert_eq!(
        limited.keys().collect::<Vec<_>>(),
        free.keys().collect::<Vec<_>>()
    );
    assert!(limited == free, "the two logs' bytes differ");
}

/// How many of this process's descriptors are open on files under `dir`.
fn descriptors_under(dir: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter(|target| target.starts_with(dir))
        .count()
}

/// Every record of a writable open of `dir` through `fs`, read in small steps
/// (so every segment is visited); the descriptors open under `dir` after.
fn read_all_descriptors(fs: StdFs, dir: &Path) -> usize {
    let (log, _) = Log::open_checked(Arc::new(fs), dir, config()).unwrap();
    read_all_held(log, dir)
}

/// The log's configuration (the default budget).
fn config() -> LogConfig {
    LogConfig {
        segment_bytes: SEGMENT_BYTES.parse().unwrap(),
        ..LogConfig::default()
    }
}

/// Reads every record of `log` (of `dir`) in small steps, so every segment is
/// visited; the descriptors open under `dir` after (the log is closed, and none
/// is left).
fn read_all_held(log: Log, dir: &Path) -> usize {
    let mut from = 0;
    let mut records = 0;
    while let Some(last) = log.read(from, 1000).unwrap().last() {
        records = last.offset + 1;
        from = last.offset + 1;
    }
    assert_eq!(records, 2 * SEGMENTS as i64);
    let open = descriptors_under(dir);
    log.close().unwrap();
    assert_eq!(descriptors_under(dir), 0);
    open
}

/// The library's side: a checked open and a read of every record hold at most the
/// budget, plus the writer lock and the active segment's three files (whose
/// writes the open synced, so they count in the budget like any other); without a
/// budget they hold all of the log's files.
#[test]
fn a_checked_open_and_a_full_read_hold_the_budget() {
    let root = tempfile::tempdir().unwrap();
    let (log, _) = two_logs(root.path());
    let log = log.canonicalize().unwrap();
    let budget = 16;
    let bounded = read_all_descriptors(StdFs::with_open_files_max(budget), &log);
    let unbounded = read_all_descriptors(StdFs::with_open_files_max(usize::MAX), &log);
    eprintln!(
        "descriptors open on a {SEGMENTS}-segment log after a checked open and a full read: {bounded} with a budget of {budget}, {unbounded} without"
    );
    assert!(bounded <= budget + 1, "{bounded} descriptors");
    assert!(unbounded > 2 * SEGMENTS, "{unbounded} descriptors");
}

/// [`Log::open`] builds its own file system with the budget its configuration
/// names (`LogConfig::max_open_files`): a full read holds at most that many
/// descriptors plus the writer lock, where the default budget holds more.
#[test]
fn log_open_holds_the_budget_of_its_config() {
    let root = tempfile::tempdir().unwrap();
    let (log, _) = two_logs(root.path());
    let log = log.canonicalize().unwrap();
    let budget = 8;
    let small = LogConfig {
        max_open_files: budget,
        ..config()
    };
    let bounded = read_all_held(Log::open(&log, small).unwrap().0, &log);
    let default = read_all_held(Log::open(&log, config()).unwrap().0, &log);
    eprintln!(
        "descriptors open on a {SEGMENTS}-segment log after Log::open and a full read: {bounded} with max_open_files {budget}, {default} with the default"
    );
    assert!(bounded <= budget + 1, "{bounded} descriptors");
    assert!(default > budget + 1, "{default} descriptors");
}

/// The commands that visit every segment, given `--max-open-files 8` and run
/// under a process limit of 32 descriptors, print what they print with the
/// default budget and no limit, and leave the same bytes.
#[test]
fn commands_with_a_budget_of_8_work_under_32_descriptors() {
    let root = tempfile::tempdir().unwrap();
    let (limited, free) = two_logs(root.path());
    let commands: [&[&str]; 4] = [
        &["dump", "--from", "0"],
        &["recover"],
        &["compact", "--now", "10000", "--delete-retention-ms", "100"],
        &["dump", "--from", "0"],
    ];
    for command in commands {
        let expected = outcome(&free, command, None);
        let budgeted = [command, &["--max-open-files", "8"]].concat();
        let got = outcome(&limited, &budgeted, Some(32));
        assert_same_outcome(&budgeted, &got, &expected);
    }
    let (limited, free) = (
        cli_support::snapshot(&limited),
        cli_support::snapshot(&free),
    );
    assert!(limited == free, "the two logs' bytes differ");
}

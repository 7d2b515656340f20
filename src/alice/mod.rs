//! Crash states from the real binary's system calls, as ALICE builds them
//! (Pillai et al., "All File Systems Are Not Created Equal", OSDI 2014).
//!
//! The crash sweep (`sweep/`) crashes the engine at the `FileSystem` seam; seam
//! fidelity (`tests/seam_fidelity.rs`) shows the binary makes no other file-system
//! call. This closes the loop from the other side: the *input* is the kernel-visible
//! trace of the real `seglog` binary, not the seam's own record. For each command of
//! a workload (`append`, `roll`, `compact`, `retain`, run on a real directory):
//! 1. the directory is read before the command (`image::read_tree`: all durable);
//! 2. the command runs under `strace -f -xx`, and its file-system calls on the
//!    directory, write data included, are parsed (`strace.rs`);
//! 3. the calls are replayed, as `FileSystem` calls, on a `SimFs` seeded with the
//!    tree; before the first call, after each one, the power-loss images `SimFs`
//!    enumerates are the crash states: every prefix of the trace, with the losses
//!    of unsynced work a power loss allows (torn appends, unsynced directory
//!    operations dropped in any dependency-closed subset: docs/verification.md,
//!    "The simulated file system and its persistence model").
//!    It is the persistence model of the sweep, so the two differ in their input
//!    only. Identical images of one command are judged once;
//! 4. each state is laid out in a fresh real directory, `seglog recover` (the real
//!    binary) recovers it, and the tree it leaves is read back and opened read-only;
//! 5. the recovered log is held to the sweep's exact oracle (`sweep::States::
//!    exact_after_crash`: the one state the image's durable content dictates), and
//!    recovery must leave no install or temp leftovers, no invalid tail and no
//!    ignored checkpoint, and a second `seglog recover` must change no byte.
//!
//! Not done here (the sweep does them on `SimFs`): crashes nested in recovery, and
//! the append after a recovered process crash.

pub mod command;
pub mod image;
pub mod strace;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::sweep::oracle::ImageFacts;
use crate::sweep::{leftovers, Allowed, States, Workload, LOG_DIR};
use crate::workload::engine;
use seglog::fs::sim::{CrashMode, SimFs};
use seglog::fs::{FileSystem, StdFs};
use seglog::log::Log;

/// How hard to look, and with what.
#[derive(Debug, Clone)]
pub struct AliceOptions {
    /// The `seglog` binary traced and run for recovery.
    pub binary: PathBuf,
    /// The `strace` to trace it with.
    pub strace: PathBuf,
    /// Power-loss images per crash point (the first ones of `SimFs`'s fixed order).
    pub images_per_point: usize,
    /// Which directory operations a power loss may take.
    pub persistence: seglog::fs::sim::Persistence,
    /// Where the traced runs and the laid-out crash states live (a tmpfs keeps the
    /// binary's fsyncs cheap; what recovery does is the same on any file system).
    pub scratch: PathBuf,
}

/// The default [`AliceOptions::scratch`]: `/dev/shm` where it exists, else the
/// system's temp directory.
pub fn default_scratch() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// One crash state whose recovery was wrong.
#[derive(Debug, Clone, Serialize)]
pub struct Violation {
    pub workload: String,
    /// The workload operation whose command was traced.
    pub op: usize,
    /// The traced command (`append`, `compact`, ...).
    pub command: String,
    /// The crash came before this traced system call (0-based; `syscalls` = after all).
    pub crash_before_syscall: u64,
    /// The traced system call the crash came before, if any.
    pub syscall: Option<String>,
    /// What the power loss took away, on the simulated paths (`/data` is the run's
    /// root, `/data/log` the log).
    pub lost: Vec<String>,
    pub detail: String,
}

/// One traced command.
#[derive(Debug, Clone, Serialize)]
pub struct Traced {
    /// The workload operation it performs.
    pub op: usize,
    pub command: String,
    pub syscalls: u64,
    /// Distinct crash states of its trace.
    pub states: u64,
}

/// Per-workload numbers.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WorkloadReport {
    pub workload: String,
    pub variant: String,
    /// Commands run under strace.
    pub commands: u64,
    /// Their file-system system calls on the log's directory.
    pub syscalls: u64,
    /// Crash points: before each call and after the last, per command.
    pub crash_points: u64,
    /// Distinct crash states recovered by the binary and judged.
    pub states: u64,
    pub violations: Vec<Violation>,
    pub seconds: f64,
    pub states_per_second: f64,
    /// Each command traced, in order.
    pub traced: Vec<Traced>,
}

/// True when `strace` runs.
pub fn strace_available(strace: &Path) -> bool {
    Command::new(strace)
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run_binary(options: &AliceOptions, args: &[String]) -> Result<String, String> {
    let out = Command::new(&options.binary)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", options.binary.display()))?;
    if !out.status.success() {
        return Err(format!(
            "`seglog {}` failed: {}",
            args.first().map_or("", String::as_str),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `args` under strace; the file-system calls under `root`.
fn traced(
    options: &AliceOptions,
    root: &Path,
    args: &[String],
) -> Result<Vec<strace::SysCall>, String> {
    let scratch = tempfile::tempdir_in(&options.scratch).map_err(|e| e.to_string())?;
    let trace = scratch.path().join("strace.txt");
    let out = Command::new(&options.strace)
        .args(["-f", "-qq", "-xx", "-s", "16777216", "-o"])
        .arg(&trace)
        .args(["-e", &format!("trace={}", strace::TRACED_CALLS)])
        .arg(&options.binary)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", options.strace.display()))?;
    if !out.status.success() {
        return Err(format!(
            "`seglog {}` under strace failed: {}",
            args.first().map_or("", String::as_str),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = StdFs::new()
        .read_all(&trace)
        .map_err(|e| format!("the trace {}: {e}", trace.display()))?;
    let text = String::from_utf8_lossy(&text);
    strace::parse(&text, root)
}

/// Runs the binary's recovery on `image` laid out on the real disk and judges it.
fn judge(
    options: &AliceOptions,
    workload: &Workload,
    allowed: &Allowed,
    image: &SimFs,
) -> Result<(), String> {
    let scratch = tempfile::tempdir_in(&options.scratch).map_err(|e| e.to_string())?;
    let root = scratch.path().to_path_buf();
    image::write_tree(image, &root).map_err(|e| format!("laying out the image: {e}"))?;
    let config = &workload.config;
    let log_dir = root.join("log");
    let args: Vec<String> = vec![
        "recover".into(),
        log_dir.display().to_string(),
        "--segment-bytes".into(),
        config.segment_bytes.to_string(),
        "--index-interval-bytes".into(),
        config.index_interval_bytes.to_string(),
    ];
    if !has_log(&log_dir) {
        // The crash came before the log existed: `recover` refuses a path with no
        // log and creates nothing, and the state is the empty log the next
        // `append`'s open creates (made here as that open makes it).
        if run_binary(options, &args).is_ok() || has_log(&log_dir) {
            return Err("`seglog recover` accepted a path with no log".into());
        }
        Log::open_with(Arc::new(StdFs::new()), &log_dir, config.clone())
            .map_err(|e| format!("creating the empty log failed: {e}"))?;
    }
    let report = run_binary(options, &args).map_err(|e| format!("recovery failed: {e}"))?;
    let recovered_tree = image::read_tree(&root).map_err(|e| e.to_string())?;
    let report: serde_json::Value =
        serde_json::from_str(&report).map_err(|e| format!("recovery report: {e}"))?;
    let ignored = &report["ignored_checkpoints"];
    if ignored.as_array().is_some_and(|a| !a.is_empty()) {
        return Err(format!("a crash left a damaged checkpoint: {ignored}"));
    }
    // Recovery is idempotent: a second one changes no byte.
    run_binary(options, &args).map_err(|e| format!("second recovery failed: {e}"))?;
    let again = image::read_tree(&root).map_err(|e| e.to_string())?;
    if again.snapshot() != recovered_tree.snapshot()
        || again.snapshot_dirs() != recovered_tree.snapshot_dirs()
    {
        return Err("a second recovery changed the files: recovery is not idempotent".into());
    }
    // What recovery left on the real disk, read back and opened without changing it.
    let recovered = Arc::new(recovered_tree);
    let left = leftovers(&*recovered);
    if !left.is_empty() {
        return Err(format!("leftovers after recovery: {left:?}"));
    }
    let fs: Arc<dyn FileSystem> = recovered.clone();
    let (log, opened) = Log::open_read_only_checked(fs, LOG_DIR, config.clone())
        .map_err(|e| format!("the recovered log does not open: {e}"))?;
    if opened.truncated_bytes > 0 {
        return Err(format!(
            "recovery left {} invalid bytes at the end of the log",
            opened.truncated_bytes
        ));
    }
    let view = engine::view(&log).map_err(|e| format!("read after recovery failed: {e}"))?;
    if let Some(diff) = allowed.mismatch(&view) {
        return Err(format!("recovered log is not an allowed state: {diff}"));
    }
    Ok(())
}

/// True when `log_dir`, or one of its install siblings, exists on the real disk.
fn has_log(log_dir: &Path) -> bool {
    let Ok(paths) = seglog::install::InstallPaths::new(log_dir) else {
        return false;
    };
    let fs = StdFs::new();
    let dirs = [paths.live, paths.tmp, paths.backup, paths.manifest];
    dirs.iter().any(|p| fs.exists(p))
}

/// The exact state `image` must recover to after a crash during operation `op`.
fn expected(
    states: &States,
    workload: &Workload,
    op: usize,
    log_existed: bool,
    image: &SimFs,
) -> Allowed {
    // A command that creates the log opens it first: crashed before its first
    // segment file, the image holds no log, and recovery makes the empty one (the
    // sweep's crash during the initial open).
    if op == 0 && !log_existed && ImageFacts::read(image).segments.is_empty() {
        return states.exactly(0);
    }
    states.exact_after_crash(workload, Some(op), image)
}

/// Runs every operation of `workload` as a `seglog` command on a fresh real
/// directory, each under strace, and judges every crash state of each.
pub fn run_workload(workload: &Workload, options: &AliceOptions) -> Result<WorkloadReport, String> {
    let started = Instant::now();
    let mut report = WorkloadReport {
        workload: workload.name.clone(),
        variant: workload.variant.clone(),
        ..WorkloadReport::default()
    };
    let states = Allowed::states(workload);
    let scratch = tempfile::tempdir_in(&options.scratch).map_err(|e| e.to_string())?;
    // strace prints a path as the command was given it: this one, not a canonical one.
    let root = scratch.path().to_path_buf();
    let log_dir = root.join("log");
    for (i, op) in workload.ops.iter().enumerate() {
        let Some(args) = command::args(op, &log_dir, &workload.config, &workload.variant)? else {
            continue;
        };
        let before = image::read_tree(&root).map_err(|e| e.to_string())?;
        before.set_persistence(options.persistence);
        let log_existed = StdFs::new().exists(&log_dir);
        let calls = traced(options, &root, &args)?;
        report.commands += 1;
        report.syscalls += calls.len() as u64;
        let mut seen = std::collections::BTreeSet::new();
        for k in 0..=calls.len() {
            if k > 0 {
                image::replay(&before, &root, &calls[k - 1]).map_err(|e| {
                    format!(
                        "op {i} `{}`: system call {} ({}) does not replay: {e}",
                        args[0],
                        k - 1,
                        calls[k - 1]
                    )
                })?;
            }
            report.crash_points += 1;
            for crash in before.crash_images(CrashMode::PowerLoss, options.images_per_point.max(1))
            {
                if !seen.insert((crash.fs.snapshot_dirs(), crash.fs.snapshot())) {
                    continue;
                }
                report.states += 1;
                let allowed = expected(&states, workload, i, log_existed, &crash.fs);
                if let Err(detail) = judge(options, workload, &allowed, &crash.fs) {
                    report.violations.push(Violation {
                        workload: workload.name.clone(),
                        op: i,
                        command: args[0].clone(),
                        crash_before_syscall: k as u64,
                        syscall: calls.get(k).map(ToString::to_string),
                        lost: crash.lost.iter().map(ToString::to_string).collect(),
                        detail,
                    });
                }
            }
        }
        report.traced.push(Traced {
            op: i,
            command: args[0].clone(),
            syscalls: calls.len() as u64,
            states: seen.len() as u64,
        });
        // The command ran to its end: the real directory is the replay's last state.
        let after = image::read_tree(&root).map_err(|e| e.to_string())?;
        if after.snapshot() != before.snapshot() || after.snapshot_dirs() != before.snapshot_dirs()
        {
            return Err(format!(
                "op {i} `{}`: replaying its system calls does not give the directory it left",
                args[0]
            ));
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    report.states_per_second = per_second(report.states, report.seconds);
    Ok(report)
}

/// `n` per second of `seconds` (0 for no time).
pub fn per_second(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

/// True if every operation of `workload` is a `seglog` command (or needs none).
pub fn expressible(workload: &Workload) -> bool {
    workload
        .ops
        .iter()
        .all(|op| command::args(op, Path::new("/d/log"), &workload.config, "manifest").is_ok())
}

//! Kafka's own log layer under the crash recorder: the harness's `crash-workload`
//! (Kafka 4.4's appends, flushes, roll, `Cleaner` round, retention and close on one
//! partition directory) run under strace, its file-system calls parsed as a JVM's
//! ([`Tracee::Jvm`]) and replayed on `SimFs`, and images of it loaded by Kafka
//! (`crash-load`).
//!
//! The recording ([`record`]): the workload runs in `ROOT/topic-0`, `ROOT` made
//! empty beforehand and read into a settled `SimFs` ([`image::read_tree`]: the
//! state before the first call); strace follows every thread (`-f`) of
//! `java JVM_FLAGS -cp ... seglog.interop.Main crash-workload`, listing
//! [`JVM_TRACED_CALLS`], and only the calls on `ROOT` are kept. The workload makes
//! all of them on its main thread (its log's scheduler has no threads), so their
//! order in the trace is program order; the JVM's own threads (compiler, GC)
//! only interleave lines, which the parser joins. Each acknowledgment of the
//! workload is a [`SysCall::Mark`] in the calls, its step described in
//! `acks` (the harness's `ACKS.json`).
//!
//! The recording check ([`Recording::fidelity`]): the calls replayed crash-free
//! from the state before must give the directory Kafka left: the same directories
//! and file names, every file byte for byte except Kafka's indexes (`.index`,
//! `.timeindex`), whose content goes through memory maps no system call shows,
//! compared by length.
//!
//! Loading ([`load`]): crash images of the recording (the replayed state after a
//! prefix of the calls, with what a power loss takes, from `SimFs`) laid out on
//! the disk and loaded by Kafka in one JVM, each as a broker loads a log after a
//! power loss; what Kafka serves from each is returned as the harness prints it.
//! An index in an image holds what the system calls wrote (zeros where Kafka
//! wrote entries through its memory map).
//!
//! The parts, each in `crash/`:
//! * `acks.rs`: the workload's acknowledgments and what Kafka serves from an
//!   image, as types ([`acks::Acks`], [`acks::Served`]);
//! * `oracle.rs`: the pure judgment of one image ([`oracle::judge`]): no
//!   acknowledged-durable record lost, no offset invented, moved or served twice,
//!   the cleaner's keys old or new, the checkpointed log start kept, segments
//!   apart, and a load that does not throw;
//! * `explore.rs`: every power-loss image of the recording under both persistence
//!   models, deduplicated, loaded by one `crash-load` per model and judged
//!   ([`explore::explore`]), findings kept as replayable cases;
//! * `shape.rs`: the workload's steps as a seglog workload, for seglog's side of
//!   the report ([`shape::workload`]);
//! * `timeline.rs`: a case's calls with their fates at the power loss, and the
//!   records it owed against those served, for the report's HTML page
//!   ([`timeline::case_timeline`]).
//!
//! The workload's `no-flush` variant ([`VARIANTS`]) acknowledges flushes it does
//! not make: its images must give findings.

pub mod acks;
pub mod explore;
pub mod oracle;
pub mod shape;
pub mod timeline;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use super::harness::Harness;
use crate::alice::image;
use crate::alice::strace::{self, SysCall, Tracee, JVM_TRACED_CALLS};
use seglog::fs::sim::SimFs;
use seglog::fs::{FileSystem, StdFs};

/// The JVM's flags under strace: no performance-data file (`-XX:-UsePerfData`:
/// no `hsperfdata` file mapped and written behind the trace) and the serial
/// collector (`-XX:+UseSerialGC`: no parallel GC workers, fewer threads whose
/// lines interleave). Neither changes what Kafka's classes do on the directory.
pub const JVM_FLAGS: &[&str] = &["-XX:-UsePerfData", "-XX:+UseSerialGC"];

/// The partition directory the workload writes under the root.
pub const PARTITION_DIR: &str = "topic-0";

/// Index files: their content is written through memory maps.
const MAPPED_SUFFIXES: &[&str] = &[".index", ".timeindex"];

/// One traced run of the harness's `crash-workload`.
#[derive(Debug)]
pub struct Recording {
    /// The real directory the workload ran in (`ROOT`), as strace printed it.
    pub root: PathBuf,
    /// The parsed calls on `root`, in order.
    pub calls: Vec<SysCall>,
    /// The workload's acknowledgments (its `ACKS.json`).
    pub acks: serde_json::Value,
    /// Lines of the whole trace (every thread, every traced call).
    pub trace_lines: usize,
    /// A copy of `root` as it was before the workload.
    before: PathBuf,
    scratch: tempfile::TempDir,
}

/// Numbers of a recording: how many calls of each kind, and how it compared.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Fidelity {
    /// Files compared byte for byte.
    pub files_identical: usize,
    /// Index files compared by length.
    pub indexes_by_length: usize,
    /// Directories under the root, the root included.
    pub dirs: usize,
}

/// The workload's variants: Kafka's own script, and one whose flush steps
/// acknowledge without flushing.
pub const VARIANTS: &[&str] = &["normal", "no-flush"];

/// Runs `crash-workload` under strace in a fresh directory under `scratch`.
pub fn record(harness: &Harness, strace_bin: &Path, scratch: &Path) -> Result<Recording, String> {
    record_variant(harness, strace_bin, scratch, "normal")
}

/// Runs the `variant` of `crash-workload` (one of [`VARIANTS`]) under strace in a
/// fresh directory under `scratch`.
pub fn record_variant(
    harness: &Harness,
    strace_bin: &Path,
    scratch: &Path,
    variant: &str,
) -> Result<Recording, String> {
    if !VARIANTS.contains(&variant) {
        return Err(format!(
            "not a crash-workload variant: {variant:?} ({VARIANTS:?})"
        ));
    }
    let tmp = tempfile::tempdir_in(scratch).map_err(|e| e.to_string())?;
    let root = tmp.path().join("root");
    let before = tmp.path().join("before");
    let fs = StdFs::new();
    for dir in [&root, &before] {
        fs.create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let trace = tmp.path().join("strace.txt");
    let acks = tmp.path().join("acks.json");
    let out = Command::new(strace_bin)
        .args(["-f", "-qq", "-xx", "-s", "16777216", "-o"])
        .arg(&trace)
        .args(["-e", &format!("trace={JVM_TRACED_CALLS}")])
        .arg("java")
        .args(JVM_FLAGS)
        .arg("-cp")
        .arg(harness.classpath())
        .args(["seglog.interop.Main", "crash-workload", "--dir"])
        .arg(root.join(PARTITION_DIR))
        .arg("--out")
        .arg(&acks)
        .args(["--variant", variant])
        .current_dir(tmp.path())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", strace_bin.display()))?;
    if !out.status.success() {
        return Err(format!(
            "`crash-workload` under strace failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = fs
        .read_all(&trace)
        .map_err(|e| format!("the trace {}: {e}", trace.display()))?;
    let text = String::from_utf8_lossy(&text);
    let tracee = Tracee::Jvm {
        cwd: tmp.path().to_path_buf(),
    };
    let calls = strace::parse_as(&text, &root, &tracee)?;
    let acks = fs
        .read_all(&acks)
        .map_err(|e| format!("the acknowledgments {}: {e}", acks.display()))?;
    let acks = serde_json::from_slice(&acks).map_err(|e| format!("the acknowledgments: {e}"))?;
    Ok(Recording {
        root,
        calls,
        acks,
        trace_lines: text.lines().count(),
        before,
        scratch: tmp,
    })
}

impl Recording {
    /// The scratch directory the recording lives in (removed with it).
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// The state before the workload, with the first `k` calls replayed on it.
    pub fn replayed(&self, k: usize) -> Result<SimFs, String> {
        let sim = image::read_tree(&self.before).map_err(|e| e.to_string())?;
        for (i, call) in self.calls.iter().take(k).enumerate() {
            image::replay(&sim, &self.root, call)
                .map_err(|e| format!("system call {i} ({call}) does not replay: {e}"))?;
        }
        Ok(sim)
    }

    /// The calls by kind (`write`, `fsync`, `mark`, ...): how many of each.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for call in &self.calls {
            *out.entry(kind(call)).or_default() += 1;
        }
        out
    }

    /// The index of each marker call, by its file name (`.seglog-mark-N-WHAT`).
    pub fn markers(&self) -> Vec<(usize, String)> {
        self.calls
            .iter()
            .enumerate()
            .filter_map(|(i, call)| match call {
                SysCall::Mark(p) => Some((i, p.file_name()?.to_string_lossy().into_owned())),
                _ => None,
            })
            .collect()
    }

    /// Replays every call crash-free and compares the result with the directory
    /// Kafka left (see the module docs); `Err` names the first difference.
    pub fn fidelity(&self) -> Result<Fidelity, String> {
        let replayed = self.replayed(self.calls.len())?;
        let real = image::read_tree(&self.root).map_err(|e| e.to_string())?;
        compare(&replayed, &real)
    }
}

/// What Kafka serves from each of `images` (the harness's `crash-load`, one JVM
/// for all): each image is laid out in its own directory under `scratch` (its
/// root's tree, the partition directory and the checkpoints) and loaded as after
/// a power loss; one JSON object per image, in order (`absent`, `error`, or the
/// offsets, segments and records Kafka serves).
pub fn load(
    harness: &Harness,
    images: &[SimFs],
    scratch: &Path,
) -> Result<Vec<serde_json::Value>, String> {
    let tmp = tempfile::tempdir_in(scratch).map_err(|e| e.to_string())?;
    let fs = StdFs::new();
    let mut dirs = Vec::new();
    for (i, image) in images.iter().enumerate() {
        let dir = tmp.path().join(format!("image-{i}"));
        fs.create_dir_all(&dir).map_err(|e| e.to_string())?;
        image::write_tree(image, &dir).map_err(|e| format!("laying out image {i}: {e}"))?;
        dirs.push(dir);
    }
    load_dirs(harness, &dirs, tmp.path())
}

/// What Kafka serves from each image laid out in `dirs` (one `crash-load` JVM; its
/// list and answer files go in `work`), one JSON object per image, in order.
pub fn load_dirs(
    harness: &Harness,
    dirs: &[PathBuf],
    work: &Path,
) -> Result<Vec<serde_json::Value>, String> {
    let fs = StdFs::new();
    let mut list = String::new();
    for dir in dirs {
        list.push_str(&format!("{}\n", dir.display()));
    }
    let list_file = work.join("images.txt");
    let out = work.join("loaded.json");
    fs.write_new(&list_file, list.as_bytes())
        .map_err(|e| e.to_string())?;
    let path = |p: &Path| p.display().to_string();
    harness.run(&[
        "crash-load",
        "--list",
        &path(&list_file),
        "--out",
        &path(&out),
    ])?;
    let loaded = fs.read_all(&out).map_err(|e| e.to_string())?;
    let loaded: serde_json::Value =
        serde_json::from_slice(&loaded).map_err(|e| format!("crash-load's output: {e}"))?;
    let loaded = loaded["images"]
        .as_array()
        .cloned()
        .ok_or("crash-load listed no images")?;
    if loaded.len() != dirs.len() {
        return Err(format!(
            "crash-load answered for {} images of {}",
            loaded.len(),
            dirs.len()
        ));
    }
    Ok(loaded)
}

/// `replayed` against `real`: the same directories and file names, the same bytes
/// but for the indexes' (the same length).
pub fn compare(replayed: &SimFs, real: &SimFs) -> Result<Fidelity, String> {
    let (want_dirs, got_dirs) = (real.snapshot_dirs(), replayed.snapshot_dirs());
    if want_dirs != got_dirs {
        return Err(format!(
            "directories differ: Kafka left {want_dirs:?}, the replay {got_dirs:?}"
        ));
    }
    let (want, got) = (real.snapshot(), replayed.snapshot());
    let names = |m: &BTreeMap<PathBuf, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    if names(&want) != names(&got) {
        return Err(format!(
            "file names differ: Kafka left {:?}, the replay {:?}",
            names(&want),
            names(&got)
        ));
    }
    let mut fidelity = Fidelity {
        dirs: want_dirs.len(),
        ..Fidelity::default()
    };
    for (path, bytes) in &want {
        let replayed = &got[path];
        let mapped = MAPPED_SUFFIXES
            .iter()
            .any(|s| path.to_string_lossy().ends_with(s));
        if mapped {
            if bytes.len() != replayed.len() {
                return Err(format!(
                    "{}: Kafka left {} bytes, the replay {}",
                    path.display(),
                    bytes.len(),
                    replayed.len()
                ));
            }
            fidelity.indexes_by_length += 1;
        } else {
            if bytes != replayed {
                let at = bytes
                    .iter()
                    .zip(replayed)
                    .take_while(|(a, b)| a == b)
                    .count();
                return Err(format!(
                    "{}: the replay differs from Kafka's file at byte {at} (Kafka {} bytes, replay {})",
                    path.display(),
                    bytes.len(),
                    replayed.len()
                ));
            }
            fidelity.files_identical += 1;
        }
    }
    Ok(fidelity)
}

/// A short name of the call's kind.
pub fn kind(call: &SysCall) -> &'static str {
    match call {
        SysCall::Mkdir(_) => "mkdir",
        SysCall::Create { .. } => "create",
        SysCall::Truncate { .. } => "truncate",
        SysCall::Write { .. } => "write",
        SysCall::Fsync(_) => "fsync",
        SysCall::Rename { .. } => "rename",
        SysCall::Link { .. } => "link",
        SysCall::Unlink(_) => "unlink",
        SysCall::Rmdir(_) => "rmdir",
        SysCall::Mmap { .. } => "mmap",
        SysCall::Msync(_) => "msync",
        SysCall::Munmap(_) => "munmap",
        SysCall::Mark(_) => "mark",
    }
}

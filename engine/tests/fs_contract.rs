//! The error contract every [`FileSystem`] implementation must keep, run against the
//! real disk ([`StdFs`]) and, where it applies, the simulated one ([`SimFs`]).
//!
//! Invariants checked:
//! * a call on a missing path fails with `NotFound` (and a create under a file with
//!   `NotADirectory`), and a failed call changes nothing;
//! * real errors come back unchanged, with their OS error number: no implementation
//!   swallows the error of a write or an fsync (the engine's whole durability story
//!   rests on seeing it, docs/design.md section 3);
//! * the errors [`SimFs`] injects have the same shape as the real ones.
//!
//! Real errors without a failing disk, and why these targets (CI runs as root, so a
//! `chmod`-read-only directory stops nothing, and no tmpfs can be mounted):
//! * `/dev/full`: every `write` fails with `ENOSPC`; `fsync`, `fdatasync` and
//!   `ftruncate` on it fail with `EINVAL` (a character device cannot be
//!   synchronized): the one real fsync error any Linux machine gives on demand;
//! * `/proc`: `fsync` of the directory fails with `EINVAL`;
//! * `/sys`: sysfs refuses to create files even for root (`EACCES`, or `EROFS`
//!   where it is mounted read-only).

use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog::format::NewRecord;
use seglog::fs::sim::{FaultKind, SimFs, EIO, ENOSPC};
use seglog::fs::{FileSystem, StdFs};
use seglog::log::{Log, LogConfig};
use seglog::Error;

/// Linux `EINVAL`.
const EINVAL: i32 = 22;

fn kind_of<T: std::fmt::Debug>(result: io::Result<T>, what: &str) -> ErrorKind {
    match result {
        Ok(value) => panic!("{what}: expected an error, got Ok({value:?})"),
        Err(e) => e.kind(),
    }
}

/// The contract on missing paths and failed calls, for any file system. `root` is
/// an existing, empty directory.
fn contract<F: FileSystem>(fs: &F, root: &Path) {
    let missing = root.join("missing");
    let mut buf = [0u8; 4];
    let not_found: Vec<(&str, ErrorKind)> = vec![
        ("append", kind_of(fs.append(&missing, b"x"), "append")),
        (
            "append_vectored",
            kind_of(
                fs.append_vectored(&missing, &[&b"x"[..], &b"y"[..]]),
                "append_vectored",
            ),
        ),
        (
            "read_at",
            kind_of(fs.read_at(&missing, 0, &mut buf), "read_at"),
        ),
        ("read_all", kind_of(fs.read_all(&missing), "read_all")),
        ("map", kind_of(fs.map(&missing), "map")),
        ("set_len", kind_of(fs.set_len(&missing, 0), "set_len")),
        ("sync_file", kind_of(fs.sync_file(&missing), "sync_file")),
        (
            "start_writeback",
            kind_of(fs.start_writeback(&missing), "start_writeback"),
        ),
        ("sync_dir", kind_of(fs.sync_dir(&missing), "sync_dir")),
        (
            "rename",
            kind_of(fs.rename(&missing, &root.join("to")), "rename"),
        ),
        (
            "remove_file",
            kind_of(fs.remove_file(&missing), "remove_file"),
        ),
        (
            "hard_link",
            kind_of(fs.hard_link(&missing, &root.join("to")), "hard_link"),
        ),
        (
            "remove_dir_all",
            kind_of(fs.remove_dir_all(&missing), "remove_dir_all"),
        ),
        ("list_dir", kind_of(fs.list_dir(&missing), "list_dir")),
        ("len", kind_of(fs.len(&missing), "len")),
        (
            "create_file in a missing directory",
            kind_of(fs.create_file(&missing.join("f")), "create_file"),
        ),
    ];
    for (call, kind) in not_found {
        assert_eq!(kind, ErrorKind::NotFound, "{call} on a missing path");
    }
    assert!(!fs.exists(&missing));
    assert!(!fs.is_dir(&missing));
    assert!(
        fs.list_dir(root).unwrap().is_empty(),
        "failed calls created nothing"
    );

    // A file where a directory is expected.
    let file = root.join("file");
    fs.write_new(&file, b"abc").unwrap();
    assert_eq!(
        kind_of(fs.create_file(&file.join("x")), "create_file under a file"),
        ErrorKind::NotADirectory
    );
    assert!(fs.create_dir_all(&file.join("d")).is_err());
    assert_eq!(fs.read_all(&file).unwrap(), b"abc", "nothing changed");

    // The calls that work, for the record: what the engine relies on.
    fs.append(&file, b"def").unwrap();
    fs.start_writeback(&file).unwrap();
    assert_eq!(
        fs.read_all(&file).unwrap(),
        b"abcdef",
        "a hint changes nothing"
    );
    fs.sync_file(&file).unwrap();
    fs.sync_dir(root).unwrap();
    assert_eq!(fs.len(&file).unwrap(), 6);
    fs.set_len(&file, 2).unwrap();
    assert_eq!(fs.read_all(&file).unwrap(), b"ab");
    fs.rename(&file, &root.join("renamed")).unwrap();
    assert_eq!(fs.list_dir(root).unwrap(), vec!["renamed".to_string()]);
    // A hard link: a second name of one file; `EEXIST` onto an existing name; the
    // data stays when one name goes (carried segments, docs/design.md section 6).
    let renamed = root.join("renamed");
    let linked = root.join("linked");
    fs.hard_link(&renamed, &linked).unwrap();
    assert_eq!(
        kind_of(fs.hard_link(&renamed, &linked), "hard_link onto a name"),
        ErrorKind::AlreadyExists
    );
    fs.remove_file(&renamed).unwrap();
    assert_eq!(fs.read_all(&linked).unwrap(), b"ab");
    fs.remove_file(&linked).unwrap();
    assert!(fs.list_dir(root).unwrap().is_empty());
}

/// `ENOSPC` as Linux reports it: the raw error number and `StorageFull`.
fn assert_enospc(e: &io::Error, what: &str) {
    assert_eq!(e.raw_os_error(), Some(ENOSPC), "{what}: {e}");
    assert_eq!(e.kind(), ErrorKind::StorageFull, "{what}: {e}");
}

#[test]
fn std_fs_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    contract(&StdFs::new(), dir.path());
    contract(&StdFs::without_mmap(), dir.path());
}

#[test]
fn sim_fs_keeps_the_contract() {
    let fs = SimFs::new();
    fs.create_dir_all(Path::new("/contract")).unwrap();
    contract(&fs, Path::new("/contract"));
}

#[test]
fn std_fs_returns_enospc_of_a_write_to_dev_full() {
    let fs = StdFs::new();
    let full = Path::new("/dev/full");
    assert_enospc(&fs.append(full, b"x").unwrap_err(), "append");
    assert_enospc(&fs.append(full, &[7u8; 1 << 16]).unwrap_err(), "big append");
    assert_enospc(
        &fs.append_vectored(full, &[&b"x"[..], &[7u8; 1 << 16][..]])
            .unwrap_err(),
        "append_vectored",
    );
    assert_enospc(&fs.write_new(full, b"x").unwrap_err(), "write_new");
}

#[test]
fn std_fs_returns_the_error_of_an_fsync() {
    // fsync of /dev/full fails with EINVAL: StdFs must hand that error back, not Ok.
    let fs = StdFs::new();
    let full = Path::new("/dev/full");
    let e = fs.sync_file(full).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(EINVAL), "{e}");
    // Again on the cached handle: still an error, every time.
    assert!(fs.sync_file(full).is_err());
    // ftruncate on it fails too.
    let e = fs.set_len(full, 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(EINVAL), "{e}");
    // A directory fsync error: /proc cannot be synced.
    let e = fs.sync_dir(Path::new("/proc")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(EINVAL), "{e}");
}

#[test]
fn std_fs_cannot_create_in_sysfs_even_as_root() {
    let fs = StdFs::new();
    let target = Path::new("/sys/seglog-contract");
    let e = fs.create_file(target).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem
        ),
        "{e}"
    );
    assert!(fs.create_dir_all(&target.join("d")).is_err());
    assert!(!fs.exists(target));
}

#[test]
fn sim_fs_injects_errors_shaped_like_the_real_ones() {
    let fs = SimFs::new();
    let dir = Path::new("/d");
    fs.create_dir_all(dir).unwrap();
    let file = dir.join("f");
    fs.write_new(&file, b"ab").unwrap();

    let next = fs.mutating_ops();
    fs.fail_nth_with(next, FaultKind::Enospc);
    assert_enospc(&fs.append(&file, b"cd").unwrap_err(), "injected enospc");
    assert_eq!(fs.read_all(&file).unwrap(), b"ab", "enospc wrote nothing");

    fs.fail_nth_with(next + 1, FaultKind::ShortWrite);
    assert_enospc(&fs.append(&file, b"cdef").unwrap_err(), "short write");
    assert_eq!(
        fs.read_all(&file).unwrap(),
        b"abcd",
        "a short write keeps a prefix"
    );

    fs.fail_nth_with(next + 2, FaultKind::Eio);
    let e = fs.sync_file(&file).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(EIO), "{e}");
    let fired = fs.fired_faults();
    assert_eq!(fired.len(), 3);
    assert_eq!(
        fired.iter().map(|f| f.op).collect::<Vec<_>>(),
        vec![next, next + 1, next + 2]
    );
    // One shot each: the next calls work.
    fs.append(&file, b"g").unwrap();
    fs.sync_file(&file).unwrap();
}

/// A log whose active segment's `.log` is `/dev/full`: the engine must surface the
/// real write and fsync errors, and poison.
fn log_on_dev_full() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log_dir = dir.path().join("log");
    let (log, _) = Log::open(&log_dir, LogConfig::default()).unwrap();
    log.close().unwrap();
    let segment = log_dir.join("00000000000000000000.log");
    std::fs::remove_file(&segment).unwrap();
    std::os::unix::fs::symlink("/dev/full", &segment).unwrap();
    (dir, log_dir)
}

#[test]
fn the_engine_surfaces_real_write_and_fsync_errors() {
    let (_dir, log_dir) = log_on_dev_full();
    let (mut log, _) = Log::open(&log_dir, LogConfig::default()).unwrap();
    let record = [NewRecord::new(None, Some(b"v".to_vec()), 1)];
    match log.append(&record) {
        Err(Error::Io { source, .. }) => assert_enospc(&source, "append"),
        other => panic!("append to /dev/full: {other:?}"),
    }
    assert!(log.is_poisoned());
    assert!(matches!(log.flush(), Err(Error::Poisoned)));
    assert!(matches!(log.append(&record), Err(Error::Poisoned)));
    drop(log);

    // A fresh handle: flush fsyncs the .log, which fails: flush must not say Ok.
    let (mut log, _) = Log::open(&log_dir, LogConfig::default()).unwrap();
    match log.flush() {
        Err(Error::Io { source, path }) => {
            assert_eq!(source.raw_os_error(), Some(EINVAL), "{source}");
            assert!(path.ends_with("00000000000000000000.log"), "{path:?}");
        }
        other => panic!("flush of a .log on /dev/full: {other:?}"),
    }
    assert!(log.is_poisoned());
    assert!(matches!(log.roll(), Err(Error::Poisoned)));
}

#[test]
fn the_engine_on_sim_fs_reports_an_injected_fsync_error_of_flush() {
    let fs = Arc::new(SimFs::new());
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let (mut log, _) = Log::open_with(dyn_fs, "/log", LogConfig::default()).unwrap();
    log.append(&[NewRecord::new(None, Some(b"v".to_vec()), 1)])
        .unwrap();
    // flush: write pending indexes (none yet), then sync .log first.
    fs.fail_nth_with(fs.mutating_ops(), FaultKind::Eio);
    match log.flush() {
        Err(Error::Io { source, path }) => {
            assert_eq!(source.raw_os_error(), Some(EIO), "{source}");
            assert!(path.ends_with("00000000000000000000.log"), "{path:?}");
        }
        other => panic!("flush with a failing fsync: {other:?}"),
    }
    assert_eq!(fs.fired_faults().len(), 1);
    assert!(matches!(log.flush(), Err(Error::Poisoned)));
}

/// `canonicalize` (what a log directory's install siblings derive from): on the
/// real disk it follows links, also a dangling one (a symlinked log whose target an
/// install renamed away mid-swap) and resolves a missing last name to where it
/// would be created; on the simulated one (no links) it normalises the path.
#[test]
fn canonicalize_resolves_links_dots_and_missing_names() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StdFs::new().canonicalize(tmp.path()).unwrap();
    let fs = StdFs::new();
    std::fs::create_dir(root.join("real")).unwrap();
    std::os::unix::fs::symlink("real", root.join("link")).unwrap();
    std::os::unix::fs::symlink("gone", root.join("dangling")).unwrap();
    let real = root.join("real");
    for spelled in [
        root.join("link"),
        root.join("link/"),
        root.join("link/."),
        root.join("real/../link"),
        root.join("./real"),
    ] {
        assert_eq!(fs.canonicalize(&spelled).unwrap(), real, "{spelled:?}");
    }
    assert_eq!(
        fs.canonicalize(&root.join("dangling")).unwrap(),
        root.join("gone")
    );
    assert_eq!(
        fs.canonicalize(&root.join("link/new/p-0")).unwrap(),
        real.join("new/p-0")
    );
    assert!(!root.join("gone").exists() && !real.join("new").exists());

    let sim = SimFs::new();
    assert_eq!(
        sim.canonicalize(Path::new("/a/./b/../c/")).unwrap(),
        Path::new("/a/c")
    );
    assert_eq!(
        sim.canonicalize(Path::new("/../a/.")).unwrap(),
        Path::new("/a")
    );
    assert_eq!(sim.canonicalize(Path::new("./")).unwrap(), Path::new("."));
}

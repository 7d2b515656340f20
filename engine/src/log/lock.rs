//! The writer lock: one writable open of a log directory at a time, across
//! processes (model (g), `seglog model check --model writers`).
//!
//! A writable open takes an exclusive lock on `D.lock`, a file beside the log
//! directory `D` (in its parent, with the install's `D.compact-*` siblings, so the
//! lock survives the install's directory swap and covers its temp, backup and
//! manifest too), before recovery touches anything, and holds it until the log is
//! closed or dropped. A second writer is refused with [`Error::Locked`], having
//! changed nothing. The kernel releases the lock of a killed process, so a stale
//! `D.lock` file never blocks anyone; the file stays empty.
//!
//! # Design
//!
//! Every writable open (`Log::open*`, every CLI command but `dump`, the `LogManager`)
//! takes an exclusive, non-blocking `flock` on `D.lock` beside the log directory, before
//! recovery reads or changes anything, and holds it until `close` or drop (`SimFs` keeps a
//! table of held paths outside the counted calls; a crash image holds no lock). It is
//! beside `D`, not inside it, because the install swaps `D` for a new directory: a lock
//! file inside would move to the backup while the first process still writes; beside it,
//! one lock covers `D`, its temp, backup, trash and manifest (on the resolved directory,
//! so a symlink and its target name one lock). A second writer gets
//! `Error::Locked { dir, lock_file, holder_pid }` (the pid from `/proc/locks`; exit 2 from
//! the CLI) and has changed nothing; read-only opens take no lock. A new log whose parent
//! is missing gets its whole path created first, each new ancestor synced in its parent,
//! as recovery's phase 1 does. Dropping the lock calls `flock(LOCK_UN)` before the close,
//! because a `fork` on another thread shares the open file description until its child
//! `exec`s. The kernel releases a killed process's lock, so a stale `D.lock` never blocks
//! an open; the file stays empty.

use std::io;
use std::path::{Path, PathBuf};

use crate::fs::{FileLock, FileSystem, LockHeld};
use crate::{Error, Result};

/// Suffix of the lock file beside the log directory.
pub const LOCK_SUFFIX: &str = ".lock";

/// `D.lock` for the log directory `D`: `D`'s last component plus [`LOCK_SUFFIX`],
/// in `D`'s parent (the working directory when `D` has none).
pub fn lock_path(dir: &Path) -> Result<PathBuf> {
    let named = if dir.file_name().is_some() {
        dir.to_path_buf()
    } else {
        std::path::absolute(dir).map_err(|e| Error::io(dir, e))?
    };
    let name = named
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::InvalidArgument(format!("log dir {} has no name", dir.display())))?;
    let parent = match named.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok(parent.join(format!("{name}{LOCK_SUFFIX}")))
}

/// The writer lock, and whether taking it created the log directory.
#[derive(Debug)]
pub struct Acquired {
    /// Held until dropped.
    pub lock: FileLock,
    /// The log directory's parent was missing, so the lock file had nowhere to be:
    /// the directory was created (with its ancestors), as recovery's phase 1 would.
    pub created_dir: bool,
}

/// Takes the writer lock of `dir`, or [`Error::Locked`] if another writer holds it.
///
/// The lock file's directory (the log's parent) must exist for a real file system.
/// Where it is missing, the whole log path is created first, exactly as recovery's
/// phase 1 creates a missing log (each new ancestor synced in its parent, the log
/// directory's own entry left to phase 9, which `created_dir` asks for). Creating
/// only the parent would leave a crash state that no later open can repair: a
/// parent whose entry was never synced, under which the next open creates the log
/// directory afresh and so never syncs the path above it (a crash sweep case).
/// The directory is created before the lock is held: two writers racing on
/// a new path both create the same empty directories, and only one gets the lock.
pub fn acquire(fs: &dyn FileSystem, dir: &Path) -> Result<Acquired> {
    let path = lock_path(dir)?;
    let refused = |e: io::Error| match e.kind() {
        io::ErrorKind::WouldBlock => Error::Locked {
            dir: dir.to_path_buf(),
            lock_file: path.clone(),
            holder_pid: LockHeld::of(&e).and_then(|held| held.holder_pid),
        },
        _ => Error::io(&path, e),
    };
    match fs.try_lock(&path) {
        Ok(lock) => Ok(Acquired {
            lock,
            created_dir: false,
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            super::recovery::create_dirs(fs, dir, false)?;
            let lock = fs.try_lock(&path).map_err(refused)?;
            Ok(Acquired {
                lock,
                created_dir: true,
            })
        }
        Err(e) => Err(refused(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::sim::SimFs;

    #[test]
    fn the_lock_file_sits_beside_the_directory() {
        assert_eq!(
            lock_path(Path::new("/data/log")).unwrap(),
            Path::new("/data/log.lock")
        );
        assert_eq!(
            lock_path(Path::new("/data/log/")).unwrap(),
            Path::new("/data/log.lock")
        );
        assert_eq!(
            lock_path(Path::new("log")).unwrap(),
            Path::new("./log.lock")
        );
    }

    #[test]
    fn a_second_lock_is_refused_until_the_first_drops() {
        let fs = SimFs::new();
        let dir = Path::new("/data/log");
        let first = acquire(&fs, dir).unwrap();
        assert!(first.created_dir, "/data was missing");
        match acquire(&fs, dir) {
            Err(Error::Locked {
                dir: d,
                lock_file,
                holder_pid,
            }) => {
                assert_eq!(holder_pid, None, "the sim knows no processes");
                assert_eq!(d, dir);
                assert_eq!(lock_file, Path::new("/data/log.lock"));
            }
            other => panic!("{other:?}"),
        }
        drop(first);
        let again = acquire(&fs, dir).unwrap();
        assert!(!again.created_dir);
        drop(again);
    }
}

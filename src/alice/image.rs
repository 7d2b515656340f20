//! Moving directory trees between the real disk and [`SimFs`]: the run's root before
//! the traced command (a settled `SimFs` to replay the trace on), a crash image laid
//! out on the real disk for the binary to recover, and the recovered tree read back.
//!
//! The run's root maps to [`PARENT_DIR`], so its `log` directory is the sweep's
//! [`LOG_DIR`](crate::sweep::LOG_DIR) and the sweep's oracle reads the images as
//! they are.

use std::io;
use std::path::{Path, PathBuf};

use crate::sweep::PARENT_DIR;
use seglog::fs::sim::SimFs;
use seglog::fs::{FileSystem, StdFs};

use super::strace::SysCall;

/// The simulated path of `real` under `root` (`None` outside it).
pub fn sim_path(root: &Path, real: &Path) -> Option<PathBuf> {
    let rel = real.strip_prefix(root).ok()?;
    Some(if rel.as_os_str().is_empty() {
        PathBuf::from(PARENT_DIR)
    } else {
        Path::new(PARENT_DIR).join(rel)
    })
}

/// Copies the real tree under `root` into `sim` at [`PARENT_DIR`].
fn copy_in(real: &StdFs, root: &Path, dir: &Path, sim: &SimFs) -> io::Result<()> {
    let here = sim_path(root, dir).ok_or_else(|| io::Error::other("outside the root"))?;
    sim.create_dir_all(&here)?;
    for name in real.list_dir(dir)? {
        let path = dir.join(&name);
        if real.is_dir(&path) {
            copy_in(real, root, &path, sim)?;
        } else {
            sim.write_new(&here.join(&name), &real.read_all(&path)?)?;
        }
    }
    Ok(())
}

/// The real tree under `root` as a settled `SimFs`: everything in it durable, as
/// the disk is before a command runs (the command before it closed the log, which
/// syncs what it wrote; a file left unsynced by the last command would be lost by
/// a power loss between the two, which the crash states of that command cover).
pub fn read_tree(root: &Path) -> io::Result<SimFs> {
    let sim = SimFs::new();
    copy_in(&StdFs::new(), root, root, &sim)?;
    sim.settle();
    Ok(sim)
}

/// Lays out the image `sim` (its tree under [`PARENT_DIR`]) at the empty real `root`.
pub fn write_tree(sim: &SimFs, root: &Path) -> io::Result<()> {
    let real = StdFs::new();
    let parent = Path::new(PARENT_DIR);
    for dir in sim.snapshot_dirs() {
        if let Ok(rel) = dir.strip_prefix(parent) {
            real.create_dir_all(&root.join(rel))?;
        }
    }
    for (path, bytes) in sim.snapshot() {
        if let Ok(rel) = path.strip_prefix(parent) {
            real.write_new(&root.join(rel), &bytes)?;
        }
    }
    Ok(())
}

/// Replays one traced system call on `sim` (a `SimFs`, or a `TraceFs` over one) as
/// the `FileSystem` call that has its effect (paths under `root` mapped to
/// [`PARENT_DIR`]).
pub fn replay(sim: &dyn FileSystem, root: &Path, call: &SysCall) -> io::Result<()> {
    let map = |p: &Path| {
        sim_path(root, p)
            .ok_or_else(|| io::Error::other(format!("{} is outside the root", p.display())))
    };
    match call {
        SysCall::Mkdir(p) => sim.create_dir_all(&map(p)?),
        SysCall::Create { path, truncate } => {
            let path = map(path)?;
            // O_CREAT without O_TRUNC on an existing file changes nothing.
            if *truncate || !sim.exists(&path) {
                sim.create_file(&path)?;
            }
            Ok(())
        }
        SysCall::Truncate { path, len } => sim.set_len(&map(path)?, *len),
        SysCall::Write { path, data, offset } => {
            let path = map(path)?;
            if let Some(offset) = offset {
                if *offset != sim.len(&path)? {
                    return Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        format!("a write at {offset} not at the end of {}", path.display()),
                    ));
                }
            }
            sim.append(&path, data)
        }
        SysCall::Fsync(p) => {
            let path = map(p)?;
            if sim.is_dir(&path) {
                sim.sync_dir(&path)
            } else {
                sim.sync_file(&path)
            }
        }
        SysCall::Rename { from, to } => sim.rename(&map(from)?, &map(to)?),
        SysCall::Link { from, to } => sim.hard_link(&map(from)?, &map(to)?),
        SysCall::Unlink(p) => sim.remove_file(&map(p)?),
        // rmdir removes only an empty directory: remove_dir_all of it is the same.
        SysCall::Rmdir(p) => sim.remove_dir_all(&map(p)?),
        // What goes through a memory map is not in the trace: mapping, syncing and
        // unmapping leave the simulated file as the system calls made it. A marker
        // changes nothing.
        SysCall::Mmap { path, .. } | SysCall::Msync(path) | SysCall::Munmap(path) => {
            map(path).map(drop)
        }
        SysCall::Mark(p) => map(p).map(drop),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_goes_to_sim_and_back() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("log/sub")).unwrap();
        std::fs::write(root.join("log/a"), b"abc").unwrap();
        std::fs::write(root.join("x"), b"").unwrap();
        let sim = read_tree(root).unwrap();
        assert_eq!(sim.read_all(Path::new("/data/log/a")).unwrap(), b"abc");
        assert!(sim.is_dir(Path::new("/data/log/sub")));
        assert_eq!(sim.pending_dir_ops(), 0, "settled");

        let call = SysCall::Write {
            path: root.join("log/a"),
            data: b"d".to_vec(),
            offset: None,
        };
        replay(&sim, root, &call).unwrap();
        let other = tempfile::tempdir().unwrap();
        write_tree(&sim, other.path()).unwrap();
        assert_eq!(std::fs::read(other.path().join("log/a")).unwrap(), b"abcd");
        assert!(other.path().join("log/sub").is_dir());
        assert!(other.path().join("x").is_file());
    }
}

//! The crash-safe install of a compacted directory: live `D`, temp `D.compact-tmp`,
//! backup `D.compact-bak` and the manifest `D.compact-manifest`, all in `D`'s parent.
//!
//! Steps ([`install`]; step 1 is the cleaner's [`crate::compaction`] build):
//! 1. build `D.compact-tmp`; sync every file; sync the temp dir;
//! 2. write the manifest to `D.compact-manifest.tmp`, sync it, rename it to
//!    `D.compact-manifest`, sync the parent: **the commit point**;
//! 3. rename `D` -> `D.compact-bak`;
//! 4. rename `D.compact-tmp` -> `D`;
//! 5. rename `D.compact-bak` -> `D.compact-trash`, sync the parent;
//! 6. remove the manifest, sync the parent;
//! 7. remove `D.compact-trash` (no lock needed: a trash is never authoritative).
//!
//! A concurrent cleaning ([`swap`]) runs, under the log's append lock, step a
//! (`tail`: hard-link the tail segments into the temp dir, sync it) and completes
//! the manifest with them before step 2, then steps 2-6; step 7 runs after the
//! lock is released.
//!
//! `validate` holds a directory to its manifest (exactly the listed files, sizes and
//! CRC-32Cs) and names the derived files it leaves out ([`is_derived`]).
//!
//! [`recovery::recover`] decides, on open, what a crash at any point left behind.
//! The table and the crash window each step closes are in docs/design.md section 6.

pub(crate) mod recovery;
pub(crate) mod tail;
pub(crate) mod validate;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fail_point;
use crate::format::manifest::Manifest;
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint as fp;
use crate::fs::FileSystem;

pub use recovery::{recover, InstallCase, InstallRecovery};
pub use validate::is_derived;

/// The names next to a live log directory `D`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallPaths {
    /// The live log directory `D`.
    pub live: PathBuf,
    /// `D.compact-tmp`: the compacted content is built here (install step 1).
    pub tmp: PathBuf,
    /// `D.compact-bak`: the old content while the swap runs.
    pub backup: PathBuf,
    /// `D.compact-trash`: the old content once the new one is live; never
    /// authoritative (recovery removes it in every row).
    pub trash: PathBuf,
    /// `D.compact-manifest`: its presence commits the install.
    pub manifest: PathBuf,
    /// The manifest's temp file, renamed onto `manifest` to commit.
    pub manifest_tmp: PathBuf,
    /// The directory holding all of them (synced after each directory change).
    pub parent: PathBuf,
}

impl InstallPaths {
    /// The sibling paths of `live`. `live` must have a file name.
    pub fn new(live: &Path) -> Result<InstallPaths> {
        let name = live.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
            Error::InvalidArgument(format!("log dir {} has no name", live.display()))
        })?;
        let parent = match live.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(InstallPaths {
            live: live.to_path_buf(),
            tmp: parent.join(format!("{name}.compact-tmp")),
            backup: parent.join(format!("{name}.compact-bak")),
            trash: parent.join(format!("{name}.compact-trash")),
            manifest: parent.join(format!("{name}.compact-manifest")),
            manifest_tmp: parent.join(format!("{name}.compact-manifest.tmp")),
            parent,
        })
    }
}

/// The longest file name, in bytes, the install creates a sibling under (POSIX
/// `NAME_MAX` on Linux's file systems).
pub const NAME_BYTES_MAX: usize = 255;

impl InstallPaths {
    /// The paths of an install in progress that exist (temp dir, backup, manifest,
    /// the manifest's temp file, in that order): empty when none is pending. The
    /// trash is not one: it is never authoritative.
    pub fn pending(&self, fs: &dyn FileSystem) -> Vec<PathBuf> {
        [&self.tmp, &self.backup, &self.manifest, &self.manifest_tmp]
            .into_iter()
            .filter(|p| fs.exists(p))
            .cloned()
            .collect()
    }
}

impl InstallPaths {
    /// Refuses ([`Error::NameTooLong`]) a log directory whose longest sibling name
    /// (`D.compact-manifest.tmp`) would not fit [`NAME_BYTES_MAX`]: a compaction
    /// checks it before it creates anything, so it never stops halfway, past
    /// its temp dir, on a name the file system refuses.
    pub fn check_names_fit(&self) -> Result<()> {
        let bytes_of = |p: &Path| p.file_name().map_or(0, |n| n.len());
        let sibling = [
            &self.tmp,
            &self.backup,
            &self.trash,
            &self.manifest,
            &self.manifest_tmp,
        ]
        .into_iter()
        .max_by_key(|p| bytes_of(p))
        .unwrap_or(&self.manifest_tmp);
        let bytes = bytes_of(sibling);
        if bytes > NAME_BYTES_MAX {
            return Err(Error::NameTooLong {
                dir: self.live.clone(),
                sibling: sibling.clone(),
                bytes,
                bytes_max: NAME_BYTES_MAX,
            });
        }
        Ok(())
    }
}

/// Test-only: the protocol and its deliberately broken forms for the teeth checks.
#[cfg(any(test, feature = "test-variants"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InstallVariant {
    /// The protocol above.
    #[default]
    Manifest,
    /// The seeds' MiniKafka swap: no manifest; rename live -> backup, temp -> live,
    /// one parent sync, remove the backup.
    TwoRename,
    /// The protocol without the parent-directory sync after each rename.
    NoDirSync,
    /// Step 3 (live -> backup) runs before the manifest is written.
    BackupBeforeManifest,
    /// The protocol before the exact oracle: no parent sync between building the
    /// temp dir and naming it in the manifest, so a power loss can keep the
    /// manifest's rename and lose the temp dir's entry (model variant
    /// `no-temp-entry-sync`).
    NoTempEntrySync,
}

/// Which steps run: always all of them outside test builds.
#[derive(Debug, Clone, Copy)]
struct Knobs {
    manifest: bool,
    sync_after_rename: bool,
    backup_before_manifest: bool,
    sync_temp_entry: bool,
}

const CORRECT: Knobs = Knobs {
    manifest: true,
    sync_after_rename: true,
    backup_before_manifest: false,
    sync_temp_entry: true,
};

/// Runs steps 2 to 7 for a built and synced `D.compact-tmp` whose content `manifest`
/// describes. On return the new content is `D` and no sibling is left.
pub fn install(fs: &dyn FileSystem, live: &Path, manifest: &Manifest) -> Result<()> {
    let paths = InstallPaths::new(live)?;
    install_steps(fs, &paths, manifest, CORRECT)?;
    Trash { paths }.remove(fs)
}

/// The old content after a finished install: `D.compact-trash`, removed by
/// [`Trash::remove`] without the append lock (its unlinks grow with the log's
/// segment count). Dropped without removing, the next open removes it.
#[derive(Debug)]
#[must_use = "remove the trash once the append lock is released"]
pub struct Trash {
    paths: InstallPaths,
}

impl Trash {
    /// Step 7: removes `D.compact-trash`. No sync: a trash a power loss brings back
    /// is removed by the next open's recovery.
    pub fn remove(self, fs: &dyn FileSystem) -> Result<()> {
        fail_point!(fp::INSTALL_TRASH_REMOVE);
        fs.remove_dir_all(&self.paths.trash)
            .map_err(|e| Error::io(&self.paths.trash, e))
    }

    /// A trash a finished install left behind (its removal failed or never ran).
    pub fn left_over(paths: InstallPaths) -> Trash {
        Trash { paths }
    }

    /// The trash directory's path.
    pub fn path(&self) -> &Path {
        &self.paths.trash
    }
}

/// A concurrent cleaning's swap (docs/design.md section 6, steps a to 6), run under the
/// log's append lock: hard-links the tail segments (`tail_bases`, every segment at
/// or past the snapshot's active base) into the built temp dir, completes
/// `manifest` with their `.log` files and `next_offset`, and runs steps 2-6. The
/// tail's files must be durable (the caller flushed under the same lock). Returns
/// the trash to remove once the lock is released.
/// `write_derived` writes (and syncs) the temp dir's recovery point, step b, before
/// the temp dir's sync.
pub fn swap(
    fs: &dyn FileSystem,
    live: &Path,
    manifest: &mut Manifest,
    tail_bases: &[i64],
    next_offset: i64,
    write_derived: impl FnOnce(&Path) -> Result<()>,
) -> Result<Trash> {
    let paths = InstallPaths::new(live)?;
    tail::link(fs, &paths, tail_bases)?;
    write_derived(&paths.tmp)?;
    tail::sync_tmp(fs, &paths)?;
    tail::complete_manifest(fs, &paths, manifest, tail_bases, next_offset)?;
    finish(fs, &paths, manifest)
}

/// Steps 2-6 for a temp dir whose manifest is complete; the trash is the caller's.
pub(crate) fn finish(
    fs: &dyn FileSystem,
    paths: &InstallPaths,
    manifest: &Manifest,
) -> Result<Trash> {
    install_steps(fs, paths, manifest, CORRECT)?;
    Ok(Trash {
        paths: paths.clone(),
    })
}

/// [`install`] in a chosen (possibly broken) form. Test builds only.
#[cfg(any(test, feature = "test-variants"))]
pub fn install_with(
    fs: &dyn FileSystem,
    live: &Path,
    manifest: &Manifest,
    variant: InstallVariant,
) -> Result<()> {
    let knobs = match variant {
        InstallVariant::Manifest => CORRECT,
        InstallVariant::TwoRename => Knobs {
            manifest: false,
            ..CORRECT
        },
        InstallVariant::NoDirSync => Knobs {
            sync_after_rename: false,
            ..CORRECT
        },
        InstallVariant::BackupBeforeManifest => Knobs {
            backup_before_manifest: true,
            ..CORRECT
        },
        InstallVariant::NoTempEntrySync => Knobs {
            sync_temp_entry: false,
            ..CORRECT
        },
    };
    install_steps(fs, &InstallPaths::new(live)?, manifest, knobs)
}

fn install_steps(
    fs: &dyn FileSystem,
    paths: &InstallPaths,
    manifest: &Manifest,
    knobs: Knobs,
) -> Result<()> {
    assert!(fs.is_dir(&paths.tmp), "step 1 must have built the temp dir");
    assert!(fs.is_dir(&paths.live), "the live dir must exist");
    assert!(
        !fs.exists(&paths.backup),
        "a backup is left over: recover first"
    );
    if !knobs.manifest {
        // The seeds' swap, at the same fail points as ours so one scenario file
        // names the same crash window in both.
        fail_point!(fp::INSTALL_SWAP_RENAME_LIVE_BACKUP);
        fs.rename(&paths.live, &paths.backup)
            .map_err(|e| Error::io(&paths.backup, e))?;
        fail_point!(fp::INSTALL_SWAP_RENAME_TMP_LIVE);
        fs.rename(&paths.tmp, &paths.live)
            .map_err(|e| Error::io(&paths.live, e))?;
        sync_parent(fs, paths)?;
        fail_point!(fp::INSTALL_TRASH_RENAME);
        fs.remove_dir_all(&paths.backup)
            .map_err(|e| Error::io(&paths.backup, e))?;
        return sync_parent(fs, paths);
    }
    if knobs.backup_before_manifest {
        install_backup(fs, paths)?;
        install_commit(fs, paths, manifest, knobs)?;
    } else {
        install_commit(fs, paths, manifest, knobs)?;
        install_backup(fs, paths)?;
    }
    install_publish(fs, paths)?;
    install_cleanup(fs, paths)
}

/// Step 2: the manifest becomes durable under its final name. Before this the
/// compaction never happened; after it, recovery rolls forward when it can.
fn install_commit(
    fs: &dyn FileSystem,
    paths: &InstallPaths,
    manifest: &Manifest,
    knobs: Knobs,
) -> Result<()> {
    // The temp dir's own entry in the parent (step 1 synced its files and its
    // entries, not the name that holds it): durable before the manifest names it,
    // or a power loss could keep the manifest's rename and lose the temp dir, and a
    // durable manifest would point at nothing (the exact crash oracle and the model's
    // `committed_means_new` found this window).
    if knobs.sync_temp_entry {
        fail_point!(fp::INSTALL_MANIFEST_SYNC_TEMP_ENTRY);
        sync_parent(fs, paths)?;
    }
    let tmp = &paths.manifest_tmp;
    fs.write_new(tmp, &manifest.encode())
        .map_err(|e| Error::io(tmp, e))?;
    // Content durable before the name: a power loss must never leave a manifest
    // name over torn bytes.
    fail_point!(fp::INSTALL_MANIFEST_SYNC_TMP);
    fs.sync_file(tmp).map_err(|e| Error::io(tmp, e))?;
    fail_point!(fp::INSTALL_MANIFEST_RENAME);
    fs.rename(tmp, &paths.manifest)
        .map_err(|e| Error::io(&paths.manifest, e))?;
    // The commit point: the rename is durable only with the parent synced.
    if knobs.sync_after_rename {
        fail_point!(fp::INSTALL_MANIFEST_SYNC_PARENT);
        sync_parent(fs, paths)?;
    }
    Ok(())
}

/// Step 3: the old content moves aside (it stays whole until step 5).
fn install_backup(fs: &dyn FileSystem, paths: &InstallPaths) -> Result<()> {
    fail_point!(fp::INSTALL_SWAP_RENAME_LIVE_BACKUP);
    fs.rename(&paths.live, &paths.backup)
        .map_err(|e| Error::io(&paths.backup, e))?;
    // No parent sync here: the manifest is durable, so whichever of this rename and
    // the next survives a power loss, recovery knows the new content and rolls
    // forward (the sync ablation found this sync redundant; the install model holds
    // without it, docs/design.md section 6).
    Ok(())
}

/// Step 4: the new content becomes `D`.
fn install_publish(fs: &dyn FileSystem, paths: &InstallPaths) -> Result<()> {
    fail_point!(fp::INSTALL_SWAP_RENAME_TMP_LIVE);
    fs.rename(&paths.tmp, &paths.live)
        .map_err(|e| Error::io(&paths.live, e))?;
    // Made durable by the parent sync after the backup's removal (step 5), which
    // `compact` always reaches before it returns; until then recovery rolls forward
    // from the durable manifest (redundant per the sync ablation and the model).
    Ok(())
}

/// Steps 5 and 6: the backup becomes the trash first, the manifest goes last, so as
/// long as the backup may exist the manifest says which content is new. A rename,
/// not a removal: its cost does not grow with the log, so the append lock is held
/// for a bounded time (the trash is removed after it, step 7).
fn install_cleanup(fs: &dyn FileSystem, paths: &InstallPaths) -> Result<()> {
    assert!(
        !fs.exists(&paths.trash),
        "a trash is left over: recover first"
    );
    fail_point!(fp::INSTALL_TRASH_RENAME);
    fs.rename(&paths.backup, &paths.trash)
        .map_err(|e| Error::io(&paths.trash, e))?;
    // Steps 3-5 durable together while the manifest still says which content is
    // new: from here no backup can come back, only a trash (never authoritative).
    fail_point!(fp::INSTALL_TRASH_SYNC_PARENT);
    sync_parent(fs, paths)?;
    fail_point!(fp::INSTALL_CLEANUP_REMOVE_MANIFEST);
    fs.remove_file(&paths.manifest)
        .map_err(|e| Error::io(&paths.manifest, e))?;
    // The install model finds this sync redundant (a manifest brought back finds
    // the new content live), but the model ends with the install: a manifest that
    // comes back after the log has moved on is stale, sends recovery down the
    // rolled-back path and makes read-only opens refuse until a writable one. The
    // sync keeps a finished install finished.
    fail_point!(fp::INSTALL_CLEANUP_SYNC_PARENT_MANIFEST);
    sync_parent(fs, paths)
}

fn sync_parent(fs: &dyn FileSystem, paths: &InstallPaths) -> Result<()> {
    fs.sync_dir(&paths.parent)
        .map_err(|e| Error::io(&paths.parent, e))
}

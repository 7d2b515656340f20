//! Install recovery: the decision table run by `Log::open` before anything else.
//!
//! | manifest | live `D`        | temp          | backup | case                  | action |
//! |----------|-----------------|---------------|--------|-----------------------|--------|
//! | none     | yes             | any           | no     | `NotCommitted` / `Clean` | remove temp dir and manifest temp |
//! | none     | no              | no            | no     | `Clean` (no log yet)  | nothing |
//! | none     | any             | any           | yes    | error `Ambiguous`     | nothing |
//! | none     | no              | yes           | no     | error `Ambiguous`     | nothing |
//! | damaged  | any             | any           | any    | error `Corrupt`       | nothing |
//! | valid    | matches         | any           | any    | `CommittedLiveIsNew`  | remove temp, backup, manifest |
//! | valid    | no / old        | matches       | no     | `CommittedRollForward`| old `D` -> backup, temp -> `D`, remove backup, manifest |
//! | valid    | yes, old        | no match      | no     | `RolledBack`          | remove temp, manifest |
//! | valid    | no              | no match      | yes    | `RolledBackFromBackup`| backup -> `D`, remove temp, manifest |
//! | valid    | yes, old        | matches / not | yes    | error `Ambiguous`     | nothing |
//! | valid    | no              | no match      | no     | error `Ambiguous`     | nothing |
//!
//! A `D.compact-trash` (the old content after the new one went live) is never
//! authoritative: every row first removes it (after the first parent sync), then
//! decides as above ignoring it.
//!
//! Every action is a rename or remove followed by a parent sync, and each leaves a
//! state that is again a row of this table, so a crash during recovery is
//! recovered by the next open (recovery is idempotent).

use std::path::Path;

#[cfg(feature = "serde")]
use serde::Serialize;

use crate::error::{Error, Result};
use crate::fail_point;
use crate::format::manifest::Manifest;
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint as fp;
use crate::fs::FileSystem;

use super::validate;
use super::InstallPaths;

/// Which row of the decision table applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum InstallCase {
    /// No install state next to the log directory.
    #[default]
    Clean,
    /// A compaction never committed: its temp dir / manifest temp were removed.
    NotCommitted,
    /// Committed and `D` already holds the new content: leftovers removed.
    CommittedLiveIsNew,
    /// Committed and the temp dir holds the new content: it became `D`.
    CommittedRollForward,
    /// Committed but no directory holds the new content; `D` (old) stays.
    RolledBack,
    /// Committed but no directory holds the new content; the backup (old) became `D`.
    RolledBackFromBackup,
}

/// What install recovery found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct InstallRecovery {
    /// Which case of the decision table applied.
    pub case: InstallCase,
    /// Sibling paths removed or renamed, in order, as `"op path"` lines.
    pub actions: Vec<String>,
}

/// Files a manifest may name whatever the directories hold (about 1 MiB of
/// manifest): see the manifest read in [`recover`].
const MANIFEST_FILES_FLOOR: usize = 4096;

/// Runs the decision table for the log directory `live` (see the module docs).
pub fn recover(fs: &dyn FileSystem, live: &Path) -> Result<InstallRecovery> {
    let paths = InstallPaths::new(live)?;
    let mut out = InstallRecovery {
        case: InstallCase::Clean,
        actions: Vec::new(),
    };
    if fs.exists(&paths.trash) {
        // Only a finished swap makes a trash, after the new content went live.
        recover_sync_first(fs, &paths)?;
        fail_point!(fp::INSTALL_RECOVER_REMOVE_TRASH);
        remove_dir(fs, &paths.trash, &mut out)?;
        recover_sync(fs, &paths)?;
    }
    let live_exists = fs.exists(&paths.live);
    let tmp_exists = fs.exists(&paths.tmp);
    let backup_exists = fs.exists(&paths.backup);
    if !fs.exists(&paths.manifest) {
        if backup_exists || (!live_exists && tmp_exists) {
            return Err(ambiguous(
                &paths,
                "a compaction backup or temp dir without a committed manifest and no live dir to trust",
            ));
        }
        if fs.exists(&paths.manifest_tmp) || tmp_exists {
            recover_sync_first(fs, &paths)?;
        }
        if fs.exists(&paths.manifest_tmp) {
            fail_point!(fp::INSTALL_RECOVER_REMOVE_MANIFEST_TMP);
            remove_file(fs, &paths.manifest_tmp, &mut out)?;
            out.case = InstallCase::NotCommitted;
        }
        if tmp_exists {
            fail_point!(fp::INSTALL_RECOVER_REMOVE_TMP);
            remove_dir(fs, &paths.tmp, &mut out)?;
            out.case = InstallCase::NotCommitted;
        }
        if out.case != InstallCase::Clean {
            recover_sync(fs, &paths)?;
        }
        return Ok(out);
    }
    // The manifest names the files of the new content, the live dir or the temp
    // dir: it holds at most as many entries as the larger of them (or a floor of
    // `FILES_FLOOR`, so that a state where neither is there still decodes to its
    // decision-table row), and a larger file is corrupt (the commit point is
    // authoritative), not read.
    let entries = |dir: &std::path::Path| {
        if fs.is_dir(dir) {
            fs.list_dir(dir).map(|names| names.len()).unwrap_or(0)
        } else {
            0
        }
    };
    let files = entries(&paths.live)
        .max(entries(&paths.tmp))
        .max(MANIFEST_FILES_FLOOR);
    let bytes_max = crate::format::manifest::bytes_max(files);
    let Some(bytes) = crate::fs::read_bounded(fs, &paths.manifest, bytes_max)
        .map_err(|e| Error::io(&paths.manifest, e))?
    else {
        let bytes = fs
            .len(&paths.manifest)
            .map_err(|e| Error::io(&paths.manifest, e))?;
        return Err(Error::corrupt(
            &paths.manifest,
            bytes_max,
            crate::error::CorruptKind::TooLarge { bytes, bytes_max },
        ));
    };
    let manifest = Manifest::decode(&bytes).map_err(|e| e.at(&paths.manifest, 0))?;
    recover_sync_first(fs, &paths)?;
    let live_is_new = live_exists && validate::matches(fs, &paths.live, &manifest)?;
    let tmp_is_new = !live_is_new && tmp_exists && validate::matches(fs, &paths.tmp, &manifest)?;
    if live_is_new || tmp_is_new {
        // The directory is the manifest's byte for byte; its meaning must hold too
        // before anything is renamed or removed on the manifest's word.
        let new = if live_is_new { &paths.live } else { &paths.tmp };
        validate::check_next_offset(fs, new, &manifest, &paths.manifest)?;
    }
    if live_is_new {
        out.case = InstallCase::CommittedLiveIsNew;
    } else if tmp_is_new {
        if backup_exists && live_exists {
            return Err(ambiguous(
                &paths,
                "old content in both the live dir and the backup",
            ));
        }
        if live_exists {
            // Step 3 again: the old content moves aside, whole.
            fail_point!(fp::INSTALL_RECOVER_RENAME_LIVE_ASIDE);
            rename(fs, &paths.live, &paths.backup, &mut out)?;
            recover_sync(fs, &paths)?;
        }
        // Step 4 again.
        fail_point!(fp::INSTALL_RECOVER_RENAME_TMP_LIVE);
        rename(fs, &paths.tmp, &paths.live, &mut out)?;
        recover_sync(fs, &paths)?;
        out.case = InstallCase::CommittedRollForward;
    } else if live_exists {
        if backup_exists {
            return Err(ambiguous(
                &paths,
                "no directory matches the manifest and both the live dir and the backup exist",
            ));
        }
        out.case = InstallCase::RolledBack;
    } else if backup_exists {
        fail_point!(fp::INSTALL_RECOVER_RENAME_BACKUP_LIVE);
        rename(fs, &paths.backup, &paths.live, &mut out)?;
        recover_sync(fs, &paths)?;
        out.case = InstallCase::RolledBackFromBackup;
    } else {
        return Err(ambiguous(
            &paths,
            "a committed manifest but neither the new nor the old content exists",
        ));
    }
    // `D` now holds the content to keep; everything else goes, the manifest last.
    if fs.exists(&paths.tmp) {
        fail_point!(fp::INSTALL_RECOVER_REMOVE_TMP);
        remove_dir(fs, &paths.tmp, &mut out)?;
    }
    if fs.exists(&paths.backup) {
        fail_point!(fp::INSTALL_RECOVER_REMOVE_BACKUP);
        remove_dir(fs, &paths.backup, &mut out)?;
    }
    if fs.exists(&paths.manifest_tmp) {
        fail_point!(fp::INSTALL_RECOVER_REMOVE_MANIFEST_TMP);
        remove_file(fs, &paths.manifest_tmp, &mut out)?;
    }
    recover_sync(fs, &paths)?;
    fail_point!(fp::INSTALL_RECOVER_REMOVE_MANIFEST);
    remove_file(fs, &paths.manifest, &mut out)?;
    recover_sync(fs, &paths)?;
    Ok(out)
}

/// For read-only opens: an error if an install is pending next to `live` (a
/// writable open, e.g. `seglog recover`, must decide it first). A read-only open
/// takes no writer lock, so it cannot tell a live writer's install from one a
/// crash cut short: the message names both.
pub fn pending(fs: &dyn FileSystem, live: &Path) -> Result<()> {
    let present = InstallPaths::new(live)?.pending(fs);
    if present.is_empty() {
        return Ok(());
    }
    Err(Error::Ambiguous {
        reason: "a compaction install is pending: a writer may be installing it right now (read again once it is done), or one was cut short (`seglog recover` finishes or rolls it back)".into(),
        dirs: present,
    })
}

fn ambiguous(paths: &InstallPaths, reason: &str) -> Error {
    Error::Ambiguous {
        reason: reason.to_string(),
        dirs: vec![
            paths.live.clone(),
            paths.tmp.clone(),
            paths.backup.clone(),
            paths.manifest.clone(),
        ],
    }
}

/// Before recovery changes anything: make every directory operation the crashed
/// process completed durable. A process crash leaves them in the page cache; without
/// this sync a power loss during recovery can keep recovery's own rename and lose an
/// earlier one (e.g. the manifest's), leaving a state that fails closed
/// (crash-scenarios/recovery-syncs-parent-before-acting.toml; the install model's
/// `no-recovery-sync` variant).
fn recover_sync_first(fs: &dyn FileSystem, paths: &InstallPaths) -> Result<()> {
    fail_point!(fp::INSTALL_RECOVER_SYNC_PARENT_FIRST);
    fs.sync_dir(&paths.parent)
        .map_err(|e| Error::io(&paths.parent, e))
}

fn recover_sync(fs: &dyn FileSystem, paths: &InstallPaths) -> Result<()> {
    fail_point!(fp::INSTALL_RECOVER_SYNC_PARENT);
    fs.sync_dir(&paths.parent)
        .map_err(|e| Error::io(&paths.parent, e))
}

fn rename(fs: &dyn FileSystem, from: &Path, to: &Path, out: &mut InstallRecovery) -> Result<()> {
    fs.rename(from, to).map_err(|e| Error::io(from, e))?;
    out.actions
        .push(format!("rename {} -> {}", from.display(), to.display()));
    Ok(())
}

fn remove_dir(fs: &dyn FileSystem, path: &Path, out: &mut InstallRecovery) -> Result<()> {
    fs.remove_dir_all(path).map_err(|e| Error::io(path, e))?;
    out.actions.push(format!("remove {}", path.display()));
    Ok(())
}

fn remove_file(fs: &dyn FileSystem, path: &Path, out: &mut InstallRecovery) -> Result<()> {
    fs.remove_file(path).map_err(|e| Error::io(path, e))?;
    out.actions.push(format!("remove {}", path.display()));
    Ok(())
}

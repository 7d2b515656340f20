//! The protocol's steps and the variants the checker compares.

use serde::{Deserialize, Serialize};

/// One protocol operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum InstallOp {
    /// Create `D.compact-tmp` and write into it (unsynced) the compacted segments,
    /// their index files and a recovery point vouching for the closed ones: the new
    /// directory opens without reading segment data (ours). A clean segment no dirty
    /// key can touch is *carried*: hard-linked into the temp dir (a new name for
    /// the live directory's inode, whose data is already durable), so it is one
    /// more unsynced entry of the temp dir, made durable by its fsync.
    BuildTemp,
    /// [`InstallOp::BuildTemp`] without the carried segment's link (variants that
    /// carry it differently).
    BuildTempUncarried,
    /// Hard-link the carried segment into the temp dir: a new unsynced entry of it.
    LinkCarried,
    /// A cleaning's swap, step a: hard-link the tail (the live active
    /// segment, appended to during the build) into the temp dir, under the append
    /// lock: a new unsynced entry of it, whose data is the live inode's (flushed).
    LinkTail,
    /// Rename the carried segment from `D` into the temp dir (no copy, but `D`
    /// loses it): the broken `carry-by-rename`.
    MoveCarried,
    /// [`InstallOp::BuildTemp`] without the index files and the recovery point (the
    /// protocol without "no reopen after cleanup"): the open after the
    /// install scans every segment and writes the recovery point itself.
    BuildTempBare,
    /// The open after the install writes a recovery point into `D` (its own crash
    /// safety is model (e)'s: here one durable step).
    WriteLivePoint,
    /// fsync every file in the temp dir.
    SyncTempFiles,
    /// fsync the temp dir itself.
    SyncTempDir,
    /// Write the manifest to its temp name (unsynced).
    WriteManifestTemp,
    SyncManifestTemp,
    /// Rename the manifest temp to `D.compact-manifest`.
    RenameManifest,
    /// fsync the parent directory.
    SyncParent,
    RenameLiveToBackup,
    RenameTempToLive,
    RemoveBackup,
    RemoveManifest,
}

/// The protocol variants; only [`InstallVariant::Manifest`] is correct.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum InstallVariant {
    /// Ours: manifest commit point, parent synced after every step.
    Manifest,
    /// The seeds' swap: two renames, no manifest.
    TwoRename,
    /// Ours without the parent-directory syncs.
    NoDirSync,
    /// Ours without syncing the temp dir's files and entries before the commit.
    NoTempSync,
    /// Ours, but recovery acts before syncing the parent directory it found.
    NoRecoverySync,
    /// Ours without the parent sync that ends step 1 (the protocol before the exact
    /// oracle): the manifest's rename can become durable while the temp dir's own
    /// entry in the parent is lost, so a durable manifest points at nothing and
    /// recovery rolls back past the commit point.
    NoTempEntrySync,
    /// Ours, but the temp dir carries no recovery point: the open after the install
    /// scans the new directory and writes one. A crash after the commit point and
    /// before that write leaves new content that no recovery point vouches for.
    PointOnReopen,
    /// Ours, but the carried segment is renamed out of `D` into the temp dir instead
    /// of linked: the old content is no longer whole, so any crash before the
    /// commit point (or a roll back) recovers a log with a hole.
    CarryByRename,
    /// Ours, but the carried segment is linked after the temp dir's fsync: its
    /// entry is not durable at the commit point, so a power loss after it can keep
    /// the manifest and lose the link (new content with a hole, after the commit).
    LinkWithoutDirSync,
    /// Ours without the steps whose bits are set in the mask (bit `n`: step `n`;
    /// syncs, for the sync ablation's judge).
    WithoutSteps(u32),
}

impl InstallVariant {
    pub fn steps(self) -> Vec<InstallOp> {
        use InstallOp::*;
        let ours = vec![
            BuildTemp,
            SyncTempFiles,
            // Redundant in ours (the swap's sync of the same dir follows before
            // anything names it; the sync ablation and the checker agree), kept for
            // `compaction::compact_dir`, which installs without a tail.
            SyncTempDir,
            LinkTail,
            SyncTempDir, // the tail's entries (step a), and the build's with them
            SyncParent,  // the temp dir's entry: durable before anything names it
            WriteManifestTemp,
            SyncManifestTemp,
            RenameManifest,
            SyncParent, // commit point
            // No sync after either rename: the manifest is durable, so recovery rolls
            // forward from any subset of them (the sync ablation proved both syncs
            // redundant, and the checker agrees).
            RenameLiveToBackup,
            RenameTempToLive,
            RemoveBackup,
            SyncParent,
            RemoveManifest,
            // Redundant within this model (a manifest brought back finds the new
            // content live), kept so that a later power loss cannot bring back a
            // stale manifest after the log has moved on (outside this model).
            SyncParent,
        ];
        match self {
            InstallVariant::Manifest | InstallVariant::NoRecoverySync => ours,
            InstallVariant::WithoutSteps(mask) => crate::models::without_steps(ours, mask),
            InstallVariant::NoDirSync => ours.into_iter().filter(|s| *s != SyncParent).collect(),
            InstallVariant::NoTempEntrySync => {
                let mut steps = ours;
                let at = steps
                    .iter()
                    .rposition(|s| *s == SyncTempDir)
                    .expect("ours syncs the temp dir");
                assert_eq!(steps.remove(at + 1), SyncParent);
                steps
            }
            InstallVariant::PointOnReopen => {
                let mut steps = ours;
                assert_eq!(steps[0], BuildTemp);
                steps[0] = BuildTempBare;
                steps.push(WriteLivePoint);
                steps
            }
            InstallVariant::CarryByRename => {
                let mut steps = ours;
                assert_eq!(steps[0], BuildTemp);
                steps[0] = BuildTempUncarried;
                steps.insert(1, MoveCarried);
                steps
            }
            InstallVariant::LinkWithoutDirSync => {
                let mut steps = ours;
                assert_eq!(steps[0], BuildTemp);
                steps[0] = BuildTempUncarried;
                let at = steps
                    .iter()
                    .rposition(|s| *s == SyncTempDir)
                    .expect("ours syncs the temp dir");
                steps.insert(at + 1, LinkCarried);
                steps
            }
            InstallVariant::NoTempSync => ours
                .into_iter()
                .filter(|s| !matches!(s, SyncTempFiles | SyncTempDir))
                .collect(),
            InstallVariant::TwoRename => vec![
                BuildTemp,
                SyncTempFiles,
                SyncTempDir,
                RenameLiveToBackup,
                RenameTempToLive,
                SyncParent,
                RemoveBackup,
                SyncParent,
            ],
        }
    }
}

//! The file system next to `D` as the install model sees it: names in the parent
//! directory, the objects they point at, and the durability of each object's data;
//! the protocol's operations on it, and what a crash leaves behind.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::protocol::InstallOp;
use super::{CrashSemantics, Lost};
use crate::models::dir::{subsets, Dir, DirOp};

/// Names in the parent directory of `D`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Name {
    /// `D`
    Live,
    /// `D.compact-tmp`
    Temp,
    /// `D.compact-bak`
    Backup,
    /// `D.compact-manifest`
    Manifest,
    /// `D.compact-manifest.tmp`
    ManifestTemp,
}

/// The objects the names can point at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Obj {
    OldDir,
    NewDir,
    ManifestFile,
}

/// What a directory holds, as recovery's validation sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Content {
    Old,
    New,
    Torn,
}

/// Durability of one object's data (files and, for a directory, its own entries).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Data {
    pub files_synced: bool,
    pub entries_synced: bool,
    /// Lost to a power loss before it was synced.
    pub torn: bool,
}

impl Data {
    const DURABLE: Data = Data {
        files_synced: true,
        entries_synced: true,
        torn: false,
    };

    pub fn durable(&self) -> bool {
        self.files_synced && self.entries_synced
    }
}

/// The file system next to `D`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FsState {
    pub parent: Dir<Name, Obj>,
    pub data: BTreeMap<Obj, Data>,
    /// The directories holding a recovery point (with the index files it vouches
    /// for) over their closed segments: an open trusts those without reading them.
    /// The point is one more file of its directory, so it is torn with it.
    pub points: BTreeSet<Obj>,
    /// The directories holding a name of the *carried* segment: one closed segment
    /// whose inode (data durable since its roll) the old and the new content share.
    /// Both contents list it, so a directory without it is not whole (`Torn`).
    /// Removing a directory unlinks its names only: the inode lives on while the
    /// other directory links it (POSIX link counts), so removing the backup never
    /// touches the new live's copy.
    pub carried: BTreeSet<Obj>,
}

impl FsState {
    pub(super) fn initial() -> FsState {
        FsState {
            parent: Dir::synced(BTreeMap::from([(Name::Live, Obj::OldDir)])),
            data: BTreeMap::from([(Obj::OldDir, Data::DURABLE)]),
            points: BTreeSet::from([Obj::OldDir]),
            carried: BTreeSet::from([Obj::OldDir]),
        }
    }

    /// Content of the directory at `name`, if it exists.
    pub fn content(&self, name: Name) -> Option<Content> {
        let obj = *self.parent.get(&name)?;
        let torn = self.data.get(&obj).is_some_and(|d| d.torn)
            || (obj != Obj::ManifestFile && !self.carried.contains(&obj));
        Some(match (obj, torn) {
            (_, true) | (Obj::ManifestFile, _) => Content::Torn,
            (Obj::OldDir, false) => Content::Old,
            (Obj::NewDir, false) => Content::New,
        })
    }

    /// The directory at `name` holds an intact recovery point: its open reads no
    /// closed segment's data.
    pub fn trusted(&self, name: Name) -> bool {
        self.content(name).is_some_and(|c| c != Content::Torn)
            && self
                .parent
                .get(&name)
                .is_some_and(|o| self.points.contains(o))
    }

    /// A manifest exists at its final name and its checksum holds.
    pub fn manifest_valid(&self) -> bool {
        self.parent.get(&Name::Manifest) == Some(&Obj::ManifestFile)
            && self.data.get(&Obj::ManifestFile).is_some_and(|d| !d.torn)
    }

    fn sync_data(&mut self, obj: Obj, files: bool, entries: bool) {
        let data = self.data.entry(obj).or_default();
        data.files_synced |= files;
        data.entries_synced |= entries;
    }

    fn unsynced_objects(&self) -> Vec<Obj> {
        self.data
            .iter()
            .filter(|(_, d)| !d.durable() && !d.torn)
            .map(|(o, _)| *o)
            .collect()
    }
}

pub(super) fn run_step(fs: &mut FsState, op: InstallOp) {
    use InstallOp::*;
    let rename = |from, to| DirOp::Rename { from, to };
    match op {
        BuildTemp | BuildTempBare | BuildTempUncarried => {
            fs.parent.run(DirOp::Create(Name::Temp, Obj::NewDir));
            fs.data.insert(Obj::NewDir, Data::default());
            if op != BuildTempBare {
                fs.points.insert(Obj::NewDir);
            }
            if op != BuildTempUncarried {
                // The link is one of the temp dir's entries, unsynced like the rest.
                fs.carried.insert(Obj::NewDir);
            }
        }
        LinkCarried => {
            fs.carried.insert(Obj::NewDir);
            fs.data.entry(Obj::NewDir).or_default().entries_synced = false;
        }
        LinkTail => {
            fs.data.entry(Obj::NewDir).or_default().entries_synced = false;
        }
        MoveCarried => {
            // Pessimism does not matter here: a process crash keeps the rename.
            fs.carried.remove(&Obj::OldDir);
            fs.carried.insert(Obj::NewDir);
            fs.data.entry(Obj::NewDir).or_default().entries_synced = false;
        }
        WriteLivePoint => {
            if let Some(obj) = fs.parent.get(&Name::Live) {
                fs.points.insert(*obj);
            }
        }
        SyncTempFiles => fs.sync_data(Obj::NewDir, true, false),
        SyncTempDir => fs.sync_data(Obj::NewDir, false, true),
        WriteManifestTemp => {
            fs.parent
                .run(DirOp::Create(Name::ManifestTemp, Obj::ManifestFile));
            // A file has no entries of its own.
            fs.data.insert(
                Obj::ManifestFile,
                Data {
                    entries_synced: true,
                    ..Data::default()
                },
            );
        }
        SyncManifestTemp => fs.sync_data(Obj::ManifestFile, true, false),
        RenameManifest => fs.parent.run(rename(Name::ManifestTemp, Name::Manifest)),
        SyncParent => fs.parent.sync(),
        RenameLiveToBackup => fs.parent.run(rename(Name::Live, Name::Backup)),
        RenameTempToLive => fs.parent.run(rename(Name::Temp, Name::Live)),
        RemoveBackup => fs.parent.run(DirOp::Remove(Name::Backup)),
        RemoveManifest => fs.parent.run(DirOp::Remove(Name::Manifest)),
    }
}

pub(super) fn crash(fs: &mut FsState, semantics: CrashSemantics, lost: &[Lost]) {
    if semantics == CrashSemantics::Process {
        return;
    }
    let lost_ops: Vec<usize> = lost
        .iter()
        .filter_map(|l| match l {
            Lost::DirOp { n, .. } => Some(*n),
            Lost::Data(_) => None,
        })
        .collect();
    for (obj, data) in fs.data.iter_mut() {
        if !data.durable() && !data.torn {
            data.torn = lost.contains(&Lost::Data(*obj));
        }
        // After the reboot what is on disk is all there is: durable by definition.
        data.files_synced = true;
        data.entries_synced = true;
    }
    fs.parent.power_loss(&lost_ops);
}

/// Every way a power loss can hit `fs`: each subset of unsynced items lost.
pub(super) fn power_losses(fs: &FsState) -> Vec<Vec<Lost>> {
    let mut items: Vec<Lost> = fs
        .parent
        .pending
        .iter()
        .enumerate()
        .map(|(n, op)| Lost::DirOp { n, op: op.clone() })
        .collect();
    items.extend(fs.unsynced_objects().into_iter().map(Lost::Data));
    subsets(items.len())
        .into_iter()
        .map(|s| s.into_iter().map(|i| items[i].clone()).collect())
        .collect()
}

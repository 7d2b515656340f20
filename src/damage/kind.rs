//! Where a damaged file lives (live dir, temp dir, backup, next to the log) and
//! what kind of file it is: damages are planned and counted by kind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::sweep::LOG_DIR;
use seglog::format::{checkpoint, filename};
use seglog::install::InstallPaths;

/// Which directory a file lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Live,
    Temp,
    Backup,
    /// A file next to the log dir (the manifest and its temp file).
    Parent,
}

/// The file kinds damages are counted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    ClosedLog,
    ActiveLog,
    OffsetIndex,
    TimeIndex,
    Checkpoint,
    CheckpointTmp,
    TempLog,
    /// An index file or the recovery point the compaction wrote into its temp dir:
    /// derived, outside the manifest; the open rebuilds or ignores it when damaged.
    TempDerived,
    TempOther,
    BackupLog,
    BackupOther,
    Manifest,
    ManifestTmp,
    /// The recovery point, the clean-shutdown marker and their temps: derived, ignored
    /// when damaged (the open scans instead) and rewritten.
    TrustCheckpoint,
    /// A closed segment's key summary (`.keys`) in the live dir: derived, outside
    /// the manifest; the open keeps it and only a cleaning's carry decision reads
    /// it, which must then rewrite the segment, never carry it on the damage.
    KeySummary,
    /// A closed segment removed, cut at a batch boundary, emptied or replaced by a
    /// directory (`vanish`): refused or named, never served in silence.
    VanishedSegment,
    /// Kafka's `.swap`, `.cleaned` or `.deleted` file placed beside a segment
    /// (`leftover`): judged by Kafka's loader's rules as the engine states them.
    KafkaLeftover,
    /// Not a damage: the point's log closed cleanly, then opened and closed again
    /// and opened read-only (`quiet`): no write, fsync, rename or remove.
    QuietReopen,
    Other,
}

impl FileKind {
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    pub fn is_log(self) -> bool {
        matches!(
            self,
            FileKind::ClosedLog | FileKind::ActiveLog | FileKind::TempLog | FileKind::BackupLog
        )
    }
}

/// Where a file is, and what kind it is.
pub fn classify(path: &Path, image: &BTreeMap<PathBuf, Vec<u8>>) -> (Role, FileKind) {
    let paths = install_paths();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parent = path.parent().unwrap_or(Path::new("/"));
    let role = if parent == paths.live {
        Role::Live
    } else if parent == paths.tmp {
        Role::Temp
    } else if parent == paths.backup {
        Role::Backup
    } else {
        Role::Parent
    };
    let is_log = filename::parse(&name).is_some_and(|(_, s)| s == filename::LOG_SUFFIX);
    let kind = match role {
        Role::Parent if path == paths.manifest => FileKind::Manifest,
        Role::Parent if path == paths.manifest_tmp => FileKind::ManifestTmp,
        Role::Parent => FileKind::Other,
        Role::Temp if is_log => FileKind::TempLog,
        Role::Temp if seglog::install::is_derived(&name) => FileKind::TempDerived,
        Role::Temp => FileKind::TempOther,
        Role::Backup if is_log => FileKind::BackupLog,
        Role::Backup => FileKind::BackupOther,
        Role::Live if is_log => {
            if last_log(image, parent).as_deref() == Some(path) {
                FileKind::ActiveLog
            } else {
                FileKind::ClosedLog
            }
        }
        Role::Live => match filename::parse(&name) {
            Some((_, filename::INDEX_SUFFIX)) => FileKind::OffsetIndex,
            Some((_, filename::TIME_INDEX_SUFFIX)) => FileKind::TimeIndex,
            Some((_, filename::KEYS_SUFFIX)) => FileKind::KeySummary,
            _ if name == checkpoint::CHECKPOINT_NAME => FileKind::Checkpoint,
            _ if name == checkpoint::CHECKPOINT_TMP_NAME => FileKind::CheckpointTmp,
            _ if seglog::format::recovery_point::NAMES.contains(&name.as_str()) => {
                FileKind::TrustCheckpoint
            }
            _ => FileKind::Other,
        },
    };
    (role, kind)
}

/// The `.log` with the highest base offset directly in `dir`.
pub fn last_log(image: &BTreeMap<PathBuf, Vec<u8>>, dir: &Path) -> Option<PathBuf> {
    image
        .keys()
        .filter(|p| p.parent() == Some(dir))
        .filter(|p| is_log(p))
        .max()
        .cloned()
}

pub fn is_log(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(filename::parse)
        .is_some_and(|(_, s)| s == filename::LOG_SUFFIX)
}

/// The recovery point, the marker or a temp of theirs: derived files an open may
/// ignore, replace or remove.
pub fn is_trust(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| seglog::format::recovery_point::NAMES.contains(&n))
}

pub fn is_index(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(filename::parse)
        .is_some_and(|(_, s)| s != filename::LOG_SUFFIX)
}

pub fn install_paths() -> InstallPaths {
    InstallPaths::new(Path::new(LOG_DIR)).unwrap_or_else(|_| unreachable!("LOG_DIR has a name"))
}

//! Injected I/O errors: which error a failing call returns, and what it leaves.
//!
//! [`super::SimFs::fail_nth_with`] makes one mutating call fail with one of these.
//! What each leaves behind, the way Linux does:
//! * [`FaultKind::Eio`] and [`FaultKind::Enospc`]: the call changes nothing. For
//!   `sync_file` that means the file's data is *not* made durable, and worse
//!   (fsyncgate): Linux marks the pages whose writeback failed clean, so reads
//!   still see them but no later fsync writes them. SimFs keeps them readable and
//!   lets a power loss turn them into zeros even after a later `sync_file`
//!   succeeded (`LostItem::FailedWriteback`), until a truncation drops them. An
//!   engine that carries on as if the fsync had worked loses what it reported
//!   durable; one that only reopens reads pages the disk does not hold.
//! * [`FaultKind::ShortWrite`]: an `append` writes the first half of its data (a
//!   short `write(2)`), then fails with `ENOSPC` (what the retry of the rest returns
//!   on a full disk). The prefix stays in the file as written-but-unsynced bytes.
//!   On any other call it fails like `Enospc`.
//! * [`FaultKind::DiskFull`]: the disk is full from call `k` on and stays full
//!   until [`super::SimFs::clear_faults`] frees it: every call that needs space
//!   (`append`, `create_file`, `create_dir_all`, `hard_link`) fails with `ENOSPC`
//!   and changes nothing; syncs, renames, truncations and removals still work (they
//!   allocate nothing, and a removal frees space). Not one failing call: every
//!   retry, and every reopen that has to write, fails the same way.
//! * [`FaultKind::Emfile`]: the process is out of file descriptors (`EMFILE`), on
//!   a call that opens one ([`Call::opens_descriptor`]: `StdFs` opens a file that
//!   is not in its handle cache, or the directory it fsyncs, and has already
//!   closed its idle handles and retried once). The call changes nothing, and a
//!   failed `sync_file` never reached the disk: unlike `EIO`, nothing is doomed,
//!   and a later fsync writes the pages. A file with writes not yet synced keeps
//!   its handle (`crate::fs::handles`), so in `StdFs` its fsync never opens one;
//!   SimFs fails it all the same, the harder case.

use std::fmt;
use std::io;
use std::str::FromStr;

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Linux `EIO`.
pub const EIO: i32 = 5;
/// Linux `ENOSPC`.
pub const ENOSPC: i32 = 28;
/// Linux `EMFILE`.
pub const EMFILE: i32 = 24;

/// The error an injected fault returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum FaultKind {
    /// `EIO`, nothing changed.
    Eio,
    /// `ENOSPC` (`ErrorKind::StorageFull`), nothing changed.
    Enospc,
    /// An append keeps the first half of its data, then `ENOSPC`.
    ShortWrite,
    /// From this call on, every call that needs space fails with `ENOSPC`, until
    /// the disk is freed.
    DiskFull,
    /// `EMFILE` (out of file descriptors) on a call that opens one; nothing
    /// changed, nothing doomed.
    Emfile,
}

impl FaultKind {
    /// The kinds that fail one call, in the order the I/O-error sweep tries them.
    pub const ALL: [FaultKind; 3] = [FaultKind::Eio, FaultKind::Enospc, FaultKind::ShortWrite];

    /// Every kind the I/O-error sweep tries: the one-call kinds, the disk that
    /// stays full, and the descriptors that run out.
    pub const SWEPT: [FaultKind; 5] = [
        FaultKind::Eio,
        FaultKind::Enospc,
        FaultKind::ShortWrite,
        FaultKind::DiskFull,
        FaultKind::Emfile,
    ];

    /// The kind's name as the CLI and scenario files spell it (`eio`, `enospc`, `short_write`).
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Eio => "eio",
            FaultKind::Enospc => "enospc",
            FaultKind::ShortWrite => "short_write",
            FaultKind::DiskFull => "disk_full",
            FaultKind::Emfile => "emfile",
        }
    }

    /// The error the failing call returns (a raw OS error, as `std::fs` gives).
    pub fn error(self) -> io::Error {
        match self {
            FaultKind::Eio => io::Error::from_raw_os_error(EIO),
            FaultKind::Enospc | FaultKind::ShortWrite | FaultKind::DiskFull => {
                io::Error::from_raw_os_error(ENOSPC)
            }
            FaultKind::Emfile => io::Error::from_raw_os_error(EMFILE),
        }
    }

    /// How many of `len` bytes a failing append of this kind leaves in the file.
    pub fn kept_bytes(self, len: usize) -> usize {
        match self {
            FaultKind::ShortWrite => len / 2,
            FaultKind::Eio | FaultKind::Enospc | FaultKind::DiskFull | FaultKind::Emfile => 0,
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FaultKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultKind::SWEPT
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown fault kind {s:?}; known: eio, enospc, short_write, disk_full, emfile"
                )
            })
    }
}

/// The mutating calls of [`crate::fs::FileSystem`], to say which one a fault hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Call {
    /// [`FileSystem::create_dir_all`](crate::fs::FileSystem::create_dir_all).
    CreateDirAll,
    /// [`FileSystem::create_file`](crate::fs::FileSystem::create_file).
    CreateFile,
    /// [`FileSystem::append`](crate::fs::FileSystem::append).
    Append,
    /// [`FileSystem::set_len`](crate::fs::FileSystem::set_len).
    SetLen,
    /// [`FileSystem::sync_file`](crate::fs::FileSystem::sync_file).
    SyncFile,
    /// [`FileSystem::sync_dir`](crate::fs::FileSystem::sync_dir).
    SyncDir,
    /// [`FileSystem::rename`](crate::fs::FileSystem::rename).
    Rename,
    /// [`FileSystem::remove_file`](crate::fs::FileSystem::remove_file).
    RemoveFile,
    /// [`FileSystem::hard_link`](crate::fs::FileSystem::hard_link).
    HardLink,
    /// [`FileSystem::remove_dir_all`](crate::fs::FileSystem::remove_dir_all).
    RemoveDirAll,
    /// [`FileSystem::try_lock`](crate::fs::FileSystem::try_lock): traced, never
    /// counted by the simulated file system (no fault or crash point lands on it).
    Lock,
}

impl Call {
    /// True for the calls that open a descriptor in `StdFs` (and fail when the
    /// process has none left): creating, appending to, truncating or fsyncing a
    /// file, fsyncing a directory. Renames, links and removals take paths.
    pub fn opens_descriptor(self) -> bool {
        matches!(
            self,
            Call::CreateFile | Call::Append | Call::SetLen | Call::SyncFile | Call::SyncDir
        )
    }

    /// True for the calls a full disk refuses: they allocate blocks or entries.
    pub fn needs_space(self) -> bool {
        matches!(
            self,
            Call::Append | Call::CreateFile | Call::CreateDirAll | Call::HardLink
        )
    }

    /// The call's name in snake case, as the sweep reports it.
    pub fn name(self) -> &'static str {
        match self {
            Call::CreateDirAll => "create_dir_all",
            Call::CreateFile => "create_file",
            Call::Append => "append",
            Call::SetLen => "set_len",
            Call::SyncFile => "sync_file",
            Call::SyncDir => "sync_dir",
            Call::Rename => "rename",
            Call::RemoveFile => "remove_file",
            Call::HardLink => "hard_link",
            Call::RemoveDirAll => "remove_dir_all",
            Call::Lock => "lock",
        }
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One injected fault that fired: which call, on which path, with which error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct FiredFault {
    /// The mutating call's number (as [`super::SimFs::mutating_ops`] counts).
    pub op: u64,
    /// Which call failed.
    pub call: Call,
    /// The path it was about.
    pub path: String,
    /// The error it returned.
    pub kind: FaultKind,
}

impl fmt::Display for FiredFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} on fs call {} ({} {})",
            self.kind, self.op, self.call, self.path
        )
    }
}

//! [`TraceFs`]: any [`FileSystem`] with a record of every operation that changes
//! something, in order, as the engine issued it through the seam. It is how a
//! counterexample's timeline is drawn (which operations ran, which a crash image
//! lost) and what the real binary's system calls are held to.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{FileLock, FileSystem};

/// The kind of a traced call: the mutating methods of [`FileSystem`], the same
/// enum the simulated file system names its calls and faults with.
pub type TraceCall = super::sim::Call;

/// One traced call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct TracedOp {
    /// Which method.
    pub call: TraceCall,
    /// Its path (`from` of a rename or a hard link).
    pub path: PathBuf,
    /// The target of a rename or a hard link.
    pub to: Option<PathBuf>,
    /// Bytes appended, or the length set.
    pub bytes: Option<u64>,
    /// The error it returned, if any.
    pub error: Option<String>,
}

impl fmt::Display for TracedOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.call.name(), self.path.display())?;
        if let Some(to) = &self.to {
            write!(f, " -> {}", to.display())?;
        }
        if let Some(bytes) = self.bytes {
            write!(f, " ({bytes} bytes)")?;
        }
        if let Some(error) = &self.error {
            write!(f, " failed: {error}")?;
        }
        Ok(())
    }
}

/// A [`FileSystem`] that forwards every call to `inner` and records the mutating
/// ones (reads are not recorded).
#[derive(Debug)]
pub struct TraceFs {
    inner: Arc<dyn FileSystem>,
    ops: Mutex<Vec<TracedOp>>,
}

impl TraceFs {
    /// Traces the calls made to `inner`.
    pub fn new(inner: Arc<dyn FileSystem>) -> TraceFs {
        TraceFs {
            inner,
            ops: Mutex::new(Vec::new()),
        }
    }

    /// The calls recorded so far, in order.
    pub fn ops(&self) -> Vec<TracedOp> {
        self.ops.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How many calls were recorded.
    pub fn len(&self) -> usize {
        self.ops.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// True if nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn record<T>(
        &self,
        call: TraceCall,
        path: &Path,
        to: Option<&Path>,
        bytes: Option<u64>,
        result: io::Result<T>,
    ) -> io::Result<T> {
        let op = TracedOp {
            call,
            path: path.to_path_buf(),
            to: to.map(Path::to_path_buf),
            bytes,
            error: result.as_ref().err().map(ToString::to_string),
        };
        self.ops.lock().unwrap_or_else(|e| e.into_inner()).push(op);
        result
    }
}

impl FileSystem for TraceFs {
    /// Recorded when it succeeds (on a real disk it creates the empty lock file).
    /// A refused lock changes nothing, and neither does one whose directory is
    /// missing (the open creates the log path and tries again): recording those as
    /// failed calls would read as the crash in a timeline.
    fn try_lock(&self, path: &Path) -> io::Result<FileLock> {
        let result = self.inner.try_lock(path);
        match result {
            Ok(lock) => self.record(TraceCall::Lock, path, None, None, Ok(lock)),
            Err(e) => Err(e),
        }
    }

    /// Forwarded, not recorded: it changes nothing.
    fn canonicalize(&self, path: &Path) -> io::Result<std::path::PathBuf> {
        self.inner.canonicalize(path)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let result = self.inner.create_dir_all(path);
        self.record(TraceCall::CreateDirAll, path, None, None, result)
    }

    fn create_file(&self, path: &Path) -> io::Result<()> {
        let result = self.inner.create_file(path);
        self.record(TraceCall::CreateFile, path, None, None, result)
    }

    fn append(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let result = self.inner.append(path, data);
        self.record(
            TraceCall::Append,
            path,
            None,
            Some(data.len() as u64),
            result,
        )
    }

    fn append_vectored(&self, path: &Path, parts: &[&[u8]]) -> io::Result<()> {
        let result = self.inner.append_vectored(path, parts);
        let bytes = parts.iter().map(|p| p.len() as u64).sum();
        self.record(TraceCall::Append, path, None, Some(bytes), result)
    }

    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_at(path, offset, buf)
    }

    /// Forwarded, not recorded: a write-back hint changes nothing a crash can
    /// observe (the strace side does not trace `sync_file_range` either).
    fn start_writeback(&self, path: &Path) -> io::Result<()> {
        self.inner.start_writeback(path)
    }

    fn set_len(&self, path: &Path, len: u64) -> io::Result<()> {
        let result = self.inner.set_len(path, len);
        self.record(TraceCall::SetLen, path, None, Some(len), result)
    }

    fn sync_file(&self, path: &Path) -> io::Result<()> {
        let result = self.inner.sync_file(path);
        self.record(TraceCall::SyncFile, path, None, None, result)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let result = self.inner.sync_dir(path);
        self.record(TraceCall::SyncDir, path, None, None, result)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let result = self.inner.rename(from, to);
        self.record(TraceCall::Rename, from, Some(to), None, result)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let result = self.inner.hard_link(from, to);
        self.record(TraceCall::HardLink, from, Some(to), None, result)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let result = self.inner.remove_file(path);
        self.record(TraceCall::RemoveFile, path, None, None, result)
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        let result = self.inner.remove_dir_all(path);
        self.record(TraceCall::RemoveDirAll, path, None, None, result)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }

    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(String, bool)>> {
        self.inner.list_dir_kinds(path)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }

    fn len(&self, path: &Path) -> io::Result<u64> {
        self.inner.len(path)
    }

    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read_all(path)
    }

    fn map(&self, path: &Path) -> io::Result<bytes::Bytes> {
        self.inner.map(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::sim::SimFs;

    #[test]
    fn records_mutating_calls_in_order_and_forwards_them() {
        let sim = Arc::new(SimFs::new());
        let fs = TraceFs::new(sim.clone());
        fs.create_dir_all(Path::new("/d")).unwrap();
        fs.write_new(Path::new("/d/a"), b"xyz").unwrap();
        fs.sync_file(Path::new("/d/a")).unwrap();
        fs.rename(Path::new("/d/a"), Path::new("/d/b")).unwrap();
        assert_eq!(fs.read_all(Path::new("/d/b")).unwrap(), b"xyz");
        assert!(fs.remove_file(Path::new("/d/missing")).is_err());
        let calls: Vec<TraceCall> = fs.ops().iter().map(|o| o.call).collect();
        assert_eq!(
            calls,
            [
                TraceCall::CreateDirAll,
                TraceCall::CreateFile,
                TraceCall::Append,
                TraceCall::SyncFile,
                TraceCall::Rename,
                TraceCall::RemoveFile
            ]
        );
        let ops = fs.ops();
        assert_eq!(ops[2].bytes, Some(3));
        assert_eq!(ops[4].to.as_deref(), Some(Path::new("/d/b")));
        assert!(ops[4].error.is_none());
        assert!(ops[5].error.is_some());
        assert!(sim.exists(Path::new("/d/b")));
        assert!(!sim.exists(Path::new("/d/a")));
    }
}

//! [`StdFs`]: the real disk, through `std::fs`, with cached file handles.

use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::handles::{Handle, Handles, OPEN_FILES_MAX_DEFAULT};
use super::FileSystem;

/// Writes every byte of `slices` to `writer`, in order: a call may write any prefix
/// (a short `writev`), so the loop advances past what each call took and writes the
/// rest. `Interrupted` is retried; a call that takes nothing is `WriteZero`. (The
/// same as `Write::write_all_vectored`, which is unstable.)
fn write_all_vectored(writer: &mut impl Write, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    // Drops leading empty parts (a `writev` of only those would return 0).
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match writer.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The real file system. Open handles are cached per path so appends and reads
/// cost one syscall; rename and remove drop the cached handles they affect.
/// [`FileSystem::map`] memory-maps files unless built with [`StdFs::without_mmap`].
///
/// The cache holds at most a budget of handles ([`StdFs::with_open_files_max`];
/// [`OPEN_FILES_MAX_DEFAULT`] for [`StdFs::new`]) and closes the least recently
/// used one to make room for a new one, so a log of any number of segments reads
/// within a fixed number of descriptors: a file whose handle was closed is opened
/// again when next used. A handle with writes not yet synced (`sync_file`) is
/// kept until they are, so a write-back error still reaches the `fsync` that
/// asks. An open that finds the process (or the system) out of descriptors
/// (`EMFILE`, `ENFILE`) closes the cached handles it may and tries once more
/// before it returns the error, so a process limit below the budget costs reopens,
/// not failures.
///
/// Closing a cached handle never invalidates what a caller holds: a call holds its
/// own reference to the handle while it runs, and the bytes [`FileSystem::map`]
/// returns own their mapping, which stays readable after the descriptor it was made
/// from is closed (the kernel keeps the mapped file, not a descriptor). Mappings do
/// not count against the descriptor limit.
#[derive(Debug)]
pub struct StdFs {
    handles: Mutex<Handles>,
    mmap: bool,
}

impl Default for StdFs {
    fn default() -> Self {
        Self::with_open_files_max(OPEN_FILES_MAX_DEFAULT)
    }
}

/// `EACCES` or `EROFS`: the file may be there to read, not to write.
fn is_not_writable(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
    )
}

/// True if `error` says the process or the system has no descriptor left to open a
/// file with.
fn is_out_of_descriptors(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

impl StdFs {
    /// The real file system, caching at most [`OPEN_FILES_MAX_DEFAULT`] handles.
    pub fn new() -> Self {
        Self::default()
    }

    /// The real file system, caching at most `open_files_max` handles (at least
    /// one) beside those with unsynced writes.
    pub fn with_open_files_max(open_files_max: usize) -> Self {
        StdFs {
            handles: Mutex::new(Handles::new(open_files_max)),
            mmap: true,
        }
    }

    /// A file system whose [`FileSystem::map`] reads the file into memory instead
    /// of mapping it: for file systems where another process may truncate a
    /// segment under a reader (a fault, SIGBUS, with a mapping; an error here).
    pub fn without_mmap() -> Self {
        StdFs {
            mmap: false,
            ..Self::default()
        }
    }

    /// The most handles the cache keeps (beside those with unsynced writes).
    pub fn open_files_max(&self) -> usize {
        self.lock_handles().open_files_max()
    }

    fn lock_handles(&self) -> std::sync::MutexGuard<'_, Handles> {
        self.handles.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn handle(&self, path: &Path) -> io::Result<Arc<Handle>> {
        let mut handles = self.lock_handles();
        if let Some(handle) = handles.get(path) {
            return Ok(handle);
        }
        handles.make_room();
        // Read and append, so one cached handle serves both; a file this process
        // may read but not write (another user's log, a read-only mount: what a
        // read-only open inspects) is opened for reading, and a write through it
        // fails as the file system says.
        let open = || match OpenOptions::new().read(true).append(true).open(path) {
            Err(e) if is_not_writable(&e) => OpenOptions::new().read(true).open(path),
            opened => opened,
        };
        let file = match open() {
            Err(e) if is_out_of_descriptors(&e) && handles.evict_clean() > 0 => open()?,
            opened => opened?,
        };
        let handle = Arc::new(Handle::new(file));
        handles.insert(path, Arc::clone(&handle));
        Ok(handle)
    }

    /// Runs `open` (an open of a file or directory the cache does not keep); if
    /// the process is out of descriptors, closes the cached handles it may and
    /// runs it once more.
    fn open_uncached<T>(&self, open: impl Fn() -> io::Result<T>) -> io::Result<T> {
        match open() {
            Err(e) if is_out_of_descriptors(&e) && self.lock_handles().evict_clean() > 0 => open(),
            opened => opened,
        }
    }

    fn forget(&self, path: &Path) {
        self.lock_handles().forget(path);
    }
}

/// Starts the write-back of `file`'s dirty pages without waiting for it
/// ([`FileSystem::start_writeback`]): `sync_file_range(SYNC_FILE_RANGE_WRITE)` on
/// the whole file (offset 0, length 0; the kernel walks only its dirty pages). A
/// no-op where there is no such call (not Linux). Also the benchmarks' baseline's
/// (`bench::baseline`), so that both sides of a comparison can use the same hint.
pub(crate) fn start_writeback(file: &File) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: `file` is an open descriptor that outlives the call; the call
        // reads and writes no memory of this process.
        let rc =
            unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
    Ok(())
}

/// Symbolic links followed at most on one resolution (Linux's `MAXSYMLINKS`).
const SYMLINKS_MAX: u32 = 40;

/// [`FileSystem::canonicalize`] on the real disk: `realpath`, and for a path that
/// does not exist, its dangling symbolic link followed or its parent resolved and
/// the missing name joined.
fn resolve(path: &Path, symlinks: u32) -> io::Result<PathBuf> {
    let missing = match std::fs::canonicalize(path) {
        Ok(resolved) => return Ok(resolved),
        Err(e) if e.kind() == io::ErrorKind::NotFound => e,
        Err(e) => return Err(e),
    };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let is_link = std::fs::symlink_metadata(path)
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(false);
    if is_link {
        if symlinks >= SYMLINKS_MAX {
            return Err(io::Error::other(format!(
                "more than {SYMLINKS_MAX} symbolic links"
            )));
        }
        let target = std::fs::read_link(path)?;
        return resolve(&parent.join(target), symlinks + 1);
    }
    let Some(name) = path.file_name() else {
        return Err(missing);
    };
    Ok(resolve(parent, symlinks)?.join(name))
}

/// A held `flock`, unlocked explicitly when dropped. Closing the descriptor alone
/// is not enough: a `fork` on another thread between our `open` and its child's
/// `exec` shares the open file description (and so the lock) until the `exec`
/// closes it, and a reopen right after our close is refused `Locked` with no
/// holder to name (`tests/log_failpoints.rs`, whose threads spawn the binary, hits
/// this). `LOCK_UN` releases the description's lock whoever else refers to it.
struct HeldLock(File);

impl Drop for HeldLock {
    fn drop(&mut self) {
        // Best effort: on an error the close that follows still releases it once
        // no other descriptor refers to it.
        let _ = self.0.unlock();
    }
}

/// The process holding a `flock` on the file `meta` describes, from Linux's
/// `/proc/locks` (`N: FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF`,
/// major and minor in hex). `None` where there is no such file or no entry.
fn flock_holder(meta: &std::fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let dev = meta.dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    // Bounded: a few lines per lock held on the machine.
    let mut text = String::new();
    io::Read::read_to_string(
        &mut io::Read::take(File::open("/proc/locks").ok()?, 1 << 20),
        &mut text,
    )
    .ok()?;
    parse_flock_holder(&text, major, minor, meta.ino())
}

fn parse_flock_holder(text: &str, major: u64, minor: u64, inode: u64) -> Option<u32> {
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // A blocked waiter's line has "->" after the number; ours never wait.
        let [_, "FLOCK", _, _, pid, id, ..] = fields.as_slice() else {
            return None;
        };
        let mut parts = id.split(':');
        let (maj, min, ino) = (parts.next()?, parts.next()?, parts.next()?);
        let same = u64::from_str_radix(maj, 16).ok()? == major
            && u64::from_str_radix(min, 16).ok()? == minor
            && ino.parse::<u64>().ok()? == inode;
        same.then(|| pid.parse().ok()).flatten()
    })
}

impl FileSystem for StdFs {
    /// `flock(LOCK_EX | LOCK_NB)` (std's `File::try_lock`) on `path`, opened
    /// without truncation; the file stays empty (as Kafka's `.lock` does), so no
    /// open changes its bytes.
    fn try_lock(&self, path: &Path) -> io::Result<super::FileLock> {
        let file = self.open_uncached(|| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
        })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder_pid = file.metadata().ok().and_then(|m| flock_holder(&m));
                return Err(super::LockHeld { holder_pid }.into_error());
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        Ok(super::FileLock::new(HeldLock(file)))
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        resolve(path, 0)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn create_file(&self, path: &Path) -> io::Result<()> {
        self.forget(path);
        self.open_uncached(|| {
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(path)
        })?;
        Ok(())
    }

    fn start_writeback(&self, path: &Path) -> io::Result<()> {
        start_writeback(self.handle(path)?.file())
    }

    fn append(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let handle = self.handle(path)?;
        let written = handle.file().write_all(data);
        handle.wrote();
        written
    }

    fn append_vectored(&self, path: &Path, parts: &[&[u8]]) -> io::Result<()> {
        if let [one] = parts {
            return self.append(path, one);
        }
        let handle = self.handle(path)?;
        // A few parts (a raw append's header and records) need no allocation.
        let mut few = [IoSlice::new(&[]); 8];
        let mut many: Vec<IoSlice<'_>>;
        let rest: &mut [IoSlice<'_>] = match few.get_mut(..parts.len()) {
            Some(slices) => {
                for (slice, part) in slices.iter_mut().zip(parts) {
                    *slice = IoSlice::new(part);
                }
                slices
            }
            None => {
                many = parts.iter().map(|p| IoSlice::new(p)).collect();
                &mut many
            }
        };
        // `std` caps the iovecs of one call at IOV_MAX: a long list takes several.
        let written = write_all_vectored(&mut handle.file(), rest);
        handle.wrote();
        written
    }

    fn map(&self, path: &Path) -> io::Result<bytes::Bytes> {
        if !self.mmap {
            return self.read_all(path).map(bytes::Bytes::from);
        }
        let handle = self.handle(path)?;
        let file = handle.file();
        if file.metadata()?.len() == 0 {
            // A zero-length mapping is an error on Linux.
            return Ok(bytes::Bytes::new());
        }
        // SAFETY: the mapping is read-only and private to this process; its bytes can
        // only change under us if the file is modified, which the contract of
        // `FileSystem::map` rules out for the engine's own files (closed segments are
        // never written again). The mapping outlives `file`'s handle by design: the
        // cache may close the descriptor while the bytes are held.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(file)? };
        Ok(bytes::Bytes::from_owner(map))
    }

    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let handle = self.handle(path)?;
        let file = handle.file();
        let mut done = 0;
        while done < buf.len() {
            match file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    fn set_len(&self, path: &Path, len: u64) -> io::Result<()> {
        let handle = self.handle(path)?;
        let cut = handle.file().set_len(len);
        handle.wrote();
        cut
    }

    fn sync_file(&self, path: &Path) -> io::Result<()> {
        let handle = self.handle(path)?;
        let dirty = handle.take_dirty();
        let synced = handle.file().sync_all();
        if dirty && synced.is_err() {
            handle.sync_failed();
        }
        synced
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.open_uncached(|| File::open(path))?.sync_all()
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.forget(from);
        self.forget(to);
        std::fs::rename(from, to)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.forget(path);
        std::fs::remove_file(path)
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.forget(path);
        self.open_uncached(|| std::fs::remove_dir_all(path))
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in self.open_uncached(|| std::fs::read_dir(path))? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn list_dir_kinds(&self, path: &Path) -> io::Result<Vec<(String, bool)>> {
        let mut entries = Vec::new();
        for entry in self.open_uncached(|| std::fs::read_dir(path))? {
            let entry = entry?;
            let kind = entry.file_type()?;
            // `is_dir` follows a symbolic link: so does this, with a `stat`.
            let dir = if kind.is_symlink() {
                entry.path().is_dir()
            } else {
                kind.is_dir()
            };
            entries.push((entry.file_name().to_string_lossy().into_owned(), dir));
        }
        entries.sort();
        Ok(entries)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn len(&self, path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }
}

#[cfg(test)]
mod tests {
    use std::io::{self, IoSlice, Write};

    /// A `Write` that takes at most `per_call_max` bytes a call, across parts as
    /// `writev` does (0 when given nothing), and fails its `fail_at.0`-th call with
    /// `fail_at.1` instead.
    struct ShortWriter {
        written: Vec<u8>,
        per_call_max: usize,
        calls: usize,
        fail_at: Option<(usize, io::ErrorKind)>,
    }

    impl ShortWriter {
        fn new(per_call_max: usize, fail_at: Option<(usize, io::ErrorKind)>) -> Self {
            ShortWriter {
                written: Vec::new(),
                per_call_max,
                calls: 0,
                fail_at,
            }
        }
    }

    impl Write for ShortWriter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }

        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            self.calls += 1;
            if let Some((at, kind)) = self.fail_at {
                if at == self.calls {
                    return Err(kind.into());
                }
            }
            let mut room = self.per_call_max;
            for buf in bufs {
                let take = buf.len().min(room);
                self.written.extend_from_slice(&buf[..take]);
                room -= take;
            }
            Ok(self.per_call_max - room)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Runs [`super::write_all_vectored`] over `parts` into `writer`.
    fn write_parts(writer: &mut ShortWriter, parts: &[&[u8]]) -> io::Result<()> {
        let mut slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
        super::write_all_vectored(writer, &mut slices)
    }

    /// Short writes at every boundary: every per-call size from one byte to more
    /// than the whole (so a call ends inside a part, at a part's end, across
    /// parts, and around empty parts), each with and without an `Interrupted`
    /// call first, second or third. The bytes written are the parts' concatenation,
    /// each byte once.
    #[test]
    fn every_short_write_is_followed_by_the_rest() {
        let shapes: [&[&[u8]]; 5] = [
            &[b"", b"", b"abc", b"", b"defgh", b"i", b"", b"jklmnop", b""],
            &[b"abc", b"defgh"],
            &[b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h", b"i", b"j"],
            &[b"", b"abcdefghijklmnopq"],
            &[b"x"],
        ];
        let interrupts = [None, Some(1), Some(2), Some(3)];
        for parts in shapes {
            let whole = parts.concat();
            for per_call_max in 1..=whole.len() + 1 {
                for at in interrupts {
                    let fail_at = at.map(|at| (at, io::ErrorKind::Interrupted));
                    let mut writer = ShortWriter::new(per_call_max, fail_at);
                    let written = write_parts(&mut writer, parts);
                    let case = format!("{parts:?} per call {per_call_max}, interrupted at {at:?}");
                    assert!(written.is_ok(), "{case}: {written:?}");
                    assert_eq!(writer.written, whole, "{case}");
                    let calls_min = whole.len().div_ceil(per_call_max);
                    assert!(writer.calls >= calls_min, "{case}: {} calls", writer.calls);
                }
            }
        }
    }

    /// Parts that are all empty write nothing and make no call (a `writev` of
    /// only empty parts returns 0, which is not `WriteZero` here).
    #[test]
    fn only_empty_parts_make_no_call() {
        let mut writer = ShortWriter::new(4, None);
        write_parts(&mut writer, &[b"", b"", b""]).unwrap();
        assert!(writer.written.is_empty());
        assert_eq!(writer.calls, 0);
        write_parts(&mut writer, &[]).unwrap();
        assert_eq!(writer.calls, 0);
    }

    /// A call that takes nothing is `WriteZero`; an error other than
    /// `Interrupted` is returned as it is, after the bytes already taken.
    #[test]
    fn a_call_that_takes_nothing_or_fails_ends_the_write() {
        let mut writer = ShortWriter::new(0, None);
        let zero = write_parts(&mut writer, &[b"", b"ab", b"cd"]).unwrap_err();
        assert_eq!(zero.kind(), io::ErrorKind::WriteZero);
        assert_eq!(writer.calls, 1);
        let mut writer = ShortWriter::new(3, Some((2, io::ErrorKind::StorageFull)));
        let full = write_parts(&mut writer, &[b"ab", b"cd", b"ef"]).unwrap_err();
        assert_eq!(full.kind(), io::ErrorKind::StorageFull);
        assert_eq!(writer.written, b"abc");
        assert_eq!(writer.calls, 2);
    }

    #[test]
    fn the_flock_holder_is_found_by_device_and_inode() {
        let text = "1: POSIX  ADVISORY  WRITE 77 fd:01:4242 0 EOF\n\
                    2: FLOCK  ADVISORY  WRITE 1234 fd:01:4242 0 EOF\n\
                    3: FLOCK  ADVISORY  WRITE 99 08:02:4242 0 EOF\n";
        assert_eq!(super::parse_flock_holder(text, 0xfd, 1, 4242), Some(1234));
        assert_eq!(super::parse_flock_holder(text, 8, 2, 4242), Some(99));
        assert_eq!(super::parse_flock_holder(text, 8, 2, 4243), None);
        assert_eq!(super::parse_flock_holder("", 8, 2, 4242), None);
    }

    /// Another thread forks (spawns processes) all along: each fork shares the
    /// lock's open file description until its child `exec`s. A lock dropped and
    /// taken again at once is never refused: the drop unlocks explicitly.
    #[test]
    fn a_dropped_lock_is_free_at_once_while_other_threads_fork() {
        use super::super::FileSystem;
        use std::sync::atomic::{AtomicBool, Ordering};
        let tmp = tempfile::tempdir().unwrap();
        let fs = super::StdFs::new();
        let path = tmp.path().join("d.lock");
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let forker = {
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = std::process::Command::new("true").status();
                }
            })
        };
        for i in 0..300 {
            let held = fs.try_lock(&path);
            assert!(held.is_ok(), "attempt {i}: {:?}", held.err());
            drop(held);
        }
        stop.store(true, Ordering::Relaxed);
        forker.join().unwrap();
    }

    #[test]
    fn a_second_lock_names_this_process_as_the_holder() {
        use super::super::{FileSystem, LockHeld};
        let tmp = tempfile::tempdir().unwrap();
        let fs = super::StdFs::new();
        let path = tmp.path().join("d.lock");
        let held = fs.try_lock(&path).unwrap();
        let refused = fs.try_lock(&path).unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::WouldBlock);
        // flock locks belong to the open file: a second open in this process is
        // refused too, and /proc/locks names this process.
        let held_by = LockHeld::of(&refused).expect("a LockHeld").holder_pid;
        if std::path::Path::new("/proc/locks").exists() {
            assert_eq!(held_by, Some(std::process::id()));
        }
        drop(held);
        drop(fs.try_lock(&path).unwrap());
    }

    use super::*;

    #[test]
    fn append_read_rename_remove_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs::new();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        fs.write_new(&a, b"hello").unwrap();
        fs.append(&a, b" world").unwrap();
        fs.sync_file(&a).unwrap();
        assert_eq!(fs.read_all(&a).unwrap(), b"hello world");
        fs.rename(&a, &b).unwrap();
        assert!(!fs.exists(&a));
        assert_eq!(fs.read_all(&b).unwrap(), b"hello world");
        fs.set_len(&b, 5).unwrap();
        assert_eq!(fs.len(&b).unwrap(), 5);
        fs.sync_dir(dir.path()).unwrap();
        assert_eq!(fs.list_dir(dir.path()).unwrap(), vec!["b".to_string()]);
        fs.remove_file(&b).unwrap();
        assert!(fs.list_dir(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn append_vectored_writes_every_part_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs::new();
        let sim = crate::fs::sim::SimFs::new();
        sim.create_dir_all(dir.path()).unwrap();
        let path = dir.path().join("v");
        // More parts than one `writev` takes (IOV_MAX is 1024 on Linux), empty ones
        // among them, first and last included; and as few as fit the iovecs on the
        // stack (8), and one more.
        let owned: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| vec![(i % 251) as u8; (i % 7) as usize])
            .collect();
        let parts: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        assert!(parts.len() > 1024);
        for parts in [
            &parts[..],
            &parts[1..2],
            &parts[..1],
            &parts[..0],
            &parts[..8],
            &parts[5..14],
        ] {
            fs.write_new(&path, b"head:").unwrap();
            fs.append_vectored(&path, parts).unwrap();
            sim.write_new(&path, b"head:").unwrap();
            sim.append_vectored(&path, parts).unwrap();
            let expected = [&b"head:"[..], &parts.concat()].concat();
            assert_eq!(fs.read_all(&path).unwrap(), expected);
            assert_eq!(sim.read_all(&path).unwrap(), expected);
        }
    }

    #[test]
    fn map_sees_the_file_and_outlives_its_removal() {
        for (fs, mapped) in [(StdFs::new(), true), (StdFs::without_mmap(), false)] {
            map_round_trip(&fs, mapped);
        }
    }

    fn map_round_trip(fs: &StdFs, expect_mapping: bool) {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        fs.write_new(&a, &data).unwrap();
        let mapped = fs.map(&a).unwrap();
        assert_eq!(&mapped[..], &data[..]);
        // The kernel lists the mapping (and only in mmap mode).
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let listed = maps.lines().any(|line| line.ends_with(a.to_str().unwrap()));
        assert_eq!(listed, expect_mapping);
        assert_eq!(fs.read_all(&a).unwrap(), &mapped[..]);
        // Retention and compaction remove or replace whole files: a view taken
        // before keeps the old bytes.
        fs.remove_file(&a).unwrap();
        fs.write_new(&a, b"new").unwrap();
        assert_eq!(&mapped[..], &data[..]);
        assert_eq!(&fs.map(&a).unwrap()[..], b"new");
        let empty = dir.path().join("empty");
        fs.create_file(&empty).unwrap();
        assert!(fs.map(&empty).unwrap().is_empty());
        let missing = fs.map(&dir.path().join("missing")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod budget_tests {
    //! The handle budget, counted twice: the cache's own size, and the process's
    //! descriptors open on the test's files (`/proc/self/fd`), which other tests
    //! running in parallel cannot touch.

    use super::*;

    /// The files under `dir` this process holds descriptors on.
    fn open_under(dir: &Path) -> Vec<PathBuf> {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
            .filter(|target| target.starts_with(dir))
            .collect()
    }

    /// How many of this process's descriptors are open on files under `dir`.
    fn descriptors_under(dir: &Path) -> usize {
        open_under(dir).len()
    }

    fn cached(fs: &StdFs) -> usize {
        fs.lock_handles().len()
    }

    /// `count` files of 100 bytes each under `dir` (each written and synced, so
    /// its handle holds no unsynced writes), the cache emptied after.
    fn files(fs: &StdFs, dir: &Path, count: usize) -> Vec<PathBuf> {
        let paths: Vec<PathBuf> = (0..count).map(|i| dir.join(format!("{i:04}"))).collect();
        for (i, path) in paths.iter().enumerate() {
            fs.write_new(path, &[i as u8; 100]).unwrap();
            fs.sync_file(path).unwrap();
        }
        for path in &paths {
            fs.forget(path);
        }
        paths
    }

    /// Reads of 200 files through a budget of 8 hold 8 descriptors, whichever order
    /// they come in; the same reads through the default budget hold all 200.
    #[test]
    fn reads_of_many_files_hold_at_most_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let fs = StdFs::with_open_files_max(8);
        let paths = files(&fs, &root, 200);
        assert_eq!(descriptors_under(&root), 0);
        let mut buf = [0u8; 100];
        for round in 0..3 {
            for (i, path) in paths.iter().enumerate().rev().skip(round) {
                assert_eq!(fs.read_at(path, 0, &mut buf).unwrap(), 100);
                assert_eq!(buf, [i as u8; 100]);
                assert!(cached(&fs) <= 8, "{} cached", cached(&fs));
                assert!(descriptors_under(&root) <= 8);
            }
        }
        assert_eq!(cached(&fs), 8);
        assert_eq!(descriptors_under(&root), 8);
        let unbounded = StdFs::with_open_files_max(usize::MAX);
        for path in &paths {
            unbounded.read_at(path, 0, &mut buf).unwrap();
        }
        assert_eq!(cached(&unbounded), 200);
        assert_eq!(descriptors_under(&root), 208);
    }

    /// Least recently used out: a file used again just before the cache fills
    /// keeps its descriptor, the one left longest goes.
    #[test]
    fn the_least_recently_used_handle_is_the_one_closed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let fs = StdFs::with_open_files_max(3);
        let [a, b, c, d] = <[PathBuf; 4]>::try_from(files(&fs, &root, 4)).unwrap();
        let mut buf = [0u8; 1];
        for path in [&a, &b, &c, &a] {
            fs.read_at(path, 0, &mut buf).unwrap();
        }
        fs.read_at(&d, 0, &mut buf).unwrap();
        let open = open_under(&root);
        assert_eq!(open.len(), 3);
        assert!(!open.contains(&b), "{open:?}");
        for kept in [&a, &c, &d] {
            assert!(open.contains(kept), "{open:?}");
        }
    }

    /// The handle served without a lookup (the last one returned) is closed like
    /// any other once it is evicted: a budget of one holds one descriptor while two
    /// files take turns, and the file whose handle was closed is opened again, not
    /// served from the fast path.
    #[test]
    fn the_last_handle_is_evicted_like_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let fs = StdFs::with_open_files_max(1);
        let [a, b] = <[PathBuf; 2]>::try_from(files(&fs, &root, 2)).unwrap();
        let mut buf = [0u8; 1];
        for (i, path) in [&a, &a, &b, &b, &a, &b].into_iter().enumerate() {
            fs.read_at(path, 0, &mut buf).unwrap();
            assert_eq!(descriptors_under(&root), 1, "read {i}");
            assert_eq!(cached(&fs), 1, "read {i}");
        }
        // An open that runs out of descriptors empties the cache, the fast path too.
        assert_eq!(fs.lock_handles().evict_clean(), 1);
        assert_eq!(descriptors_under(&root), 0);
        fs.read_at(&b, 0, &mut buf).unwrap();
        assert_eq!(buf, [1]);
        assert_eq!(descriptors_under(&root), 1);
    }

    /// A mapping taken from a handle stays readable after the cache closes that
    /// handle, and after the file is removed.
    #[test]
    fn a_mapping_outlives_the_eviction_of_its_handle() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let fs = StdFs::with_open_files_max(2);
        let paths = files(&fs, &root, 3);
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 253) as u8).collect();
        fs.write_new(&paths[0], &data).unwrap();
        fs.sync_file(&paths[0]).unwrap();
        let mapped = fs.map(&paths[0]).unwrap();
        let mut buf = [0u8; 1];
        fs.read_at(&paths[1], 0, &mut buf).unwrap();
        fs.read_at(&paths[2], 0, &mut buf).unwrap();
        let open = open_under(&root);
        assert!(!open.contains(&paths[0]), "evicted: {open:?}");
        assert_eq!(open.len(), 2);
        assert_eq!(&mapped[..], &data[..]);
        fs.remove_file(&paths[0]).unwrap();
        assert_eq!(&mapped[..], &data[..]);
    }

    /// A handle with writes not yet synced is not closed to make room: it keeps
    /// its place while others come and go, the budget is exceeded only when more
    /// files than it allows hold unsynced writes, and once synced the handle goes
    /// like any other.
    #[test]
    fn a_handle_with_unsynced_writes_waits_for_its_sync() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let fs = StdFs::with_open_files_max(2);
        let paths = files(&fs, &root, 5);
        let open_now = || open_under(&root);
        fs.append(&paths[0], b"more").unwrap();
        let mut buf = [0u8; 1];
        for path in &paths[1..] {
            fs.read_at(path, 0, &mut buf).unwrap();
        }
        assert_eq!(cached(&fs), 2);
        assert!(open_now().contains(&paths[0]), "{:?}", open_now());
        assert_eq!(fs.lock_handles().evict_clean(), 1);
        assert_eq!(open_now(), vec![paths[0].clone()]);
        // Three files with unsynced writes: all three kept, and the one read
        // beside them.
        for path in &paths[1..3] {
            fs.append(path, b"more").unwrap();
        }
        fs.read_at(&paths[3], 0, &mut buf).unwrap();
        assert_eq!(cached(&fs), 4);
        assert_eq!(descriptors_under(&root), 4);
        for path in &paths[..3] {
            fs.sync_file(path).unwrap();
        }
        for path in &paths[3..] {
            fs.read_at(path, 0, &mut buf).unwrap();
        }
        assert_eq!(cached(&fs), 2);
        assert_eq!(descriptors_under(&root), 2);
        for path in &paths[..3] {
            assert_eq!(fs.len(path).unwrap(), 104);
        }
    }

    /// Rename and remove work on files whose handles were evicted, and on files
    /// whose handles are cached, and leave no descriptor on the old name.
    #[test]
    fn rename_and_remove_after_eviction() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let fs = StdFs::with_open_files_max(2);
        let paths = files(&fs, &root, 4);
        let mut buf = [0u8; 1];
        for path in &paths {
            fs.read_at(path, 0, &mut buf).unwrap();
        }
        // paths[0] and [1] were evicted; [2] and [3] are cached.
        for (i, path) in paths.iter().enumerate() {
            let to = root.join(format!("renamed-{i}"));
            fs.rename(path, &to).unwrap();
            fs.append(&to, b"x").unwrap();
            fs.sync_file(&to).unwrap();
            assert_eq!(fs.read_all(&to).unwrap().len(), 101);
            assert!(!fs.exists(path));
        }
        assert!(cached(&fs) <= 2);
        for i in 0..4 {
            fs.remove_file(&root.join(format!("renamed-{i}"))).unwrap();
        }
        assert_eq!(cached(&fs), 0);
        assert_eq!(descriptors_under(&root), 0);
        assert!(fs.list_dir(&root).unwrap().is_empty());
    }

    /// Under a process limit below the budget, an open that meets `EMFILE` closes
    /// the cached handles and succeeds. Run in a child process (the limit is the
    /// whole process's): the child is this test binary, re-run on this test alone.
    #[test]
    fn an_open_out_of_descriptors_closes_the_cache_and_retries() {
        const CHILD_ENV: &str = "SEGLOG_STD_FS_EMFILE_CHILD";
        if std::env::var_os(CHILD_ENV).is_some() {
            return emfile_child();
        }
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                "fs::std_fs::budget_tests::an_open_out_of_descriptors_closes_the_cache_and_retries",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, "1");
        // SAFETY: setrlimit is async-signal-safe and touches only the child.
        unsafe {
            command.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 40,
                    rlim_max: 40,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let output = command.output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// In a process limited to 40 descriptors: 200 files through a budget of 1,000
    /// read back, every one.
    fn emfile_child() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let fs = StdFs::with_open_files_max(1000);
        let paths = files(&fs, &root, 200);
        let mut buf = [0u8; 100];
        for _ in 0..2 {
            for (i, path) in paths.iter().enumerate() {
                assert_eq!(fs.read_at(path, 0, &mut buf).unwrap(), 100);
                assert_eq!(buf, [i as u8; 100]);
            }
        }
        assert!(cached(&fs) < 40);
        // The opens the cache does not keep retry too.
        fs.sync_dir(&root).unwrap();
        assert_eq!(fs.list_dir(&root).unwrap().len(), 200);
    }
}

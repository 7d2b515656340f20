//! [`StdFs`]: the real disk, through `std::fs`, with cached file handles.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
#[derive(Debug)]
pub struct StdFs {
    handles: Mutex<Handles>,
    mmap: bool,
}

/// The cached handles.
#[derive(Debug, Default)]
struct Handles {
    by_path: HashMap<PathBuf, Arc<File>>,
    /// The handle returned last (also in `by_path`), matched by its path's bytes:
    /// a run of appends asks for the same file each time, and this spares hashing
    /// its path (`Path`'s hash walks the components) on every call.
    last: Option<(PathBuf, Arc<File>)>,
}

impl Default for StdFs {
    fn default() -> Self {
        StdFs {
            handles: Mutex::new(Handles::default()),
            mmap: true,
        }
    }
}

impl StdFs {
    /// The real file system.
    pub fn new() -> Self {
        Self::default()
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

    fn handle(&self, path: &Path) -> io::Result<Arc<File>> {
        let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((last, file)) = &handles.last {
            if last.as_os_str() == path.as_os_str() {
                return Ok(Arc::clone(file));
            }
        }
        let file = match handles.by_path.get(path) {
            Some(file) => Arc::clone(file),
            None => {
                let file = Arc::new(OpenOptions::new().read(true).append(true).open(path)?);
                handles
                    .by_path
                    .insert(path.to_path_buf(), Arc::clone(&file));
                file
            }
        };
        handles.last = Some((path.to_path_buf(), Arc::clone(&file)));
        Ok(file)
    }

    fn forget(&self, path: &Path) {
        let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        handles
            .by_path
            .retain(|cached, _| !cached.starts_with(path));
        if let Some((last, _)) = &handles.last {
            if last.starts_with(path) {
                handles.last = None;
            }
        }
    }
}

/// Starts the write-back of `file`'s dirty pages without waiting for it
/// ([`FileSystem::start_writeback`]): `sync_file_range(SYNC_FILE_RANGE_WRITE)` on
/// the whole file (offset 0, length 0; the kernel walks only its dirty pages). A
/// no-op where there is no such call (not Linux). Also the benchmarks' baseline's
/// (`fs::baseline`), so that both sides of a comparison can use the same hint.
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
/// closes it, and a reopen right after our close was refused `Locked` with no
/// holder to name (found by `tests/log_failpoints.rs`, whose threads spawn the
/// binary). `LOCK_UN` releases the description's lock whoever else refers to it.
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
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
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
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(())
    }

    fn start_writeback(&self, path: &Path) -> io::Result<()> {
        start_writeback(&*self.handle(path)?)
    }

    fn append(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let file = self.handle(path)?;
        (&*file).write_all(data)
    }

    fn append_vectored(&self, path: &Path, parts: &[&[u8]]) -> io::Result<()> {
        if let [one] = parts {
            return self.append(path, one);
        }
        let file = self.handle(path)?;
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
        write_all_vectored(&mut &*file, rest)
    }

    fn map(&self, path: &Path) -> io::Result<bytes::Bytes> {
        if !self.mmap {
            return self.read_all(path).map(bytes::Bytes::from);
        }
        let file = self.handle(path)?;
        if file.metadata()?.len() == 0 {
            // A zero-length mapping is an error on Linux.
            return Ok(bytes::Bytes::new());
        }
        // SAFETY: the mapping is read-only and private to this process; its bytes can
        // only change under us if the file is modified, which the contract of
        // `FileSystem::map` rules out for the engine's own files (closed segments are
        // never written again). The mapping outlives `file`'s handle by design.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&*file)? };
        Ok(bytes::Bytes::from_owner(map))
    }

    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let file = self.handle(path)?;
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
        self.handle(path)?.set_len(len)
    }

    fn sync_file(&self, path: &Path) -> io::Result<()> {
        self.handle(path)?.sync_all()
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
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
        std::fs::remove_dir_all(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(path)? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
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

//! A deterministic schedule of two threads for [`Op::CleanWithAppends`]: the
//! cleaner's build runs on its own thread and stops before its `at`-th
//! file-system call (reads included); the appender runs its appends (and roll, and flush) while the
//! build waits; then the build goes on. The order of every file-system call is
//! fixed by `at` alone, so the crash sweep can stop before each call of the
//! interleaving and replay it exactly, and a test can walk every `at` a build has
//! (docs/design.md section 6, "Concurrent cleaning").
//!
//! [`Op::CleanWithAppends`]: super::Op::CleanWithAppends

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};

use seglog::fs::FileSystem;

/// A [`FileSystem`] that forwards every call to `inner`, and before the `at`-th
/// call (0-based, reads included: a build reads its segments before it writes)
/// tells the scheduler it stopped (`paused`) and waits until the scheduler lets it
/// go on (`resume` sent or dropped).
pub struct GateFs {
    inner: Arc<dyn FileSystem>,
    at: u64,
    calls: AtomicU64,
    paused: Mutex<Option<Sender<()>>>,
    resume: Mutex<Receiver<()>>,
}

impl std::fmt::Debug for GateFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateFs")
            .field("at", &self.at)
            .field("calls", &self.calls.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl GateFs {
    /// A gate before mutating call `at` of the calls made through it.
    pub fn new(
        inner: Arc<dyn FileSystem>,
        at: u64,
        paused: Sender<()>,
        resume: Receiver<()>,
    ) -> GateFs {
        GateFs {
            inner,
            at,
            calls: AtomicU64::new(0),
            paused: Mutex::new(Some(paused)),
            resume: Mutex::new(resume),
        }
    }

    /// Calls made through the gate so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// Counts a call; the `at`-th waits for the scheduler first.
    fn call(&self) {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n != self.at {
            return;
        }
        let paused = self.paused.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(paused) = paused {
            // The scheduler may be gone (it dropped its end): then go on at once.
            if paused.send(()).is_ok() {
                // Sent or dropped: either way the appender is done.
                let _ = self.resume.lock().unwrap_or_else(|e| e.into_inner()).recv();
            }
        }
    }
}

impl FileSystem for GateFs {
    fn try_lock(&self, path: &Path) -> io::Result<seglog::fs::FileLock> {
        self.inner.try_lock(path)
    }

    /// Forwarded without a gate: it changes nothing.
    fn canonicalize(&self, path: &Path) -> io::Result<std::path::PathBuf> {
        self.inner.canonicalize(path)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.call();
        self.inner.create_dir_all(path)
    }

    fn create_file(&self, path: &Path) -> io::Result<()> {
        self.call();
        self.inner.create_file(path)
    }

    fn append(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.call();
        self.inner.append(path, data)
    }

    fn append_vectored(&self, path: &Path, parts: &[&[u8]]) -> io::Result<()> {
        self.call();
        self.inner.append_vectored(path, parts)
    }

    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.call();
        self.inner.read_at(path, offset, buf)
    }

    /// Not a pause point: a write-back hint changes nothing another thread (or a
    /// crash) can observe, so it adds no interleaving.
    fn start_writeback(&self, path: &Path) -> io::Result<()> {
        self.inner.start_writeback(path)
    }

    fn set_len(&self, path: &Path, len: u64) -> io::Result<()> {
        self.call();
        self.inner.set_len(path, len)
    }

    fn sync_file(&self, path: &Path) -> io::Result<()> {
        self.call();
        self.inner.sync_file(path)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.call();
        self.inner.sync_dir(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.call();
        self.inner.rename(from, to)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.call();
        self.inner.hard_link(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.call();
        self.inner.remove_file(path)
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.call();
        self.inner.remove_dir_all(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.call();
        self.inner.list_dir(path)
    }

    fn exists(&self, path: &Path) -> bool {
        self.call();
        self.inner.exists(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.call();
        self.inner.is_dir(path)
    }

    fn len(&self, path: &Path) -> io::Result<u64> {
        self.call();
        self.inner.len(path)
    }

    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.call();
        self.inner.read_all(path)
    }

    fn map(&self, path: &Path) -> io::Result<bytes::Bytes> {
        self.call();
        self.inner.map(path)
    }

    fn write_new(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.call();
        self.inner.write_new(path, data)
    }
}

/// Runs `build` on a thread of its own through a [`GateFs`] over `fs` stopped
/// before call `at`, and `appender` on this thread while the build waits
/// there; if the build makes fewer calls, `appender` runs after it. Returns the
/// build's result, the appender's, and whether the appender ran during the build.
pub fn interleave<B, A, TB, TA>(
    fs: &Arc<dyn FileSystem>,
    at: u64,
    build: B,
    appender: A,
) -> (TB, TA, bool)
where
    B: FnOnce(Arc<dyn FileSystem>) -> TB + Send,
    TB: Send,
    A: FnOnce() -> TA,
{
    let (paused_tx, paused_rx) = std::sync::mpsc::channel();
    let (resume_tx, resume_rx) = std::sync::mpsc::channel();
    let gate: Arc<dyn FileSystem> = Arc::new(GateFs::new(Arc::clone(fs), at, paused_tx, resume_rx));
    std::thread::scope(|scope| {
        let builder = scope.spawn(move || build(gate));
        // The build either stops at the gate (a message) or ends without reaching
        // it (the gate, and with it the sender, dropped: an error).
        let during = paused_rx.recv().is_ok();
        let mut appender = Some(appender);
        let mut appended = None;
        if during {
            appended = appender.take().map(|a| a());
        }
        drop(resume_tx);
        let built = match builder.join() {
            Ok(built) => built,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let appended = match (appended, appender) {
            (Some(appended), _) => appended,
            (None, Some(appender)) => appender(),
            (None, None) => unreachable!("the appender ran once"),
        };
        (built, appended, during)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use seglog::fs::sim::SimFs;
    use std::path::PathBuf;

    /// The appender's call lands exactly before the build's call `at`, for every `at`,
    /// and after the build when `at` is past its calls.
    #[test]
    fn the_appender_runs_before_exactly_the_gated_call() {
        let calls = 4u64;
        for at in 0..=calls + 1 {
            let sim = Arc::new(SimFs::new());
            let fs: Arc<dyn FileSystem> = sim.clone();
            fs.create_dir_all(Path::new("/d")).unwrap();
            let build = |fs: Arc<dyn FileSystem>| {
                for i in 0..calls {
                    fs.write_new(&PathBuf::from(format!("/d/b{i}")), b"x")
                        .unwrap();
                }
            };
            let appender = || {
                let names = sim.list_dir(Path::new("/d")).unwrap(); // not through the gate
                sim.write_new(Path::new("/d/a"), b"y").unwrap();
                names.len() as u64
            };
            let ((), seen, during) = interleave(&fs, at, build, appender);
            assert_eq!(seen, at.min(calls), "at {at}");
            assert_eq!(during, at < calls, "at {at}");
        }
    }
}

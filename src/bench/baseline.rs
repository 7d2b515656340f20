//! The yardstick of every throughput figure (`seglog bench`, `benches/`): the same
//! bytes through plain buffered `std` IO, measured in the same run as the engine.
//! Suite code: the engine never calls it. It gives the engine's writeback hint
//! through the testing seam (`seglog::testing::start_writeback`).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::time::Duration;

/// The CPU time (user + system) the process has used so far, every thread's
/// (finished ones too): its CPU-time clock (`CLOCK_PROCESS_CPUTIME_ID`), in
/// nanoseconds, so rows of a few milliseconds get a CPU figure too. `None` where
/// the clock cannot be read.
pub fn process_cpu_time() -> Option<Duration> {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// [`process_cpu_time`] of the calling thread alone (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_time() -> Option<Duration> {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn cpu_clock(clock: libc::clockid_t) -> Option<Duration> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec for the call's duration, and the
    // clock ids passed are the two CPU-time clocks every Linux and POSIX system has.
    #[allow(unsafe_code)]
    let status = unsafe { libc::clock_gettime(clock, &mut now) };
    if status != 0 {
        return None;
    }
    Some(Duration::new(
        u64::try_from(now.tv_sec).ok()?,
        u32::try_from(now.tv_nsec).ok()?,
    ))
}

/// Writes `bytes` to a new file at `path` through `BufWriter<File>`, `chunk_bytes`
/// per `write_all` (the batch size the engine appends), then fsyncs it.
pub fn write_buffered(path: &Path, bytes: &[u8], chunk_bytes: usize) -> io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    for chunk in bytes.chunks(chunk_bytes.max(1)) {
        out.write_all(chunk)?;
    }
    let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
    file.sync_all()
}

/// [`write_buffered`] starting the file's write-back each time another
/// `writeback_bytes` went to the kernel, as the log does
/// (`LogConfig::writeback_bytes`, `FileSystem::start_writeback`): the baseline of a
/// writer that overlaps its writes with the disk as well.
pub fn write_buffered_writeback(
    path: &Path,
    bytes: &[u8],
    chunk_bytes: usize,
    writeback_bytes: u64,
) -> io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    let mut hinted = 0u64;
    let mut written = 0u64;
    for chunk in bytes.chunks(chunk_bytes.max(1)) {
        out.write_all(chunk)?;
        written += chunk.len() as u64;
        if writeback_bytes > 0 && written / writeback_bytes != hinted / writeback_bytes {
            // What BufWriter still holds (less than its 8 KiB) waits for the next.
            seglog::testing::start_writeback(out.get_ref())?;
            hinted = written;
        }
    }
    let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
    file.sync_all()
}

/// Writes to a new file at `path` through `BufWriter<File>` what `produce` puts in
/// a reused buffer, one `write_all` per call, until it returns false; then fsyncs
/// it. The yardstick of a durable append whose bytes are computed (compressed) as
/// they are written.
pub fn write_produced(path: &Path, produce: impl FnMut(&mut Vec<u8>) -> bool) -> io::Result<u64> {
    write_produced_writeback(path, 0, produce)
}

/// [`write_produced`] starting the file's write-back each time another
/// `writeback_bytes` went to the kernel (0: never), as the log does.
pub fn write_produced_writeback(
    path: &Path,
    writeback_bytes: u64,
    mut produce: impl FnMut(&mut Vec<u8>) -> bool,
) -> io::Result<u64> {
    let mut out = BufWriter::new(File::create(path)?);
    let mut chunk = Vec::new();
    let mut written = 0u64;
    let mut hinted = 0u64;
    loop {
        chunk.clear();
        if !produce(&mut chunk) {
            break;
        }
        out.write_all(&chunk)?;
        written += chunk.len() as u64;
        if writeback_bytes > 0 && written / writeback_bytes != hinted / writeback_bytes {
            seglog::testing::start_writeback(out.get_ref())?;
            hinted = written;
        }
    }
    let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
    file.sync_all()?;
    Ok(written)
}

/// Reads the whole file at `path` through `BufReader<File>` into `buf`, one
/// `buf.len()` at a time; returns the bytes read.
pub fn read_buffered(path: &Path, buf: &mut [u8]) -> io::Result<usize> {
    let mut input = BufReader::new(File::open(path)?);
    let mut total = 0;
    loop {
        let n = input.read(buf)?;
        if n == 0 {
            return Ok(total);
        }
        total += n;
    }
}

/// Copies every file of `from` into a new directory `to` (`BufReader` to
/// `BufWriter`, 64 KiB at a time), fsyncing each file and then `to`; returns the
/// bytes copied.
pub fn copy_buffered(from: &Path, to: &Path) -> io::Result<u64> {
    let mut names: Vec<_> = std::fs::read_dir(from)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<io::Result<_>>()?;
    names.sort();
    std::fs::create_dir_all(to)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut copied = 0;
    for path in names {
        if !path.is_file() {
            continue;
        }
        let mut reader = BufReader::new(File::open(&path)?);
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::other("no file name"))?;
        let mut writer = BufWriter::new(File::create(to.join(name))?);
        loop {
            let n = reader.read(&mut buf)?;
            if n == 0 {
                break;
            }
            writer.write_all(&buf[..n])?;
            copied += n as u64;
        }
        writer
            .into_inner()
            .map_err(io::IntoInnerError::into_error)?
            .sync_all()?;
    }
    File::open(to)?.sync_all()?;
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_and_copy_see_the_same_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
        let a = tmp.path().join("src").join("a");
        std::fs::create_dir_all(a.parent().unwrap()).unwrap();
        write_buffered(&a, &data, 12_500).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), data);
        let mut chunks = data.chunks(7_000);
        let b = tmp.path().join("b");
        let written = write_produced(&b, |out| {
            chunks.next().map(|c| out.extend_from_slice(c)).is_some()
        })
        .unwrap();
        assert_eq!(written, data.len() as u64);
        assert_eq!(std::fs::read(&b).unwrap(), data);
        // The write-back variants write the same bytes.
        let c = tmp.path().join("c");
        write_buffered_writeback(&c, &data, 12_500, 30_000).unwrap();
        assert_eq!(std::fs::read(&c).unwrap(), data);
        let mut chunks = data.chunks(7_000);
        let d = tmp.path().join("d");
        let written = write_produced_writeback(&d, 20_000, |out| {
            chunks.next().map(|c| out.extend_from_slice(c)).is_some()
        })
        .unwrap();
        assert_eq!(written, data.len() as u64);
        assert_eq!(std::fs::read(&d).unwrap(), data);
        // CPU time only grows, and a busy loop of ~50 ms shows in it.
        let before = process_cpu_time().unwrap();
        let spin = std::time::Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < Duration::from_millis(60) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let after = process_cpu_time().unwrap();
        assert!(
            after >= before + Duration::from_millis(20),
            "{before:?} -> {after:?}"
        );
        // Finer than the 10 ms ticks of `/proc/self/stat`: the first step either
        // clock is seen to take is well under a millisecond.
        for clock in [process_cpu_time, thread_cpu_time] {
            let start = clock().unwrap();
            let step = loop {
                let now = clock().unwrap();
                if now > start {
                    break now - start;
                }
            };
            assert!(step < Duration::from_millis(1), "a step of {step:?}");
        }
        let mut buf = vec![0u8; 4096];
        assert_eq!(read_buffered(&a, &mut buf).unwrap(), data.len());
        let copied = copy_buffered(&tmp.path().join("src"), &tmp.path().join("dst")).unwrap();
        assert_eq!(copied, data.len() as u64);
        assert_eq!(
            std::fs::read(tmp.path().join("dst").join("a")).unwrap(),
            data
        );
    }
}

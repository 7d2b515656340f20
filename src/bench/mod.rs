//! Throughput beside a baseline measured in the same run: what `seglog bench`
//! runs, and the fixtures and loops the criterion benches in `benches/` share.
//!
//! * [`log`]: append and every read path of a log vs `BufWriter`/`BufReader`;
//! * [`compaction`]: install step 1 of a compaction vs a buffered copy;
//! * [`codecs`]: append, fetch, read and compaction of compressed batches vs the
//!   codec's own work.
//! * [`open`]: the open after a clean close and after a crash vs a full-scan open.
//! * [`cleanup`]: `compact` and `retain` of an open log vs the same followed by a
//!   full-scan open (what a reopen after them would cost).
//! * [`raw`]: producer batches appended as they came vs `BufWriter`.
//! * [`clean_append`]: appends while the cleaner compacts the same partition vs
//!   appends alone, and their latency vs the swap's fsync floor.
//! * [`kafka`]: the workloads shared with Apache Kafka's own log layer, seglog's
//!   side of each and the paired ratios (`seglog bench --kafka`).
//! * [`mod@compare`]: two builds' benches, round by round, judged row by row
//!   (`seglog bench --compare`).
//!
//! Method: a variant and its baseline run alternately (baseline, variant,
//! baseline, variant, ...) after one untimed run of each, so that the drift of a
//! shared machine hits both alike; the figure is the ratio of the medians,
//! baseline time / variant time (above 1: faster than the baseline), with the
//! spread of the per-pair ratios beside it.

pub mod baseline;
pub mod clean_append;
pub mod cleanup;
pub mod codecs;
pub mod compaction;
pub mod compare;
pub mod incremental;
pub mod kafka;
pub mod kafka_policy;
pub mod log;
pub mod open;
pub mod open_files;
pub mod raw;

use std::time::{Duration, Instant};

use serde::Serialize;

use seglog::error::{Error, Result};

pub use self::log::{
    append_log, fetch_bytes, fetch_records, read_raw_bytes, read_records, Counts, LogFixture,
    ReadVariant, READ_BYTES, READ_VARIANTS, VALUE_BYTES,
};

/// One variant beside its baseline.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub name: String,
    pub baseline: String,
    pub iterations: usize,
    pub median_ms: f64,
    pub baseline_median_ms: f64,
    /// Baseline median / variant median: above 1 is faster than the baseline.
    pub ratio: f64,
    /// The smallest and largest ratio of one baseline run to the variant run
    /// right after it.
    pub ratio_min: f64,
    pub ratio_max: f64,
    /// Bytes each run moves (for MiB/s).
    pub bytes: u64,
    pub mib_per_s: f64,
    /// The ratio the row is held to, if any, and whether the median met it.
    pub target: Option<f64>,
    pub met: Option<bool>,
    /// Mean CPU time (user + system, every thread of the process) of the timed
    /// parts per run, variant and baseline, and their ratio (baseline / variant,
    /// of the totals over every timed run): beside the wall-clock figures on a
    /// loaded machine, where waiting for a core inflates wall time but not CPU
    /// time. `None` when a side does not time itself with a [`Stopwatch`], or
    /// used no CPU the clock saw. The clock is the process's CPU-time clock, in
    /// nanoseconds ([`crate::bench::baseline::process_cpu_time`]), so rows of a few
    /// milliseconds get a CPU figure too. The kernel's writeback after an fsync
    /// runs in its own threads and is not counted.
    pub cpu_mean_ms: Option<f64>,
    pub baseline_cpu_mean_ms: Option<f64>,
    pub cpu_ratio: Option<f64>,
}

thread_local! {
    /// The CPU time of the last [`Stopwatch`] stopped on this thread.
    static LAST_CPU: std::cell::Cell<Option<Duration>> = const { std::cell::Cell::new(None) };
}

/// Wall-clock and process CPU time of a timed part; [`Stopwatch::stop`] returns
/// the wall time and leaves the CPU time for [`compare()`] to collect.
#[derive(Debug)]
pub struct Stopwatch {
    wall: Instant,
    cpu: Option<Duration>,
}

impl Stopwatch {
    pub fn start() -> Self {
        let cpu = crate::bench::baseline::process_cpu_time();
        Stopwatch {
            wall: Instant::now(),
            cpu,
        }
    }

    /// The wall time since [`Stopwatch::start`].
    pub fn stop(self) -> Duration {
        let wall = self.wall.elapsed();
        let cpu = self
            .cpu
            .zip(crate::bench::baseline::process_cpu_time())
            .map(|(start, end)| end.saturating_sub(start));
        LAST_CPU.with(|last| last.set(cpu));
        wall
    }
}

/// Runs one side of a comparison; its wall time and the CPU time its
/// [`Stopwatch`] measured (if it used one).
fn run_side(side: &mut impl FnMut() -> Result<Duration>) -> Result<(Duration, Option<Duration>)> {
    LAST_CPU.with(|last| last.set(None));
    let wall = side()?;
    Ok((wall, LAST_CPU.with(std::cell::Cell::take)))
}

/// Runs `baseline` and `variant` alternately `iterations` times after one untimed
/// run of each; each returns the time of the part it measures.
pub fn compare(
    name: &str,
    baseline_name: &str,
    iterations: usize,
    bytes: u64,
    target: Option<f64>,
    mut baseline: impl FnMut() -> Result<Duration>,
    mut variant: impl FnMut() -> Result<Duration>,
) -> Result<Comparison> {
    if iterations == 0 {
        return Err(Error::InvalidArgument(
            "iterations must be at least 1".into(),
        ));
    }
    baseline()?;
    variant()?;
    let mut pairs = Vec::with_capacity(iterations);
    let mut cpu_pairs = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let (base_wall, base_cpu) = run_side(&mut baseline)?;
        let (wall, cpu) = run_side(&mut variant)?;
        pairs.push((base_wall, wall));
        cpu_pairs.push(base_cpu.zip(cpu));
    }
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let base = median(pairs.iter().map(|p| p.0).collect());
    let took = median(pairs.iter().map(|p| p.1).collect());
    let cpu: Option<Vec<(Duration, Duration)>> = cpu_pairs.into_iter().collect();
    let cpu = cpu.and_then(|cpu| {
        let base: Duration = cpu.iter().map(|p| p.0).sum();
        let took: Duration = cpu.iter().map(|p| p.1).sum();
        let runs = u32::try_from(iterations).unwrap_or(u32::MAX);
        (!took.is_zero() && !base.is_zero()).then(|| (base / runs, took / runs, ratio(base, took)))
    });
    let ratios: Vec<f64> = pairs.iter().map(|(b, v)| ratio(*b, *v)).collect();
    let ratio = ratio(base, took);
    Ok(Comparison {
        name: name.to_string(),
        baseline: baseline_name.to_string(),
        iterations,
        median_ms: took.as_secs_f64() * 1e3,
        baseline_median_ms: base.as_secs_f64() * 1e3,
        ratio,
        ratio_min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratio_max: ratios.iter().copied().fold(0.0, f64::max),
        bytes,
        mib_per_s: bytes as f64 / (1024.0 * 1024.0) / took.as_secs_f64().max(1e-9),
        target,
        met: target.map(|t| ratio >= t),
        cpu_mean_ms: cpu.map(|(_, took, _)| took.as_secs_f64() * 1e3),
        baseline_cpu_mean_ms: cpu.map(|(base, _, _)| base.as_secs_f64() * 1e3),
        cpu_ratio: cpu.map(|(_, _, cpu_ratio)| cpu_ratio),
    })
}

fn ratio(baseline: Duration, variant: Duration) -> f64 {
    baseline.as_secs_f64() / variant.as_secs_f64().max(1e-9)
}

/// Times `run`, which must return `expected` (a count that proves it did the work).
pub fn timed(expected: usize, run: impl FnOnce() -> Result<usize>) -> Result<Duration> {
    let start = Stopwatch::start();
    let got = run()?;
    let took = start.stop();
    if got != expected {
        return Err(Error::InvalidArgument(format!(
            "a benchmark run did {got} units of work, expected {expected}"
        )));
    }
    Ok(took)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_alternates_and_reports_the_ratio_of_medians() {
        let mut order = Vec::new();
        let order_cell = std::cell::RefCell::new(&mut order);
        let comparison = compare(
            "v",
            "b",
            3,
            1 << 20,
            Some(0.5),
            || {
                order_cell.borrow_mut().push('b');
                Ok(Duration::from_millis(10))
            },
            || {
                order_cell.borrow_mut().push('v');
                Ok(Duration::from_millis(40))
            },
        )
        .unwrap();
        assert_eq!(order.iter().collect::<String>(), "bvbvbvbv");
        assert!((comparison.ratio - 0.25).abs() < 1e-9);
        assert_eq!((comparison.ratio_min, comparison.ratio_max), (0.25, 0.25));
        assert_eq!(comparison.met, Some(false));
        assert!((comparison.mib_per_s - 25.0).abs() < 1e-6);
        assert!(timed(3, || Ok(2)).is_err());
        // Sides that time themselves with a Stopwatch report CPU time; the others
        // none.
        assert_eq!(comparison.cpu_ratio, None);
        let timed_side = || timed(1, || Ok(1));
        let with_cpu = compare("v", "b", 2, 1, None, timed_side, timed_side).unwrap();
        // (Too little CPU for the clock to see is no ratio, not a zero one.)
        assert!(with_cpu.cpu_ratio.is_none_or(|r| r > 0.0));
        let spin = || {
            timed(1, || {
                let start = Instant::now();
                let mut x = 0u64;
                while start.elapsed() < Duration::from_millis(30) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
                Ok(1)
            })
        };
        let with_cpu = compare("v", "b", 3, 1, None, spin, spin).unwrap();
        assert!(with_cpu.cpu_ratio.is_some_and(|r| r > 0.0));
        assert!(with_cpu.cpu_mean_ms.is_some_and(|ms| ms > 0.0));
    }
}

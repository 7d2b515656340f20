//! Throughput beside a baseline measured in the same run: what `seglog bench`
//! runs, and the fixtures and loops the criterion benches in `benches/` share.
//!
//! * [`log`]: append and every read path of a log vs `BufWriter`/`BufReader`;
//! * [`compaction`]: install step 1 of a compaction vs a buffered copy;
//! * [`codecs`]: append, fetch, read and compaction of compressed batches vs the
//!   codec's own work.
//! * [`open`]: the open after a clean close and after a crash vs a full-scan open.
//! * [`cleanup`]: `compact` and `retain` of an open log vs the same followed by a
//!   full-scan open (the reopen they ended with before issue 11).
//! * [`raw`]: producer batches appended as they came vs `BufWriter`.
//!
//! Method: a variant and its baseline run alternately (baseline, variant,
//! baseline, variant, ...) after one untimed run of each, so that the drift of a
//! shared machine hits both alike; the figure is the ratio of the medians,
//! baseline time / variant time (above 1: faster than the baseline), with the
//! spread of the per-pair ratios beside it.

pub mod cleanup;
#[cfg(feature = "compression")]
pub mod codecs;
pub mod compaction;
pub mod incremental;
pub mod kafka_policy;
pub mod log;
pub mod open;
pub mod raw;

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{Error, Result};

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
    /// The ratio the project's issue asks for, if any, and whether the median met it.
    pub target: Option<f64>,
    pub met: Option<bool>,
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
    for _ in 0..iterations {
        pairs.push((baseline()?, variant()?));
    }
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let base = median(pairs.iter().map(|p| p.0).collect());
    let took = median(pairs.iter().map(|p| p.1).collect());
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
    })
}

fn ratio(baseline: Duration, variant: Duration) -> f64 {
    baseline.as_secs_f64() / variant.as_secs_f64().max(1e-9)
}

/// Times `run`, which must return `expected` (a count that proves it did the work).
pub fn timed(expected: usize, run: impl FnOnce() -> Result<usize>) -> Result<Duration> {
    let start = Instant::now();
    let got = run()?;
    let took = start.elapsed();
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
    }
}

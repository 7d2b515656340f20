//! Appends while the cleaner compacts the same partition, beside
//! appends alone in the same run:
//! * throughput: records appended per second during one cleaning (snapshot, build,
//!   swap, trash) of a closed region of `keys` keys written twice, vs appends alone
//!   on the same partition for as long; target >= 0.8x;
//! * latency of the appends that overlapped a cleaning: p99 <= the swap's fsync
//!   floor (the syncs the swap makes under the append lock, counted through a
//!   [`TraceFs`], times one fsync measured on the same disk) + 2 ms.
//!
//! Each iteration builds a fresh partition; the two phases alternate their order
//! (even iterations: alone first). CPU time (user+sys of the process, its CPU-time
//! clock) is reported beside wall time: the machine may be loaded.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use seglog::error::{Error, Result};
use seglog::fs::{FileSystem, StdFs, TraceCall, TraceFs};
use seglog::log::LogConfig;
use seglog::manager::{CleanupPolicy, LogManager, ManagerConfig, Partition, PartitionConfig};
use seglog::{ManualClock, NewRecord};

/// Throughput target: appends during a cleaning >= 0.8x appends alone.
pub const THROUGHPUT_TARGET: f64 = 0.8;
/// Latency allowance above the swap's fsync floor.
pub const P99_SLACK_US: f64 = 2_000.0;

const SEGMENT_BYTES: u64 = 16 * 1024 * 1024;
const VALUE_BYTES: usize = 100;

/// Percentiles of append latencies, microseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Percentiles {
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub samples: usize,
}

impl Percentiles {
    fn of(mut ns: Vec<u64>) -> Percentiles {
        ns.sort_unstable();
        let at = |q: f64| {
            if ns.is_empty() {
                return 0.0;
            }
            let i = ((ns.len() as f64 * q).ceil() as usize).clamp(1, ns.len()) - 1;
            ns[i] as f64 / 1000.0
        };
        Percentiles {
            p50_us: at(0.5),
            p99_us: at(0.99),
            p999_us: at(0.999),
            max_us: at(1.0),
            samples: ns.len(),
        }
    }
}

/// One iteration's two phases.
#[derive(Debug, Clone, Serialize)]
pub struct Iteration {
    pub alone_first: bool,
    pub cleaning_ms: f64,
    pub alone_records_per_sec: f64,
    pub during_clean_records_per_sec: f64,
    pub ratio: f64,
    pub during_clean_p99_us: f64,
    /// User+sys CPU seconds of the process in each phase.
    pub alone_cpu_s: f64,
    pub during_clean_cpu_s: f64,
    /// The appender thread's own CPU (user+sys, 10 ms ticks) per record appended.
    pub alone_appender_cpu_ns_per_record: f64,
    pub during_clean_appender_cpu_ns_per_record: f64,
}

/// The suite's report (`seglog bench --only clean-append`: `"clean_append"`).
#[derive(Debug, Clone, Serialize)]
pub struct CleanAppendReport {
    pub keys: u64,
    pub batch_records: usize,
    pub iterations: Vec<Iteration>,
    /// Median of the per-iteration ratios, and their range.
    pub throughput_ratio: f64,
    pub throughput_ratio_min: f64,
    pub throughput_ratio_max: f64,
    pub throughput_target: f64,
    pub throughput_met: bool,
    /// Median over iterations of alone / during-cleaning appender CPU per record:
    /// the ratio with the scheduler's share taken out (a loaded machine).
    pub appender_cpu_ratio: f64,
    /// Appends that overlapped a cleaning, every iteration pooled.
    pub latency_during_clean: Percentiles,
    /// Appends alone, every iteration pooled.
    pub latency_alone: Percentiles,
    /// Median of 50 measured fsyncs (4 KiB appended before each) on this disk.
    pub fsync_us: f64,
    /// Syncs (file and directory) the swap makes under the append lock.
    pub swap_syncs: usize,
    /// `swap_syncs * fsync_us`.
    pub fsync_floor_us: f64,
    /// `fsync_floor_us + 2 ms`: the limit of the p99 during a cleaning.
    pub p99_limit_us: f64,
    pub p99_met: bool,
}

fn config() -> PartitionConfig {
    PartitionConfig {
        log: LogConfig {
            segment_bytes: SEGMENT_BYTES,
            min_cleanable_dirty_ratio: 0.0,
            ..LogConfig::default()
        },
        cleanup_policy: CleanupPolicy::Compact,
        delete_retention_ms: i64::MAX / 4,
        ..PartitionConfig::default()
    }
}

fn manager(fs: Arc<dyn FileSystem>, dir: &Path) -> Result<LogManager> {
    LogManager::new(
        fs,
        dir,
        ManagerConfig {
            cleaner_threads: 0,
            ..ManagerConfig::default()
        },
        Arc::new(ManualClock::new(1_000)),
    )
}

fn value(i: u64) -> Vec<u8> {
    let mut v = format!("{i:016}").into_bytes();
    v.resize(VALUE_BYTES, b'v');
    v
}

/// `keys` keys written twice, then a roll: a closed region all dirty.
fn fill(partition: &Partition, keys: u64) -> Result<()> {
    for round in 0..2u64 {
        let mut k = 0;
        while k < keys {
            let records: Vec<NewRecord> = (k..(k + 1000).min(keys))
                .map(|i| {
                    NewRecord::new(
                        Some(format!("key{i:012}").into_bytes()),
                        Some(value(round)),
                        0,
                    )
                })
                .collect();
            partition.append(&records)?;
            k += 1000;
        }
    }
    partition.roll()?;
    Ok(())
}

/// User+sys CPU seconds of this process so far (0 where the clock cannot be read).
pub fn cpu_seconds() -> f64 {
    crate::bench::baseline::process_cpu_time().map_or(0.0, |cpu| cpu.as_secs_f64())
}

/// User+sys CPU seconds of the calling thread so far (0 where the clock cannot be
/// read).
pub fn thread_cpu_seconds() -> f64 {
    crate::bench::baseline::thread_cpu_time().map_or(0.0, |cpu| cpu.as_secs_f64())
}

/// Appends batches of fresh keys until `stop`; each append's `(start, end)`.
fn appender(
    partition: Partition,
    batch_records: usize,
    stop: Arc<AtomicBool>,
    spans: Arc<Mutex<Vec<(Instant, Instant)>>>,
) -> Result<f64> {
    let cpu = thread_cpu_seconds();
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let records: Vec<NewRecord> = (0..batch_records as u64)
            .map(|i| {
                NewRecord::new(
                    Some(format!("new{:012}", n + i).into_bytes()),
                    Some(value(n)),
                    0,
                )
            })
            .collect();
        n += batch_records as u64;
        let started = Instant::now();
        partition.append(&records)?;
        let ended = Instant::now();
        spans
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((started, ended));
    }
    // The appender thread's own CPU per record: what a cleaning costs the append
    // path itself, apart from the CPU the scheduler gave other threads.
    Ok((thread_cpu_seconds() - cpu) * 1e9 / n.max(1) as f64)
}

/// Runs an appender while `during` runs; returns the appends inside `during`'s
/// window (count, latencies of those overlapping it) and the window.
fn with_appender(
    partition: &Partition,
    batch_records: usize,
    during: impl FnOnce() -> Result<()>,
) -> Result<Phase> {
    let stop = Arc::new(AtomicBool::new(false));
    let spans = Arc::new(Mutex::new(Vec::new()));
    let handle = {
        let (p, s, sp) = (partition.clone(), Arc::clone(&stop), Arc::clone(&spans));
        std::thread::spawn(move || appender(p, batch_records, s, sp))
    };
    std::thread::sleep(Duration::from_millis(50));
    let cpu = cpu_seconds();
    let from = Instant::now();
    let result = during();
    let to = Instant::now();
    let cpu = cpu_seconds() - cpu;
    stop.store(true, Ordering::SeqCst);
    let appender_cpu_ns_per_record = handle
        .join()
        .map_err(|_| Error::InvalidArgument("the appender panicked".into()))??;
    result?;
    let spans = spans.lock().unwrap_or_else(|e| e.into_inner());
    let inside = spans.iter().filter(|(s, e)| *s >= from && *e <= to).count();
    let overlapping = spans
        .iter()
        .filter(|(s, e)| *e >= from && *s <= to)
        .map(|(s, e)| u64::try_from((*e - *s).as_nanos()).unwrap_or(u64::MAX))
        .collect();
    Ok(Phase {
        appends: inside,
        latencies_ns: overlapping,
        window: to - from,
        cpu_s: cpu,
        appender_cpu_ns_per_record,
    })
}

/// One phase: appends inside the window, latencies of those overlapping it, the
/// window, the process's CPU seconds in it, the appender thread's CPU per record.
struct Phase {
    appends: usize,
    latencies_ns: Vec<u64>,
    window: Duration,
    cpu_s: f64,
    appender_cpu_ns_per_record: f64,
}

/// Median of 50 fsyncs of a file in `dir`, each after a 4 KiB append (µs).
pub fn measure_fsync_us(fs: &dyn FileSystem, dir: &Path) -> Result<f64> {
    let path = dir.join("fsync-probe");
    fs.create_file(&path).map_err(|e| Error::io(&path, e))?;
    let block = vec![7u8; 4096];
    let mut times = Vec::new();
    for _ in 0..50 {
        fs.append(&path, &block).map_err(|e| Error::io(&path, e))?;
        let started = Instant::now();
        fs.sync_file(&path).map_err(|e| Error::io(&path, e))?;
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    fs.remove_file(&path).map_err(|e| Error::io(&path, e))?;
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// The syncs one swap makes under the append lock, counted through a
/// [`TraceFs`]: a small partition, snapshot, build, appends and a roll during
/// the build (a tail of two segments), then the swap alone traced.
pub fn count_swap_syncs(dir: &Path) -> Result<usize> {
    let traced = Arc::new(TraceFs::new(Arc::new(StdFs::new())));
    let fs: Arc<dyn FileSystem> = traced.clone();
    let manager = manager(fs, dir)?;
    let partition = manager.create("syncs", 0, config())?;
    fill(&partition, 2_000)?;
    let snapshot = partition.with_log_mut(|log| {
        let knobs = log.config().clean_options();
        log.clean_snapshot(1_000, i64::MAX / 4, None, knobs)
    })?;
    let snapshot = snapshot.ok_or_else(|| Error::InvalidArgument("nothing to clean".into()))?;
    let build = snapshot.build()?;
    partition.append(&[NewRecord::new(Some(b"a".to_vec()), Some(value(1)), 0)])?;
    partition.roll()?;
    partition.append(&[NewRecord::new(Some(b"b".to_vec()), Some(value(2)), 0)])?;
    let mark = traced.len();
    let swapped = partition.with_log_mut(|log| log.clean_swap(build))?;
    let syncs = traced.ops()[mark..]
        .iter()
        .filter(|op| matches!(op.call, TraceCall::SyncFile | TraceCall::SyncDir))
        .count();
    if let Some(trash) = swapped.trash {
        trash.remove(&StdFs::new())?;
    }
    manager.close()?;
    Ok(syncs)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Runs the suite in `root` (a fresh directory per iteration, removed after).
pub fn run(
    root: &Path,
    keys: u64,
    batch_records: usize,
    iterations: usize,
) -> Result<CleanAppendReport> {
    let std_fs = StdFs::new();
    std_fs
        .create_dir_all(root)
        .map_err(|e| Error::io(root, e))?;
    let fsync_us = measure_fsync_us(&std_fs, root)?;
    let swap_syncs = count_swap_syncs(&root.join("swap-syncs"))?;
    let mut runs = Vec::new();
    let (mut during_all, mut alone_all) = (Vec::new(), Vec::new());
    let mut window = Duration::from_secs(1);
    for i in 0..iterations {
        let dir = root.join(format!("iteration-{i}"));
        let manager = manager(Arc::new(StdFs::new()), &dir)?;
        let partition = manager.create("clean-append", 0, config())?;
        eprintln!("seglog bench: clean-append iteration {i}: {keys} keys written twice");
        fill(&partition, keys)?;
        let alone_first = i % 2 == 0;
        let mut alone = None;
        let mut during = None;
        for phase in if alone_first {
            [true, false]
        } else {
            [false, true]
        } {
            if phase {
                let w = window;
                alone = Some(with_appender(&partition, batch_records, || {
                    std::thread::sleep(w);
                    Ok(())
                })?);
            } else {
                let mut cleaned = false;
                let run = with_appender(&partition, batch_records, || {
                    cleaned = matches!(
                        manager.run_cleaner_once()?,
                        Some(c) if matches!(c.outcome, seglog::manager::CleanOutcome::Cleaned(_))
                    );
                    Ok(())
                })?;
                if !cleaned {
                    return Err(Error::InvalidArgument(
                        "the cleaner found nothing to clean".into(),
                    ));
                }
                window = run.window;
                during = Some(run);
            }
        }
        let (alone, during) = (alone.expect("ran"), during.expect("ran"));
        let rate =
            |p: &Phase| (p.appends * batch_records) as f64 / p.window.as_secs_f64().max(1e-9);
        let (alone_rate, during_rate) = (rate(&alone), rate(&during));
        runs.push(Iteration {
            alone_first,
            cleaning_ms: during.window.as_secs_f64() * 1e3,
            alone_records_per_sec: alone_rate,
            during_clean_records_per_sec: during_rate,
            ratio: during_rate / alone_rate.max(1e-9),
            during_clean_p99_us: Percentiles::of(during.latencies_ns.clone()).p99_us,
            alone_cpu_s: alone.cpu_s,
            during_clean_cpu_s: during.cpu_s,
            alone_appender_cpu_ns_per_record: alone.appender_cpu_ns_per_record,
            during_clean_appender_cpu_ns_per_record: during.appender_cpu_ns_per_record,
        });
        eprintln!(
            "seglog bench: clean-append iteration {i}: cleaning {:.0} ms, {:.0} vs {:.0} records/s alone, ratio {:.2}",
            during.window.as_secs_f64() * 1e3,
            during_rate,
            alone_rate,
            during_rate / alone_rate.max(1e-9)
        );
        during_all.extend(during.latencies_ns);
        alone_all.extend(alone.latencies_ns);
        manager.close()?;
        std_fs
            .remove_dir_all(&dir)
            .map_err(|e| Error::io(&dir, e))?;
    }
    let ratios: Vec<f64> = runs.iter().map(|r| r.ratio).collect();
    let throughput_ratio = median(ratios.clone());
    let latency_during_clean = Percentiles::of(during_all);
    let fsync_floor_us = swap_syncs as f64 * fsync_us;
    let p99_limit_us = fsync_floor_us + P99_SLACK_US;
    Ok(CleanAppendReport {
        keys,
        batch_records,
        throughput_ratio,
        throughput_ratio_min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
        throughput_ratio_max: ratios.iter().copied().fold(0.0, f64::max),
        throughput_target: THROUGHPUT_TARGET,
        throughput_met: throughput_ratio >= THROUGHPUT_TARGET,
        appender_cpu_ratio: median(
            runs.iter()
                .map(|r| {
                    r.alone_appender_cpu_ns_per_record
                        / r.during_clean_appender_cpu_ns_per_record.max(1e-9)
                })
                .collect(),
        ),
        latency_during_clean,
        latency_alone: Percentiles::of(alone_all),
        fsync_us,
        swap_syncs,
        fsync_floor_us,
        p99_limit_us,
        p99_met: latency_during_clean.p99_us <= p99_limit_us,
        iterations: runs,
    })
}

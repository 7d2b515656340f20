//! The cleaner's incremental and multi-pass numbers, each beside its baseline in the
//! same run.
//!
//! **Incremental** (`SEGLOG_BENCH_KEYS`, default 1,000,000 distinct 16-byte keys with
//! 100-byte values, ~130 MB, in 16 MiB segments): the log is compacted once (the
//! clean point reaches the active segment), then 10% of the keys are written again
//! and the segment rolled, so 10% of the log is dirty. Measured (median of the
//! criterion samples):
//! * `cleaning/map_incremental`: the incremental map pass (`map_pass`: read, check,
//!   hash and insert the dirty section's records);
//! * `cleaning/scan_incremental`: what the rewrite needs from it (`scan_dirty`: the
//!   map pass, then every clean record checked, hashed and looked up in the map);
//! * `cleaning/map_full`: the full map pass of a compaction from scratch (`scan`);
//! * `cleaning/build_incremental`: install step 1 from the clean point (map, rewrite,
//!   fsync of every file);
//! * `cleaning/build_from_scratch`: the same directory without its clean point file.
//!
//! Ratios printed: map incremental / full (target <= 0.15) and build incremental /
//! from scratch (target <= 0.6).
//!
//! **Multi-pass** (`SEGLOG_BENCH_MULTIPASS_KEYS`, default 2,000,000 distinct keys,
//! a quarter of them written twice; `SEGLOG_BENCH_BUDGET_KEYS`, default 262,144):
//! `Log::clean` with `dedupe_buffer_bytes = budget * 24` until a pass maps the whole
//! dirty section, against one unbounded compaction of a copy. Printed: passes, the
//! largest `map_bytes_peak` of a pass (the table's own bytes, 24 a slot) against the
//! budget, both times, and whether the two logs read the same records (a digest of
//! every offset, key and value).

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use seglog::compaction::pass::full as scan;
use seglog::compaction::pass::incremental::{map_pass, scan_dirty};
use seglog::compaction::{build, build_with, CleanOptions, CompactOptions, Horizon};
use seglog::format::checkpoint::CLEAN_POINT_NAME;
use seglog::fs::{FileSystem, StdFs};
use seglog::install::InstallPaths;
use seglog::segment::list_segments;
use seglog::{Log, LogConfig, NewRecord};

const SEGMENT_BYTES: u64 = 16 * 1024 * 1024;
const BATCH: u64 = 1_000;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: SEGMENT_BYTES,
        ..LogConfig::default()
    }
}

/// Appends one record per key of `keys` (in batches), value `round`.
fn write_keys(log: &mut Log, keys: impl Iterator<Item = u64>, round: u8) {
    let value = vec![b'a' + round; 100];
    let mut batch = Vec::with_capacity(BATCH as usize);
    for k in keys {
        batch.push(NewRecord::new(
            Some(format!("key-{k:012}").into_bytes()),
            Some(value.clone()),
            0,
        ));
        if batch.len() as u64 == BATCH {
            log.append(&batch).unwrap();
            batch.clear();
        }
    }
    if !batch.is_empty() {
        log.append(&batch).unwrap();
    }
}

/// `keys` distinct keys, compacted; then `dirty` of them (scattered) written again.
fn incremental_fixture(dir: &Path, keys: u64, dirty: u64) {
    let (mut log, _) = Log::open(dir, config()).unwrap();
    write_keys(&mut log, 0..keys, 0);
    log.roll().unwrap();
    log.compact(1, 1_000, None).unwrap();
    write_keys(&mut log, (0..dirty).map(|k| (k * 7_919) % keys), 1);
    log.roll().unwrap();
    log.append(&[NewRecord::new(Some(b"active".to_vec()), None, 0)])
        .unwrap();
    log.close().unwrap();
}

fn remove_tmp(dir: &Path) {
    let paths = InstallPaths::new(dir).unwrap();
    std::fs::remove_dir_all(&paths.tmp).unwrap();
}

fn median(runs: &mut [Duration]) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

/// Times `run` as a criterion function, keeping every sample.
fn timed(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    mut run: impl FnMut() -> Duration,
) -> Duration {
    let mut runs = Vec::new();
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let took = run();
                runs.push(took);
                total += took;
            }
            total
        })
    });
    median(&mut runs)
}

fn incremental(c: &mut Criterion) {
    let fs = StdFs::new();
    let keys = env("SEGLOG_BENCH_KEYS", 1_000_000);
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("log");
    incremental_fixture(&dir, keys, keys / 10);
    let bases = list_segments(&fs, &dir).unwrap();
    let (log, _) = Log::open(&dir, config()).unwrap();
    let clean_point = log.clean_point().unwrap();
    drop(log);
    let options = CompactOptions {
        now: 1,
        delete_retention_ms: 1_000,
        segment_bytes: SEGMENT_BYTES,
    };
    let mut group = c.benchmark_group("cleaning");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    let map_incremental = timed(&mut group, "map_incremental", || {
        let start = Instant::now();
        let (mapped, _) =
            map_pass(&fs, &dir, &bases, clean_point, 1, CleanOptions::default()).unwrap();
        let took = start.elapsed();
        assert!(mapped as u64 <= keys / 10 + 1);
        took
    });
    let scan_incremental = timed(&mut group, "scan_incremental", || {
        let start = Instant::now();
        let horizon = Horizon {
            now: 1,
            delete_retention_ms: 1_000,
        };
        let scan = scan_dirty(
            &fs,
            &dir,
            &bases,
            clean_point,
            horizon,
            CleanOptions::default(),
        )
        .unwrap();
        let took = start.elapsed();
        assert!(scan.scan.superseded.keys as u64 <= keys / 10 + 1);
        took
    });
    let map_full = timed(&mut group, "map_full", || {
        let start = Instant::now();
        let scan = scan::scan(&fs, &dir, &bases).unwrap();
        let took = start.elapsed();
        assert!(scan.superseded.keys as u64 >= keys);
        took
    });
    let build_incremental = timed(&mut group, "build_incremental", || {
        let start = Instant::now();
        let built = build_with(&fs, &dir, options, CleanOptions::default())
            .unwrap()
            .unwrap();
        let took = start.elapsed();
        assert_eq!(built.report.clean_point_before, clean_point);
        remove_tmp(&dir);
        took
    });
    // From scratch: the same directory without its clean point file.
    let aside = root.path().join(CLEAN_POINT_NAME);
    std::fs::rename(dir.join(CLEAN_POINT_NAME), &aside).unwrap();
    let build_scratch = timed(&mut group, "build_from_scratch", || {
        let start = Instant::now();
        let built = build(&fs, &dir, options).unwrap().unwrap();
        let took = start.elapsed();
        assert_eq!(built.report.clean_point_before, bases[0]);
        remove_tmp(&dir);
        took
    });
    std::fs::rename(&aside, dir.join(CLEAN_POINT_NAME)).unwrap();
    group.finish();
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!(
        "incremental ({keys} keys, 10% dirty): map {:.3} s vs full map {:.3} s: {:.3}x (target <= 0.15); \
         map + clean lookups {:.3} s: {:.3}x; build {:.3} s vs from scratch {:.3} s: {:.3}x (target <= 0.6)",
        map_incremental.as_secs_f64(),
        map_full.as_secs_f64(),
        ratio(map_incremental, map_full),
        scan_incremental.as_secs_f64(),
        ratio(scan_incremental, map_full),
        build_incremental.as_secs_f64(),
        build_scratch.as_secs_f64(),
        ratio(build_incremental, build_scratch),
    );
}

/// A digest of every record (offset, key, value) of the log in `dir`.
fn content_digest(dir: &Path) -> (u64, u64) {
    let (log, _) = Log::open(dir, config()).unwrap();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut from = log.log_start_offset();
    let mut records = 0;
    while from < log.next_offset() {
        let read = log.read(from, 8 << 20).unwrap();
        let Some(last) = read.last() else { break };
        from = last.offset + 1;
        for r in &read {
            (r.offset, r.key, r.value).hash(&mut hasher);
            records += 1;
        }
    }
    (records, hasher.finish())
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn multi_pass(_c: &mut Criterion) {
    let keys = env("SEGLOG_BENCH_MULTIPASS_KEYS", 2_000_000);
    let budget_keys = env("SEGLOG_BENCH_BUDGET_KEYS", 262_144);
    let root = tempfile::tempdir().unwrap();
    let bounded_dir: PathBuf = root.path().join("bounded");
    {
        let (mut log, _) = Log::open(&bounded_dir, config()).unwrap();
        write_keys(&mut log, 0..keys, 0);
        write_keys(&mut log, (0..keys / 4).map(|k| (k * 7_919) % keys), 1);
        log.roll().unwrap();
        log.append(&[NewRecord::new(Some(b"active".to_vec()), None, 0)])
            .unwrap();
        log.close().unwrap();
    }
    let unbounded_dir = root.path().join("unbounded");
    copy_dir(&bounded_dir, &unbounded_dir);
    let knobs = CleanOptions {
        dedupe_buffer_bytes: Some(budget_keys * 24),
        min_compaction_lag_ms: 0,
        ..CleanOptions::default()
    };
    let start = Instant::now();
    let (mut log, _) = Log::open_with(Arc::new(StdFs::new()), &bounded_dir, config()).unwrap();
    let mut passes = 0;
    let mut peak = 0;
    loop {
        let report = log.clean(1, 1_000, None, knobs).unwrap();
        passes += 1;
        peak = peak.max(report.map_bytes_peak);
        if report.mapped_end_offset == log.next_offset() || passes > 64 {
            break;
        }
    }
    log.close().unwrap();
    let bounded_time = start.elapsed();
    let start = Instant::now();
    let (mut log, _) = Log::open(&unbounded_dir, config()).unwrap();
    let unbounded = log.compact(1, 1_000, None).unwrap();
    log.close().unwrap();
    let unbounded_time = start.elapsed();
    let (bounded_records, bounded_digest) = content_digest(&bounded_dir);
    let (unbounded_records, unbounded_digest) = content_digest(&unbounded_dir);
    println!(
        "multi-pass ({keys} keys + {} rewritten, budget {budget_keys} keys = {} bytes): {passes} passes in {:.2} s, \
         peak map bytes {peak} (within budget: {}); unbounded: 1 pass in {:.2} s, peak map bytes {}; \
         records {bounded_records} vs {unbounded_records}, identical: {}",
        keys / 4,
        budget_keys * 24,
        bounded_time.as_secs_f64(),
        peak <= budget_keys * 24,
        unbounded_time.as_secs_f64(),
        unbounded.map_bytes_peak,
        bounded_digest == unbounded_digest && bounded_records == unbounded_records,
    );
    assert!(peak <= budget_keys * 24, "the map outgrew its budget");
    assert_eq!(bounded_records, unbounded_records);
    assert_eq!(bounded_digest, unbounded_digest);
    let _ = StdFs::new().exists(&bounded_dir);
}

criterion_group!(benches, incremental, multi_pass);
criterion_main!(benches);

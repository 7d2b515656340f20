//! Compaction throughput beside a plain buffered-IO baseline, measured in the same run.
//!
//! Data: a closed region of about 256 MiB (1,000,000 distinct 16-byte keys, each
//! written twice with ~100-byte values, so 50% of the records are obsolete), in
//! 64 MiB segments, plus a small active segment. `SEGLOG_BENCH_MIB` scales the
//! region down for a quick run (default 256). `SEGLOG_BENCH_PARTIAL=1` makes the
//! second round rewrite only a scattered half of the keys, so that every batch of
//! the first round is partly kept (1.5 million records, a third obsolete).
//!
//! * `compaction/build`: install step 1 (offset map over all segments, rewrite of
//!   the closed region, copy of the active segment, fsync of every file), the part
//!   that touches every byte; the renames of steps 2-6 are a handful of syscalls.
//! * `compaction/build_kafka_policy`: the same under the `kafka` policy (a pass from
//!   the log start: every batch decoded, kept batches copied, rewritten ones encoded).
//! * `compaction/baseline_copy`: read every segment file with `BufReader` and write
//!   the same bytes with `BufWriter`, then fsync: the same bytes, plain buffered IO.
//!
//! Both report throughput over the input bytes; the ratio
//! `baseline time / compaction time` is printed at the end, with the time of the
//! map pass alone and the map's bytes per distinct key (resident and peak). The
//! closed segments are memory-mapped (`FileSystem::map`): their pages are page
//! cache, not heap, and count in the process's RSS as file pages while mapped.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use seglog::compaction::pass::full as scan;
use seglog::fs::{FileSystem, StdFs};
use seglog_suite::bench::baseline;
use seglog_suite::bench::compaction::CompactionFixture;

struct Fixture {
    _root: tempfile::TempDir,
    fixture: CompactionFixture,
}

fn fixture(fs: &dyn FileSystem) -> Fixture {
    let mib: u64 = std::env::var("SEGLOG_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    // ~134 bytes per record (16-byte key, 100-byte value, record and batch overhead).
    let keys = if mib == 256 {
        1_000_000
    } else {
        mib * 1024 * 1024 / 134 / 2
    };
    let partial = std::env::var_os("SEGLOG_BENCH_PARTIAL").is_some();
    let root = tempfile::tempdir().unwrap();
    let fixture = CompactionFixture::write(fs, &root.path().join("log"), keys, partial).unwrap();
    Fixture {
        _root: root,
        fixture,
    }
}

fn bench(c: &mut Criterion) {
    let fs = StdFs::new();
    let owned = fixture(&fs);
    let fixture = &owned.fixture;
    let mut group = c.benchmark_group("compaction");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Bytes(fixture.input_bytes));
    let mut compaction_runs = Vec::new();
    let mut report = None;
    group.bench_function("build", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (took, built) = fixture.build(&fs).unwrap();
                total += took;
                compaction_runs.push(took);
                report = Some(built.report);
            }
            total
        })
    });
    let mut kafka_runs = Vec::new();
    group.bench_function("build_kafka_policy", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (took, _) = fixture
                    .build_with(&fs, seglog::compaction::CompactionPolicy::Kafka)
                    .unwrap();
                total += took;
                kafka_runs.push(took);
            }
            total
        })
    });
    let mut baseline_runs = Vec::new();
    let out = fixture.dir.with_file_name("baseline-copy");
    group.bench_function("baseline_copy", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                baseline::copy_buffered(&fixture.dir, &out).unwrap();
                let took = start.elapsed();
                total += took;
                baseline_runs.push(took);
                std::fs::remove_dir_all(&out).unwrap();
            }
            total
        })
    });
    group.finish();
    let median = |runs: &mut Vec<Duration>| {
        runs.sort();
        runs[runs.len() / 2]
    };
    let compaction = median(&mut compaction_runs);
    let kafka = median(&mut kafka_runs);
    let baseline = median(&mut baseline_runs);
    let report = report.unwrap();
    // Where the time goes: the map pass alone (median of 5).
    let bases = seglog::segment::list_segments(&fs, &fixture.dir).unwrap();
    let mut map_runs = Vec::new();
    let mut bitmaps = (0, 0);
    for _ in 0..5 {
        let start = Instant::now();
        let scan = scan::scan(&fs, &fixture.dir, &bases).unwrap();
        map_runs.push(start.elapsed());
        bitmaps = (scan.superseded.bytes(), scan.plain.bytes());
    }
    let map_pass = median(&mut map_runs);
    let (superseded_bytes, plain_bytes) = bitmaps;
    let mib = fixture.input_bytes as f64 / (1024.0 * 1024.0);
    println!(
        "compaction: input {mib:.1} MiB, {} keys, records {} -> {}, closed bytes {} -> {}",
        fixture.keys,
        report.records_before,
        report.records_after,
        report.bytes_before,
        report.bytes_after
    );
    println!(
        "compaction median {:.3} s ({:.1} MiB/s); baseline median {:.3} s ({:.1} MiB/s); ratio {:.2}x (target >= 0.5x)",
        compaction.as_secs_f64(),
        mib / compaction.as_secs_f64(),
        baseline.as_secs_f64(),
        mib / baseline.as_secs_f64(),
        baseline.as_secs_f64() / compaction.as_secs_f64()
    );
    println!(
        "kafka policy median {:.3} s: {:.2}x the seed policy's speed (target >= 0.9x), {:.2}x the baseline copy",
        kafka.as_secs_f64(),
        compaction.as_secs_f64() / kafka.as_secs_f64(),
        baseline.as_secs_f64() / kafka.as_secs_f64()
    );
    println!(
        "of which the map pass (map, check, parse, hash, dedup) takes {:.3} s",
        map_pass.as_secs_f64()
    );
    println!(
        "offset map: {} keys, {:.1} bytes/key resident, {:.1} bytes/key peak (target <= 24)",
        report.map_keys,
        report.map_bytes as f64 / report.map_keys as f64,
        report.map_bytes_peak as f64 / report.map_keys as f64
    );
    println!(
        "superseded-record bitmap: {superseded_bytes} bytes ({:.3} bytes/key, 1 bit per keyed record); \
         plain-batch bitmap: {plain_bytes} bytes (1 bit per batch)",
        superseded_bytes as f64 / report.map_keys as f64
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);

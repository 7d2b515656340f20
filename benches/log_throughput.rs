//! Append and full read-back of 1,000,000 records (16-byte keys, 100-byte values,
//! batches of 100), each beside a baseline measured in the same run: the same
//! encoded bytes written with `BufWriter<File>` (then fsync) and read back with
//! `BufReader<File>` (`seglog_suite::bench::baseline`). Report the ratio baseline_time /
//! log_time (target >= 0.8). `seglog bench` runs the same loops (`seglog_suite::bench`)
//! with the baseline and the variant alternating, and prints JSON.
//!
//! Read variants, every one checks every batch's CRC-32C:
//! * `read/log`: `Log::read`, every record decoded into owned `ReadRecords` (keys
//!   and values are spans of one shared buffer per batch, the segment's mapping, not
//!   copies); target >= 0.5;
//! * `fetch_records/log`: `Log::fetch` + `Fetch::records`, every record decoded in
//!   place (borrowed key and value, no allocation), each key and value touched;
//! * `fetch/log`: `Log::fetch` alone, whole checked batches without a copy
//!   (Kafka's fetch path: what a broker sends and a consumer decodes);
//! * `read_raw/log`: the same batches copied out into a `Vec`;
//! * `floor/crc32c`: only the CRC-32C of the same bytes already in memory: no
//!   read that checks every batch can beat it.
//!
//! A summary of median ratios (baseline time / variant time) is printed at the end.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use seglog::{Log, LogConfig};
use seglog_suite::bench::baseline;
use seglog_suite::bench::{self as harness, LogFixture, READ_BYTES};

const RECORDS: usize = 1_000_000;
const PER_BATCH: usize = 100;

type Runs = Vec<(&'static str, Vec<Duration>)>;
type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Benchmarks `run` (which returns the time of the part it measures) as `name`,
/// keeping every run's time for the summary.
fn timed(group: &mut Group<'_>, runs: &mut Runs, name: &'static str, run: &dyn Fn() -> Duration) {
    let mut taken = Vec::new();
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let took = run();
                    taken.push(took);
                    took
                })
                .sum()
        })
    });
    runs.push((name, taken));
}

/// The time of `run`, which must return `expected`.
fn checked(expected: usize, run: impl FnOnce() -> seglog::Result<usize>) -> Duration {
    harness::timed(expected, run).unwrap()
}

fn bench(c: &mut Criterion) {
    let fixture = LogFixture::new(RECORDS, PER_BATCH);
    let bytes = fixture.bytes.len();
    let mut group = c.benchmark_group("log_throughput");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Bytes(bytes as u64));

    let mut append_runs = Runs::new();
    timed(
        &mut group,
        &mut append_runs,
        "append/baseline_bufwriter",
        &|| {
            let tmp = tempfile::tempdir().unwrap();
            fixture
                .write_baseline(&tmp.path().join("baseline"))
                .unwrap()
        },
    );
    timed(&mut group, &mut append_runs, "append/log", &|| {
        let tmp = tempfile::tempdir().unwrap();
        harness::append_log(tmp.path(), &fixture).unwrap()
    });

    let tmp = tempfile::tempdir().unwrap();
    let baseline_path = tmp.path().join("baseline");
    fixture.write_baseline(&baseline_path).unwrap();
    let log_dir = tmp.path().join("log");
    harness::append_log(&log_dir, &fixture).unwrap();
    let (log, _) = Log::open(&log_dir, LogConfig::default()).unwrap();
    assert_eq!(log.next_offset(), RECORDS as i64);

    let mut read_runs = Runs::new();
    let runs = &mut read_runs;
    timed(&mut group, runs, "read/baseline_bufreader", &|| {
        checked(bytes, || {
            let mut chunk = vec![0u8; READ_BYTES];
            Ok(baseline::read_buffered(&baseline_path, &mut chunk).unwrap())
        })
    });
    timed(&mut group, runs, "read/log", &|| {
        checked(RECORDS, || harness::read_records(&log))
    });
    timed(&mut group, runs, "fetch_records/log", &|| {
        checked(RECORDS, || {
            harness::fetch_records(&log).map(|(count, _)| count)
        })
    });
    timed(&mut group, runs, "fetch/log", &|| {
        checked(bytes, || harness::fetch_bytes(&log))
    });
    timed(&mut group, runs, "read_raw/log", &|| {
        checked(bytes, || harness::read_raw_bytes(&log))
    });
    let batch_ranges = batch_ranges(&fixture.bytes);
    timed(&mut group, runs, "floor/crc32c", &|| {
        let start = Instant::now();
        let mut crc = 0u32;
        for range in &batch_ranges {
            crc ^= seglog::format::crc::crc32c(&fixture.bytes[range.clone()]);
        }
        std::hint::black_box(crc);
        start.elapsed()
    });
    group.finish();
    summary("append of", bytes, append_runs);
    summary("read back of", bytes, read_runs);
}

/// Prints the median of each run beside the baseline's (the one whose name says
/// so): ratio = baseline time / run time.
fn summary(what: &str, bytes: usize, mut runs: Runs) {
    let median = |taken: &[Duration]| {
        let mut taken = taken.to_vec();
        taken.sort();
        taken[taken.len() / 2]
    };
    // Criterion's filter may have skipped some (then there is nothing to report).
    runs.retain(|(_, taken)| !taken.is_empty());
    let Some((_, baseline)) = runs.iter().find(|(name, _)| name.contains("baseline")) else {
        return;
    };
    let baseline = median(baseline);
    println!("{what} {} MiB, median of each:", bytes >> 20);
    for (name, taken) in &runs {
        let took = median(taken);
        println!(
            "  {name:<26} {:>9.2} ms  ratio {:.2}x",
            took.as_secs_f64() * 1e3,
            baseline.as_secs_f64() / took.as_secs_f64()
        );
    }
}

/// The CRC-covered range (attributes to end) of every batch in `bytes`.
fn batch_ranges(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let header = seglog::format::batch::decode_header(&bytes[at..]).unwrap();
        ranges.push(at + seglog::format::batch::ATTRIBUTES_OFFSET..at + header.size);
        at += header.size;
    }
    ranges
}

criterion_group!(benches, bench);
criterion_main!(benches);

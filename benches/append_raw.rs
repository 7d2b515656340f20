//! Raw append: 300,000 records (16-byte keys, 100-byte values, batches
//! of 100, about 40 MB) appended three ways, each timed from the first append to
//! the end of the fsync that makes it durable, beside the same bytes written with
//! `BufWriter<File>` + fsync (`seglog_suite::bench::baseline`, one `write_all` per batch):
//!
//! * `append_raw/batches_flush`: `Log::append_batches` of each producer-encoded
//!   batch (one produce request per batch), then `Log::flush` (target >= 0.9x);
//! * `append_raw/structured_flush`: `Log::append` of the same records, then
//!   `Log::flush` (target >= 0.8x);
//! * `append_raw/baseline_bufwriter`: the log's bytes through `BufWriter` + fsync.
//!
//! Each side fsyncs one file once: `flush` fsyncs the segment's `.log` only (its
//! index files are written, not synced: docs/design.md section 1, "flush"); the
//! baseline's `sync_all` fsyncs its one file. Every run writes into a new
//! directory, removed afterwards, so each starts from the same page-cache state.
//!
//! At the end the ratios (baseline time / variant time) are printed twice: from
//! criterion's medians, and from `seglog_suite::bench::compare`, which runs baseline and
//! variant alternately (as `seglog bench --only append-raw` does) so that a shared
//! machine's drift hits both alike.

use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use seglog_suite::bench::raw::{append_raw_flush, append_structured_flush, ProducedFixture};
use seglog_suite::bench::{self as harness, LogFixture};

const RECORDS: usize = 300_000;
const PER_BATCH: usize = 100;
/// Baseline/variant pairs of the alternating pass.
const PAIRS: usize = 10;

type Runs = Vec<(&'static str, Vec<Duration>)>;
type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Runs `run` in a new temporary directory; the time it measured.
fn in_new_dir(run: impl FnOnce(&Path) -> seglog::Result<Duration>) -> Duration {
    let tmp = tempfile::tempdir().unwrap();
    run(tmp.path()).unwrap()
}

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

fn bench(c: &mut Criterion) {
    let fixture = LogFixture::new(RECORDS, PER_BATCH);
    let produced = ProducedFixture::new(&fixture);
    let bytes = fixture.bytes.len();
    assert_eq!(produced.bytes(), bytes);
    let baseline = || in_new_dir(|dir| fixture.write_baseline(&dir.join("baseline.log")));
    let raw = || in_new_dir(|dir| append_raw_flush(dir, &produced));
    let structured = || in_new_dir(|dir| append_structured_flush(dir, &fixture));

    let mut group = c.benchmark_group("append_raw");
    group.sample_size(20);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Bytes(bytes as u64));
    let mut runs = Runs::new();
    timed(&mut group, &mut runs, "baseline_bufwriter", &baseline);
    timed(&mut group, &mut runs, "batches_flush", &raw);
    timed(&mut group, &mut runs, "structured_flush", &structured);
    group.finish();
    summary(bytes, &runs);

    // Only under `cargo bench` (criterion passes `--bench`; `cargo test` runs each
    // benchmark once), and only for what criterion's filter left in.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let ran = |name: &str| {
        runs.iter()
            .any(|(run, taken)| name.ends_with(run) && !taken.is_empty())
    };
    for (name, run) in [
        ("append_raw/batches_flush", &raw as &dyn Fn() -> Duration),
        ("append_raw/structured_flush", &structured),
    ] {
        if !ran(name) || !ran("baseline_bufwriter") {
            continue;
        }
        let comparison = harness::compare(
            name,
            "append_raw/baseline_bufwriter",
            PAIRS,
            bytes as u64,
            None,
            || Ok(baseline()),
            || Ok(run()),
        )
        .unwrap();
        println!(
            "  alternating {PAIRS} pairs: {name:<28} ratio {:.2}x (per pair {:.2}-{:.2}x)",
            comparison.ratio, comparison.ratio_min, comparison.ratio_max
        );
    }
}

/// Prints the median of each run beside the baseline's (the one whose name says
/// so): ratio = baseline time / run time.
fn summary(bytes: usize, runs: &Runs) {
    let median = |taken: &[Duration]| {
        let mut taken = taken.to_vec();
        taken.sort();
        taken[taken.len() / 2]
    };
    let ran = runs.iter().filter(|(_, taken)| !taken.is_empty());
    let Some((_, baseline)) = ran.clone().find(|(name, _)| name.contains("baseline")) else {
        return;
    };
    let baseline = median(baseline);
    println!("append + fsync of {} MiB, median of each:", bytes >> 20);
    for (name, taken) in ran {
        let took = median(taken);
        println!(
            "  {name:<26} {:>9.2} ms  ratio {:.2}x",
            took.as_secs_f64() * 1e3,
            baseline.as_secs_f64() / took.as_secs_f64()
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

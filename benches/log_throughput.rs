//! Append and full read-back of 1,000,000 records (16-byte keys, 100-byte values,
//! batches of 100), each beside a baseline measured in the same run: the same
//! encoded bytes written with `BufWriter<File>` (then fsync) and read back with
//! `BufReader<File>`. Report the ratio baseline_time / log_time (target >= 0.8).
//! Read variants, every one checks every batch's CRC-32C:
//! * `read/log`: `Log::read`, every record decoded into an owned `ReadRecord` (key
//!   and value are `Bytes` slices of the segment's mapping, not copies);
//! * `fetch_records/log`: `Log::fetch` + `Fetch::records`, every record decoded in
//!   place (borrowed key and value, no allocation), each key and value touched;
//! * `fetch/log`: `Log::fetch` alone, whole checked batches without a copy
//!   (Kafka's fetch path: what a broker sends and a consumer decodes);
//! * `read_raw/log`: the same batches copied out into a `Vec`;
//! * `floor/crc32c`: only the CRC-32C of the same bytes already in memory: no
//!   read that checks every batch can beat it.
//!
//! A summary of median ratios (baseline time / variant time) is printed at the end.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use seglog::{Log, LogConfig, NewRecord, RecordBatch};

/// Writes the fixture into a directory; returns the time it took.
type Writer<'a> = &'a dyn Fn(&std::path::Path) -> Duration;

const RECORDS: usize = 1_000_000;
const PER_BATCH: usize = 100;
const READ_BYTES: usize = 1 << 20;

fn batches() -> Vec<Vec<NewRecord>> {
    (0..RECORDS / PER_BATCH)
        .map(|b| {
            (0..PER_BATCH)
                .map(|i| {
                    let n = b * PER_BATCH + i;
                    NewRecord::new(
                        Some(format!("key-{n:012}").into_bytes()),
                        Some(vec![(n % 251) as u8; 100]),
                        1_700_000_000_000 + n as i64,
                    )
                })
                .collect()
        })
        .collect()
}

/// The bytes the log writes for `batches` (its `.log` content).
fn encoded(batches: &[Vec<NewRecord>]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut next = 0i64;
    for batch in batches {
        let built = RecordBatch::build(next, batch);
        next = built.next_offset();
        built.encode_into(&mut out);
    }
    out
}

fn write_log(dir: &std::path::Path, batches: &[Vec<NewRecord>]) -> Duration {
    let start = Instant::now();
    let (mut log, _) = Log::open(dir, LogConfig::default()).unwrap();
    for batch in batches {
        log.append(batch).unwrap();
    }
    log.close().unwrap();
    start.elapsed()
}

fn write_baseline(path: &std::path::Path, bytes: &[u8]) -> Duration {
    let start = Instant::now();
    let mut out = BufWriter::new(File::create(path).unwrap());
    for chunk in bytes.chunks(12_500) {
        out.write_all(chunk).unwrap();
    }
    let file = out.into_inner().unwrap();
    file.sync_all().unwrap();
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let batches = batches();
    let bytes = encoded(&batches);
    let mut group = c.benchmark_group("log_throughput");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Bytes(bytes.len() as u64));

    let mut append_runs: Vec<(&str, Vec<Duration>)> = Vec::new();
    let write_baseline_in = |dir: &std::path::Path| write_baseline(&dir.join("baseline"), &bytes);
    let write_log_in = |dir: &std::path::Path| write_log(dir, &batches);
    let writers: [(&str, Writer<'_>); 2] = [
        ("append/baseline_bufwriter", &write_baseline_in),
        ("append/log", &write_log_in),
    ];
    for (name, write) in writers {
        let mut taken = Vec::new();
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let tmp = tempfile::tempdir().unwrap();
                        let took = write(tmp.path());
                        taken.push(took);
                        took
                    })
                    .sum()
            })
        });
        append_runs.push((name, taken));
    }

    let tmp = tempfile::tempdir().unwrap();
    let baseline_path = tmp.path().join("baseline");
    write_baseline(&baseline_path, &bytes);
    let log_dir = tmp.path().join("log");
    write_log(&log_dir, &batches);
    let (log, _) = Log::open(&log_dir, LogConfig::default()).unwrap();
    assert_eq!(log.next_offset(), RECORDS as i64);

    let mut runs: Vec<(&str, Vec<Duration>)> = Vec::new();
    let mut timed = |group: &mut criterion::BenchmarkGroup<'_, _>,
                     name: &'static str,
                     run: &dyn Fn() -> usize| {
        let mut taken = Vec::new();
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let start = Instant::now();
                        std::hint::black_box(run());
                        let took = start.elapsed();
                        taken.push(took);
                        took
                    })
                    .sum()
            })
        });
        runs.push((name, taken));
    };
    timed(&mut group, "read/baseline_bufreader", &|| {
        let mut input = BufReader::new(File::open(&baseline_path).unwrap());
        let mut chunk = vec![0u8; READ_BYTES];
        let mut total = 0usize;
        loop {
            let n = input.read(&mut chunk).unwrap();
            if n == 0 {
                break;
            }
            total += n;
        }
        assert_eq!(total, bytes.len());
        total
    });
    timed(&mut group, "read/log", &|| {
        let mut from = 0;
        let mut count = 0usize;
        loop {
            let records = log.read(from, READ_BYTES).unwrap();
            let Some(last) = records.last() else { break };
            from = last.offset + 1;
            count += records.len();
        }
        assert_eq!(count, RECORDS);
        count
    });
    timed(&mut group, "fetch_records/log", &|| {
        let mut from = 0;
        let (mut count, mut payload) = (0usize, 0usize);
        loop {
            let fetch = log.fetch(from, READ_BYTES).unwrap();
            if fetch.is_empty() {
                break;
            }
            for record in fetch.records() {
                let record = record.unwrap();
                payload += record.key.map_or(0, <[u8]>::len) + record.value.map_or(0, <[u8]>::len);
                count += 1;
            }
            from = fetch.next_offset();
        }
        assert_eq!(count, RECORDS);
        assert_eq!(payload, RECORDS * 116);
        count
    });
    timed(&mut group, "fetch/log", &|| {
        let mut from = 0;
        let mut total = 0usize;
        loop {
            let fetch = log.fetch(from, READ_BYTES).unwrap();
            if fetch.is_empty() {
                break;
            }
            total += fetch.bytes().len();
            from = fetch.next_offset();
        }
        assert_eq!(total, bytes.len());
        total
    });
    timed(&mut group, "read_raw/log", &|| {
        let mut from = 0;
        let mut total = 0usize;
        while from < RECORDS as i64 {
            let raw = log.read_raw(from, READ_BYTES).unwrap();
            total += raw.len();
            from = last_batch_next_offset(&raw);
        }
        assert_eq!(total, bytes.len());
        total
    });
    let batch_ranges = batch_ranges(&bytes);
    timed(&mut group, "floor/crc32c", &|| {
        let mut crc = 0u32;
        for range in &batch_ranges {
            crc ^= seglog::format::crc::crc32c(&bytes[range.clone()]);
        }
        crc as usize
    });
    group.finish();
    summary("append of", bytes.len(), append_runs);
    summary("read back of", bytes.len(), runs);
}

/// Prints the median of each run beside the baseline's (the one whose name says
/// so): ratio = baseline time / run time.
fn summary(what: &str, bytes: usize, mut runs: Vec<(&str, Vec<Duration>)>) {
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

/// The offset after the last batch in `raw` (walking the batch lengths).
fn last_batch_next_offset(raw: &[u8]) -> i64 {
    let mut at = 0;
    let mut next = 0;
    while at < raw.len() {
        let header = seglog::format::batch::decode_header(&raw[at..]).unwrap();
        next = header.base_offset + i64::from(header.last_offset_delta) + 1;
        at += header.size;
    }
    next
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! `seglog bench`: the engine's throughput beside plain buffered IO, measured in
//! the same run (`crate::bench`), printed as JSON (progress on stderr).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde_json::json;

use super::Outcome;
use crate::bench::baseline;
use crate::bench::compaction::CompactionFixture;
use crate::bench::{self, Comparison, Counts, LogFixture, READ_BYTES};
use seglog::fs::{FileSystem, StdFs};
use seglog::log::{Log, LogConfig};
use seglog::{Error, Result};

/// Append and read targets: at least 0.8x the plain-`std` baseline.
const LOG_TARGET: f64 = 0.8;
/// Raw append target: `append_batches` + fsync at least 0.9x `BufWriter` + fsync
/// of the same bytes.
const RAW_APPEND_TARGET: f64 = 0.9;
/// Compaction target: at least 0.5x a buffered copy of the same files.
const COMPACTION_TARGET: f64 = 0.5;
/// Codec targets: append with a codec vs the codec alone,
/// fetch of compressed vs uncompressed batches, read vs decompression alone,
/// compaction of a half-obsolete lz4 log vs decompress + recompress.
const CODEC_APPEND_TARGET: f64 = 0.8;
const CODEC_FETCH_TARGET: f64 = 0.9;
const CODEC_READ_TARGET: f64 = 0.7;
const CODEC_COMPACT_TARGET: f64 = 0.6;
/// Open of a cleanly closed log vs a full-scan open.
const CLEAN_OPEN_TARGET: f64 = 100.0;
/// 10% dirty: the incremental map pass <= 0.15x a full map pass, and the
/// incremental build <= 0.6x a build from scratch (as speed-ups: 1/0.15, 1/0.6).
const INCREMENTAL_MAP_TARGET: f64 = 1.0 / 0.15;
const INCREMENTAL_BUILD_TARGET: f64 = 1.0 / 0.6;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Suite {
    /// Append every batch, then close (fsync) vs `BufWriter` + fsync.
    Append,
    /// Producer batches appended with `append_batches` (one request per batch) +
    /// flush (fsync), the structured `append` of the same records + flush, and
    /// `append_batches` with open and close, each vs `BufWriter` + fsync.
    AppendRaw,
    /// Every read path over the whole log vs `BufReader`.
    Read,
    /// Install step 1 of a compaction (map, rewrite, fsync) vs copying the same
    /// files with `BufReader`/`BufWriter` + fsync.
    Compact,
    /// Compressed batches: append (lz4, zstd; appends + flush, the open and close
    /// untimed) vs the codec alone and vs the codec + a buffered write + fsync,
    /// fetch vs the uncompressed fetch (in time, and per byte), read (owned
    /// `ReadRecord`s, borrowed `read_each`, and `fetch` + borrowed `records()`) vs
    /// decompression alone, compaction of a half-obsolete lz4 log vs decompress +
    /// recompress.
    Codecs,
    /// Open after a clean close, and after a crash, vs a full-scan open of the same
    /// directory (`--records` sets its size; 9,000,000 make about 1.1 GiB).
    Open,
    /// `compact` and `retain` of an open log of the open fixture vs the same
    /// followed by a full-scan open (the reopen both ended with before); opt-in.
    Cleanup,
    /// Incremental cleaning with 10% of the keys dirty vs compacting the same log
    /// from scratch (install step 1), and the incremental map pass vs the full one;
    /// clustered dirt (the oldest keys: untouched segments are carried) and
    /// scattered dirt (every segment touched); `--compact-keys` keys; opt-in.
    Incremental,
    /// Install step 1 of a compaction of the compaction fixture with 20% of its
    /// records in aborted transactions vs copying the same files (target >= 0.5x),
    /// under the `seed` policy, then the `kafka` policy; opt-in.
    CompactAborted,
    /// Appends during one cleaning of the same partition (`--compact-keys` keys
    /// written twice) vs appends alone for as long (target >= 0.8x), and the p99
    /// of the appends that overlapped a cleaning vs the swap's fsync floor + 2 ms;
    /// `--iterations` fresh partitions; opt-in.
    CleanAppend,
    /// Install step 1 under the `kafka` compaction policy vs the same under the
    /// `seed` policy, on the compaction fixture and on its partial variant (target
    /// >= 0.9x), with each side's CPU time; opt-in.
    CompactKafka,
    /// A read-only open and a read of every record of the fixture in 1,000
    /// segments with a handle budget of 64 vs the same with no budget; opt-in.
    OpenFiles,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Records in the log (16-byte keys, 100-byte values).
    #[arg(long, default_value_t = 1_000_000)]
    pub records: usize,
    /// Records per appended batch.
    #[arg(long, default_value_t = 100)]
    pub batch_records: usize,
    /// Timed runs of each variant and of its baseline (alternating).
    #[arg(long, default_value_t = 10)]
    pub iterations: usize,
    /// Distinct keys of the compaction fixture (each written twice; 1,000,000 make a
    /// 256 MiB-class closed region).
    #[arg(long, default_value_t = 1_000_000)]
    pub compact_keys: u64,
    /// Only these suites (default: all).
    #[arg(long = "only", value_enum)]
    pub only: Vec<Suite>,
    /// Directory to work in (default: a new temporary directory); must not exist.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Compare this build with OTHER_BINARY (another build of `seglog`): both
    /// benches run alternately with these flags, each on a fresh fixture, for
    /// `--rounds` rounds; prints each row's median ratio (this / other time), its
    /// spread and a verdict; exit 3 when a row is slower (docs/performance.md).
    #[arg(long, value_name = "OTHER_BINARY")]
    pub compare: Option<PathBuf>,
    /// Rounds of `--compare` (each build's bench once a round).
    #[arg(long, default_value_t = 5, requires = "compare")]
    pub rounds: usize,
    /// With `--compare`: also write the comparison as JSON to this file; with
    /// `--kafka`: also write the bench's JSON (with its `kafka` field) to it.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Run the workloads of the selected suites (append, append-raw, read,
    /// compact; default: all four) beside Apache Kafka 4.4's own log layer
    /// (`UnifiedLog`, `Cleaner`) on the same fixture bytes, instead of their
    /// rows: seglog's and Kafka's rounds alternate `--iterations` times in one
    /// warm JVM; prints each workload's speed ratio (Kafka time / seglog time,
    /// median of the paired ratios, with their min-max) and what each side
    /// times, and adds a `kafka` field to the JSON. Needs java 17 and mvn
    /// (docs/performance.md).
    #[arg(long, conflicts_with = "compare")]
    pub kafka: bool,
}

/// The fixture sizes make fixtures: every count at least 1, and 2 keys or more.
pub(super) fn check_sizes(args: &BenchArgs) -> Result<()> {
    if args.records == 0 || args.batch_records == 0 || args.iterations == 0 {
        return Err(Error::InvalidArgument(
            "--records, --batch-records and --iterations must be at least 1".into(),
        ));
    }
    if args.compact_keys < 2 {
        return Err(Error::InvalidArgument(
            "--compact-keys: a compaction fixture needs 2 keys or more".into(),
        ));
    }
    Ok(())
}

pub fn bench(args: BenchArgs) -> Result<Outcome> {
    if args.json.is_some() {
        return Err(Error::InvalidArgument(
            "--json needs --compare or --kafka".into(),
        ));
    }
    check_sizes(&args)?;
    let (_tmp, root) = match &args.dir {
        Some(dir) => {
            if StdFs::new().exists(dir) {
                return Err(Error::InvalidArgument(format!(
                    "--dir {} exists; give a new directory",
                    dir.display()
                )));
            }
            (None, dir.clone())
        }
        None => {
            let tmp = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
            let root = tmp.path().to_path_buf();
            (Some(tmp), root)
        }
    };
    let fs = StdFs::new();
    fs.create_dir_all(&root).map_err(|e| Error::io(&root, e))?;
    let suites = if args.only.is_empty() {
        vec![
            Suite::Append,
            Suite::AppendRaw,
            Suite::Read,
            Suite::Compact,
            Suite::Open,
        ]
    } else {
        args.only.clone()
    };
    let needs_log = suites.iter().any(|s| {
        !matches!(
            s,
            Suite::Compact
                | Suite::Codecs
                | Suite::Incremental
                | Suite::CompactAborted
                | Suite::CleanAppend
                | Suite::CompactKafka
        )
    });
    let mut extra = serde_json::Map::new();
    // The codecs suite is opt-in (`--only codecs`).
    // The open suite writes its own directory from the same fixture.
    let fixture = if needs_log {
        eprintln!("seglog bench: building {} records", args.records);
        LogFixture::new(args.records, args.batch_records)
    } else {
        LogFixture::new(0, 1)
    };
    let bytes = fixture.bytes.len() as u64;
    let mut results = Vec::new();
    for suite in suites {
        match suite {
            Suite::Append => results.push(append(&args, &root, &fixture)?),
            Suite::AppendRaw => results.extend(append_raw(&args, &root, &fixture)?),
            Suite::Read => results.extend(read(&args, &root, &fixture)?),
            Suite::Compact => results.push(compact(&args, &root)?),
            Suite::CompactAborted => results.extend(compact_aborted(&args, &root)?),
            Suite::CompactKafka => {
                let (comparisons, cpu) =
                    bench::kafka_policy::run(args.compact_keys, args.iterations, &root)?;
                comparisons.iter().for_each(report);
                results.extend(comparisons);
                extra.insert("compact_kafka_cpu".into(), cpu);
            }
            Suite::Codecs => results.extend(codecs(&args, &root)?),
            Suite::Open => results.extend(open(&args, &root, &fixture)?),
            Suite::OpenFiles => results.push(open_files(&args, &root, &fixture)?),
            Suite::Cleanup => {
                let (comparisons, after) = cleanup(&args, &root, &fixture)?;
                results.extend(comparisons);
                extra.insert("cleanup_open_after_crash".into(), after);
            }
            Suite::CleanAppend => {
                let report = crate::bench::clean_append::run(
                    &root.join("clean-append"),
                    args.compact_keys,
                    args.batch_records,
                    args.iterations,
                )?;
                let value = serde_json::to_value(&report).map_err(|e| {
                    Error::InvalidArgument(format!("cannot print clean-append: {e}"))
                })?;
                extra.insert("clean_append".into(), value);
            }
            Suite::Incremental => {
                let (comparisons, carried) = incremental(&args, &root)?;
                results.extend(comparisons);
                extra.insert("incremental".into(), carried);
            }
        }
    }
    if args.dir.is_some() {
        fs.remove_dir_all(&root).map_err(|e| Error::io(&root, e))?;
    }
    let mut out = json!({
        "records": args.records,
        "batch_records": args.batch_records,
        "bytes": bytes,
        "compact_keys": args.compact_keys,
        "iterations": args.iterations,
        "results": results,
    });
    if let Some(object) = out.as_object_mut() {
        object.extend(extra);
    }
    Ok(Outcome::Ok(out))
}

fn report(comparison: &Comparison) {
    eprintln!(
        "seglog bench: {:<20} {:>9.2} ms  vs {:<26} {:>9.2} ms  ratio {:.2}x ({:.2}-{:.2}){}",
        comparison.name,
        comparison.median_ms,
        comparison.baseline,
        comparison.baseline_median_ms,
        comparison.ratio,
        comparison.ratio_min,
        comparison.ratio_max,
        match comparison.met {
            Some(true) => "  target met",
            Some(false) => "  target MISSED",
            None => "",
        }
    );
    if let (Some(cpu), Some(base_cpu), Some(cpu_ratio)) = (
        comparison.cpu_mean_ms,
        comparison.baseline_cpu_mean_ms,
        comparison.cpu_ratio,
    ) {
        eprintln!(
            "seglog bench: {:<20} {cpu:>9.1} ms cpu vs {:<22} {base_cpu:>9.1} ms cpu  ratio {cpu_ratio:.2}x (cpu, totals)",
            "", ""
        );
    }
}

/// Runs `run` in the new directory `dir`, then removes it; the time `run` measured.
fn in_new_dir(dir: &Path, run: impl FnOnce(&Path) -> Result<Duration>) -> Result<Duration> {
    let fs = StdFs::new();
    fs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let took = run(dir)?;
    fs.remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    Ok(took)
}

fn append(args: &BenchArgs, root: &Path, fixture: &LogFixture) -> Result<Comparison> {
    let comparison = bench::compare(
        "append/log",
        "append/baseline_bufwriter",
        args.iterations,
        fixture.bytes.len() as u64,
        Some(LOG_TARGET),
        || {
            in_new_dir(&root.join("append-baseline"), |dir| {
                fixture.write_baseline(&dir.join("baseline.log"))
            })
        },
        || {
            in_new_dir(&root.join("append-log"), |dir| {
                bench::append_log(dir, fixture)
            })
        },
    )?;
    report(&comparison);
    Ok(comparison)
}

/// The raw append's rows: `append_batches` + fsync (the target), the
/// structured `append` + fsync of the same records, and `append_batches` with the
/// log's open and clean close inside the timing, each vs `BufWriter` + fsync.
fn append_raw(args: &BenchArgs, root: &Path, fixture: &LogFixture) -> Result<Vec<Comparison>> {
    let produced = bench::raw::ProducedFixture::new(fixture);
    let bytes = produced.bytes() as u64;
    let baseline = || {
        in_new_dir(&root.join("append-raw-baseline"), |dir| {
            bench::raw::baseline_write_fsync(dir, fixture)
        })
    };
    let mut out = Vec::new();
    out.push(bench::compare(
        "append/raw",
        "append/baseline_bufwriter",
        args.iterations,
        bytes,
        Some(RAW_APPEND_TARGET),
        baseline,
        || {
            in_new_dir(&root.join("append-raw"), |dir| {
                bench::raw::append_raw_flush(dir, &produced)
            })
        },
    )?);
    out.push(bench::compare(
        "append/structured_flush",
        "append/baseline_bufwriter",
        args.iterations,
        bytes,
        Some(LOG_TARGET),
        baseline,
        || {
            in_new_dir(&root.join("append-structured"), |dir| {
                bench::raw::append_structured_flush(dir, fixture)
            })
        },
    )?);
    out.push(bench::compare(
        "append/raw_open_close",
        "append/baseline_bufwriter",
        args.iterations,
        bytes,
        None,
        baseline,
        || {
            in_new_dir(&root.join("append-raw-oc"), |dir| {
                bench::raw::append_raw_log(dir, &produced)
            })
        },
    )?);
    // The same two appends beside a baseline that starts its write-back every
    // `writeback_bytes` too (LogConfig::writeback_bytes): the log overlaps its
    // writes with the disk, which the plain `BufWriter` + fsync does not, so
    // these rows show the log's own work (no target: the target is the rows
    // above).
    let writeback_baseline = || {
        in_new_dir(&root.join("append-raw-baseline-wb"), |dir| {
            bench::raw::baseline_write_writeback_fsync(dir, fixture)
        })
    };
    out.push(bench::compare(
        "append/raw_vs_writeback_baseline",
        "append/baseline_bufwriter_writeback",
        args.iterations,
        bytes,
        None,
        writeback_baseline,
        || {
            in_new_dir(&root.join("append-raw"), |dir| {
                bench::raw::append_raw_flush(dir, &produced)
            })
        },
    )?);
    out.push(bench::compare(
        "append/structured_vs_writeback_baseline",
        "append/baseline_bufwriter_writeback",
        args.iterations,
        bytes,
        None,
        writeback_baseline,
        || {
            in_new_dir(&root.join("append-structured"), |dir| {
                bench::raw::append_structured_flush(dir, fixture)
            })
        },
    )?);
    out.iter().for_each(report);
    Ok(out)
}

fn read(args: &BenchArgs, root: &Path, fixture: &LogFixture) -> Result<Vec<Comparison>> {
    let baseline_path = root.join("read-baseline.log");
    fixture.write_baseline(&baseline_path)?;
    let log_dir = root.join("read-log");
    bench::append_log(&log_dir, fixture)?;
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs::new());
    let (log, _) = Log::open_with(fs, &log_dir, LogConfig::default())?;
    let records = fixture.records();
    let bytes = fixture.bytes.len();
    let mut buf = vec![0u8; READ_BYTES];
    let mut baseline_run = || {
        bench::timed(bytes, || {
            baseline::read_buffered(&baseline_path, &mut buf)
                .map_err(|e| Error::io(&baseline_path, e))
        })
    };
    let mut results = Vec::new();
    for variant in bench::READ_VARIANTS {
        let expected = match variant.counts {
            Counts::Bytes => bytes,
            Counts::Records => records,
        };
        let comparison = bench::compare(
            variant.name,
            "read/baseline_bufreader",
            args.iterations,
            bytes as u64,
            Some(variant.target),
            &mut baseline_run,
            || bench::timed(expected, || (variant.run)(&log)),
        )?;
        report(&comparison);
        results.push(comparison);
    }
    Ok(results)
}

fn compact(args: &BenchArgs, root: &Path) -> Result<Comparison> {
    let fs = StdFs::new();
    eprintln!(
        "seglog bench: writing the compaction fixture ({} keys)",
        args.compact_keys
    );
    let fixture =
        CompactionFixture::write(&fs, &root.join("compact-log"), args.compact_keys, false)?;
    let comparison = bench::compare(
        "compact/build",
        "compact/baseline_copy",
        args.iterations,
        fixture.input_bytes,
        Some(COMPACTION_TARGET),
        || {
            in_new_dir(&root.join("compact-baseline"), |copy| {
                let start = bench::Stopwatch::start();
                baseline::copy_buffered(&fixture.dir, copy).map_err(|e| Error::io(copy, e))?;
                Ok(start.stop())
            })
        },
        || fixture.build(&fs).map(|(took, _)| took),
    )?;
    report(&comparison);
    Ok(comparison)
}

/// [`compact`] of the fixture with 20% of its records in aborted transactions,
/// under the `seed` policy, then under the `kafka` policy (each against its own
/// copies, timed alternately in the same run).
fn compact_aborted(args: &BenchArgs, root: &Path) -> Result<Vec<Comparison>> {
    let fs = StdFs::new();
    eprintln!(
        "seglog bench: writing the aborted-transactions compaction fixture ({} keys)",
        args.compact_keys
    );
    let fixture = CompactionFixture::write_aborted(
        &fs,
        &root.join("compact-aborted-log"),
        args.compact_keys,
    )?;
    let comparison = bench::compare(
        "compact_aborted/build",
        "compact_aborted/baseline_copy",
        args.iterations,
        fixture.input_bytes,
        Some(COMPACTION_TARGET),
        || {
            in_new_dir(&root.join("compact-aborted-baseline"), |copy| {
                let start = bench::Stopwatch::start();
                baseline::copy_buffered(&fixture.dir, copy).map_err(|e| Error::io(copy, e))?;
                Ok(start.stop())
            })
        },
        || fixture.build(&fs).map(|(took, _)| took),
    )?;
    report(&comparison);
    let kafka = bench::compare(
        "compact_aborted_kafka/build",
        "compact_aborted_kafka/baseline_copy",
        args.iterations,
        fixture.input_bytes,
        Some(COMPACTION_TARGET),
        || {
            in_new_dir(&root.join("compact-aborted-baseline"), |copy| {
                let start = bench::Stopwatch::start();
                baseline::copy_buffered(&fixture.dir, copy).map_err(|e| Error::io(copy, e))?;
                Ok(start.stop())
            })
        },
        || {
            fixture
                .build_with(&fs, seglog::compaction::CompactionPolicy::Kafka)
                .map(|(took, _)| took)
        },
    )?;
    report(&kafka);
    Ok(vec![comparison, kafka])
}

/// The codec-only floor: `codec` compressing every batch's encoded records.
fn codec_alone(codec: seglog::format::Compression, records: &[Vec<u8>]) -> Result<Duration> {
    bench::timed(records.len(), || {
        crate::bench::codecs::compress_only(codec, records)
    })
}

fn codecs(args: &BenchArgs, root: &Path) -> Result<Vec<Comparison>> {
    use crate::bench::codecs::{self as c, HalfObsoleteLog};
    use seglog::format::Compression;
    let mut results = Vec::new();
    eprintln!(
        "seglog bench: building the codec fixture ({} records)",
        args.records
    );
    let owned = c::codec_fixture(args.records, args.batch_records);
    let fixture = &owned;
    let records = c::encoded_records(fixture);
    let bytes = fixture.bytes.len() as u64;
    for codec in [Compression::Lz4, Compression::Zstd] {
        let comparison = bench::compare(
            &format!("append/{codec}"),
            &format!("codec/{codec}_compress_only"),
            args.iterations,
            bytes,
            Some(CODEC_APPEND_TARGET),
            || codec_alone(codec, &records),
            || {
                in_new_dir(&root.join(format!("append-{codec}")), |dir| {
                    c::append_codec(dir, fixture, codec)
                })
            },
        )?;
        report(&comparison);
        results.push(comparison);
        // The same durable appends beside the codec, a buffered write and one
        // fsync of the compressed bytes: the floor that pays the fsync too.
        let comparison = bench::compare(
            &format!("append/{codec}_vs_write_fsync"),
            &format!("codec/{codec}_compress_write_fsync"),
            args.iterations,
            bytes,
            Some(CODEC_APPEND_TARGET),
            || {
                in_new_dir(&root.join(format!("append-{codec}-floor")), |dir| {
                    c::compress_write_fsync(dir, codec, &records)
                })
            },
            || {
                in_new_dir(&root.join(format!("append-{codec}")), |dir| {
                    c::append_codec(dir, fixture, codec)
                })
            },
        )?;
        report(&comparison);
        results.push(comparison);
    }
    // The same durable appends beside a floor that also encodes the records from
    // `NewRecord`s (which `compress_only`, handed them encoded, skips), still
    // without IO (no target: the target is against the codec alone).
    let comparison = bench::compare(
        "append/lz4_vs_encode_compress",
        "codec/lz4_encode_compress_only",
        args.iterations,
        bytes,
        None,
        || {
            bench::timed(fixture.batches.len(), || {
                c::encode_compress_only(Compression::Lz4, fixture)
            })
        },
        || {
            in_new_dir(&root.join("append-lz4"), |dir| {
                c::append_codec(dir, fixture, Compression::Lz4)
            })
        },
    )?;
    report(&comparison);
    results.push(comparison);
    // The same appends without the flush (no target: it shows what the fsync
    // adds).
    let comparison = bench::compare(
        "append/lz4_appends_only",
        "codec/lz4_compress_only",
        args.iterations,
        bytes,
        None,
        || codec_alone(Compression::Lz4, &records),
        || {
            in_new_dir(&root.join("append-lz4-appends"), |dir| {
                c::append_codec_appends_only(dir, fixture, Compression::Lz4)
            })
        },
    )?;
    report(&comparison);
    results.push(comparison);
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs::new());
    let plain_dir = root.join("codec-read-none");
    c::append_codec(&plain_dir, fixture, Compression::None)?;
    let (plain, _) = Log::open_with(Arc::clone(&fs), &plain_dir, LogConfig::default())?;
    let lz4_dir = root.join("codec-read-lz4");
    c::append_codec(&lz4_dir, fixture, Compression::Lz4)?;
    let (lz4, _) = Log::open_with(Arc::clone(&fs), &lz4_dir, LogConfig::default())?;
    let plain_bytes = plain.read_raw(0, usize::MAX)?.len();
    // Also the owned read's ceiling row's input, at the end.
    let lz4_stored = lz4.read_raw(0, usize::MAX)?;
    let lz4_bytes = lz4_stored.len();
    let comparison = bench::compare(
        "fetch/lz4",
        "fetch/none",
        args.iterations,
        lz4_bytes as u64,
        Some(CODEC_FETCH_TARGET),
        || bench::timed(plain_bytes, || bench::fetch_bytes(&plain)),
        || bench::timed(lz4_bytes, || bench::fetch_bytes(&lz4)),
    )?;
    report(&comparison);
    results.push(comparison);
    // The same fetches per byte: the uncompressed fetch's time scaled to the lz4
    // log's bytes, so the ratio is the compressed fetch's ratio to a buffered read
    // over the uncompressed fetch's (a buffered read's time is linear in bytes).
    let scale = lz4_bytes as f64 / plain_bytes as f64;
    let comparison = bench::compare(
        "fetch/lz4_per_byte",
        "fetch/none_per_byte",
        args.iterations,
        lz4_bytes as u64,
        Some(CODEC_FETCH_TARGET),
        || bench::timed(plain_bytes, || bench::fetch_bytes(&plain)).map(|took| took.mul_f64(scale)),
        || bench::timed(lz4_bytes, || bench::fetch_bytes(&lz4)),
    )?;
    report(&comparison);
    results.push(comparison);
    let payloads = c::payloads(&lz4)?;
    let record_count = fixture.records();
    // `read` (owned `ReadRecord`s) and `fetch` + `records()` (borrowed), each
    // beside decompressing every payload alone.
    for (name, run) in [
        ("read/lz4", bench::read_records as fn(&Log) -> Result<usize>),
        ("read/lz4_each", c::read_each_records),
        ("read/lz4_fetch_records", |log: &Log| {
            bench::fetch_records(log).map(|(records, _)| records)
        }),
    ] {
        let comparison = bench::compare(
            name,
            "codec/lz4_decompress_only",
            args.iterations,
            lz4_bytes as u64,
            Some(CODEC_READ_TARGET),
            || {
                bench::timed(payloads.len(), || {
                    c::decompress_only(Compression::Lz4, &payloads)
                })
            },
            || bench::timed(record_count, || run(&lz4)),
        )?;
        report(&comparison);
        results.push(comparison);
    }
    drop((plain, lz4));
    eprintln!("seglog bench: writing the half-obsolete lz4 log");
    let half = HalfObsoleteLog::write(
        &root.join("codec-compact-lz4"),
        Compression::Lz4,
        args.records,
        args.batch_records,
    )?;
    let closed = half.closed_payloads()?;
    let std_fs = StdFs::new();
    let comparison = bench::compare(
        "compact/lz4",
        "codec/lz4_decompress_recompress",
        args.iterations,
        half.input_bytes,
        Some(CODEC_COMPACT_TARGET),
        || {
            bench::timed(closed.len(), || {
                c::recompress_only(Compression::Lz4, &closed)
            })
        },
        || half.build(&std_fs).map(|(took, _)| took),
    )?;
    report(&comparison);
    results.push(comparison);
    // The same compaction beside the floor that also writes and fsyncs its
    // output, as the compaction must.
    let comparison = bench::compare(
        "compact/lz4_vs_write_fsync",
        "codec/lz4_recompress_write_fsync",
        args.iterations,
        half.input_bytes,
        Some(CODEC_COMPACT_TARGET),
        || {
            in_new_dir(&root.join("compact-lz4-floor"), |dir| {
                c::recompress_write_fsync(dir, Compression::Lz4, &closed)
            })
        },
        || half.build(&std_fs).map(|(took, _)| took),
    )?;
    report(&comparison);
    results.push(comparison);
    // Last, so that the rows before them (reads above all) run in the same
    // conditions as before these were added.
    // The same durable appends beside the codec + write + fsync floor that
    // starts its write-back every `writeback_bytes` too (no target: it shows the
    // log's own work once both overlap their writes with the disk).
    let comparison = bench::compare(
        "append/lz4_vs_write_writeback_fsync",
        "codec/lz4_compress_write_writeback_fsync",
        args.iterations,
        bytes,
        None,
        || {
            in_new_dir(&root.join("append-lz4-floor-wb"), |dir| {
                c::compress_write_writeback_fsync(dir, Compression::Lz4, &records)
            })
        },
        || {
            in_new_dir(&root.join("append-lz4"), |dir| {
                c::append_codec(dir, fixture, Compression::Lz4)
            })
        },
    )?;
    report(&comparison);
    results.push(comparison);
    // The same durable appends beside themselves without the write-back hint
    // (`LogConfig::writeback_bytes` 0: the flush writes all 20 MB): what the
    // hint saves (no target).
    let comparison = bench::compare(
        "append/lz4_writeback",
        "append/lz4_no_writeback",
        args.iterations,
        bytes,
        None,
        || {
            in_new_dir(&root.join("append-lz4-no-writeback"), |dir| {
                c::append_codec_writeback(dir, fixture, Compression::Lz4, 0)
            })
        },
        || {
            in_new_dir(&root.join("append-lz4"), |dir| {
                c::append_codec(dir, fixture, Compression::Lz4)
            })
        },
    )?;
    report(&comparison);
    results.push(comparison);
    // Not the log: the least work a durable structured append does on the
    // appending thread (encode, lz4, write, write-back hint, fsync; no framing,
    // CRC or index) beside lz4 alone. `append/lz4` does all of it and more, so
    // it stays at or under this row's ratio, noise aside (no target).
    let comparison = bench::compare(
        "ceiling/lz4_encode_compress_write_writeback_fsync",
        "codec/lz4_compress_only",
        args.iterations,
        bytes,
        None,
        || codec_alone(Compression::Lz4, &records),
        || {
            in_new_dir(&root.join("append-lz4-ceiling"), |dir| {
                c::encode_compress_write_writeback_fsync(dir, Compression::Lz4, fixture)
            })
        },
    )?;
    report(&comparison);
    results.push(comparison);
    // Not the log: the least work an owned read does (decompress, decode,
    // build the `ReadRecord`s; no CRC or offset checks) beside decompression
    // alone. `read/lz4` does all of it and more (no target).
    let comparison = bench::compare(
        "ceiling/lz4_owned_records",
        "codec/lz4_decompress_only",
        args.iterations,
        lz4_bytes as u64,
        None,
        || {
            bench::timed(payloads.len(), || {
                c::decompress_only(Compression::Lz4, &payloads)
            })
        },
        || bench::timed(record_count, || c::owned_records_only(&lz4_stored)),
    )?;
    report(&comparison);
    results.push(comparison);
    Ok(results)
}

fn open(args: &BenchArgs, root: &Path, fixture: &LogFixture) -> Result<Vec<Comparison>> {
    use crate::bench::open::{
        time_dump_tail, time_open, write_open_fixture, write_open_fixture_part, OpenKind,
    };
    let dir = root.join("open-log");
    let segments = write_open_fixture(&dir, fixture)?;
    eprintln!(
        "seglog bench: open fixture: {} bytes in {segments} segments",
        fixture.bytes.len()
    );
    let next = fixture.records() as i64;
    let run = |kind| -> Result<Duration> {
        let (took, found) = time_open(&dir, kind)?;
        if found != next {
            return Err(Error::InvalidArgument(format!(
                "{kind:?} open found next offset {found}, expected {next}"
            )));
        }
        Ok(took)
    };
    let mut results = Vec::new();
    for (name, kind, target) in [
        ("open/clean", OpenKind::Clean, Some(CLEAN_OPEN_TARGET)),
        ("open/after_crash", OpenKind::AfterCrash, None),
    ] {
        let comparison = bench::compare(
            name,
            "open/baseline_full_scan",
            args.iterations,
            fixture.bytes.len() as u64,
            target,
            || run(OpenKind::FullScan),
            || run(kind),
        )?;
        report(&comparison);
        results.push(comparison);
    }
    // `dump --from <next offset>`: a read-only open of the log against the same
    // open of a log a tenth its size (same segment size), and against the checked
    // read-only open (every segment read) of the whole log.
    let tenth_dir = root.join("open-log-tenth");
    let tenth_next = write_open_fixture_part(&tenth_dir, fixture, 10)?;
    let dump = |dir: &Path, checked: bool, expected: i64| -> Result<Duration> {
        let (took, found) = time_dump_tail(dir, checked)?;
        if found != expected {
            return Err(Error::InvalidArgument(format!(
                "the read-only open of {} found next offset {found}, expected {expected}",
                dir.display()
            )));
        }
        Ok(took)
    };
    for (name, baseline, target, checked_baseline) in [
        // In process, a figure without a target: the measure of how an open
        // scales with the log is the command, `seglog dump DIR --from <next>`, on
        // logs of 300 MB and 30 MB (docs/performance.md).
        (
            "open/read_only_dump_tail",
            "open/baseline_read_only_dump_tail_tenth_log",
            None,
            false,
        ),
        (
            "open/read_only_dump_tail_vs_checked",
            "open/baseline_read_only_checked_dump_tail",
            None,
            true,
        ),
    ] {
        let comparison = bench::compare(
            name,
            baseline,
            args.iterations,
            fixture.bytes.len() as u64,
            target,
            || {
                if checked_baseline {
                    dump(&dir, true, next)
                } else {
                    dump(&tenth_dir, false, tenth_next)
                }
            },
            || dump(&dir, false, next),
        )?;
        report(&comparison);
        results.push(comparison);
    }
    Ok(results)
}

/// `open-files`: the fixture in about 1,000 segments, read within a handle budget
/// of 64 vs with every handle kept.
fn open_files(args: &BenchArgs, root: &Path, fixture: &LogFixture) -> Result<Comparison> {
    use crate::bench::open_files::{time_read, write_fixture, BUDGET};
    let dir = root.join("open-files-log");
    let segments = write_fixture(&dir, fixture)?;
    eprintln!(
        "seglog bench: open-files fixture: {} bytes in {segments} segments",
        fixture.bytes.len()
    );
    let records = fixture.records();
    let run = |budget| -> Result<Duration> {
        let (took, read) = time_read(&dir, fixture, budget)?;
        if read != records {
            return Err(Error::InvalidArgument(format!(
                "the open-files read found {read} records, expected {records}"
            )));
        }
        Ok(took)
    };
    let comparison = bench::compare(
        "open_files/read_budget_64",
        "open_files/read_no_budget",
        args.iterations,
        fixture.bytes.len() as u64,
        None,
        || run(None),
        || run(Some(BUDGET)),
    )?;
    report(&comparison);
    Ok(comparison)
}

/// `compact` and `retain` on the open fixture (one open log; every run cleans it
/// again) vs the same operation plus a full-scan open of the directory, what a
/// reopen after it would cost. Then the open after dropping the log (a
/// crash) right after a compaction: what it scanned (only the active segment).
fn cleanup(
    args: &BenchArgs,
    root: &Path,
    fixture: &LogFixture,
) -> Result<(Vec<Comparison>, serde_json::Value)> {
    use crate::bench::cleanup::{open_after_crash, time_cleanup, Cleanup};
    use crate::bench::open::{open_config, write_open_fixture};
    let dir = root.join("cleanup-log");
    let segments = write_open_fixture(&dir, fixture)?;
    eprintln!(
        "seglog bench: cleanup fixture: {} bytes in {segments} segments",
        fixture.bytes.len()
    );
    let (log, _) = Log::open(&dir, open_config())?;
    let log = std::cell::RefCell::new(log);
    let mut results = Vec::new();
    for (name, baseline, cleanup) in [
        (
            "cleanup/compact",
            "cleanup/compact_then_full_scan_open",
            Cleanup::Compact,
        ),
        (
            "cleanup/retain",
            "cleanup/retain_then_full_scan_open",
            Cleanup::Retain,
        ),
    ] {
        let comparison = bench::compare(
            name,
            baseline,
            args.iterations,
            fixture.bytes.len() as u64,
            None,
            || time_cleanup(&mut log.borrow_mut(), cleanup, true),
            || time_cleanup(&mut log.borrow_mut(), cleanup, false),
        )?;
        report(&comparison);
        results.push(comparison);
    }
    let mut log = log.into_inner();
    time_cleanup(&mut log, Cleanup::Compact, false)?;
    let closed = log.segments().len() as u64 - 1;
    drop(log);
    let after = open_after_crash(&dir)?;
    eprintln!(
        "seglog bench: open after a crash right after compact: {} of {closed} closed segments trusted, {} scanned ({} bytes)",
        after.trusted_segments, after.scanned_segments, after.scanned_bytes
    );
    Ok((
        results,
        json!({
            "closed_segments": closed,
            "trusted_segments": after.trusted_segments,
            "scanned_segments": after.scanned_segments,
            "scanned_bytes": after.scanned_bytes,
        }),
    ))
}

/// Incremental cleaning of a log with a dirty tenth vs compacting it from scratch,
/// and the map passes, for clustered and scattered dirt; with what was carried.
fn incremental(args: &BenchArgs, root: &Path) -> Result<(Vec<Comparison>, serde_json::Value)> {
    use crate::bench::incremental::{IncrementalFixture, SEGMENT_BYTES};
    let fs = StdFs::new();
    let mut results = Vec::new();
    let mut carried = serde_json::Map::new();
    for (label, clustered) in [("clustered", true), ("scattered", false)] {
        eprintln!(
            "seglog bench: writing the incremental fixture ({} keys, {label} dirty tenth)",
            args.compact_keys
        );
        let dir = root.join(format!("incremental-{label}"));
        let fixture = IncrementalFixture::write(&dir, args.compact_keys, clustered, SEGMENT_BYTES)?;
        let map = bench::compare(
            &format!("incremental/{label}/map_pass"),
            &format!("incremental/{label}/full_map_pass"),
            args.iterations,
            fixture.bytes,
            Some(INCREMENTAL_MAP_TARGET),
            || fixture.map_full(&fs),
            || fixture.map_incremental(&fs),
        )?;
        report(&map);
        results.push(map);
        let build = bench::compare(
            &format!("incremental/{label}/build"),
            &format!("incremental/{label}/from_scratch_build"),
            args.iterations,
            fixture.bytes,
            Some(INCREMENTAL_BUILD_TARGET),
            || fixture.build_from_scratch(&fs).map(|(took, _)| took),
            || fixture.build_incremental(&fs).map(|(took, _)| took),
        )?;
        report(&build);
        results.push(build);
        let (_, r) = fixture.build_incremental(&fs)?;
        let (_, scratch) = fixture.build_from_scratch(&fs)?;
        if (r.records_after, r.bytes_after) != (scratch.records_after, scratch.bytes_after) {
            return Err(Error::InvalidArgument(format!(
                "incremental and from-scratch builds differ: {r:?} vs {scratch:?}"
            )));
        }
        eprintln!(
            "seglog bench: incremental/{label}: {} of {} output segments carried ({} of {} bytes not rewritten)",
            r.segments_carried, r.segments_after, r.bytes_carried, r.bytes_after
        );
        carried.insert(
            label.into(),
            json!({
                "segments_before": r.segments_before,
                "segments_after": r.segments_after,
                "segments_carried": r.segments_carried,
                "segments_rewritten": r.segments_after - r.segments_carried,
                "bytes_before": r.bytes_before,
                "bytes_after": r.bytes_after,
                "bytes_carried": r.bytes_carried,
                "fixture_bytes": fixture.bytes,
            }),
        );
        fs.remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    Ok((results, serde_json::Value::Object(carried)))
}

//! `seglog bench --only compact-kafka`: install step 1 of the compaction fixture
//! under the `kafka` policy against the same under the `seed` policy, alternating
//! in one run (the target: within 10%, a ratio >= 0.9), on the full fixture (whole
//! batches kept or dropped) and on its partial variant (every first-round batch
//! partly kept). Each run's process CPU time (user + system, all threads) is taken
//! beside its wall time: the `seed` pass scans on two threads, the `kafka` pass on one.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::compaction::CompactionFixture;
use super::{compare, Comparison};
use seglog::compaction::CompactionPolicy;
use seglog::error::Result;
use seglog::fs::StdFs;

/// The target: kafka speed / seed speed.
pub const KAFKA_POLICY_TARGET: f64 = 0.9;

/// Times `run`'s own measurement and the process CPU time around it.
fn with_cpu(cpu: &mut Vec<Duration>, run: impl FnOnce() -> Result<Duration>) -> Result<Duration> {
    let before = crate::bench::baseline::process_cpu_time();
    let took = run()?;
    if let (Some(before), Some(after)) = (before, crate::bench::baseline::process_cpu_time()) {
        cpu.push(after.saturating_sub(before));
    }
    Ok(took)
}

fn median_ms(mut runs: Vec<Duration>) -> Option<f64> {
    runs.sort();
    runs.get(runs.len() / 2).map(|d| d.as_secs_f64() * 1e3)
}

/// The two comparisons (full and partial fixture) and the CPU times.
pub fn run(keys: u64, iterations: usize, root: &Path) -> Result<(Vec<Comparison>, Value)> {
    let fs = StdFs::new();
    let mut results = Vec::new();
    let mut cpu = serde_json::Map::new();
    for partial in [false, true] {
        let suffix = if partial { "_partial" } else { "" };
        eprintln!("seglog bench: writing the compaction fixture ({keys} keys, partial {partial})");
        let dir = root.join(format!("compact-kafka-log{suffix}"));
        let fixture = CompactionFixture::write(&fs, &dir, keys, partial)?;
        let (mut seed_cpu, mut kafka_cpu) = (Vec::new(), Vec::new());
        let comparison = compare(
            &format!("compact_kafka/build{suffix}"),
            &format!("compact_seed/build{suffix}"),
            iterations,
            fixture.input_bytes,
            Some(KAFKA_POLICY_TARGET),
            || {
                with_cpu(&mut seed_cpu, || {
                    fixture
                        .build_with(&fs, CompactionPolicy::Seed)
                        .map(|(took, _)| took)
                })
            },
            || {
                with_cpu(&mut kafka_cpu, || {
                    fixture
                        .build_with(&fs, CompactionPolicy::Kafka)
                        .map(|(took, _)| took)
                })
            },
        )?;
        let (seed_ms, kafka_ms) = (median_ms(seed_cpu), median_ms(kafka_cpu));
        if let (Some(seed), Some(kafka)) = (seed_ms, kafka_ms) {
            eprintln!(
                "seglog bench: compact_kafka/build{suffix} CPU median {kafka:.0} ms vs seed {seed:.0} ms (kafka/seed CPU {:.2})",
                kafka / seed.max(1e-9)
            );
        }
        cpu.insert(
            format!("build{suffix}"),
            json!({ "kafka_cpu_median_ms": kafka_ms, "seed_cpu_median_ms": seed_ms }),
        );
        results.push(comparison);
        fs_remove(&fs, &dir)?;
    }
    Ok((results, Value::Object(cpu)))
}

fn fs_remove(fs: &StdFs, dir: &Path) -> Result<()> {
    use seglog::fs::FileSystem;
    fs.remove_dir_all(dir)
        .map_err(|e| seglog::error::Error::io(dir, e))
}

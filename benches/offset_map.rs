//! The unbounded offset map's build beside a plain hash table, measured in the same
//! run.
//!
//! Measured: `offset_map/build/{keys}x{rounds}`, every digest of `keys` distinct
//! keys written `rounds` times inserted into a [`OffsetMap::tracking_superseded`]
//! map as record ordinals, then [`OffsetMap::into_superseded`] (the cleaner's map
//! pass that needs no lookups: its inserts and its last dedup). Baseline:
//! `offset_map/hash_map/{keys}x{rounds}`, the same digests into a
//! `std::collections::HashMap<Digest, i64>` sized for the keys, keeping the highest
//! ordinal per digest (no superseded bits). The digests are computed before the
//! timing, so neither side pays for SipHash. Report the ratio build / hash_map.
//!
//! 50,000 distinct keys are the dirty tenth of `seglog bench --only incremental
//! --compact-keys 500000`, whose `map_pass` rows time this with the read.

use std::collections::HashMap;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use seglog::compaction::map::{Digest, OffsetMap};

/// The digests of `keys` keys, each `rounds` times, in the order a log holds them.
fn digests(map: &OffsetMap, keys: u64, rounds: u64) -> Vec<Digest> {
    (0..keys * rounds)
        .map(|i| map.digest(&((i % keys) * 7_919).to_be_bytes()))
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("offset_map");
    for (keys, rounds) in [(50_000u64, 1u64), (100_000, 1), (100_000, 2)] {
        let digester = OffsetMap::new();
        let input = digests(&digester, keys, rounds);
        let id = format!("{keys}x{rounds}");
        group.bench_with_input(BenchmarkId::new("build", &id), &input, |b, input| {
            b.iter(|| {
                let mut map = OffsetMap::tracking_superseded();
                for (ordinal, digest) in input.iter().enumerate() {
                    map.insert_digest(*digest, ordinal as i64);
                }
                black_box(map.into_superseded())
            })
        });
        group.bench_with_input(BenchmarkId::new("hash_map", &id), &input, |b, input| {
            b.iter(|| {
                let mut map: HashMap<Digest, i64> = HashMap::with_capacity(keys as usize);
                for (ordinal, digest) in input.iter().enumerate() {
                    let latest = map.entry(*digest).or_insert(ordinal as i64);
                    *latest = (*latest).max(ordinal as i64);
                }
                black_box(map)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! The case generator: a proptest strategy of steps, shared by the proptest test
//! (which shrinks with proptest) and [`super::run_random`] (seeded, deterministic).
//!
//! Draws: appends of 1-4 records over a small key space (4 keys, null keys,
//! tombstones, timestamps around the clock, not monotonic), control batches, roll,
//! flush, retention by time and/or size (sometimes invalid, to check both sides
//! reject it), compaction (tombstone grace around the clock moves, sometimes a
//! smaller `segment_bytes`), reads, clock moves, crashes and clean reopens.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use crate::workload::{Op, RecordSpec};

use super::Step;

/// One drawn step before the clock is folded in (`now` comes from the clock).
#[derive(Debug, Clone)]
enum Draw {
    Append(Vec<Drawn>),
    Control {
        commit: bool,
        ts_delta: i64,
    },
    Roll,
    Flush,
    Retain {
        retention_ms: Option<i64>,
        retention_bytes: Option<i64>,
    },
    Compact {
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
    },
    Read {
        from: i64,
    },
    Clock(i64),
    Crash(u32),
    Reopen,
}

/// A drawn record: key number, value (number, padding bytes), timestamp.
type Drawn = (Option<u8>, Option<(u8, usize)>, Ts);

/// A record timestamp: near the clock, or one of the edges of the valid range
/// (-1 is Kafka's NO_TIMESTAMP, -2 is invalid, `i64::MAX` the largest).
#[derive(Debug, Clone, Copy)]
enum Ts {
    Clock(i64),
    Exactly(i64),
}

fn timestamp() -> impl Strategy<Value = Ts> {
    prop_oneof![
        40 => (-20i64..20).prop_map(Ts::Clock),
        1 => prop_oneof![Just(-1i64), Just(-2), Just(i64::MAX), Just(i64::MIN)].prop_map(Ts::Exactly),
    ]
}

fn record() -> impl Strategy<Value = Drawn> {
    let key = prop_oneof![1 => Just(None), 4 => (0u8..4).prop_map(Some)];
    // Now and then a value larger than a segment: the batch goes alone into a segment.
    let padding = prop_oneof![12 => Just(0usize), 1 => 100usize..400];
    let value = prop_oneof![1 => Just(None), 4 => (any::<u8>(), padding).prop_map(Some)];
    (key, value, timestamp())
}

fn draw() -> impl Strategy<Value = Draw> {
    prop_oneof![
        12 => prop::collection::vec(record(), 1..5).prop_map(Draw::Append),
        1 => (any::<bool>(), -20i64..20).prop_map(|(commit, ts_delta)| Draw::Control { commit, ts_delta }),
        3 => Just(Draw::Roll),
        2 => Just(Draw::Flush),
        2 => (
            prop_oneof![2 => Just(None), 5 => (0i64..300).prop_map(Some), 1 => Just(Some(-1))],
            prop_oneof![3 => Just(None), 3 => (50i64..1500).prop_map(Some), 1 => Just(Some(0))],
        )
            .prop_map(|(retention_ms, retention_bytes)| Draw::Retain { retention_ms, retention_bytes }),
        3 => (
            prop_oneof![6 => 0i64..200, 1 => Just(-1i64)],
            prop_oneof![3 => Just(None), 2 => (60u64..600).prop_map(Some)],
        )
            .prop_map(|(delete_retention_ms, segment_bytes)| Draw::Compact { delete_retention_ms, segment_bytes }),
        2 => (-1i64..40).prop_map(|from| Draw::Read { from }),
        3 => (1i64..150).prop_map(Draw::Clock),
        2 => any::<u32>().prop_map(Draw::Crash),
        1 => Just(Draw::Reopen),
    ]
}

fn record_spec((key, value, ts): Drawn, clock: i64) -> RecordSpec {
    RecordSpec {
        key: key.map(|k| format!("k{k}")),
        value: value.map(|(v, padding)| format!("v{v}{}", ".".repeat(padding))),
        ts: match ts {
            Ts::Clock(delta) => (clock + delta).max(0),
            Ts::Exactly(ts) => ts,
        },
    }
}

/// Folds the clock through the draws: timestamps and `now` come from it.
fn materialize(draws: Vec<Draw>) -> Vec<Step> {
    let mut clock = 100;
    draws
        .into_iter()
        .map(|draw| match draw {
            Draw::Append(records) => Step::Op(Op::Append {
                records: records.into_iter().map(|r| record_spec(r, clock)).collect(),
            }),
            Draw::Control { commit, ts_delta } => Step::Op(Op::AppendControl {
                commit,
                ts: (clock + ts_delta).max(0),
            }),
            Draw::Roll => Step::Op(Op::Roll),
            Draw::Flush => Step::Op(Op::Flush),
            Draw::Retain {
                retention_ms,
                retention_bytes,
            } => Step::Op(Op::Retain {
                now: clock,
                retention_ms,
                retention_bytes,
            }),
            Draw::Compact {
                delete_retention_ms,
                segment_bytes,
            } => Step::Op(Op::Compact {
                now: clock,
                delete_retention_ms,
                segment_bytes,
            }),
            Draw::Read { from } => Step::Op(Op::Read { from }),
            Draw::Clock(ms) => {
                clock += ms;
                Step::AdvanceClock(ms)
            }
            Draw::Crash(image) => Step::CrashReopen { image },
            Draw::Reopen => Step::Reopen,
        })
        .collect()
}

/// Cases of 1 to `ops_per_case` steps. Shrinking deletes and simplifies draws; the
/// clock is folded in after, so a shrunk case stays well formed.
pub fn steps_strategy(ops_per_case: usize) -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(draw(), 1..=ops_per_case.max(1)).prop_map(materialize)
}

/// The case `seed` stands for: the same steps on every machine and every run.
pub fn case_steps(seed: u64, ops_per_case: usize) -> Vec<Step> {
    let mut seed_bytes = [0u8; 32];
    for (i, chunk) in seed_bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(
            &(seed ^ (i as u64).wrapping_mul(0xA24B_AED4_963E_E407)).to_le_bytes(),
        );
    }
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    // A full-length case: the length range only matters for proptest's shrinking.
    let strategy = prop::collection::vec(draw(), ops_per_case.max(1)).prop_map(materialize);
    match strategy.new_tree(&mut runner) {
        Ok(tree) => tree.current(),
        Err(_) => Vec::new(),
    }
}

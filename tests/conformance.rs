//! Conformance: the engine against the reference spec, step by step (proptest).
//!
//! Invariants checked after every step (src/conformance): same outcome of every
//! operation; the engine's log decoded batch by batch equals the spec's log (start
//! offset, next offset, segment bases, batches, offsets, keys, values, timestamps);
//! same segment metadata; the same records from every read position, bounded and not;
//! `seglog_model::invariants::check_step` between states; after a crash on SimFs the
//! engine is at a state between the last durability point and the state before the
//! crash, never less; on the real disk a crash (drop without close) loses nothing;
//! `fetch` and `read_raw` return the spec's batches and `next_offset` from every
//! position. Cases include batches another writer left ending in a gap in the active
//! segment, and boundary values picked on purpose (src/conformance/edges.rs).
//!
//! Cases come from `PROPTEST_CASES` (default 48 on SimFs, 12 on disk, which fsyncs);
//! failures shrink to a minimal step list and are saved in
//! `tests/conformance.proptest-regressions`.

use proptest::prelude::*;
use seglog_suite::conformance::{
    run_case, run_random, steps_strategy, Backend, ConformanceOptions,
};

const OPS_PER_CASE: usize = 40;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn engine_matches_spec_on_simfs(steps in steps_strategy(OPS_PER_CASE)) {
        if let Err(divergence) = run_case(&steps, Backend::Sim, "manifest") {
            prop_assert!(false, "{}", divergence);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn engine_matches_spec_on_disk(steps in steps_strategy(OPS_PER_CASE)) {
        if let Err(divergence) = run_case(&steps, Backend::Disk, "manifest") {
            prop_assert!(false, "{}", divergence);
        }
    }
}

/// The runner `seglog verify` calls: seeded, deterministic, both back ends.
#[test]
fn run_random_is_deterministic_and_passes() {
    let options = ConformanceOptions {
        cases: 4,
        ops_per_case: 30,
        seed: 2026,
        variant: "manifest".into(),
        ..ConformanceOptions::default()
    };
    let mut done = Vec::new();
    let first = run_random(&options, |n| done.push(n));
    assert!(first.failures.is_empty(), "{}", first.failures[0]);
    assert_eq!(first.cases, 4);
    assert_eq!(done, vec![1, 2, 3, 4]);
    // Both back ends ran every step.
    assert_eq!(first.steps, 2 * 4 * 30);
    let second = run_random(&options, |_| {});
    assert_eq!(
        (first.steps, first.crashes, first.reads),
        (second.steps, second.crashes, second.reads)
    );
}

//! The linearizability check of tests/linearizability.rs under shuttle's random
//! and PCT schedulers: the same scenario (an appender, a cleaner, a retention
//! round and a reader on one SimFs-backed `LogManager` partition, recorded by
//! tests/linearizability_support), its interleavings chosen by the scheduler and
//! replayable from its seed.
//!
//! Invariants checked: every explored history is linearizable against the model's
//! `SpecLog` (offsets, records read, the log start, retention's deletions, the
//! cleaning's counts). Teeth (feature `test-variants`, fixed seeds, so the same
//! schedules every run): the refuted `stale-tail-copy` (appends during the build
//! lost at the swap) and `no-cleaning-lock` (retention deletes while a cleaner
//! holds the partition) each yield a history with no linearization.
//!
//! Run: `RUSTFLAGS="--cfg shuttle" CARGO_TARGET_DIR=target/shuttle cargo test
//! --no-default-features --features test-variants,suite --test
//! shuttle_linearizability`. `SEGLOG_SHUTTLE_ITERATIONS` sets the schedules per
//! scheduler (default 1000); `seglog verify --budget standard` raises it.
#![cfg(shuttle)]

mod linearizability_support;

use std::sync::atomic::{AtomicU64, Ordering};

use linearizability_support::{linearizable, scenario, Variant};
#[cfg(feature = "test-variants")]
use shuttle::scheduler::RandomScheduler;
#[cfg(feature = "test-variants")]
use shuttle::{Config, Runner};

fn iterations() -> usize {
    std::env::var("SEGLOG_SHUTTLE_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// Each schedule runs the scenario of a different seed (the ops) under the
/// scheduler's interleaving.
fn check(variant: Variant) -> impl Fn() + Send + Sync + 'static {
    let seed = std::sync::Arc::new(AtomicU64::new(0));
    move || {
        let seed = seed.fetch_add(1, Ordering::SeqCst);
        let history = scenario(seed, variant);
        assert!(
            linearizable(&history),
            "seed {seed}: not linearizable: {history:#?}"
        );
    }
}

#[test]
fn random_schedules_give_linearizable_histories() {
    shuttle::check_random(check(Variant::Ours), iterations());
}

#[test]
fn pct_schedules_give_linearizable_histories() {
    shuttle::check_pct(check(Variant::Ours), iterations(), 3);
}

/// Runs `variant` under a fixed-seed random scheduler; true if some schedule's
/// history had no linearization.
#[cfg(feature = "test-variants")]
fn caught(variant: Variant, schedules: usize) -> bool {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let refused = Arc::new(AtomicBool::new(false));
    let seed = Arc::new(AtomicU64::new(0));
    let scheduler = RandomScheduler::new_from_seed(7, schedules);
    let (flag, next) = (Arc::clone(&refused), Arc::clone(&seed));
    Runner::new(scheduler, Config::default()).run(move || {
        let history = scenario(next.fetch_add(1, Ordering::SeqCst), variant);
        if !linearizable(&history) {
            flag.store(true, Ordering::SeqCst);
        }
    });
    refused.load(Ordering::SeqCst)
}

#[cfg(feature = "test-variants")]
#[test]
fn stale_tail_copy_gives_a_non_linearizable_history() {
    assert!(
        caught(Variant::StaleTailCopy, 300),
        "no schedule caught stale-tail-copy"
    );
}

#[cfg(feature = "test-variants")]
#[test]
fn no_cleaning_lock_gives_a_non_linearizable_history() {
    assert!(
        caught(Variant::NoCleaningLock, 300),
        "no schedule caught no-cleaning-lock"
    );
}

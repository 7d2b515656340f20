//! Fuzz target: crash an arbitrary workload anywhere, recover, and hold the result
//! against the spec.
//!
//! The input is a small config, up to 12 workload operations (as in `ops_vs_model`),
//! a crash point (before the k-th mutating file-system call of the run, modulo the
//! run's count), the crash semantics (process crash, or one of the power-loss disk
//! images `SimFs::crash_images` enumerates: torn unsynced appends, lost directory
//! operations, lost rewrites) and optionally a second crash during recovery with its
//! own semantics. It reuses the crash sweep (`seglog_suite::sweep::{run_until_crash,
//! check_image, States}`): the fuzzer explores crash points and images of workloads
//! the named sweep workloads do not cover.
//!
//! Invariants checked (`check_crash::crash_recovery`, via `check_image`):
//! - recovery succeeds and never panics;
//! - the recovered log equals the spec state at one of the points the crash allows:
//!   from the last durability point (roll, flush, retain, compact) before the
//!   interrupted operation to the state right after it, so nothing flushed is lost and
//!   an interrupted retention or compaction is exactly old or exactly new;
//! - no install or checkpoint leftovers survive recovery;
//! - recovery is idempotent: a second open changes no byte and gives the same view;
//! - the same holds after a crash in the middle of recovery itself.
#![no_main]

#[allow(dead_code)]
mod check_crash;
#[allow(dead_code)]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: common::CrashInput| {
    check_crash::crash_recovery(&input);
});

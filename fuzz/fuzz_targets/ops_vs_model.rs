//! Fuzz target: an arbitrary operation sequence on the engine (on `SimFs`) against the
//! reference spec (`seglog_model::spec::SpecLog`), like the conformance test.
//!
//! The input is a small config (segments of 64 B to 2 KiB, any index interval) and up
//! to 32 steps: append (1-4 records over 4 keys, tombstones, keyless), control batch,
//! roll, flush, retain (time and/or size, invalid arguments included), compact (with
//! tombstone grace and output grouping), read from any offset, and reopen after a
//! process crash. Operations convert into the shared `seglog_suite::workload::Op` and run
//! through `seglog_suite::workload::{engine, spec}::apply`: nothing is re-implemented here.
//!
//! Invariants checked (`check_ops::ops_vs_model`):
//! - every operation has the same outcome on both sides (offsets assigned, segments
//!   deleted, compaction report, records read, or `Rejected` for an argument error);
//!   the engine never fails otherwise;
//! - after every step the engine's `LogView` (log start and next offset, every
//!   segment's base, closed flag, bytes, records and max timestamp, every record)
//!   equals the spec's;
//! - a reopen after a process crash truncates nothing and changes no view.
#![no_main]

#[allow(dead_code)]
mod check_ops;
#[allow(dead_code)]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: common::OpsInput| {
    check_ops::ops_vs_model(&input);
});

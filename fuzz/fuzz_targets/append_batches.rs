//! Fuzz target: arbitrary bytes as a produce request to `Log::append_batches`.
//!
//! Invariants checked (`check_raw::append_batches`):
//! - only inputs whose every batch is a valid producer batch (an independent full
//!   decode plus the producer rules) are stored; anything else is refused with
//!   `Error::InvalidBatch`, changes no file and does not poison the log;
//! - the log reads back exactly what was acknowledged, before and after a reopen.
#![no_main]

#[allow(dead_code)]
mod check_raw;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    check_raw::append_batches(data);
});

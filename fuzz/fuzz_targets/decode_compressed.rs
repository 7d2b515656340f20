//! Fuzz target: the payload of a compressed batch (gzip, snappy, lz4, zstd) behind a
//! valid header and CRC, so that every input reaches the decompressors.
//!
//! Invariants checked (`check_batch::decode_compressed`):
//! - decoding never panics and never inflates beyond the 64 MiB bound;
//! - a failure is `Corrupt` at the payload's first byte or at `recordCount`;
//! - a success decompresses to exactly its records' encoding and round-trips;
//!   LogAppendTime records read as the batch's max timestamp.
#![no_main]

#[allow(dead_code)]
mod check_batch;
#[allow(dead_code)]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| check_batch::decode_compressed(data));

//! Fuzz target: decoding arbitrary bytes as a Kafka record batch.
//!
//! Invariants checked (`check_batch::decode_batch`):
//! - `decode` returns `Ok` or a structured `FormatError`; it never panics, never reads
//!   out of bounds, never allocates without bound (a 64 MiB batch cap).
//! - An `Ok` batch uses at most the bytes given and round-trips: encoding it and
//!   decoding the result gives the same batch (byte equality is not required: like
//!   Kafka, the decoder accepts non-minimal varints, which the encoder never writes).
//! - `decode_header` agrees with `decode` on base offset and size.
//! - The compaction's key walk (`RecordViews::keys`) yields the records and errors
//!   the full record walk yields.
//! - The same again with the input's CRC resealed: CRC-valid batches with any header
//!   fields, extreme offsets, deltas and counts included.
#![no_main]

#[allow(dead_code)]
mod check_batch;
#[allow(dead_code)]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| check_batch::decode_batch(data));

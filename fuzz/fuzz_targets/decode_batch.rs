//! Fuzz target: decoding arbitrary bytes as a Kafka record batch.
//!
//! Invariants checked:
//! - `decode` returns `Ok` or a structured `FormatError`; it never panics, never reads
//!   out of bounds, never allocates without bound (a 64 MiB batch cap).
//! - An `Ok` batch round-trips: encoding it and decoding the result gives the same
//!   batch (byte equality is not required: like Kafka, the decoder accepts non-minimal
//!   varints, which the encoder never writes).
//! - `decode_header` agrees with `decode` on base offset and size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seglog::format::batch::{decode, decode_header};

fuzz_target!(|data: &[u8]| {
    match decode(data) {
        Ok((batch, used)) => {
            assert!(used <= data.len());
            let again = decode(&batch.encode()).expect("re-encoded batch must decode");
            assert_eq!(again.0, batch);
            let header = decode_header(data).expect("header of a decoded batch");
            assert_eq!(header.size, used);
            assert_eq!(header.base_offset, batch.base_offset);
        }
        Err(_) => {}
    }
});

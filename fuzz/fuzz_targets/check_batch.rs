//! The checks of the `decode_batch` fuzz target. Shared with `tests/fuzz_corpus.rs` (included
//! by path), so `cargo test` replays the committed seeds through exactly what the
//! fuzzer runs. The function panics with a description when an invariant breaks.

use seglog::format::batch::{decode, decode_header};

/// Decodes arbitrary bytes as a record batch.
///
/// Invariants checked:
/// - `decode` returns `Ok` or a structured `FormatError`; it never panics, never reads
///   out of bounds, never allocates without bound (the 64 MiB batch cap).
/// - An `Ok` batch uses at most the bytes given and round-trips: encoding it and
///   decoding the result gives the same batch, using exactly the encoded length
///   (byte equality with the input is not required: like Kafka, the decoder accepts
///   non-minimal varints, which the encoder never writes).
/// - `decode_header` agrees with `decode` on base offset and size.
pub fn decode_batch(data: &[u8]) {
    let Ok((batch, used)) = decode(data) else {
        return;
    };
    assert!(used <= data.len(), "used {used} of {} bytes", data.len());
    let encoded = batch.encode();
    assert_eq!(encoded.len(), batch.encoded_len());
    let (again, again_used) = decode(&encoded).expect("a re-encoded batch must decode");
    assert_eq!(again, batch);
    assert_eq!(again_used, encoded.len());
    let header = decode_header(data).expect("the header of a decoded batch decodes");
    assert_eq!(header.size, used);
    assert_eq!(header.base_offset, batch.base_offset);
}

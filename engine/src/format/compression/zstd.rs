//! zstd as Kafka writes it: one frame from a streaming encoder at level 3
//! (`compression.zstd.level` default), so no content size and no checksum.

use std::io::Write;

use super::{read_bounded, CodecError};

/// Kafka's default zstd level.
const LEVEL: i32 = 3;

pub(super) fn compress(data: &[u8], out: &mut Vec<u8>) {
    let mut encoder = ::zstd::stream::write::Encoder::new(out, LEVEL).expect("a valid level");
    encoder.write_all(data).expect("writing to a vector");
    encoder.finish().expect("writing to a vector");
}

pub(super) fn decompress(data: &[u8], limit_bytes: usize) -> Result<Vec<u8>, CodecError> {
    let decoder = ::zstd::stream::read::Decoder::with_buffer(data)?;
    read_bounded(decoder, limit_bytes)
}

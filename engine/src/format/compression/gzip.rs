//! gzip as Kafka writes it: `GZIPOutputStream` (Java 17: mtime 0, XFL 0, OS 255)
//! at deflate level 6 (`compression.gzip.level` -1, zlib's default).

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::GzBuilder;

use super::{read_bounded, CodecError};

/// Kafka's default gzip level (zlib's `Z_DEFAULT_COMPRESSION`).
const LEVEL: u32 = 6;

pub(super) fn compress(data: &[u8], out: &mut Vec<u8>) {
    let encoder: GzEncoder<&mut Vec<u8>> = GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(out, flate2::Compression::new(LEVEL));
    let mut encoder = encoder;
    encoder.write_all(data).expect("writing to a vector");
    encoder.finish().expect("writing to a vector");
}

/// Every member of the stream (Java's `GZIPInputStream` reads concatenated members).
pub(super) fn decompress(data: &[u8], limit_bytes: usize) -> Result<Vec<u8>, CodecError> {
    read_bounded(flate2::read::MultiGzDecoder::new(data), limit_bytes)
}

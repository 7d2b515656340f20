//! Snappy in xerial's stream framing, as Kafka's `SnappyOutputStream` writes it:
//!
//! ```text
//! offset  size  field
//!      0     8  magic                  82 53 4e 41 50 50 59 00 ("\x82SNAPPY\0")
//!      8     4  version                i32 BE = 1
//!     12     4  compatible version     i32 BE = 1
//!     16     .  blocks                 i32 BE length, then a raw snappy block of
//!                                      at most 32 KiB of input
//! ```
//!
//! Like xerial's `SnappyInputStream`, a stream that does not start with the magic
//! is read as one raw snappy block.

use super::CodecError;

/// xerial's stream magic.
const MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// xerial's `DEFAULT_VERSION` and `MINIMUM_COMPATIBLE_VERSION`.
const VERSION: i32 = 1;
const COMPATIBLE_VERSION: i32 = 1;
const HEADER_LEN: usize = MAGIC.len() + 8;
/// `SnappyOutputStream.DEFAULT_BLOCK_SIZE`: input bytes per block.
const BLOCK_BYTES: usize = 32 * 1024;

pub(super) fn compress(data: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&COMPATIBLE_VERSION.to_be_bytes());
    let mut encoder = snap::raw::Encoder::new();
    let mut block = vec![0u8; snap::raw::max_compress_len(BLOCK_BYTES)];
    for chunk in data.chunks(BLOCK_BYTES) {
        let used = encoder
            .compress(chunk, &mut block)
            .expect("the buffer holds the largest block");
        let length = i32::try_from(used).expect("a block is small");
        out.extend_from_slice(&length.to_be_bytes());
        out.extend_from_slice(block.get(..used).expect("within the buffer"));
    }
}

pub(super) fn decompress(data: &[u8], limit_bytes: usize) -> Result<Vec<u8>, CodecError> {
    let Some(mut rest) = data.strip_prefix(&MAGIC[..]) else {
        let mut out = Vec::new();
        inflate_block(data, limit_bytes, &mut out)?;
        return Ok(out);
    };
    let (compatible, after) = rest
        .get(4..8)
        .zip(rest.get(8..))
        .ok_or_else(|| CodecError::Invalid("snappy stream header is truncated".into()))?;
    let compatible = i32::from_be_bytes(compatible.try_into().expect("4 bytes"));
    if compatible > VERSION {
        return Err(CodecError::Invalid(format!(
            "snappy stream needs reader version {compatible}"
        )));
    }
    rest = after;
    debug_assert_eq!(data.len() - rest.len(), HEADER_LEN);
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (length, after) = rest
            .get(..4)
            .zip(rest.get(4..))
            .ok_or_else(|| CodecError::Invalid("snappy block length is truncated".into()))?;
        let length = i32::from_be_bytes(length.try_into().expect("4 bytes"));
        let (block, after) = usize::try_from(length)
            .ok()
            .and_then(|length| after.get(..length).zip(after.get(length..)))
            .ok_or_else(|| CodecError::Invalid(format!("bad snappy block length {length}")))?;
        inflate_block(block, limit_bytes - out.len(), &mut out).map_err(|e| match e {
            CodecError::TooLarge { .. } => CodecError::TooLarge { limit_bytes },
            e => e,
        })?;
        rest = after;
    }
    Ok(out)
}

/// Appends the raw snappy block `block` to `out` if it inflates to at most
/// `limit_bytes` (known from its header before anything is allocated).
fn inflate_block(block: &[u8], limit_bytes: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let invalid = |e: snap::Error| CodecError::Invalid(format!("snappy block: {e}"));
    let length = snap::raw::decompress_len(block).map_err(invalid)?;
    if length > limit_bytes {
        return Err(CodecError::TooLarge { limit_bytes });
    }
    let start = out.len();
    out.resize(start + length, 0);
    let target = out.get_mut(start..).expect("just resized");
    let used = snap::raw::Decoder::new()
        .decompress(block, target)
        .map_err(invalid)?;
    if used != length {
        return Err(CodecError::Invalid("snappy block length mismatch".into()));
    }
    Ok(())
}

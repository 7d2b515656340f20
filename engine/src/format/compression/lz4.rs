//! LZ4 frames as Kafka's `Lz4BlockOutputStream` writes them:
//!
//! ```text
//! offset  size  field
//!      0     4  magic          04 22 4d 18 (0x184D2204, little-endian)
//!      4     1  FLG            0x60: version 1, independent blocks, no block
//!                              checksum, no content size, no content checksum
//!      5     1  BD             0x40: blocks of at most 64 KiB of input
//!      6     1  HC             (xxHash32(FLG BD, seed 0) >> 8) & 0xff
//!      7     .  blocks         u32 LE size (high bit: stored uncompressed), data
//!      .     4  end mark       0
//! ```
//!
//! Decoding is as strict as Kafka's `Lz4BlockInputStream` (which needs the end
//! mark and checks HC) and also reads what it reads beyond Kafka's own output:
//! block checksums, a content size, a content checksum, blocks up to 4 MiB. The
//! compressor is `lz4_flex`'s frame encoder with exactly Kafka's options.

use std::cell::RefCell;
use std::io::Write;

use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
use twox_hash::XxHash32;

use super::CodecError;

const MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];
const FLG_VERSION_MASK: u8 = 0b1100_0000;
const FLG_VERSION_1: u8 = 0b0100_0000;
const FLG_BLOCK_CHECKSUM: u8 = 1 << 4;
const FLG_CONTENT_SIZE: u8 = 1 << 3;
const FLG_CONTENT_CHECKSUM: u8 = 1 << 2;
const FLG_RESERVED: u8 = 0b11;
const STORED: u32 = 0x8000_0000;

pub(super) fn compress(data: &[u8], out: &mut Vec<u8>) {
    let info = FrameInfo::new()
        .block_size(BlockSize::Max64KB)
        .block_mode(BlockMode::Independent)
        .block_checksums(false)
        .content_checksum(false)
        .content_size(None);
    let mut encoder = FrameEncoder::with_frame_info(info, out);
    encoder.write_all(data).expect("writing to a vector");
    encoder.finish().expect("writing to a vector");
}

fn invalid(what: &str) -> CodecError {
    CodecError::Invalid(format!("lz4 frame: {what}"))
}

/// Splits `n` bytes off the front of `rest`.
fn take<'a>(rest: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8], CodecError> {
    let (head, tail) = rest
        .get(..n)
        .zip(rest.get(n..))
        .ok_or_else(|| invalid(&format!("{what} is truncated")))?;
    *rest = tail;
    Ok(head)
}

fn u32_le(bytes: &[u8]) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(bytes);
    u32::from_le_bytes(word)
}

/// The largest block decompressed through [`SCRATCH`]: Kafka's (64 KiB). A
/// frame of larger blocks (up to 4 MiB, which Kafka reads but never writes)
/// decompresses straight into its output.
const SCRATCH_BYTES_MAX: usize = 64 * 1024;

thread_local! {
    /// A block's worth of initialized bytes that a block is decompressed into
    /// before its output (exactly as long as it is) is copied out. Decompressing
    /// straight into the output needs the block's maximum size (64 KiB) zeroed
    /// there first, for every block: for Kafka's batches, a few KiB each, that
    /// zeroing cost as much as the decompression itself, and more than the copy.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Where [`decode`] puts the decompressed bytes.
enum Output<'a> {
    /// Appended to a vector (a Kafka-sized block through [`SCRATCH`]).
    Append(&'a mut Vec<u8>),
    /// Written in place at `buf[len..]`: `buf`'s bytes are all initialized and
    /// stay so between calls (it grows, zeroed, and never shrinks), so a block is
    /// decompressed straight into it, with no zeroing and no copy per block.
    Arena { buf: &'a mut Vec<u8>, len: usize },
}

impl Output<'_> {
    fn len(&self) -> usize {
        match self {
            Output::Append(out) => out.len(),
            Output::Arena { len, .. } => *len,
        }
    }

    /// The bytes decompressed so far.
    fn bytes(&self) -> &[u8] {
        match self {
            Output::Append(out) => out,
            Output::Arena { buf, len } => buf.get(..*len).unwrap_or_default(),
        }
    }

    /// `n` initialized bytes at the arena's end.
    fn arena_room(buf: &mut Vec<u8>, len: usize, n: usize) -> &mut [u8] {
        if buf.len() < len + n {
            buf.resize(len + n, 0);
        }
        buf.get_mut(len..len + n).expect("just resized")
    }

    /// A stored (uncompressed) block.
    fn stored(&mut self, block: &[u8]) {
        match self {
            Output::Append(out) => out.extend_from_slice(block),
            Output::Arena { buf, len } => {
                Self::arena_room(buf, *len, block.len()).copy_from_slice(block);
                *len += block.len();
            }
        }
    }

    /// An LZ4 block whose output is at most `bound_bytes`.
    fn block(
        &mut self,
        block: &[u8],
        bound_bytes: usize,
    ) -> Result<(), lz4_flex::block::DecompressError> {
        match self {
            Output::Append(out) => decompress_block(block, bound_bytes, out),
            Output::Arena { buf, len } => {
                let target = Self::arena_room(buf, *len, bound_bytes);
                // Stale bytes in the arena are never read: a block's matches may
                // only reach back into what this block has written.
                *len += lz4_flex::block::decompress_into(block, target)?;
                Ok(())
            }
        }
    }
}

/// Decompresses one LZ4 block, whose output is at most `bound_bytes`, appending
/// it to `out`.
fn decompress_block(
    block: &[u8],
    bound_bytes: usize,
    out: &mut Vec<u8>,
) -> Result<(), lz4_flex::block::DecompressError> {
    if bound_bytes > SCRATCH_BYTES_MAX {
        let start = out.len();
        out.resize(start + bound_bytes, 0);
        let target = out.get_mut(start..).expect("just resized");
        let used = lz4_flex::block::decompress_into(block, target)?;
        out.truncate(start + used);
        return Ok(());
    }
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        if scratch.len() < SCRATCH_BYTES_MAX {
            scratch.resize(SCRATCH_BYTES_MAX, 0);
        }
        let target = scratch
            .get_mut(..bound_bytes)
            .expect("the scratch holds a block");
        // Stale bytes in the scratch are never read: a block's matches may only
        // reach back into what this block has written (decompress_into checks).
        let used = lz4_flex::block::decompress_into(block, target)?;
        out.extend_from_slice(target.get(..used).expect("within the target"));
        Ok(())
    })
}

pub(super) fn decompress(data: &[u8], limit_bytes: usize) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    decode(data, limit_bytes, &mut Output::Append(&mut out))?;
    Ok(out)
}

/// [`decompress`] into `buf` as an arena ([`Output::Arena`]): the bytes are
/// `buf[..returned length]`, and `buf` is kept for the next call.
pub(super) fn decompress_reusing(
    data: &[u8],
    limit_bytes: usize,
    buf: &mut Vec<u8>,
) -> Result<usize, CodecError> {
    let mut out = Output::Arena { buf, len: 0 };
    decode(data, limit_bytes, &mut out)?;
    Ok(out.len())
}

/// Decodes the frame `data` into `out`, at most `limit_bytes` of output.
fn decode(data: &[u8], limit_bytes: usize, out: &mut Output<'_>) -> Result<(), CodecError> {
    let mut rest = data;
    if take(&mut rest, 4, "magic")? != MAGIC {
        return Err(invalid("bad magic"));
    }
    let descriptor = take(&mut rest, 2, "descriptor")?;
    let &[flg, bd] = descriptor else {
        return Err(invalid("descriptor is truncated"));
    };
    if flg & FLG_VERSION_MASK != FLG_VERSION_1 || flg & FLG_RESERVED != 0 {
        return Err(invalid(&format!("unsupported FLG {flg:#04x}")));
    }
    if flg & (1 << 5) == 0 {
        return Err(invalid("dependent blocks (Kafka writes independent ones)"));
    }
    let block_bytes_max = match (bd >> 4) & 7 {
        code @ 4..=7 if bd & 0x8f == 0 => 1usize << (2 * code + 8),
        _ => return Err(invalid(&format!("unsupported BD {bd:#04x}"))),
    };
    // FLG, BD and the content size if there is one: what HC hashes.
    let mut hashed = [0u8; 10];
    let (head, content_size) = hashed.split_at_mut(2);
    head.copy_from_slice(descriptor);
    let mut hashed_len = 2;
    if flg & FLG_CONTENT_SIZE != 0 {
        content_size.copy_from_slice(take(&mut rest, 8, "content size")?);
        hashed_len = 10;
    }
    let hashed = hashed.get(..hashed_len).unwrap_or_default();
    let hc = take(&mut rest, 1, "header checksum")?
        .first()
        .copied()
        .unwrap_or_default();
    if ((XxHash32::oneshot(0, hashed) >> 8) & 0xff) as u8 != hc {
        return Err(invalid("header checksum mismatch"));
    }
    loop {
        let word = u32_le(take(&mut rest, 4, "block size")?);
        if word == 0 {
            break;
        }
        let size = (word & !STORED) as usize;
        if size > block_bytes_max {
            return Err(invalid(&format!("block of {size} bytes")));
        }
        let block = take(&mut rest, size, "block")?;
        if flg & FLG_BLOCK_CHECKSUM != 0 {
            let stored = u32_le(take(&mut rest, 4, "block checksum")?);
            if XxHash32::oneshot(0, block) != stored {
                return Err(invalid("block checksum mismatch"));
            }
        }
        let room = limit_bytes - out.len();
        if word & STORED != 0 {
            if block.len() > room {
                return Err(CodecError::TooLarge { limit_bytes });
            }
            out.stored(block);
        } else {
            out.block(block, block_bytes_max.min(room)).map_err(|e| {
                // The block needs more room than the bound leaves.
                if room < block_bytes_max {
                    CodecError::TooLarge { limit_bytes }
                } else {
                    invalid(&format!("block: {e}"))
                }
            })?;
        }
    }
    if flg & FLG_CONTENT_CHECKSUM != 0 {
        let stored = u32_le(take(&mut rest, 4, "content checksum")?);
        if XxHash32::oneshot(0, out.bytes()) != stored {
            return Err(invalid("content checksum mismatch"));
        }
    }
    if !rest.is_empty() {
        return Err(invalid(&format!("{} bytes after the end mark", rest.len())));
    }
    Ok(())
}

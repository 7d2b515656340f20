//! The retention checkpoint: `log-start-offset.checkpoint` in the log directory.
//!
//! ```text
//! offset  size  field             notes
//!      0     4  magic             b"SLCK"
//!      4     2  version           u16 = 1
//!      6     8  log_start_offset  i64, >= 0
//!     14     4  crc               u32, CRC-32C of bytes [0, 14)
//!     18        end
//! ```
//! All integers big-endian. Written to `log-start-offset.checkpoint.tmp`, synced,
//! renamed over the checkpoint, and the directory synced (section 5 of docs/design.md).
//!
//! The cleaner's clean point, `cleaner-offset.checkpoint`, has the same layout with
//! the magic `b"SLCO"` and the clean point in place of `log_start_offset`. It is
//! never renamed in place: a compaction writes it into its temp dir, so the
//! install's commit point makes it durable together with the segments it describes
//! (section 6).

#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

use crate::error::CorruptKind;

use super::FormatError;

/// File name of the checkpoint inside the log directory.
pub const CHECKPOINT_NAME: &str = "log-start-offset.checkpoint";
/// Temp name the checkpoint is written under before the rename.
pub const CHECKPOINT_TMP_NAME: &str = "log-start-offset.checkpoint.tmp";

/// The first bytes of a checkpoint file.
pub const MAGIC: [u8; 4] = *b"SLCK";
/// File name of the cleaner's clean point inside the log directory.
pub const CLEAN_POINT_NAME: &str = "cleaner-offset.checkpoint";
/// Magic of the clean point file.
pub const CLEAN_POINT_MAGIC: [u8; 4] = *b"SLCO";
/// The checkpoint format's version.
pub const VERSION: u16 = 1;

const MAGIC_OFFSET: usize = 0;
const VERSION_OFFSET: usize = MAGIC_OFFSET + 4;
/// Byte position of the offset the file holds (the log start, or the clean point).
pub const LOG_START_OFFSET_OFFSET: usize = VERSION_OFFSET + 2;
const CRC_OFFSET: usize = LOG_START_OFFSET_OFFSET + 8;
/// Total bytes of a checkpoint file.
pub const CHECKPOINT_LEN: usize = CRC_OFFSET + 4;

const _: () = assert!(CHECKPOINT_LEN == 18);

/// Encodes a checkpoint holding `log_start_offset`.
pub fn encode(log_start_offset: i64) -> Vec<u8> {
    encode_with(MAGIC, log_start_offset)
}

/// Decodes a checkpoint; any damage is a structured corruption error.
pub fn decode(buf: &[u8]) -> Result<i64, FormatError> {
    decode_with(MAGIC, buf)
}

/// Encodes a clean point file holding `clean_point`.
pub fn encode_clean_point(clean_point: i64) -> Vec<u8> {
    encode_with(CLEAN_POINT_MAGIC, clean_point)
}

/// Decodes a clean point file; any damage is a structured corruption error.
pub fn decode_clean_point(buf: &[u8]) -> Result<i64, FormatError> {
    decode_with(CLEAN_POINT_MAGIC, buf)
}

fn encode_with(magic: [u8; 4], log_start_offset: i64) -> Vec<u8> {
    assert!(log_start_offset >= 0, "negative log start offset");
    let mut out = Vec::with_capacity(CHECKPOINT_LEN);
    out.extend_from_slice(&magic);
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&log_start_offset.to_be_bytes());
    let crc = crate::format::crc::crc32c(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    assert_eq!(out.len(), CHECKPOINT_LEN);
    out
}

fn decode_with(magic: [u8; 4], buf: &[u8]) -> Result<i64, FormatError> {
    if buf.len() != CHECKPOINT_LEN {
        return Err(FormatError::Corrupt {
            position: buf.len().min(CHECKPOINT_LEN) as u64,
            kind: CorruptKind::Truncated {
                needed: CHECKPOINT_LEN as u64,
                available: buf.len() as u64,
            },
        });
    }
    let field = |at: usize, len: usize| buf.get(at..at.saturating_add(len)).unwrap_or_default();
    if field(MAGIC_OFFSET, 4) != magic {
        return Err(FormatError::Corrupt {
            position: MAGIC_OFFSET as u64,
            kind: CorruptKind::BadMagic {
                got: i64::from(u32::from_be_bytes(to_array(field(MAGIC_OFFSET, 4)))),
                expected: i64::from(u32::from_be_bytes(magic)),
            },
        });
    }
    let stored = u32::from_be_bytes(to_array(field(CRC_OFFSET, 4)));
    let computed = crate::format::crc::crc32c(field(0, CRC_OFFSET));
    if stored != computed {
        return Err(FormatError::Corrupt {
            position: CRC_OFFSET as u64,
            kind: CorruptKind::ChecksumMismatch {
                got: computed,
                expected: stored,
            },
        });
    }
    let version = u16::from_be_bytes(to_array(field(VERSION_OFFSET, 2)));
    if version != VERSION {
        return Err(FormatError::Unsupported(format!(
            "checkpoint version {version}"
        )));
    }
    let log_start_offset = i64::from_be_bytes(to_array(field(LOG_START_OFFSET_OFFSET, 8)));
    if log_start_offset < 0 {
        return Err(FormatError::Corrupt {
            position: LOG_START_OFFSET_OFFSET as u64,
            kind: CorruptKind::Other(format!("negative log start offset {log_start_offset}")),
        });
    }
    Ok(log_start_offset)
}

/// Copies a slice of known length into an array (zero-filled if short, which the
/// callers rule out by checking lengths first).
pub(crate) fn to_array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    for (dst, src) in out.iter_mut().zip(bytes) {
        *dst = *src;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for value in [0, 1, 42, i64::MAX] {
            let bytes = encode(value);
            assert_eq!(bytes.len(), CHECKPOINT_LEN);
            assert_eq!(decode(&bytes), Ok(value));
        }
    }

    #[test]
    fn every_flip_and_truncation_is_detected() {
        let bytes = encode(1234);
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x01;
            assert!(decode(&damaged).is_err(), "flip at {i} went unnoticed");
        }
        for cut in 0..bytes.len() {
            assert!(
                matches!(decode(&bytes[..cut]), Err(FormatError::Corrupt { .. })),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_err());
    }

    #[test]
    fn a_clean_point_is_not_a_log_start_checkpoint() {
        let bytes = encode_clean_point(77);
        assert_eq!(decode_clean_point(&bytes), Ok(77));
        assert!(matches!(
            decode(&bytes),
            Err(FormatError::Corrupt {
                kind: CorruptKind::BadMagic { .. },
                ..
            })
        ));
        assert!(decode_clean_point(&encode(77)).is_err());
    }

    #[test]
    fn garbage_is_bad_magic() {
        let err = decode(&[0xAB; CHECKPOINT_LEN]).expect_err("garbage must not decode");
        assert!(matches!(
            err,
            FormatError::Corrupt {
                kind: CorruptKind::BadMagic { .. },
                ..
            }
        ));
    }
}

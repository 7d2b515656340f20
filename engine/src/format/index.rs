//! Sparse index files of a segment, byte for byte as Kafka writes them.
//!
//! ```text
//! .index      entries of 8 bytes, no header
//!   offset  size  field
//!        0     4  relativeOffset  u32: batch.lastOffset - segment base offset
//!        4     4  position        u32: byte position of that batch in the .log
//!
//! .timeindex  entries of 12 bytes, no header
//!   offset  size  field
//!        0     8  timestamp       i64: max timestamp seen so far in the segment
//!        8     4  relativeOffset  u32: last offset of the batch that first reached it
//! ```
//! All integers big-endian. Entries are strictly increasing in every field.

#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

use crate::error::CorruptKind;

use super::FormatError;

/// Byte position of the relative offset (uint32) in a `.index` entry.
pub const OFFSET_ENTRY_RELATIVE_OFFSET: usize = 0;
/// Byte position of the `.log` file position (uint32) in a `.index` entry.
pub const OFFSET_ENTRY_POSITION: usize = OFFSET_ENTRY_RELATIVE_OFFSET + 4;
/// Bytes of one `.index` entry.
pub const OFFSET_ENTRY_BYTES: usize = OFFSET_ENTRY_POSITION + 4;
/// Byte position of the timestamp (int64) in a `.timeindex` entry.
pub const TIME_ENTRY_TIMESTAMP: usize = 0;
/// Byte position of the relative offset (uint32) in a `.timeindex` entry.
pub const TIME_ENTRY_RELATIVE_OFFSET: usize = TIME_ENTRY_TIMESTAMP + 8;
/// Bytes of one `.timeindex` entry.
pub const TIME_ENTRY_BYTES: usize = TIME_ENTRY_RELATIVE_OFFSET + 4;

const _: () = assert!(OFFSET_ENTRY_BYTES == 8);
const _: () = assert!(TIME_ENTRY_BYTES == 12);

/// One `.index` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct OffsetEntry {
    /// Offset minus the segment's base offset.
    pub relative_offset: u32,
    /// Byte position in the segment's `.log` of the batch holding that offset.
    pub position: u32,
}

/// One `.timeindex` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimeEntry {
    /// The largest timestamp seen up to the entry's offset.
    pub timestamp: i64,
    /// Offset minus the segment's base offset (of the batch that reached `timestamp`).
    pub relative_offset: u32,
}

impl OffsetEntry {
    /// Appends the entry's 8 bytes to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.relative_offset.to_be_bytes());
        out.extend_from_slice(&self.position.to_be_bytes());
    }
}

impl TimeEntry {
    /// Appends the entry's 12 bytes to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.timestamp.to_be_bytes());
        out.extend_from_slice(&self.relative_offset.to_be_bytes());
    }
}

/// The bytes of a `.index` file holding `entries`.
pub fn encode_offset_entries(entries: &[OffsetEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len().saturating_mul(OFFSET_ENTRY_BYTES));
    for entry in entries {
        entry.encode_into(&mut out);
    }
    out
}

/// The bytes of a `.timeindex` file holding `entries`.
pub fn encode_time_entries(entries: &[TimeEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len().saturating_mul(TIME_ENTRY_BYTES));
    for entry in entries {
        entry.encode_into(&mut out);
    }
    out
}

fn partial_entry(len: usize, entry_bytes: usize) -> FormatError {
    let whole = len.saturating_sub(len.checked_rem(entry_bytes).unwrap_or(0));
    FormatError::Corrupt {
        position: whole as u64,
        kind: CorruptKind::Truncated {
            needed: whole.saturating_add(entry_bytes) as u64,
            available: len as u64,
        },
    }
}

/// Decodes a whole `.index` file. A partial trailing entry is an error; the order
/// of entries is checked by the caller, who compares with the log.
pub fn decode_offset_entries(buf: &[u8]) -> Result<Vec<OffsetEntry>, FormatError> {
    if !buf.len().is_multiple_of(OFFSET_ENTRY_BYTES) {
        return Err(partial_entry(buf.len(), OFFSET_ENTRY_BYTES));
    }
    Ok(buf
        .chunks_exact(OFFSET_ENTRY_BYTES)
        .map(|c| {
            let mut rel = [0u8; 4];
            let mut pos = [0u8; 4];
            rel.copy_from_slice(c.get(..4).unwrap_or(&[0; 4]));
            pos.copy_from_slice(c.get(4..8).unwrap_or(&[0; 4]));
            OffsetEntry {
                relative_offset: u32::from_be_bytes(rel),
                position: u32::from_be_bytes(pos),
            }
        })
        .collect())
}

/// Decodes a whole `.timeindex` file (see [`decode_offset_entries`]).
pub fn decode_time_entries(buf: &[u8]) -> Result<Vec<TimeEntry>, FormatError> {
    if !buf.len().is_multiple_of(TIME_ENTRY_BYTES) {
        return Err(partial_entry(buf.len(), TIME_ENTRY_BYTES));
    }
    Ok(buf
        .chunks_exact(TIME_ENTRY_BYTES)
        .map(|c| {
            let mut ts = [0u8; 8];
            let mut rel = [0u8; 4];
            ts.copy_from_slice(c.get(..8).unwrap_or(&[0; 8]));
            rel.copy_from_slice(c.get(8..12).unwrap_or(&[0; 4]));
            TimeEntry {
                timestamp: i64::from_be_bytes(ts),
                relative_offset: u32::from_be_bytes(rel),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let offsets = vec![
            OffsetEntry {
                relative_offset: 3,
                position: 0,
            },
            OffsetEntry {
                relative_offset: 9,
                position: 4100,
            },
        ];
        let bytes = encode_offset_entries(&offsets);
        assert_eq!(bytes.len(), 16);
        assert_eq!(&bytes[..8], &[0, 0, 0, 3, 0, 0, 0, 0]);
        assert_eq!(decode_offset_entries(&bytes).unwrap(), offsets);
        let times = vec![TimeEntry {
            timestamp: -5,
            relative_offset: 7,
        }];
        let bytes = encode_time_entries(&times);
        assert_eq!(bytes.len(), 12);
        assert_eq!(decode_time_entries(&bytes).unwrap(), times);
    }

    #[test]
    fn partial_entry_is_reported_at_its_start() {
        let err = decode_offset_entries(&[0; 13]).unwrap_err();
        assert_eq!(
            err,
            FormatError::Corrupt {
                position: 8,
                kind: CorruptKind::Truncated {
                    needed: 16,
                    available: 13
                }
            }
        );
        assert!(decode_time_entries(&[0; 11]).is_err());
        assert!(decode_time_entries(&[]).unwrap().is_empty());
    }
}

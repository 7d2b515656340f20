//! The recovery point (`recovery-point.checkpoint`) and the clean-shutdown marker
//! (`clean-shutdown`), both in the log directory. Each holds segment summaries: what
//! an open needs to know about a segment without reading its `.log`.
//!
//! ```text
//! file     offset  size  field
//!               0     4  magic      b"SLRP" (recovery point) or b"SLCS" (marker)
//!               4     2  version    u16 = 1
//!               6     8  point      i64: recovery point: segments with a base offset
//!                                   below it are trusted; marker: the active base
//!              14     4  count      u32: summaries that follow
//!              18  72*n  summaries  ascending by base offset, each:
//!                     0     8  base_offset
//!                     8     8  bytes               length of the `.log`
//!                    16     8  next_offset         last offset + 1 (base when empty)
//!                    24     8  records
//!                    32     8  batches
//!                    40     8  max_timestamp       -1 when no timestamp
//!                    48     8  offset_of_max_timestamp
//!                    56     4  offset_index_entries
//!                    60     4  time_index_entries
//!                    64     4  offset_index_crc    CRC-32C of the `.index` bytes
//!                    68     4  time_index_crc      CRC-32C of the `.timeindex` bytes
//!       18+72n        4  crc        u32, CRC-32C of every byte before it
//! ```
//! All integers big-endian. Both are written to a `.tmp` name, fsynced and renamed
//! (docs/design.md section 3b); the recovery point lists every closed segment, the
//! marker only the active one.

use crate::error::CorruptKind;

use super::checkpoint::to_array;
use super::FormatError;

/// File name of the recovery point inside the log directory.
pub const RECOVERY_POINT_NAME: &str = "recovery-point.checkpoint";
/// The recovery point's temp name before its rename.
pub const RECOVERY_POINT_TMP_NAME: &str = "recovery-point.checkpoint.tmp";
/// File name of the clean-shutdown marker inside the log directory.
pub const CLEAN_SHUTDOWN_NAME: &str = "clean-shutdown";
/// The marker's temp name before its rename.
pub const CLEAN_SHUTDOWN_TMP_NAME: &str = "clean-shutdown.tmp";

/// The names of the trust files in a log directory: the recovery point, the
/// clean-shutdown marker and their temporaries.
pub const NAMES: [&str; 4] = [
    RECOVERY_POINT_NAME,
    RECOVERY_POINT_TMP_NAME,
    CLEAN_SHUTDOWN_NAME,
    CLEAN_SHUTDOWN_TMP_NAME,
];

/// First bytes of a recovery point file.
pub const RECOVERY_POINT_MAGIC: [u8; 4] = *b"SLRP";
/// First bytes of a clean-shutdown marker.
pub const CLEAN_SHUTDOWN_MAGIC: [u8; 4] = *b"SLCS";
/// The format version both files carry.
pub const VERSION: u16 = 1;

/// Bytes before the first summary: magic, version, point, count.
pub const HEADER_LEN: usize = 18;
/// Bytes of one summary.
pub const SUMMARY_LEN: usize = 72;
const CRC_LEN: usize = 4;
/// No file holds more summaries than this (a log of this many segments is 2^20 GB at
/// the largest segment size); a larger count is corruption, not an allocation.
pub const SUMMARIES_MAX: u32 = 1 << 24;

/// Bytes of a file holding `summaries` summaries: the most a reader of a log of that
/// many segments reads (a larger file is not read).
pub fn file_bytes_max(summaries: usize) -> u64 {
    let summaries = u64::try_from(summaries).unwrap_or(u64::MAX);
    summaries
        .saturating_mul(SUMMARY_LEN as u64)
        .saturating_add((HEADER_LEN + CRC_LEN) as u64)
}

/// What an open needs to know about one segment without reading its `.log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentSummary {
    /// The segment's base offset (its file name).
    pub base_offset: i64,
    /// Length of its `.log`.
    pub bytes: u64,
    /// Last offset + 1 of its last batch (the base offset when empty).
    pub next_offset: i64,
    /// Records stored (control records included).
    pub records: u64,
    /// Batches stored.
    pub batches: u64,
    /// Max of the batches' maxTimestamp, -1 when none has one.
    pub max_timestamp: i64,
    /// Offset of the batch holding `max_timestamp` (the base offset when none).
    pub offset_of_max_timestamp: i64,
    /// Entries in its `.index`.
    pub offset_index_entries: u32,
    /// Entries in its `.timeindex`.
    pub time_index_entries: u32,
    /// CRC-32C of the `.index` bytes: an index is trusted only if it is exactly what
    /// was fsynced (a plausible but wrong entry would misplace reads silently).
    pub offset_index_crc: u32,
    /// CRC-32C of the `.timeindex` bytes.
    pub time_index_crc: u32,
}

impl SegmentSummary {
    /// The summary's fields agree with each other as Kafka's format requires of
    /// any segment: an empty `.log` holds no batch, no record and no offset; every
    /// batch takes at least a batch header's bytes; records take distinct offsets.
    /// A CRC-valid summary can still break these (a forged or a buggy writer's
    /// file): it describes no segment, and nothing of it may be trusted.
    pub fn check(&self) -> Result<(), String> {
        if self.next_offset < self.base_offset {
            return Err(format!(
                "its summary ends at offset {}, below its base offset",
                self.next_offset
            ));
        }
        let span = u64::try_from(self.next_offset.saturating_sub(self.base_offset)).unwrap_or(0);
        let header = super::batch::HEADER_LEN as u64;
        if (self.bytes == 0) != (self.batches == 0) {
            return Err(format!(
                "its summary has {} bytes and {} batches",
                self.bytes, self.batches
            ));
        }
        if self.bytes == 0 && (self.records > 0 || span > 0) {
            return Err(format!(
                "its summary has no bytes but {} records and {span} offsets",
                self.records
            ));
        }
        if self.batches.saturating_mul(header) > self.bytes {
            return Err(format!(
                "its summary has {} batches in {} bytes",
                self.batches, self.bytes
            ));
        }
        if self.records > span {
            return Err(format!(
                "its summary has {} records in {span} offsets",
                self.records
            ));
        }
        Ok(())
    }
}

/// A decoded file: its point and its summaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryFile {
    /// Recovery point: segments with a base below it are vouched for; marker: the
    /// active segment's base.
    pub point: i64,
    /// Ascending by base offset.
    pub summaries: Vec<SegmentSummary>,
}

/// Which of the two files (they differ only in magic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryKind {
    /// `recovery-point.checkpoint`.
    RecoveryPoint,
    /// `clean-shutdown`.
    CleanShutdown,
}

impl SummaryKind {
    fn magic(self) -> [u8; 4] {
        match self {
            SummaryKind::RecoveryPoint => RECOVERY_POINT_MAGIC,
            SummaryKind::CleanShutdown => CLEAN_SHUTDOWN_MAGIC,
        }
    }

    /// The file's name and its temp name.
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            SummaryKind::RecoveryPoint => (RECOVERY_POINT_NAME, RECOVERY_POINT_TMP_NAME),
            SummaryKind::CleanShutdown => (CLEAN_SHUTDOWN_NAME, CLEAN_SHUTDOWN_TMP_NAME),
        }
    }
}

/// Encodes a file of `kind`.
pub fn encode(kind: SummaryKind, file: &SummaryFile) -> Vec<u8> {
    assert!(file.point >= 0, "negative point");
    assert!(file.summaries.len() <= SUMMARIES_MAX as usize);
    let mut out = Vec::with_capacity(HEADER_LEN + SUMMARY_LEN * file.summaries.len() + CRC_LEN);
    out.extend_from_slice(&kind.magic());
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&file.point.to_be_bytes());
    out.extend_from_slice(&(file.summaries.len() as u32).to_be_bytes());
    for s in &file.summaries {
        out.extend_from_slice(&s.base_offset.to_be_bytes());
        out.extend_from_slice(&s.bytes.to_be_bytes());
        out.extend_from_slice(&s.next_offset.to_be_bytes());
        out.extend_from_slice(&s.records.to_be_bytes());
        out.extend_from_slice(&s.batches.to_be_bytes());
        out.extend_from_slice(&s.max_timestamp.to_be_bytes());
        out.extend_from_slice(&s.offset_of_max_timestamp.to_be_bytes());
        out.extend_from_slice(&s.offset_index_entries.to_be_bytes());
        out.extend_from_slice(&s.time_index_entries.to_be_bytes());
        out.extend_from_slice(&s.offset_index_crc.to_be_bytes());
        out.extend_from_slice(&s.time_index_crc.to_be_bytes());
    }
    let crc = super::crc::crc32c(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    assert_eq!(
        out.len(),
        HEADER_LEN + SUMMARY_LEN * file.summaries.len() + CRC_LEN
    );
    out
}

fn corrupt(position: usize, kind: CorruptKind) -> FormatError {
    FormatError::Corrupt {
        position: position as u64,
        kind,
    }
}

/// Decodes a file of `kind`; any damage is a structured corruption error.
pub fn decode(kind: SummaryKind, buf: &[u8]) -> Result<SummaryFile, FormatError> {
    if buf.len() < HEADER_LEN + CRC_LEN {
        return Err(corrupt(
            buf.len(),
            CorruptKind::Truncated {
                needed: (HEADER_LEN + CRC_LEN) as u64,
                available: buf.len() as u64,
            },
        ));
    }
    let field = |at: usize, len: usize| buf.get(at..at + len).unwrap_or_default();
    if field(0, 4) != kind.magic() {
        return Err(corrupt(
            0,
            CorruptKind::BadMagic {
                got: i64::from(u32::from_be_bytes(to_array(field(0, 4)))),
                expected: i64::from(u32::from_be_bytes(kind.magic())),
            },
        ));
    }
    let count = u32::from_be_bytes(to_array(field(14, 4)));
    if count > SUMMARIES_MAX {
        return Err(corrupt(
            14,
            CorruptKind::Other(format!("{count} summaries exceed {SUMMARIES_MAX}")),
        ));
    }
    let expected_len = HEADER_LEN + SUMMARY_LEN * count as usize + CRC_LEN;
    if buf.len() != expected_len {
        return Err(corrupt(
            buf.len().min(expected_len),
            CorruptKind::Truncated {
                needed: expected_len as u64,
                available: buf.len() as u64,
            },
        ));
    }
    let crc_at = expected_len - CRC_LEN;
    let stored = u32::from_be_bytes(to_array(field(crc_at, CRC_LEN)));
    let computed = super::crc::crc32c(field(0, crc_at));
    if stored != computed {
        return Err(corrupt(
            crc_at,
            CorruptKind::ChecksumMismatch {
                got: computed,
                expected: stored,
            },
        ));
    }
    let version = u16::from_be_bytes(to_array(field(4, 2)));
    if version != VERSION {
        return Err(FormatError::Unsupported(format!(
            "{kind:?} file version {version}"
        )));
    }
    let point = i64::from_be_bytes(to_array(field(6, 8)));
    if point < 0 {
        return Err(corrupt(
            6,
            CorruptKind::Other(format!("negative point {point}")),
        ));
    }
    let mut summaries = Vec::with_capacity(count as usize);
    for i in 0..count as usize {
        let at = HEADER_LEN + i * SUMMARY_LEN;
        let i64_at = |o: usize| i64::from_be_bytes(to_array(field(at + o, 8)));
        let u64_at = |o: usize| u64::from_be_bytes(to_array(field(at + o, 8)));
        let u32_at = |o: usize| u32::from_be_bytes(to_array(field(at + o, 4)));
        let summary = SegmentSummary {
            base_offset: i64_at(0),
            bytes: u64_at(8),
            next_offset: i64_at(16),
            records: u64_at(24),
            batches: u64_at(32),
            max_timestamp: i64_at(40),
            offset_of_max_timestamp: i64_at(48),
            offset_index_entries: u32_at(56),
            time_index_entries: u32_at(60),
            offset_index_crc: u32_at(64),
            time_index_crc: u32_at(68),
        };
        let previous_next = summaries
            .last()
            .map_or(0, |s: &SegmentSummary| s.next_offset);
        let previous_base = summaries.last().map(|s: &SegmentSummary| s.base_offset);
        let sane = summary.base_offset >= 0
            && previous_base.is_none_or(|b| summary.base_offset > b)
            && summary.base_offset >= previous_next
            && summary.next_offset >= summary.base_offset
            && summary.records >= summary.batches
            && (summary.batches == 0) == (summary.bytes == 0)
            && summary.max_timestamp >= -1;
        if !sane {
            return Err(corrupt(
                at,
                CorruptKind::Other(format!("inconsistent segment summary {summary:?}")),
            ));
        }
        summaries.push(summary);
    }
    Ok(SummaryFile { point, summaries })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SummaryFile {
        SummaryFile {
            point: 30,
            summaries: vec![
                SegmentSummary {
                    base_offset: 0,
                    bytes: 140,
                    next_offset: 10,
                    records: 10,
                    batches: 2,
                    max_timestamp: 77,
                    offset_of_max_timestamp: 9,
                    offset_index_entries: 1,
                    time_index_entries: 2,
                    offset_index_crc: 0xDEAD_BEEF,
                    time_index_crc: 7,
                },
                SegmentSummary {
                    base_offset: 12,
                    bytes: 70,
                    next_offset: 20,
                    records: 3,
                    batches: 1,
                    max_timestamp: -1,
                    offset_of_max_timestamp: 12,
                    offset_index_entries: 0,
                    time_index_entries: 0,
                    offset_index_crc: 0,
                    time_index_crc: 0,
                },
            ],
        }
    }

    /// `check` refuses summaries no segment can have; the damage stage's forgeries
    /// of the marker found the first (an empty active segment said to hold a
    /// record) panicking the open before it existed.
    #[test]
    fn check_refuses_summaries_no_segment_has() {
        let empty = SegmentSummary {
            base_offset: 5,
            bytes: 0,
            next_offset: 5,
            records: 0,
            batches: 0,
            max_timestamp: -1,
            offset_of_max_timestamp: 5,
            offset_index_entries: 0,
            time_index_entries: 0,
            offset_index_crc: 0,
            time_index_crc: 0,
        };
        assert_eq!(empty.check(), Ok(()));
        for summary in sample().summaries {
            assert_eq!(summary.check(), Ok(()), "{summary:?}");
        }
        let wrong = [
            SegmentSummary {
                records: 1,
                ..empty
            },
            SegmentSummary {
                next_offset: 6,
                ..empty
            },
            SegmentSummary {
                batches: 1,
                ..empty
            },
            SegmentSummary { bytes: 61, ..empty },
            SegmentSummary {
                next_offset: 4,
                ..empty
            },
            SegmentSummary {
                bytes: 121,
                batches: 2,
                next_offset: 7,
                records: 2,
                ..empty
            },
            SegmentSummary {
                bytes: 61,
                batches: 1,
                next_offset: 7,
                records: 3,
                ..empty
            },
        ];
        for summary in wrong {
            assert!(summary.check().is_err(), "{summary:?}");
        }
        let fits = SegmentSummary {
            bytes: 122,
            batches: 2,
            next_offset: 7,
            records: 2,
            ..empty
        };
        assert_eq!(fits.check(), Ok(()));
    }
    #[test]
    fn round_trip_both_kinds() {
        for kind in [SummaryKind::RecoveryPoint, SummaryKind::CleanShutdown] {
            let bytes = encode(kind, &sample());
            assert_eq!(bytes.len(), HEADER_LEN + 2 * SUMMARY_LEN + CRC_LEN);
            assert_eq!(decode(kind, &bytes), Ok(sample()));
        }
        let empty = SummaryFile {
            point: 0,
            summaries: Vec::new(),
        };
        let bytes = encode(SummaryKind::RecoveryPoint, &empty);
        assert_eq!(decode(SummaryKind::RecoveryPoint, &bytes), Ok(empty));
    }

    #[test]
    fn one_kind_is_not_the_other() {
        let bytes = encode(SummaryKind::RecoveryPoint, &sample());
        assert!(matches!(
            decode(SummaryKind::CleanShutdown, &bytes),
            Err(FormatError::Corrupt {
                position: 0,
                kind: CorruptKind::BadMagic { .. }
            })
        ));
    }

    #[test]
    fn every_flip_and_truncation_is_detected() {
        let bytes = encode(SummaryKind::RecoveryPoint, &sample());
        for i in 0..bytes.len() {
            for bit in [0x01, 0x80] {
                let mut damaged = bytes.clone();
                damaged[i] ^= bit;
                assert!(
                    decode(SummaryKind::RecoveryPoint, &damaged).is_err(),
                    "flip {bit:#x} at {i} went unnoticed"
                );
            }
        }
        for cut in 0..bytes.len() {
            assert!(
                decode(SummaryKind::RecoveryPoint, &bytes[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(SummaryKind::RecoveryPoint, &longer).is_err());
    }

    #[test]
    fn a_huge_count_is_corruption_not_an_allocation() {
        let mut bytes = encode(SummaryKind::RecoveryPoint, &sample());
        bytes[14..18].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            decode(SummaryKind::RecoveryPoint, &bytes),
            Err(FormatError::Corrupt { position: 14, .. })
        ));
    }

    #[test]
    fn inconsistent_summaries_are_rejected_even_with_a_good_crc() {
        let mut file = sample();
        file.summaries[1].base_offset = 5; // overlaps the first segment's offsets
        let bytes = encode(SummaryKind::RecoveryPoint, &file);
        assert!(matches!(
            decode(SummaryKind::RecoveryPoint, &bytes),
            Err(FormatError::Corrupt { position: 90, .. })
        ));
    }
}

//! Zero-copy views of the batches and records of a segment held in memory: what the
//! cleaner needs (keys, offsets, timestamps, null values) without allocating per
//! record. Every batch's length, magic and CRC-32C are checked; a batch that is
//! rewritten (partly kept) is fully decoded by [`crate::format::batch::decode`].

use std::path::Path;

use crate::error::{CorruptKind, Error, Result};
use crate::format::batch::{self, BatchHeader, ATTRIBUTES_OFFSET, CRC_OFFSET, RECORDS_OFFSET};

/// One batch of a segment, checked up to its CRC.
#[derive(Debug, Clone, Copy)]
pub struct BatchView<'a> {
    /// The whole encoded batch.
    pub bytes: &'a [u8],
    /// The batch's fixed header fields.
    pub header: BatchHeader,
    /// Byte position of the batch in its segment.
    pub position: u64,
}

/// The fields of one record that compaction decides on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// The record's absolute offset.
    pub offset: i64,
    /// The record's absolute timestamp.
    pub timestamp: i64,
    /// The record's key (`None`: keyless).
    pub key: Option<&'a [u8]>,
    /// True for a tombstone (a null value).
    pub value_is_null: bool,
    /// The whole encoded record, its length prefix included.
    pub bytes: &'a [u8],
}

impl BatchView<'_> {
    /// True for a control batch.
    pub fn is_control(&self) -> bool {
        self.header.attributes & batch::ATTR_CONTROL != 0
    }

    /// A compressed batch: its records are read through [`super::compressed`].
    pub fn is_compressed(&self) -> bool {
        self.header.attributes & batch::ATTR_COMPRESSION_MASK != 0
    }

    /// The batch's last offset (kept even if its last record was compacted away).
    pub fn last_offset(&self) -> i64 {
        self.header.base_offset + i64::from(self.header.last_offset_delta)
    }
}

/// Splits a segment into checked batch views.
pub fn batches<'a>(path: &Path, base_offset: i64, bytes: &'a [u8]) -> Result<Vec<BatchView<'a>>> {
    split(path, base_offset, bytes, Checksum::Verify)
}

/// [`batches`] of bytes that [`batches`] already accepted: the same immutable
/// bytes (a mapping of a closed segment, which nobody writes) read a second time in
/// one compaction. Every check but the CRC-32C runs again (they cost a few loads per
/// batch); the CRC is recomputed only in debug builds, as an assertion.
pub fn batches_verified<'a>(
    path: &Path,
    base_offset: i64,
    bytes: &'a [u8],
) -> Result<Vec<BatchView<'a>>> {
    split(path, base_offset, bytes, Checksum::Verified)
}

/// Whether [`split`] checks each batch's CRC-32C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checksum {
    Verify,
    /// The caller checked these very bytes before: a debug assertion only.
    Verified,
}

fn split<'a>(
    path: &Path,
    base_offset: i64,
    bytes: &'a [u8],
    checksum: Checksum,
) -> Result<Vec<BatchView<'a>>> {
    let mut out = Vec::new();
    let mut position = 0usize;
    let mut previous_last = base_offset - 1;
    while position < bytes.len() {
        let rest = bytes.get(position..).unwrap_or_default();
        let header = batch::decode_header(rest).map_err(|e| e.at(path, position as u64))?;
        let whole = rest.get(..header.size).ok_or_else(|| {
            Error::corrupt(
                path,
                position as u64,
                CorruptKind::Truncated {
                    needed: header.size as u64,
                    available: rest.len() as u64,
                },
            )
        })?;
        let stored = u32::from_be_bytes(array(whole, CRC_OFFSET));
        let computed =
            || crate::format::crc::crc32c(whole.get(ATTRIBUTES_OFFSET..).unwrap_or_default());
        if checksum == Checksum::Verified {
            debug_assert_eq!(stored, computed(), "{} at byte {position}", path.display());
        } else if stored != computed() {
            return Err(Error::corrupt(
                path,
                (position + CRC_OFFSET) as u64,
                CorruptKind::ChecksumMismatch {
                    got: computed(),
                    expected: stored,
                },
            ));
        }
        if header.base_offset <= previous_last || header.last_offset_delta < 0 {
            return Err(Error::corrupt(
                path,
                position as u64,
                CorruptKind::BaseOffset {
                    got: header.base_offset,
                    previous: previous_last,
                },
            ));
        }
        previous_last = header.last_offset();
        out.push(BatchView {
            bytes: whole,
            header,
            position: position as u64,
        });
        position += header.size;
    }
    Ok(out)
}

/// The records of an uncompressed batch (key, offset, timestamp, null value, and
/// each record's encoded bytes), without copying, read by the format's record
/// decoder as every reader reads them (`walker`). A compressed batch goes
/// through [`super::compressed`].
pub fn records<'a>(
    path: &Path,
    batch: &BatchView<'a>,
    out: &mut Vec<RecordView<'a>>,
) -> Result<()> {
    assert!(
        !batch.is_compressed(),
        "a compressed batch's records are not in place"
    );
    out.clear();
    let at = |e: crate::format::FormatError| e.at(path, batch.position);
    let (checked, _) = crate::format::BatchView::decode_crc_checked(batch.bytes).map_err(at)?;
    let body = batch.bytes.get(RECORDS_OFFSET..).unwrap_or_default();
    let mut records = checked.records();
    let mut start = 0;
    while let Some(record) = records.next() {
        let record = record.map_err(at)?;
        let end = records.consumed_bytes();
        out.push(RecordView {
            offset: checked.offset_of(&record),
            timestamp: checked.timestamp_of(&record),
            key: record.key,
            value_is_null: record.value.is_none(),
            bytes: body.get(start..end).unwrap_or_default(),
        });
        start = end;
    }
    Ok(())
}

fn array<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = bytes.get(at..at + N) {
        out.copy_from_slice(src);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{NewRecord, RecordBatch};

    #[test]
    fn views_agree_with_full_decode() {
        let a = RecordBatch::build(
            10,
            &[
                NewRecord::new(Some(b"k".to_vec()), Some(b"v".to_vec()), 100),
                NewRecord::new(None, Some(b"x".to_vec()), 90),
                NewRecord::new(Some(b"t".to_vec()), None, 120),
            ],
        );
        let b = RecordBatch::control(13, crate::format::ControlKind::Commit, 1, 0, 0, 5);
        let mut bytes = a.encode();
        bytes.extend(b.encode());
        let path = Path::new("seg.log");
        let views = batches(path, 10, &bytes).unwrap();
        assert_eq!(views.len(), 2);
        assert!(!views[0].is_control());
        assert!(views[1].is_control());
        let mut records = Vec::new();
        super::records(path, &views[0], &mut records).unwrap();
        let expected: Vec<_> = a
            .records
            .iter()
            .map(|r| {
                (
                    a.offset_of(r),
                    a.timestamp_of(r),
                    r.key.as_deref(),
                    r.value.is_none(),
                )
            })
            .collect();
        let got: Vec<_> = records
            .iter()
            .map(|r| (r.offset, r.timestamp, r.key, r.value_is_null))
            .collect();
        assert_eq!(got, expected);
        // The records' bytes tile the batch after its header.
        let tiled: Vec<u8> = records.iter().flat_map(|r| r.bytes.to_vec()).collect();
        assert_eq!(&tiled[..], &views[0].bytes[RECORDS_OFFSET..]);
        for (record, decoded) in records.iter().zip(&a.records) {
            assert_eq!(record.bytes.len(), decoded.encoded_len());
        }
        // A flipped byte anywhere in the CRC range is caught.
        for i in ATTRIBUTES_OFFSET..a.encoded_len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x20;
            assert!(batches(path, 10, &damaged).is_err(), "flip at {i}");
        }
        // Base offsets must increase.
        assert!(batches(path, 11, &bytes).is_err());
        assert!(batches_verified(path, 11, &bytes).is_err());
        // A second walk of accepted bytes finds the same batches.
        let again = batches_verified(path, 10, &bytes).unwrap();
        assert_eq!(again.len(), views.len());
        for (a, b) in again.iter().zip(&views) {
            assert_eq!(
                (a.bytes, a.header, a.position),
                (b.bytes, b.header, b.position)
            );
        }
    }

    /// Debug builds still recompute the CRC of bytes said to be verified.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "seg.log at byte 0")]
    fn verified_bytes_are_rechecked_in_debug_builds() {
        let batch = RecordBatch::build(0, &[NewRecord::new(None, Some(b"v".to_vec()), 1)]);
        let mut bytes = batch.encode();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let _ = batches_verified(Path::new("seg.log"), 0, &bytes);
    }
}

//! [`SegmentView`]: the bytes of a segment's `.log` as one shared, immutable buffer
//! ([`FileSystem::map`](crate::fs::FileSystem::map): a read-only mapping of the page
//! cache on the real disk, so reading copies nothing), walked batch by batch. Every
//! length is checked against the segment's end, so a torn tail is reported, never
//! read past. Records read from a view keep slices of it, not copies.

use std::path::Path;

use bytes::Bytes;

use crate::error::{CorruptKind, Error, Result};
use crate::format::batch::{decode_header, BatchHeader, HEADER_LEN};

#[derive(Debug, Clone)]
/// The bytes of one `.log` file (see the module docs).
pub struct SegmentView<'a> {
    path: &'a Path,
    /// Exactly the segment's bytes: `[0, segment.bytes)` of the file.
    bytes: Bytes,
    /// The offsets every batch must lie in, `[base, next)`, when known.
    offsets: Option<(i64, i64)>,
}

impl<'a> SegmentView<'a> {
    /// A view of `bytes`, the content of the file at `path` (named in errors).
    pub fn new(path: &'a Path, bytes: Bytes) -> Self {
        SegmentView {
            path,
            bytes,
            offsets: None,
        }
    }

    /// Every batch must hold offsets in `[base, next)`: the segment's own range. A
    /// scan on open checks it; a segment trusted from its summary was not scanned, so
    /// a damaged base offset (outside the CRC) is caught here, naming this file.
    pub fn with_offsets(mut self, base: i64, next: i64) -> Self {
        self.offsets = Some((base, next));
        self
    }

    /// The file the bytes came from.
    pub fn path(&self) -> &'a Path {
        self.path
    }

    /// The bytes.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// Their length.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The whole batch at `position` and its header (length bounds and magic
    /// checked, not the CRC). Errors name the file and the batch's position.
    pub fn batch_at(&self, position: usize) -> Result<(BatchHeader, &[u8])> {
        assert!(
            position < self.bytes.len(),
            "no batch at the end of a segment"
        );
        let rest = &self.bytes[position..];
        let header = decode_header(&rest[..rest.len().min(HEADER_LEN)])
            .map_err(|e| e.at(self.path, position as u64))?;
        let raw = rest.get(..header.size).ok_or_else(|| {
            Error::corrupt(
                self.path,
                position as u64,
                CorruptKind::Truncated {
                    needed: header.size as u64,
                    available: rest.len() as u64,
                },
            )
        })?;
        if let Some((base, next)) = self.offsets {
            if header.base_offset < base || header.last_offset() >= next {
                return Err(Error::corrupt(
                    self.path,
                    position as u64,
                    CorruptKind::BaseOffset {
                        got: header.base_offset,
                        previous: base.saturating_sub(1),
                    },
                ));
            }
        }
        Ok((header, raw))
    }
}

#[cfg(test)]
mod tests {
    use crate::format::{NewRecord, RecordBatch};

    use super::*;

    #[test]
    fn walks_batches_and_reports_a_cut_one_at_its_position() {
        let mut bytes = Vec::new();
        let mut starts = Vec::new();
        for base in [0i64, 3, 7] {
            starts.push(bytes.len());
            let records: Vec<NewRecord> = (0..3)
                .map(|i| NewRecord::new(Some(vec![i]), Some(vec![i; 40]), 5))
                .collect();
            RecordBatch::build(base, &records).encode_into(&mut bytes);
        }
        let path = Path::new("/p/00000000000000000000.log");
        let whole = SegmentView::new(path, Bytes::from(bytes.clone()));
        let mut position = 0;
        let mut seen = Vec::new();
        while position < whole.len() {
            let (header, raw) = whole.batch_at(position).unwrap();
            assert_eq!(raw.len(), header.size);
            seen.push((position, header.base_offset));
            position += header.size;
        }
        assert_eq!(seen, vec![(starts[0], 0), (starts[1], 3), (starts[2], 7)]);
        for cut in [starts[2] + 1, starts[2] + HEADER_LEN - 1, bytes.len() - 1] {
            let torn = SegmentView::new(path, Bytes::from(bytes[..cut].to_vec()));
            match torn.batch_at(starts[2]) {
                Err(Error::Corrupt {
                    path: p,
                    position,
                    kind: CorruptKind::Truncated { available, .. },
                }) => {
                    assert_eq!(p, path);
                    assert_eq!(position, starts[2] as u64);
                    assert_eq!(available, (cut - starts[2]) as u64);
                }
                other => panic!("cut {cut}: expected Truncated, got {other:?}"),
            }
        }
    }
}

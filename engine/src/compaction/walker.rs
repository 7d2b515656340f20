//! The one record walk of a compaction: every reader of a pass (the full scan's map
//! reader, the incremental pass's reader, the kafka pass's read and the active
//! segment's check) reads a batch's records here, with the format's record decoder
//! ([`crate::format::RecordViews`]: lengths, strictly increasing offset deltas,
//! the declared count, nothing trailing, header keys in UTF-8), each record's key
//! fields only ([`crate::format::RecordKey`]), a compressed batch inflated into one
//! arena the walker reuses from batch to batch. The batch was split and its CRC
//! checked by [`super::view::batches`] first, in these very bytes, so the CRC is
//! not computed again. Errors name the batch's file and position, the same for
//! every reader and both policies.

use std::path::Path;

use crate::error::Result;
use crate::format::FormatError;

use super::view::BatchView;

/// A record's key: in the segment's bytes (it lives as long as they do), or in
/// the walker's arena (a compressed batch's record: valid until the next batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key<'a, 'b> {
    /// A keyless record.
    None,
    /// A key in the segment's bytes.
    Stored(&'a [u8]),
    /// A key in the decompressed records.
    Inflated(&'b [u8]),
}

impl<'a, 'b> Key<'a, 'b> {
    fn of_stored(key: Option<&'a [u8]>) -> Self {
        key.map_or(Key::None, Key::Stored)
    }

    fn of_inflated(key: Option<&'b [u8]>) -> Self {
        key.map_or(Key::None, Key::Inflated)
    }

    /// The key's bytes, wherever they are.
    #[cfg(test)]
    pub fn bytes(&self) -> Option<&[u8]> {
        match *self {
            Key::None => None,
            Key::Stored(key) => Some(key),
            Key::Inflated(key) => Some(key),
        }
    }
}

/// What a reader learns of one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a, 'b> {
    pub key: Key<'a, 'b>,
    /// True for a tombstone (a null value).
    pub value_is_null: bool,
    /// The timestamp the rules read (the batch's max under LogAppendTime).
    pub timestamp: i64,
}

/// The record walk, with its arena for compressed batches.
#[derive(Debug, Default)]
pub struct Walker {
    arena: Vec<u8>,
    /// Bytes of the arena the last compressed batch's records fill.
    inflated: usize,
}

impl Walker {
    /// Calls `each` with every record of `batch` (a batch of `path` that
    /// [`super::view::batches`] accepted), in order; returns the batch's header
    /// fields. The first record that does not decode is the error, naming the
    /// batch's position; the records before it have been handed to `each`.
    pub fn each<'a>(
        &mut self,
        path: &Path,
        batch: &BatchView<'a>,
        each: impl FnMut(Record<'a, '_>),
    ) -> Result<crate::format::BatchView<'a>> {
        self.each_at(path, batch.bytes, batch.position, each)
    }

    /// [`Walker::each`] of the batch at the front of `bytes`, at `position` of
    /// `path` (a batch [`super::view::batches`] accepted).
    pub fn each_at<'a>(
        &mut self,
        path: &Path,
        bytes: &'a [u8],
        position: u64,
        mut each: impl FnMut(Record<'a, '_>),
    ) -> Result<crate::format::BatchView<'a>> {
        let at = |e: FormatError| e.at(path, position);
        let (checked, _) = crate::format::BatchView::decode_crc_checked(bytes).map_err(at)?;
        match checked.inflate_reusing(&mut self.arena).map_err(at)? {
            None => {
                for record in checked.records().keys() {
                    let record = record.map_err(at)?;
                    each(Record {
                        key: Key::of_stored(record.key),
                        value_is_null: record.value_is_null,
                        timestamp: checked.timestamp_at(record.timestamp_delta),
                    });
                }
            }
            Some(len) => {
                self.inflated = len;
                let inflated = self.arena.get(..len).expect("the arena holds the records");
                for record in checked.records_in(inflated).keys() {
                    let record = record.map_err(at)?;
                    each(Record {
                        key: Key::of_inflated(record.key),
                        value_is_null: record.value_is_null,
                        timestamp: checked.timestamp_at(record.timestamp_delta),
                    });
                }
            }
        }
        Ok(checked)
    }

    /// The last compressed batch's decompressed records, taken out of the arena
    /// (the next compressed batch grows a new one): for a reader that keeps them.
    pub fn take_inflated(&mut self) -> Vec<u8> {
        let mut taken = std::mem::take(&mut self.arena);
        taken.truncate(self.inflated);
        self.inflated = 0;
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{CorruptKind, Error};
    use crate::format::{Compression, NewRecord, RecordBatch};

    fn records() -> Vec<NewRecord> {
        vec![
            NewRecord::new(Some(b"k".to_vec()), Some(b"v".to_vec()), 100),
            NewRecord::new(None, Some(b"x".to_vec()), 90),
            NewRecord::new(Some(b"t".to_vec()), None, 120),
        ]
    }

    /// A record as the tests compare it: key, tombstone, timestamp.
    type Seen = (Option<Vec<u8>>, bool, i64);

    fn walk(bytes: &[u8]) -> Result<Vec<Seen>> {
        let path = Path::new("seg.log");
        let mut walker = Walker::default();
        let mut out = Vec::new();
        for batch in super::super::view::batches(path, 0, bytes)? {
            walker.each(path, &batch, |r| {
                out.push((
                    r.key.bytes().map(<[u8]>::to_vec),
                    r.value_is_null,
                    r.timestamp,
                ))
            })?;
        }
        Ok(out)
    }

    #[test]
    fn plain_and_compressed_batches_give_the_same_records() {
        let want: Vec<_> = records()
            .iter()
            .map(|r| (r.key.clone(), r.value.is_none(), r.timestamp))
            .collect();
        let plain = RecordBatch::build(10, &records());
        let mut bytes = plain.encode();
        let second = 10 + i64::from(plain.last_offset_delta) + 1;
        let mut codecs = vec![Compression::None];
        if cfg!(feature = "compression") {
            codecs.push(Compression::Lz4);
        }
        for codec in codecs {
            let mut batch = RecordBatch::build(0, &records());
            batch = batch.with_compression(codec);
            let mut one = batch.encode();
            assert_eq!(walk(&one).unwrap(), want, "{codec:?}");
            // Two batches through one walker: the arena is reused.
            one.extend(
                RecordBatch::build(second, &records())
                    .with_compression(codec)
                    .encode(),
            );
            let twice: Vec<_> = want.iter().chain(&want).cloned().collect();
            assert_eq!(walk(&one).unwrap(), twice, "{codec:?}");
        }
        // LogAppendTime: every record reads the batch's max timestamp.
        bytes.clear();
        RecordBatch::build(0, &records())
            .with_log_append_time(555)
            .encode_into(&mut bytes);
        assert!(walk(&bytes).unwrap().iter().all(|r| r.2 == 555));
    }

    #[test]
    fn a_record_that_does_not_decode_names_its_batch() {
        // Offset deltas must increase: a CRC-valid batch whose second record
        // repeats the first's delta (a forged file) is corrupt at its batch.
        let mut batch = RecordBatch::build(
            0,
            &[
                NewRecord::new(Some(b"a".to_vec()), Some(b"1".to_vec()), 1),
                NewRecord::new(Some(b"b".to_vec()), Some(b"2".to_vec()), 1),
            ],
        );
        batch.records[1].offset_delta = 0;
        let mut bytes = RecordBatch::build(0, &[NewRecord::new(None, None, 0)]).encode();
        let at = bytes.len() as u64;
        batch.base_offset = 1;
        batch.encode_into(&mut bytes);
        match walk(&bytes).unwrap_err() {
            Error::Corrupt {
                position,
                kind: CorruptKind::OffsetDelta { .. },
                ..
            } => assert!(position >= at, "{position} < {at}"),
            other => panic!("{other:?}"),
        }
    }
}

//! The records reads hand out: [`RecordRef`], borrowed, and [`ReadRecords`], the
//! owned result of [`super::Log::read`], one shared buffer per batch rather than two
//! per record.
//!
//! A `ReadRecord` per record holds its key and value as two `Bytes`, and each costs
//! a reference count taken and dropped: four atomic operations and a 112-byte
//! element per record, most of `read`'s time beside the borrowed walk. Here a
//! batch's bytes are one `Bytes` (a slice of the segment's mapping, or the batch's
//! decompressed records), and each record is a 48-byte entry of offsets into it:
//! nothing is allocated or counted per record. [`ReadRecords::iter`] hands the
//! records out borrowed ([`RecordRef`]); [`ReadRecords::get_owned`], `into_iter`
//! and `Vec::from` build owned [`ReadRecord`]s on demand.

use std::fmt;

use bytes::Bytes;

use crate::format::{BatchView, Header, RecordView};

use super::ReadRecord;

/// A record of a [`super::Log::fetch`] or a [`super::Log::read_each`], its key and value borrowed
/// from the bytes it was decoded from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// The record's offset.
    pub offset: i64,
    /// The record's timestamp (ms).
    pub timestamp: i64,
    /// The key (`None`: keyless).
    pub key: Option<&'a [u8]>,
    /// The value (`None`: a tombstone).
    pub value: Option<&'a [u8]>,
    /// Empty (and unallocated) for a record without headers.
    pub headers: Vec<Header>,
    /// True for the marker record of a control batch.
    pub control: bool,
}

impl<'a> RecordRef<'a> {
    /// `record` of `batch`, with its absolute offset and timestamp.
    pub fn of(batch: &BatchView<'_>, record: RecordView<'a>) -> Self {
        RecordRef {
            offset: batch.offset_of(&record),
            timestamp: batch.timestamp_of(&record),
            key: record.key,
            value: record.value,
            headers: record.headers,
            control: batch.is_control(),
        }
    }
}

/// The records of one [`super::Log::read`] (or [`super::Log::read_with`]), in
/// offset order, owned: keys and values are slices of the batches they were read
/// from, kept alive (a batch's bytes, about `max_bytes` of one read in all) until
/// the `ReadRecords` is dropped. Copy out what you keep long after the rest.
#[derive(Clone, Default)]
pub struct ReadRecords {
    /// The bytes of each batch records were taken from.
    batches: Vec<Bytes>,
    /// The index in `batches` of the one [`ReadRecords::push_batch`] pushed last
    /// (a record's own copied buffer does not replace it).
    current: Option<u32>,
    records: Vec<Entry>,
    /// The headers of every record that has any, in record order.
    headers: Vec<Header>,
}

/// Where a key or value lies in its batch's bytes; `len == NONE` is a null.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    len: u32,
}

const NONE: u32 = u32::MAX;

impl Span {
    const NULL: Span = Span {
        start: 0,
        len: NONE,
    };

    fn get(self, bytes: &[u8]) -> Option<&[u8]> {
        if self.len == NONE {
            return None;
        }
        let start = self.start as usize;
        bytes.get(start..start + self.len as usize)
    }

    fn slice(self, bytes: &Bytes) -> Option<Bytes> {
        if self.len == NONE {
            return None;
        }
        let start = self.start as usize;
        Some(bytes.slice(start..start + self.len as usize))
    }
}

/// One record: its offset, timestamp and where its fields lie.
#[derive(Debug, Clone, Copy)]
struct Entry {
    offset: i64,
    timestamp: i64,
    key: Span,
    value: Span,
    batch: u32,
    /// `headers[headers_start..headers_start + headers_len]`.
    headers_start: u32,
    headers_len: u32,
    control: bool,
}

/// Where `field` lies in `bytes`, if it lies inside it at a position a [`Span`]
/// can hold.
fn span_in(bytes: &[u8], field: &[u8]) -> Option<Span> {
    let start = (field.as_ptr() as usize).checked_sub(bytes.as_ptr() as usize)?;
    let end = start.checked_add(field.len())?;
    if end > bytes.len() {
        return None;
    }
    Some(Span {
        start: u32::try_from(start).ok()?,
        len: u32::try_from(field.len()).ok().filter(|&len| len != NONE)?,
    })
}

impl ReadRecords {
    /// No records.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when no record is held.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The offset of the last record, if any.
    pub(crate) fn last_offset(&self) -> Option<i64> {
        self.records.last().map(|entry| entry.offset)
    }

    /// Room for `records` more records.
    pub fn reserve(&mut self, records: usize) {
        self.records.reserve(records);
    }

    /// Record `i`, borrowed.
    pub fn get(&self, i: usize) -> Option<RecordRef<'_>> {
        self.records.get(i).map(|entry| self.record(entry))
    }

    /// Record `i`, owned: its key and value are slices of its batch's bytes.
    pub fn get_owned(&self, i: usize) -> Option<ReadRecord> {
        self.records.get(i).map(|entry| self.owned(entry))
    }

    /// The first record, borrowed.
    pub fn first(&self) -> Option<RecordRef<'_>> {
        self.get(0)
    }

    /// The last record, borrowed.
    pub fn last(&self) -> Option<RecordRef<'_>> {
        self.records.last().map(|entry| self.record(entry))
    }

    /// Every record's offset, in order.
    pub fn offsets(&self) -> impl ExactSizeIterator<Item = i64> + '_ {
        self.records.iter().map(|entry| entry.offset)
    }

    /// The records, borrowed, in order.
    pub fn iter(&self) -> ReadRecordsIter<'_> {
        ReadRecordsIter {
            records: self,
            entries: self.records.iter(),
        }
    }

    /// The records as owned [`ReadRecord`]s.
    pub fn to_vec(&self) -> Vec<ReadRecord> {
        self.records.iter().map(|entry| self.owned(entry)).collect()
    }

    /// Starts a batch whose records' keys and values are slices of `bytes`;
    /// [`ReadRecords::push`] adds them.
    pub fn push_batch(&mut self, bytes: Bytes) {
        self.current = Some(self.batch_index());
        self.batches.push(bytes);
    }

    /// The index the next buffer pushed gets.
    fn batch_index(&self) -> u32 {
        u32::try_from(self.batches.len()).expect("batches of one read fit a u32")
    }

    /// Adds `record`, whose key and value are slices of the bytes of the batch
    /// [`ReadRecords::push_batch`] pushed last. A field outside them (or any field,
    /// before a first batch) is copied into a buffer of the record's own, and the
    /// records after it are still taken from that batch.
    pub fn push(&mut self, record: RecordRef<'_>) {
        self.push_fields(
            record.offset,
            record.timestamp,
            record.key,
            record.value,
            record.headers,
            record.control,
        );
    }

    /// [`ReadRecords::push`] of a record given by its fields.
    #[inline]
    pub(crate) fn push_fields(
        &mut self,
        offset: i64,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: Vec<Header>,
        control: bool,
    ) {
        let within = |field: Option<&[u8]>, bytes: &[u8]| match field {
            None => Some(Span::NULL),
            Some(field) => span_in(bytes, field),
        };
        let spans = self.current.and_then(|batch| {
            let bytes = &self.batches[batch as usize];
            Some((within(key, bytes)?, within(value, bytes)?, batch))
        });
        let (key, value, batch) = match spans {
            Some(spans) => spans,
            None => self.push_copied(key, value),
        };
        let headers_start = self.headers.len();
        let headers_len = headers.len();
        if headers_len > 0 {
            self.headers.extend(headers);
        }
        self.records.push(Entry {
            offset,
            timestamp,
            key,
            value,
            batch,
            headers_start: u32::try_from(headers_start).expect("headers of one read fit a u32"),
            headers_len: u32::try_from(headers_len).expect("headers of one record fit a u32"),
            control,
        });
    }

    /// A buffer of its own holding `key` then `value`; their spans in it, and its
    /// index in `batches`.
    fn push_copied(&mut self, key: Option<&[u8]>, value: Option<&[u8]>) -> (Span, Span, u32) {
        let mut bytes =
            Vec::with_capacity(key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len));
        let mut span = |field: Option<&[u8]>| match field {
            None => Span::NULL,
            Some(field) => {
                let start = u32::try_from(bytes.len()).expect("a record fits a u32");
                bytes.extend_from_slice(field);
                Span {
                    start,
                    len: u32::try_from(field.len()).expect("a record fits a u32"),
                }
            }
        };
        let (key, value) = (span(key), span(value));
        let batch = self.batch_index();
        self.batches.push(Bytes::from(bytes));
        (key, value, batch)
    }

    fn record(&self, entry: &Entry) -> RecordRef<'_> {
        let bytes = &self.batches[entry.batch as usize];
        RecordRef {
            offset: entry.offset,
            timestamp: entry.timestamp,
            key: entry.key.get(bytes),
            value: entry.value.get(bytes),
            headers: self.headers_of(entry).to_vec(),
            control: entry.control,
        }
    }

    fn owned(&self, entry: &Entry) -> ReadRecord {
        let bytes = &self.batches[entry.batch as usize];
        ReadRecord {
            offset: entry.offset,
            timestamp: entry.timestamp,
            key: entry.key.slice(bytes),
            value: entry.value.slice(bytes),
            headers: self.headers_of(entry).to_vec(),
            control: entry.control,
        }
    }

    fn headers_of(&self, entry: &Entry) -> &[Header] {
        let start = entry.headers_start as usize;
        &self.headers[start..start + entry.headers_len as usize]
    }
}

/// The records of a [`ReadRecords`], borrowed.
#[derive(Debug, Clone)]
pub struct ReadRecordsIter<'a> {
    records: &'a ReadRecords,
    entries: std::slice::Iter<'a, Entry>,
}

impl<'a> Iterator for ReadRecordsIter<'a> {
    type Item = RecordRef<'a>;

    fn next(&mut self) -> Option<RecordRef<'a>> {
        self.entries.next().map(|entry| self.records.record(entry))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl DoubleEndedIterator for ReadRecordsIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.entries
            .next_back()
            .map(|entry| self.records.record(entry))
    }
}

impl ExactSizeIterator for ReadRecordsIter<'_> {}

impl<'a> IntoIterator for &'a ReadRecords {
    type Item = RecordRef<'a>;
    type IntoIter = ReadRecordsIter<'a>;

    fn into_iter(self) -> ReadRecordsIter<'a> {
        self.iter()
    }
}

/// The records of a [`ReadRecords`], owned ([`ReadRecords::get_owned`]).
#[derive(Debug)]
pub struct ReadRecordsIntoIter {
    records: ReadRecords,
    next: usize,
}

impl Iterator for ReadRecordsIntoIter {
    type Item = ReadRecord;

    fn next(&mut self) -> Option<ReadRecord> {
        let record = self.records.get_owned(self.next)?;
        self.next += 1;
        Some(record)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.records.len() - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for ReadRecordsIntoIter {}

impl IntoIterator for ReadRecords {
    type Item = ReadRecord;
    type IntoIter = ReadRecordsIntoIter;

    fn into_iter(self) -> ReadRecordsIntoIter {
        ReadRecordsIntoIter {
            records: self,
            next: 0,
        }
    }
}

impl From<ReadRecords> for Vec<ReadRecord> {
    fn from(records: ReadRecords) -> Self {
        records.to_vec()
    }
}

impl FromIterator<ReadRecord> for ReadRecords {
    /// Each record's key and value copied into one buffer of its own.
    fn from_iter<I: IntoIterator<Item = ReadRecord>>(iter: I) -> Self {
        let mut records = ReadRecords::new();
        for record in iter {
            records.push(RecordRef {
                offset: record.offset,
                timestamp: record.timestamp,
                key: record.key.as_deref(),
                value: record.value.as_deref(),
                headers: record.headers,
                control: record.control,
            });
        }
        records
    }
}

impl PartialEq for ReadRecords {
    /// The same records (offsets, timestamps, keys, values, headers, control
    /// flags), wherever their bytes lie.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for ReadRecords {}

impl PartialEq<[ReadRecord]> for ReadRecords {
    fn eq(&self, other: &[ReadRecord]) -> bool {
        self.len() == other.len()
            && self.iter().zip(other).all(|(a, b)| {
                a.offset == b.offset
                    && a.timestamp == b.timestamp
                    && a.key == b.key.as_deref()
                    && a.value == b.value.as_deref()
                    && a.headers == b.headers
                    && a.control == b.control
            })
    }
}

impl PartialEq<Vec<ReadRecord>> for ReadRecords {
    fn eq(&self, other: &Vec<ReadRecord>) -> bool {
        *self == **other
    }
}

impl fmt::Debug for ReadRecords {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record<'a>(offset: i64, key: Option<&'a [u8]>, value: Option<&'a [u8]>) -> RecordRef<'a> {
        RecordRef {
            offset,
            timestamp: offset * 10,
            key,
            value,
            headers: Vec::new(),
            control: false,
        }
    }

    #[test]
    fn records_of_a_batch_are_spans_of_its_bytes_and_others_are_copied() {
        let batch = Bytes::from_static(b"k1v1k2");
        let mut records = ReadRecords::new();
        records.push_batch(batch.clone());
        records.push(record(5, Some(&batch[0..2]), Some(&batch[2..4])));
        records.push(RecordRef {
            headers: vec![Header {
                key: "h".into(),
                value: None,
            }],
            ..record(6, Some(&batch[4..6]), None)
        });
        // Not a slice of the batch: copied.
        records.push(record(8, None, Some(b"elsewhere")));
        assert_eq!(records.len(), 3);
        assert_eq!(records.batches.len(), 2, "one batch, one copied record");
        assert_eq!(records.offsets().collect::<Vec<_>>(), [5, 6, 8]);
        let first = records.get(0).unwrap();
        assert_eq!(
            (first.key, first.value),
            (Some(&b"k1"[..]), Some(&b"v1"[..]))
        );
        assert_eq!(first.key.unwrap().as_ptr(), batch.as_ptr(), "no copy");
        let second = records.get_owned(1).unwrap();
        assert_eq!(
            (second.key.as_deref(), second.value),
            (Some(&b"k2"[..]), None)
        );
        assert_eq!(second.headers.len(), 1);
        assert_eq!(records.last().unwrap().value, Some(&b"elsewhere"[..]));
        assert!(records.get(3).is_none());
        let owned: Vec<ReadRecord> = records.clone().into_iter().collect();
        assert_eq!(records, owned);
        assert_eq!(owned.into_iter().collect::<ReadRecords>(), records);
        assert_eq!(
            records.iter().rev().map(|r| r.offset).collect::<Vec<_>>(),
            [8, 6, 5]
        );
    }

    #[test]
    fn a_copied_record_does_not_end_its_batch() {
        let batch = Bytes::from_static(b"k1k2");
        let mut records = ReadRecords::new();
        records.push_batch(batch.clone());
        records.push(record(0, Some(&batch[0..2]), None));
        records.push(record(1, Some(b"decompressed elsewhere"), None));
        records.push(record(2, Some(&batch[2..4]), None));
        assert_eq!(records.batches.len(), 2, "the batch and one copy");
        assert_eq!(
            records.get(2).unwrap().key.unwrap().as_ptr(),
            batch[2..].as_ptr()
        );
        assert_eq!(
            records.get(1).unwrap().key,
            Some(&b"decompressed elsewhere"[..])
        );
    }

    #[test]
    fn an_empty_field_and_a_null_differ() {
        let batch = Bytes::from_static(b"kv");
        let mut records = ReadRecords::new();
        records.push_batch(batch.clone());
        records.push(record(0, Some(&batch[0..0]), None));
        let only = records.get(0).unwrap();
        assert_eq!((only.key, only.value), (Some(&b""[..]), None));
        let mut other = ReadRecords::new();
        other.push(record(0, None, Some(b"")));
        assert_ne!(records, other);
    }
}

//! [`Fetch`]: one segment's whole batches from an offset, handed out without a
//! copy (a slice of the segment's mapping), as Kafka's fetch hands out a slice of
//! a segment file. Records are decoded in place as a caller iterates them.

use std::path::PathBuf;
use std::sync::OnceLock;

use bytes::Bytes;

use crate::error::Result;
use crate::format::txn_index::AbortedTxn;
use crate::format::{BatchView, FormatError, RecordViews};

use super::read::checked_batches;
use super::records::RecordRef;
use super::Log;

/// Whole batches of one segment, each already checked (length bounds, magic,
/// CRC-32C): [`Log::fetch`].
#[derive(Debug, Clone)]
pub struct Fetch {
    from: i64,
    /// The segment file the batches are in, and the position of the first one
    /// (for errors).
    path: PathBuf,
    position: u64,
    bytes: Bytes,
    next_offset: i64,
    /// The compressed batches' positions in `bytes`, found at the first
    /// [`Fetch::records`] that reaches one, each with its records decompressed
    /// when an iteration first reaches it (and kept: records borrow them). The
    /// fetch itself never decompresses: its bytes are the batches as stored.
    inflated: OnceLock<Vec<Inflated>>,
    /// The aborted transactions overlapping the batches ([`Log::fetch_with`] at
    /// `ReadCommitted`; empty otherwise).
    aborted: Vec<AbortedTxn>,
}

/// One compressed batch of a [`Fetch`]: its position in the fetched bytes and,
/// once reached, its records' bytes (or why they do not decompress).
type Inflated = (usize, OnceLock<Result<Vec<u8>, FormatError>>);

impl super::ReadRecord {
    /// The owned record of `record`, its key and value as slices of `bytes` (the
    /// [`Fetch::bytes`] it was decoded from): no copy. A key or value outside
    /// `bytes` (a record of a compressed batch lives in its decompressed
    /// records) is copied.
    pub fn from_ref(bytes: &Bytes, record: RecordRef<'_>) -> Self {
        let slice = |field: &[u8]| {
            let range = bytes.as_ptr_range();
            let inside = range.start <= field.as_ptr() && field.as_ptr_range().end <= range.end;
            if inside {
                bytes.slice_ref(field)
            } else {
                Bytes::copy_from_slice(field)
            }
        };
        super::ReadRecord {
            offset: record.offset,
            timestamp: record.timestamp,
            key: record.key.map(slice),
            value: record.value.map(slice),
            headers: record.headers,
            control: record.control,
        }
    }
}

impl Log {
    /// The whole batches of one segment whose last offset is >= `from`, in order,
    /// while their total stays within `max_bytes` (always at least one if any
    /// exists), each checked (length bounds, magic, CRC-32C), as one shared slice
    /// of the segment's bytes: nothing is copied. Like Kafka's fetch it never spans
    /// two segments: the caller fetches again from [`Fetch::next_offset`]. Empty
    /// only when no stored batch ends at or after `from`. Below `log_start_offset`
    /// or above `next_offset` is `OffsetOutOfRange`.
    pub fn fetch(&self, from: i64, max_bytes: usize) -> Result<Fetch> {
        self.check_read_from(from)?;
        for found in self.segments_from(from) {
            let (segment, position) = found?;
            let view = self.segment_view(segment)?;
            let checked = checked_batches(&view, position, from, max_bytes, true)?;
            let Some(next_offset) = checked.next_offset else {
                continue;
            };
            return Ok(Fetch {
                from,
                path: view.path().to_path_buf(),
                position: checked.start as u64,
                bytes: view.bytes().slice(checked.start..checked.end),
                next_offset,
                inflated: OnceLock::new(),
                aborted: Vec::new(),
            });
        }
        Ok(Fetch {
            from,
            path: PathBuf::new(),
            position: 0,
            bytes: Bytes::new(),
            next_offset: from,
            inflated: OnceLock::new(),
            aborted: Vec::new(),
        })
    }
}

impl Fetch {
    /// The aborted transactions overlapping the fetched batches, in marker order
    /// (Kafka's `FetchDataInfo.abortedTransactions`): filled by [`Log::fetch_with`]
    /// at `ReadCommitted`, empty otherwise (Kafka sends none at `read_uncommitted`).
    pub fn aborted_transactions(&self) -> &[AbortedTxn] {
        &self.aborted
    }

    pub(super) fn with_aborted(mut self, aborted: Vec<AbortedTxn>) -> Fetch {
        self.aborted = aborted;
        self
    }

    /// This fetch without the batches at or after `end` (batches never straddle a
    /// last stable offset: it is a batch's base offset).
    pub(super) fn truncated_at(mut self, end: i64) -> Result<Fetch> {
        let mut at = 0usize;
        let mut next_offset = self.from;
        while at < self.bytes.len() {
            let (batch, size) = BatchView::decode_crc_checked(&self.bytes[at..])
                .map_err(|e| e.at(&self.path, self.position + at as u64))?;
            if batch.base_offset >= end {
                break;
            }
            at += size;
            next_offset = batch.base_offset + i64::from(batch.last_offset_delta) + 1;
        }
        if at < self.bytes.len() {
            self.bytes = self.bytes.slice(..at);
            self.next_offset = next_offset.max(self.from);
            self.inflated = OnceLock::new();
        }
        Ok(self)
    }

    /// The batches as stored: Kafka's fetch payload.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// True if the fetch holds no batch.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The offset to fetch from next: the last batch's last offset + 1 (or `from`
    /// when empty).
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// The batches, decoded in place. Their CRCs were checked by the fetch; the
    /// rest of each batch is checked here and as its records are iterated.
    pub fn batches(&self) -> impl Iterator<Item = Result<BatchView<'_>>> + '_ {
        let mut at = 0usize;
        std::iter::from_fn(move || {
            if at >= self.bytes.len() {
                return None;
            }
            let position = at;
            let decoded = BatchView::decode_crc_checked(&self.bytes[at..])
                .map_err(|e| e.at(&self.path, self.position + position as u64));
            match decoded {
                Ok((batch, size)) => {
                    at += size;
                    Some(Ok(batch))
                }
                Err(e) => {
                    at = self.bytes.len();
                    Some(Err(e))
                }
            }
        })
    }

    /// The decompressed records of the compressed batch `batch` at `position` of
    /// the fetched bytes, decompressed at the first call for it. Each batch is
    /// decompressed just before its records are iterated, so they are read while
    /// still in the cache (decompressing every batch of the fetch up front left a
    /// fetch's worth of records to be read back from memory); uncompressed fetches
    /// never get here.
    fn inflated_at(
        &self,
        position: usize,
        batch: &BatchView<'_>,
    ) -> Option<&Result<Vec<u8>, FormatError>> {
        let inflated = self.inflated.get_or_init(|| {
            let mut out = Vec::new();
            let mut at = 0usize;
            while let Some(rest) = self.bytes.get(at..).filter(|rest| !rest.is_empty()) {
                let Ok((batch, size)) = BatchView::decode_crc_checked(rest) else {
                    break; // the iterator reports it when it gets there
                };
                if batch.is_compressed() {
                    out.push((at, OnceLock::new()));
                }
                at += size;
            }
            out
        });
        let index = inflated
            .binary_search_by_key(&position, |(at, _)| *at)
            .ok()?;
        let (_, records) = inflated.get(index)?;
        Some(records.get_or_init(|| batch.inflate().map(Option::unwrap_or_default)))
    }

    /// The records with offset >= the fetch's `from`, decoded in place (no copy
    /// and no allocation unless a record has headers), every batch fully checked
    /// as it is reached. Stops after the first error. A compressed batch's records
    /// are decoded in place in its decompressed bytes (each compressed batch is
    /// decompressed once, when an iteration first reaches it, and kept while the
    /// fetch lives), and borrow those.
    pub fn records(&self) -> FetchRecords<'_> {
        FetchRecords {
            fetch: self,
            at: 0,
            batch: None,
            failed: false,
        }
    }
}

/// Iterator over the records of a [`Fetch`].
#[must_use = "records are checked only as far as they are iterated"]
pub struct FetchRecords<'a> {
    fetch: &'a Fetch,
    /// Position in the fetched bytes of the next batch.
    at: usize,
    /// The batch being iterated, its position, and its records.
    batch: Option<(BatchView<'a>, usize, RecordViews<'a>)>,
    failed: bool,
}

impl<'a> Iterator for FetchRecords<'a> {
    type Item = Result<RecordRef<'a>>;

    // Always inlined into the caller's loop, across the crate boundary: out of
    // line, each record goes out through memory and is read back (the borrowed
    // walk then runs at about 0.75x of a buffered read of the same bytes, instead
    // of 1.0x: docs/performance.md, `read/fetch_records`).
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let fetch = self.fetch;
        let error_at = |position: usize| fetch.position + position as u64;
        while !self.failed {
            if let Some((batch, position, records)) = &mut self.batch {
                match records.next() {
                    Some(Ok(record)) => {
                        if batch.offset_of(&record) < fetch.from {
                            continue;
                        }
                        return Some(Ok(RecordRef::of(batch, record)));
                    }
                    Some(Err(e)) => {
                        self.failed = true;
                        return Some(Err(e.at(&fetch.path, error_at(*position))));
                    }
                    None => self.batch = None,
                }
            }
            if self.at >= fetch.bytes.len() {
                return None;
            }
            let position = self.at;
            match BatchView::decode_crc_checked(&fetch.bytes[position..]) {
                Ok((batch, size)) if batch.is_compressed() => {
                    self.at += size;
                    match fetch.inflated_at(position, &batch) {
                        Some(Ok(inflated)) => {
                            self.batch = Some((batch, position, batch.records_in(inflated)));
                        }
                        Some(Err(e)) => {
                            self.failed = true;
                            return Some(Err(e.clone().at(&fetch.path, error_at(position))));
                        }
                        None => unreachable!("every compressed batch of the fetch is inflated"),
                    }
                }
                Ok((batch, size)) => {
                    self.at += size;
                    self.batch = Some((batch, position, batch.records()));
                }
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e.at(&fetch.path, error_at(position))));
                }
            }
        }
        None
    }
}

//! Records inside a v2 batch.
//!
//! ```text
//! length          varint   bytes after this field
//! attributes      i8       unused, 0
//! timestampDelta  varlong  relative to the batch's baseTimestamp
//! offsetDelta     varint   relative to the batch's baseOffset
//! keyLength       varint   -1 for a null key
//! key             bytes
//! valueLength     varint   -1 for a null value (a tombstone)
//! value           bytes
//! headerCount     varint
//!   headerKeyLength varint, headerKey (UTF-8), headerValueLength varint (-1 null), value
//! ```

use crate::error::CorruptKind;

use super::varint::{get_varint, get_varlong, put_varint, put_varlong, varlong_len};

/// A record header: a string key and optional bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Header {
    /// The header's name.
    pub key: String,
    /// The header's value; `None` is Kafka's null.
    pub value: Option<Vec<u8>>,
}

/// A record a caller asks to append: the log assigns its offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRecord {
    /// The record's key; `None` is a keyless record (compaction keeps every keyless record).
    pub key: Option<Vec<u8>>,
    /// The record's value; `None` is a tombstone (it deletes the key when compaction runs).
    pub value: Option<Vec<u8>>,
    /// The record's timestamp in milliseconds (Kafka's `CreateTime`); retention and the time index use it.
    pub timestamp: i64,
    /// The record's headers, stored as given.
    pub headers: Vec<Header>,
}

impl NewRecord {
    /// A record with `key`, `value` and `timestamp` and no headers.
    pub fn new(key: Option<Vec<u8>>, value: Option<Vec<u8>>, timestamp: i64) -> Self {
        NewRecord {
            key,
            value,
            timestamp,
            headers: Vec::new(),
        }
    }
}

/// A record as stored in a batch (offset and timestamp relative to the batch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Record attributes (unused by Kafka, always 0).
    pub attributes: i8,
    /// Timestamp minus the batch's `base_timestamp`.
    pub timestamp_delta: i64,
    /// Offset minus the batch's `base_offset`.
    pub offset_delta: i32,
    /// The key; `None` is a keyless record.
    pub key: Option<Vec<u8>>,
    /// The value; `None` is a tombstone.
    pub value: Option<Vec<u8>>,
    /// The headers.
    pub headers: Vec<Header>,
}

/// The marker a control record carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ControlKind {
    /// The transaction was aborted.
    Abort,
    /// The transaction was committed.
    Commit,
}

impl ControlKind {
    fn code(self) -> i16 {
        match self {
            ControlKind::Abort => 0,
            ControlKind::Commit => 1,
        }
    }
}

fn bytes_len(field: Option<&[u8]>) -> usize {
    match field {
        None => varlong_len(-1),
        Some(b) => varlong_len(b.len() as i64) + b.len(),
    }
}

fn put_bytes(out: &mut Vec<u8>, field: Option<&[u8]>) {
    match field {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, i32::try_from(b.len()).expect("field too large"));
            out.extend_from_slice(b);
        }
    }
}

/// A record's fields, borrowed: the one encoder behind [`Record::encode_into`] and
/// [`RecordView::encode_with_timestamp_delta`], so both give the same bytes; and,
/// with its headers as the decoder makes them (`H`), what [`decode_with`] returns.
struct Parts<'a, H = &'a [Header]> {
    attributes: i8,
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
    headers: H,
}

impl Parts<'_> {
    fn body_len(&self) -> usize {
        1 + varlong_len(self.timestamp_delta)
            + varlong_len(i64::from(self.offset_delta))
            + bytes_len(self.key)
            + bytes_len(self.value)
            + varlong_len(self.headers.len() as i64)
            + self
                .headers
                .iter()
                .map(|h| {
                    varlong_len(h.key.len() as i64) + h.key.len() + bytes_len(h.value.as_deref())
                })
                .sum::<usize>()
    }

    fn encoded_len(&self) -> usize {
        let body = self.body_len();
        varlong_len(body as i64) + body
    }

    fn encode_into(&self, out: &mut Vec<u8>) {
        let start = out.len();
        put_varint(
            out,
            i32::try_from(self.body_len()).expect("record too large"),
        );
        out.push(self.attributes as u8);
        put_varlong(out, self.timestamp_delta);
        put_varint(out, self.offset_delta);
        put_bytes(out, self.key);
        put_bytes(out, self.value);
        put_varint(
            out,
            i32::try_from(self.headers.len()).expect("too many headers"),
        );
        for header in self.headers {
            put_varint(
                out,
                i32::try_from(header.key.len()).expect("header too large"),
            );
            out.extend_from_slice(header.key.as_bytes());
            put_bytes(out, header.value.as_deref());
        }
        debug_assert_eq!(out.len() - start, self.encoded_len());
    }
}

/// The signed value of a zigzag-encoded one.
#[inline(always)]
fn unzigzag(raw: u64) -> i64 {
    ((raw >> 1) as i64) ^ -((raw & 1) as i64)
}

/// A cursor over a record's bytes that never reads out of bounds.
struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    /// The raw (still zigzag-encoded) value of a varint of at most two bytes, the
    /// common case in records (attributes aside, every field below 8192), decoded
    /// inline; `None` for a longer or truncated one.
    #[inline(always)]
    fn short_varint(&mut self) -> Option<u64> {
        let rest = self.buf.get(self.at..)?;
        match *rest {
            [b0, ..] if b0 < 0x80 => {
                self.at += 1;
                Some(u64::from(b0))
            }
            [b0, b1, ..] if b1 < 0x80 => {
                self.at += 2;
                Some(u64::from(b0 & 0x7f) | u64::from(b1) << 7)
            }
            _ => None,
        }
    }

    #[inline(always)]
    fn varint(&mut self) -> Result<i32, CorruptKind> {
        match self.short_varint() {
            // Two bytes hold at most 14 bits: always a valid i32.
            Some(raw) => Ok(unzigzag(raw) as i32),
            None => self.long_varint(),
        }
    }

    #[inline(always)]
    fn varlong(&mut self) -> Result<i64, CorruptKind> {
        match self.short_varint() {
            Some(raw) => Ok(unzigzag(raw)),
            None => self.long_varlong(),
        }
    }

    #[inline(never)]
    fn long_varint(&mut self) -> Result<i32, CorruptKind> {
        let (v, used) = get_varint(self.buf.get(self.at..).unwrap_or_default())?;
        self.at += used;
        Ok(v)
    }

    #[inline(never)]
    fn long_varlong(&mut self) -> Result<i64, CorruptKind> {
        let (v, used) = get_varlong(self.buf.get(self.at..).unwrap_or_default())?;
        self.at += used;
        Ok(v)
    }

    #[inline(always)]
    fn take(&mut self, n: usize) -> Result<&'a [u8], CorruptKind> {
        let Some(end) = self.at.checked_add(n) else {
            return Err(CorruptKind::Field("length"));
        };
        // `let else`, not `ok_or`: an error built eagerly is dropped on every
        // successful take, and `CorruptKind`'s drop glue cost ~5% of record iteration.
        let Some(bytes) = self.buf.get(self.at..end) else {
            return Err(CorruptKind::Truncated {
                needed: end as u64,
                available: self.buf.len() as u64,
            });
        };
        self.at = end;
        Ok(bytes)
    }

    #[inline(always)]
    fn nullable(&mut self, what: &'static str) -> Result<Option<&'a [u8]>, CorruptKind> {
        match self.varint()? {
            -1 => Ok(None),
            n if n < 0 => Err(CorruptKind::Field(what)),
            n => Ok(Some(self.take(n as usize)?)),
        }
    }
}

impl Record {
    /// The control record Kafka writes for a transaction marker: key
    /// (version i16 = 0, type i16), value (version i16 = 0, coordinatorEpoch i32).
    pub fn control(kind: ControlKind, coordinator_epoch: i32) -> Record {
        let mut key = Vec::with_capacity(4);
        key.extend_from_slice(&0i16.to_be_bytes());
        key.extend_from_slice(&kind.code().to_be_bytes());
        let mut value = Vec::with_capacity(6);
        value.extend_from_slice(&0i16.to_be_bytes());
        value.extend_from_slice(&coordinator_epoch.to_be_bytes());
        Record {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta: 0,
            key: Some(key),
            value: Some(value),
            headers: Vec::new(),
        }
    }

    /// The marker kind, if this record's key is a well-formed control key.
    pub fn control_kind(&self) -> Option<ControlKind> {
        match self.key.as_deref() {
            Some([0, 0, 0, 0]) => Some(ControlKind::Abort),
            Some([0, 0, 0, 1]) => Some(ControlKind::Commit),
            _ => None,
        }
    }

    fn parts(&self) -> Parts<'_> {
        Parts {
            attributes: self.attributes,
            timestamp_delta: self.timestamp_delta,
            offset_delta: self.offset_delta,
            key: self.key.as_deref(),
            value: self.value.as_deref(),
            headers: &self.headers,
        }
    }

    /// Bytes this record takes, its length prefix included.
    pub fn encoded_len(&self) -> usize {
        self.parts().encoded_len()
    }

    /// Appends the record's encoding (length prefix included) to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        self.parts().encode_into(out);
    }

    /// Decodes one record from the front of `buf`: (record, bytes used).
    pub fn decode(buf: &[u8]) -> Result<(Record, usize), CorruptKind> {
        let (view, used) = RecordView::decode(buf)?;
        Ok((view.into_record(), used))
    }
}

/// A record decoded in place: its key and value borrow the buffer it was decoded
/// from, so decoding allocates nothing unless the record has headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// See [`Record::attributes`].
    pub attributes: i8,
    /// See [`Record::timestamp_delta`].
    pub timestamp_delta: i64,
    /// See [`Record::offset_delta`].
    pub offset_delta: i32,
    /// See [`Record::key`].
    pub key: Option<&'a [u8]>,
    /// See [`Record::value`].
    pub value: Option<&'a [u8]>,
    /// Owned: headers are rare, and an empty `Vec` does not allocate.
    pub headers: Vec<Header>,
}

/// One header at `c`: its key (checked for UTF-8) and value, borrowed.
#[inline(always)]
fn header_at<'a>(c: &mut Cursor<'a>) -> Result<(&'a str, Option<&'a [u8]>), CorruptKind> {
    let key_len = c.varint()?;
    if key_len < 0 {
        return Err(CorruptKind::Field("header key length"));
    }
    let key = std::str::from_utf8(c.take(key_len as usize)?)
        .map_err(|_| CorruptKind::Field("header key utf-8"))?;
    let value = c.nullable("header value length")?;
    Ok((key, value))
}

/// The `count` (> 0) headers at `c`: rare, so kept out of the record's hot path.
#[inline(never)]
fn decode_headers(c: &mut Cursor<'_>, count: i32) -> Result<Vec<Header>, CorruptKind> {
    let mut headers = Vec::new();
    for _ in 0..count {
        let (key, value) = header_at(c)?;
        headers.push(Header {
            key: key.to_string(),
            value: value.map(<[u8]>::to_vec),
        });
    }
    Ok(headers)
}

/// The `count` (> 0) headers at `c` checked as [`decode_headers`] checks them,
/// nothing kept.
#[inline(never)]
fn check_headers(c: &mut Cursor<'_>, count: i32) -> Result<(), CorruptKind> {
    for _ in 0..count {
        header_at(c)?;
    }
    Ok(())
}

/// Decodes one record from the front of `buf`: its fields with what `headers`
/// makes of its `count` (> 0) headers (`H::default()` for none), and the bytes used.
/// Checks every length against the record's own length prefix; `headers` reads
/// exactly the headers' bytes or fails.
#[inline(always)]
fn decode_with<'a, H: Default>(
    buf: &'a [u8],
    headers: impl FnOnce(&mut Cursor<'a>, i32) -> Result<H, CorruptKind>,
) -> Result<(Parts<'a, H>, usize), CorruptKind> {
    let mut outer = Cursor { buf, at: 0 };
    let length = outer.varint()?;
    if length < 0 {
        return Err(CorruptKind::Field("record length"));
    }
    let body = outer.take(length as usize)?;
    let mut c = Cursor { buf: body, at: 0 };
    let Some(&attributes) = c.take(1)?.first() else {
        return Err(CorruptKind::Field("attributes"));
    };
    let attributes = attributes as i8;
    let timestamp_delta = c.varlong()?;
    let offset_delta = c.varint()?;
    let key = c.nullable("key length")?;
    let value = c.nullable("value length")?;
    let count = c.varint()?;
    if count < 0 {
        return Err(CorruptKind::Field("header count"));
    }
    let headers = if count == 0 {
        H::default()
    } else {
        headers(&mut c, count)?
    };
    if c.at != body.len() {
        return Err(CorruptKind::Field("record length mismatch"));
    }
    Ok((
        Parts {
            attributes,
            timestamp_delta,
            offset_delta,
            key,
            value,
            headers,
        },
        outer.at,
    ))
}

/// What a walk over keys learns of a record ([`RecordKey::decode`]): decoded
/// with every check of [`RecordView::decode`] (headers read and their keys
/// checked for UTF-8), but only these fields kept, so nothing is built or
/// copied for the rest (the compaction's record walk).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordKey<'a> {
    /// See [`Record::timestamp_delta`].
    pub timestamp_delta: i64,
    /// See [`Record::offset_delta`].
    pub offset_delta: i32,
    /// See [`Record::key`].
    pub key: Option<&'a [u8]>,
    /// True for a tombstone (a null value).
    pub value_is_null: bool,
}

impl<'a> RecordKey<'a> {
    /// Decodes one record from the front of `buf`: (its key fields, bytes used),
    /// with the same checks and errors as [`RecordView::decode`].
    #[inline(always)]
    pub fn decode(buf: &'a [u8]) -> Result<(RecordKey<'a>, usize), CorruptKind> {
        let (fields, used) = decode_with(buf, check_headers)?;
        Ok((
            RecordKey {
                timestamp_delta: fields.timestamp_delta,
                offset_delta: fields.offset_delta,
                key: fields.key,
                value_is_null: fields.value.is_none(),
            },
            used,
        ))
    }
}

impl<'a> RecordView<'a> {
    /// Decodes one record from the front of `buf`: (record, bytes used). Checks every
    /// length against the record's own length prefix and header keys for UTF-8.
    // Always inlined into the record iterators: returned through memory, the
    // ~90-byte result was copied once more per record.
    #[inline(always)]
    pub fn decode(buf: &'a [u8]) -> Result<(RecordView<'a>, usize), CorruptKind> {
        let (fields, used) = decode_with(buf, decode_headers)?;
        Ok((
            RecordView {
                attributes: fields.attributes,
                timestamp_delta: fields.timestamp_delta,
                offset_delta: fields.offset_delta,
                key: fields.key,
                value: fields.value,
                headers: fields.headers,
            },
            used,
        ))
    }

    /// Appends this record's encoding with `timestamp_delta` in place of its own:
    /// the bytes [`Record::encode_into`] gives for the same record so changed,
    /// without copying the key and value out first (the `kafka` compaction policy's
    /// rebuilt batches, whose base timestamp moves).
    pub fn encode_with_timestamp_delta(&self, timestamp_delta: i64, out: &mut Vec<u8>) {
        Parts {
            attributes: self.attributes,
            timestamp_delta,
            offset_delta: self.offset_delta,
            key: self.key,
            value: self.value,
            headers: self.headers.as_slice(),
        }
        .encode_into(out);
    }

    /// The owned record (copies the key and value).
    pub fn into_record(self) -> Record {
        Record {
            attributes: self.attributes,
            timestamp_delta: self.timestamp_delta,
            offset_delta: self.offset_delta,
            key: self.key.map(<[u8]>::to_vec),
            value: self.value.map(<[u8]>::to_vec),
            headers: self.headers,
        }
    }
}

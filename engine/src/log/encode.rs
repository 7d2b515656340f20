//! Encodes a data batch straight from the caller's [`NewRecord`]s into a reused
//! buffer: byte for byte what `RecordBatch::build(base, records).encode()` gives,
//! without cloning every key and value into an intermediate `RecordBatch` first
//! (the append hot path). A compressed batch's records are encoded into a scratch
//! buffer and compressed behind the header: no uncompressed batch is framed or
//! checksummed on the way.

use crate::format::batch::{
    ATTRIBUTES_OFFSET, BATCH_BYTES_MAX, CRC_OFFSET, HEADER_LEN, LENGTH_OFFSET, LOG_OVERHEAD,
    MAGIC_V2, MAX_TIMESTAMP_OFFSET, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
    NO_SEQUENCE, NO_TIMESTAMP,
};
use crate::format::timestamp_type::ATTR_LOG_APPEND_TIME;
use crate::format::varint::{put_varint, varlong_len};
use crate::format::{Compression, NewRecord};

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
            put_varint(out, i32::try_from(b.len()).expect("field length checked"));
            out.extend_from_slice(b);
        }
    }
}

fn body_len(record: &NewRecord, timestamp_delta: i64, offset_delta: i64) -> usize {
    1 + varlong_len(timestamp_delta)
        + varlong_len(offset_delta)
        + bytes_len(record.key.as_deref())
        + bytes_len(record.value.as_deref())
        + varlong_len(record.headers.len() as i64)
        + record
            .headers
            .iter()
            .map(|h| varlong_len(h.key.len() as i64) + h.key.len() + bytes_len(h.value.as_deref()))
            .sum::<usize>()
}

/// Bytes of the batch [`encode_batch`] writes.
pub fn encoded_len(records: &[NewRecord]) -> usize {
    let base_timestamp = records.first().map_or(0, |r| r.timestamp);
    HEADER_LEN
        + records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let body = body_len(r, r.timestamp.wrapping_sub(base_timestamp), i as i64);
                varlong_len(body as i64) + body
            })
            .sum::<usize>()
}

/// Appends the data batch at `base_offset` holding `records` (non-empty; timestamps
/// >= -1; sizes checked by the caller) to `out`.
#[cfg(test)]
pub fn encode_batch(base_offset: i64, records: &[NewRecord], out: &mut Vec<u8>) {
    encode_batch_checked(base_offset, records, out).expect("records checked by the caller");
}

/// Appends the data batch at `base_offset` holding `records` (non-empty) to `out`,
/// making [`super::write::check_records`]'s checks as it encodes (one pass over the
/// records: the header's length and max timestamp are written once the records
/// are); the batch's size and max timestamp. On [`Refused`], `out` is as it was.
pub fn encode_batch_checked(
    base_offset: i64,
    records: &[NewRecord],
    out: &mut Vec<u8>,
) -> Result<(usize, i64), Refused> {
    assert!(!records.is_empty());
    let start = out.len();
    put_header(base_offset, records, 0, NO_TIMESTAMP, HEADER_LEN, out);
    let max_timestamp = match encode_records_checked(records, HEADER_LEN, out) {
        Ok(max_timestamp) => max_timestamp,
        Err(refused) => {
            out.truncate(start);
            return Err(refused);
        }
    };
    let total = out.len() - start;
    assert!(total <= BATCH_BYTES_MAX);
    patch_length(start, out);
    out[start + MAX_TIMESTAMP_OFFSET..start + MAX_TIMESTAMP_OFFSET + 8]
        .copy_from_slice(&max_timestamp.to_be_bytes());
    seal(start, out);
    Ok((total, max_timestamp))
}

/// [`encode_batch_checked`] with the records compressed with `codec` and, given
/// `log_append_time`, stamped LogAppendTime at it: byte for byte what
/// [`encode_batch`] then [`crate::format::batch::reframe`] give, without writing
/// (and checksumming) the uncompressed batch first. `plain` is scratch for the
/// records before compression; the checks (and `BATCH_BYTES_MAX`) apply to the
/// uncompressed batch, as [`super::write::check_records`] always did. The batch's
/// max timestamp (the stamp, under LogAppendTime). On [`Refused`], `out` is as it
/// was.
pub fn encode_compressed_batch(
    base_offset: i64,
    records: &[NewRecord],
    codec: Compression,
    log_append_time: Option<i64>,
    plain: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<i64, Refused> {
    assert!(!records.is_empty());
    plain.clear();
    let create_max = encode_records_checked(records, HEADER_LEN, plain)?;
    assert!(plain.len() + HEADER_LEN <= BATCH_BYTES_MAX);
    let mut attributes = codec.id();
    let max_timestamp = match log_append_time {
        Some(stamp) => {
            attributes |= ATTR_LOG_APPEND_TIME;
            stamp
        }
        None => create_max,
    };
    let start = out.len();
    // The length is written once the payload is compressed.
    put_header(
        base_offset,
        records,
        attributes,
        max_timestamp,
        HEADER_LEN,
        out,
    );
    codec.compress_into(plain, out);
    patch_length(start, out);
    seal(start, out);
    Ok(max_timestamp)
}

/// Writes the length field of the batch at `start` of `out` (it ends at the end).
fn patch_length(start: usize, out: &mut [u8]) {
    let length = i32::try_from(out.len() - start - LOG_OVERHEAD).expect("batch too large");
    out[start + LENGTH_OFFSET..start + LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
}

/// Appends the header of the data batch at `base_offset` holding `records`, its
/// CRC zero ([`seal`] writes it), `total` bytes long.
fn put_header(
    base_offset: i64,
    records: &[NewRecord],
    attributes: i16,
    max_timestamp: i64,
    total: usize,
    out: &mut Vec<u8>,
) {
    let base_timestamp = records.first().map_or(0, |r| r.timestamp);
    let length = i32::try_from(total - LOG_OVERHEAD).expect("batch size checked");
    let last_offset_delta = i32::try_from(records.len() - 1).expect("record count checked");
    out.extend_from_slice(&base_offset.to_be_bytes());
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(&NO_PARTITION_LEADER_EPOCH.to_be_bytes());
    out.push(MAGIC_V2 as u8);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&attributes.to_be_bytes());
    out.extend_from_slice(&last_offset_delta.to_be_bytes());
    out.extend_from_slice(&base_timestamp.to_be_bytes());
    out.extend_from_slice(&max_timestamp.to_be_bytes());
    out.extend_from_slice(&NO_PRODUCER_ID.to_be_bytes());
    out.extend_from_slice(&NO_PRODUCER_EPOCH.to_be_bytes());
    out.extend_from_slice(&NO_SEQUENCE.to_be_bytes());
    out.extend_from_slice(&(last_offset_delta + 1).to_be_bytes());
}

/// Why [`encode_records_checked`] stopped: a record [`super::write::check_records`]
/// refuses (a timestamp below -1, or a batch over `BATCH_BYTES_MAX`). The caller
/// asks `check_records` for the error, so the message is the one it always gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused;

/// Appends `records`, encoded back to back (deltas from the first's timestamp),
/// making [`super::write::check_records`]'s checks on the way, in the same pass:
/// an append touches each caller's record once (measured with `perf` on the lz4
/// append of 300,000 records, the separate checking pass cost 3.4-3.7 ms of about
/// 100, most of it cache misses on the records themselves). Returns the largest
/// timestamp.
/// Stops at the first record that breaks a rule, or once the records encoded so
/// far (plus `overhead`, the batch header) exceed `BATCH_BYTES_MAX`: no refused
/// batch is ever encoded in full. On `Err`, `out` holds a partial encoding.
pub(crate) fn encode_records_checked(
    records: &[NewRecord],
    overhead: usize,
    out: &mut Vec<u8>,
) -> Result<i64, Refused> {
    let start = out.len();
    let base_timestamp = records.first().map_or(0, |r| r.timestamp);
    let mut max_timestamp = NO_TIMESTAMP;
    for (i, record) in records.iter().enumerate() {
        if record.timestamp < NO_TIMESTAMP {
            return Err(Refused);
        }
        max_timestamp = max_timestamp.max(record.timestamp);
        let timestamp_delta = record.timestamp.wrapping_sub(base_timestamp);
        let body = body_len(record, timestamp_delta, i as i64);
        if body > BATCH_BYTES_MAX {
            return Err(Refused);
        }
        put_record(out, record, timestamp_delta, i as i32, body);
        if out.len() - start + overhead > BATCH_BYTES_MAX {
            return Err(Refused);
        }
    }
    Ok(max_timestamp)
}

/// Up to 32 bytes of varints built on the stack and appended to a vector at once:
/// one capacity check for a record's leading fields instead of one per byte.
struct Fields {
    buf: [u8; 32],
    len: usize,
}

impl Fields {
    fn new() -> Fields {
        Fields {
            buf: [0; 32],
            len: 0,
        }
    }

    #[inline]
    fn varlong(&mut self, value: i64) {
        let mut v = ((value << 1) ^ (value >> 63)) as u64;
        while v >= 0x80 {
            self.buf[self.len] = (v as u8) | 0x80;
            self.len += 1;
            v >>= 7;
        }
        self.buf[self.len] = v as u8;
        self.len += 1;
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// A record: its body's length `body` ([`body_len`]), then the body.
/// The fields before the key (at most 5 + 1 + 10 + 5 + 5 bytes) go in one
/// append, and so do the value's length and the header count around the value.
#[inline]
fn put_record(
    out: &mut Vec<u8>,
    record: &NewRecord,
    timestamp_delta: i64,
    offset_delta: i32,
    body: usize,
) {
    let key = record.key.as_deref();
    let value = record.value.as_deref();
    let mut head = Fields::new();
    out.reserve(body + 5);
    head.varlong(i64::from(i32::try_from(body).expect("record size checked")));
    head.buf[head.len] = 0; // attributes
    head.len += 1;
    head.varlong(timestamp_delta);
    head.varlong(i64::from(offset_delta));
    head.varlong(key.map_or(-1, |k| {
        i64::from(i32::try_from(k.len()).expect("field length checked"))
    }));
    out.extend_from_slice(head.bytes());
    if let Some(key) = key {
        out.extend_from_slice(key);
    }
    let mut mid = Fields::new();
    mid.varlong(value.map_or(-1, |v| {
        i64::from(i32::try_from(v.len()).expect("field length checked"))
    }));
    out.extend_from_slice(mid.bytes());
    if let Some(value) = value {
        out.extend_from_slice(value);
    }
    put_varint(out, record.headers.len() as i32);
    for header in &record.headers {
        put_varint(out, header.key.len() as i32);
        out.extend_from_slice(header.key.as_bytes());
        put_bytes(out, header.value.as_deref());
    }
}

/// Writes the CRC-32C of the batch at `start` of `out` (attributes to the end).
fn seal(start: usize, out: &mut [u8]) {
    let crc = crate::format::crc::crc32c(&out[start + ATTRIBUTES_OFFSET..]);
    out[start + CRC_OFFSET..start + CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Header, RecordBatch};

    #[test]
    fn same_bytes_as_record_batch_build() {
        let mut records = Vec::new();
        for i in 0..300i64 {
            let mut r = NewRecord::new(
                (i % 3 != 0).then(|| vec![i as u8; (i % 17) as usize]),
                (i % 5 != 0).then(|| vec![7; (i * 13 % 400) as usize]),
                if i % 11 == 0 { -1 } else { 1_000_000 - i * 977 },
            );
            if i % 4 == 0 {
                r.headers.push(Header {
                    key: format!("h{i}"),
                    value: (i % 8 == 0).then(|| b"x".to_vec()),
                });
            }
            records.push(r);
        }
        for n in [1, 2, 64, 129, 300] {
            let slice = &records[..n];
            let mut out = vec![9, 9];
            encode_batch(1 << 40, slice, &mut out);
            let want = RecordBatch::build(1 << 40, slice).encode();
            assert_eq!(encoded_len(slice), want.len());
            assert_eq!(&out[2..], &want[..], "n = {n}");
            let mut checked = vec![5];
            let (size, max_timestamp) = encode_batch_checked(1 << 40, slice, &mut checked).unwrap();
            assert_eq!(&checked[1..], &want[..], "n = {n}");
            assert_eq!(size, want.len());
            assert_eq!(
                max_timestamp,
                RecordBatch::build(1 << 40, slice).max_timestamp
            );
        }
    }

    /// The checked encoders refuse exactly what `check_records` refuses, leave
    /// `out` as it was, and stop early on an oversized batch.
    #[test]
    fn checked_encoding_refuses_what_check_records_refuses() {
        use crate::log::write::check_records;
        let ok = |ts: i64| NewRecord::new(Some(b"k".to_vec()), Some(b"v".to_vec()), ts);
        let mut cases: Vec<Vec<NewRecord>> = vec![
            vec![ok(-1)],
            vec![ok(5), ok(-1), ok(3)],
            vec![ok(5), ok(-2)],
            vec![ok(-2), ok(5)],
            vec![ok(i64::MIN)],
        ];
        // One record over the limit on its own; many whose sum is over it; and a
        // batch exactly at the limit (accepted).
        let big = |n: usize| NewRecord::new(None, Some(vec![7; n]), 1);
        cases.push(vec![big(BATCH_BYTES_MAX)]);
        cases.push((0..70).map(|_| big(1 << 20)).collect());
        let fill = BATCH_BYTES_MAX - encoded_len(&[big(0)]);
        let mut at_limit = big(fill);
        while encoded_len(std::slice::from_ref(&at_limit)) > BATCH_BYTES_MAX {
            at_limit.value.as_mut().unwrap().pop();
        }
        assert_eq!(
            encoded_len(std::slice::from_ref(&at_limit)),
            BATCH_BYTES_MAX,
            "the limit case must sit exactly at the limit"
        );
        cases.push(vec![at_limit.clone()]);
        let mut over = at_limit;
        over.value.as_mut().unwrap().push(1);
        cases.push(vec![over]);
        let mut refused = 0;
        for records in &cases {
            let want = check_records(records).ok();
            let mut out = vec![1, 2, 3];
            let got = encode_batch_checked(9, records, &mut out);
            assert_eq!(got.is_ok(), want.is_some(), "{} records", records.len());
            match got {
                Ok((size, _)) => assert_eq!(Some(size), want),
                Err(Refused) => {
                    refused += 1;
                    assert_eq!(out, [1, 2, 3]);
                }
            }
            let mut plain = Vec::new();
            let compressed =
                encode_compressed_batch(9, records, Compression::None, None, &mut plain, &mut out);
            assert_eq!(compressed.is_ok(), want.is_some());
            // Encoding stops at the first record past the limit.
            assert!(plain.len() <= BATCH_BYTES_MAX + (1 << 20) + 16);
        }
        assert_eq!(refused, 6);
    }

    #[cfg(feature = "compression")]
    #[test]
    fn compressed_same_bytes_as_encode_then_reframe() {
        let records: Vec<NewRecord> = (0..50i64)
            .map(|i| {
                let mut r = NewRecord::new(
                    (i % 3 != 0).then(|| vec![i as u8; (i % 17) as usize]),
                    (i % 5 != 0).then(|| format!("value {i} ").repeat(i as usize % 9).into_bytes()),
                    1_000_000 - i * 977,
                );
                if i % 4 == 0 {
                    r.headers.push(Header {
                        key: format!("h{i}"),
                        value: Some(b"x".to_vec()),
                    });
                }
                r
            })
            .collect();
        for codec in Compression::ALL {
            for stamp in [None, Some(-1), Some(1 << 41)] {
                for n in [1, 2, 50] {
                    let slice = &records[..n];
                    let mut plain = Vec::new();
                    encode_batch(77, slice, &mut plain);
                    let mut want = Vec::new();
                    crate::format::batch::reframe(&plain, codec, stamp, &mut want);
                    let mut got = vec![1, 2, 3];
                    let mut scratch = vec![9; 5];
                    let max_timestamp =
                        encode_compressed_batch(77, slice, codec, stamp, &mut scratch, &mut got)
                            .unwrap();
                    assert_eq!(
                        max_timestamp,
                        crate::format::batch::decode_header(&want)
                            .unwrap()
                            .max_timestamp
                    );
                    assert_eq!(&got[3..], &want[..], "{codec} {stamp:?} n = {n}");
                }
            }
        }
    }
}

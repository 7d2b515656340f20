//! Encodes a data batch straight from the caller's [`NewRecord`]s into a reused
//! buffer: byte for byte what `RecordBatch::build(base, records).encode()` gives,
//! without cloning every key and value into an intermediate `RecordBatch` first
//! (the append hot path). A compressed batch's records are encoded into a scratch
//! buffer and compressed behind the header: no uncompressed batch is framed or
//! checksummed on the way.

use crate::format::batch::{
    ATTRIBUTES_OFFSET, CRC_OFFSET, HEADER_LEN, LENGTH_OFFSET, LOG_OVERHEAD, MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE,
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
    encode_batch_sized(base_offset, records, encoded_len(records), out);
}

/// [`encode_batch`] given its [`encoded_len`] `total` (the append path has it from
/// its size check: measured with `perf`, sizing the records again cost a third of
/// the encoder's time).
pub fn encode_batch_sized(
    base_offset: i64,
    records: &[NewRecord],
    total: usize,
    out: &mut Vec<u8>,
) {
    assert!(!records.is_empty());
    debug_assert_eq!(total, encoded_len(records));
    let start = out.len();
    out.reserve(total);
    let max_timestamp = records.iter().map(|r| r.timestamp).max().unwrap_or(0);
    put_header(base_offset, records, 0, max_timestamp, total, out);
    encode_records(records, out);
    assert_eq!(out.len() - start, total);
    seal(start, out);
}

/// [`encode_batch_sized`] with the records compressed with `codec` and, given
/// `log_append_time`, stamped LogAppendTime at it: byte for byte what
/// [`encode_batch`] then [`crate::format::batch::reframe`] give, without writing
/// (and checksumming) the uncompressed batch first. `plain` is scratch for the
/// records before compression.
pub fn encode_compressed_batch(
    base_offset: i64,
    records: &[NewRecord],
    total: usize,
    codec: Compression,
    log_append_time: Option<i64>,
    plain: &mut Vec<u8>,
    out: &mut Vec<u8>,
) {
    assert!(!records.is_empty());
    debug_assert_eq!(total, encoded_len(records));
    plain.clear();
    plain.reserve(total - HEADER_LEN);
    encode_records(records, plain);
    assert_eq!(plain.len(), total - HEADER_LEN);
    let mut attributes = codec.id();
    let max_timestamp = match log_append_time {
        Some(stamp) => {
            attributes |= ATTR_LOG_APPEND_TIME;
            stamp
        }
        None => records.iter().map(|r| r.timestamp).max().unwrap_or(0),
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
    let length = i32::try_from(out.len() - start - LOG_OVERHEAD).expect("batch too large");
    out[start + LENGTH_OFFSET..start + LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
    seal(start, out);
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

/// Appends `records`, encoded back to back (deltas from the first's timestamp).
pub(crate) fn encode_records(records: &[NewRecord], out: &mut Vec<u8>) {
    let base_timestamp = records.first().map_or(0, |r| r.timestamp);
    for (i, record) in records.iter().enumerate() {
        let timestamp_delta = record.timestamp.wrapping_sub(base_timestamp);
        let body = body_len(record, timestamp_delta, i as i64);
        put_varint(out, i32::try_from(body).expect("record size checked"));
        out.push(0);
        crate::format::varint::put_varlong(out, timestamp_delta);
        put_varint(out, i as i32);
        put_bytes(out, record.key.as_deref());
        put_bytes(out, record.value.as_deref());
        put_varint(out, record.headers.len() as i32);
        for header in &record.headers {
            put_varint(out, header.key.len() as i32);
            out.extend_from_slice(header.key.as_bytes());
            put_bytes(out, header.value.as_deref());
        }
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
            let mut sized = Vec::new();
            encode_batch_sized(1 << 40, slice, want.len(), &mut sized);
            assert_eq!(sized, want, "n = {n}");
        }
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
                    encode_compressed_batch(
                        77,
                        slice,
                        encoded_len(slice),
                        codec,
                        stamp,
                        &mut scratch,
                        &mut got,
                    );
                    assert_eq!(&got[3..], &want[..], "{codec} {stamp:?} n = {n}");
                }
            }
        }
    }
}

//! Byte sizes of Kafka v2 record batches, computed arithmetically (docs/design.md
//! section 1, "Batch size"). These sizes must equal what the engine's `engine/src/format`
//! writes, which the tests below pin on hand-computed cases.
//!
//! A compressed batch is the 61-byte header plus its codec's stream of the
//! records' encoding. How long that stream is is a property of the codec (and of
//! the compressor's version), not of the log's rules, so the model does not
//! implement codecs: it encodes the records ([`encode_records`]) and asks the codec
//! installed with [`install_codec`] (seglog installs `format::compression`). Sizing
//! a compressed batch with no codec installed panics.

use std::sync::OnceLock;

use super::{Batch, Rec};

/// The compressed length of `records` (encoded records) under Kafka codec `codec`.
pub type CodecBytes = fn(codec: u8, records: &[u8]) -> u64;

static CODEC: OnceLock<CodecBytes> = OnceLock::new();

/// Installs the codec that sizes compressed batches (the first install wins; a
/// later one must be the same function).
pub fn install_codec(codec: CodecBytes) {
    let installed = *CODEC.get_or_init(|| codec);
    assert!(
        std::ptr::fn_addr_eq(installed, codec),
        "a different codec is already installed"
    );
}

fn put_varint(out: &mut Vec<u8>, value: i64) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        out.push((zigzag as u8) | 0x80);
        zigzag >>= 7;
    }
    out.push(zigzag as u8);
}

fn put_field(out: &mut Vec<u8>, field: Option<&[u8]>) {
    match field {
        None => put_varint(out, -1),
        Some(bytes) => {
            put_varint(out, bytes.len() as i64);
            out.extend_from_slice(bytes);
        }
    }
}

/// The records of `batch` encoded as Kafka stores them after the header (no
/// headers: the spec's records have none): what a codec compresses.
pub fn encode_records(batch: &Batch) -> Vec<u8> {
    let mut out = Vec::new();
    for rec in &batch.records {
        let mut body = vec![0u8]; // attributes
        put_varint(
            &mut body,
            rec.stored_timestamp().wrapping_sub(batch.base_timestamp),
        );
        put_varint(&mut body, rec.offset - batch.base_offset);
        put_field(&mut body, rec.key.as_deref());
        put_field(&mut body, rec.value.as_deref());
        put_varint(&mut body, 0); // header count
        put_varint(&mut out, body.len() as i64);
        out.extend_from_slice(&body);
    }
    out
}

/// Bytes of a batch before its first record (baseOffset .. recordCount).
pub const BATCH_HEADER_BYTES: u64 = 61;

/// Length of a zigzag LEB128 varint/varlong, as Kafka writes it.
pub fn varint_len(value: i64) -> u64 {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    let mut len = 1;
    while zigzag >= 0x80 {
        zigzag >>= 7;
        len += 1;
    }
    len
}

fn field_len(field: Option<&[u8]>) -> u64 {
    match field {
        None => varint_len(-1),
        Some(bytes) => varint_len(bytes.len() as i64) + bytes.len() as u64,
    }
}

/// Bytes of one record (no headers), its length prefix included.
pub fn record_bytes(
    offset_delta: i64,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> u64 {
    let header_count_bytes = varint_len(0);
    let body = 1
        + varint_len(timestamp_delta)
        + varint_len(offset_delta)
        + field_len(key)
        + field_len(value)
        + header_count_bytes;
    varint_len(body as i64) + body
}

/// Bytes of `rec` stored in a batch with the given base offset and base timestamp.
pub fn rec_bytes(rec: &Rec, base_offset: i64, base_timestamp: i64) -> u64 {
    record_bytes(
        rec.offset - base_offset,
        rec.stored_timestamp().wrapping_sub(base_timestamp),
        rec.key.as_deref(),
        rec.value.as_deref(),
    )
}

/// Bytes of a whole batch: the header plus its records (compressed: plus the
/// codec's stream of them).
pub fn batch_bytes(batch: &Batch) -> u64 {
    if batch.codec != 0 {
        let codec = CODEC
            .get()
            .expect("a compressed batch is sized by an installed codec (size::install_codec)");
        return BATCH_HEADER_BYTES + codec(batch.codec, &encode_records(batch));
    }
    BATCH_HEADER_BYTES
        + batch
            .records
            .iter()
            .map(|r| rec_bytes(r, batch.base_offset, batch.base_timestamp))
            .sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_lengths_match_zigzag_leb128() {
        assert_eq!(varint_len(0), 1);
        assert_eq!(varint_len(-1), 1);
        assert_eq!(varint_len(63), 1);
        assert_eq!(varint_len(64), 2); // zigzag 128
        assert_eq!(varint_len(-64), 1); // zigzag 127
        assert_eq!(varint_len(-65), 2);
        assert_eq!(varint_len(i64::MAX), 10);
        assert_eq!(varint_len(i64::MIN), 10);
    }

    // Hand-computed: body = attributes 1 + tsDelta + offDelta + key + value + headerCount 1.
    #[test]
    fn record_sizes_are_hand_computed() {
        // "a" -> "1": body 1+1+1+2+2+1 = 8, prefix 1.
        assert_eq!(record_bytes(0, 0, Some(b"a"), Some(b"1")), 9);
        // keyless tombstone: body 1+1+1+1+1+1 = 6.
        assert_eq!(record_bytes(0, 0, None, None), 7);
        // 100-byte value: value len 100 -> zigzag 200 -> 2 bytes; body 107 -> prefix 2.
        assert_eq!(record_bytes(0, 0, None, Some(&[7u8; 100])), 109);
        // timestamp delta 64 and offset delta 64 take two bytes each.
        assert_eq!(record_bytes(64, 64, Some(b"a"), Some(b"1")), 11);
        // control record: key 4 bytes, value 6 bytes: body 1+1+1+5+7+1 = 16.
        assert_eq!(
            record_bytes(0, 0, Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0, 0, 0])),
            17
        );
    }

    #[test]
    fn batch_size_adds_the_61_byte_header() {
        let batch = Batch {
            base_offset: 10,
            last_offset_delta: 1,
            control: false,
            base_timestamp: 100,
            max_timestamp: 200,
            records: vec![
                Rec::new(10, Some(b"a"), Some(b"1"), 100),
                // timestamp delta 100 -> zigzag 200 -> 2 bytes: body 9, prefix 1.
                Rec::new(11, Some(b"b"), Some(b"2"), 200),
            ],
            codec: 0,
            log_append_time: false,
            delete_horizon: None,
            producer_id: -1,
            producer_epoch: -1,
            transactional: false,
        };
        assert_eq!(batch_bytes(&batch), 61 + 9 + 10);
        assert_eq!(encode_records(&batch).len() as u64, 9 + 10);
    }

    #[test]
    fn log_append_time_sizes_use_the_stored_create_times() {
        let mut first = Rec::new(10, Some(b"a"), Some(b"1"), 5_000);
        first.create_timestamp = Some(100);
        let mut rec = Rec::new(11, Some(b"b"), Some(b"2"), 5_000);
        rec.create_timestamp = Some(200);
        let batch = Batch {
            base_offset: 10,
            last_offset_delta: 1,
            control: false,
            base_timestamp: 100,
            max_timestamp: 5_000,
            records: vec![first, rec],
            codec: 0,
            log_append_time: true,
            delete_horizon: None,
            producer_id: -1,
            producer_epoch: -1,
            transactional: false,
        };
        // Stored deltas 0 and 100 (not 4900): 9 and 10 bytes.
        assert_eq!(batch_bytes(&batch), 61 + 9 + 10);
        assert_eq!(encode_records(&batch).len() as u64, 9 + 10);
    }
}

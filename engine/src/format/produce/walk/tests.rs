//! The short walk against the full walk (Kafka's full decode): on producer batches
//! built field by field, valid and damaged, with the CRC and length made valid
//! again so that both walks are reached, `check` gives exactly the same answer
//! (the same batches, or the same rejection) either way.

use proptest::prelude::*;

use super::super::{check_walking, Walk};
use super::accepts;
use crate::format::batch::{
    ATTRIBUTES_OFFSET, BASE_TIMESTAMP_OFFSET, CRC_OFFSET, LAST_OFFSET_DELTA_OFFSET, LENGTH_OFFSET,
    RECORDS_OFFSET, RECORD_COUNT_OFFSET,
};
use crate::format::{Compression, NewRecord, RecordBatch};

/// A zigzag varlong with `pad` redundant continuation bytes (an overlong
/// encoding of the same value when `pad > 0`).
fn put_padded(out: &mut Vec<u8>, value: i64, pad: usize) {
    let mut raw = ((value << 1) ^ (value >> 63)) as u64;
    let mut groups = Vec::new();
    loop {
        groups.push((raw & 0x7f) as u8);
        raw >>= 7;
        if raw == 0 {
            break;
        }
    }
    groups.extend(std::iter::repeat_n(0u8, pad));
    let last = groups.len() - 1;
    for (i, group) in groups.into_iter().enumerate() {
        out.push(if i == last { group } else { group | 0x80 });
    }
}

/// One record's fields as a producer might (mis)encode them.
#[derive(Debug, Clone)]
struct Fields {
    timestamp_delta: i64,
    /// Added to the record's index.
    offset_delta_skew: i32,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    /// Header keys (possibly not UTF-8) and values.
    headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// Overlong padding of the length, timestamp delta, offset delta, key length,
    /// value length and header count varints.
    pads: [usize; 6],
    /// Added to the record's length prefix.
    length_skew: i64,
    /// Bytes after the headers, counted by the length prefix.
    trailing: Vec<u8>,
}

fn fields() -> impl Strategy<Value = Fields> {
    let bytes = || proptest::option::weighted(0.9, proptest::collection::vec(any::<u8>(), 0..20));
    let pad = || prop_oneof![8 => Just(0usize), 2 => 0usize..7];
    (
        prop_oneof![8 => -3i64..200, 1 => any::<i64>(), 1 => Just(-1_700_000_000_002i64)],
        prop_oneof![20 => Just(0i32), 1 => -2i32..3],
        bytes(),
        bytes(),
        prop_oneof![
            9 => Just(Vec::new()),
            1 => proptest::collection::vec(
                (
                    prop_oneof![
                        3 => "[a-z]{0,4}".prop_map(String::into_bytes),
                        1 => proptest::collection::vec(any::<u8>(), 0..4),
                    ],
                    proptest::option::of(proptest::collection::vec(any::<u8>(), 0..4)),
                ),
                1..3,
            ),
        ],
        [pad(), pad(), pad(), pad(), pad(), pad()],
        prop_oneof![20 => Just(0i64), 1 => -2i64..3],
        prop_oneof![20 => Just(Vec::new()), 1 => proptest::collection::vec(any::<u8>(), 1..3)],
    )
        .prop_map(
            |(
                timestamp_delta,
                offset_delta_skew,
                key,
                value,
                headers,
                pads,
                length_skew,
                trailing,
            )| {
                Fields {
                    timestamp_delta,
                    offset_delta_skew,
                    key,
                    value,
                    headers,
                    pads,
                    length_skew,
                    trailing,
                }
            },
        )
}

fn put_nullable(out: &mut Vec<u8>, bytes: Option<&[u8]>, pad: usize) {
    match bytes {
        None => put_padded(out, -1, pad),
        Some(bytes) => {
            put_padded(out, bytes.len() as i64, pad);
            out.extend_from_slice(bytes);
        }
    }
}

fn encode_records(records: &[Fields]) -> Vec<u8> {
    let mut out = Vec::new();
    for (index, r) in records.iter().enumerate() {
        let mut body = vec![0u8]; // attributes
        put_padded(&mut body, r.timestamp_delta, r.pads[1]);
        put_padded(
            &mut body,
            i64::from(index as i32 + r.offset_delta_skew),
            r.pads[2],
        );
        put_nullable(&mut body, r.key.as_deref(), r.pads[3]);
        put_nullable(&mut body, r.value.as_deref(), r.pads[4]);
        put_padded(&mut body, r.headers.len() as i64, r.pads[5]);
        for (key, value) in &r.headers {
            put_padded(&mut body, key.len() as i64, 0);
            body.extend_from_slice(key);
            put_nullable(&mut body, value.as_deref(), 0);
        }
        body.extend_from_slice(&r.trailing);
        put_padded(&mut out, body.len() as i64 + r.length_skew, r.pads[0]);
        out.extend_from_slice(&body);
    }
    out
}

/// Damage to the encoded records (before compression).
#[derive(Debug, Clone)]
enum Damage {
    None,
    Flip(usize, u8),
    Cut(usize),
    Insert(usize, u8),
    Remove(usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        4 => Just(Damage::None),
        2 => (any::<usize>(), 1u8..=255).prop_map(|(at, x)| Damage::Flip(at, x)),
        1 => any::<usize>().prop_map(Damage::Cut),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Damage::Insert(at, b)),
        1 => any::<usize>().prop_map(Damage::Remove),
    ]
}

fn apply(damage: &Damage, records: &mut Vec<u8>) {
    let len = records.len();
    match *damage {
        Damage::None => {}
        Damage::Flip(at, x) if len > 0 => records[at % len] ^= x,
        Damage::Cut(at) => records.truncate(at % (len + 1)),
        Damage::Insert(at, byte) => records.insert(at % (len + 1), byte),
        Damage::Remove(at) if len > 0 => {
            records.remove(at % len);
        }
        Damage::Flip(..) | Damage::Remove(_) => {}
    }
}

/// The batch of `records` (the records' bytes) under `codec`, declaring `count`
/// records, with base timestamp `base`, its length and CRC-32C valid.
fn assemble(records: &[u8], codec: Compression, count: i32, base: i64) -> Vec<u8> {
    let template = RecordBatch::build(0, &[NewRecord::new(None, None, 0)]).encode();
    let mut batch = template[..RECORDS_OFFSET].to_vec();
    batch[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&codec.id().to_be_bytes());
    batch[LAST_OFFSET_DELTA_OFFSET..LAST_OFFSET_DELTA_OFFSET + 4]
        .copy_from_slice(&(count - 1).to_be_bytes());
    batch[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4].copy_from_slice(&count.to_be_bytes());
    batch[BASE_TIMESTAMP_OFFSET..BASE_TIMESTAMP_OFFSET + 8].copy_from_slice(&base.to_be_bytes());
    codec.compress_into(records, &mut batch);
    let length = (batch.len() - LENGTH_OFFSET - 4) as i32;
    batch[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
    let crc = crate::format::crc::crc32c(&batch[ATTRIBUTES_OFFSET..]);
    batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    batch
}

/// A record both walks take: no key, no value, timestamp delta 0.
fn plain_record() -> Fields {
    Fields {
        timestamp_delta: 0,
        offset_delta_skew: 0,
        key: None,
        value: None,
        headers: Vec::new(),
        pads: [0; 6],
        length_skew: 0,
        trailing: Vec::new(),
    }
}

fn codecs() -> impl Strategy<Value = Compression> {
    let available: Vec<Compression> = Compression::ALL
        .into_iter()
        .filter(|c| c.is_available())
        .collect();
    prop_oneof![
        6 => Just(Compression::None),
        1 => proptest::sample::select(available),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn short_walk_agrees_with_the_full_walk(
        records in proptest::collection::vec(fields(), 1..12),
        damage in damage(),
        count_skew in prop_oneof![10 => Just(0i32), 1 => -2i32..3],
        base in prop_oneof![4 => Just(1_700_000_000_000i64), 1 => any::<i64>(), 1 => -5i64..5],
        codec in codecs(),
        prefix in any::<bool>(),
    ) {
        let mut bytes = encode_records(&records);
        apply(&damage, &mut bytes);
        let count = records.len() as i32 + count_skew;
        let batch = assemble(&bytes, codec, count, base);
        // Second in its request too, so that positions and indexes are compared.
        let mut request = Vec::new();
        // The prefix is a fixed valid batch: built from `records[0]` with base 0,
        // it was itself invalid whenever that record's delta went below -1.
        if prefix {
            request = assemble(&encode_records(&[plain_record()]), Compression::None, 1, 0);
        }
        request.extend_from_slice(&batch);
        let short = check_walking(&request, 1 << 20, Walk::Short);
        let full = check_walking(&request, 1 << 20, Walk::Full);
        prop_assert_eq!(&short, &full);
        // Teeth: a clean batch (no damage, no headers, nothing skewed, every
        // varint within its limit, every timestamp >= -1) is taken by the short
        // walk itself, not handed to the full one.
        let clean = matches!(damage, Damage::None)
            && count_skew == 0
            && records.iter().all(|r| {
                r.headers.is_empty()
                    && r.offset_delta_skew == 0
                    && r.length_skew == 0
                    && r.trailing.is_empty()
                    && base.wrapping_add(r.timestamp_delta) >= -1
                    && r.pads.iter().all(|p| *p == 0)
            });
        if clean {
            prop_assert!(full.is_ok());
            let max = records.iter().map(|r| base.wrapping_add(r.timestamp_delta)).max();
            prop_assert_eq!(accepts(&bytes, records.len(), base), max);
        }
    }
}

#[test]
fn overlong_varints_within_their_limits_pass_both_walks() {
    let record = Fields {
        timestamp_delta: 5,
        key: Some(b"k".to_vec()),
        pads: [2, 3, 2, 2, 2, 2],
        ..plain_record()
    };
    let bytes = encode_records(std::slice::from_ref(&record));
    assert_eq!(accepts(&bytes, 1, 100), Some(105));
    let batch = assemble(&bytes, Compression::None, 1, 100);
    assert_eq!(
        check_walking(&batch, 1 << 20, Walk::Short),
        check_walking(&batch, 1 << 20, Walk::Full)
    );
    assert_eq!(
        check_walking(&batch, 1 << 20, Walk::Full).unwrap()[0].max_record_timestamp,
        105
    );
    // A varint of 6 bytes is refused by both (5 is the most an int32 takes).
    let too_long = Fields {
        pads: [0, 0, 5, 0, 0, 0],
        ..record
    };
    let bytes = encode_records(&[too_long]);
    assert_eq!(accepts(&bytes, 1, 100), None);
    let batch = assemble(&bytes, Compression::None, 1, 100);
    assert!(check_walking(&batch, 1 << 20, Walk::Full).is_err());
    assert_eq!(
        check_walking(&batch, 1 << 20, Walk::Short),
        check_walking(&batch, 1 << 20, Walk::Full)
    );
}

#[test]
fn a_varint_past_the_fast_paths_word_is_not_misread() {
    // Length 10 (2 bytes, overlong), attributes, timestamp delta 64 (2 bytes),
    // offset delta 0 (2 bytes, overlong) and key length 65 (0x82 0x01): the fast
    // path's 8-byte word ends inside the key length, and a zero byte read past the
    // word would make it 1. The bytes after it are a record of key length 1 (one
    // key byte, a null value, no headers), so such a misreading would accept a
    // record whose 65-byte key runs past its end.
    let mut bytes = Vec::new();
    put_padded(&mut bytes, 10, 1);
    bytes.push(0);
    put_padded(&mut bytes, 64, 0);
    put_padded(&mut bytes, 0, 1);
    put_padded(&mut bytes, 65, 0);
    bytes.extend_from_slice(&[0x00, 0x01, 0x00]);
    assert_eq!(bytes.len(), 2 + 10);
    assert_eq!(bytes[7..9], [0x82, 0x01]);
    assert_eq!(accepts(&bytes, 1, 100), None);
    let batch = assemble(&bytes, Compression::None, 1, 100);
    let full = check_walking(&batch, 1 << 20, Walk::Full);
    assert!(full.is_err(), "{full:?}");
    assert_eq!(check_walking(&batch, 1 << 20, Walk::Short), full);
}

//! The key walk ([`RecordViews::keys`]) against the full record walk: the same
//! records, fields and errors, on valid batches and on batches with damaged records.

use proptest::prelude::*;

use super::*;
use crate::format::record::Header;
use crate::format::{NewRecord, RecordBatch};

/// One walk's outcome, comparable across the two walks.
type Walked = Vec<Result<(i32, i64, Option<Vec<u8>>, bool), FormatError>>;

fn full(records: RecordViews<'_>) -> Walked {
    records
        .map(|r| {
            r.map(|r| {
                (
                    r.offset_delta,
                    r.timestamp_delta,
                    r.key.map(<[u8]>::to_vec),
                    r.value.is_none(),
                )
            })
        })
        .collect()
}

fn keys(records: RecordViews<'_>) -> Walked {
    records
        .keys()
        .map(|r| {
            r.map(|r| {
                (
                    r.offset_delta,
                    r.timestamp_delta,
                    r.key.map(<[u8]>::to_vec),
                    r.value_is_null,
                )
            })
        })
        .collect()
}

fn record() -> impl Strategy<Value = NewRecord> {
    (
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..6)),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..6)),
        0i64..300,
        proptest::collection::vec(("[a-z]{0,3}", proptest::option::of(Just(vec![7u8]))), 0..3),
    )
        .prop_map(|(key, value, timestamp, headers)| NewRecord {
            key,
            value,
            timestamp,
            headers: headers
                .into_iter()
                .map(|(key, value)| Header { key, value })
                .collect(),
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Damage anywhere in the records (a byte set, or the records cut short):
    /// both walks yield the same records and then the same error.
    #[test]
    fn the_key_walk_yields_what_the_full_walk_yields(
        records in proptest::collection::vec(record(), 1..6),
        damage in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let bytes = RecordBatch::build(7, &records).encode();
        let (view, _) = BatchView::decode(&bytes).expect("a built batch decodes");
        let mut payload = bytes[RECORDS_OFFSET..].to_vec();
        for (at, byte) in damage {
            let at = at.index(payload.len());
            payload[at] = byte;
        }
        if let Some(at) = cut {
            payload.truncate(at.index(payload.len()));
        }
        // The damaged payload walked as a batch's records would be.
        let walk = || view.records_in(&payload);
        prop_assert_eq!(keys(walk()), full(walk()));
    }
}

/// A header key that is not UTF-8 fails the key walk as it fails the full walk,
/// though the key walk keeps no header.
#[test]
fn a_header_key_not_in_utf8_fails_the_key_walk() {
    let record = NewRecord {
        key: Some(b"k".to_vec()),
        value: Some(b"v".to_vec()),
        timestamp: 0,
        headers: vec![Header {
            key: "h".into(),
            value: None,
        }],
    };
    let mut bytes = RecordBatch::build(0, &[record]).encode();
    let at = bytes
        .iter()
        .rposition(|&b| b == b'h')
        .expect("the header key is stored");
    bytes[at] = 0xff;
    let (view, _) = BatchView::decode_crc_checked(&bytes).expect("the header is not checked yet");
    let walked = keys(view.records());
    assert!(
        matches!(
            walked.as_slice(),
            [Err(FormatError::Corrupt {
                kind: CorruptKind::Field("header key utf-8"),
                ..
            })]
        ),
        "{walked:?}"
    );
    assert_eq!(walked, full(view.records()));
}

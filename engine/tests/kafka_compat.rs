//! Cross-check of `seglog::format` against an implementation nobody here wrote: the
//! `kafka-protocol` crate's record batch v2 encoder and decoder.
//!
//! Invariants checked, for random batches (null keys, null values, headers, offset
//! gaps made by `RecordBatch::retain`, control batches, transactional and
//! delete-horizon bits, producer fields, negative timestamp deltas):
//! * ours -> theirs: `kafka-protocol` decodes every batch we encode, CRC included, and
//!   every field it exposes equals ours (absolute offset, timestamp and sequence of each
//!   record; key, value and headers; every batch header field).
//! * theirs -> ours: we decode every batch `kafka-protocol` encodes, with every field as
//!   Kafka defines it (base offset = first offset, lastOffsetDelta = last - first,
//!   maxTimestamp = max record timestamp), and re-encode it byte for byte.
//! * where both encoders can express the same batch, the bytes are identical.
//!
//! Known, documented differences (not bugs on either side): `kafka-protocol` writes
//! `baseTimestamp` = the minimum record timestamp, while Kafka's Java
//! `MemoryRecordsBuilder` (and seglog) write the first record's timestamp; both decode
//! to the same record timestamps. `kafka-protocol` keeps headers in a map, so a batch
//! with two headers of the same key (legal in Kafka) loses one: the generators use
//! distinct header keys. Its decoder ignores `lastOffsetDelta` and `maxTimestamp`, so
//! those two are checked through its encoder (theirs -> ours, and the byte-identity test).
//!
//! Checked against Kafka's Java source as well: `MemoryRecords.buildRetainedRecordsInto`
//! (the cleaner) keeps a partly kept batch's `baseOffset` and, through
//! `overrideLastOffset(originalBatch.lastOffset())`, its last offset, as
//! `RecordBatch::retain` does. It rebuilds `baseTimestamp` from the first *kept* record
//! (`MemoryRecordsBuilder`: `if (baseTimestamp == null) baseTimestamp = timestamp`, or the
//! delete horizon when bit 6 is set), whereas the semantics contract (docs/design.md
//! section 1) keeps the original `baseTimestamp`. Every record timestamp decodes the
//! same either way; only the stored deltas differ.

use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    BatchDecodeInfo, Compression, Record as KRecord, RecordBatchDecoder, RecordBatchEncoder,
    RecordEncodeOptions, TimestampType,
};
use proptest::prelude::*;
use seglog::format::batch::{self, ATTR_TRANSACTIONAL};
use seglog::format::{ControlKind, Header, NewRecord, Record, RecordBatch};

const ATTR_TIMESTAMP_TYPE: i16 = 1 << 3;
const ATTR_DELETE_HORIZON: i16 = 1 << 6;

fn bytes_opt() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop::option::weighted(0.8, prop::collection::vec(any::<u8>(), 0..24))
}

/// Headers with distinct keys (see the module comment).
fn headers() -> impl Strategy<Value = Vec<Header>> {
    prop::collection::btree_map("[a-z]{0,6}", bytes_opt(), 0..3).prop_map(|map| {
        map.into_iter()
            .map(|(key, value)| Header { key, value })
            .collect()
    })
}

fn new_record() -> impl Strategy<Value = NewRecord> {
    (bytes_opt(), bytes_opt(), 0i64..1 << 20, headers()).prop_map(
        |(key, value, timestamp_delta, headers)| NewRecord {
            key,
            value,
            timestamp: 1_700_000_000_000 + timestamp_delta,
            headers,
        },
    )
}

/// Batch-level fields a producer or the broker may set.
#[derive(Debug, Clone)]
struct BatchFields {
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    delete_horizon: bool,
}

prop_compose! {
    fn batch_fields()(
        partition_leader_epoch in prop_oneof![Just(-1i32), 0i32..1000],
        producer_id in prop_oneof![Just(-1i64), 0i64..1 << 40],
        producer_epoch in prop_oneof![Just(-1i16), 0i16..100],
        base_sequence in prop_oneof![Just(-1i32), 0i32..i32::MAX],
        transactional in any::<bool>(),
        delete_horizon in any::<bool>(),
    ) -> BatchFields {
        BatchFields {
            partition_leader_epoch,
            producer_id,
            producer_epoch,
            base_sequence,
            transactional,
            delete_horizon,
        }
    }
}

/// A batch as seglog makes it: built from records (then partly kept by compaction)
/// or a control batch, with random producer fields.
fn our_batch() -> impl Strategy<Value = RecordBatch> {
    let data = (
        0i64..1 << 40,
        prop::collection::vec(new_record(), 1..8),
        prop::collection::vec(any::<bool>(), 8),
        batch_fields(),
        any::<bool>(),
    )
        .prop_map(|(base_offset, records, keep, fields, log_append_time)| {
            let built = RecordBatch::build(base_offset, &records);
            let mut batch = built
                .retain(|r| keep[r.offset_delta as usize])
                .unwrap_or(built);
            batch.partition_leader_epoch = fields.partition_leader_epoch;
            batch.producer_id = fields.producer_id;
            batch.producer_epoch = fields.producer_epoch;
            batch.base_sequence = fields.base_sequence;
            if fields.transactional {
                batch.attributes |= ATTR_TRANSACTIONAL;
            }
            if fields.delete_horizon {
                batch.attributes |= ATTR_DELETE_HORIZON;
            }
            if log_append_time {
                batch.attributes |= ATTR_TIMESTAMP_TYPE;
            }
            batch
        });
    let control = (
        0i64..1 << 40,
        any::<bool>(),
        0i64..1 << 40,
        0i16..100,
        0i32..1000,
        0i64..1 << 42,
    )
        .prop_map(|(base_offset, commit, pid, epoch, coordinator_epoch, ts)| {
            let kind = if commit {
                ControlKind::Commit
            } else {
                ControlKind::Abort
            };
            RecordBatch::control(base_offset, kind, pid, epoch, coordinator_epoch, ts)
        });
    prop_oneof![4 => data, 1 => control]
}

fn header_pairs(headers: &[Header]) -> Vec<(String, Option<Vec<u8>>)> {
    headers
        .iter()
        .map(|h| (h.key.clone(), h.value.clone()))
        .collect()
}

fn their_header_pairs(record: &KRecord) -> Vec<(String, Option<Vec<u8>>)> {
    record
        .headers
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.as_ref().map(|b| b.to_vec())))
        .collect()
}

fn timestamp_type(attributes: i16) -> TimestampType {
    if attributes & ATTR_TIMESTAMP_TYPE != 0 {
        TimestampType::LogAppend
    } else {
        TimestampType::Creation
    }
}

/// Every header field `kafka-protocol` decodes equals ours.
fn check_info(ours: &RecordBatch, info: &BatchDecodeInfo) {
    assert_eq!(info.version, batch::MAGIC_V2);
    assert_eq!(info.compression, Compression::None);
    assert_eq!(info.min_offset, ours.base_offset);
    assert_eq!(info.min_timestamp, ours.base_timestamp);
    assert_eq!(info.record_count as usize, ours.records.len());
    assert_eq!(info.partition_leader_epoch, ours.partition_leader_epoch);
    assert_eq!(info.producer_id, ours.producer_id);
    assert_eq!(info.producer_epoch, ours.producer_epoch);
    assert_eq!(info.base_sequence, ours.base_sequence);
    assert_eq!(info.transactional, ours.is_transactional());
    assert_eq!(info.control, ours.is_control());
    assert_eq!(
        info.delete_horizon,
        ours.attributes & ATTR_DELETE_HORIZON != 0
    );
    assert_eq!(info.timestamp_type, timestamp_type(ours.attributes));
}

/// Every record field `kafka-protocol` decodes equals ours.
fn check_record(batch: &RecordBatch, ours: &Record, theirs: &KRecord) {
    assert_eq!(theirs.offset, batch.offset_of(ours));
    // `kafka-protocol` reports the stored (create) time even under LogAppendTime;
    // Kafka's Java reader, and `RecordBatch::timestamp_of`, read the batch's
    // maxTimestamp then (tests/log_append_time.rs).
    assert_eq!(
        theirs.timestamp,
        batch.base_timestamp.wrapping_add(ours.timestamp_delta)
    );
    assert_eq!(
        theirs.sequence,
        batch.base_sequence.wrapping_add(ours.offset_delta)
    );
    assert_eq!(theirs.key.as_deref(), ours.key.as_deref());
    assert_eq!(theirs.value.as_deref(), ours.value.as_deref());
    assert_eq!(their_header_pairs(theirs), header_pairs(&ours.headers));
    assert_eq!(theirs.transactional, batch.is_transactional());
    assert_eq!(theirs.control, batch.is_control());
    assert_eq!(theirs.partition_leader_epoch, batch.partition_leader_epoch);
    assert_eq!(theirs.producer_id, batch.producer_id);
    assert_eq!(theirs.producer_epoch, batch.producer_epoch);
    assert_eq!(theirs.timestamp_type, timestamp_type(batch.attributes));
}

fn their_encode(records: &[KRecord]) -> Vec<u8> {
    let mut out = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut out, records, &options).expect("kafka-protocol encodes");
    out.to_vec()
}

/// True if `kafka-protocol`'s encoder can write exactly this batch: it derives the
/// base offset, lastOffsetDelta and baseTimestamp from the records, and never sets
/// the timestamp-type bit.
fn expressible_by_them(batch: &RecordBatch) -> bool {
    let first = batch.records.first().map(|r| r.offset_delta);
    let last = batch.records.last().map(|r| r.offset_delta);
    let min_timestamp = batch.records.iter().map(|r| batch.timestamp_of(r)).min();
    first == Some(0)
        && last == Some(batch.last_offset_delta)
        && min_timestamp == Some(batch.base_timestamp)
        && batch.attributes & ATTR_TIMESTAMP_TYPE == 0
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn ours_decode_with_kafka_protocol(batches in prop::collection::vec(our_batch(), 1..4)) {
        let mut bytes = Vec::new();
        for batch in &batches {
            batch.encode_into(&mut bytes);
        }
        let infos = RecordBatchDecoder::decode_batch_info(&mut Bytes::from(bytes.clone()))
            .expect("kafka-protocol reads our batch headers");
        let sets = RecordBatchDecoder::decode_all(&mut Bytes::from(bytes.clone()))
            .expect("kafka-protocol decodes our batches, CRC included");
        prop_assert_eq!(infos.len(), batches.len());
        prop_assert_eq!(sets.len(), batches.len());
        for ((ours, info), set) in batches.iter().zip(&infos).zip(&sets) {
            check_info(ours, info);
            prop_assert_eq!(set.records.len(), ours.records.len());
            for (record, theirs) in ours.records.iter().zip(&set.records) {
                check_record(ours, record, theirs);
            }
            if ours.is_control() {
                let kind = ours.records[0].control_kind();
                prop_assert!(kind.is_some());
                prop_assert_eq!(set.records[0].key.as_deref(), ours.records[0].key.as_deref());
            }
            // Their encoder, given the records they decoded, writes batches we read
            // back to the same records; when it can express the batch, byte for byte.
            let again = their_encode(&set.records);
            let (decoded, used) = batch::decode(&again).expect("we decode their re-encoding");
            prop_assert_eq!(used, again.len());
            // Stored times: their encoder never sets the LogAppendTime bit.
            let stored = |b: &RecordBatch, r: &Record| b.base_timestamp.wrapping_add(r.timestamp_delta);
            let ours_abs: Vec<_> = ours.records.iter().map(|r| (ours.offset_of(r), stored(ours, r))).collect();
            let again_abs: Vec<_> = decoded.records.iter().map(|r| (decoded.offset_of(r), stored(&decoded, r))).collect();
            prop_assert_eq!(ours_abs, again_abs);
            if expressible_by_them(ours) {
                prop_assert_eq!(&again, &ours.encode(), "byte-identical encodings");
            }
        }
    }

    #[test]
    fn kafka_protocol_batches_decode_with_ours(
        base_offset in 0i64..1 << 40,
        gaps in prop::collection::vec(1i64..4, 0..7),
        records in prop::collection::vec(new_record(), 7),
        fields in batch_fields(),
        control in any::<bool>(),
    ) {
        // Offsets with gaps, as a compacted batch re-encoded by a client would have.
        let mut offsets = vec![base_offset];
        for gap in &gaps {
            offsets.push(offsets.last().unwrap() + gap);
        }
        let theirs: Vec<KRecord> = offsets
            .iter()
            .zip(&records)
            .map(|(&offset, r)| KRecord {
                transactional: fields.transactional,
                control,
                delete_horizon: fields.delete_horizon,
                partition_leader_epoch: fields.partition_leader_epoch,
                producer_id: fields.producer_id,
                producer_epoch: fields.producer_epoch,
                timestamp_type: TimestampType::Creation,
                offset,
                sequence: fields.base_sequence.wrapping_add((offset - base_offset) as i32),
                timestamp: r.timestamp,
                key: r.key.clone().map(Bytes::from),
                value: r.value.clone().map(Bytes::from),
                headers: r
                    .headers
                    .iter()
                    .map(|h| (StrBytes::from_string(h.key.clone()), h.value.clone().map(Bytes::from)))
                    .collect(),
            })
            .collect();
        let bytes = their_encode(&theirs);
        let (ours, used) = batch::decode(&bytes).expect("we decode kafka-protocol's batch");
        prop_assert_eq!(used, bytes.len(), "one batch");
        let timestamps: Vec<i64> = theirs.iter().map(|r| r.timestamp).collect();
        prop_assert_eq!(ours.base_offset, base_offset);
        prop_assert_eq!(ours.last_offset(), *offsets.last().unwrap());
        prop_assert_eq!(ours.base_timestamp, *timestamps.iter().min().unwrap());
        prop_assert_eq!(ours.max_timestamp, *timestamps.iter().max().unwrap());
        prop_assert_eq!(ours.is_control(), control);
        prop_assert_eq!(ours.attributes & batch::ATTR_COMPRESSION_MASK, 0);
        let info = RecordBatchDecoder::decode_batch_info(&mut Bytes::from(bytes.clone())).unwrap();
        check_info(&ours, &info[0]);
        prop_assert_eq!(ours.records.len(), theirs.len());
        for (record, k) in ours.records.iter().zip(&theirs) {
            check_record(&ours, record, k);
        }
        prop_assert_eq!(ours.encode(), bytes, "we re-encode their batch byte for byte");
    }
}

/// A batch seglog did not make: the record set of the fetch response in the
/// `kafka-protocol` crate's documentation. Base offset 0, lastOffsetDelta 3, one record
/// at offset delta 1 (a batch compaction thinned), key "hello", value "world". Its
/// record attribute byte is 1 and its maxTimestamp is not its record's timestamp: Kafka
/// ignores both when reading, so we must decode them as they are and re-encode them
/// byte for byte.
const KAFKA_BATCH: [u8; 79] = [
    0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x43, 0x0, 0x0, 0x0, 0x0, 0x2, 0x73,
    0x6d, 0x29, 0x7b, 0x0, 0b00000000, 0x0, 0x0, 0x0, 0x3, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x1, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x1, 0x22, 0x1, 0xd0, 0xf, 0x2, 0xa, 0x68, 0x65, 0x6c, 0x6c,
    0x6f, 0xa, 0x77, 0x6f, 0x72, 0x6c, 0x64, 0x0,
];

#[test]
fn a_batch_written_by_kafka_decodes_and_re_encodes() {
    let (ours, used) = batch::decode(&KAFKA_BATCH).expect("we decode Kafka's bytes");
    assert_eq!(used, KAFKA_BATCH.len());
    assert_eq!(ours.base_offset, 0);
    assert_eq!(ours.last_offset_delta, 3);
    assert_eq!(ours.last_offset(), 3);
    assert_eq!(ours.max_timestamp, 1 << 40);
    assert_eq!(ours.records.len(), 1);
    let record = &ours.records[0];
    assert_eq!(ours.offset_of(record), 1);
    assert_eq!(ours.timestamp_of(record), 1000);
    assert_eq!(record.attributes, 1);
    assert_eq!(record.key.as_deref(), Some(&b"hello"[..]));
    assert_eq!(record.value.as_deref(), Some(&b"world"[..]));
    assert!(record.headers.is_empty());
    let set = RecordBatchDecoder::decode(&mut Bytes::from_static(&KAFKA_BATCH)).unwrap();
    check_record(&ours, record, &set.records[0]);
    assert_eq!(ours.encode(), KAFKA_BATCH, "byte for byte");
}

/// A `Log::fetch` payload is what a Kafka client consumes: `kafka-protocol` decodes
/// every fetched byte range of a real log (several segments, a compaction gap, null
/// keys and values, headers, a control batch) to exactly the records that
/// `Fetch::records` yields.
#[test]
fn fetched_bytes_decode_with_kafka_protocol() {
    use seglog::{Log, LogConfig};
    let tmp = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 2_000,
        index_interval_bytes: 300,
        ..LogConfig::default()
    };
    let (mut log, _) = Log::open(tmp.path(), config).unwrap();
    for b in 0..30i64 {
        let records: Vec<NewRecord> = (0..4)
            .map(|i| {
                let n = b * 4 + i;
                let mut record = NewRecord::new(
                    (n % 7 != 0).then(|| format!("k{}", n % 5).into_bytes()),
                    (n % 11 != 0).then(|| vec![n as u8; (n % 13) as usize]),
                    1_000 + n,
                );
                if n % 6 == 1 {
                    record.headers = vec![Header {
                        key: format!("h{n}"),
                        value: (n % 4 != 1).then(|| vec![7; 3]),
                    }];
                }
                record
            })
            .collect();
        log.append(&records).unwrap();
        if b == 20 {
            log.append_control(ControlKind::Commit, 1, 0, 1_100)
                .unwrap();
        }
    }
    log.compact(10_000, 1_000_000, None).unwrap();
    assert!(
        log.segments().len() >= 2,
        "a closed segment and the active one"
    );
    for max_bytes in [1, 500, usize::MAX] {
        let mut from = log.log_start_offset();
        let mut fetched = 0;
        loop {
            let fetch = log.fetch(from, max_bytes).unwrap();
            if fetch.is_empty() {
                break;
            }
            let sets = RecordBatchDecoder::decode_all(&mut fetch.bytes().clone())
                .expect("kafka-protocol decodes a fetch payload, CRC included");
            let theirs: Vec<&KRecord> = sets
                .iter()
                .flat_map(|set| set.records.iter())
                .filter(|r| r.offset >= from)
                .collect();
            let ours: Vec<_> = fetch.records().map(|r| r.unwrap()).collect();
            assert_eq!(ours.len(), theirs.len(), "from {from}, max {max_bytes}");
            for (ours, theirs) in ours.iter().zip(&theirs) {
                assert_eq!(ours.offset, theirs.offset);
                assert_eq!(ours.timestamp, theirs.timestamp);
                assert_eq!(ours.key, theirs.key.as_deref());
                assert_eq!(ours.value, theirs.value.as_deref());
                assert_eq!(ours.control, theirs.control);
                let our_headers: Vec<_> = ours
                    .headers
                    .iter()
                    .map(|h| (h.key.clone(), h.value.clone()))
                    .collect();
                assert_eq!(our_headers, their_header_pairs(theirs));
            }
            fetched += ours.len();
            from = fetch.next_offset();
        }
        assert_eq!(fetched, log.read(0, usize::MAX).unwrap().len());
    }
}

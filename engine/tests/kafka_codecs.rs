#![cfg(feature = "compression")] // the codecs
//! Compressed batches against an independent decoder and encoder: the
//! `kafka-protocol` crate's gzip, xerial snappy, LZ4 frame and zstd (its LZ4 is the
//! C liblz4's frame API, so the lz4 check crosses implementations as well as
//! crates). Not Kafka's Java classes (the interop stage does that); the
//! same framing, read by another reader.
//!
//! Invariants: every batch seglog writes with a codec decodes with `kafka-protocol`
//! to the same records (offsets, timestamps, keys, values, headers), and every
//! batch `kafka-protocol` writes with a codec decodes with seglog to the same
//! records, through `Log::open` and `read` as well.

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression as KCompression, Record as KRecord, RecordBatchDecoder, RecordBatchEncoder,
    RecordEncodeOptions, TimestampType,
};
use seglog::format::compression::Compression;
use seglog::format::{batch, filename, Header, NewRecord, RecordBatch};
use seglog::{Log, LogConfig};

fn theirs(codec: Compression) -> KCompression {
    match codec {
        Compression::None => KCompression::None,
        Compression::Gzip => KCompression::Gzip,
        Compression::Snappy => KCompression::Snappy,
        Compression::Lz4 => KCompression::Lz4,
        Compression::Zstd => KCompression::Zstd,
    }
}

fn records() -> Vec<NewRecord> {
    (0..300)
        .map(|i| {
            let mut r = NewRecord::new(
                (i % 7 != 0).then(|| format!("key-{}", i % 40).into_bytes()),
                (i % 11 != 0).then(|| format!("value {i} {}", "abc".repeat(i % 50)).into_bytes()),
                1_000 + i as i64,
            );
            if i % 13 == 0 {
                r.headers.push(Header {
                    key: "h".into(),
                    value: Some(b"x".to_vec()),
                });
            }
            r
        })
        .collect()
}

type Row = (
    i64,
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(String, Option<Vec<u8>>)>,
);

fn our_rows(batch: &RecordBatch) -> Vec<Row> {
    batch
        .records
        .iter()
        .map(|r| {
            (
                batch.offset_of(r),
                batch.timestamp_of(r),
                r.key.clone(),
                r.value.clone(),
                r.headers
                    .iter()
                    .map(|h| (h.key.clone(), h.value.clone()))
                    .collect(),
            )
        })
        .collect()
}

fn their_rows(records: &[KRecord]) -> Vec<Row> {
    records
        .iter()
        .map(|r| {
            (
                r.offset,
                r.timestamp,
                r.key.as_ref().map(|k| k.to_vec()),
                r.value.as_ref().map(|v| v.to_vec()),
                r.headers
                    .iter()
                    .map(|(k, v)| (k.as_str().to_string(), v.as_ref().map(|b| b.to_vec())))
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn ours_decode_with_kafka_protocol() {
    for codec in Compression::ALL {
        let batch = RecordBatch::build(100, &records()).with_compression(codec);
        let bytes = batch.encode();
        let set = RecordBatchDecoder::decode(&mut Bytes::from(bytes))
            .unwrap_or_else(|e| panic!("{codec}: kafka-protocol rejects our batch: {e:?}"));
        assert_eq!(their_rows(&set.records), our_rows(&batch), "{codec}");
    }
}

#[test]
fn theirs_decode_with_ours_and_through_the_log() {
    for codec in Compression::ALL {
        let batch = RecordBatch::build(0, &records());
        let krecords: Vec<KRecord> = batch
            .records
            .iter()
            .map(|r| KRecord {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: batch.offset_of(r),
                sequence: -1,
                timestamp: batch.timestamp_of(r),
                key: r.key.clone().map(Bytes::from),
                value: r.value.clone().map(Bytes::from),
                headers: r
                    .headers
                    .iter()
                    .map(|h| (h.key.clone().into(), h.value.clone().map(Bytes::from)))
                    .collect(),
            })
            .collect();
        let mut out = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression: theirs(codec),
        };
        RecordBatchEncoder::encode(&mut out, &krecords, &options).expect("kafka-protocol encodes");
        let bytes = out.to_vec();
        // Their encoder may split the records into several batches.
        let mut rows = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let (decoded, used) =
                batch::decode(&bytes[at..]).unwrap_or_else(|e| panic!("{codec}: {e:?}"));
            assert_eq!(decoded.compression(), codec);
            rows.extend(our_rows(&decoded));
            at += used;
        }
        assert_eq!(rows, our_rows(&batch), "{codec}");
        // And as a segment: recovery keeps it, read returns its records.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p0");
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join(filename::build(0, filename::LOG_SUFFIX)), &bytes).unwrap();
        let (log, report) = Log::open(&path, LogConfig::default()).unwrap();
        assert_eq!(report.truncated_bytes, 0);
        let read: Vec<(i64, Option<Vec<u8>>)> = log
            .read(0, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|r| (r.offset, r.value.map(|v| v.to_vec())))
            .collect();
        let want: Vec<(i64, Option<Vec<u8>>)> =
            our_rows(&batch).into_iter().map(|r| (r.0, r.3)).collect();
        assert_eq!(read, want, "{codec}");
    }
}

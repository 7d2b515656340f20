//! Producer-encoded batches for [`super::Op::AppendRaw`]: how a producer encodes a
//! batch (base offset 0, no leader epoch, CreateTime, its own codec: byte for byte
//! Kafka's producer encoding, `RecordBatch::encode`), and the defects a broken or
//! hostile producer may send, each named after the produce-request rule it breaks
//! (docs/design.md section 1c). Shared by the conformance generator, the crash sweep
//! and the fuzz targets.

use serde::{Deserialize, Serialize};

use seglog::format::batch::{
    ATTRIBUTES_OFFSET, ATTR_CONTROL, BASE_OFFSET_OFFSET, BASE_TIMESTAMP_OFFSET, CRC_OFFSET,
    MAGIC_OFFSET, MAX_TIMESTAMP_OFFSET, PARTITION_LEADER_EPOCH_OFFSET, PRODUCER_ID_OFFSET,
    RECORD_COUNT_OFFSET,
};
use seglog::format::{Compression, RecordBatch};

use super::{new_records, RecordSpec};

/// One batch of an [`super::Op::AppendRaw`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RawBatchSpec {
    pub records: Vec<RecordSpec>,
    /// The producer's codec (absent: uncompressed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codec: Option<Compression>,
    /// What the producer got wrong, or a quirk the broker accepts (absent: a
    /// well-formed batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defect: Option<Defect>,
}

/// A deliberate departure from a well-formed producer batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Defect {
    /// A flipped bit in `baseTimestamp`, under the CRC: the records still parse
    /// (their timestamps move by one), so only the CRC-32C rule refuses it. A flip
    /// in the last byte (a record's header count) broke the record framing too, so
    /// a raw append that skipped the CRC check still refused it.
    Crc,
    /// Magic 1: an old message format.
    Magic,
    /// The control bit set (CRC fixed): producers write no markers.
    Control,
    /// The record count one too high (CRC fixed).
    RecordCount,
    /// The idempotent producer id 7 without a base sequence (CRC fixed).
    Sequence,
    /// The second record's offset delta repeated from the first (CRC fixed by the
    /// encoder); a one-record batch gets delta 1 instead.
    OffsetDelta,
    /// The last 3 bytes cut off.
    Truncated,
    /// Accepted: a base offset and leader epoch of the producer's own (the broker
    /// overwrites both).
    ProducerOffsets,
    /// Accepted: a `maxTimestamp` that is not the records' (CRC fixed; the broker
    /// corrects it, as Kafka's `setMaxTimestamp` does).
    MaxTimestamp,
}

impl Defect {
    /// Every defect, for generators.
    pub const ALL: [Defect; 9] = [
        Defect::Crc,
        Defect::Magic,
        Defect::Control,
        Defect::RecordCount,
        Defect::Sequence,
        Defect::OffsetDelta,
        Defect::Truncated,
        Defect::ProducerOffsets,
        Defect::MaxTimestamp,
    ];

    /// True if a batch with this defect breaks a produce-request rule.
    pub fn rejects(self) -> bool {
        !matches!(self, Defect::ProducerOffsets | Defect::MaxTimestamp)
    }
}

impl RawBatchSpec {
    /// True if the broker's rules accept the batch's bytes (its records may still
    /// be refused: none, or a timestamp below -1).
    pub fn valid_bytes(&self) -> bool {
        self.defect.is_none_or(|d| !d.rejects())
    }
}

fn fix_crc(bytes: &mut [u8]) {
    let crc = seglog::format::crc::crc32c(&bytes[ATTRIBUTES_OFFSET..]);
    bytes[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

/// The batch as its producer sends it.
pub fn encode(batch: &RawBatchSpec) -> Vec<u8> {
    let records = new_records(&batch.records);
    let codec = batch.codec.unwrap_or_default();
    let mut built = if records.is_empty() {
        // What a producer never sends, but a scenario may ask for: no records.
        let mut empty = RecordBatch::build(0, &[seglog::format::NewRecord::new(None, None, 0)]);
        empty.records.clear();
        empty
    } else {
        RecordBatch::build(0, &records)
    };
    built = built.with_compression(codec);
    if batch.defect == Some(Defect::OffsetDelta) {
        match built.records.get_mut(1) {
            Some(second) => second.offset_delta = 0,
            None => {
                if let Some(first) = built.records.first_mut() {
                    first.offset_delta = 1;
                }
                built.last_offset_delta = 1;
            }
        }
    }
    let mut bytes = built.encode();
    match batch.defect {
        None | Some(Defect::OffsetDelta) => {}
        Some(Defect::Crc) => bytes[BASE_TIMESTAMP_OFFSET + 7] ^= 0x01,
        Some(Defect::Magic) => bytes[MAGIC_OFFSET] = 1,
        Some(Defect::Control) => {
            bytes[ATTRIBUTES_OFFSET + 1] |= ATTR_CONTROL as u8;
            fix_crc(&mut bytes);
        }
        Some(Defect::RecordCount) => {
            let count = i32::try_from(built.records.len()).expect("small") + 1;
            bytes[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4]
                .copy_from_slice(&count.to_be_bytes());
            fix_crc(&mut bytes);
        }
        Some(Defect::Sequence) => {
            bytes[PRODUCER_ID_OFFSET..PRODUCER_ID_OFFSET + 8].copy_from_slice(&7i64.to_be_bytes());
            fix_crc(&mut bytes);
        }
        Some(Defect::Truncated) => bytes.truncate(bytes.len().saturating_sub(3)),
        Some(Defect::ProducerOffsets) => {
            bytes[BASE_OFFSET_OFFSET..BASE_OFFSET_OFFSET + 8]
                .copy_from_slice(&1_000_003i64.to_be_bytes());
            bytes[PARTITION_LEADER_EPOCH_OFFSET..PARTITION_LEADER_EPOCH_OFFSET + 4]
                .copy_from_slice(&17i32.to_be_bytes());
        }
        Some(Defect::MaxTimestamp) => {
            bytes[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
                .copy_from_slice(&12_345i64.to_be_bytes());
            fix_crc(&mut bytes);
        }
    }
    bytes
}

/// The request of `batches`: their encodings back to back.
pub fn encode_request(batches: &[RawBatchSpec]) -> Vec<u8> {
    batches.iter().flat_map(encode).collect()
}

/// The spec's view of `batch`.
pub fn spec_batch(batch: &RawBatchSpec) -> seglog_model::spec::SpecRawBatch {
    seglog_model::spec::SpecRawBatch {
        records: batch
            .records
            .iter()
            .map(|r| seglog_model::spec::SpecRecordInput {
                key: r.key.as_ref().map(|k| k.as_bytes().to_vec()),
                value: r.value.as_ref().map(|v| v.as_bytes().to_vec()),
                timestamp: r.ts,
            })
            .collect(),
        codec: batch
            .codec
            .map_or(0, |c| u8::try_from(c.id()).expect("ids are 0-4")),
        valid: batch.valid_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(n: usize, defect: Option<Defect>) -> RawBatchSpec {
        RawBatchSpec {
            records: (0..n)
                .map(|i| RecordSpec {
                    key: Some(format!("k{i}")),
                    value: Some("v".into()),
                    ts: 10 + i as i64,
                })
                .collect(),
            codec: None,
            defect,
        }
    }

    /// Each defect is refused by exactly the rules that say so, whatever the size.
    #[test]
    fn defects_break_the_rules_they_name() {
        for n in [1, 3] {
            for defect in Defect::ALL {
                let bytes = encode(&batch(n, Some(defect)));
                let checked = seglog::format::produce::check(&bytes, 1 << 20);
                assert_eq!(checked.is_err(), defect.rejects(), "{defect:?} n={n}");
            }
            let fine = encode(&batch(n, None));
            assert_eq!(
                fine,
                RecordBatch::build(0, &new_records(&batch(n, None).records)).encode()
            );
            assert!(seglog::format::produce::check(&fine, 1 << 20).is_ok());
        }
        assert!(seglog::format::produce::check(&encode(&batch(0, None)), 1 << 20).is_err());
    }
}

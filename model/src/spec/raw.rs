//! [`SpecLog::append_batches`]: a produce request of producer-encoded batches, the
//! engine's `Log::append_batches`, in the spec's terms.
//!
//! The byte-level rules (CRC, magic, offset deltas, ...) are the format's; the spec
//! sees each batch as its records, its codec and whether the broker's rules accept
//! its bytes (`valid`). Semantics: all or nothing per call. A call with no batches,
//! or any batch the rules refuse (or whose records [`SpecLog::append_with`] would
//! refuse: none, a timestamp below -1), changes nothing; otherwise it equals
//! appending each batch in turn with its own codec (stored as the producer sent
//! it), stamped LogAppendTime at `log_append_time` when the log stamps appends.

use super::{SpecError, SpecLog, SpecRecordInput, NO_TIMESTAMP};

/// One batch of a produce request, as the spec sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecRawBatch {
    /// The records, in offset order.
    pub records: Vec<SpecRecordInput>,
    /// Kafka's codec id (0 none .. 4 zstd), kept as the producer chose it.
    pub codec: u8,
    /// False if the batch's bytes break a produce-request rule.
    pub valid: bool,
}

impl SpecRawBatch {
    /// Why the batch is refused, if it is.
    fn refusal(&self) -> Option<String> {
        if !self.valid {
            return Some("a batch breaks a produce-request rule".into());
        }
        if self.records.is_empty() {
            return Some("a batch without records".into());
        }
        if self.codec > 4 {
            return Some(format!("codec {}", self.codec));
        }
        self.records
            .iter()
            .find(|r| r.timestamp < NO_TIMESTAMP)
            .map(|r| format!("timestamp {} is below {NO_TIMESTAMP}", r.timestamp))
    }
}

impl SpecLog {
    /// Appends `batches` (all or nothing): returns the first and last offset of the
    /// call.
    pub fn append_batches(
        &mut self,
        batches: &[SpecRawBatch],
        log_append_time: Option<i64>,
    ) -> Result<(i64, i64), SpecError> {
        if batches.is_empty() {
            return Err(SpecError::InvalidArgument("no batches".into()));
        }
        if let Some((i, why)) = batches
            .iter()
            .enumerate()
            .find_map(|(i, b)| b.refusal().map(|why| (i, why)))
        {
            return Err(SpecError::InvalidArgument(format!("batch {i}: {why}")));
        }
        let first = self.next_offset();
        let mut last = first;
        for batch in batches {
            let (_, batch_last) = self
                .append_with(&batch.records, batch.codec, log_append_time)
                .expect("checked above");
            last = batch_last;
        }
        Ok((first, last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(ts: &[i64], valid: bool) -> SpecRawBatch {
        SpecRawBatch {
            records: ts
                .iter()
                .map(|&timestamp| SpecRecordInput {
                    key: Some(b"k".to_vec()),
                    value: None,
                    timestamp,
                })
                .collect(),
            codec: 0,
            valid,
        }
    }

    #[test]
    fn all_or_nothing() {
        let mut log = SpecLog::new(1 << 20);
        assert_eq!(
            log.append_batches(&[batch(&[1, 2], true), batch(&[3], true)], None),
            Ok((0, 2))
        );
        let before = log.clone();
        for bad in [
            vec![batch(&[4], true), batch(&[5], false)],
            vec![batch(&[4], true), batch(&[-2], true)],
            vec![batch(&[], true)],
            vec![],
        ] {
            assert!(log.append_batches(&bad, None).is_err());
            assert_eq!(log, before, "a refused call changes nothing");
        }
        assert_eq!(
            log.append_batches(&[batch(&[6], true)], Some(9)),
            Ok((3, 3))
        );
        assert_eq!(log.read(3).unwrap()[0].timestamp, 9);
    }
}

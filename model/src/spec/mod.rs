//! The reference spec: a plain sequential state machine over an abstract partition log,
//! following docs/design.md section 1 exactly. No IO; every size is computed with the
//! Kafka v2 formula in [`size`].
//!
//! A log is a list of segments of batches; the last segment is the active one. Offsets
//! are assigned once by `append`/`append_control` and never renumbered: retention drops
//! a prefix of closed segments, compaction drops records inside closed segments.
//!
//! A log configured LogAppendTime (Kafka's `message.timestamp.type`) stamps every
//! data batch it takes with its clock: the caller passes the clock as the
//! `log_append_time` of [`SpecLog::append_with`] (a plain batch),
//! [`SpecLog::append_batches`] (a produce request) and
//! [`SpecLog::append_transactional_with`] (a transactional batch). A control batch
//! keeps the timestamp it is given ([`SpecLog::append_control_of`]), as the engine's
//! `Log::append_control` does.

mod clean;
#[cfg(test)]
mod clean_tests;
mod committed;
mod compact;
pub mod edges;
mod fetch;
mod foreign;
mod kafka;
#[cfg(test)]
mod kafka_tests;
pub mod kafka_txn;
mod raw;
mod retain;
pub mod size;
#[cfg(test)]
mod tests;
pub mod txn;
mod txn_log;

use serde::{Deserialize, Serialize};

pub use clean::{
    CleanKnobs, Cleanable, CompactionPolicy, MAP_ENTRY_BYTES, PRODUCER_ID_EXPIRATION_MS_DEFAULT,
};
pub use committed::{aborted_hides, CommittedFetch};
pub use compact::{
    keeps, latest_closed_tombstones, latest_offsets, past_grace, tombstone_expired,
    CompactionSummary,
};
pub use fetch::Fetched;
pub use raw::SpecRawBatch;

/// Kafka's NO_TIMESTAMP, the `max_timestamp` of an empty segment.
pub const NO_TIMESTAMP: i64 = -1;

/// A record as the spec stores it: absolute offset and timestamp, no headers.
///
/// `timestamp` is the time the record *reads as* (retention, the time index,
/// tombstone ages and reads all use it). It differs from the time stored in the
/// batch only in a LogAppendTime batch, where every record reads as the batch's
/// stamp while the batch keeps the producer's create times (Kafka's rule):
/// `create_timestamp` holds that stored time, which only the batch size needs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Rec {
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub timestamp: i64,
    /// The producer's timestamp as stored, when it differs from `timestamp`
    /// (LogAppendTime); `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_timestamp: Option<i64>,
}

impl Rec {
    pub fn new(offset: i64, key: Option<&[u8]>, value: Option<&[u8]>, timestamp: i64) -> Rec {
        Rec {
            offset,
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            timestamp,
            create_timestamp: None,
        }
    }

    /// The timestamp stored in the batch (the producer's).
    pub fn stored_timestamp(&self) -> i64 {
        self.create_timestamp.unwrap_or(self.timestamp)
    }
}

/// A record batch: the unit of append, of size accounting and of compaction output.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Batch {
    pub base_offset: i64,
    pub last_offset_delta: i32,
    pub control: bool,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub records: Vec<Rec>,
    /// Kafka's codec id (attribute bits 0-2): 0 none, 1 gzip, 2 snappy, 3 lz4,
    /// 4 zstd. Only the batch's size depends on it ([`size::batch_bytes`]).
    #[serde(default)]
    pub codec: u8,
    /// LogAppendTime: `max_timestamp` is the append stamp and every record reads as
    /// it (their `timestamp`); compaction keeps it, as it keeps each record's.
    #[serde(default)]
    pub log_append_time: bool,
    /// Kafka's delete horizon (attribute bit 6, `DELETE_HORIZON_FLAG`): set by a
    /// `kafka`-policy cleaning that keeps a tombstone of this batch, which then has
    /// `base_timestamp` equal to it; the tombstones go on a cleaning at or past it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_horizon: Option<i64>,
    /// Kafka's producer id (-1: none, [`NO_PRODUCER_ID`]): a transactional batch's
    /// producer, whose next marker ends its transaction ([`txn`]).
    #[serde(default = "no_producer_id", skip_serializing_if = "is_no_producer_id")]
    pub producer_id: i64,
    /// Attribute bit 4: written by a transactional producer (data or marker).
    /// A transactional data batch is what makes the transaction rules apply.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub transactional: bool,
    /// Kafka's producer epoch (-1, [`NO_PRODUCER_EPOCH`], for a plain batch; the
    /// spec's transactional appends and markers write epoch 0). A `kafka` pass keeps
    /// a marker of a producer with no data batch at its current epoch as an empty
    /// batch ([`kafka_txn::ActiveProducers`]).
    #[serde(
        default = "no_producer_epoch",
        skip_serializing_if = "is_no_producer_epoch"
    )]
    pub producer_epoch: i16,
}

/// Kafka's delete horizon of a batch stamped at `now`: `now + delete_retention_ms`,
/// saturating. The one definition for tombstone batches and emptied transactions'
/// markers (the engine's `rules::kafka::delete_horizon` is the same).
pub fn delete_horizon(now: i64, delete_retention_ms: i64) -> i64 {
    now.saturating_add(delete_retention_ms)
}

/// Kafka's "no epoch", a plain batch's.
pub const NO_PRODUCER_EPOCH: i16 = -1;

fn no_producer_epoch() -> i16 {
    NO_PRODUCER_EPOCH
}

fn is_no_producer_epoch(epoch: &i16) -> bool {
    *epoch == NO_PRODUCER_EPOCH
}

/// Kafka's "no producer" id, a plain batch's.
pub const NO_PRODUCER_ID: i64 = -1;

/// The producer of the workloads' transactional batches and of
/// [`SpecLog::append_control`]'s markers (the engine's `Op::AppendTxn` /
/// `Op::AppendControl` write producer 1, epoch 0).
pub const TXN_PRODUCER_ID: i64 = 1;

fn no_producer_id() -> i64 {
    NO_PRODUCER_ID
}

fn is_no_producer_id(id: &i64) -> bool {
    *id == NO_PRODUCER_ID
}

impl Batch {
    /// True for a transactional data batch (not a marker).
    pub fn is_transactional_data(&self) -> bool {
        self.transactional && !self.control
    }

    /// The last offset this batch covers (kept when compaction drops records).
    pub fn last_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta)
    }

    pub fn bytes(&self) -> u64 {
        size::batch_bytes(self)
    }
}

/// A segment: its base offset (the file name) and its batches.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SpecSegment {
    pub base_offset: i64,
    pub batches: Vec<Batch>,
}

impl SpecSegment {
    pub fn empty(base_offset: i64) -> SpecSegment {
        SpecSegment {
            base_offset,
            batches: Vec::new(),
        }
    }

    pub fn bytes(&self) -> u64 {
        self.batches.iter().map(Batch::bytes).sum()
    }

    pub fn record_count(&self) -> u64 {
        self.batches.iter().map(|b| b.records.len() as u64).sum()
    }

    /// Max of the batches' `max_timestamp`, or -1 for an empty segment.
    pub fn max_timestamp(&self) -> i64 {
        self.batches
            .iter()
            .map(|b| b.max_timestamp)
            .max()
            .unwrap_or(NO_TIMESTAMP)
    }

    /// The offset after this segment's last batch, or its base when empty.
    pub fn next_offset(&self) -> i64 {
        self.batches
            .last()
            .map_or(self.base_offset, |b| b.last_offset() + 1)
    }
}

/// A record a caller appends: the log assigns the offset.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SpecRecordInput {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub timestamp: i64,
}

/// What `segments()` reports for each segment (the engine reports the same).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SegmentView {
    pub base_offset: i64,
    pub closed: bool,
    pub bytes: u64,
    pub records: u64,
    pub max_timestamp: i64,
}

/// A record as `read` returns it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReadRec {
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub timestamp: i64,
    pub control: bool,
}

/// Errors of the spec, mirroring the engine's `InvalidArgument` / `OffsetOutOfRange`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum SpecError {
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("offset {from} out of range [{log_start_offset}, {next_offset}]")]
    OffsetOutOfRange {
        from: i64,
        log_start_offset: i64,
        next_offset: i64,
    },
    /// `from_parts` was given segments that break the log's structure.
    #[error("inconsistent log: {0}")]
    Inconsistent(String),
}

/// The reference partition log. Deserializing goes through [`SpecLog::from_parts`], so
/// a log read from JSON is structurally valid.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "SpecLogParts", into = "SpecLogParts")]
pub struct SpecLog {
    segment_bytes: u64,
    /// Never empty; the last one is active.
    segments: Vec<SpecSegment>,
    /// The cleaner's clean point: `[log_start_offset, clean_point)` is the clean
    /// section, which holds at most one record per key (keyed records of data
    /// batches). `log_start_offset <= clean_point <= ` the active segment's base.
    clean_point: i64,
}

/// The serialized form of a [`SpecLog`].
#[derive(Clone, Debug, Serialize, Deserialize)]
struct SpecLogParts {
    segment_bytes: u64,
    segments: Vec<SpecSegment>,
    /// Absent (older files): the log start, an empty clean section.
    #[serde(default)]
    clean_point: i64,
}

impl TryFrom<SpecLogParts> for SpecLog {
    type Error = SpecError;

    fn try_from(parts: SpecLogParts) -> Result<SpecLog, SpecError> {
        let start = parts.segments.first().map_or(0, |s| s.base_offset);
        let clean_point = parts.clean_point;
        let mut log = SpecLog::from_parts(parts.segment_bytes, start, parts.segments)?;
        log.set_clean_point(clean_point.max(start))?;
        Ok(log)
    }
}

impl From<SpecLog> for SpecLogParts {
    fn from(log: SpecLog) -> SpecLogParts {
        SpecLogParts {
            segment_bytes: log.segment_bytes,
            segments: log.segments,
            clean_point: log.clean_point,
        }
    }
}

/// Kafka's control record key and value: key = version 0, type (0 abort, 1 commit);
/// value = version 0, coordinator epoch 0.
pub fn control_record(offset: i64, commit: bool, timestamp: i64) -> Rec {
    let kind = u8::from(commit);
    Rec::new(
        offset,
        Some(&[0, 0, 0, kind]),
        Some(&[0, 0, 0, 0, 0, 0]),
        timestamp,
    )
}

impl SpecLog {
    /// An empty log: one empty active segment at offset 0.
    pub fn new(segment_bytes: u64) -> SpecLog {
        assert!(segment_bytes > 0, "segment_bytes must be positive");
        SpecLog {
            segment_bytes,
            segments: vec![SpecSegment::empty(0)],
            clean_point: 0,
        }
    }

    /// A log from raw segments (e.g. engine state read back), checked for structure:
    /// at least one segment, strictly increasing bases, batches in offset order inside
    /// their segment's range, records inside their batch, `log_start_offset` equal to
    /// the first base.
    pub fn from_parts(
        segment_bytes: u64,
        log_start_offset: i64,
        segments: Vec<SpecSegment>,
    ) -> Result<SpecLog, SpecError> {
        let bad = |m: String| Err(SpecError::Inconsistent(m));
        let Some(first) = segments.first() else {
            return bad("a log needs at least one segment".into());
        };
        if first.base_offset != log_start_offset {
            return bad(format!(
                "log_start_offset {log_start_offset} != first segment base {}",
                first.base_offset
            ));
        }
        let mut next_min = log_start_offset;
        for (i, segment) in segments.iter().enumerate() {
            if segment.base_offset < next_min {
                return bad(format!(
                    "segment {} overlaps its predecessor",
                    segment.base_offset
                ));
            }
            if i > 0 && segment.base_offset <= segments[i - 1].base_offset {
                return bad(format!(
                    "segment bases not increasing at {}",
                    segment.base_offset
                ));
            }
            next_min = segment.base_offset;
            for batch in &segment.batches {
                check_batch(batch, next_min).map_err(SpecError::Inconsistent)?;
                next_min = batch.last_offset() + 1;
            }
        }
        Ok(SpecLog {
            segment_bytes,
            segments,
            clean_point: log_start_offset,
        })
    }

    pub fn segment_bytes(&self) -> u64 {
        self.segment_bytes
    }

    pub fn log_start_offset(&self) -> i64 {
        self.segments[0].base_offset
    }

    pub fn next_offset(&self) -> i64 {
        self.active().next_offset()
    }

    /// The raw segments, oldest first; the last is active.
    pub fn raw_segments(&self) -> &[SpecSegment] {
        &self.segments
    }

    pub fn closed_segments(&self) -> &[SpecSegment] {
        &self.segments[..self.segments.len() - 1]
    }

    pub fn active(&self) -> &SpecSegment {
        self.segments
            .last()
            .expect("a log always has an active segment")
    }

    pub fn segments(&self) -> Vec<SegmentView> {
        let closed_count = self.segments.len() - 1;
        self.segments
            .iter()
            .enumerate()
            .map(|(i, s)| SegmentView {
                base_offset: s.base_offset,
                closed: i < closed_count,
                bytes: s.bytes(),
                records: s.record_count(),
                max_timestamp: s.max_timestamp(),
            })
            .collect()
    }

    /// Appends one data batch at `next_offset`: returns (first offset, last offset).
    pub fn append(&mut self, records: &[SpecRecordInput]) -> Result<(i64, i64), SpecError> {
        self.append_with(records, 0, None)
    }

    /// [`SpecLog::append`] of a batch with codec `codec` (Kafka's id), stamped
    /// LogAppendTime at `log_append_time` when given: then `max_timestamp` is the
    /// stamp and every record reads as it, while the batch stores the records'
    /// create times (which its size depends on).
    pub fn append_with(
        &mut self,
        records: &[SpecRecordInput],
        codec: u8,
        log_append_time: Option<i64>,
    ) -> Result<(i64, i64), SpecError> {
        let batch = self.data_batch(records, codec, log_append_time)?;
        Ok(self.append_batch(batch))
    }

    /// The data batch [`SpecLog::append_with`] appends at `next_offset` (plain).
    fn data_batch(
        &self,
        records: &[SpecRecordInput],
        codec: u8,
        log_append_time: Option<i64>,
    ) -> Result<Batch, SpecError> {
        if codec > 4 {
            return Err(SpecError::InvalidArgument(format!("codec {codec}")));
        }
        let Some(first) = records.first() else {
            return Err(SpecError::InvalidArgument("empty append".into()));
        };
        // Kafka's rule: a timestamp is >= 0 or NO_TIMESTAMP.
        if let Some(r) = records.iter().find(|r| r.timestamp < NO_TIMESTAMP) {
            return Err(SpecError::InvalidArgument(format!(
                "timestamp {} is below {NO_TIMESTAMP}",
                r.timestamp
            )));
        }
        let base_offset = self.next_offset();
        let recs: Vec<Rec> = records
            .iter()
            .zip(base_offset..)
            .map(|(r, offset)| Rec {
                offset,
                key: r.key.clone(),
                value: r.value.clone(),
                timestamp: log_append_time.unwrap_or(r.timestamp),
                create_timestamp: log_append_time
                    .filter(|stamp| *stamp != r.timestamp)
                    .map(|_| r.timestamp),
            })
            .collect();
        let batch = Batch {
            base_offset,
            last_offset_delta: i32::try_from(records.len() - 1)
                .map_err(|_| SpecError::InvalidArgument("batch too large".into()))?,
            control: false,
            base_timestamp: first.timestamp,
            max_timestamp: log_append_time.unwrap_or_else(|| {
                records
                    .iter()
                    .map(|r| r.timestamp)
                    .max()
                    .unwrap_or(NO_TIMESTAMP)
            }),
            records: recs,
            codec,
            log_append_time: log_append_time.is_some(),
            delete_horizon: None,
            producer_id: NO_PRODUCER_ID,
            transactional: false,
            producer_epoch: NO_PRODUCER_EPOCH,
        };
        Ok(batch)
    }

    /// Appends one transactional data batch of producer `producer_id` (CreateTime,
    /// uncompressed): it opens the producer's transaction if none is open, and the
    /// producer's next marker ends it ([`txn`]). Returns (first offset, last offset).
    pub fn append_transactional(
        &mut self,
        producer_id: i64,
        records: &[SpecRecordInput],
    ) -> Result<(i64, i64), SpecError> {
        self.append_transactional_with(producer_id, records, None)
    }

    /// [`SpecLog::append_transactional`] stamped LogAppendTime at `log_append_time`
    /// when given (a LogAppendTime log's clock), as [`SpecLog::append_with`] stamps a
    /// plain batch.
    pub fn append_transactional_with(
        &mut self,
        producer_id: i64,
        records: &[SpecRecordInput],
        log_append_time: Option<i64>,
    ) -> Result<(i64, i64), SpecError> {
        if producer_id < 0 {
            return Err(SpecError::InvalidArgument(format!(
                "a transactional producer needs an id >= 0, got {producer_id}"
            )));
        }
        let batch = Batch {
            producer_id,
            transactional: true,
            producer_epoch: 0,
            ..self.data_batch(records, 0, log_append_time)?
        };
        Ok(self.append_batch(batch))
    }

    /// Appends one control batch (a COMMIT or ABORT marker) of producer
    /// [`TXN_PRODUCER_ID`]: returns its offset twice.
    pub fn append_control(&mut self, commit: bool, timestamp: i64) -> (i64, i64) {
        self.append_control_of(TXN_PRODUCER_ID, commit, timestamp)
    }

    /// [`SpecLog::append_control`] for producer `producer_id`: the marker ends the
    /// producer's open transaction, if any (Kafka writes markers transactional).
    pub fn append_control_of(
        &mut self,
        producer_id: i64,
        commit: bool,
        timestamp: i64,
    ) -> (i64, i64) {
        let offset = self.next_offset();
        let batch = Batch {
            base_offset: offset,
            last_offset_delta: 0,
            control: true,
            base_timestamp: timestamp,
            max_timestamp: timestamp,
            records: vec![control_record(offset, commit, timestamp)],
            codec: 0,
            log_append_time: false,
            delete_horizon: None,
            producer_id,
            transactional: true,
            producer_epoch: 0,
        };
        self.append_batch(batch)
    }

    /// Auto-roll, then write `batch` into the active segment. The batch's offsets were
    /// assigned from `next_offset`, which a roll does not change.
    fn append_batch(&mut self, batch: Batch) -> (i64, i64) {
        assert_eq!(batch.base_offset, self.next_offset());
        let active = self.active();
        if !active.batches.is_empty() && active.bytes() + batch.bytes() > self.segment_bytes {
            self.roll();
        }
        let range = (batch.base_offset, batch.last_offset());
        self.segments
            .last_mut()
            .expect("active segment")
            .batches
            .push(batch);
        assert_eq!(self.next_offset(), range.1 + 1);
        range
    }

    /// Closes a non-empty active segment and opens a new one at `next_offset`; a no-op
    /// on an empty active segment.
    pub fn roll(&mut self) {
        if self.active().batches.is_empty() {
            return;
        }
        let next_offset = self.next_offset();
        self.segments.push(SpecSegment::empty(next_offset));
    }

    /// Every stored record with offset >= `from`, in offset order.
    pub fn read(&self, from: i64) -> Result<Vec<ReadRec>, SpecError> {
        if from < self.log_start_offset() || from > self.next_offset() {
            return Err(SpecError::OffsetOutOfRange {
                from,
                log_start_offset: self.log_start_offset(),
                next_offset: self.next_offset(),
            });
        }
        Ok(self
            .batches()
            .flat_map(|b| {
                b.records
                    .iter()
                    .filter(|r| r.offset >= from)
                    .map(|r| ReadRec {
                        offset: r.offset,
                        key: r.key.clone(),
                        value: r.value.clone(),
                        timestamp: r.timestamp,
                        control: b.control,
                    })
            })
            .collect())
    }

    /// `read` as the engine's `read(from, max_bytes)` bounds it: whole batches that hold
    /// a record >= `from`, oldest first, until the next batch would take the total over
    /// `max_bytes`; always at least one batch when there is one.
    pub fn read_max(&self, from: i64, max_bytes: u64) -> Result<Vec<ReadRec>, SpecError> {
        let all = self.read(from)?;
        let mut total_bytes = 0;
        let mut last_offset = None;
        for batch in self
            .batches()
            .filter(|b| b.records.iter().any(|r| r.offset >= from))
        {
            let bytes = batch.bytes();
            if last_offset.is_some() && total_bytes + bytes > max_bytes {
                break;
            }
            total_bytes += bytes;
            last_offset = Some(batch.last_offset());
        }
        Ok(match last_offset {
            Some(end) => all.into_iter().filter(|r| r.offset <= end).collect(),
            None => all,
        })
    }

    /// All batches, oldest first.
    pub fn batches(&self) -> impl Iterator<Item = &Batch> {
        self.segments.iter().flat_map(|s| s.batches.iter())
    }

    /// All records with their batch's control flag, oldest first.
    pub fn records(&self) -> impl Iterator<Item = (&Rec, bool)> {
        self.batches()
            .flat_map(|b| b.records.iter().map(move |r| (r, b.control)))
    }
}

fn check_batch(batch: &Batch, next_min: i64) -> Result<(), String> {
    if batch.base_offset < next_min {
        return Err(format!(
            "batch {} overlaps offset {next_min}",
            batch.base_offset
        ));
    }
    if batch.last_offset_delta < 0 {
        return Err(format!("batch {} has a negative delta", batch.base_offset));
    }
    // An empty batch (record count 0) is what a `kafka` pass leaves of a batch
    // that keeps its producer's state (`kafka_txn` rule 5).
    if batch.records.is_empty() {
        return Ok(());
    }
    if batch.control && batch.records.len() != 1 {
        return Err(format!(
            "control batch {} must hold one record",
            batch.base_offset
        ));
    }
    let mut prev = batch.base_offset - 1;
    for rec in &batch.records {
        if rec.offset <= prev || rec.offset > batch.last_offset() {
            return Err(format!(
                "record {} outside or out of order in its batch",
                rec.offset
            ));
        }
        prev = rec.offset;
    }
    let max_timestamp = batch.records.iter().map(|r| r.timestamp).max();
    if max_timestamp != Some(batch.max_timestamp) {
        return Err(format!(
            "batch {} max_timestamp mismatch",
            batch.base_offset
        ));
    }
    Ok(())
}

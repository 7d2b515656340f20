//! Workloads: one vocabulary of operations, applied identically to the engine and to
//! the reference spec (`seglog_model::spec::SpecLog`), and one view of a log's state to
//! compare the two. The conformance test, the crash sweep, crash-scenario files and the
//! fuzz targets all speak this vocabulary, so a counterexample from any of them is a
//! list of [`Op`]s that replays everywhere.

use serde::{Deserialize, Serialize};

pub mod engine;
pub mod interleave;
pub mod raw;
pub mod spec;

pub use raw::{Defect, RawBatchSpec};

/// A record as workloads and scenario files write it: UTF-8 key and value, each
/// optional (absent key = keyless record; absent value = tombstone).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RecordSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub ts: i64,
}

/// One operation of a workload.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Append one batch, compressed with `codec` and stamped LogAppendTime at
    /// `log_append_time` when given (absent: uncompressed, CreateTime).
    Append {
        records: Vec<RecordSpec>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        codec: Option<seglog::format::Compression>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        log_append_time: Option<i64>,
    },
    /// Append producer-encoded batches in one `Log::append_batches` call (all or
    /// nothing): each encoded as a producer encodes it ([`raw::encode`]), some with
    /// a deliberate defect.
    AppendRaw {
        batches: Vec<RawBatchSpec>,
    },
    /// Append one transactional batch of producer 1 (epoch 0), the producer
    /// `AppendControl`'s markers end (`Log::append_transactional`; the spec's
    /// `SpecLog::append_transactional`): compaction of either policy applies the
    /// transaction rules to a log holding such batches.
    AppendTxn {
        records: Vec<RecordSpec>,
        /// The producer (epoch 0; absent: 1).
        #[serde(default = "txn_producer", skip_serializing_if = "is_txn_producer")]
        producer: i64,
    },
    /// Append one control batch (a COMMIT marker when `commit`, else ABORT) of
    /// `producer` (epoch 0; absent: 1).
    AppendControl {
        commit: bool,
        ts: i64,
        #[serde(default = "txn_producer", skip_serializing_if = "is_txn_producer")]
        producer: i64,
    },
    Roll,
    Flush,
    /// Close the log cleanly (fsyncs and the clean-shutdown marker) and open it
    /// again, as a broker restart does.
    Close,
    /// Close the log cleanly, delete every closed segment's `.index` and
    /// `.timeindex` (an operator action Kafka allows: its open rebuilds missing
    /// index files), and open it again. The open rebuilds them from the `.log`
    /// files and makes them durable before a recovery point vouches for them.
    DropIndexes,
    Retain {
        now: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retention_ms: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retention_bytes: Option<i64>,
    },
    Compact {
        now: i64,
        delete_retention_ms: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        segment_bytes: Option<u64>,
    },
    /// Close the log cleanly, compact its closed directory offline
    /// (`compaction::compact_dir`: the seed rules, no `Log` open, the active segment
    /// copied rather than linked) and open it again, as an operator's offline tool
    /// does. The model's outcome is [`Op::Compact`]'s.
    CompactClosed {
        now: i64,
        delete_retention_ms: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        segment_bytes: Option<u64>,
    },
    /// One cleaning pass with explicit knobs (`Log::clean`): a bounded offset map
    /// (`dedupe_buffer_bytes`, 24 bytes a key) and a compaction lag.
    Clean {
        now: i64,
        delete_retention_ms: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        segment_bytes: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dedupe_buffer_bytes: Option<u64>,
        #[serde(default, skip_serializing_if = "is_zero")]
        min_compaction_lag_ms: i64,
        /// The rules of the pass (absent: `seed`).
        #[serde(default, skip_serializing_if = "is_seed")]
        policy: seglog::compaction::CompactionPolicy,
        /// Kafka's `producer.id.expiration.ms` (absent: one day, its default).
        #[serde(
            default = "default_producer_id_expiration_ms",
            skip_serializing_if = "is_default_producer_id_expiration_ms"
        )]
        producer_id_expiration_ms: i64,
    },
    /// A cleaning pass (the knobs of `Log::compact`) run as a concurrent cleaner
    /// runs it: snapshot and build, then `records` one-record appends (with a roll
    /// after the first half when `roll`), not flushed, then the swap that flushes
    /// and links the tail (docs/design.md section 6). Deterministic: the crash sweep stops before
    /// every file-system call of the interleaving.
    CleanWithAppends {
        now: i64,
        delete_retention_ms: i64,
        records: u32,
        #[serde(default)]
        roll: bool,
        /// When the appends run: before the build's `appends_at`-th file-system
        /// call, reads included (0: before it reads anything), the build on a
        /// thread of its own waiting there ([`interleave`]); absent, or past the
        /// build's last call: after the build, before the swap.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        appends_at: Option<u64>,
    },
    /// Read everything from `from`; compared, never changes state.
    Read {
        from: i64,
    },
}

impl Op {
    /// An uncompressed CreateTime append of `records`.
    pub fn append(records: Vec<RecordSpec>) -> Op {
        Op::Append {
            records,
            codec: None,
            log_append_time: None,
        }
    }

    /// True for operations after which everything before them is durable
    /// (see docs/design.md section 1: roll, flush, retain and compact make the log durable).
    pub fn is_durability_point(&self) -> bool {
        matches!(
            self,
            Op::Roll
                | Op::Flush
                | Op::Close
                | Op::DropIndexes
                | Op::Retain { .. }
                | Op::Compact { .. }
                | Op::CompactClosed { .. }
                | Op::Clean { .. }
                | Op::CleanWithAppends { .. }
        )
    }

    /// True for the operations that append batches (and may roll first).
    pub fn is_append(&self) -> bool {
        matches!(
            self,
            Op::Append { .. }
                | Op::AppendRaw { .. }
                | Op::AppendTxn { .. }
                | Op::AppendControl { .. }
        )
    }

    /// True if the operation can change the log.
    pub fn is_mutation(&self) -> bool {
        !matches!(self, Op::Read { .. })
    }
}

/// The appends of [`Op::CleanWithAppends`] between its build and its swap, in
/// order: one record each (`None`: the roll after the first half).
pub fn clean_with_appends_steps(records: u32, roll: bool, now: i64) -> Vec<Option<RecordSpec>> {
    let record = |j: u32| {
        Some(RecordSpec {
            key: Some(format!("t{}", j % 2)),
            value: Some(format!("w{j}")),
            ts: now,
        })
    };
    let half = records.div_ceil(2);
    let mut out: Vec<Option<RecordSpec>> = (0..half).map(record).collect();
    if roll {
        out.push(None);
    }
    out.extend((half..records).map(record));
    out
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match serde_json::to_string(self) {
            Ok(s) => f.write_str(&s),
            Err(_) => write!(f, "{self:?}"),
        }
    }
}

/// One stored record, as both the engine and the spec report it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RecordView {
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub ts: i64,
    pub control: bool,
}

/// One segment's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SegmentView {
    pub base_offset: i64,
    pub closed: bool,
    pub bytes: u64,
    pub records: u64,
    pub max_timestamp: i64,
}

/// Everything observable about a log, for comparing the engine with the spec.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LogView {
    pub log_start_offset: i64,
    pub next_offset: i64,
    /// The cleaner's clean point (docs/design.md section 1).
    #[serde(default)]
    pub clean_point: i64,
    pub segments: Vec<SegmentView>,
    pub records: Vec<RecordView>,
}

impl LogView {
    /// Human-readable differences, empty when equal.
    pub fn diff(&self, other: &LogView) -> Vec<String> {
        let mut out = Vec::new();
        if self.log_start_offset != other.log_start_offset {
            out.push(format!(
                "log_start_offset: {} vs {}",
                self.log_start_offset, other.log_start_offset
            ));
        }
        if self.next_offset != other.next_offset {
            out.push(format!(
                "next_offset: {} vs {}",
                self.next_offset, other.next_offset
            ));
        }
        if self.clean_point != other.clean_point {
            out.push(format!(
                "clean_point: {} vs {}",
                self.clean_point, other.clean_point
            ));
        }
        if self.segments != other.segments {
            out.push(format!(
                "segments: {:?} vs {:?}",
                self.segments, other.segments
            ));
        }
        let n = self.records.len().max(other.records.len());
        for i in 0..n {
            match (self.records.get(i), other.records.get(i)) {
                (Some(a), Some(b)) if a == b => {}
                (a, b) => {
                    out.push(format!("record #{i}: {a:?} vs {b:?}"));
                    break;
                }
            }
        }
        out
    }
}

/// What an operation returned, for comparing engine and spec step by step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum OpOutcome {
    Appended {
        base_offset: i64,
        last_offset: i64,
    },
    Rolled,
    Flushed,
    /// The log was closed and reopened; `clean` if the open found the marker and read
    /// no segment data (the spec says it always does).
    Restarted {
        clean: bool,
    },
    Retained {
        deleted_segments: Vec<i64>,
    },
    Compacted {
        records_before: u64,
        records_after: u64,
        segments_before: u64,
        segments_after: u64,
        bytes_before: u64,
        bytes_after: u64,
        /// Keyless records dropped (the `kafka` policy; absent: 0).
        #[serde(default, skip_serializing_if = "is_zero_u64")]
        keyless_dropped: u64,
    },
    Read {
        records: Vec<RecordView>,
    },
    /// The operation was rejected (bad arguments, out of range); both sides must agree.
    Rejected,
}

/// Converts workload records into the engine's append input.
pub fn new_records(records: &[RecordSpec]) -> Vec<seglog::format::NewRecord> {
    records
        .iter()
        .map(|r| {
            seglog::format::NewRecord::new(
                r.key.as_ref().map(|k| k.as_bytes().to_vec()),
                r.value.as_ref().map(|v| v.as_bytes().to_vec()),
                r.ts,
            )
        })
        .collect()
}

fn is_seed(policy: &seglog::compaction::CompactionPolicy) -> bool {
    *policy == seglog::compaction::CompactionPolicy::Seed
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn default_producer_id_expiration_ms() -> i64 {
    seglog::compaction::PRODUCER_ID_EXPIRATION_MS_DEFAULT
}

fn is_default_producer_id_expiration_ms(ms: &i64) -> bool {
    *ms == default_producer_id_expiration_ms()
}

/// The producer of transactional ops that name none.
pub const TXN_PRODUCER: i64 = 1;

fn txn_producer() -> i64 {
    TXN_PRODUCER
}

fn is_txn_producer(producer: &i64) -> bool {
    *producer == TXN_PRODUCER
}

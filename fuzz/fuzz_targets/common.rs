//! Structured fuzz inputs shared by the targets (and by `tests/fuzz_corpus.rs`, which
//! includes this file by path).
//!
//! Every size is bounded by a newtype, so a fuzzer spends its time on interesting
//! shapes instead of huge values: a few keys (so compaction has something to do),
//! small timestamps (so retention and tombstone grace both trigger), small segment
//! sizes (so rolls and grouping happen). Operations convert into the shared workload
//! vocabulary [`seglog_suite::workload::Op`]: the fuzz targets never re-implement what the
//! engine or the spec does, they only drive both.

use arbitrary::{Arbitrary, Result, Unstructured};
use seglog_suite::workload::{Op, RecordSpec};

/// Where the targets keep the log inside the simulated file system (as the sweep does).
pub const LOG_DIR: &str = seglog_suite::sweep::LOG_DIR;

use seglog::LogConfig;

/// At most `N` items (the length is read from the input, not from its end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Few<T, const N: usize>(pub Vec<T>);

impl<'a, T: Arbitrary<'a>, const N: usize> Arbitrary<'a> for Few<T, N> {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let len = u.int_in_range(0..=N)?;
        let mut items = Vec::with_capacity(len);
        for _ in 0..len {
            items.push(T::arbitrary(u)?);
        }
        Ok(Few(items))
    }
}

/// One of four keys: enough to make compaction keep, drop and tombstone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key(pub u8);

impl<'a> Arbitrary<'a> for Key {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(Key(u.int_in_range(0..=3)?))
    }
}

impl Key {
    pub fn text(self) -> String {
        ["a", "b", "c", "d"][usize::from(self.0 % 4)].to_string()
    }
}

/// A value of 1 to 24 bytes (sizes move segment boundaries and grouping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Value(pub u8);

impl<'a> Arbitrary<'a> for Value {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(Value(u.int_in_range(0..=23)?))
    }
}

impl Value {
    pub fn text(self) -> String {
        format!("{}{}", self.0 % 10, "v".repeat(usize::from(self.0)))
    }
}

/// A timestamp or clock reading in 0..=2047 ms: small, so retention windows and
/// tombstone grace periods both land inside the range. Not monotonic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ms(pub i64);

impl<'a> Arbitrary<'a> for Ms {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(Ms(u.int_in_range(0..=2047)?))
    }
}

/// A record timestamp: mostly like [`Ms`], one time in eight an edge of the valid
/// range (-1 = NO_TIMESTAMP, 0, `i64::MAX - 1`, `i64::MAX`), so size formulas,
/// timestamp deltas and the retention and tombstone rules meet the extremes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordTs(pub i64);

impl<'a> Arbitrary<'a> for RecordTs {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        if u.ratio(1u8, 8)? {
            return Ok(RecordTs(*u.choose(&[-1, 0, i64::MAX - 1, i64::MAX])?));
        }
        Ok(RecordTs(u.int_in_range(0..=2047)?))
    }
}

/// A duration that may be invalid (-1) so argument checks are compared too, and
/// now and then `i64::MAX` (nothing ever expires).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duration(pub i64);

impl<'a> Arbitrary<'a> for Duration {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        if u.ratio(1u8, 16)? {
            return Ok(Duration(i64::MAX));
        }
        Ok(Duration(u.int_in_range(-1..=2047)?))
    }
}

/// A byte budget that may be invalid (0 or -1 for retention), now and then
/// `i64::MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bytes(pub i64);

impl<'a> Arbitrary<'a> for Bytes {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        if u.ratio(1u8, 16)? {
            return Ok(Bytes(i64::MAX));
        }
        Ok(Bytes(u.int_in_range(-1..=1500)?))
    }
}

/// A read position around the offsets a short workload reaches (out of range included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct From(pub i64);

impl<'a> Arbitrary<'a> for From {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(From(u.int_in_range(-1..=80)?))
    }
}

#[derive(Debug, Clone, Arbitrary, PartialEq, Eq)]
pub struct FuzzRecord {
    pub key: Option<Key>,
    /// `None` is a tombstone.
    pub value: Option<Value>,
    pub ts: RecordTs,
}

impl FuzzRecord {
    pub fn spec(&self) -> RecordSpec {
        RecordSpec {
            key: self.key.map(Key::text),
            value: self.value.map(Value::text),
            ts: self.ts.0,
        }
    }
}

/// One to four records (an empty append is an argument error on both sides, but the
/// engine reports it as an error, not as a rejected op; the vocabulary never makes one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Records(pub Vec<FuzzRecord>);

impl<'a> Arbitrary<'a> for Records {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let len = u.int_in_range(1..=4)?;
        let mut records = Vec::with_capacity(len);
        for _ in 0..len {
            records.push(FuzzRecord::arbitrary(u)?);
        }
        Ok(Records(records))
    }
}

/// A workload operation with bounded arguments.
#[derive(Debug, Clone, Arbitrary, PartialEq, Eq)]
pub enum FuzzOp {
    Append(Records),
    AppendControl {
        commit: bool,
        ts: Ms,
    },
    Roll,
    Flush,
    Retain {
        now: Ms,
        retention_ms: Option<Duration>,
        retention_bytes: Option<Bytes>,
    },
    Compact {
        now: Ms,
        delete_retention_ms: Duration,
        segment_bytes: Option<Bytes>,
    },
    Read {
        from: From,
    },
}

impl FuzzOp {
    /// The same operation in the shared workload vocabulary.
    pub fn op(&self) -> Op {
        match self {
            FuzzOp::Append(records) => Op::Append {
                records: records.0.iter().map(FuzzRecord::spec).collect(),
                codec: None,
                log_append_time: None,
            },
            FuzzOp::AppendControl { commit, ts } => Op::AppendControl {
                commit: *commit,
                ts: ts.0,
                producer: seglog_suite::workload::TXN_PRODUCER,
            },
            FuzzOp::Roll => Op::Roll,
            FuzzOp::Flush => Op::Flush,
            FuzzOp::Retain {
                now,
                retention_ms,
                retention_bytes,
            } => Op::Retain {
                now: now.0,
                retention_ms: retention_ms.map(|d| d.0),
                retention_bytes: retention_bytes.map(|b| b.0),
            },
            FuzzOp::Compact {
                now,
                delete_retention_ms,
                segment_bytes,
            } => Op::Compact {
                now: now.0,
                delete_retention_ms: delete_retention_ms.0,
                // 0 is an argument error on both sides; keep it reachable.
                segment_bytes: segment_bytes.map(|b| b.0.unsigned_abs()),
            },
            FuzzOp::Read { from } => Op::Read { from: from.0 },
        }
    }
}

/// A step of `ops_vs_model`: an operation, or a process crash and reopen (everything
/// completed survives, so the log must come back exactly as it was).
#[derive(Debug, Clone, Arbitrary, PartialEq, Eq)]
pub enum Step {
    Op(FuzzOp),
    Reopen,
}

/// A small log configuration: segments of 64 B to 2 KiB roll often; any index interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FuzzConfig {
    pub segment_bytes: u64,
    pub index_interval_bytes: u64,
}

impl<'a> Arbitrary<'a> for FuzzConfig {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(FuzzConfig {
            segment_bytes: u.int_in_range(64..=2048)?,
            index_interval_bytes: u.int_in_range(0..=256)?,
        })
    }
}

impl FuzzConfig {
    pub fn log_config(self) -> LogConfig {
        LogConfig {
            segment_bytes: self.segment_bytes,
            index_interval_bytes: self.index_interval_bytes,
            ..LogConfig::default()
        }
    }
}

/// Input of `ops_vs_model`.
#[derive(Debug, Clone, Arbitrary)]
pub struct OpsInput {
    pub config: FuzzConfig,
    pub steps: Few<Step, 32>,
}

/// How a crash of `crash_recovery` ends.
#[derive(Debug, Clone, Copy, Arbitrary, PartialEq, Eq)]
pub enum CrashKind {
    /// The process dies: every completed call survives.
    Process,
    /// Power loss: pick one of the enumerated disk images (index modulo their count).
    PowerLoss { image: u8 },
}

/// Input of `crash_recovery`.
#[derive(Debug, Clone, Arbitrary)]
pub struct CrashInput {
    pub config: FuzzConfig,
    pub ops: Few<FuzzOp, 12>,
    /// The crash comes before this mutating file-system call (modulo the run's count).
    pub crash_before: u16,
    pub crash: CrashKind,
    /// Crash again during the first recovery, before this recovery call (modulo its
    /// count), then recover once more.
    pub recovery_crash: Option<(u8, CrashKind)>,
}

// ---- open_dir ----

/// One batch of a hand-built segment.
#[derive(Debug, Clone, Arbitrary)]
pub struct DirBatch {
    pub records: Records,
    /// Bit `i` clear: record `i` was compacted away (the batch keeps its offsets).
    pub kept_mask: u8,
    /// A control batch instead (COMMIT if true).
    pub control: Option<bool>,
    /// Offsets skipped before this batch (a gap left by compaction).
    pub gap: Gap,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap(pub i64);

impl<'a> Arbitrary<'a> for Gap {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(Gap(u.int_in_range(0..=3)?))
    }
}

/// What the index files of a segment hold.
#[derive(Debug, Clone, Arbitrary)]
pub enum IndexFiles {
    /// Exactly what the `.log` implies.
    Exact,
    /// No index files.
    Missing,
    /// The exact files cut to this many bytes (a strict prefix, or all of it).
    Cut(u8),
    /// Arbitrary bytes.
    Garbage(Few<u8, 24>),
}

#[derive(Debug, Clone, Arbitrary)]
pub struct DirSegment {
    /// Offsets skipped between the previous segment's next offset and this base.
    pub gap: Gap,
    pub batches: Few<DirBatch, 4>,
    pub indexes: IndexFiles,
}

/// Damage applied after the directory is built. `file` picks one of the directory's
/// files in name order (modulo their count).
#[derive(Debug, Clone, Arbitrary)]
pub enum Damage {
    Truncate {
        file: u8,
        at: u16,
    },
    FlipBit {
        file: u8,
        at: u16,
        bit: u8,
    },
    AppendBytes {
        file: u8,
        bytes: Few<u8, 16>,
    },
    Remove {
        file: u8,
    },
    /// A header field of one batch of a `.log` set to `value`, the batch's CRC-32C
    /// recomputed: a CRC-valid batch with impossible or extreme fields, which no
    /// writer of ours produces and no checksum refuses (`seglog_suite::damage::Change::Forge`).
    Forge {
        file: u8,
        batch: u8,
        field: HeaderField,
        value: Extreme,
    },
}

/// A batch header field a forgery sets.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum HeaderField {
    BaseOffset,
    LastOffsetDelta,
    RecordCount,
    BaseTimestamp,
    MaxTimestamp,
    ProducerId,
    ProducerEpoch,
    BaseSequence,
    Attributes,
}

impl HeaderField {
    /// Its position in the batch and its size in bytes.
    pub fn place(self) -> (usize, u8) {
        use seglog::format::batch::*;
        match self {
            HeaderField::BaseOffset => (BASE_OFFSET_OFFSET, 8),
            HeaderField::LastOffsetDelta => (LAST_OFFSET_DELTA_OFFSET, 4),
            HeaderField::RecordCount => (RECORD_COUNT_OFFSET, 4),
            HeaderField::BaseTimestamp => (BASE_TIMESTAMP_OFFSET, 8),
            HeaderField::MaxTimestamp => (MAX_TIMESTAMP_OFFSET, 8),
            HeaderField::ProducerId => (PRODUCER_ID_OFFSET, 8),
            HeaderField::ProducerEpoch => (PRODUCER_EPOCH_OFFSET, 2),
            HeaderField::BaseSequence => (BASE_SEQUENCE_OFFSET, 4),
            HeaderField::Attributes => (ATTRIBUTES_OFFSET, 2),
        }
    }
}

/// A value that is, three times in four, an edge of some integer type (a forged
/// field's low bytes are written, so `i64::MAX` in a 4-byte field is -1).
#[derive(Debug, Clone, Copy)]
pub struct Extreme(pub i64);

impl<'a> Arbitrary<'a> for Extreme {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        if u.ratio(3u8, 4)? {
            let edges = [
                i64::MAX,
                i64::MIN,
                i64::MAX - 1,
                -1,
                0,
                1,
                i64::from(i32::MAX),
                i64::from(i32::MIN),
                i64::from(i16::MAX),
                i64::from(u16::MAX),
            ];
            return Ok(Extreme(*u.choose(&edges)?));
        }
        Ok(Extreme(i64::arbitrary(u)?))
    }
}

/// A file the log does not own; recovery must leave it alone.
#[derive(Debug, Clone, Arbitrary)]
pub enum Stranger {
    /// A temp file of some other module.
    Temp,
    /// A file with a segment-like but invalid name.
    OddName,
    /// A subdirectory holding a file.
    Subdir,
}

/// The retention checkpoint (`log-start-offset.checkpoint`) in the log directory.
#[derive(Debug, Clone, Arbitrary)]
pub enum CheckpointFile {
    /// A valid checkpoint at the first base plus this many offsets (modulo the span of
    /// the segments, plus 2): recovery removes the segments wholly below it.
    At(u8),
    /// Bytes that are not a checkpoint: the open must refuse and change nothing.
    Garbage(Few<u8, 20>),
}

/// Leftovers of the retention and install protocols, next to or inside the log dir.
#[derive(Debug, Clone, Arbitrary)]
pub enum Leftover {
    /// `log-start-offset.checkpoint.tmp` (never the commit point).
    CheckpointTmp,
    /// `D.compact-tmp/` holding a segment file, with no manifest: an uncommitted
    /// compaction.
    UncommittedTmp,
    /// `D.compact-manifest.tmp`.
    ManifestTmp,
    /// `D.compact-manifest` holding bytes that are not a manifest.
    DamagedManifest(Few<u8, 24>),
}

/// Input of `open_dir`: a small directory of segment, index, checkpoint and other
/// files, with install-protocol siblings.
#[derive(Debug, Clone, Arbitrary)]
pub struct DirInput {
    pub config: FuzzConfig,
    /// Offset of the first segment.
    pub first_base: Gap,
    pub segments: Few<DirSegment, 4>,
    pub checkpoint: Option<CheckpointFile>,
    pub leftovers: Few<Leftover, 2>,
    pub strangers: Few<Stranger, 2>,
    pub damage: Few<Damage, 3>,
}

/// A workload as a JSON array in the shared vocabulary (what scenario files hold).
pub fn ops_json(ops: &[Op]) -> String {
    let items: Vec<String> = ops.iter().map(ToString::to_string).collect();
    format!("[{}]", items.join(","))
}

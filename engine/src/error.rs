//! The one error type of the engine.
//!
//! Corruption is structured: which file, at which byte position, and what kind of
//! damage, so a person (or a test) can tell a torn tail from a flipped bit.

use std::path::PathBuf;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the engine can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An IO call failed. The engine does not retry: after a failed fsync the
    /// [`crate::Log`] is poisoned (see [`Error::Poisoned`]).
    ///
    /// What to do: look at `source` (a full disk, a permission, a dying device), fix
    /// the cause, and reopen the log; recovery on open puts the directory back into a
    /// consistent state and loses nothing that a successful `flush` made durable.
    #[error("io error on {path}: {source}")]
    Io {
        /// The file or directory the call was about.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Bytes on disk are not what the format says they must be.
    ///
    /// Returned by `open` for damage recovery must not repair (anything but a torn
    /// tail of the active segment, or an index it can rebuild), and by reads that meet
    /// damaged bytes. Nothing is deleted or rewritten: the files stay as they are for
    /// a person to inspect (`path`, `position`) or restore from a replica.
    #[error("corrupt data in {path} at byte {position}: {kind}")]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// The byte position in that file where the damage was detected (the start of
        /// the batch, index entry or header that does not check out).
        position: u64,
        /// What is wrong there.
        kind: CorruptKind,
    },
    /// Valid Kafka data the engine does not handle (compressed batches, old magic).
    /// The string names what was met and where; the data is left untouched.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A read below `log_start_offset` or beyond `next_offset` (Kafka's
    /// `OFFSET_OUT_OF_RANGE`): retention deleted the offset, or it was never written.
    /// A consumer resets to one of the two bounds the error carries.
    #[error("offset {offset} is out of range [{log_start_offset}, {next_offset}]")]
    OffsetOutOfRange {
        /// The offset asked for.
        offset: i64,
        /// The log's first readable offset at the time of the call.
        log_start_offset: i64,
        /// The offset the next append will get; reading exactly here is allowed and
        /// returns nothing.
        next_offset: i64,
    },
    /// A caller passed an argument that can never be valid (an empty batch, a
    /// negative size or retention, a configuration value out of range, records whose
    /// batch would exceed the format's limits). The string says which; nothing was
    /// changed on disk.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The engine found directories it cannot decide on safely: a compaction temp
    /// directory left over by a crash (reopen the log: recovery rolls it back), an
    /// install still pending when the log is not opened for writing, or a combination
    /// of the live log, its temp directory, backup and manifest that no step of the
    /// install protocol leaves. Nothing was deleted; `reason` says which and what to do.
    #[error("ambiguous state, nothing deleted: {reason} (directories: {dirs:?})")]
    Ambiguous {
        /// Why recovery could not decide.
        reason: String,
        /// The directories involved.
        dirs: Vec<PathBuf>,
    },
    /// A producer-encoded batch given to [`crate::Log::append_batches`] breaks one of
    /// Kafka's produce-request rules (docs/design.md section 1c).
    ///
    /// Nothing of the call was stored (all or nothing per call) and the log is not
    /// poisoned: bad input is the producer's fault, not the disk's. `batch` counts the
    /// call's batches from 0, `position` is where that batch starts in the call's
    /// bytes, and `rule` names the rule it broke.
    #[error("batch {batch} (at byte {position} of the input) rejected: {rule}")]
    InvalidBatch {
        /// The rejected batch's index in the call (0 = the first).
        batch: usize,
        /// Byte position of that batch's first byte in the call's input.
        position: u64,
        /// The rule it broke.
        rule: BatchRule,
    },
    /// Another writer holds the log: a writable open (of a [`crate::Log`], the CLI,
    /// the `LogManager`) takes an exclusive lock on the lock file `D.lock` beside
    /// the log directory `D` before anything else and keeps it until close, so a
    /// second process (or a second handle) is refused here, having changed nothing.
    /// Read-only opens take no lock.
    #[error(
        "log directory {} is locked by another writer ({}, lock file {}); close that writer or open read-only",
        dir.display(),
        holder_pid.map_or("holder unknown: `fuser` on the lock file names it".to_string(), |pid| format!("process {pid}")),
        lock_file.display()
    )]
    Locked {
        /// The log directory.
        dir: PathBuf,
        /// The lock file.
        lock_file: PathBuf,
        /// The process holding the lock, where the file system can tell (Linux).
        holder_pid: Option<u32>,
    },
    /// A name the install protocol would create beside the log directory `dir`
    /// (its longest, `D.compact-manifest.tmp`, is `sibling`) is longer than a file
    /// name may be (`bytes_max`, POSIX `NAME_MAX`). Checked before a compaction
    /// starts: nothing was created or changed. Shorten the directory's name (by
    /// the excess) to compact it.
    #[error(
        "log dir {dir}: the install would create {sibling}, a {bytes}-byte name, above the \
         file-name limit of {bytes_max} bytes; nothing changed"
    )]
    NameTooLong {
        /// The log directory.
        dir: PathBuf,
        /// The longest sibling path the install would create.
        sibling: PathBuf,
        /// The length of that sibling's file name in bytes.
        bytes: usize,
        /// The longest file name allowed, in bytes.
        bytes_max: usize,
    },
    /// A previous IO error left the log in an unknown state; reopen it.
    ///
    /// After a failed write or fsync the engine cannot know what reached the disk
    /// (Linux drops the dirty pages of a failed fsync), so every later call on the same
    /// [`crate::Log`] returns this until it is dropped and opened again; recovery on
    /// open then decides from what is actually on disk.
    #[error("log is poisoned by an earlier io error; reopen it to recover")]
    Poisoned,
    /// A fail point configured with `return(error)` fired (only with the
    /// `failpoints` feature; the string is the fail point's name). The engine treats it
    /// like an IO error: the log is poisoned.
    #[error("injected failure at fail point {0}")]
    Injected(String),
}

/// What kind of corruption a [`Error::Corrupt`] is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CorruptKind {
    /// The data ends before a structure it must hold is complete: a batch header or
    /// body cut short (a torn write), a short index entry, a short manifest.
    #[error("truncated: need {needed} bytes, {available} available")]
    Truncated {
        /// Bytes the structure needs from its start.
        needed: u64,
        /// Bytes there are.
        available: u64,
    },
    /// A batch's length field is impossible (smaller than a batch header, or larger
    /// than any batch the engine accepts).
    #[error("bad batch length {length}")]
    BadLength {
        /// The length field as read.
        length: i64,
    },
    /// A magic byte or number is not the format's: the batch magic (2), or the magic of
    /// a manifest or checkpoint file.
    #[error("bad magic {got}, expected {expected}")]
    BadMagic {
        /// The value read.
        got: i64,
        /// The value the format requires.
        expected: i64,
    },
    /// A CRC-32C over the bytes does not match the stored one: flipped bits.
    #[error("checksum mismatch: got {got:#010x}, expected {expected:#010x}")]
    ChecksumMismatch {
        /// The checksum computed over the bytes on disk.
        got: u32,
        /// The checksum stored with them.
        expected: u32,
    },
    /// A batch's record count disagrees with the records its body holds.
    #[error("record count {declared} does not match {actual} records decoded")]
    RecordCount {
        /// The count in the batch header.
        declared: i64,
        /// The records actually decoded.
        actual: i64,
    },
    /// A record's offset delta is not strictly increasing within its batch, or lies
    /// beyond the batch's `lastOffsetDelta`.
    #[error("offset delta {delta} not strictly increasing or beyond last offset delta {last}")]
    OffsetDelta {
        /// The record's offset delta.
        delta: i64,
        /// The previous record's delta, or the batch's last offset delta.
        last: i64,
    },
    /// A batch's base offset does not follow the previous batch, or lies outside the
    /// segment its file name announces.
    #[error("base offset {got} is not after {previous} or outside the segment")]
    BaseOffset {
        /// The base offset read.
        got: i64,
        /// The previous batch's last offset (or the segment's base offset).
        previous: i64,
    },
    /// A batch's offsets reach `end`, where its segment's offsets end (the next
    /// segment's base offset, or the log's next offset): its base offset, outside
    /// the CRC, was damaged.
    #[error("offset {offset} is at or past {end}, where the segment's offsets end")]
    PastSegmentEnd {
        /// The batch's last offset.
        offset: i64,
        /// The first offset past the segment.
        end: i64,
    },
    /// A batch's header fields add up to an offset no log can hold: its base offset
    /// (outside the CRC) plus its `lastOffsetDelta`, plus one for the offset after it,
    /// is beyond `i64::MAX`, or its base offset is negative.
    #[error("offset overflow: base offset {base_offset} + last offset delta {last_offset_delta} + 1 is not an i64")]
    OffsetOverflow {
        /// The batch's base offset.
        base_offset: i64,
        /// Its `lastOffsetDelta`.
        last_offset_delta: i64,
    },
    /// A checkpoint's offset is past the log's end (the offset after the last valid
    /// batch): no retention wrote it, so nothing may be deleted on its word.
    #[error("offset {offset} is past the log's end {end}")]
    PastLogEnd {
        /// The offset the file holds.
        offset: i64,
        /// The log's end: the next offset of its last segment's valid prefix.
        end: i64,
    },
    /// The manifest's `next_offset` is not where the segments of the directory it
    /// describes end (the offset after the last batch of its last `.log`, or that
    /// segment's base when it is empty): its checksum holds, its meaning does not,
    /// so no directory is rolled forward or removed on its word.
    #[error("the manifest's next offset {manifest} is not where its segments end ({found})")]
    NextOffsetMismatch {
        /// The manifest's `next_offset`.
        manifest: i64,
        /// Where the segments it lists end.
        found: i64,
    },
    /// A file is larger than its format allows (a checkpoint is a few bytes): it
    /// was not read.
    #[error("{bytes} bytes, larger than the {bytes_max} its format allows")]
    TooLarge {
        /// The file's length.
        bytes: u64,
        /// The most its format allows.
        bytes_max: u64,
    },
    /// A zigzag varint runs past its maximum length or past the data.
    #[error("malformed varint")]
    Varint,
    /// A record field is malformed (a negative length other than -1, a header
    /// without a key, attributes out of range); the string names the field.
    #[error("bad record field: {0}")]
    Field(&'static str),
    /// A file name that must follow the format's naming (a 20-digit offset with a
    /// known suffix) does not.
    #[error("bad file name")]
    FileName,
    /// A compressed batch's records (CRC-valid) do not decompress.
    #[error("{codec} payload does not decompress: {detail}")]
    Decompress {
        /// The codec's name.
        codec: String,
        /// What the decoder said.
        detail: String,
    },
    /// A compressed batch's records would decompress beyond the bound.
    #[error("{codec} payload decompresses beyond {limit_bytes} bytes")]
    DecompressedTooLarge {
        /// The codec's name.
        codec: String,
        /// The bound (`INFLATED_BYTES_MAX`).
        limit_bytes: u64,
    },
    /// Attribute bits 0-2 name no codec (5, 6 or 7).
    #[error("unknown compression codec id {id}")]
    UnknownCodec {
        /// The attribute bits 0-2.
        id: i64,
    },
    /// Any other inconsistency, described by the string (for example an index entry
    /// pointing beyond its segment, or a manifest naming a file that is not there).
    #[error("{0}")]
    Other(String),
    /// Damage in the active segment followed by CRC-valid batches, which the strict
    /// recovery mode (`crate::log::RecoveryMode::Strict`) refuses to truncate.
    #[error(
        "{damage}, followed by {batches} valid batches ({records} records, offsets \
         {first_offset}..={last_offset}) that truncating the tail would drop; \
         the strict recovery mode refuses"
    )]
    BeforeValidBatches {
        /// What is wrong at the error's position (the first invalid batch).
        damage: Box<CorruptKind>,
        /// CRC-valid batches after it.
        batches: u64,
        /// Records those batches declare.
        records: u64,
        /// Their smallest base offset.
        first_offset: i64,
        /// Their largest last offset.
        last_offset: i64,
    },
    /// A CRC-valid recovery point summarizes closed segments at or above the durable
    /// log start whose `.log` is missing, shorter than its summary, or not a regular
    /// file: acknowledged data is gone (deleted, cut or replaced behind the log's
    /// back; no crash leaves this). The error's path is the first such `.log`; every
    /// one is listed with the offsets and bytes lost. Nothing was changed: restore
    /// the files, or open with `RecoveryMode::AcceptLoss` to go on without them.
    #[error("{} summarized segment(s) lost: {}", lost.len(), LostSegment::list(lost))]
    SegmentsLost {
        /// Each lost segment, ascending by base offset.
        lost: Vec<LostSegment>,
    },
}

/// How a summarized segment's `.log` contradicts its summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Loss {
    /// The `.log` does not exist.
    Missing,
    /// The `.log` holds fewer bytes than its summary.
    Shorter {
        /// The bytes the file holds.
        file_bytes: u64,
    },
    /// The name is taken by something other than a regular file (a directory).
    NotAFile,
}

/// One summarized segment whose data is gone ([`CorruptKind::SegmentsLost`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LostSegment {
    /// The segment's `.log` file name.
    pub segment: String,
    /// How the file contradicts its summary.
    pub loss: Loss,
    /// The first offset lost.
    pub first_offset: i64,
    /// The last offset lost.
    pub last_offset: i64,
    /// The bytes of `.log` lost.
    pub bytes: u64,
}

impl LostSegment {
    fn list(lost: &[LostSegment]) -> String {
        lost.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl std::fmt::Display for LostSegment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = match self.loss {
            Loss::Missing => "missing".to_string(),
            Loss::Shorter { file_bytes } => format!("holds only {file_bytes} bytes"),
            Loss::NotAFile => "not a regular file".to_string(),
        };
        write!(
            f,
            "{} {how}: offsets {}..={} ({} bytes) lost",
            self.segment, self.first_offset, self.last_offset, self.bytes
        )
    }
}

/// Which of Kafka's produce-request rules a batch given to
/// [`crate::Log::append_batches`] broke ([`Error::InvalidBatch`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BatchRule {
    /// The call held no bytes at all: a produce request carries at least one batch.
    #[error("no batches in the input")]
    NoBatches,
    /// The batch is larger than the log's `max_batch_bytes` (Kafka's
    /// `max.message.bytes`, `RecordTooLargeException`).
    #[error("batch of {size_bytes} bytes exceeds max_batch_bytes {max_bytes}")]
    TooLarge {
        /// The batch's size, log overhead included.
        size_bytes: u64,
        /// The log's limit.
        max_bytes: u64,
    },
    /// The bytes are not a well-formed v2 batch: cut short, a bad length, magic or
    /// CRC-32C, an unknown codec, a payload that does not decompress, a malformed
    /// record, trailing bytes (Kafka's `CorruptRecordException`). `position` is
    /// relative to the batch's first byte.
    #[error("at byte {position} of the batch: {kind}")]
    Format {
        /// Byte position in the batch.
        position: u64,
        /// What is wrong there.
        kind: CorruptKind,
    },
    /// Valid Kafka data this engine does not take: an old magic (0 or 1), or a
    /// codec this build lacks (the `compression` feature).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The control bit is set: only a transaction coordinator writes markers, never
    /// a producer ("Clients are not allowed to write control records").
    #[error("control batch: producers may not write transaction markers")]
    ControlBatch,
    /// The record count is not positive or disagrees with `lastOffsetDelta`: a
    /// producer's batch holds exactly records `0..count`.
    #[error("record count {record_count} with lastOffsetDelta {last_offset_delta}")]
    RecordCount {
        /// The declared record count.
        record_count: i64,
        /// The declared `lastOffsetDelta`.
        last_offset_delta: i64,
    },
    /// A record's offset delta is not its index: a producer numbers its records
    /// 0, 1, 2, ... in order (a delta that does not increase is the decoder's
    /// `Format` error first).
    #[error("record {record} has offset delta {delta}, expected {record}")]
    OffsetDelta {
        /// The record's index in the batch.
        record: u64,
        /// Its offset delta.
        delta: i64,
    },
    /// A record's timestamp (base timestamp + delta) is below -1 ("no timestamp").
    #[error("record {record} has timestamp {timestamp}, below -1")]
    Timestamp {
        /// The record's index in the batch.
        record: u64,
        /// Its timestamp.
        timestamp: i64,
    },
    /// An idempotent batch (a producer id) without a base sequence.
    #[error("producer id {producer_id} with base sequence {base_sequence}")]
    Sequence {
        /// The batch's producer id.
        producer_id: i64,
        /// Its base sequence.
        base_sequence: i32,
    },
}

impl Error {
    /// Wraps an IO error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Builds a corruption error.
    pub fn corrupt(path: impl Into<PathBuf>, position: u64, kind: CorruptKind) -> Self {
        Error::Corrupt {
            path: path.into(),
            position,
            kind,
        }
    }

    /// True for errors that describe damaged bytes on disk.
    pub fn is_corrupt(&self) -> bool {
        matches!(self, Error::Corrupt { .. })
    }
}

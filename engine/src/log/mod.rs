//! [`Log`]: one partition's ordered segments, with append, roll, flush and read.
//!
//! * `recovery`: the phases run by [`Log::open_with`].
//! * `report`: the [`RecoveryReport`].
//! * `lock`: the writer lock every writable open takes first.
//! * `encode`: a data batch encoded straight from the caller's records.
//! * `write`: append, control batches, roll, flush, close.
//! * `raw`: producer-encoded batches appended as they came ([`Log::append_batches`]).
//! * `read`: read, offset for timestamp, a segment's batches.
//! * `records`: [`RecordRef`] (borrowed) and [`ReadRecords`] (what [`Log::read`]
//!   returns: one buffer per batch).
//! * `fetch`: [`Fetch`], a segment's whole batches from an offset, without a copy.
//! * `txn`: transactional appends, the producer state and the `.txnindex`.
//! * `trust`: what an open may trust unread (the recovery point, the marker).
//! * `evidence`: lost data held against what a recovery point says exists.
//! * `index_check`: recovery's judgment of each segment's indexes by Kafka's rules.
//! * `leftovers`: Kafka's leftovers (`.deleted`, `.cleaned`, `.swap`) in a directory.
//! * `recovery_mode`: [`RecoveryMode`], what an open does with an invalid tail.
//! * `retain`, `compact`, `clean`: retention, compaction and cleaning of an open log,
//!   calling the services of [`crate::retention`], [`crate::compaction`] and
//!   [`crate::install`].
//!
//! Semantics: docs/design.md section 1. Durability: [`Log::flush`] and
//! [`Log::roll`] fsync; nothing else does, and dropping a `Log` does not flush
//! (a dropped log behaves like a crashed process).

mod clean;
mod compact;
pub(crate) mod encode;
pub(crate) mod evidence;
mod fetch;
mod index_check;
pub(crate) mod leftovers;
pub(crate) mod lock;
mod raw;
mod read;
mod records;
pub(crate) mod recovery;
pub(crate) mod recovery_mode;
pub(crate) mod report;
mod retain;
pub(crate) mod trust;
pub(crate) mod txn;
mod write;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::format::{Compression, Header, TimestampType};
use crate::fs::{FileSystem, StdFs, OPEN_FILES_MAX_DEFAULT};
use crate::segment::{Segment, SegmentInfo};

pub use fetch::{Fetch, FetchRecords};
pub use leftovers::Leftover;
pub use lock::LOCK_SUFFIX;
pub use records::{ReadRecords, ReadRecordsIntoIter, ReadRecordsIter, RecordRef};
pub use recovery_mode::{RecoveryMode, TailKind, TailTruncation};
pub use report::{RebuildReason, RebuiltIndex, RecoveryReport};
pub use trust::recovery_point_summaries_max;
pub use txn::{Isolation, Producer, TxnIndexRebuild};
pub use write::check_records;

/// Largest `segment_bytes`: positions must fit the 32-bit index entries even with
/// one oversized batch past the limit (Kafka's limit too).
pub const SEGMENT_BYTES_MAX: u64 = i32::MAX as u64;

/// Test-only: the roll's order and its deliberately broken form for the teeth checks
/// (model (e), variant `recovery-point-before-flush`).
#[cfg(any(test, feature = "test-variants"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RollVariant {
    /// Fsync the closed segment, then create the next one and write the recovery point.
    #[default]
    Ours,
    /// Create the next segment and write the recovery point before fsyncing the closed
    /// segment: a power loss keeps the point and loses data it vouches for.
    RecoveryPointBeforeFlush,
}

/// Configuration of a log.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct LogConfig {
    /// Roll before a batch would make the active segment larger than this.
    pub segment_bytes: u64,
    /// Bytes between sparse index entries (Kafka's `index.interval.bytes`).
    pub index_interval_bytes: u64,
    /// The codec appended data batches are written with (Kafka's
    /// `compression.type` of a producer). Reading accepts every codec whatever
    /// this says.
    #[cfg_attr(feature = "serde", serde(default))]
    pub compression: Compression,
    /// `LogAppendTime`: append stamps each data batch with the log's clock
    /// ([`Log::set_clock`]) as its `maxTimestamp`, which every record then reads
    /// as (Kafka's `message.timestamp.type`). `CreateTime` keeps the records'.
    #[cfg_attr(feature = "serde", serde(default))]
    pub timestamp_type: TimestampType,
    /// Cap of the cleaner's offset map, 24 bytes a key (Kafka's
    /// `log.cleaner.dedupe.buffer.size`); `None`: unbounded. A dirty section with
    /// more distinct keys takes several passes (docs/design.md section 1).
    #[cfg_attr(feature = "serde", serde(default))]
    pub dedupe_buffer_bytes: Option<u64>,
    /// [`Log::compact_if_dirty`] cleans only when the dirty ratio is above this
    /// (Kafka's `min.cleanable.dirty.ratio`), in `[0, 1]`.
    #[cfg_attr(
        feature = "serde",
        serde(default = "default_min_cleanable_dirty_ratio")
    )]
    pub min_cleanable_dirty_ratio: f64,
    /// A closed segment holding a timestamp newer than `now - min_compaction_lag_ms`
    /// is not cleaned, nor any after it (Kafka's `min.compaction.lag.ms`); 0: no lag.
    #[cfg_attr(feature = "serde", serde(default))]
    pub min_compaction_lag_ms: i64,
    /// A producer with no open transaction whose last batch is this old is no
    /// longer active (Kafka's `producer.id.expiration.ms`, default one day): a
    /// `kafka`-policy cleaning keeps an active producer's last batch as an empty
    /// batch (docs/design.md section 1).
    #[cfg_attr(
        feature = "serde",
        serde(default = "default_producer_id_expiration_ms")
    )]
    pub producer_id_expiration_ms: i64,
    /// The largest producer batch [`Log::append_batches`] takes, log overhead
    /// included (Kafka's `max.message.bytes`, default 1048588); at most
    /// [`BATCH_BYTES_MAX`](crate::format::batch::BATCH_BYTES_MAX).
    #[cfg_attr(feature = "serde", serde(default = "default_max_batch_bytes"))]
    pub max_batch_bytes: u64,
    /// The rules compaction follows: `seed` (default) or `kafka` (Kafka's cleaner;
    /// docs/design.md section 1).
    #[cfg_attr(feature = "serde", serde(default))]
    pub compaction_policy: crate::compaction::CompactionPolicy,
    /// Each time the active segment grows past another multiple of this many
    /// bytes, append starts the write-back of its dirty pages
    /// ([`crate::fs::FileSystem::start_writeback`],
    /// RocksDB's `bytes_per_sync`), so the disk writes while the appender goes on
    /// and a flush waits for the tail only. A hint: nothing becomes durable before
    /// [`Log::flush`]. 0 turns it off. Default 1 MiB (docs/design.md section 1).
    #[cfg_attr(feature = "serde", serde(default = "default_writeback_bytes"))]
    pub writeback_bytes: u64,
    /// What a writable open does with an invalid tail of the active segment:
    /// truncate it (the default, [`RecoveryMode::TornTail`]) or refuse when valid
    /// batches follow the damage ([`RecoveryMode::Strict`]; docs/design.md
    /// section 3, "Recovery modes").
    #[cfg_attr(feature = "serde", serde(default))]
    pub recovery_mode: RecoveryMode,
    /// The most file handles the log keeps open between calls, at least 1, beside
    /// the writer lock and the files with writes not yet synced (RocksDB's
    /// `max_open_files`): the least recently used is closed first and opened again
    /// when next read ([`StdFs::with_open_files_max`]). What the opens that build
    /// their own file system ([`Log::open`]) give it; a log opened through a given
    /// file system ([`Log::open_with`], a [`crate::manager::LogManager`]'s
    /// partitions) lives within that file system's budget instead. Default
    /// [`OPEN_FILES_MAX_DEFAULT`].
    #[cfg_attr(feature = "serde", serde(default = "default_max_open_files"))]
    pub max_open_files: usize,
}

// `validate` rejects a NaN ratio, so equality is an equivalence on valid configs.
impl Eq for LogConfig {}

fn default_min_cleanable_dirty_ratio() -> f64 {
    0.5
}

fn default_producer_id_expiration_ms() -> i64 {
    crate::compaction::PRODUCER_ID_EXPIRATION_MS_DEFAULT
}

/// Kafka's default `max.message.bytes`: 1 MiB plus the log overhead.
pub const MAX_BATCH_BYTES_DEFAULT: u64 = 1024 * 1024 + 12;

fn default_max_batch_bytes() -> u64 {
    MAX_BATCH_BYTES_DEFAULT
}

/// The default [`LogConfig::writeback_bytes`]: 1 MiB. Measured on the codec
/// benchmark's lz4 append (20 MB written, then flushed): 256 KiB and 4 MiB both
/// made the durable append slower than 1 MiB (docs/design.md section 1).
pub const WRITEBACK_BYTES_DEFAULT: u64 = 1 << 20;

fn default_writeback_bytes() -> u64 {
    WRITEBACK_BYTES_DEFAULT
}

fn default_max_open_files() -> usize {
    OPEN_FILES_MAX_DEFAULT
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            index_interval_bytes: 4096,
            compression: Compression::None,
            timestamp_type: TimestampType::CreateTime,
            dedupe_buffer_bytes: None,
            min_cleanable_dirty_ratio: default_min_cleanable_dirty_ratio(),
            min_compaction_lag_ms: 0,
            producer_id_expiration_ms: default_producer_id_expiration_ms(),
            max_batch_bytes: default_max_batch_bytes(),
            compaction_policy: crate::compaction::CompactionPolicy::Seed,
            writeback_bytes: default_writeback_bytes(),
            recovery_mode: RecoveryMode::TornTail,
            max_open_files: default_max_open_files(),
        }
    }
}

impl LogConfig {
    /// Rejects values that can never work.
    pub fn validate(&self) -> Result<()> {
        if self.segment_bytes == 0 || self.segment_bytes > SEGMENT_BYTES_MAX {
            return Err(Error::InvalidArgument(format!(
                "segment_bytes must be in 1..={SEGMENT_BYTES_MAX}, got {}",
                self.segment_bytes
            )));
        }
        if self.index_interval_bytes > SEGMENT_BYTES_MAX {
            return Err(Error::InvalidArgument(format!(
                "index_interval_bytes must be at most {SEGMENT_BYTES_MAX}, got {}",
                self.index_interval_bytes
            )));
        }
        if !(0.0..=1.0).contains(&self.min_cleanable_dirty_ratio) {
            return Err(Error::InvalidArgument(format!(
                "min_cleanable_dirty_ratio must be in [0, 1], got {}",
                self.min_cleanable_dirty_ratio
            )));
        }
        if self.producer_id_expiration_ms <= 0 {
            return Err(Error::InvalidArgument(format!(
                "producer_id_expiration_ms must be > 0, got {}",
                self.producer_id_expiration_ms
            )));
        }
        let batch_max = crate::format::batch::BATCH_BYTES_MAX as u64;
        let batch_min = crate::format::batch::HEADER_LEN as u64;
        if !(batch_min..=batch_max).contains(&self.max_batch_bytes) {
            return Err(Error::InvalidArgument(format!(
                "max_batch_bytes must be in {batch_min}..={batch_max}, got {}",
                self.max_batch_bytes
            )));
        }
        if self.max_open_files == 0 {
            return Err(Error::InvalidArgument(
                "max_open_files must be at least 1, got 0".into(),
            ));
        }
        if !self.compression.is_available() {
            return Err(Error::InvalidArgument(format!(
                "compression {} needs the seglog feature `compression`",
                self.compression
            )));
        }
        self.clean_options().validate()
    }

    /// The cleaner's knobs of this log.
    pub fn clean_options(&self) -> crate::compaction::CleanOptions {
        crate::compaction::CleanOptions {
            dedupe_buffer_bytes: self.dedupe_buffer_bytes,
            min_compaction_lag_ms: self.min_compaction_lag_ms,
            policy: self.compaction_policy,
            producer_id_expiration_ms: self.producer_id_expiration_ms,
        }
    }
}

/// Offsets assigned by an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct AppendInfo {
    /// The offset the first appended record got.
    pub base_offset: i64,
    /// The offset the last appended record got.
    pub last_offset: i64,
}

/// A record as read back, with its stored offset, owned
/// ([`ReadRecords::get_owned`], or `into_iter` of a [`Log::read`]).
///
/// `key` and `value` are zero-copy slices of the bytes of the batch it was read
/// from: cloning one is cheap, and the batch's bytes live until the last slice of
/// them is dropped. Copy out
/// (`Bytes::copy_from_slice`) what you keep long after the rest of a read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRecord {
    /// The record's offset.
    pub offset: i64,
    /// The record's timestamp (ms).
    pub timestamp: i64,
    /// The key (`None`: keyless).
    pub key: Option<Bytes>,
    /// The value (`None`: a tombstone).
    pub value: Option<Bytes>,
    /// Empty (and unallocated) for a record without headers.
    pub headers: Vec<Header>,
    /// True for the marker record of a control batch.
    pub control: bool,
}

/// A partition log in one directory. Not thread-safe by itself (`&mut self` to write).
#[derive(Debug)]
pub struct Log {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    config: LogConfig,
    /// Ascending by base offset; the last one is active. Never empty.
    segments: Vec<Segment>,
    /// Set by a failed IO in append/roll/flush; the log must be reopened.
    poisoned: bool,
    /// The open trusted the clean-shutdown marker and kept it: it still describes
    /// the active segment, and goes (durably) before the first change to it
    /// (`write::unmark`).
    marker_kept: bool,
    /// Length of the active `.log` as of the last successful fsync of it by this
    /// handle (or as found on open): where a failed fsync cuts the file back to
    /// (see `write::sync_active_log`).
    synced_log_bytes: u64,
    /// Opened with [`Log::open_read_only`]: writes are refused.
    read_only: bool,
    /// The writer lock ([`lock`]), held from a writable open until close or drop;
    /// `None` for a read-only open and after close.
    lock: Option<crate::fs::FileLock>,
    /// Closed by [`Log::close_in_place`]: everything is refused.
    closed: bool,
    #[cfg(any(test, feature = "test-variants"))]
    roll_variant: RollVariant,
    /// Reused encode buffer.
    scratch: Vec<u8>,
    /// Reused buffer of a compressed batch's records before compression.
    plain_scratch: Vec<u8>,
    /// Reused lists of a raw append's checked batches and of their facts.
    produced_scratch: Vec<crate::format::produce::ProducedBatch>,
    facts_scratch: Vec<crate::segment::BatchFacts>,
    /// Recently read segments' bytes as [`FileSystem::map`] returned them, by base
    /// offset, the most recently read last (see `Log::segment_view`).
    mapped: Mutex<Vec<(i64, Bytes)>>,
    /// "Now" for LogAppendTime stamps ([`LogConfig::timestamp_type`]).
    clock: Arc<dyn Clock>,
    /// The transaction state, built at the first transactional call (`txn`).
    txn: Mutex<Option<txn::TxnState>>,
}

/// The directory a log in `dir` lives in: `dir` with its symbolic links, `.` and
/// `..` resolved ([`FileSystem::canonicalize`]). The log works there, so its
/// install siblings (`D.compact-tmp` and the others) sit beside the real directory
/// and a symlinked `dir` stays a link to it.
pub(crate) fn resolve_dir(fs: &dyn FileSystem, dir: &Path) -> Result<PathBuf> {
    fs.canonicalize(dir).map_err(|e| Error::io(dir, e))
}

/// How [`Log::open_by`] opens a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opening {
    /// Writable, trusting the recovery point and the clean-shutdown marker.
    Trusting,
    /// Writable, checking every segment ([`Log::open_checked`]).
    Checked,
    /// Read-only: no lock, nothing changed on disk, trusting as `Trusting` does.
    ReadOnly,
    /// Read-only, checking every segment ([`Log::open_read_only_checked`]).
    ReadOnlyChecked,
}

impl Log {
    /// Opens (or creates) the log in `dir` on the real file system, which keeps at
    /// most [`LogConfig::max_open_files`] handles open.
    pub fn open(dir: impl AsRef<Path>, config: LogConfig) -> Result<(Log, RecoveryReport)> {
        let fs = StdFs::with_open_files_max(config.max_open_files);
        Self::open_with(Arc::new(fs), dir, config)
    }

    /// Opens (or creates) the log in `dir` through `fs`, running recovery.
    pub fn open_with(
        fs: Arc<dyn FileSystem>,
        dir: impl AsRef<Path>,
        config: LogConfig,
    ) -> Result<(Log, RecoveryReport)> {
        Self::open_by(fs, dir.as_ref(), config, Opening::Trusting)
    }

    /// [`Log::open_with`], ignoring the recovery point and the clean-shutdown marker:
    /// every segment is read and checked batch by batch, as after a crash with no
    /// checkpoint. What `seglog recover` runs; for an audit of a cleanly closed log.
    pub fn open_checked(
        fs: Arc<dyn FileSystem>,
        dir: impl AsRef<Path>,
        config: LogConfig,
    ) -> Result<(Log, RecoveryReport)> {
        Self::open_by(fs, dir.as_ref(), config, Opening::Checked)
    }

    /// Opens an existing log without changing anything on disk (no directory or
    /// segment creation, no truncation, no index rewrite). An invalid tail of the
    /// last segment is left out (the report says where it starts); appends, rolls
    /// and flushes are refused with [`Error::InvalidArgument`]. It trusts what a
    /// writable open trusts (the recovery point for the closed segments below it,
    /// the clean-shutdown marker for the active one, by the same checks), so after
    /// a clean close it reads no segment data; damage in a segment it did not scan
    /// is a structured error at the first read of it.
    pub fn open_read_only(
        fs: Arc<dyn FileSystem>,
        dir: impl AsRef<Path>,
        config: LogConfig,
    ) -> Result<(Log, RecoveryReport)> {
        Self::open_by(fs, dir.as_ref(), config, Opening::ReadOnly)
    }

    /// [`Log::open_read_only`] reading and checking every segment batch by batch,
    /// whatever the recovery point and the marker vouch for: a diagnostic (what
    /// `seglog dump --check` runs).
    pub fn open_read_only_checked(
        fs: Arc<dyn FileSystem>,
        dir: impl AsRef<Path>,
        config: LogConfig,
    ) -> Result<(Log, RecoveryReport)> {
        Self::open_by(fs, dir.as_ref(), config, Opening::ReadOnlyChecked)
    }

    /// Recovers (or, read-only, inspects) the segments of `dir` and assembles the
    /// log: every open goes through here, so every writable one takes the writer
    /// lock the same way.
    fn open_by(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        config: LogConfig,
        opening: Opening,
    ) -> Result<(Log, RecoveryReport)> {
        let read_only = matches!(opening, Opening::ReadOnly | Opening::ReadOnlyChecked);
        config.validate()?;
        let dir = &resolve_dir(fs.as_ref(), dir)?;
        // The writer lock before recovery, on the resolved directory (a symlink
        // and its target share one lock): a second writer is refused before it
        // reads or changes anything. Read-only opens take none.
        let held = if read_only {
            None
        } else {
            Some(lock::acquire(fs.as_ref(), dir)?)
        };
        let mut report = RecoveryReport {
            created: held.as_ref().is_some_and(|held| held.created_dir),
            ..RecoveryReport::default()
        };
        let held = held.map(|held| held.lock);
        let segments = match opening {
            Opening::ReadOnly => recovery::inspect(fs.as_ref(), dir, &config, true, &mut report)?,
            Opening::ReadOnlyChecked => {
                recovery::inspect(fs.as_ref(), dir, &config, false, &mut report)?
            }
            Opening::Trusting => recovery::recover(fs.as_ref(), dir, &config, &mut report)?,
            Opening::Checked => {
                recovery::recover_with(fs.as_ref(), dir, &config, false, &mut report)?
            }
        };
        let mut log = Log::assemble(fs, dir.to_path_buf(), config, segments, read_only);
        log.lock = held;
        log.marker_kept = report.marker_kept;
        Ok((log, report))
    }

    /// The in-memory log over recovered (or inspected) segments.
    fn assemble(
        fs: Arc<dyn FileSystem>,
        dir: PathBuf,
        config: LogConfig,
        segments: Vec<Segment>,
        read_only: bool,
    ) -> Log {
        let synced_log_bytes = segments.last().map_or(0, |s| s.bytes);
        let log = Log {
            fs,
            dir,
            config,
            segments,
            poisoned: false,
            marker_kept: false,
            synced_log_bytes,
            read_only,
            lock: None,
            closed: false,
            #[cfg(any(test, feature = "test-variants"))]
            roll_variant: RollVariant::Ours,
            scratch: Vec::new(),
            plain_scratch: Vec::new(),
            produced_scratch: Vec::new(),
            facts_scratch: Vec::new(),
            mapped: Mutex::new(Vec::new()),
            clock: Arc::new(SystemClock),
            txn: Mutex::new(None),
        };
        log.assert_invariants();
        log
    }

    /// Test-only: gives up the writer lock before a reopen of the same directory
    /// (the broken variants' `reopen_after`), which takes it again.
    #[cfg(any(test, feature = "test-variants"))]
    pub(crate) fn release_lock(&mut self) {
        self.lock = None;
    }

    /// Test-only: the roll's order (see [`RollVariant`]).
    #[cfg(feature = "test-variants")]
    pub(crate) fn set_roll_variant(&mut self, variant: RollVariant) {
        self.roll_variant = variant;
    }

    /// The log's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file system the log does its IO through.
    pub fn fs(&self) -> &Arc<dyn FileSystem> {
        &self.fs
    }

    /// The configuration the log was opened with.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// The clock LogAppendTime stamps read ([`SystemClock`] unless set). Kept
    /// across the reopen after retention and compaction and by [`Log::restart`].
    pub fn set_clock(&mut self, clock: Arc<dyn Clock>) {
        self.clock = clock;
    }

    /// The clock LogAppendTime stamps read.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Base offset of the first segment.
    pub fn log_start_offset(&self) -> i64 {
        self.segments.first().map_or(0, |s| s.base_offset)
    }

    /// The offset the next appended record gets.
    pub fn next_offset(&self) -> i64 {
        self.active().next_offset
    }

    /// Every segment, oldest first; only the last is not closed.
    pub fn segments(&self) -> Vec<SegmentInfo> {
        let last = self.segments.len() - 1;
        self.segments
            .iter()
            .enumerate()
            .map(|(i, s)| s.info(i != last))
            .collect()
    }

    /// The closed segments whose index files a recovery point vouched for but whose
    /// first lookup found them wrong (damaged or replaced since), so their indexes
    /// were rebuilt in memory from the `.log` (`crate::segment::vouched`): the
    /// file found wrong and why. The files stay as they are until a checked open
    /// (`seglog recover`) rewrites them.
    pub fn rebuilt_indexes(&self) -> Vec<(std::path::PathBuf, String)> {
        self.segments
            .iter()
            .filter_map(|s| {
                let (path, why) = s.index.rebuilt()?;
                Some((path.to_path_buf(), why.to_string()))
            })
            .collect()
    }

    /// Each segment's own next offset (after its last batch; its base when empty),
    /// which a compaction gap can put below the next segment's base.
    pub(crate) fn segment_next_offsets(&self) -> Vec<i64> {
        self.segments.iter().map(|s| s.next_offset).collect()
    }

    /// True after an IO error in append/roll/flush.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Marks the log unusable until reopened (retention and compaction call this when
    /// an IO error leaves the directory and this handle out of step).
    pub(crate) fn poison(&mut self) {
        self.poisoned = true;
    }

    fn active(&self) -> &Segment {
        self.segments
            .last()
            .expect("a log always has an active segment")
    }

    fn active_mut(&mut self) -> &mut Segment {
        self.segments
            .last_mut()
            .expect("a log always has an active segment")
    }

    fn check_usable(&self) -> Result<()> {
        if self.poisoned {
            return Err(Error::Poisoned);
        }
        if self.closed {
            return Err(Error::InvalidArgument("the log was closed".into()));
        }
        Ok(())
    }

    fn check_writable(&self) -> Result<()> {
        self.check_usable()?;
        if self.read_only {
            return Err(Error::InvalidArgument(
                "the log was opened read-only".into(),
            ));
        }
        Ok(())
    }

    /// The structural invariants: non-empty, ascending bases, each segment's base at
    /// or after its predecessor's next offset.
    /// Drops the first `count` segments from the in-memory list once retention has
    /// deleted their files: the surviving segments are the ones already open, so no
    /// reopen (and no scan) is needed. The active segment always stays.
    pub(crate) fn forget_prefix(&mut self, count: usize) {
        assert!(count < self.segments.len(), "the active segment stays");
        let gone: Vec<i64> = self
            .segments
            .drain(..count)
            .map(|s| s.base_offset)
            .collect();
        self.mapped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(base, _)| !gone.contains(base));
        // Their `.txnindex` files went with them: build the state again when needed.
        self.txn_forget();
        self.assert_invariants();
    }

    /// Replaces the segment list with the one a compaction installed (its files are
    /// live and durable: the install returned). The caller checks that the log start
    /// and the next offset did not move. Nothing is read: the build described every
    /// segment, index entries included.
    #[cfg(feature = "test-variants")]
    pub(crate) fn adopt_segments(&mut self, segments: Vec<Segment>) {
        let active = segments
            .last()
            .expect("a compacted log has an active segment");
        assert!(active.pending_index.is_empty() && active.pending_time_index.is_empty());
        assert_eq!(
            active.bytes,
            self.active().bytes,
            "the active segment is copied as is"
        );
        self.synced_log_bytes = active.bytes;
        self.segments = segments;
        // The mappings are of the old files (unlinked with the backup).
        self.mapped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        // The segments (and their `.txnindex` files) changed.
        self.txn_forget();
        self.assert_invariants();
    }

    /// The segments from `tail_base` on, as they are now (a swap's tail).
    pub(crate) fn tail_segments(&self, tail_base: i64) -> Vec<Segment> {
        self.segments
            .iter()
            .filter(|s| s.base_offset >= tail_base)
            .cloned()
            .collect()
    }

    /// Replaces the segments below `tail_base` with the ones a concurrent cleaning
    /// installed (their files are live and durable: the swap returned); the tail
    /// (every segment from `tail_base` on, linked by the swap) stays as it is.
    pub(crate) fn adopt_cleaned(&mut self, closed: Vec<Segment>, tail_base: i64) {
        assert!(closed.iter().all(|s| s.base_offset < tail_base));
        let tail_at = self
            .segments
            .iter()
            .position(|s| s.base_offset == tail_base)
            .expect("the tail starts at the snapshot's active base");
        let tail = self.segments.split_off(tail_at);
        self.segments = closed;
        self.segments.extend(tail);
        // The mappings are of the old files (unlinked with the trash).
        self.mapped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        // The cleaned segments' `.txnindex` files changed: build the state again
        // when needed (a state kept from before the cleaning lists aborted
        // transactions whose entries the cleaning removed).
        self.txn_forget();
        self.assert_invariants();
    }

    fn assert_invariants(&self) {
        assert!(!self.segments.is_empty());
        for pair in self.segments.windows(2) {
            let [before, after] = pair else { continue };
            assert!(before.base_offset < after.base_offset);
            assert!(before.next_offset <= after.base_offset);
        }
        for segment in &self.segments {
            assert!(segment.next_offset >= segment.base_offset);
            if segment.is_empty() {
                assert_eq!(segment.records, 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_open_files_is_at_least_one() {
        let config = |max_open_files| LogConfig {
            max_open_files,
            ..LogConfig::default()
        };
        match config(0).validate() {
            Err(Error::InvalidArgument(why)) => {
                assert!(why.contains("max_open_files"), "{why}");
            }
            other => panic!("0 handles: {other:?}"),
        }
        config(1).validate().unwrap();
        config(usize::MAX).validate().unwrap();
        assert_eq!(LogConfig::default().max_open_files, OPEN_FILES_MAX_DEFAULT);
        LogConfig::default().validate().unwrap();
    }

    #[test]
    fn an_open_with_no_handle_allowed_is_refused_before_it_creates_anything() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("log");
        let config = LogConfig {
            max_open_files: 0,
            ..LogConfig::default()
        };
        let refused = Log::open(&dir, config);
        assert!(
            matches!(refused, Err(Error::InvalidArgument(_))),
            "{refused:?}"
        );
        assert!(!dir.exists());
    }
}

//! [`LogManager`]: one root directory holding many partition logs (Kafka's layout,
//! `<topic>-<partition>` directories), each with its own [`PartitionConfig`], with
//! background cleaner and retention threads (docs/design.md "Concurrency").
//!
//! * `partition`: the shared [`Partition`] handle and its configuration;
//! * `state`: per-partition cleaning states (Kafka's `LogCleanerManager`);
//! * `cleaner`: the choice of the dirtiest partition and one cleaning;
//! * `retention`: one retention pass over the partitions.
//!
//! Tests drive the background work through [`LogManager::run_cleaner_once`] and
//! [`LogManager::run_retention_once`] with a [`crate::ManualClock`]; the threads
//! ([`LogManager::start`]) call the same functions.
//!
//! # Design
//!
//! **Layout.** A `LogManager` holds one root directory with one partition log per
//! `<topic>-<partition>` directory (Kafka's layout); each partition's `PartitionConfig`
//! (`LogConfig`, `cleanup_policy`, retention and tombstone settings) comes from the
//! caller, like a broker's topic metadata: no config file on disk.
//!
//! **Handles and locks.** A `Partition` is an `Arc` (cloneable, `Send + Sync`) around an
//! `RwLock<Log>`. Appends, flushes and rolls take the write lock (the *append lock*);
//! reads take the read lock. A read lock rather than an `Arc` snapshot of the segment
//! list, because a read already returns owned bytes (`Bytes` of the segment, alive after
//! an unlink), reads are short, and the cleaner holds the write lock only for its bounded
//! snapshot and swap; a snapshot would copy the segment list per append for no gain. A
//! reader never sees a swap half done, and bytes it holds stay valid after one.
//!
//! **Background work.** `cleaner_threads` cleaner threads clean the compacting, idle
//! partition with the highest dirty ratio that `should_clean` accepts
//! (`manager::cleaner::choose`, pure; a partition held back by an open transaction is
//! passed over, and so is a partition whose own options cannot clean it, reported once as `CleanOutcome::Uncleanable` and listed by `uncleanable_partitions`, as Kafka's uncleanable partitions); one retention thread runs every
//! `retention_check_interval_ms` (tests call the same rounds under a `ManualClock`).
//!
//! **Cleaning states** (`manager::state`, Kafka's `LogCleanerManager`): `Idle`,
//! `InProgress`, `Paused(n)`, `Aborted`, one table under one mutex. A cleaner starts only
//! from `Idle`; retention pauses the partition for its deletion and skips one that is
//! being cleaned (never a cleaner and retention at once: KAFKA-7322's race);
//! `delete_partition` aborts a cleaning that has not swapped yet. `LogManager::close`
//! stops the threads, then closes every log cleanly. The swap also refuses when the
//! closed segments changed since the snapshot: a second line of defence.

pub(crate) mod cleaner;
pub(crate) mod partition;
pub(crate) mod retention;
pub(crate) mod state;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::log::Log;
use crate::sync::{lock, thread, Condvar, Mutex, RwLock};

pub use cleaner::{choose, clean_partition, Candidate, CleanOutcome};
pub use partition::{CleanupPolicy, Partition, PartitionConfig};
pub use retention::Retained;
pub use state::{CleaningState, CleaningStates};

/// The manager's own settings (Kafka's `log.cleaner.threads`,
/// `log.retention.check.interval.ms`, `log.cleaner.backoff.ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManagerConfig {
    /// Cleaner threads [`LogManager::start`] runs.
    pub cleaner_threads: usize,
    /// The retention thread's period.
    pub retention_check_interval_ms: u64,
    /// A cleaner that found nothing to clean waits this long, doubling up to
    /// `cleaner_backoff_ms_max` while it keeps finding nothing.
    pub cleaner_backoff_ms: u64,
    /// The longest backoff.
    pub cleaner_backoff_ms_max: u64,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        ManagerConfig {
            cleaner_threads: 1,
            retention_check_interval_ms: 300_000,
            cleaner_backoff_ms: 15_000,
            cleaner_backoff_ms_max: 60_000,
        }
    }
}

/// What one cleaner round did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cleaned {
    /// The partition cleaned (the dirtiest cleanable one).
    pub partition: String,
    /// What happened to it.
    pub outcome: CleanOutcome,
}

/// Counts of the background work ([`LogManager::background_counts`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackgroundCounts {
    /// Cleaning passes installed.
    pub cleanings: u64,
    /// Segments retention deleted.
    pub retention_deletions: u64,
    /// Background rounds that ended in an error.
    pub errors: u64,
}

/// Many partition logs under one root, with background cleaning and retention.
#[derive(Debug)]
pub struct LogManager {
    shared: Arc<Shared>,
    threads: Vec<thread::JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    fs: Arc<dyn FileSystem>,
    root: PathBuf,
    clock: Arc<dyn Clock>,
    config: ManagerConfig,
    partitions: RwLock<BTreeMap<String, Partition>>,
    states: CleaningStates,
    /// Set by [`LogManager::close`]; the threads wait on `wake` between rounds.
    stopping: Mutex<bool>,
    wake: Condvar,
    /// Background rounds that ended in an error (the partition stays as the error
    /// left it: a poisoned log refuses further work until reopened).
    errors: AtomicU64,
    /// Passes installed and segments retention deleted (see [`BackgroundCounts`]).
    cleanings: AtomicU64,
    retention_deletions: AtomicU64,
    /// Partitions whose own options cannot clean them, with the reason
    /// ([`CleanOutcome::Uncleanable`]): the cleaner passes them over.
    uncleanable: Mutex<BTreeMap<String, String>>,
    /// Test builds only: the broken `no-cleaning-lock` (retention ignores the
    /// cleaning states and may delete from a partition being cleaned).
    #[cfg(feature = "test-variants")]
    no_cleaning_lock: std::sync::atomic::AtomicBool,
}

impl LogManager {
    /// A manager of the logs under `root` (created if missing). No partition is
    /// opened and no thread started yet.
    ///
    /// Every partition's log opens through `fs`, so one budget of open files
    /// serves them all: a [`StdFs::with_open_files_max`](crate::fs::StdFs::with_open_files_max)
    /// keeps at most that many handles across the partitions, beside one writer
    /// lock per partition and the files with writes not yet synced (each active
    /// segment's few); a partition's own [`LogConfig::max_open_files`](crate::LogConfig::max_open_files)
    /// does not apply under a manager.
    pub fn new(
        fs: Arc<dyn FileSystem>,
        root: impl AsRef<Path>,
        config: ManagerConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<LogManager> {
        let root = root.as_ref().to_path_buf();
        fs.create_dir_all(&root).map_err(|e| Error::io(&root, e))?;
        Ok(LogManager {
            shared: Arc::new(Shared {
                fs,
                root,
                clock,
                config,
                partitions: RwLock::new(BTreeMap::new()),
                states: CleaningStates::default(),
                stopping: Mutex::new(false),
                wake: Condvar::new(),
                errors: AtomicU64::new(0),
                cleanings: AtomicU64::new(0),
                retention_deletions: AtomicU64::new(0),
                uncleanable: Mutex::new(BTreeMap::new()),
                #[cfg(feature = "test-variants")]
                no_cleaning_lock: std::sync::atomic::AtomicBool::new(false),
            }),
            threads: Vec::new(),
        })
    }

    /// `<topic>-<partition>`; the topic must be a plain name.
    pub fn partition_name(topic: &str, partition: u32) -> Result<String> {
        let plain = !topic.is_empty()
            && topic != "."
            && topic != ".."
            && topic
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !plain {
            return Err(Error::InvalidArgument(format!(
                "topic {topic:?} must be ASCII letters, digits, '.', '_' or '-'"
            )));
        }
        Ok(format!("{topic}-{partition}"))
    }

    /// Creates a new partition log; an error if its directory exists.
    pub fn create(
        &self,
        topic: &str,
        partition: u32,
        config: PartitionConfig,
    ) -> Result<Partition> {
        let name = Self::partition_name(topic, partition)?;
        let dir = self.shared.root.join(&name);
        if self.shared.fs.exists(&dir) {
            return Err(Error::InvalidArgument(format!(
                "partition {name} exists: open it"
            )));
        }
        self.register(name, dir, config)
    }

    /// Opens an existing partition log (its recovery runs); an error if it has no
    /// directory. Opening one that is open returns the same handle.
    pub fn open(&self, topic: &str, partition: u32, config: PartitionConfig) -> Result<Partition> {
        let name = Self::partition_name(topic, partition)?;
        if let Some(open) = self.get(topic, partition) {
            return Ok(open);
        }
        let dir = self.shared.root.join(&name);
        if !self.shared.fs.is_dir(&dir) {
            return Err(Error::InvalidArgument(format!(
                "partition {name} does not exist: create it"
            )));
        }
        self.register(name, dir, config)
    }

    fn register(&self, name: String, dir: PathBuf, config: PartitionConfig) -> Result<Partition> {
        let mut partitions = self
            .shared
            .partitions
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if partitions.contains_key(&name) {
            return Err(Error::InvalidArgument(format!("partition {name} is open")));
        }
        let (mut log, _report) =
            Log::open_with(Arc::clone(&self.shared.fs), &dir, config.log.clone())?;
        log.set_clock(Arc::clone(&self.shared.clock));
        let partition = Partition::new(name.clone(), config, log);
        assert!(partition.is_at(&dir));
        partitions.insert(name, partition.clone());
        Ok(partition)
    }

    /// The open partition `<topic>-<partition>`.
    pub fn get(&self, topic: &str, partition: u32) -> Option<Partition> {
        let name = Self::partition_name(topic, partition).ok()?;
        self.shared.partition(&name)
    }

    /// Every open partition, by name.
    pub fn partitions(&self) -> Vec<Partition> {
        self.shared.all()
    }

    /// The cleaning state of `<topic>-<partition>`.
    pub fn cleaning_state(&self, topic: &str, partition: u32) -> Result<CleaningState> {
        Ok(self
            .shared
            .states
            .get(&Self::partition_name(topic, partition)?))
    }

    /// Pauses cleaning of a partition (counted), waiting for a pass in progress.
    pub fn pause_cleaning(&self, topic: &str, partition: u32) -> Result<()> {
        self.shared
            .states
            .pause(&Self::partition_name(topic, partition)?, false);
        Ok(())
    }

    /// Undoes one [`LogManager::pause_cleaning`].
    pub fn resume_cleaning(&self, topic: &str, partition: u32) -> Result<()> {
        self.shared
            .states
            .resume(&Self::partition_name(topic, partition)?)
    }

    /// Deletes a partition: aborts a cleaning in progress (before its commit point;
    /// past it the install completes), closes the log and removes its directory.
    pub fn delete_partition(&self, topic: &str, partition: u32) -> Result<()> {
        let name = Self::partition_name(topic, partition)?;
        let Some(handle) = self.shared.partition(&name) else {
            return Err(Error::InvalidArgument(format!(
                "partition {name} is not open"
            )));
        };
        self.shared.states.pause(&name, true);
        self.shared
            .partitions
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&name);
        let dir = handle.dir();
        let closed = handle.with_log_mut(Log::close_in_place);
        self.shared.states.forget(&name);
        lock(&self.shared.uncleanable).remove(&name);
        closed?;
        self.shared
            .fs
            .remove_dir_all(&dir)
            .map_err(|e| Error::io(&dir, e))?;
        self.shared
            .fs
            .sync_dir(&self.shared.root)
            .map_err(|e| Error::io(&self.shared.root, e))
    }

    /// One cleaner round: the cleanable partition with the highest dirty ratio
    /// (whose cleaning is idle) is cleaned. `None` when none should be.
    pub fn run_cleaner_once(&self) -> Result<Option<Cleaned>> {
        self.shared.clean_once()
    }

    /// One retention round over the partitions whose policy deletes; a partition
    /// being cleaned is skipped this round.
    pub fn run_retention_once(&self) -> Result<Vec<Retained>> {
        self.shared.retain_once()
    }

    /// Test builds only: retention ignores the cleaning states (the refuted variant
    /// `no-cleaning-lock`).
    #[cfg(feature = "test-variants")]
    pub(crate) fn set_no_cleaning_lock(&self) {
        self.shared.no_cleaning_lock.store(true, Ordering::SeqCst);
    }

    /// The cleaning states (Kafka's `LogCleanerManager` table): what the cleaner
    /// and retention consult; tools and tests may take states through it.
    pub fn cleaning_states(&self) -> &CleaningStates {
        &self.shared.states
    }

    /// The partitions the cleaner passes over because their own options cannot
    /// clean them, with the reason (Kafka's uncleanable partitions): until the
    /// partition is deleted or the manager restarts.
    pub fn uncleanable_partitions(&self) -> BTreeMap<String, String> {
        lock(&self.shared.uncleanable).clone()
    }

    /// Background rounds that ended in an error so far.
    pub fn background_errors(&self) -> u64 {
        self.shared.errors.load(Ordering::SeqCst)
    }

    /// What the cleaner and retention rounds (threads or `run_*_once`) did so far.
    pub fn background_counts(&self) -> BackgroundCounts {
        BackgroundCounts {
            cleanings: self.shared.cleanings.load(Ordering::SeqCst),
            retention_deletions: self.shared.retention_deletions.load(Ordering::SeqCst),
            errors: self.shared.errors.load(Ordering::SeqCst),
        }
    }

    /// Starts `cleaner_threads` cleaner threads and one retention thread.
    pub fn start(&mut self) {
        assert!(self.threads.is_empty(), "started twice");
        for _ in 0..self.shared.config.cleaner_threads {
            let shared = Arc::clone(&self.shared);
            self.threads
                .push(thread::spawn(move || shared.cleaner_loop()));
        }
        let shared = Arc::clone(&self.shared);
        self.threads
            .push(thread::spawn(move || shared.retention_loop()));
    }

    /// Stops the threads (a pass in progress finishes first) and closes every log
    /// cleanly (clean-shutdown marker). The first error is returned after every
    /// log was tried.
    pub fn close(mut self) -> Result<()> {
        *lock(&self.shared.stopping) = true;
        self.shared.wake.notify_all();
        for handle in self.threads.drain(..) {
            handle.join().expect("a manager thread panicked");
        }
        let mut first = Ok(());
        for partition in self.shared.all() {
            let closed = partition.with_log_mut(Log::close_in_place);
            if first.is_ok() {
                first = closed;
            }
        }
        first
    }
}

impl Shared {
    fn partition(&self, name: &str) -> Option<Partition> {
        self.partitions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    fn all(&self) -> Vec<Partition> {
        self.partitions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    fn retain_once(&self) -> Result<Vec<Retained>> {
        #[cfg(feature = "test-variants")]
        let locked = !self.no_cleaning_lock.load(Ordering::SeqCst);
        #[cfg(not(feature = "test-variants"))]
        let locked = true;
        let retained = retention::run(&self.all(), &self.states, self.clock.now_ms(), locked)?;
        let deleted: usize = retained
            .iter()
            .filter_map(|r| r.deleted_segments.as_ref().map(Vec::len))
            .sum();
        self.retention_deletions
            .fetch_add(deleted as u64, Ordering::SeqCst);
        Ok(retained)
    }

    fn clean_once(&self) -> Result<Option<Cleaned>> {
        let now = self.clock.now_ms();
        let mut candidates = Vec::new();
        for partition in self.all() {
            if !partition.config().cleanup_policy.compacts()
                || self.states.get(partition.name()) != CleaningState::Idle
                || lock(&self.uncleanable).contains_key(partition.name())
            {
                continue;
            }
            let cleanable = partition.with_log(|log| log.cleanable(now))?;
            candidates.push(Candidate {
                name: partition.name().to_string(),
                cleanable,
                min_ratio: partition.config().log.min_cleanable_dirty_ratio,
            });
        }
        let Some(chosen) = choose(&candidates) else {
            return Ok(None);
        };
        let name = chosen.name.clone();
        let Some(partition) = self.partition(&name) else {
            return Ok(None);
        };
        if !self.states.begin_clean(&name) {
            // Paused, or another cleaner took it since: the next round decides again.
            return Ok(None);
        }
        let outcome = match cleaner::clean_partition(&partition, &self.states, now) {
            // Its own options cannot clean it: passed over from now on, so the
            // dirtiest partition that can be cleaned is cleaned next round.
            Err(Error::InvalidArgument(reason)) => {
                lock(&self.uncleanable).insert(name.clone(), reason.clone());
                Ok(CleanOutcome::Uncleanable { reason })
            }
            outcome => outcome,
        };
        self.states.end_clean(&name);
        if let Ok(CleanOutcome::Cleaned(_)) = &outcome {
            self.cleanings.fetch_add(1, Ordering::SeqCst);
        }
        Ok(Some(Cleaned {
            partition: name,
            outcome: outcome?,
        }))
    }

    /// Waits up to `ms` or until the manager stops; true when it stops.
    fn wait(&self, ms: u64) -> bool {
        let stopping = lock(&self.stopping);
        if *stopping {
            return true;
        }
        let (stopping, _) = self
            .wake
            .wait_timeout(stopping, Duration::from_millis(ms))
            .unwrap_or_else(|e| e.into_inner());
        *stopping
    }

    fn cleaner_loop(&self) {
        let mut backoff_ms = self.config.cleaner_backoff_ms;
        loop {
            if *lock(&self.stopping) {
                return;
            }
            match self.clean_once() {
                Ok(Some(_)) => backoff_ms = self.config.cleaner_backoff_ms,
                result => {
                    if result.is_err() {
                        self.errors.fetch_add(1, Ordering::SeqCst);
                    }
                    if self.wait(backoff_ms) {
                        return;
                    }
                    backoff_ms = (backoff_ms * 2).min(self.config.cleaner_backoff_ms_max);
                }
            }
        }
    }

    fn retention_loop(&self) {
        while !self.wait(self.config.retention_check_interval_ms) {
            if self.retain_once().is_err() {
                self.errors.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

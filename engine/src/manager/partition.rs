//! [`Partition`]: one partition log shared by threads. `Send + Sync` and cheap to
//! clone (an `Arc`). Appends, flushes and rolls take the log's write lock; reads
//! take its read lock, so readers run together and never see a swap half done
//! (docs/design.md "Concurrency"). A cleaner holds the write lock only for its
//! snapshot and its swap, never while it builds.

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use crate::format::NewRecord;
use crate::log::{AppendInfo, Log, LogConfig, ReadRecords};
use crate::sync::RwLock;

/// How a partition's old data goes (Kafka's `cleanup.policy`), given by the caller
/// like a broker's topic metadata: no on-disk config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanupPolicy {
    /// Retention deletes old segments; the cleaner leaves it alone.
    Delete,
    /// The cleaner compacts it; retention leaves it alone.
    Compact,
    /// Both.
    CompactDelete,
}

impl CleanupPolicy {
    /// True if the cleaner compacts partitions with this policy.
    pub fn compacts(self) -> bool {
        matches!(self, CleanupPolicy::Compact | CleanupPolicy::CompactDelete)
    }

    /// True if retention deletes from partitions with this policy.
    pub fn deletes(self) -> bool {
        matches!(self, CleanupPolicy::Delete | CleanupPolicy::CompactDelete)
    }
}

/// A partition's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionConfig {
    /// The log's own configuration.
    pub log: LogConfig,
    /// Delete, compact or both.
    pub cleanup_policy: CleanupPolicy,
    /// Retention by age (Kafka's `retention.ms`); `None`: unlimited.
    pub retention_ms: Option<i64>,
    /// Retention by size (Kafka's `retention.bytes`); `None`: unlimited.
    pub retention_bytes: Option<i64>,
    /// How long a tombstone survives cleaning (Kafka's `delete.retention.ms`).
    pub delete_retention_ms: i64,
}

impl Default for PartitionConfig {
    fn default() -> Self {
        PartitionConfig {
            log: LogConfig::default(),
            cleanup_policy: CleanupPolicy::Delete,
            retention_ms: None,
            retention_bytes: None,
            delete_retention_ms: 24 * 60 * 60 * 1000,
        }
    }
}

/// A shared handle on one partition log.
#[derive(Debug, Clone)]
pub struct Partition {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    name: String,
    config: PartitionConfig,
    log: RwLock<Log>,
}

impl Partition {
    pub(crate) fn new(name: String, config: PartitionConfig, log: Log) -> Partition {
        Partition {
            inner: Arc::new(Inner {
                name,
                config,
                log: RwLock::new(log),
            }),
        }
    }

    /// `<topic>-<partition>`, also its directory's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The partition's configuration.
    pub fn config(&self) -> &PartitionConfig {
        &self.inner.config
    }

    /// The log's directory.
    pub fn dir(&self) -> std::path::PathBuf {
        self.with_log(|log| log.dir().to_path_buf())
    }

    /// Appends one batch (write lock).
    pub fn append(&self, records: &[NewRecord]) -> Result<AppendInfo> {
        self.with_log_mut(|log| log.append(records))
    }

    /// Makes every append so far durable (write lock).
    pub fn flush(&self) -> Result<()> {
        self.with_log_mut(Log::flush)
    }

    /// Rolls the active segment (write lock).
    pub fn roll(&self) -> Result<i64> {
        self.with_log_mut(Log::roll)
    }

    /// Reads from `from` (read lock: readers run together, and a swap waits for them).
    pub fn read(&self, from: i64, max_bytes: usize) -> Result<ReadRecords> {
        self.with_log(|log| log.read(from, max_bytes))
    }

    /// The offset the next append gets.
    pub fn next_offset(&self) -> i64 {
        self.with_log(Log::next_offset)
    }

    /// The first offset held.
    pub fn log_start_offset(&self) -> i64 {
        self.with_log(Log::log_start_offset)
    }

    /// Runs `f` on the log under its read lock.
    pub fn with_log<T>(&self, f: impl FnOnce(&Log) -> T) -> T {
        let log = self.inner.log.read().unwrap_or_else(|e| e.into_inner());
        f(&log)
    }

    /// Runs `f` on the log under its write lock (the append lock).
    pub fn with_log_mut<T>(&self, f: impl FnOnce(&mut Log) -> T) -> T {
        let mut log = self.inner.log.write().unwrap_or_else(|e| e.into_inner());
        f(&mut log)
    }

    pub(crate) fn is_at(&self, dir: &Path) -> bool {
        self.dir() == dir
    }
}

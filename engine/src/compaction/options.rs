//! The types every stage of a compaction shares: what a pass is asked to do
//! ([`CompactOptions`], the cleaner's knobs [`CleanOptions`] and their
//! [`CompactionPolicy`]), where it reads from (`BuildFrom`), and what it leaves
//! ([`Built`], its [`CompactionReport`]). No IO, no imports from the stages.

use std::fmt;
use std::str::FromStr;

#[cfg(feature = "serde")]
use serde::Serialize;

use crate::error::{Error, Result};
use crate::format::manifest::Manifest;
use crate::install::InstallPaths;
use crate::segment::Segment;

use super::map::ENTRY_BYTES;

/// Compaction report (records, segments and bytes cover the closed region only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct CompactionReport {
    /// Records in the closed segments before compaction.
    pub records_before: u64,
    /// Records in the closed segments after compaction.
    pub records_after: u64,
    /// Closed segments before compaction.
    pub segments_before: u64,
    /// Closed segments after compaction.
    pub segments_after: u64,
    /// Bytes of the closed segments' `.log` files before compaction.
    pub bytes_before: u64,
    /// Bytes of the closed segments' `.log` files after compaction.
    pub bytes_after: u64,
    /// Distinct keys in the latest-offset map.
    pub map_keys: u64,
    /// Bytes the map held once built.
    pub map_bytes: u64,
    /// Most bytes the map held while being built.
    pub map_bytes_peak: u64,
    /// The clean point the pass started from (the log start when the log directory
    /// has no `cleaner-offset.checkpoint`).
    pub clean_point_before: i64,
    /// The clean point the pass installed: the end of what it cleaned.
    pub clean_point_after: i64,
    /// The first offset the map did not cover (`next_offset` when it covered all).
    pub mapped_end_offset: i64,
    /// Closed segments carried unchanged: no key of the map and no expired
    /// tombstone could touch them, so they were hard-linked into the new directory
    /// instead of rewritten (0 for a full compaction).
    pub segments_carried: u64,
    /// Their bytes: what the pass neither read for its map nor wrote.
    pub bytes_carried: u64,
    /// Keyless records the pass dropped (the `kafka` policy; 0 under `seed`).
    pub keyless_dropped: u64,
    /// Empty batches (record count 0) in the segments the pass cleaned: batches
    /// kept for an active producer's state (the `kafka` policy, Kafka's
    /// `RETAIN_EMPTY`; 0 under `seed`).
    pub empty_batches: u64,
}

/// The parameters of one compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactOptions {
    /// The time compaction runs at (ms since the epoch): tombstones older than `delete_retention_ms` before it go.
    pub now: i64,
    /// How long a tombstone is kept after its timestamp (Kafka's `delete.retention.ms`).
    pub delete_retention_ms: i64,
    /// Output segments are grouped up to this many compacted bytes.
    pub segment_bytes: u64,
}

/// A built temp directory, ready for [`crate::install::install`].
#[derive(Debug, Clone)]
pub struct Built {
    /// The manifest the install will write: the new directory's exact content.
    pub manifest: Manifest,
    /// What the compaction did.
    pub report: CompactionReport,
    /// The new directory's segments, oldest first, the active one last, with their
    /// paths in the live directory and their index entries as the temp dir holds
    /// them: what an open log adopts after the install instead of reopening.
    pub segments: Vec<Segment>,
}

/// What a build reads: the live directory as it is (the single-threaded
/// [`super::build::build_indexed`]), or a cleaner's snapshot of it ([`super::snapshot`]): the
/// snapshot's segments, the first `active_len` bytes of its active segment, and no
/// copy of the active segment (the swap links the tail, docs/design.md section 6).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BuildFrom<'a> {
    /// The segments (the last one active); `None`: list the directory.
    pub bases: Option<&'a [i64]>,
    /// The active segment's bytes the map covers; `None`: all of it.
    pub active_len: Option<u64>,
    /// Copy the active segment into the temp dir (the single-threaded build, and
    /// the broken `stale-tail-copy`).
    pub copy_active: bool,
}

impl BuildFrom<'_> {
    pub(crate) const LIVE: BuildFrom<'static> = BuildFrom {
        bases: None,
        active_len: None,
        copy_active: true,
    };
}

/// Kafka's default `producer.id.expiration.ms`: one day.
pub const PRODUCER_ID_EXPIRATION_MS_DEFAULT: i64 = 86_400_000;

/// The parts of [`super::build::build_indexed`]'s state a pass needs.
#[derive(Clone, Copy)]
pub(crate) struct BuildInputs<'a> {
    pub paths: &'a InstallPaths,
    /// Segment bases, ascending, the active one last; at least one closed.
    pub bases: &'a [i64],
    pub clean_point_before: i64,
    pub index_interval_bytes: u64,
    pub carry_point: bool,
    /// The live directory or a concurrent cleaning's snapshot.
    pub from: &'a BuildFrom<'a>,
}

/// The cleaner's knobs (docs/design.md section 1; `LogConfig` holds the log's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanOptions {
    /// Cap of the offset map, 24 bytes a key; `None`: unbounded.
    pub dedupe_buffer_bytes: Option<u64>,
    /// Closed segments holding a timestamp newer than `now - min_compaction_lag_ms`
    /// (and every later one) are not cleaned; 0: no lag.
    pub min_compaction_lag_ms: i64,
    /// The rules of the pass (`seed` by default).
    pub policy: CompactionPolicy,
    /// A producer with no open transaction whose last batch is this old is no
    /// longer active (Kafka's `producer.id.expiration.ms`): a `kafka` pass keeps an
    /// active producer's last batch as an empty batch ([`super::rules::retain_empty`]).
    pub producer_id_expiration_ms: i64,
}

impl Default for CleanOptions {
    fn default() -> Self {
        CleanOptions {
            dedupe_buffer_bytes: None,
            min_compaction_lag_ms: 0,
            policy: CompactionPolicy::default(),
            producer_id_expiration_ms: PRODUCER_ID_EXPIRATION_MS_DEFAULT,
        }
    }
}

impl CleanOptions {
    /// Keys the map may hold (`dedupe_buffer_bytes / 24`), `None` when unbounded.
    pub fn key_budget(&self) -> Option<u64> {
        self.dedupe_buffer_bytes
            .map(|bytes| bytes / ENTRY_BYTES as u64)
    }

    /// Rejects knobs that can never work.
    pub fn validate(&self) -> Result<()> {
        if self.min_compaction_lag_ms < 0 {
            return Err(Error::InvalidArgument(format!(
                "min_compaction_lag_ms must be >= 0, got {}",
                self.min_compaction_lag_ms
            )));
        }
        if self.producer_id_expiration_ms <= 0 {
            return Err(Error::InvalidArgument(format!(
                "producer_id_expiration_ms must be > 0, got {}",
                self.producer_id_expiration_ms
            )));
        }
        if self.key_budget() == Some(0) {
            return Err(Error::InvalidArgument(format!(
                "dedupe_buffer_bytes {:?} holds no key ({ENTRY_BYTES} bytes a key)",
                self.dedupe_buffer_bytes
            )));
        }
        Ok(())
    }
}

/// A log's compaction policy (`LogConfig::compaction_policy`, CLI `--policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum CompactionPolicy {
    /// The seeds' rules: the map covers the whole log, active segment included;
    /// keyless records stay; a tombstone goes once older than `delete_retention_ms`.
    #[default]
    Seed,
    /// Kafka's cleaner: the map stops at the first uncleanable offset; keyless
    /// records go; a kept tombstone's batch is stamped with a delete horizon and the
    /// tombstone goes on a cleaning at or past it; grouping by source sizes.
    Kafka,
}

impl CompactionPolicy {
    /// Its name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            CompactionPolicy::Seed => "seed",
            CompactionPolicy::Kafka => "kafka",
        }
    }
}

impl fmt::Display for CompactionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CompactionPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "seed" => Ok(CompactionPolicy::Seed),
            "kafka" => Ok(CompactionPolicy::Kafka),
            other => Err(format!(
                "unknown compaction policy {other:?} (seed or kafka)"
            )),
        }
    }
}

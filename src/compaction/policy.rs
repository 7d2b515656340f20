//! Which rules a cleaning pass follows (docs/design.md section 1): the seeds'
//! (`seed`, the default) or Apache Kafka's cleaner's (`kafka`, [`super::kafka`]).
//! The choice is passed down in [`super::CleanOptions`]; each rule that differs is
//! one function of [`super::kafka`], where the transaction rules plug in later.

use std::fmt;
use std::str::FromStr;

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

//! The crash-scenario file format (TOML). See docs/design.md section 8 and
//! crash-scenarios/README.md.
//!
//! ```toml
//! name = "install-crash-after-commit"
//! description = "power loss right after the manifest became durable"
//! invariant = "install_atomic"          # the invariant at stake
//! variant = "manifest"                  # protocol variant replayed by default
//!
//! [config]
//! segment_bytes = 1048576
//! index_interval_bytes = 64
//!
//! [[ops]]                               # the workload; the crash interrupts one of them
//! op = "append"
//! records = [{ key = "a", value = "1", ts = 0 }]   # no key: keyless; no value: tombstone
//! [[ops]]
//! op = "roll"
//! [[ops]]
//! op = "compact"
//! now = 10
//! delete_retention_ms = 1000
//!
//! [crash]
//! failpoint = "install::swap::rename_live_to_backup"   # or: before_fs_op = 17
//! hit = 1                                # which hit of the fail point (default 1)
//! semantics = "power_loss"               # or "process"
//! lost = ["dir /data: rename log -> log.compact-bak"]  # exact lost entries/bytes
//! recovery_crash_before_op = 2           # optional: crash again during recovery,
//! recovery_lost = ["..."]                # with a power loss that lost these
//!
//! [expect]
//! outcome = "new"                        # "old", "new", "allowed", "violation" or "exact"
//! # for "exact": log_start_offset, next_offset and records = [{offset, key, value, ts}]
//! [expect.variants]                      # expectations when replayed against other variants
//! two-rename = "violation"
//! ```

use seglog::fs::sim::Persistence;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::workload::Op;

/// One scenario file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub invariant: String,
    #[serde(default = "default_variant")]
    pub variant: String,
    #[serde(default)]
    pub config: ScenarioConfig,
    pub ops: Vec<Op>,
    /// No crash: the operations run to the end and the log is compared as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<CrashSpec>,
    pub expect: Expectation,
}

fn is_any_subset(persistence: &Persistence) -> bool {
    *persistence == Persistence::AnySubset
}

fn default_variant() -> String {
    "manifest".into()
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioConfig {
    pub segment_bytes: u64,
    pub index_interval_bytes: u64,
}

impl Default for ScenarioConfig {
    fn default() -> Self {
        ScenarioConfig {
            segment_bytes: 1024 * 1024,
            index_interval_bytes: 64,
        }
    }
}

/// Where and how the crash happens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashSpec {
    /// Crash right before the file-system operation this fail point guards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failpoint: Option<String>,
    /// Which hit of `failpoint` (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit: Option<u32>,
    /// Crash before mutating file-system operation k (0-based), counted from the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_fs_op: Option<u64>,
    pub semantics: Semantics,
    /// Which directory operations a power loss may take (`any-subset`, the default,
    /// or `ordered-metadata`): the persistence model the workload runs under, and
    /// that `lost` must fit.
    #[serde(default, skip_serializing_if = "is_any_subset")]
    pub persistence: Persistence,
    /// Power loss: exactly what was lost (as `SimFs` describes lost items).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<String>,
    /// Crash again during recovery, before this recovery operation (0-based),
    /// with a power loss that took away exactly `recovery_lost` (empty: a process crash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_crash_before_op: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recovery_lost: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Semantics {
    Process,
    PowerLoss,
}

/// What recovery must produce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_start_offset: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<Vec<ExpectedRecord>>,
    /// Expected outcome when replayed against another protocol variant.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variants: BTreeMap<String, Outcome>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Exactly the log before the interrupted operation.
    Old,
    /// Exactly the log after the interrupted operation.
    New,
    /// `log_start_offset`, `next_offset` and `records` as given.
    Exact,
    /// Any state the crash sweep allows (from the last durability point up to the
    /// state after the interrupted operation): what an emitted counterexample expects.
    Allowed,
    /// Recovery fails, or produces a log that is neither old nor new (a broken variant).
    Violation,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedRecord {
    pub offset: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub ts: i64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub control: bool,
}

impl Scenario {
    pub fn parse(text: &str) -> Result<Scenario, String> {
        let scenario: Scenario = toml::from_str(text).map_err(|e| e.to_string())?;
        scenario.validate()?;
        Ok(scenario)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot serialize: {e}\n"))
    }

    fn validate(&self) -> Result<(), String> {
        if let Some(crash) = &self.crash {
            match (&crash.failpoint, crash.before_fs_op) {
                (Some(_), Some(_)) => {
                    return Err("crash: give failpoint or before_fs_op, not both".into())
                }
                (None, None) => return Err("crash: give failpoint or before_fs_op".into()),
                _ => {}
            }
            if crash.semantics == Semantics::Process && !crash.lost.is_empty() {
                return Err(
                    "crash: a process crash loses nothing; `lost` needs semantics = \"power_loss\""
                        .into(),
                );
            }
        }
        if self.expect.outcome == Outcome::Exact
            && (self.expect.log_start_offset.is_none()
                || self.expect.next_offset.is_none()
                || self.expect.records.is_none())
        {
            return Err(
                "expect: outcome \"exact\" needs log_start_offset, next_offset and records".into(),
            );
        }
        Ok(())
    }

    /// The expected outcome when replayed against `variant`.
    pub fn expected_for(&self, variant: &str) -> Outcome {
        if variant == self.variant {
            return self.expect.outcome;
        }
        self.expect
            .variants
            .get(variant)
            .copied()
            .unwrap_or(self.expect.outcome)
    }
}

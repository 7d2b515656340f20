//! The cleaner's clean point, its dirty ratio and its bounded offset map
//! (docs/design.md section 1, "Incremental cleaning").
//!
//! The log's offsets `[log_start_offset, clean_point)` are the *clean section*: a
//! cleaning left at most one record per key there. The rest, `[clean_point,
//! next_offset)` with the active segment, is the *dirty section*. A cleaning pass:
//!
//! 1. maps the dirty section's keyed records of data batches, whole batches in offset
//!    order, as long as the distinct keys fit the budget (`dedupe_buffer_bytes / 24`;
//!    unbounded by default): the mapped end `X` is the first batch that did not fit,
//!    or `next_offset`. A first batch that alone does not fit is `InvalidArgument`;
//! 2. rewrites the closed batches below the horizon `Y = min(X, first uncleanable
//!    offset)`; a keyed record is kept if the map does not hold its key (a clean
//!    record no dirty record supersedes) or holds exactly its offset, and it is not a
//!    tombstone older than `delete_retention_ms`; batches at or past `Y` stay as they are;
//! 3. moves the clean point to `max(clean_point, Y)`, never into the active segment.
//!
//! Unbounded and without lag, a pass equals the full compaction of
//! [`SpecLog::compact_full`] (the clean section is deduplicated): [`SpecLog::compact`]
//! is that pass, checked against the full compaction. Bounded, enough passes reach
//! that result, each intermediate log keeping every invariant.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::compact::{compact_closed, tombstone_expired, CompactionSummary};
use super::{Batch, Rec, SpecError, SpecLog};

/// Bytes one key takes in the cleaner's offset map (a 16-byte digest and an 8-byte
/// offset), as `dedupe_buffer_bytes` counts them.
pub const MAP_ENTRY_BYTES: u64 = 24;

/// Which rules a cleaning pass follows (docs/design.md section 1): the seeds'
/// (`seed`, the default) or Kafka's cleaner's (`kafka`, module `spec::kafka`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionPolicy {
    #[default]
    Seed,
    Kafka,
}

/// Kafka's default `producer.id.expiration.ms`: one day.
pub const PRODUCER_ID_EXPIRATION_MS_DEFAULT: i64 = 86_400_000;

fn producer_id_expiration_ms_default() -> i64 {
    PRODUCER_ID_EXPIRATION_MS_DEFAULT
}

/// The cleaner's knobs that change what one pass does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CleanKnobs {
    /// Cap of the offset map, 24 bytes a key; `None`: unbounded.
    pub dedupe_buffer_bytes: Option<u64>,
    /// A closed segment holding a timestamp newer than `now - min_compaction_lag_ms`
    /// is not cleaned, nor any after it (0: no lag).
    pub min_compaction_lag_ms: i64,
    /// The rules of the pass (absent in older files: `seed`).
    #[serde(default)]
    pub policy: CompactionPolicy,
    /// A producer with no open transaction whose last batch is this old is no
    /// longer active (Kafka's `producer.id.expiration.ms`); a `kafka` pass keeps an
    /// active producer's last batch as an empty batch (`spec::kafka_txn` rule 5).
    #[serde(default = "producer_id_expiration_ms_default")]
    pub producer_id_expiration_ms: i64,
}

impl Default for CleanKnobs {
    fn default() -> Self {
        CleanKnobs {
            dedupe_buffer_bytes: None,
            min_compaction_lag_ms: 0,
            policy: CompactionPolicy::Seed,
            producer_id_expiration_ms: PRODUCER_ID_EXPIRATION_MS_DEFAULT,
        }
    }
}

impl CleanKnobs {
    /// Keys the map may hold, or `None` when unbounded.
    pub fn key_budget(&self) -> Option<u64> {
        self.dedupe_buffer_bytes
            .map(|bytes| bytes / MAP_ENTRY_BYTES)
    }

    pub(super) fn validate(&self) -> Result<(), SpecError> {
        if self.min_compaction_lag_ms < 0 {
            return Err(SpecError::InvalidArgument(format!(
                "min_compaction_lag_ms {} < 0",
                self.min_compaction_lag_ms
            )));
        }
        if self.producer_id_expiration_ms <= 0 {
            return Err(SpecError::InvalidArgument(format!(
                "producer_id_expiration_ms {} <= 0",
                self.producer_id_expiration_ms
            )));
        }
        if self.key_budget() == Some(0) {
            return Err(SpecError::InvalidArgument(format!(
                "dedupe_buffer_bytes {:?} holds no key ({MAP_ENTRY_BYTES} bytes a key)",
                self.dedupe_buffer_bytes
            )));
        }
        Ok(())
    }
}

/// How dirty a log is (Kafka's `LogToClean`), by whole closed segments: a segment
/// that ends at or before the clean point is clean; a later one below the first
/// uncleanable offset is cleanable.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cleanable {
    pub clean_point: i64,
    pub first_uncleanable_offset: i64,
    pub clean_bytes: u64,
    pub cleanable_bytes: u64,
    /// `cleanable_bytes / (clean_bytes + cleanable_bytes)`, 0 for no bytes.
    pub dirty_ratio: f64,
}

impl Cleanable {
    /// Kafka's trigger: something to clean and a ratio above `min_cleanable_dirty_ratio`.
    pub fn should_clean(&self, min_cleanable_dirty_ratio: f64) -> bool {
        self.cleanable_bytes > 0 && self.dirty_ratio > min_cleanable_dirty_ratio
    }
}

/// The map of one pass: latest offset per key over `[clean_point, mapped_end)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirtyMap {
    pub latest: BTreeMap<Vec<u8>, i64>,
    /// The first offset not mapped (a batch's base, or `next_offset`).
    pub mapped_end: i64,
}

/// `first_uncleanable` held at the base of the segment holding
/// `last_stable_offset` when that offset is below it (`bases`: the segment bases,
/// ascending). The rule of the kafka pass's bound (`KafkaTxnRules::bound`).
pub fn stable_bound(first_uncleanable: i64, last_stable_offset: i64, bases: &[i64]) -> i64 {
    if last_stable_offset >= first_uncleanable {
        return first_uncleanable;
    }
    bases
        .iter()
        .copied()
        .take_while(|&b| b <= last_stable_offset)
        .last()
        .unwrap_or(first_uncleanable)
        .min(first_uncleanable)
}

impl SpecLog {
    pub fn clean_point(&self) -> i64 {
        self.clean_point
    }

    /// Sets the clean point (e.g. read back from the engine): within
    /// `[log_start_offset, active base]`, and the clean section must be deduplicated.
    pub fn set_clean_point(&mut self, clean_point: i64) -> Result<(), SpecError> {
        let (start, active) = (self.log_start_offset(), self.active().base_offset);
        if clean_point < start || clean_point > active {
            return Err(SpecError::Inconsistent(format!(
                "clean point {clean_point} outside [{start}, {active}]"
            )));
        }
        let before = std::mem::replace(&mut self.clean_point, clean_point);
        if let Some(key) = self.clean_section_duplicate() {
            self.clean_point = before;
            return Err(SpecError::Inconsistent(format!(
                "key {key:?} occurs twice below clean point {clean_point}"
            )));
        }
        Ok(())
    }

    /// A key written twice in the clean section, if any (the invariant is `None`).
    pub fn clean_section_duplicate(&self) -> Option<Vec<u8>> {
        let mut seen = BTreeSet::new();
        self.batches()
            .filter(|b| !b.control && b.base_offset < self.clean_point)
            .flat_map(|b| &b.records)
            .filter_map(|r| r.key.as_ref())
            .find(|key| !seen.insert(*key))
            .cloned()
    }

    /// Kafka's first uncleanable offset: the active segment's base, or with a lag the
    /// base of the first closed segment past the clean point holding a timestamp newer
    /// than `now - min_compaction_lag_ms`.
    pub fn first_uncleanable_offset(&self, now: i64, min_compaction_lag_ms: i64) -> i64 {
        let active = self.active().base_offset;
        if min_compaction_lag_ms <= 0 {
            return active;
        }
        let horizon = now.saturating_sub(min_compaction_lag_ms);
        self.closed_segments()
            .iter()
            .find(|s| s.next_offset() > self.clean_point && s.max_timestamp() > horizon)
            .map_or(active, |s| s.base_offset)
    }

    /// The dirty ratio and the bytes it is made of (see [`Cleanable`]). The
    /// cleanable section ends at the first uncleanable offset held at the base of
    /// the segment holding the last stable offset (Kafka's
    /// `LogCleanerManager.cleanableOffsets`, `stable_bound`): an open
    /// transaction holds back its segment and every later one, under both policies.
    pub fn cleanable(&self, now: i64, min_compaction_lag_ms: i64) -> Cleanable {
        let bases: Vec<i64> = self.segments.iter().map(|s| s.base_offset).collect();
        let first_uncleanable_offset = stable_bound(
            self.first_uncleanable_offset(now, min_compaction_lag_ms),
            self.last_stable_offset(),
            &bases,
        );
        let mut clean_bytes = 0;
        let mut cleanable_bytes = 0;
        for segment in self.closed_segments() {
            if segment.next_offset() <= self.clean_point {
                clean_bytes += segment.bytes();
            } else if segment.base_offset < first_uncleanable_offset {
                cleanable_bytes += segment.bytes();
            }
        }
        let total = clean_bytes + cleanable_bytes;
        Cleanable {
            clean_point: self.clean_point,
            first_uncleanable_offset,
            clean_bytes,
            cleanable_bytes,
            dirty_ratio: if total == 0 {
                0.0
            } else {
                cleanable_bytes as f64 / total as f64
            },
        }
    }

    /// Step 1 of a pass: the map of the dirty section, whole batches while the
    /// distinct keys fit `key_budget`.
    pub fn dirty_map(&self, key_budget: Option<u64>) -> Result<DirtyMap, SpecError> {
        let mut latest: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
        for batch in self
            .batches()
            .filter(|b| b.base_offset >= self.clean_point && !b.control)
        {
            let keys: BTreeSet<&Vec<u8>> = batch
                .records
                .iter()
                .filter_map(|r| r.key.as_ref())
                .filter(|k| !latest.contains_key(*k))
                .collect();
            if let Some(budget) = key_budget {
                if (latest.len() + keys.len()) as u64 > budget {
                    if latest.is_empty() {
                        return Err(SpecError::InvalidArgument(format!(
                            "the offset map holds {budget} keys; batch {} alone has {}",
                            batch.base_offset,
                            keys.len()
                        )));
                    }
                    return Ok(DirtyMap {
                        latest,
                        mapped_end: batch.base_offset,
                    });
                }
            }
            for rec in &batch.records {
                if let Some(key) = &rec.key {
                    latest.insert(key.clone(), rec.offset);
                }
            }
        }
        Ok(DirtyMap {
            latest,
            mapped_end: self.next_offset(),
        })
    }

    /// One cleaning pass (the module docs): the summary covers the closed region.
    pub fn clean(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
        knobs: CleanKnobs,
    ) -> Result<CompactionSummary, SpecError> {
        if delete_retention_ms < 0 {
            return Err(SpecError::InvalidArgument(format!(
                "delete_retention_ms {delete_retention_ms} < 0"
            )));
        }
        let group_bytes_max = segment_bytes.unwrap_or(self.segment_bytes);
        if group_bytes_max == 0 {
            return Err(SpecError::InvalidArgument("segment_bytes 0".into()));
        }
        knobs.validate()?;
        if self.closed_segments().is_empty() {
            return Ok(CompactionSummary::default());
        }
        if knobs.policy == CompactionPolicy::Kafka {
            return self.clean_kafka(now, delete_retention_ms, group_bytes_max, knobs);
        }
        if self.seed_txn_applies() {
            // The transaction rules (`spec::txn_log`): a full pass, knobs unused.
            return Ok(self.clean_seed_txn(now, delete_retention_ms, group_bytes_max));
        }
        let map = self.dirty_map(knobs.key_budget())?;
        let horizon = map
            .mapped_end
            .min(self.first_uncleanable_offset(now, knobs.min_compaction_lag_ms));
        let keep = |batch: &Batch, rec: &Rec| {
            if batch.base_offset >= horizon {
                return true;
            }
            match &rec.key {
                None => true,
                Some(key) => {
                    map.latest.get(key).is_none_or(|&l| l == rec.offset)
                        && !tombstone_expired(rec, now, delete_retention_ms)
                }
            }
        };
        let summary = compact_closed(self, group_bytes_max, keep);
        let active = self.active().base_offset;
        assert!(
            horizon <= active,
            "the horizon never enters the active segment"
        );
        self.clean_point = self.clean_point.max(horizon);
        debug_assert_eq!(self.clean_section_duplicate(), None);
        Ok(summary)
    }

    /// Cleans until a pass has mapped the whole dirty section (the result of an
    /// unbounded compaction, lag aside), or no pass can do more: a lag holds the clean
    /// point, or the active segment alone holds more keys than the map. The
    /// multi-pass cleaning a bounded map needs. Returns the passes.
    pub fn clean_fully(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
        knobs: CleanKnobs,
    ) -> Result<Vec<CompactionSummary>, SpecError> {
        let mut passes = Vec::new();
        loop {
            let before = self.clean_point;
            let reaches_end = self.dirty_map(knobs.key_budget())?.mapped_end == self.next_offset();
            passes.push(self.clean(now, delete_retention_ms, segment_bytes, knobs)?);
            if reaches_end || self.clean_point == before {
                return Ok(passes);
            }
        }
    }

    /// Compacts the closed region: one cleaning pass with an unbounded map and no
    /// lag ([`SpecLog::clean`]), which maps the dirty section only and equals
    /// [`SpecLog::compact_full`] (checked on every call). `segment_bytes` (default:
    /// the log's) bounds the output grouping. The active segment, `next_offset` and
    /// `log_start_offset` are unchanged; the clean point moves to the active segment.
    pub fn compact(
        &mut self,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
    ) -> Result<CompactionSummary, SpecError> {
        let mut full = self.clone();
        let full_summary = full.compact_full(now, delete_retention_ms, segment_bytes);
        let summary = self.clean(
            now,
            delete_retention_ms,
            segment_bytes,
            CleanKnobs::default(),
        );
        assert_eq!(
            summary, full_summary,
            "incremental and full compaction agree"
        );
        if summary.is_ok() {
            assert_eq!(
                self.segments, full.segments,
                "incremental and full compaction agree"
            );
        }
        summary
    }
}

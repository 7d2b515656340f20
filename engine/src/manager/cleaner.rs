//! The cleaner's choice (pure) and one cleaning of one partition: snapshot under
//! the partition's write lock, build without it, swap under it, trash after it.

#[cfg(feature = "serde")]
use serde::Serialize;

use crate::compaction::cleanable::Cleanable;
use crate::compaction::snapshot::abort_dir;
use crate::compaction::CompactionReport;
use crate::error::Result;

use super::partition::Partition;
use super::state::CleaningStates;

/// One cleanable partition as the cleaner sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The partition's name.
    pub name: String,
    /// Its dirty ratio and bytes.
    pub cleanable: Cleanable,
    /// Its `min_cleanable_dirty_ratio`.
    pub min_ratio: f64,
}

/// Kafka's choice: among the partitions whose ratio says clean, the one with the
/// highest dirty ratio (ties: the first name). `None` when none should be cleaned.
pub fn choose(candidates: &[Candidate]) -> Option<&Candidate> {
    candidates
        .iter()
        .filter(|c| c.cleanable.should_clean(c.min_ratio))
        .fold(None, |best: Option<&Candidate>, c| match best {
            Some(b) if b.cleanable.dirty_ratio >= c.cleanable.dirty_ratio => Some(b),
            _ => Some(c),
        })
}

/// What one cleaning of a partition did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub enum CleanOutcome {
    /// The pass was installed.
    Cleaned(CompactionReport),
    /// No closed segment: nothing to build.
    NothingToClean,
    /// The partition's cleaning was aborted before the commit point: the temp dir
    /// was dropped.
    Aborted,
    /// The partition's own options cannot clean it (its pass was refused with
    /// `InvalidArgument`, e.g. a map budget below one batch's distinct keys):
    /// nothing changed, and later rounds pass it over (Kafka's uncleanable
    /// partitions) so the other partitions are cleaned.
    Uncleanable {
        /// The refusal's message.
        reason: String,
    },
}

/// Cleans `partition` at `now`. The caller holds its `InProgress` state.
pub fn clean_partition(
    partition: &Partition,
    states: &CleaningStates,
    now: i64,
) -> Result<CleanOutcome> {
    let name = partition.name();
    assert!(
        matches!(
            states.get(name),
            super::CleaningState::InProgress | super::CleaningState::Aborted
        ),
        "the caller holds the partition's cleaning"
    );
    let delete_retention_ms = partition.config().delete_retention_ms;
    let snapshot = partition.with_log_mut(|log| {
        let knobs = log.config().clean_options();
        log.clean_snapshot(now, delete_retention_ms, None, knobs)
    })?;
    let Some(snapshot) = snapshot else {
        return Ok(CleanOutcome::NothingToClean);
    };
    let fs = partition.with_log(|log| std::sync::Arc::clone(log.fs()));
    let dir = partition.dir();
    // No lock: appends, reads and flushes go on while the temp dir is built.
    let build = match snapshot.build() {
        Ok(build) => build,
        Err(e) => {
            abort_dir(fs.as_ref(), &dir)?;
            return Err(e);
        }
    };
    let swapped = partition.with_log_mut(|log| {
        if states.is_aborted(partition.name()) {
            return build.abort().map(|()| None);
        }
        log.clean_swap(build).map(Some)
    })?;
    let Some(swapped) = swapped else {
        return Ok(CleanOutcome::Aborted);
    };
    // Step 7, without the lock.
    if let Some(trash) = swapped.trash {
        trash.remove(fs.as_ref())?;
    }
    Ok(CleanOutcome::Cleaned(swapped.report))
}

//! One retention round: every partition whose policy deletes, unless a cleaner
//! holds it (then it is skipped this round: retention never deletes from a
//! partition being cleaned, KAFKA-7322's race).

use crate::error::Result;

use super::partition::Partition;
use super::state::CleaningStates;

/// What retention did to one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retained {
    /// The partition's name.
    pub partition: String,
    /// Base offsets of the segments deleted; `None`: skipped (being cleaned).
    pub deleted_segments: Option<Vec<i64>>,
}

/// Runs retention at `now` over `partitions`. `locked` is always true but in the
/// refuted test variant `no-cleaning-lock`.
pub fn run(
    partitions: &[Partition],
    states: &CleaningStates,
    now: i64,
    locked: bool,
) -> Result<Vec<Retained>> {
    let mut out = Vec::new();
    for partition in partitions {
        let config = partition.config();
        if !config.cleanup_policy.deletes() {
            continue;
        }
        let name = partition.name();
        if !locked {
            let result = partition
                .with_log_mut(|log| log.retain(now, config.retention_ms, config.retention_bytes));
            out.push(Retained {
                partition: name.to_string(),
                deleted_segments: Some(result?.deleted_segments),
            });
            continue;
        }
        if !states.try_pause(name) {
            out.push(Retained {
                partition: name.to_string(),
                deleted_segments: None,
            });
            continue;
        }
        let result = partition.with_log_mut(|log| {
            // Mutual exclusion: no cleaner holds this partition while it deletes.
            assert!(matches!(states.get(name), super::CleaningState::Paused(_)));
            log.retain(now, config.retention_ms, config.retention_bytes)
        });
        states.resume(name)?;
        out.push(Retained {
            partition: name.to_string(),
            deleted_segments: Some(result?.deleted_segments),
        });
    }
    Ok(out)
}

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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::fs::sim::SimFs;
    use crate::fs::FileSystem;
    use crate::log::{Log, LogConfig};
    use crate::manager::partition::PartitionConfig;
    use crate::manager::CleaningState;
    use crate::NewRecord;

    /// Two closed segments, all expired at `now` 1,000 with `retention_ms` 10.
    fn partition() -> Partition {
        let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
        let (mut log, _) = Log::open_with(fs, Path::new("/t-0"), LogConfig::default()).unwrap();
        for ts in [1, 2] {
            let record = NewRecord::new(None, Some(b"v".to_vec()), ts);
            log.append(std::slice::from_ref(&record)).unwrap();
            log.roll().unwrap();
        }
        let config = PartitionConfig {
            retention_ms: Some(10),
            ..PartitionConfig::default()
        };
        Partition::new("t-0".into(), config, log)
    }

    /// A partition no cleaner holds is paused for the round, its expired segments
    /// deleted, and resumed after; one a cleaner holds is skipped and left to it.
    #[test]
    fn retention_deletes_from_idle_partitions_and_skips_cleaned_ones() {
        let partitions = [partition()];
        let states = CleaningStates::default();
        assert!(states.begin_clean("t-0"));
        let skipped = run(&partitions, &states, 1_000, true).unwrap();
        assert_eq!(skipped[0].deleted_segments, None);
        assert_eq!(states.get("t-0"), CleaningState::InProgress);
        states.end_clean("t-0");
        let done = run(&partitions, &states, 1_000, true).unwrap();
        assert_eq!(done[0].deleted_segments, Some(vec![0, 1]));
        assert_eq!(states.get("t-0"), CleaningState::Idle, "resumed");
        assert_eq!(partitions[0].log_start_offset(), 2);
    }
}

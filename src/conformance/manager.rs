//! The LogManager's background cleaner against the spec: seeded cases of a few
//! compacting partitions, each with options of its own (policy, map budget, min
//! lag, producer expiration, tombstone retention, dirty-ratio threshold), driven
//! through appends, rolls, clock moves and cleaner rounds (`run_cleaner_once`) on
//! SimFs. At every round:
//!
//! - **the choice**: the partition cleaned is the spec's choice, the dirtiest
//!   partition whose `cleanable` says clean at its own threshold (ties: the first
//!   name), or none when none does (Kafka's `LogCleanerManager.grabFilthiestLog`),
//!   among those not found uncleanable;
//! - **the pass**: the cleaned partition equals its spec cleaned with that
//!   partition's own options at the manager's clock, and every other partition is
//!   unchanged; a pass the spec refuses for the partition's options (a map budget
//!   below one batch's keys) is the outcome `Uncleanable`, changes nothing, and
//!   the partition is passed over from then on (the others are still cleaned).

use std::sync::Arc;

use seglog_model::spec::SpecLog;

use crate::soak::workload::Rng;
use crate::workload::{spec, Op, OpOutcome, RecordSpec};
use seglog::clock::{Clock, ManualClock};
use seglog::compaction::CompactionPolicy;
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::log::LogConfig;
use seglog::manager::{
    CleanOutcome, CleanupPolicy, LogManager, ManagerConfig, Partition, PartitionConfig,
};

use super::compare::compare;

/// Partitions per case.
const PARTITIONS: usize = 3;

/// What the manager cases did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ManagerStats {
    pub cases: u64,
    /// Cleaner rounds compared, and those that cleaned a partition.
    pub rounds: u64,
    pub cleaned: u64,
    /// Partitions found uncleanable (their options cannot clean them).
    pub uncleanable: u64,
}

/// One partition's options, drawn.
fn partition_config(rng: &mut Rng) -> PartitionConfig {
    let log = LogConfig {
        segment_bytes: super::case_config().segment_bytes,
        index_interval_bytes: super::case_config().index_interval_bytes,
        compaction_policy: if rng.chance(50) {
            CompactionPolicy::Kafka
        } else {
            CompactionPolicy::Seed
        },
        // Room for 2 to 5 keys: several passes where the keys do not fit.
        dedupe_buffer_bytes: rng
            .chance(30)
            .then(|| (2 + rng.below(4)) * seglog_model::spec::MAP_ENTRY_BYTES),
        min_compaction_lag_ms: if rng.chance(60) {
            0
        } else {
            1 + rng.below(60) as i64
        },
        producer_id_expiration_ms: if rng.chance(50) {
            seglog::compaction::PRODUCER_ID_EXPIRATION_MS_DEFAULT
        } else {
            1 + rng.below(300) as i64
        },
        min_cleanable_dirty_ratio: [0.0, 0.3, 0.5, 0.8][rng.below(4) as usize],
        ..LogConfig::default()
    };
    PartitionConfig {
        log,
        cleanup_policy: CleanupPolicy::Compact,
        delete_retention_ms: rng.below(200) as i64,
        ..PartitionConfig::default()
    }
}

/// Runs the seeded cases `0..cases` that `select` accepts (a shard's), `steps`
/// steps each; the first disagreement is the error, with the case's seed and step.
pub fn run(
    seed: u64,
    cases: u64,
    steps: usize,
    select: impl Fn(u64) -> bool,
) -> Result<ManagerStats, String> {
    let mut stats = ManagerStats::default();
    for case in (0..cases).filter(|&case| select(case)) {
        let case_seed = super::case_seed(seed ^ 0x4d41_4e41_4745_5200, case);
        run_case(case_seed, steps, &mut stats)
            .map_err(|e| format!("manager case seed {case_seed}: {e}"))?;
        stats.cases += 1;
    }
    Ok(stats)
}

fn run_case(seed: u64, steps: usize, stats: &mut ManagerStats) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let fs = Arc::new(SimFs::new());
    let clock = Arc::new(ManualClock::new(100));
    let manager = LogManager::new(
        Arc::clone(&fs) as Arc<dyn FileSystem>,
        "/root",
        ManagerConfig::default(),
        Arc::clone(&clock) as Arc<dyn Clock>,
    )
    .map_err(|e| format!("manager: {e}"))?;
    let mut partitions: Vec<(Partition, SpecLog)> = Vec::new();
    let mut uncleanable = vec![false; PARTITIONS];
    for p in 0..PARTITIONS {
        let config = partition_config(&mut rng);
        let spec_log = SpecLog::new(config.log.segment_bytes);
        let partition = manager
            .create("t", p as u32, config)
            .map_err(|e| format!("create: {e}"))?;
        partitions.push((partition, spec_log));
    }
    for step in 0..steps {
        let at = |e: String| format!("step {step}: {e}");
        match rng.below(10) {
            0..=5 => {
                let (partition, spec_log) = &mut partitions[rng.below(PARTITIONS as u64) as usize];
                let now = clock.now_ms();
                let records: Vec<RecordSpec> = (0..1 + rng.below(3))
                    .map(|_| RecordSpec {
                        key: (!rng.chance(10)).then(|| format!("k{}", rng.below(6))),
                        value: (!rng.chance(15)).then(|| format!("v{}", rng.below(100))),
                        ts: now.saturating_sub(rng.below(40) as i64).max(0),
                    })
                    .collect();
                let op = Op::Append {
                    records,
                    codec: None,
                    log_append_time: None,
                };
                apply(partition, spec_log, &op).map_err(at)?;
            }
            6 => {
                let (partition, spec_log) = &mut partitions[rng.below(PARTITIONS as u64) as usize];
                apply(partition, spec_log, &Op::Roll).map_err(at)?;
            }
            7 => {
                clock.set_ms(clock.now_ms() + 1 + rng.below(40) as i64);
            }
            _ => {
                round(
                    &manager,
                    &mut partitions,
                    &mut uncleanable,
                    clock.now_ms(),
                    stats,
                )
                .map_err(at)?;
            }
        }
    }
    manager.close().map_err(|e| format!("close: {e}"))
}

/// `op` on the partition's log and on its spec: the same outcome, the same log.
fn apply(partition: &Partition, spec_log: &mut SpecLog, op: &Op) -> Result<(), String> {
    let engine = partition
        .with_log_mut(|log| crate::workload::engine::apply(log, op))
        .map_err(|e| format!("{op}: engine error {e}"))?;
    let expected = spec::apply(spec_log, op);
    if engine != expected {
        return Err(format!("{op}: engine {engine:?} spec {expected:?}"));
    }
    partition
        .with_log(|log| compare(log, spec_log))
        .map(|_| ())
        .map_err(|e| format!("after {op}: {e}"))
}

/// One cleaner round against the spec's choice and pass.
fn round(
    manager: &LogManager,
    partitions: &mut [(Partition, SpecLog)],
    uncleanable: &mut [bool],
    now: i64,
    stats: &mut ManagerStats,
) -> Result<(), String> {
    // The spec's choice: the dirtiest partition that should be cleaned at its own
    // threshold; ties go to the first name.
    let mut chosen: Option<(usize, f64)> = None;
    for (i, (partition, spec_log)) in partitions.iter().enumerate() {
        if uncleanable[i] {
            continue;
        }
        let log = &partition.config().log;
        let cleanable = spec_log.cleanable(now, log.min_compaction_lag_ms);
        if !cleanable.should_clean(log.min_cleanable_dirty_ratio) {
            continue;
        }
        if chosen.is_none_or(|(_, best)| cleanable.dirty_ratio > best) {
            chosen = Some((i, cleanable.dirty_ratio));
        }
    }
    let cleaned = manager
        .run_cleaner_once()
        .map_err(|e| format!("cleaner round at {now}: {e}"))?;
    stats.rounds += 1;
    let engine_choice = cleaned.as_ref().map(|c| c.partition.clone());
    let spec_choice = chosen.map(|(i, _)| partitions[i].0.name().to_string());
    if engine_choice != spec_choice {
        let ratios: Vec<String> = partitions
            .iter()
            .map(|(p, s)| {
                let log = &p.config().log;
                let c = s.cleanable(now, log.min_compaction_lag_ms);
                format!(
                    "{} ratio {} (threshold {}, should clean {})",
                    p.name(),
                    c.dirty_ratio,
                    log.min_cleanable_dirty_ratio,
                    c.should_clean(log.min_cleanable_dirty_ratio)
                )
            })
            .collect();
        return Err(format!(
            "cleaner round at {now} cleaned {engine_choice:?}, the spec chooses {spec_choice:?}: {}",
            ratios.join("; ")
        ));
    }
    let Some((i, _)) = chosen else {
        return Ok(());
    };
    stats.cleaned += 1;
    let (partition, spec_log) = &mut partitions[i];
    let config = partition.config();
    let op = Op::Clean {
        now,
        delete_retention_ms: config.delete_retention_ms,
        segment_bytes: None,
        dedupe_buffer_bytes: config.log.dedupe_buffer_bytes,
        min_compaction_lag_ms: config.log.min_compaction_lag_ms,
        policy: config.log.compaction_policy,
        producer_id_expiration_ms: config.log.producer_id_expiration_ms,
    };
    let refused = spec::apply(spec_log, &op) == OpOutcome::Rejected;
    let outcome = cleaned.map(|c| c.outcome);
    match (&outcome, refused) {
        (Some(CleanOutcome::Uncleanable { .. }), true) => {
            uncleanable[i] = true;
            stats.uncleanable += 1;
            if !manager
                .uncleanable_partitions()
                .contains_key(partition.name())
            {
                return Err(format!("{} is not listed uncleanable", partition.name()));
            }
        }
        (Some(CleanOutcome::Cleaned(_) | CleanOutcome::NothingToClean), false) => {}
        (outcome, refused) => {
            return Err(format!(
                "cleaner round at {now} on {}: outcome {outcome:?}, the spec {} the pass {op}",
                partition.name(),
                if refused { "refuses" } else { "runs" }
            ))
        }
    }
    for (partition, spec_log) in partitions.iter() {
        partition
            .with_log(|log| compare(log, spec_log))
            .map_err(|e| {
                format!(
                    "after the cleaner round at {now} ({op}): {}: {e}",
                    partition.name()
                )
            })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manager_cases_agree_with_the_spec() {
        let stats = run(7, 8, 60, |_| true).unwrap();
        assert_eq!(stats.cases, 8);
        assert!(stats.cleaned > 8, "{stats:?}");
        assert!(
            stats.rounds > stats.cleaned,
            "rounds with nothing to clean: {stats:?}"
        );
    }
}

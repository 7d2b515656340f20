//! Conformance: the engine against the reference spec, in lockstep.
//!
//! A case is a list of [`Step`]s (workload [`Op`]s, clock moves, crashes and clean
//! reopens). [`run_case`] runs it on the real engine (on [`SimFs`] or on the real disk
//! under a temporary directory) and on `seglog_model::spec::SpecLog` side by side.
//!
//! Invariants checked after every step:
//! * both sides return the same outcome (offsets assigned, segments deleted,
//!   compaction report, records read, or both reject the operation);
//! * the engine's log, decoded batch by batch, *is* the spec's log: same
//!   `log_start_offset`, `next_offset`, segment bases, batches, offsets, keys, values,
//!   timestamps and control flags; and the engine's segment metadata (bytes, records,
//!   max timestamp, closed) equals the spec's;
//! * a read from every position (`log_start_offset - 1 ..= next_offset + 1`) returns
//!   the same records or is rejected on both sides, unbounded and with a small
//!   `max_bytes`; so do `read_raw` and every `fetch` of a fetch walk, at batch level
//!   (which batches, their last offsets, and `Fetch::next_offset`); and on a log
//!   holding transactional batches `read_committed` from every position, unbounded
//!   and with small byte bounds, and the `read_committed` fetch with its aborted
//!   transactions;
//! * `seglog_model::invariants::check_step` holds between the engine's states before
//!   and after each mutation;
//! * after `CrashReopen` on SimFs (one of the disk images a process crash or a power
//!   loss may leave): recovery succeeds and the engine equals the spec as of some point
//!   between the last durability point and the current state, never less; the spec is
//!   reset to that point and the run goes on. On the real disk a crash is dropping the
//!   `Log` without closing it: nothing may change.
//!
//! A [`Step::Foreign`] writes a batch as another Kafka-format writer would (possibly
//! ending in a compaction gap) into the active segment and reopens.
//!
//! [`run_random`] draws seeded cases from [`steps_strategy`] (the same generator the
//! proptest test uses), runs each on both back ends, and shrinks a failure by deleting
//! steps greedily. [`Divergence::to_scenario`] turns a failure into a crash-scenario
//! file that `seglog replay` runs.
//!
//! [`SimFs`]: seglog::fs::sim::SimFs

mod batch_reads;
mod committed;
pub mod compactor;
mod compare;
mod edges;
pub mod faults;
mod foreign;
mod generate;
pub mod manager;
pub mod regressions;
mod runner;
mod scenario;

use std::time::Instant;

use serde::Serialize;

use crate::workload::Op;
use seglog::fs::sim::FaultKind;
use seglog::log::LogConfig;

pub use foreign::ForeignBatch;
pub use generate::{case_steps, steps_strategy};
pub use runner::run_case;

/// The log configuration every conformance case runs with: segments of a few
/// batches, so appends auto-roll and compaction groups segments.
pub fn case_config() -> LogConfig {
    LogConfig {
        segment_bytes: 256,
        index_interval_bytes: 64,
        ..LogConfig::default()
    }
}

/// The configuration of the case `steps`: [`case_config`], LogAppendTime when
/// the case holds a [`Step::LogAppendTime`].
pub fn case_config_for(steps: &[Step]) -> LogConfig {
    let mut config = case_config();
    if is_log_append_time(steps) {
        config.timestamp_type = seglog::format::TimestampType::LogAppendTime;
    }
    config
}

/// True if the case's log is LogAppendTime ([`Step::LogAppendTime`]).
pub fn is_log_append_time(steps: &[Step]) -> bool {
    steps.contains(&Step::LogAppendTime)
}

/// The case's clock when it starts; [`Step::AdvanceClock`] moves it.
pub const CASE_CLOCK_START: i64 = 100;

/// Disk images enumerated per crash on SimFs (the process image comes first).
pub const CRASH_IMAGES_MAX: usize = 32;

/// How many random cases to run, and how.
#[derive(Debug, Clone)]
pub struct ConformanceOptions {
    pub cases: u64,
    /// Steps drawn per case (at most).
    pub ops_per_case: usize,
    pub seed: u64,
    /// The protocol variant the engine runs (`manifest` is the real one).
    pub variant: String,
    /// Threads the cases run on (the report is the same for any number:
    /// `crate::jobs`).
    pub jobs: usize,
}

impl Default for ConformanceOptions {
    fn default() -> Self {
        ConformanceOptions {
            cases: 64,
            ops_per_case: 40,
            seed: 0,
            variant: "manifest".into(),
            jobs: crate::jobs::default_jobs(),
        }
    }
}

/// One step of a case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// A workload operation, applied to the engine and to the spec.
    Op(Op),
    /// Moves the case's clock: the `now` of later retain/compact operations, and the
    /// stamp of a LogAppendTime log ([`Step::LogAppendTime`]).
    AdvanceClock(i64),
    /// Crash (no close, no flush) and reopen. On SimFs the disk image is number
    /// `image % len` of the process image followed by the power-loss images.
    CrashReopen { image: u32 },
    /// Close (which flushes) and reopen.
    Reopen,
    /// On SimFs: the next mutating file-system call fails with `kind` (the real disk
    /// ignores it). The next operation that does IO must return the error and poison
    /// the log; the log is reopened and must equal the spec at a state between the
    /// last durability point and the operation done. A (crash) reopen first disarms
    /// a fault no operation reached. Generated by [`faults::with_faults`] only.
    FailNext { kind: FaultKind },
    /// Close, append a batch as another Kafka-format writer would (possibly ending
    /// in a compaction gap) to the active segment, sync it, and reopen.
    Foreign(ForeignBatch),
    /// The case's log is LogAppendTime (`LogConfig::timestamp_type`), wherever this
    /// step stands (the generator puts it first): the engine's log stamps every data
    /// batch `Log::append`, `Log::append_batches` and `Log::append_transactional`
    /// take with its clock (the case's: [`CASE_CLOCK_START`] moved by every
    /// [`Step::AdvanceClock`]), and the spec stamps the same
    /// (`workload::spec::apply_stamped`). Changes nothing itself.
    LogAppendTime,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Op(op) => write!(f, "{op}"),
            Step::AdvanceClock(ms) => write!(f, "advance_clock {ms}"),
            Step::CrashReopen { image } => write!(f, "crash_reopen image {image}"),
            Step::Reopen => f.write_str("reopen"),
            Step::FailNext { kind } => write!(f, "fail_next {kind}"),
            Step::Foreign(batch) => write!(f, "{batch}"),
            Step::LogAppendTime => f.write_str("log_append_time"),
        }
    }
}

/// Where the engine keeps its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// The simulated file system, with power-loss crash images.
    Sim,
    /// The real disk, in a temporary directory.
    Disk,
}

/// What one passing case did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CaseStats {
    pub steps: u64,
    pub crashes: u64,
    /// Crashes after which the engine recovered to less than the state before the
    /// crash (power loss took unflushed appends): the allowed range was exercised.
    pub crashes_lost_tail: u64,
    /// Reads compared (one per read position per step, and `Read` operations).
    pub reads: u64,
    /// Operations that failed with an injected IO error (`Step::FailNext`).
    pub io_errors: u64,
    /// Dirty-ratio decisions compared before a compacting operation.
    pub cleanable_checks: u64,
    /// Second writable opens refused by the writer lock (after every reopen).
    pub second_opens_refused: u64,
}

/// A case on which the engine and the spec disagree, shrunk.
#[derive(Debug, Clone, Serialize)]
pub struct Divergence {
    /// The seed that generated the original case (replays with `case_steps`).
    pub seed: u64,
    pub backend: Backend,
    /// The shrunk steps, ending with the failing one.
    pub steps: Vec<Step>,
    /// Index in `steps` of the failing step.
    pub step: usize,
    pub detail: String,
    /// On SimFs, when the failing step is a crash: the lost items of the chosen image
    /// (empty for the process image).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crash_lost: Option<Vec<String>>,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.seed != 0 {
            write!(f, "seed {} ", self.seed)?;
        }
        writeln!(
            f,
            "on {:?}: step {} diverged: {}",
            self.backend, self.step, self.detail
        )?;
        if let Some(lost) = &self.crash_lost {
            writeln!(f, "  the crash image lost: [{}]", lost.join("; "))?;
        }
        for (i, step) in self.steps.iter().enumerate() {
            let mark = if i == self.step { ">" } else { " " };
            writeln!(f, "{mark} {i:3} {step}")?;
        }
        Ok(())
    }
}

/// The totals of a random run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConformanceReport {
    pub cases: u64,
    pub steps: u64,
    pub crashes: u64,
    pub seconds: f64,
    pub failures: Vec<Divergence>,
    /// Crashes that lost an unflushed tail and recovered to an earlier allowed state.
    pub crashes_lost_tail: u64,
    pub reads: u64,
    pub sim_seconds: f64,
    pub disk_seconds: f64,
    /// Dirty-ratio decisions (`Log::cleanable_at` against the spec's `cleanable`,
    /// and the trigger at several thresholds) compared before compacting operations.
    pub cleanable_checks: u64,
    /// Second writable opens of an open log, refused by the writer lock.
    pub second_opens_refused: u64,
}

/// The seed of case `case` of a run seeded with `seed` (SplitMix64 of both).
pub fn case_seed(seed: u64, case: u64) -> u64 {
    let mut z = seed ^ case.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Runs `options.cases` seeded cases on both back ends; deterministic for a given
/// seed. Stops at the first divergence, which it shrinks. `progress` gets the
/// number of cases done.
pub fn run_random(options: &ConformanceOptions, progress: impl FnMut(u64)) -> ConformanceReport {
    run_random_selected(options, &|_| true, progress)
}

/// [`run_random`] over the case numbers (`0..options.cases`) that `select` accepts:
/// a shard of the run (`seglog verify --shard K/N`). Case `i` is the same case in
/// every selection (its seed is [`case_seed`]`(seed, i)`).
pub fn run_random_selected(
    options: &ConformanceOptions,
    select: &dyn Fn(u64) -> bool,
    mut progress: impl FnMut(u64),
) -> ConformanceReport {
    let started = Instant::now();
    let cases: Vec<u64> = (0..options.cases).filter(|c| select(*c)).collect();
    // Each case on both back ends, on `jobs` threads; a sequential run stops at the
    // first divergence, and so does this one (`jobs::map_until`).
    let outcomes = crate::jobs::map_until(
        &cases,
        options.jobs,
        |_, case| {
            let steps = case_steps(case_seed(options.seed, *case), options.ops_per_case);
            let mut outcome = CaseOutcome::default();
            for backend in [Backend::Sim, Backend::Disk] {
                let backend_started = Instant::now();
                let result = run_case(&steps, backend, &options.variant);
                let elapsed = backend_started.elapsed().as_secs_f64();
                match backend {
                    Backend::Sim => outcome.sim_seconds += elapsed,
                    Backend::Disk => outcome.disk_seconds += elapsed,
                }
                match result {
                    Ok(stats) => outcome.stats.push(stats),
                    Err(divergence) => {
                        outcome.divergence = Some((backend, divergence));
                        break;
                    }
                }
            }
            outcome
        },
        |outcome| outcome.divergence.is_some(),
        |done, _| progress(done as u64),
    );
    let mut report = ConformanceReport::default();
    for (case, outcome) in cases.iter().zip(outcomes) {
        report.cases += 1;
        report.sim_seconds += outcome.sim_seconds;
        report.disk_seconds += outcome.disk_seconds;
        for stats in &outcome.stats {
            report.steps += stats.steps;
            report.crashes += stats.crashes;
            report.crashes_lost_tail += stats.crashes_lost_tail;
            report.reads += stats.reads;
            report.cleanable_checks += stats.cleanable_checks;
            report.second_opens_refused += stats.second_opens_refused;
        }
        if let Some((backend, divergence)) = outcome.divergence {
            let divergence = shrink(divergence, |steps| {
                run_case(steps, backend, &options.variant).err()
            });
            let seed = case_seed(options.seed, *case);
            report.failures.push(Divergence { seed, ..divergence });
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    report
}

/// One case of a random run: the stats of each back end that passed, and the
/// divergence of the one that failed.
#[derive(Default)]
struct CaseOutcome {
    stats: Vec<CaseStats>,
    divergence: Option<(Backend, Divergence)>,
    sim_seconds: f64,
    disk_seconds: f64,
}

/// Shrinks a failing case by deleting steps greedily (one at a time, last first,
/// until no single deletion still fails). `run` returns the divergence of a
/// candidate, or `None` if it passes.
pub fn shrink(
    mut failing: Divergence,
    mut run: impl FnMut(&[Step]) -> Option<Divergence>,
) -> Divergence {
    failing.steps.truncate(failing.step + 1);
    loop {
        let mut smaller = None;
        for i in (0..failing.steps.len()).rev() {
            let mut candidate = failing.steps.clone();
            candidate.remove(i);
            if let Some(mut found) = run(&candidate) {
                found.steps.truncate(found.step + 1);
                smaller = Some(found);
                break;
            }
        }
        match smaller {
            Some(found) => {
                assert!(found.steps.len() < failing.steps.len());
                failing = Divergence {
                    seed: failing.seed,
                    ..found
                };
            }
            None => return failing,
        }
    }
}

#[cfg(test)]
mod tests;

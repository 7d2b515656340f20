//! [`run_case`]: one case on the engine and the spec in lockstep.

use std::path::PathBuf;
use std::sync::Arc;

use seglog_model::invariants::{check_step, Grace, StepKind};
use seglog_model::spec::SpecLog;

use crate::sweep::oracle::ImageFacts;
use crate::sweep::LOG_DIR;
use crate::workload::engine::{self, Variant};
use crate::workload::{spec, Op, OpOutcome};
use seglog::clock::{Clock, ManualClock};
use seglog::fs::sim::{CrashImage, CrashMode, LostItem, SimFs};
use seglog::fs::{FileSystem, StdFs};
use seglog::log::{Log, LogConfig};

mod io_error;

use super::compare::{compare, engine_spec, structure_diff};
use super::{
    case_config_for, Backend, CaseStats, Divergence, Step, CASE_CLOCK_START, CRASH_IMAGES_MAX,
};

/// The engine side: the log and where its files live.
struct Engine {
    backend: Backend,
    config: LogConfig,
    dir: PathBuf,
    /// The current simulated disk (replaced by the chosen image after a crash).
    sim: Option<Arc<SimFs>>,
    /// Keeps the real-disk directory alive for the case.
    _tempdir: Option<tempfile::TempDir>,
    log: Option<Log>,
    /// The case's clock, which every open of the log reads its LogAppendTime
    /// stamps from.
    clock: Arc<ManualClock>,
}

impl Engine {
    fn start(backend: Backend, config: LogConfig) -> Result<Engine, String> {
        let mut engine = match backend {
            Backend::Sim => Engine {
                backend,
                config,
                dir: PathBuf::from(LOG_DIR),
                sim: Some(Arc::new(SimFs::new())),
                _tempdir: None,
                log: None,
                clock: Arc::new(ManualClock::new(CASE_CLOCK_START)),
            },
            Backend::Disk => {
                let tempdir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
                Engine {
                    backend,
                    config,
                    dir: tempdir.path().join("log"),
                    sim: None,
                    _tempdir: Some(tempdir),
                    log: None,
                    clock: Arc::new(ManualClock::new(CASE_CLOCK_START)),
                }
            }
        };
        engine.open()?;
        Ok(engine)
    }

    /// Opens the log (running recovery) on the current disk.
    fn open(&mut self) -> Result<(), String> {
        let fs: Arc<dyn FileSystem> = match &self.sim {
            Some(sim) => sim.clone(),
            // A fresh handle cache, as a new process would have.
            None => Arc::new(StdFs::new()),
        };
        let (mut log, _report) = Log::open_with(fs, &self.dir, self.config.clone())
            .map_err(|e| format!("open failed: {e}"))?;
        log.set_clock(self.clock.clone());
        self.log = Some(log);
        Ok(())
    }

    /// A second writable open of the directory while the log is open: refused
    /// with `Error::Locked` (the writer lock), on a file-system handle of its own
    /// as another process would have on the real disk. `Err` says what happened
    /// instead.
    fn second_open_refused(&self) -> Result<(), String> {
        let fs: Arc<dyn FileSystem> = match &self.sim {
            Some(sim) => sim.clone(),
            None => Arc::new(StdFs::new()),
        };
        match Log::open_with(fs, &self.dir, self.config.clone()) {
            Err(seglog::error::Error::Locked { .. }) => Ok(()),
            Ok(_) => Err("a second writable open of the log succeeded while it is open: the writer lock held nothing".to_string()),
            Err(e) => Err(format!("a second writable open failed with {e}, not with the writer lock's refusal")),
        }
    }

    /// Faults of `SimFs::fail_nth_with` that fired so far (0 on the real disk).
    fn faults_fired(&self) -> usize {
        self.sim.as_ref().map_or(0, |sim| sim.fired_faults().len())
    }

    /// The stamp a LogAppendTime log gives an append now (`None`: CreateTime).
    fn log_append_time(&self) -> Option<i64> {
        (self.config.timestamp_type == seglog::format::TimestampType::LogAppendTime)
            .then(|| self.clock.now_ms())
    }

    fn log(&mut self) -> &mut Log {
        self.log
            .as_mut()
            .expect("the engine's log is open between steps")
    }

    /// Drops the log without closing it (no flush; `Log` has no `Drop` that writes).
    /// On SimFs, replaces the disk by image `image % len` of the process image
    /// followed by the power-loss images; returns that image's lost items and whether
    /// it is the process image.
    fn crash(&mut self, image: u32) -> (Vec<LostItem>, bool) {
        drop(self.log.take());
        let Some(sim) = &self.sim else {
            return (Vec::new(), true);
        };
        let mut images = crash_images(sim);
        let index = image as usize % images.len();
        let chosen = images.swap_remove(index);
        let process = index == 0;
        self.sim = Some(Arc::new(chosen.fs));
        (chosen.lost, process)
    }
}

/// The images a crash at this point may leave: the process image first, then up to
/// [`CRASH_IMAGES_MAX`] - 1 power-loss images (the first of which keeps everything).
pub(super) fn crash_images(fs: &SimFs) -> Vec<CrashImage> {
    let mut images = fs.crash_images(CrashMode::Process, 1);
    images.extend(fs.crash_images(CrashMode::PowerLoss, CRASH_IMAGES_MAX - 1));
    images
}

/// Spec states a crash now may recover to: from the last durability point (first)
/// to the current state (last).
pub(super) struct Durable {
    pub(super) states: Vec<SpecLog>,
}

impl Durable {
    pub(super) fn new(state: &SpecLog) -> Durable {
        Durable {
            states: vec![state.clone()],
        }
    }

    /// Everything up to `state` is durable.
    fn reset(&mut self, state: &SpecLog) {
        self.states = vec![state.clone()];
    }

    /// Records the state after a mutation that succeeded on both sides, on a log
    /// stamping LogAppendTime at `log_append_time` when given.
    pub(super) fn after(
        &mut self,
        op: &Op,
        before: &SpecLog,
        after: &SpecLog,
        log_append_time: Option<i64>,
    ) {
        if op.is_durability_point() {
            self.reset(after);
        } else if op.is_append() {
            // Each batch's auto-roll made everything before it durable.
            crate::workload::spec::extend_chain_stamped(
                &mut self.states,
                before,
                op,
                after,
                log_append_time,
            );
        } else {
            self.states.push(after.clone());
        }
    }
}

fn step_kind(op: &Op) -> StepKind {
    match op {
        Op::Retain { .. } => StepKind::Retain,
        Op::Compact {
            now,
            delete_retention_ms,
            ..
        }
        | Op::CompactClosed {
            now,
            delete_retention_ms,
            ..
        } => StepKind::Compact(Grace {
            now: *now,
            delete_retention_ms: *delete_retention_ms,
        }),
        Op::Clean {
            now,
            delete_retention_ms,
            policy: seglog::compaction::CompactionPolicy::Kafka,
            ..
        } => StepKind::KafkaClean(Grace {
            now: *now,
            delete_retention_ms: *delete_retention_ms,
        }),
        Op::Clean {
            now,
            delete_retention_ms,
            ..
        } => StepKind::Clean(Grace {
            now: *now,
            delete_retention_ms: *delete_retention_ms,
        }),
        Op::Roll => StepKind::Roll,
        _ => StepKind::Append,
    }
}

/// The clock and min lag of a compacting operation: what its pass and its
/// `--if-dirty` decision run with.
fn cleaning(op: &Op, config: &LogConfig) -> Option<(i64, i64)> {
    match op {
        Op::Compact { now, .. }
        | Op::CompactClosed { now, .. }
        | Op::CleanWithAppends { now, .. } => Some((*now, config.min_compaction_lag_ms)),
        Op::Clean {
            now,
            min_compaction_lag_ms,
            ..
        } => Some((*now, *min_compaction_lag_ms)),
        _ => None,
    }
}

/// The dirty-ratio decision before a compacting operation: the engine's
/// `Log::cleanable_at` equals the spec's `cleanable` (clean point, first
/// uncleanable offset, clean and cleanable bytes, ratio), and so does the
/// trigger (`should_clean`) at the log's `min_cleanable_dirty_ratio` and at
/// ratios around the one found.
fn compare_cleanable(log: &Log, spec: &SpecLog, now: i64, lag: i64) -> Result<(), String> {
    let engine = log
        .cleanable_at(now, lag)
        .map_err(|e| format!("cleanable failed: {e}"))?;
    let expected = spec.cleanable(now, lag);
    let same = engine.clean_point == expected.clean_point
        && engine.first_uncleanable_offset == expected.first_uncleanable_offset
        && engine.clean_bytes == expected.clean_bytes
        && engine.cleanable_bytes == expected.cleanable_bytes
        && engine.dirty_ratio.to_bits() == expected.dirty_ratio.to_bits();
    if !same {
        return Err(format!(
            "cleanable at now {now}, lag {lag}: engine {engine:?} spec {expected:?}"
        ));
    }
    let ratio = expected.dirty_ratio;
    for threshold in [
        log.config().min_cleanable_dirty_ratio,
        0.0,
        ratio,
        (ratio - 0.01).max(0.0),
        1.0,
    ] {
        if engine.should_clean(threshold) != expected.should_clean(threshold) {
            return Err(format!(
                "should_clean({threshold}) at now {now}, lag {lag}: engine {} spec {} ({expected:?})",
                engine.should_clean(threshold),
                expected.should_clean(threshold)
            ));
        }
    }
    Ok(())
}

fn invariants(before: &SpecLog, after: &SpecLog, kind: StepKind) -> Result<(), String> {
    let violations = check_step(before, after, kind);
    if violations.is_empty() {
        return Ok(());
    }
    Err(format!(
        "invariants broken: {}",
        violations
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    ))
}

/// Runs `steps` on the engine (on `backend`, running protocol `variant`) and on the
/// spec in lockstep, checking everything listed in the module docs after each step.
pub fn run_case(steps: &[Step], backend: Backend, variant: &str) -> Result<CaseStats, Divergence> {
    let fail = |step: usize, detail: String, crash_lost: Option<Vec<String>>| Divergence {
        seed: 0,
        backend,
        steps: steps.to_vec(),
        step,
        detail,
        crash_lost,
    };
    let variant_parsed = Variant::parse(variant).map_err(|e| fail(0, e, None))?;
    let config = case_config_for(steps);
    let mut engine = Engine::start(backend, config.clone()).map_err(|e| fail(0, e, None))?;
    let mut spec_log = SpecLog::new(config.segment_bytes);
    let mut durable = Durable::new(&spec_log);
    let mut stats = CaseStats::default();
    stats.reads += compare(engine.log(), &spec_log).map_err(|e| fail(0, e, None))?;
    for (i, step) in steps.iter().enumerate() {
        // The configuration step runs nothing.
        stats.steps += u64::from(*step != Step::LogAppendTime);
        match step {
            Step::Op(op) => {
                let before = spec_log.clone();
                let stamp = engine.log_append_time();
                if let Some((now, lag)) = cleaning(op, &config) {
                    compare_cleanable(engine.log(), &spec_log, now, lag)
                        .map_err(|e| fail(i, e, None))?;
                    stats.cleanable_checks += 1;
                }
                let fired = engine.faults_fired();
                let engine_outcome = match engine::apply_with(engine.log(), op, variant_parsed) {
                    Ok(outcome) => outcome,
                    Err(e) if engine.faults_fired() > fired => {
                        stats.io_errors += 1;
                        stats.reads += io_error::recover(
                            &mut engine,
                            op,
                            stamp,
                            &mut spec_log,
                            &mut durable,
                            &e,
                        )
                        .map_err(|d| fail(i, d, None))?;
                        continue;
                    }
                    Err(e) => return Err(fail(i, format!("engine error: {e}"), None)),
                };
                if engine.faults_fired() > fired {
                    return Err(fail(
                        i,
                        format!("returned Ok ({engine_outcome:?}) although a file-system call it made failed"),
                        None,
                    ));
                }
                let spec_outcome = spec::apply_stamped(&mut spec_log, op, stamp);
                if engine_outcome != spec_outcome {
                    return Err(fail(
                        i,
                        format!("outcome: engine {engine_outcome:?} spec {spec_outcome:?}"),
                        None,
                    ));
                }
                if op.is_mutation() && spec_outcome != OpOutcome::Rejected {
                    durable.after(op, &before, &spec_log, stamp);
                    // The engine equals the spec (compared below), so these are the
                    // engine's states too.
                    invariants(&before, &spec_log, step_kind(op)).map_err(|e| fail(i, e, None))?;
                }
                if op.is_mutation() {
                    stats.reads +=
                        compare(engine.log(), &spec_log).map_err(|e| fail(i, e, None))?;
                } else {
                    stats.reads += 1;
                }
            }
            Step::AdvanceClock(ms) => {
                engine.clock.advance_ms(*ms);
            }
            Step::LogAppendTime => {}
            Step::FailNext { kind } => io_error::arm(&engine, *kind),
            Step::Reopen => {
                io_error::disarm(&engine);
                let log = engine.log.take().expect("open between steps");
                log.close()
                    .map_err(|e| fail(i, format!("close failed: {e}"), None))?;
                engine.open().map_err(|e| fail(i, e, None))?;
                engine.second_open_refused().map_err(|e| fail(i, e, None))?;
                stats.second_opens_refused += 1;
                durable.reset(&spec_log);
                stats.reads += compare(engine.log(), &spec_log).map_err(|e| fail(i, e, None))?;
            }
            Step::Foreign(batch) => {
                // Another writer's batch is set-up, not an operation under test: a
                // fault no operation reached does not hit it.
                io_error::disarm(&engine);
                let log = engine.log.take().expect("open between steps");
                super::foreign::write(log, batch, &mut spec_log).map_err(|e| fail(i, e, None))?;
                engine.open().map_err(|e| fail(i, e, None))?;
                durable.reset(&spec_log);
                stats.reads += compare(engine.log(), &spec_log).map_err(|e| fail(i, e, None))?;
            }
            Step::CrashReopen { image } => {
                io_error::disarm(&engine);
                stats.crashes += 1;
                let (lost_items, process) = engine.crash(*image);
                let lost: Vec<String> = lost_items.iter().map(ToString::to_string).collect();
                let lost_for = |detail: String| fail(i, detail, Some(lost.clone()));
                // Exact: the latest allowed state whose segment files the image holds
                // whole is the one recovery must reach (`sweep::oracle`); on the real
                // disk (a process crash) that is the state before the crash. The
                // oracle judges by length, so an image whose bytes differ from what
                // its length suggests is held to the range only: there the bytes, not
                // the length, decide. A failed writeback turned written pages into
                // zeros (`LostItem::FailedWriteback`), or a lost truncation brought a
                // file's older durable content back (`LostItem::FileRewrite`: recovery
                // cut a torn tail to an empty segment, which needs no fsync, and a later
                // unflushed append was lost with the cut; the torn bytes are as long as
                // the append's batches but hold none of them).
                let zeroed = lost_items.iter().any(|l| {
                    matches!(
                        l,
                        LostItem::FailedWriteback { .. } | LostItem::FileRewrite { .. }
                    )
                });
                let expected = match &engine.sim {
                    Some(_) if zeroed => None,
                    Some(sim) => {
                        let facts = ImageFacts::read(&**sim);
                        Some(durable.states.iter().rposition(|s| facts.holds(s)))
                    }
                    None => Some(Some(durable.states.len() - 1)),
                };
                engine
                    .open()
                    .map_err(|e| lost_for(format!("recovery: {e}")))?;
                engine.second_open_refused().map_err(&lost_for)?;
                stats.second_opens_refused += 1;
                let recovered =
                    engine_spec(engine.log(), config.segment_bytes).map_err(&lost_for)?;
                let Some(m) = durable.states.iter().rposition(|s| *s == recovered) else {
                    let closest = durable
                        .states
                        .iter()
                        .enumerate()
                        .filter_map(|(j, s)| structure_diff(&recovered, s).map(|d| (j, d)))
                        .map(|(j, d)| format!("allowed state {j}: {d}"))
                        .collect::<Vec<_>>();
                    return Err(lost_for(format!(
                        "recovered log is not between the last durability point and the state before the crash ({} allowed states; {})",
                        durable.states.len(),
                        closest.join(" | ")
                    )));
                };
                if let Some(expected) = expected.filter(|e| *e != Some(m)) {
                    return Err(lost_for(format!(
                        "recovered to allowed state {m} of 0..={}, but the image holds every segment file of state {} whole: recovery {}",
                        durable.states.len() - 1,
                        expected.map_or_else(|| "none".to_string(), |e| e.to_string()),
                        if expected.is_some_and(|e| e > m) {
                            "cut batches the image held whole"
                        } else {
                            "kept batches the image did not hold"
                        }
                    )));
                }
                if process && m + 1 != durable.states.len() {
                    // Dropping the log on the real disk, or SimFs's process image.
                    return Err(lost_for(format!(
                        "a process crash lost completed writes ({:?}): recovered to allowed state {m} of 0..={}",
                        engine.backend,
                        durable.states.len() - 1
                    )));
                }
                if m + 1 < durable.states.len() {
                    stats.crashes_lost_tail += 1;
                }
                let floor = durable.states[0].clone();
                spec_log = durable.states[m].clone();
                if process {
                    // Unsynced data stays unsynced: a later power loss may still take it.
                    durable.states.truncate(m + 1);
                } else {
                    // A power-loss image is durable as a whole.
                    durable.reset(&spec_log);
                }
                invariants(&floor, &spec_log, StepKind::Append).map_err(&lost_for)?;
                stats.reads += compare(engine.log(), &spec_log).map_err(&lost_for)?;
            }
        }
    }
    Ok(stats)
}

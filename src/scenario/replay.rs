//! Replaying a scenario on the simulated file system, deterministically.
//!
//! 1. Resolve the crash point to "before mutating file-system operation k" (a fail point
//!    name is mapped by running the workload once with a [`Recorder`]: a coverage mark
//!    that the crash window is really reached).
//! 2. Run the workload on a fresh [`SimFs`] that crashes before operation k.
//! 3. Build the disk image: what a process crash leaves, or the exact power-loss image
//!    the scenario lists; optionally crash again inside recovery.
//! 4. Recover with `Log::open` and compare with the expectation.

use std::sync::Arc;

use serde::Serialize;

use crate::sweep::{self, duplicate, Violation, Workload, LOG_DIR};
use crate::workload::{LogView, RecordView};
use seglog::fs::failpoint::Recorder;
use seglog::fs::sim::{LostItem, SimFs};
use seglog::fs::FileSystem;
use seglog::log::{Log, LogConfig};

use super::format::{CrashSpec, Expectation, ExpectedRecord, Outcome, Scenario, Semantics};

/// The result of replaying one scenario against one variant.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayResult {
    pub name: String,
    pub variant: String,
    pub passed: bool,
    pub expected: Outcome,
    /// What happened: `old`, `new`, `allowed` (another allowed state), `violation`, `error`.
    pub actual: String,
    /// The crash point as a file-system operation index, once resolved.
    pub crash_before_op: Option<u64>,
    /// Index of the interrupted operation (`None`: the initial open, or no crash).
    pub interrupted_op: Option<usize>,
    /// Differences between expectation and result, one per line.
    pub diff: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Scenario {
    /// The workload this scenario runs against `variant`.
    pub fn workload(&self, variant: &str) -> Workload {
        Workload {
            name: self.name.clone(),
            description: self.description.clone(),
            config: LogConfig {
                segment_bytes: self.config.segment_bytes,
                index_interval_bytes: self.config.index_interval_bytes,
                ..LogConfig::default()
            },
            ops: self.ops.clone(),
            variant: variant.to_string(),
        }
    }

    /// The scenario that reproduces a crash-sweep violation found under
    /// `persistence`.
    pub fn from_violation(
        workload: &Workload,
        violation: &Violation,
        persistence: seglog::fs::sim::Persistence,
    ) -> Scenario {
        Scenario {
            name: format!(
                "{}-{}-crash-before-op-{}",
                workload.name, workload.variant, violation.crash_before_op
            ),
            description: format!("found by the crash sweep: {}", violation.detail),
            invariant:
                "recovery ends in an allowed state (old or new, nothing flushed lost, no leftovers)"
                    .into(),
            variant: workload.variant.clone(),
            config: super::ScenarioConfig {
                segment_bytes: workload.config.segment_bytes,
                index_interval_bytes: workload.config.index_interval_bytes,
            },
            ops: workload.ops.clone(),
            crash: Some(CrashSpec {
                failpoint: None,
                hit: None,
                before_fs_op: Some(violation.crash_before_op),
                semantics: if violation.mode == "power_loss" {
                    Semantics::PowerLoss
                } else {
                    Semantics::Process
                },
                persistence,
                lost: violation.lost.clone(),
                recovery_crash_before_op: violation.recovery_crash_before_op,
                recovery_lost: violation.recovery_lost.clone(),
            }),
            expect: Expectation {
                outcome: Outcome::Allowed,
                log_start_offset: None,
                next_offset: None,
                records: None,
                variants: Default::default(),
            },
        }
    }
}

/// Resolves the crash point to "before mutating file-system operation k".
pub(super) fn resolve_crash_point(crash: &CrashSpec, workload: &Workload) -> Result<u64, String> {
    if let Some(k) = crash.before_fs_op {
        return Ok(k);
    }
    let name = crash.failpoint.as_deref().unwrap_or_default();
    if !seglog::fs::failpoint::ALL.contains(&name) {
        return Err(format!(
            "unknown fail point {name:?} (see `seglog failpoints`)"
        ));
    }
    let hit = crash.hit.unwrap_or(1).max(1) as usize;
    let fs = Arc::new(SimFs::new());
    let probe_fs = Arc::clone(&fs);
    let recorder = Recorder::start_with_probe(move || probe_fs.mutating_ops());
    sweep::run_to_end(workload, &fs)?;
    let hits: Vec<u64> = recorder
        .hits_with_probe()
        .into_iter()
        .filter(|(n, _)| *n == name)
        .map(|(_, k)| k)
        .collect();
    drop(recorder);
    hits.get(hit - 1).copied().ok_or_else(|| {
        format!(
            "crash point never reached: fail point {name} was hit {} time(s), the scenario wants hit {hit}",
            hits.len()
        )
    })
}

pub(super) fn expected_view(expect: &Expectation) -> (i64, i64, Vec<RecordView>) {
    let records = expect
        .records
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|r: &ExpectedRecord| RecordView {
            offset: r.offset,
            key: r.key.as_ref().map(|k| k.as_bytes().to_vec()),
            value: r.value.as_ref().map(|v| v.as_bytes().to_vec()),
            ts: r.ts,
            control: r.control,
        })
        .collect();
    (
        expect.log_start_offset.unwrap_or_default(),
        expect.next_offset.unwrap_or_default(),
        records,
    )
}

/// The disk images the scenario's crash leaves: the one recovery starts from and,
/// when recovery itself crashes, the one after that (else the same).
struct CrashImages {
    /// The image of the workload's crash: its durable state decides the outcome.
    first: SimFs,
    /// The image recovery finally runs on.
    last: SimFs,
}

/// Builds the disk images the scenario's crash leaves; returns them with the
/// interrupted operation and the crash point.
fn crash_image(
    crash: &CrashSpec,
    workload: &Workload,
) -> Result<(CrashImages, Option<usize>, u64), String> {
    let k = resolve_crash_point(crash, workload)?;
    let fs = Arc::new(SimFs::new());
    fs.set_persistence(crash.persistence);
    fs.set_crash_before(k);
    let interrupted = match sweep::run_until_crash(workload, &fs)? {
        Some(interrupted) => interrupted,
        // Crashing right after the last operation: nothing was running.
        None if fs.mutating_ops() == k => Some(workload.ops.len()),
        None => {
            return Err(format!(
                "the workload has only {} file-system operations: no crash before operation {k}",
                fs.mutating_ops()
            ))
        }
    };
    let first = match crash.semantics {
        Semantics::Process => duplicate(&fs),
        Semantics::PowerLoss => power_loss_image(&fs, &crash.lost)?,
    };
    let mut image = duplicate(&first);
    if let Some(rk) = crash.recovery_crash_before_op {
        let nested = Arc::new(image);
        nested.set_crash_before(nested.mutating_ops() + rk);
        let dyn_fs: Arc<dyn FileSystem> = nested.clone();
        if Log::open_with(dyn_fs, LOG_DIR, workload.config.clone()).is_ok() {
            return Err(format!(
                "recovery finished before its operation {rk}: no crash during recovery happened"
            ));
        }
        image = if crash.recovery_lost.is_empty() {
            duplicate(&nested)
        } else {
            power_loss_image(&nested, &crash.recovery_lost)?
        };
    }
    Ok((CrashImages { first, last: image }, interrupted, k))
}

/// The power-loss images possible at the scenario's crash point, each as the `lost`
/// list a scenario file would give (for writing a power-loss scenario by hand).
pub fn crash_point_images(
    scenario: &Scenario,
    variant: &str,
    limit: usize,
) -> Result<Vec<Vec<String>>, String> {
    let crash = scenario.crash.as_ref().ok_or("the scenario has no crash")?;
    let workload = scenario.workload(variant);
    let k = resolve_crash_point(crash, &workload)?;
    let fs = Arc::new(SimFs::new());
    fs.set_persistence(crash.persistence);
    fs.set_crash_before(k);
    sweep::run_until_crash(&workload, &fs)?;
    Ok(fs
        .crash_images(seglog::fs::sim::CrashMode::PowerLoss, limit)
        .into_iter()
        .map(|image| image.lost.iter().map(ToString::to_string).collect())
        .collect())
}

/// The power-loss image of `fs` that lost `lost`. An item the state no longer has
/// pending (the engine made it durable before this point, e.g. after a fix that added
/// a sync) cannot be lost and is skipped: a regression scenario keeps replaying the
/// same crash attempt against the fixed engine.
pub(super) fn power_loss_image(fs: &SimFs, lost: &[String]) -> Result<SimFs, String> {
    let lost = lost
        .iter()
        .map(|s| {
            s.parse::<LostItem>()
                .map_err(|e| format!("lost item {s:?}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let Ok(image) = fs.crash_image_with(&lost) {
        return Ok(image);
    }
    let losable: Vec<LostItem> = lost
        .into_iter()
        .filter(|item| fs.crash_image_with(std::slice::from_ref(item)).is_ok())
        .collect();
    fs.crash_image_with(&losable)
        .map_err(|e| format!("cannot build the power-loss image: {e}"))
}

/// Replays `scenario` against `variant` (default: the scenario's own), expecting what
/// the scenario says for that variant.
///
/// A scenario written for a deliberately broken variant replays against ours (and
/// what it expects there) in builds without the `test-variants` feature, with a note.
pub fn replay(scenario: &Scenario, variant: Option<&str>) -> ReplayResult {
    let own = scenario.variant.as_str();
    let (variant, note) = match variant {
        Some(v) => (v, None),
        None if crate::workload::engine::Variant::parse(own).is_ok() => (own, None),
        None => (
            "manifest",
            Some(format!(
                "variant {own} is not in this build (--features test-variants); replayed against manifest"
            )),
        ),
    };
    let mut result = replay_expecting(scenario, variant, scenario.expected_for(variant));
    result.note = note;
    result
}

/// Replays `scenario` against `variant`, expecting `expected`.
pub fn replay_expecting(scenario: &Scenario, variant: &str, expected: Outcome) -> ReplayResult {
    let mut result = ReplayResult {
        name: scenario.name.clone(),
        variant: variant.to_string(),
        passed: false,
        expected,
        actual: "error".into(),
        crash_before_op: None,
        interrupted_op: None,
        diff: Vec::new(),
        note: None,
    };
    if let Err(e) = crate::workload::engine::Variant::parse(variant) {
        result.diff.push(e);
        return result;
    }
    let workload = scenario.workload(variant);
    let states = sweep::Allowed::states(&workload);
    let (image, allowed, interrupted) = match &scenario.crash {
        Some(crash) => match crash_image(crash, &workload) {
            Ok((images, interrupted, k)) => {
                result.crash_before_op = Some(k);
                // A power-loss image is durable as a whole and decides, also for a
                // crash during its recovery; a process image still holds unsynced state,
                // so the image recovery finally runs on decides.
                let decides = match crash.semantics {
                    Semantics::Process => &images.last,
                    Semantics::PowerLoss => &images.first,
                };
                let exact = states.exact_after_crash(&workload, interrupted, decides);
                (images.last, exact, interrupted)
            }
            Err(e) => {
                result.diff.push(e);
                return result;
            }
        },
        None => {
            let fs = Arc::new(SimFs::new());
            if let Err(e) = sweep::run_to_end(&workload, &fs) {
                result.diff.push(e);
                return result;
            }
            let exact = states.exactly(workload.ops.len());
            (duplicate(&fs), exact, Some(workload.ops.len()))
        }
    };
    result.interrupted_op = interrupted;
    let checked = sweep::check_image(&workload, &allowed, &image);
    let old = states.old_view(interrupted);
    let new = states.new_view(interrupted);
    result.actual = match &checked {
        Ok(view) if Some(view) == new.as_ref() => "new",
        Ok(view) if *view == old => "old",
        Ok(_) => "allowed",
        Err(_) => "violation",
    }
    .to_string();
    result.passed = match expected {
        Outcome::Old => result.actual == "old",
        Outcome::New => result.actual == "new",
        Outcome::Allowed => checked.is_ok(),
        Outcome::Violation => checked.is_err(),
        Outcome::Exact => checked.as_ref().is_ok_and(|v| {
            (v.log_start_offset, v.next_offset, v.records.clone())
                == expected_view(&scenario.expect)
        }),
    };
    if !result.passed {
        result.diff = explain(
            &checked,
            expected,
            &old,
            new.as_ref(),
            &scenario.expect,
            variant,
        );
    }
    result
}

fn explain(
    checked: &Result<LogView, String>,
    expected: Outcome,
    old: &LogView,
    new: Option<&LogView>,
    expect: &Expectation,
    variant: &str,
) -> Vec<String> {
    match (checked, expected) {
        (Err(detail), _) => vec![detail.clone()],
        (Ok(_), Outcome::Violation) => vec![format!(
            "expected a violation against variant {variant}, but recovery produced an allowed state"
        )],
        (Ok(v), Outcome::Old) => old
            .diff(v)
            .into_iter()
            .map(|d| format!("old vs recovered: {d}"))
            .collect(),
        (Ok(v), Outcome::New) => new
            .map(|n| {
                n.diff(v)
                    .into_iter()
                    .map(|d| format!("new vs recovered: {d}"))
                    .collect()
            })
            .unwrap_or_default(),
        (Ok(v), Outcome::Exact) => {
            let (start, next, records) = expected_view(expect);
            let want = LogView {
                log_start_offset: start,
                next_offset: next,
                // Exact expectations name records and offsets, not the clean point.
                clean_point: v.clean_point,
                segments: v.segments.clone(),
                records,
            };
            want.diff(v)
                .into_iter()
                .map(|d| format!("expected vs recovered: {d}"))
                .collect()
        }
        (Ok(_), Outcome::Allowed) => Vec::new(),
    }
}

//! Running the models: options, the report (JSON via serde), and the Explorer.
//!
//! Every run is a single-threaded breadth-first search, so the counterexample kept for
//! each violated property (the first one the search meets, via a visitor) is a shortest
//! trace.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;
use stateright::{Checker, CheckerVisitor, Expectation, HasDiscoveries, Model, Path, Property};

use crate::models::cleaner::{CleanerModel, CleanerVariant};
use crate::models::concurrent::{ConcurrentModel, ConcurrentVariant};
use crate::models::durability::{DurabilityModel, DurabilityVariant, SyncStep};
use crate::models::install::{InstallModel, InstallVariant};
use crate::models::log::{LogModel, Mutant};
use crate::models::retention::{RetentionModel, RetentionVariant};
use crate::models::txn::{TxnModel, TxnMutant};
use crate::models::writers::{WritersModel, WritersVariant};

/// Which model to check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// (a) the reference spec under append, roll, retain, compact and a clock.
    #[default]
    Log,
    /// (b) the install protocol of compacted segments, with crashes and recovery.
    Install,
    /// (d) the order of retention deletion, with crashes and recovery.
    Retention,
    /// (e) the log's own files: append, flush, roll and close with the recovery
    /// point and the clean-shutdown marker, crashes, and open.
    Durability,
    /// (c) the cleaner's clean point and bounded map, with crashes.
    Cleaner,
    /// (f) concurrent cleaning: appender, cleaner, retention and reader interleaved,
    /// with a crash anywhere and recovery.
    Concurrent,
    /// (t) the transaction rules: plain and transactional appends of two producers,
    /// COMMIT and ABORT markers, rolls, compactions and a clock.
    Txn,
    /// (g) two processes on one log directory: writable opens, appends, closes and
    /// `kill -9`, with the writer lock.
    Writers,
}

/// A protocol variant. `manifest` and `checkpoint-first` are ours; the others are
/// known-broken designs the checker must refute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// Log model: the reference spec.
    Spec,
    /// Log model: compaction whose latest-offset map ignores the active segment.
    ClosedOnlyLatestMap,
    /// Log model: compaction that drops tombstones without the grace period.
    NoTombstoneGrace,
    /// Install: ours (manifest commit point, parent synced after every step).
    Manifest,
    /// Install: the seeds' swap (two renames, no manifest).
    TwoRename,
    /// Install: ours without the parent-directory syncs.
    NoDirSync,
    /// Install: ours without syncing the temp dir before the commit point.
    NoTempSync,
    /// Install and retention: ours, but recovery acts before syncing the directory it
    /// found after a crash.
    NoRecoverySync,
    /// Install: ours without the parent sync that makes the temp dir's entry durable
    /// before the manifest names it (a durable manifest can point at nothing).
    NoTempEntrySync,
    /// Install: the temp dir carries no recovery point (the open after the install
    /// scans and writes one): a crash in between leaves new content nothing vouches for.
    PointOnReopen,
    /// Install: a carried segment is renamed out of the live directory into the temp
    /// dir instead of hard-linked (the old content loses it).
    CarryByRename,
    /// Install: a carried segment is hard-linked after the temp dir's fsync (its
    /// entry is not durable when the manifest commits).
    LinkWithoutDirSync,
    /// Retention: ours (durable log_start_offset checkpoint before unlinking).
    CheckpointFirst,
    /// Retention: unlink segments first, checkpoint after.
    DeleteFirst,
    /// Durability: ours (recovery point at roll, marker at close).
    RecoveryPoint,
    /// Durability: roll writes the recovery point before it fsyncs the closed segment.
    RecoveryPointBeforeFlush,
    /// Durability: open does not fsync the directory it found.
    NoOpenDirSync,
    /// Durability: when the current recovery point vouches for every closed segment,
    /// open neither fsyncs the index files it rebuilt (an operator dropped them) nor
    /// rewrites the point.
    SyncScannedOnlyForNewPoint,
    /// Durability: the marker an open kept stays while the segment it describes
    /// grows (no removal before the first append).
    MarkerThroughAppends,
    /// Durability: flush fsyncs the index files and the directory too, as Kafka does
    /// (holds: those syncs are redundant in ours).
    FlushLikeKafka,
    /// Cleaner: ours (the clean point travels in the compaction's temp dir).
    CleanPointInTemp,
    /// Cleaner: the clean point is made durable before the install commits.
    CleanPointFirst,
    /// Concurrent: ours (snapshot, build unlocked, link the tail at the swap under the
    /// append lock, trash removed after the lock).
    LinkedTail,
    /// Concurrent: the tail is copied at snapshot time instead of linked at the swap.
    StaleTailCopy,
    /// Concurrent: retention may delete from a partition being cleaned.
    NoCleaningLock,
    /// Concurrent: appends and rolls are not held during the swap steps a to e.
    UnlockedSwap,
    /// Concurrent: the build maps records appended after its snapshot.
    UnboundedMap,
    /// Txn: ours (`spec::txn`: aborted data never shadows committed data, a marker
    /// stays while its transaction's data does).
    TxnRules,
    /// Txn: aborted records are compacted like committed ones.
    AbortedLikeCommitted,
    /// Txn: markers are removed at their horizon even while their data remains.
    MarkersIgnoreData,
    /// Writers: ours (a writable open takes the log's exclusive lock first).
    WriterLock,
    /// Writers: writable opens take no lock (two processes on one log).
    NoWriterLock,
}

impl Variant {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Spec => "spec",
            Variant::ClosedOnlyLatestMap => "closed-only-latest-map",
            Variant::NoTombstoneGrace => "no-tombstone-grace",
            Variant::Manifest => "manifest",
            Variant::TwoRename => "two-rename",
            Variant::NoDirSync => "no-dir-sync",
            Variant::NoTempSync => "no-temp-sync",
            Variant::NoRecoverySync => "no-recovery-sync",
            Variant::NoTempEntrySync => "no-temp-entry-sync",
            Variant::PointOnReopen => "point-on-reopen",
            Variant::CarryByRename => "carry-by-rename",
            Variant::LinkWithoutDirSync => "link-without-dir-sync",
            Variant::CheckpointFirst => "checkpoint-first",
            Variant::DeleteFirst => "delete-first",
            Variant::RecoveryPoint => "recovery-point",
            Variant::RecoveryPointBeforeFlush => "recovery-point-before-flush",
            Variant::NoOpenDirSync => "no-open-dir-sync",
            Variant::SyncScannedOnlyForNewPoint => "sync-scanned-only-for-new-point",
            Variant::MarkerThroughAppends => "marker-through-appends",
            Variant::FlushLikeKafka => "flush-like-kafka",
            Variant::CleanPointInTemp => "clean-point-in-temp",
            Variant::CleanPointFirst => "clean-point-first",
            Variant::LinkedTail => "linked-tail",
            Variant::StaleTailCopy => "stale-tail-copy",
            Variant::NoCleaningLock => "no-cleaning-lock",
            Variant::UnlockedSwap => "unlocked-swap",
            Variant::UnboundedMap => "unbounded-map",
            Variant::TxnRules => "txn-rules",
            Variant::AbortedLikeCommitted => "aborted-like-committed",
            Variant::MarkersIgnoreData => "markers-ignore-data",
            Variant::WriterLock => "writer-lock",
            Variant::NoWriterLock => "no-writer-lock",
        }
    }

    /// The variants valid for `model`, the default (correct) one first.
    pub fn all(model: ModelKind) -> &'static [Variant] {
        match model {
            ModelKind::Log => &[
                Variant::Spec,
                Variant::ClosedOnlyLatestMap,
                Variant::NoTombstoneGrace,
            ],
            ModelKind::Install => &[
                Variant::Manifest,
                Variant::TwoRename,
                Variant::NoDirSync,
                Variant::NoTempSync,
                Variant::NoRecoverySync,
                Variant::NoTempEntrySync,
                Variant::PointOnReopen,
                Variant::CarryByRename,
                Variant::LinkWithoutDirSync,
            ],
            ModelKind::Retention => &[
                Variant::CheckpointFirst,
                Variant::DeleteFirst,
                Variant::NoRecoverySync,
            ],
            ModelKind::Durability => &[
                Variant::RecoveryPoint,
                Variant::RecoveryPointBeforeFlush,
                Variant::NoOpenDirSync,
                Variant::SyncScannedOnlyForNewPoint,
                Variant::MarkerThroughAppends,
                Variant::FlushLikeKafka,
            ],
            ModelKind::Cleaner => &[Variant::CleanPointInTemp, Variant::CleanPointFirst],
            ModelKind::Concurrent => &[
                Variant::LinkedTail,
                Variant::StaleTailCopy,
                Variant::NoCleaningLock,
                Variant::UnlockedSwap,
                Variant::UnboundedMap,
            ],
            ModelKind::Txn => &[
                Variant::TxnRules,
                Variant::AbortedLikeCommitted,
                Variant::MarkersIgnoreData,
            ],
            ModelKind::Writers => &[Variant::WriterLock, Variant::NoWriterLock],
        }
    }

    /// The names of the variants valid for `model` (for `--help`).
    pub fn names(model: ModelKind) -> Vec<&'static str> {
        Variant::all(model).iter().map(|v| v.name()).collect()
    }

    pub fn default_for(model: ModelKind) -> Variant {
        Variant::all(model)[0]
    }

    /// True for the variants the design adopts (the checker must find no violation).
    pub fn is_ours(self) -> bool {
        matches!(
            self,
            Variant::Spec
                | Variant::Manifest
                | Variant::CheckpointFirst
                | Variant::RecoveryPoint
                | Variant::FlushLikeKafka
                | Variant::CleanPointInTemp
                | Variant::LinkedTail
                | Variant::TxnRules
                | Variant::WriterLock
        )
    }
}

/// What to check. `variant` defaults to the model's correct one; `depth` bounds the
/// search depth (a bounded run is not exhaustive: the report says so); `records`
/// overrides the log model's bound on appended offsets (default 3; 4 takes ~15 s in
/// a release build).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CheckOptions {
    pub model: ModelKind,
    pub variant: Option<Variant>,
    pub depth: Option<usize>,
    pub records: Option<i64>,
}

impl CheckOptions {
    pub fn new(model: ModelKind) -> CheckOptions {
        CheckOptions {
            model,
            ..CheckOptions::default()
        }
    }

    pub fn with_variant(self, variant: Variant) -> CheckOptions {
        CheckOptions {
            variant: Some(variant),
            ..self
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PropertyKind {
    Always,
    Sometimes,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PropertyReport {
    pub name: &'static str,
    pub kind: PropertyKind,
    /// `always`: no counterexample found; `sometimes`: an example was found.
    pub holds: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ViolationReport {
    pub property: &'static str,
    /// One line per action (Debug form), shortest trace found.
    pub trace: Vec<String>,
    /// The same actions as serde JSON (the crash-scenario form).
    pub actions: serde_json::Value,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckReport {
    pub model: ModelKind,
    pub variant: &'static str,
    /// States generated, duplicates included.
    pub states_explored: usize,
    pub unique_states: usize,
    pub max_depth: usize,
    /// False when `depth` bounded the search.
    pub exhaustive: bool,
    pub seconds: f64,
    pub properties: Vec<PropertyReport>,
    pub violations: Vec<ViolationReport>,
}

impl CheckReport {
    /// True if every property holds (no counterexample, every example found).
    pub fn ok(&self) -> bool {
        self.properties.iter().all(|p| p.holds)
    }
}

/// Unknown variant for a model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("variant {variant} does not apply to the {model:?} model (valid: {valid:?})")]
pub struct VariantError {
    pub model: ModelKind,
    pub variant: &'static str,
    pub valid: Vec<&'static str>,
}

fn resolve(options: &CheckOptions) -> Result<Variant, VariantError> {
    let variant = options
        .variant
        .unwrap_or_else(|| Variant::default_for(options.model));
    if !Variant::all(options.model).contains(&variant) {
        return Err(VariantError {
            model: options.model,
            variant: variant.name(),
            valid: Variant::names(options.model),
        });
    }
    Ok(variant)
}

fn log_model(variant: Variant, records: Option<i64>) -> LogModel {
    let mutant = match variant {
        Variant::ClosedOnlyLatestMap => Some(Mutant::ClosedOnlyLatestMap),
        Variant::NoTombstoneGrace => Some(Mutant::NoTombstoneGrace),
        _ => None,
    };
    let defaults = LogModel::default();
    LogModel {
        mutant,
        offsets_max: records.unwrap_or(defaults.offsets_max),
        ..defaults
    }
}

fn install_variant(variant: Variant) -> InstallVariant {
    match variant {
        Variant::TwoRename => InstallVariant::TwoRename,
        Variant::NoDirSync => InstallVariant::NoDirSync,
        Variant::NoTempSync => InstallVariant::NoTempSync,
        Variant::NoRecoverySync => InstallVariant::NoRecoverySync,
        Variant::NoTempEntrySync => InstallVariant::NoTempEntrySync,
        Variant::PointOnReopen => InstallVariant::PointOnReopen,
        Variant::CarryByRename => InstallVariant::CarryByRename,
        Variant::LinkWithoutDirSync => InstallVariant::LinkWithoutDirSync,
        _ => InstallVariant::Manifest,
    }
}

fn durability_variant(variant: Variant) -> DurabilityVariant {
    match variant {
        Variant::RecoveryPointBeforeFlush => DurabilityVariant::RecoveryPointBeforeFlush,
        Variant::NoOpenDirSync => DurabilityVariant::NoOpenDirSync,
        Variant::SyncScannedOnlyForNewPoint => DurabilityVariant::SyncScannedOnlyForNewPoint,
        Variant::MarkerThroughAppends => DurabilityVariant::MarkerThroughAppends,
        Variant::FlushLikeKafka => DurabilityVariant::FlushLikeKafka,
        _ => DurabilityVariant::Ours,
    }
}

fn cleaner_variant(variant: Variant) -> CleanerVariant {
    match variant {
        Variant::CleanPointFirst => CleanerVariant::CleanPointFirst,
        _ => CleanerVariant::CleanPointInTemp,
    }
}

pub(crate) fn concurrent_variant(variant: Variant) -> ConcurrentVariant {
    match variant {
        Variant::StaleTailCopy => ConcurrentVariant::StaleTailCopy,
        Variant::NoCleaningLock => ConcurrentVariant::NoCleaningLock,
        Variant::UnlockedSwap => ConcurrentVariant::UnlockedSwap,
        Variant::UnboundedMap => ConcurrentVariant::UnboundedMap,
        _ => ConcurrentVariant::Ours,
    }
}

pub(crate) fn writers_variant(variant: Variant) -> WritersVariant {
    match variant {
        Variant::NoWriterLock => WritersVariant::NoWriterLock,
        _ => WritersVariant::WriterLock,
    }
}

fn txn_model(variant: Variant) -> TxnModel {
    let mutant = match variant {
        Variant::AbortedLikeCommitted => Some(TxnMutant::AbortedLikeCommitted),
        Variant::MarkersIgnoreData => Some(TxnMutant::MarkersIgnoreData),
        _ => None,
    };
    TxnModel {
        mutant,
        ..TxnModel::default()
    }
}

fn retention_variant(variant: Variant) -> RetentionVariant {
    match variant {
        Variant::DeleteFirst => RetentionVariant::DeleteFirst,
        Variant::NoRecoverySync => RetentionVariant::NoRecoverySync,
        _ => RetentionVariant::CheckpointFirst,
    }
}

/// Runs the check `options` asks for.
///
/// # Panics
/// If `options.variant` does not belong to `options.model` (use [`try_run`] for input
/// from users).
pub fn run(options: &CheckOptions) -> CheckReport {
    try_run(options).unwrap_or_else(|e| panic!("{e}"))
}

/// [`run`], rejecting a variant of another model.
pub fn try_run(options: &CheckOptions) -> Result<CheckReport, VariantError> {
    let variant = resolve(options)?;
    let mut report = match options.model {
        ModelKind::Log => check_model(log_model(variant, options.records), options.depth),
        ModelKind::Install => {
            check_model(InstallModel::new(install_variant(variant)), options.depth)
        }
        ModelKind::Retention => check_model(
            RetentionModel::new(retention_variant(variant)),
            options.depth,
        ),
        ModelKind::Durability => check_model(
            DurabilityModel::new(durability_variant(variant)),
            options.depth,
        ),
        ModelKind::Cleaner => {
            check_model(CleanerModel::new(cleaner_variant(variant)), options.depth)
        }
        ModelKind::Concurrent => check_model(
            ConcurrentModel::new(concurrent_variant(variant)),
            options.depth,
        ),
        ModelKind::Txn => check_model(txn_model(variant), options.depth),
        ModelKind::Writers => {
            check_model(WritersModel::new(writers_variant(variant)), options.depth)
        }
    };
    report.model = options.model;
    report.variant = variant.name();
    Ok(report)
}

/// Serves stateright's Explorer for the chosen model on `addr`; never returns.
pub fn explore(options: &CheckOptions, addr: &str) -> Result<(), VariantError> {
    let variant = resolve(options)?;
    match options.model {
        ModelKind::Log => serve(log_model(variant, options.records), addr),
        ModelKind::Install => serve(InstallModel::new(install_variant(variant)), addr),
        ModelKind::Retention => serve(RetentionModel::new(retention_variant(variant)), addr),
        ModelKind::Durability => serve(DurabilityModel::new(durability_variant(variant)), addr),
        ModelKind::Cleaner => serve(CleanerModel::new(cleaner_variant(variant)), addr),
        ModelKind::Concurrent => serve(ConcurrentModel::new(concurrent_variant(variant)), addr),
        ModelKind::Txn => serve(txn_model(variant), addr),
        ModelKind::Writers => serve(WritersModel::new(writers_variant(variant)), addr),
    }
}

fn serve<M>(model: M, addr: &str) -> !
where
    M: Model + Send + Sync + 'static,
    M::State: Debug + Hash + Send + Sync + Clone + PartialEq,
    M::Action: Debug + Send + Sync + Clone + PartialEq,
{
    let _checker = model.checker().serve(addr);
    loop {
        std::thread::park();
    }
}

/// The first violating action list seen for each property, shared with the visitor.
type Found<A> = Arc<Mutex<BTreeMap<&'static str, Vec<A>>>>;

/// Replays `actions` from the model's first initial state, checking that each one is
/// enabled where it is taken: the states visited (initial state first), or `None` if
/// an action is not enabled. This is how a saved counterexample becomes a scenario.
pub fn replay<M: Model>(model: &M, actions: &[M::Action]) -> Option<Vec<M::State>>
where
    M::State: Clone,
    M::Action: Clone + PartialEq,
{
    let mut states = vec![model.init_states().into_iter().next()?];
    for action in actions {
        let state = states.last()?;
        let mut enabled = Vec::new();
        model.actions(state, &mut enabled);
        if !enabled.contains(action) {
            return None;
        }
        let next = model.next_state(state, action.clone())?;
        states.push(next);
    }
    Some(states)
}

/// Records, for each `always` property, the first violating path a BFS visits.
struct FirstViolations<M: Model> {
    properties: Vec<Property<M>>,
    found: Found<M::Action>,
}

impl<M: Model> CheckerVisitor<M> for FirstViolations<M>
where
    M::Action: Clone,
{
    fn visit(&self, model: &M, path: Path<M::State, M::Action>) {
        let mut found = self.found.lock().expect("visitor lock");
        let new: Vec<&'static str> = self
            .properties
            .iter()
            .filter(|p| !found.contains_key(p.name) && !(p.condition)(model, path.last_state()))
            .map(|p| p.name)
            .collect();
        if !new.is_empty() {
            let actions = path.into_actions();
            for name in new {
                found.insert(name, actions.clone());
            }
        }
    }
}

fn check_model<M>(model: M, depth: Option<usize>) -> CheckReport
where
    M: Model + Clone + Send + Sync + 'static,
    M::State: Debug + Hash + Send + Sync + Clone + PartialEq + 'static,
    M::Action: Debug + Serialize + Send + Sync + Clone + PartialEq + 'static,
{
    let started = Instant::now();
    let bounded = |builder: stateright::CheckerBuilder<M>| match depth {
        Some(d) => builder.target_max_depth(d),
        None => builder,
    };
    let checker = bounded(model.clone().checker()).spawn_bfs().join();
    let properties: Vec<PropertyReport> = model
        .properties()
        .iter()
        .map(|p| {
            let discovered = checker.discovery(p.name).is_some();
            let (kind, holds) = match p.expectation {
                Expectation::Sometimes => (PropertyKind::Sometimes, discovered),
                _ => (PropertyKind::Always, !discovered),
            };
            PropertyReport {
                name: p.name,
                kind,
                holds,
            }
        })
        .collect();
    let violated: Vec<Property<M>> = model
        .properties()
        .into_iter()
        .filter(|p| p.expectation == Expectation::Always && checker.discovery(p.name).is_some())
        .collect();
    let mut violations = Vec::new();
    if !violated.is_empty() {
        // stateright keeps the last counterexample it meets; a second pass with a
        // visitor keeps the first, which breadth-first order makes a shortest one.
        let found = Arc::new(Mutex::new(BTreeMap::new()));
        let names = violated.iter().map(|p| p.name).collect();
        let visitor = FirstViolations {
            properties: violated,
            found: Arc::clone(&found),
        };
        // The visitor sees each state before the checker judges it, so stopping once
        // every violated property is rediscovered loses no shorter trace.
        let _ = bounded(model.clone().checker())
            .finish_when(HasDiscoveries::AllOf(names))
            .visitor(visitor)
            .spawn_bfs()
            .join();
        let found = found.lock().expect("visitor lock");
        for (property, actions) in found.iter() {
            violations.push(ViolationReport {
                property,
                trace: actions.iter().map(|a| format!("{a:?}")).collect(),
                actions: serde_json::to_value(actions).expect("actions serialize"),
            });
        }
    }
    CheckReport {
        model: ModelKind::Log,
        variant: "",
        states_explored: checker.state_count(),
        unique_states: checker.unique_state_count(),
        max_depth: checker.max_depth(),
        exhaustive: depth.is_none(),
        seconds: started.elapsed().as_secs_f64(),
        properties,
        violations,
    }
}

#[cfg(test)]
mod tests;

/// Whether the protocol models need the sync step that the engine's fail point
/// `failpoint` stands before (the sync ablation's judge): `Ok(why)` if every property
/// still holds without it, `Err(property)` if the model refutes its removal, `None`
/// if no model has that step.
pub fn sync_verdict(failpoint: &str) -> Option<Result<String, String>> {
    let (kind, step) = SYNC_STEPS
        .iter()
        .find(|(name, _, _)| *name == failpoint)
        .map(|(_, kind, step)| (*kind, *step))?;
    let report = match kind {
        ModelKind::Install => check_model(
            InstallModel::new(InstallVariant::WithoutSteps(1 << step)),
            None,
        ),
        ModelKind::Retention => check_model(
            RetentionModel::new(RetentionVariant::WithoutSteps(1 << step)),
            None,
        ),
        ModelKind::Durability => check_model(
            DurabilityModel::new(DurabilityVariant::WithoutSyncs(1 << step)),
            None,
        ),
        ModelKind::Log
        | ModelKind::Cleaner
        | ModelKind::Concurrent
        | ModelKind::Txn
        | ModelKind::Writers => return None,
    };
    let refuted: Vec<&str> = report.violations.iter().map(|v| v.property).collect();
    Some(if refuted.is_empty() {
        Ok(format!(
            "the {kind:?} model without step {step} holds every property ({} states)",
            report.unique_states
        ))
    } else {
        Err(format!(
            "the {kind:?} model without step {step} breaks {}: the sweep has a blind spot",
            refuted.join(", ")
        ))
    })
}

/// True if a model has the sync step the engine's fail point `failpoint` stands
/// before (what [`sync_verdict`] can judge).
pub fn has_sync_step(failpoint: &str) -> bool {
    SYNC_STEPS.iter().any(|(name, _, _)| *name == failpoint)
}

/// Each protocol sync's fail point in the engine and its step in the models' own
/// protocol (`InstallVariant::steps`, `RetentionVariant::steps`, ours).
const SYNC_STEPS: &[(&str, ModelKind, u8)] = &[
    ("compaction::build::sync_file", ModelKind::Install, 1),
    // The clean point is one more file of the temp dir (model (c) checks why).
    ("compaction::build::sync_clean_point", ModelKind::Install, 1),
    // So is the new directory's recovery point (no reopen after cleanup).
    (
        "compaction::build::sync_recovery_point",
        ModelKind::Install,
        1,
    ),
    ("compaction::build::sync_tmp_dir", ModelKind::Install, 2),
    ("install::tail::sync_tmp", ModelKind::Install, 4),
    ("install::manifest::sync_temp_entry", ModelKind::Install, 5),
    ("install::manifest::sync_tmp", ModelKind::Install, 7),
    ("install::manifest::sync_parent", ModelKind::Install, 9),
    ("install::trash::sync_parent", ModelKind::Install, 13),
    (
        "install::cleanup::sync_parent_manifest",
        ModelKind::Install,
        15,
    ),
    ("retention::checkpoint::sync_tmp", ModelKind::Retention, 1),
    ("retention::checkpoint::sync_dir", ModelKind::Retention, 3),
    (
        "log::flush::sync_log",
        ModelKind::Durability,
        SyncStep::FlushLog as u8,
    ),
    (
        "log::roll::sync_closed",
        ModelKind::Durability,
        SyncStep::RollLog as u8,
    ),
    (
        "log::roll::sync_index",
        ModelKind::Durability,
        SyncStep::RollIndex as u8,
    ),
    (
        "log::roll::sync_time_index",
        ModelKind::Durability,
        SyncStep::RollTimeIndex as u8,
    ),
    (
        "log::roll::sync_dir",
        ModelKind::Durability,
        SyncStep::RollDir as u8,
    ),
    (
        "log::roll::sync_recovery_point",
        ModelKind::Durability,
        SyncStep::RecoveryPointTemp as u8,
    ),
    (
        "log::close::sync_log",
        ModelKind::Durability,
        SyncStep::CloseLog as u8,
    ),
    (
        "log::close::sync_index",
        ModelKind::Durability,
        SyncStep::CloseIndex as u8,
    ),
    (
        "log::close::sync_time_index",
        ModelKind::Durability,
        SyncStep::CloseTimeIndex as u8,
    ),
    (
        "log::close::sync_marker",
        ModelKind::Durability,
        SyncStep::MarkerTemp as u8,
    ),
    (
        "log::close::sync_dir",
        ModelKind::Durability,
        SyncStep::MarkerDir as u8,
    ),
    (
        "log::recovery::sync_log_dir",
        ModelKind::Durability,
        SyncStep::OpenDir as u8,
    ),
    (
        "log::recovery::sync_recovery_point",
        ModelKind::Durability,
        SyncStep::OpenRecoveryPointTemp as u8,
    ),
    (
        "log::recovery::sync_scanned",
        ModelKind::Durability,
        SyncStep::OpenScanned as u8,
    ),
    (
        "log::unmark::sync_dir",
        ModelKind::Durability,
        SyncStep::UnmarkDir as u8,
    ),
];

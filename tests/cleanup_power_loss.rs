//! Retention and compaction under power loss, on the simulated file system.
//!
//! Invariants checked: for a power loss before every mutating file-system call of
//! `Log::retain` and `Log::compact` (and after they return), every disk image the
//! loss may leave (SimFs crash images: lost unsynced bytes, lost directory
//! operations) opens to exactly the old or the new content as the reference spec
//! computes it; never a hole, never an ambiguous install; after the operation has
//! returned, only the new content.

use std::path::Path;
use std::sync::Arc;

use seglog::fs::sim::{CrashMode, SimFs};
use seglog::{Log, LogConfig};
use seglog_model::spec::SpecLog;

mod cleanup_support;
use cleanup_support::{apply_steps, seed_retention_steps, Rec};

type View = seglog_suite::workload::LogView;

const IMAGES_PER_POINT: usize = 48;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1 << 20,
        index_interval_bytes: 1,
        ..LogConfig::default()
    }
}

fn dir() -> &'static Path {
    Path::new("/data/log")
}

/// Builds the log on a fresh SimFs (`None` steps are rolls); everything durable.
fn prepare(steps: &[Option<Vec<Rec>>]) -> (Arc<SimFs>, SpecLog) {
    let fs = Arc::new(SimFs::new());
    let (mut log, _) = Log::open_with(fs.clone(), dir(), config()).unwrap();
    let mut spec = SpecLog::new(config().segment_bytes);
    apply_steps(&mut log, &mut spec, steps);
    log.close().unwrap();
    // The fixture's own directory creation (`/data` in `/`) is not under test.
    fs.settle();
    (fs, spec)
}

fn engine_view(log: &Log) -> View {
    seglog_suite::workload::engine::view(log).expect("read the whole log")
}

fn spec_view(spec: &SpecLog) -> View {
    seglog_suite::workload::spec::view(spec)
}

/// What a sweep saw.
#[derive(Debug, Default)]
struct Tally {
    checked: usize,
    old: usize,
    new: usize,
    /// Images that failed to open, or opened to neither old nor new content.
    bad: Vec<String>,
}

/// Crashes `operation` before each of its mutating calls in turn (power loss), and
/// opens every image the loss may leave.
fn sweep(
    steps: &[Option<Vec<Rec>>],
    operation: impl Fn(&Arc<SimFs>, &mut Log) -> seglog::Result<()>,
    expected_new: impl Fn(&SpecLog) -> SpecLog,
) -> Tally {
    let (_, spec) = prepare(steps);
    let old = spec_view(&spec);
    let new = spec_view(&expected_new(&spec));
    assert_ne!(old, new);
    let mut tally = Tally::default();
    for k in 0.. {
        let (fs, _) = prepare(steps);
        // The open itself writes (it removes the clean-shutdown marker): the crash
        // points are those of `operation`.
        let (mut log, _) = Log::open_with(fs.clone(), dir(), config()).unwrap();
        let start = fs.mutating_ops();
        fs.set_crash_before(start + k);
        let done = operation(&fs, &mut log).is_ok() && !fs.is_crashed();
        std::mem::forget(log);
        for image in fs.crash_images(CrashMode::PowerLoss, IMAGES_PER_POINT) {
            tally.checked += 1;
            let image_fs = Arc::new(image.fs);
            let log = match Log::open_with(image_fs.clone(), dir(), config()) {
                Ok((log, _)) => log,
                Err(e) => {
                    tally
                        .bad
                        .push(format!("op {k}, lost {:?}: open failed: {e}", image.lost));
                    continue;
                }
            };
            let view = engine_view(&log);
            if view == old && !done {
                tally.old += 1;
            } else if view == new {
                tally.new += 1;
            } else {
                tally.bad.push(format!(
                    "op {k} (done: {done}), lost {:?}: neither old nor new: {view:?}",
                    image.lost
                ));
                continue;
            }
            // Recovery left nothing behind that a second open would still act on.
            drop(log);
            let (_, again) = Log::open_with(image_fs, dir(), config()).unwrap();
            assert_eq!(again.install.case, seglog::install::InstallCase::Clean);
        }
        if done {
            break;
        }
    }
    tally
}

fn retained(spec: &SpecLog) -> SpecLog {
    let mut spec = spec.clone();
    spec.retain(300, Some(100), None).unwrap();
    spec
}

fn compaction_steps() -> Vec<Option<Vec<Rec>>> {
    vec![
        Some(vec![(Some("a"), Some("1"), 0), (Some("b"), Some("x"), 1)]),
        None,
        Some(vec![(Some("a"), Some("2"), 3), (None, Some("event"), 4)]),
        Some(vec![(Some("b"), None, 5)]),
        None,
        Some(vec![(Some("a"), Some("3"), 7)]),
    ]
}

fn compacted(spec: &SpecLog) -> SpecLog {
    let mut spec = spec.clone();
    spec.compact(10_000, 100, None).unwrap();
    spec
}

#[test]
fn retention_power_loss_leaves_old_or_new_never_a_hole() {
    let tally = sweep(
        &seed_retention_steps(),
        |_, log| log.retain(300, Some(100), None).map(|_| ()),
        retained,
    );
    assert!(tally.bad.is_empty(), "{:#?}", tally.bad);
    assert!(tally.old > 0 && tally.new > 0, "{tally:?}");
}

#[test]
fn compaction_power_loss_leaves_old_or_new() {
    let tally = sweep(
        &compaction_steps(),
        |_, log| log.compact(10_000, 100, None).map(|_| ()),
        compacted,
    );
    assert!(tally.bad.is_empty(), "{:#?}", tally.bad);
    assert!(tally.old > 0 && tally.new > 0, "{tally:?}");
}

/// The teeth: each deliberately broken protocol variant is caught by the same sweep.
#[cfg(feature = "test-variants")]
mod teeth {
    use super::*;
    use seglog::compaction::CompactOptions;
    use seglog::testing::variants::{
        compact_dir_with, delete_prefix_with, InstallVariant, RetentionOrder,
    };

    fn broken_compaction(variant: InstallVariant) -> Tally {
        sweep(
            &compaction_steps(),
            |fs, log| {
                log.flush()?;
                let options = CompactOptions {
                    now: 10_000,
                    delete_retention_ms: 100,
                    segment_bytes: config().segment_bytes,
                };
                compact_dir_with(fs.as_ref(), dir(), options, variant).map(|_| ())
            },
            compacted,
        )
    }

    #[test]
    fn the_correct_variant_passes_through_the_variant_api() {
        let tally = broken_compaction(InstallVariant::Manifest);
        assert!(tally.bad.is_empty(), "{:#?}", tally.bad);
    }

    #[test]
    fn two_rename_swap_is_caught() {
        assert!(!broken_compaction(InstallVariant::TwoRename).bad.is_empty());
    }

    #[test]
    fn missing_parent_sync_is_caught() {
        assert!(!broken_compaction(InstallVariant::NoDirSync).bad.is_empty());
    }

    #[test]
    fn backup_before_manifest_is_caught() {
        assert!(!broken_compaction(InstallVariant::BackupBeforeManifest)
            .bad
            .is_empty());
    }

    #[test]
    fn delete_before_checkpoint_is_caught() {
        let tally = sweep(
            &seed_retention_steps(),
            |fs, log| {
                log.flush()?;
                let plan = log.retention_plan(300, Some(100), None)?;
                delete_prefix_with(
                    fs.as_ref(),
                    dir(),
                    &plan.delete,
                    RetentionOrder::DeleteFirst,
                )
                .map(|_| ())
            },
            retained,
        );
        assert!(!tally.bad.is_empty(), "{tally:?}");
    }
}

//! The checks of the `ops_vs_model` fuzz target. Shared with `tests/fuzz_corpus.rs` (included
//! by path), so `cargo test` replays the committed seeds through exactly what the
//! fuzzer runs. The function panics with a description when an invariant breaks.

use std::sync::Arc;

use seglog::fs::sim::{CrashMode, SimFs};
use seglog::fs::FileSystem;
use seglog::Log;
use seglog_model::spec::SpecLog;
use seglog_suite::workload::{engine, spec, Op, OpOutcome};

use crate::common::{ops_json, OpsInput, Step, LOG_DIR};

/// Runs arbitrary steps on the engine (on a `SimFs`) and on the reference spec.
///
/// Invariants checked:
/// - every operation returns the same outcome on both sides (`engine::apply` vs
///   `spec::apply`, the shared workload vocabulary; argument errors are `Rejected`
///   on both sides, nothing else may fail);
/// - after every step the engine's `LogView` (offsets, segment metadata, every record)
///   equals the spec's;
/// - a reopen after a process crash (every completed call survives) truncates nothing
///   and leaves the view unchanged.
pub fn ops_vs_model(input: &OpsInput) -> OpsOutcome {
    let config = input.config.log_config();
    let mut fs = Arc::new(SimFs::new());
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let (mut log, _) = Log::open_with(dyn_fs, LOG_DIR, config.clone()).expect("open an empty log");
    let mut spec = SpecLog::new(config.segment_bytes);
    let mut done: Vec<Op> = Vec::new();
    let mut outcome = OpsOutcome::default();
    for (i, step) in input.steps.0.iter().enumerate() {
        let context = |done: &[Op]| {
            format!(
                "config {config:?}\nworkload so far (step {i}): {}",
                ops_json(done)
            )
        };
        match step {
            Step::Op(fuzz_op) => {
                let op = fuzz_op.op();
                done.push(op.clone());
                let want = spec::apply(&mut spec, &op);
                let got = engine::apply(&mut log, &op)
                    .unwrap_or_else(|e| panic!("engine failed on {op}: {e}\n{}", context(&done)));
                assert!(
                    got == want,
                    "{op}: engine {got:?}, spec {want:?}\n{}",
                    context(&done)
                );
                outcome.count(&got);
            }
            Step::Reopen => {
                let image = fs
                    .crash_images(CrashMode::Process, 1)
                    .pop()
                    .expect("one process-crash image");
                drop(log);
                fs = Arc::new(image.fs);
                let dyn_fs: Arc<dyn FileSystem> = fs.clone();
                let (reopened, report) = Log::open_with(dyn_fs, LOG_DIR, config.clone())
                    .unwrap_or_else(|e| panic!("reopen failed: {e}\n{}", context(&done)));
                assert_eq!(report.truncated_bytes, 0, "{report:?}\n{}", context(&done));
                log = reopened;
                outcome.reopens += 1;
            }
        }
        let got =
            engine::view(&log).unwrap_or_else(|e| panic!("engine view: {e}\n{}", context(&done)));
        let want = spec::view(&spec);
        assert!(
            got == want,
            "after step {i}: {}\n{}",
            want.diff(&got).join("; "),
            context(&done)
        );
    }
    outcome
}

/// What [`ops_vs_model`] exercised, so seed replays can show what they reach.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpsOutcome {
    pub appends: usize,
    pub rejected: usize,
    pub segments_deleted: usize,
    pub records_compacted_away: u64,
    pub reopens: usize,
}

impl OpsOutcome {
    fn count(&mut self, outcome: &OpOutcome) {
        match outcome {
            OpOutcome::Appended { .. } => self.appends += 1,
            OpOutcome::Rejected => self.rejected += 1,
            OpOutcome::Retained { deleted_segments } => {
                self.segments_deleted += deleted_segments.len()
            }
            OpOutcome::Compacted {
                records_before,
                records_after,
                ..
            } => self.records_compacted_away += records_before.saturating_sub(*records_after),
            _ => {}
        }
    }
}

//! Conformance cases kept as regressions: shrunk cases that once found a bug the
//! crash sweep could not reach (they need a sequence of I/O errors and reopens).
//! `tests/` runs each, and the sync ablation runs them too with a step removed, so a
//! sync that only such a case needs is judged `caught`, not `unmodelled`.

use crate::workload::{Op, RecordSpec};
use seglog::fs::sim::FaultKind;

use super::Step;

/// A named regression case.
#[derive(Debug, Clone)]
pub struct Regression {
    /// The test that runs it, and what it found.
    pub name: &'static str,
    /// Its steps, for `run_case` on `Backend::Sim` and the `manifest` variant.
    pub steps: Vec<Step>,
}

fn rec(key: Option<&str>, value: Option<&str>, ts: i64) -> RecordSpec {
    RecordSpec {
        key: key.map(str::to_string),
        value: value.map(str::to_string),
        ts,
    }
}

fn append(records: Vec<RecordSpec>) -> Step {
    Step::Op(Op::Append {
        records,
        codec: None,
        log_append_time: None,
    })
}

/// An I/O-error conformance case (seed 4782200037612593770), shrunk to seven
/// steps: bytes an open finds unsynced in the active segment (appended by this
/// process before an append failed and poisoned the log) must be made durable by
/// the open (`log::recovery::sync_active`). Otherwise a later failed fsync dooms
/// their pages (fsyncgate), and the next roll's recovery point vouches for a segment
/// a power loss turns into zeros. `tests/open_syncs_found_bytes.rs`.
pub fn open_syncs_found_bytes() -> Regression {
    Regression {
        name: "open_syncs_found_bytes",
        steps: vec![
            append(vec![
                rec(Some("k2"), Some("v171"), 82),
                rec(Some("k0"), Some("v167"), 117),
                rec(None, Some("v252"), 107),
            ]),
            Step::FailNext {
                kind: FaultKind::Eio,
            },
            append(vec![rec(Some("k0"), None, 97)]),
            Step::FailNext {
                kind: FaultKind::Enospc,
            },
            Step::Op(Op::Clean {
                now: 100,
                delete_retention_ms: 183,
                segment_bytes: None,
                dedupe_buffer_bytes: Some(24),
                min_compaction_lag_ms: 52,
                policy: seglog::compaction::CompactionPolicy::Seed,
                producer_id_expiration_ms: seglog::compaction::PRODUCER_ID_EXPIRATION_MS_DEFAULT,
            }),
            Step::Op(Op::Roll),
            Step::CrashReopen {
                image: 1_592_919_363,
            },
        ],
    }
}

/// Every regression case.
pub fn all() -> Vec<Regression> {
    vec![open_syncs_found_bytes()]
}

/// Every regression as a catcher of the sync ablation: run on `Backend::Sim` and
/// the `manifest` variant, named `regression NAME`.
pub fn catchers() -> Vec<crate::sweep::ablation::Catcher> {
    all()
        .into_iter()
        .map(|case| crate::sweep::ablation::Catcher {
            name: format!("regression {}", case.name),
            run: Box::new(move || {
                super::run_case(&case.steps, super::Backend::Sim, "manifest")
                    .map(|_| ())
                    .map_err(|divergence| {
                        format!("conformance regression {}: {divergence}", case.name)
                    })
            }),
        })
        .collect()
}

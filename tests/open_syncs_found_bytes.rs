//! Found by the I/O-error conformance (`seglog verify`, seed 4782200037612593770),
//! shrunk to seven steps: bytes an open finds unsynced in the active segment (here:
//! appended by this process before an append failed and poisoned the log) must be
//! made durable by the open. Otherwise a later failed fsync dooms their pages
//! (fsyncgate: Linux marks them clean, no later fsync writes them), the cut-back of
//! `sync_active_log` does not touch them (they were "synced as found"), the next roll
//! fsyncs "successfully" and the recovery point vouches for a segment whose bytes a
//! power loss then turns into zeros.
#![cfg(feature = "suite")] // the conformance runner

use seglog::conformance::{run_case, Backend, Step};
use seglog::fs::sim::FaultKind;
use seglog::workload::{Op, RecordSpec};

fn rec(key: Option<&str>, value: Option<&str>, ts: i64) -> RecordSpec {
    RecordSpec {
        key: key.map(str::to_string),
        value: value.map(str::to_string),
        ts,
    }
}

#[test]
fn a_failed_fsync_after_a_reopen_cannot_doom_bytes_the_open_found() {
    let steps = vec![
        Step::Op(Op::Append {
            records: vec![
                rec(Some("k2"), Some("v171"), 82),
                rec(Some("k0"), Some("v167"), 117),
                rec(None, Some("v252"), 107),
            ],
            codec: None,
            log_append_time: None,
        }),
        Step::FailNext {
            kind: FaultKind::Eio,
        },
        Step::Op(Op::Append {
            records: vec![rec(Some("k0"), None, 97)],
            codec: None,
            log_append_time: None,
        }),
        Step::FailNext {
            kind: FaultKind::Enospc,
        },
        Step::Op(Op::Clean {
            now: 100,
            delete_retention_ms: 183,
            segment_bytes: None,
            dedupe_buffer_bytes: Some(24),
            min_compaction_lag_ms: 52,
        }),
        Step::Op(Op::Roll),
        Step::CrashReopen {
            image: 1_592_919_363,
        },
    ];
    if let Err(divergence) = run_case(&steps, Backend::Sim, "manifest") {
        panic!("{divergence}");
    }
}

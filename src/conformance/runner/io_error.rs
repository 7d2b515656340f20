//! `Step::FailNext` in a conformance case: the next mutating file-system call fails
//! with an injected error; the operation that makes it must fail and poison the log,
//! and the reopened log must equal the spec at an allowed state.
//!
//! The allowed states after a failed operation are those of the I/O-error sweep
//! ([`states_after_error_stamped`]): from the last durability point that returned `Ok` to the
//! state before the operation, the operation done, and for an append that would roll,
//! the roll alone. The spec goes on from the state the engine recovered to.

use seglog_model::spec::SpecLog;

use crate::sweep::io_errors::{check_poisoned, states_after_error_stamped};
use crate::workload::Op;
use seglog::error::Error;
use seglog::fs::sim::FaultKind;

use super::super::compare::{compare, engine_spec, structure_diff};
use super::{Durable, Engine};

/// Arms `kind` on the next mutating call (SimFs only; the real disk ignores it).
pub(super) fn arm(engine: &Engine, kind: FaultKind) {
    if let Some(sim) = &engine.sim {
        sim.fail_nth_with(sim.mutating_ops(), kind);
    }
}

/// Drops a fault no operation reached, so that a close or a recovery never meets it.
pub(super) fn disarm(engine: &Engine) {
    if let Some(sim) = &engine.sim {
        sim.clear_faults();
    }
}

/// After `op` failed with the injected `error`: checks the poison, reopens, finds the
/// recovered state among the allowed ones and moves the spec and the durable range
/// there (`log_append_time`: the stamp of a LogAppendTime log at `op`). Returns the
/// reads compared.
pub(super) fn recover(
    engine: &mut Engine,
    op: &Op,
    log_append_time: Option<i64>,
    spec_log: &mut SpecLog,
    durable: &mut Durable,
    error: &Error,
) -> Result<u64, String> {
    if !matches!(error, Error::Io { .. }) {
        return Err(format!("an injected io error surfaced as {error}"));
    }
    check_poisoned(engine.log())?;
    let candidates = states_after_error_stamped(&durable.states, spec_log, op, log_append_time);
    drop(engine.log.take());
    engine
        .open()
        .map_err(|e| format!("reopen after the io error ({error}) failed: {e}"))?;
    let segment_bytes = engine.config.segment_bytes;
    let recovered = engine_spec(engine.log(), segment_bytes)?;
    let Some(m) = candidates.iter().rposition(|s| *s == recovered) else {
        let closest = candidates
            .iter()
            .enumerate()
            .filter_map(|(j, s)| structure_diff(&recovered, s).map(|d| (j, d)))
            .map(|(j, d)| format!("allowed state {j}: {d}"))
            .collect::<Vec<_>>();
        return Err(format!(
            "after the io error ({error}) the reopened log is none of the {} allowed states; {}",
            candidates.len(),
            closest.join(" | ")
        ));
    };
    *spec_log = candidates[m].clone();
    if m < durable.states.len() {
        // What recovery found unsynced stays unsynced.
        durable.states.truncate(m + 1);
    } else {
        durable.states.push(spec_log.clone());
    }
    compare(engine.log(), spec_log)
}

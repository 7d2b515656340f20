//! An I/O-error conformance case (`seglog verify`, seed 4782200037612593770),
//! shrunk to seven steps: bytes an open finds unsynced in the active segment (here:
//! appended by this process before an append failed and poisoned the log) must be
//! made durable by the open. Otherwise a later failed fsync dooms their pages
//! (fsyncgate: Linux marks them clean, no later fsync writes them), the cut-back of
//! `sync_active_log` does not touch them (they were "synced as found"), the next roll
//! fsyncs "successfully" and the recovery point vouches for a segment whose bytes a
//! power loss then turns into zeros.

use seglog_suite::conformance::{regressions, run_case, Backend};

#[test]
fn a_failed_fsync_after_a_reopen_cannot_doom_bytes_the_open_found() {
    let case = regressions::open_syncs_found_bytes();
    if let Err(divergence) = run_case(&case.steps, Backend::Sim, "manifest") {
        panic!("{divergence}");
    }
}

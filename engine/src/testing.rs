//! The testing seam: what the verification suite reaches beyond the public API,
//! in one place, compiled only with the feature `testing` (the suite turns it on;
//! an embedder never needs it, and the engine's release build has none of it).
//!
//! Fault injection needs no item here: it is the [`FileSystem`] trait (the
//! simulated file system `crate::fs::sim::SimFs` and the tracing wrapper implement
//! it), plus the named fail points of `crate::fs::failpoint` (feature
//! `failpoints`). What is here:
//! - [`poison`]: mark a log unusable, as the engine does when an IO error leaves a
//!   directory and the handle out of step;
//! - [`build_through`]: a cleaning build with its file-system calls made through a
//!   wrapper (the deterministic interleaving gate of the sweep);
//! - [`encode_records_checked`]: the record encoder an append runs, for the codec
//!   bench's encode-only rows;
//! - [`start_writeback`]: the writeback hint the engine gives after a large write,
//!   so that the benches' plain-`std` yardstick can give the same one;
//! - with the feature `test-variants`, `variants`: the broken protocols the
//!   suite's "teeth" checks run, and reopen-after-failure.

use std::fs::File;
use std::io;
use std::sync::Arc;

use crate::compaction::{CleanBuild, CleanSnapshot};
use crate::error::Result;
use crate::format::NewRecord;
use crate::fs::FileSystem;
use crate::log::Log;

/// Marks `log` unusable until reopened: every later call is `Error::Poisoned`.
pub fn poison(log: &mut Log) {
    log.poison();
}

/// [`CleanSnapshot::build`] with every file-system call of the build made through
/// `fs` (the same files behind a wrapper); the swap uses the log's own file system
/// again.
pub fn build_through(mut snapshot: CleanSnapshot, fs: Arc<dyn FileSystem>) -> Result<CleanBuild> {
    let own = std::mem::replace(&mut snapshot.fs, fs);
    let mut built = snapshot.build()?;
    built.snapshot.fs = own;
    Ok(built)
}

/// Appends `records` to `out` as an append encodes them (deltas from the first's
/// timestamp), making the append's checks on the way; `overhead` is the batch
/// header's length. `None`: a record the append refuses, `out` partly written.
/// `Some`: the largest timestamp.
pub fn encode_records_checked(
    records: &[NewRecord],
    overhead: usize,
    out: &mut Vec<u8>,
) -> Option<i64> {
    crate::log::encode::encode_records_checked(records, overhead, out).ok()
}

/// Starts the writeback of `file`'s dirty pages without waiting for it (Linux's
/// `sync_file_range`; a no-op elsewhere): the hint the engine gives after
/// `LogConfig::writeback_bytes` of appends.
pub fn start_writeback(file: &File) -> io::Result<()> {
    crate::fs::start_writeback(file)
}

/// The broken protocol variants of the suite's teeth checks (each named by the
/// model property it breaks), and the reopen after a failed directory change that
/// the broken variants use.
#[cfg(feature = "test-variants")]
pub mod variants {
    use crate::compaction::{
        CleanBuild, CleanOptions, CleanSnapshot, CompactOptions, CompactionReport,
    };
    use crate::error::Result;
    use crate::log::Log;
    use crate::manager::LogManager;

    pub use crate::compaction::{compact_dir_with, CleanVariant};
    pub use crate::install::{install_with, InstallVariant};
    pub use crate::log::trust::with_settle_only_for_new_point;
    pub use crate::log::RollVariant;
    pub use crate::retention::{delete_prefix_with, RetentionOrder};

    /// Reopens `log` after a directory-level change `result`, or poisons it if the
    /// change failed half way (the next open's recovery finishes or undoes it).
    pub fn reopen_after<T>(log: &mut Log, result: Result<T>) -> Result<T> {
        log.reopen_after(result)
    }

    /// What `Log::clean` does before its build: checks the arguments and flushes;
    /// `None` when there is no closed segment.
    pub fn clean_prepare(
        log: &mut Log,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
        knobs: CleanOptions,
    ) -> Result<Option<CompactOptions>> {
        log.clean_prepare(now, delete_retention_ms, segment_bytes, knobs)
    }

    /// Rolls of `log` run `variant` (`recovery-point-before-flush`).
    pub fn set_roll_variant(log: &mut Log, variant: RollVariant) {
        log.set_roll_variant(variant);
    }

    /// `Log::clean` with the new clean point made durable in the live directory
    /// before the install commits (model (c)'s `clean-point-first`).
    pub fn clean_with_clean_point_first(
        log: &mut Log,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
        knobs: CleanOptions,
    ) -> Result<CompactionReport> {
        log.clean_with_clean_point_first(now, delete_retention_ms, segment_bytes, knobs)
    }

    /// `Log::clean` installing a directory without its index files and recovery
    /// point, the log reopened after it (model (b)'s `point-on-reopen`).
    pub fn clean_with_point_on_reopen(
        log: &mut Log,
        now: i64,
        delete_retention_ms: i64,
        segment_bytes: Option<u64>,
        knobs: CleanOptions,
    ) -> Result<CompactionReport> {
        log.clean_with_point_on_reopen(now, delete_retention_ms, segment_bytes, knobs)
    }

    /// The swap of `build` without the log's lock (`unlocked-swap`): `during` runs
    /// between the tail's link and the renames.
    pub fn clean_swap_unlocked(
        log: &mut Log,
        build: CleanBuild,
        during: impl FnOnce(&mut Log) -> Result<()>,
    ) -> Result<CompactionReport> {
        log.clean_swap_unlocked(build, during)
    }

    /// `snapshot` as the broken `stale-tail-copy` takes it.
    pub fn stale_tail_copy(snapshot: CleanSnapshot) -> CleanSnapshot {
        snapshot.stale_tail_copy()
    }

    /// `snapshot` as the broken `unbounded-map` takes it.
    pub fn unbounded_map(snapshot: CleanSnapshot) -> CleanSnapshot {
        snapshot.unbounded_map()
    }

    /// `snapshot` as the broken `unflushed-swap` takes it.
    pub fn unflushed_swap(snapshot: CleanSnapshot) -> CleanSnapshot {
        snapshot.unflushed_swap()
    }

    /// `manager`'s cleaner and retention run without the cleaning states
    /// (`no-cleaning-lock`).
    pub fn set_no_cleaning_lock(manager: &LogManager) {
        manager.set_no_cleaning_lock();
    }
}

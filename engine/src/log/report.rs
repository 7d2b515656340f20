//! [`RecoveryReport`]: what opening a log found and did.

#[cfg(feature = "serde")]
use serde::Serialize;

/// Why an index file was rewritten on open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum RebuildReason {
    /// The file did not exist.
    Missing,
    /// The file ends in a partial entry.
    Short,
    /// The file breaks one of Kafka's index rules (see `rule`).
    Inconsistent,
}

/// One rewritten index file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct RebuiltIndex {
    /// The index file's name.
    pub file: String,
    /// Why it was rebuilt.
    pub reason: RebuildReason,
    /// The Kafka rule the file broke (docs/design.md section 3, "Index validation").
    pub rule: crate::segment::validate::IndexRule,
    /// Where and how: the offending entry's byte position in the file and what it holds.
    pub detail: String,
}

/// What recovery found and did. Phases of other modules (install, retention
/// checkpoint) add their own fields here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct RecoveryReport {
    /// True for a read-only inspection ([`crate::Log::open_read_only`]): nothing was
    /// changed, and the truncation, rebuild and removal fields say what a writable
    /// open would do.
    pub read_only: bool,
    /// True if the directory or its first segment had to be created.
    pub created: bool,
    /// Segments after recovery.
    pub segments: u64,
    /// Batches scanned and found valid, over all segments.
    pub batches: u64,
    /// Bytes cut from the tail of the last segment.
    pub truncated_bytes: u64,
    /// Batches (whole or partial) cut from the tail of the last segment.
    pub truncated_batches: u64,
    /// Base offset of the segment whose tail was cut.
    pub truncated_segment: Option<i64>,
    /// Why the tail was cut (the first invalid batch).
    pub truncated_reason: Option<String>,
    /// What the cut tail was: torn (nothing CRC-valid after its first invalid
    /// byte) or corruption followed by valid batches, which it counts, and the
    /// recovery mode the open ran in. `None` if no tail was cut.
    pub truncated_tail: Option<super::TailTruncation>,
    /// Index files rewritten from their `.log`.
    pub rebuilt_indexes: Vec<RebuiltIndex>,
    /// Index files valid by Kafka's rules and kept as found although a rebuild
    /// would differ (written by another Kafka writer, or by appends of several
    /// batches, or before a restart). Nothing was changed for them.
    pub kept_indexes: Vec<String>,
    /// Orphan index files (no `.log`) that were removed.
    pub removed_files: Vec<String>,
    /// Entries this module does not own; left alone.
    pub unknown_files: Vec<String>,
    /// The log start offset after recovery.
    pub log_start_offset: i64,
    /// The next offset after recovery.
    pub next_offset: i64,
    /// The recovery point found (segments below it were trusted), if one decoded.
    pub recovery_point: Option<i64>,
    /// True if a valid clean-shutdown marker let the open trust the active segment.
    pub clean_shutdown: bool,
    /// True if a writable open kept that marker: it still describes the active
    /// segment, so a close with nothing appended writes nothing, and the first
    /// append or roll removes it first.
    pub marker_kept: bool,
    /// Segments opened from their summaries, without reading their `.log`.
    pub trusted_segments: u64,
    /// Segments whose `.log` was read and checked batch by batch.
    pub scanned_segments: u64,
    /// Bytes of `.log` read by those scans.
    pub scanned_bytes: u64,
    /// Trusted segments scanned after all, each with why (their index files failed
    /// the checks against the summary).
    pub rescanned: Vec<String>,
    /// Recovery point or marker files that failed to decode and were ignored (the
    /// open scanned instead), each with the error.
    pub ignored_checkpoints: Vec<String>,
    /// Closed segments the recovery point summarizes that are missing, shorter
    /// than their summary or not regular files: data that is gone. Only an open in
    /// [`super::RecoveryMode::AcceptLoss`] gets past them (every other open refuses
    /// with [`crate::CorruptKind::SegmentsLost`]); a read-only open lists them.
    pub lost: Vec<crate::error::LostSegment>,
    /// The install protocol's recovery: which row of the decision table applied
    /// (docs/design.md section 6). Runs first, before the directory is even created.
    pub install: crate::install::InstallRecovery,
    /// Retention recovery: segments wholly below the checkpoint and orphan indexes
    /// removed (docs/design.md section 5).
    pub retention: crate::retention::RetentionRecovery,
}

impl RecoveryReport {
    /// True if recovery changed nothing on disk.
    pub fn is_clean(&self) -> bool {
        !self.created
            && self.truncated_bytes == 0
            && self.rebuilt_indexes.is_empty()
            && self.removed_files.is_empty()
            && self.install.case == crate::install::InstallCase::Clean
            && self.retention.removed_files.is_empty()
    }
}

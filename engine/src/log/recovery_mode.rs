//! [`RecoveryMode`]: what an open does with an invalid tail of the active segment
//! (raft-engine's `RecoveryMode`, RocksDB's WAL recovery modes), and
//! [`TailTruncation`], what the report says about one.
//!
//! What the command line reports (docs/design.md section 3, "Recovery modes"):
//! The writable commands take `--recovery-mode` and add a `"recovery"` object to their
//! JSON whenever the open found or changed anything: the truncation's fields, `mode`,
//! `lost`, `ignored_checkpoints`, `rescanned`, `rebuilt_indexes`, `removed_files` and
//! `unknown_files`. `seglog dump` adds `lost` when it is not empty; `accept-loss` warns
//! on stderr, one line per lost segment.

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use crate::error::{CorruptKind, Error};
use crate::segment::salvage::ValidAfter;

/// What a writable open does with an invalid tail of the active segment (the bytes
/// from its first invalid batch to its end). Damage in any other segment is always
/// [`Error::Corrupt`]; a read-only open never changes anything and only reports.
/// The mode also decides whether an open may go past summarized segments that are
/// gone ([`RecoveryMode::AcceptLoss`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum RecoveryMode {
    /// Truncate the invalid tail, whatever follows it. A power loss legitimately
    /// leaves unflushed garbage there, and even valid-looking batches after it
    /// (pages of a later write reaching the disk before an earlier one's), so
    /// this is the default. The report says whether the tail was torn (nothing
    /// CRC-valid after its first invalid byte) or corruption followed by valid
    /// batches, and what those were.
    #[default]
    TornTail,
    /// Refuse to open, changing nothing, when the truncation would drop a
    /// CRC-valid batch: the tail is not a torn tail. The error is
    /// [`Error::Corrupt`] at the first invalid batch with
    /// [`CorruptKind::BeforeValidBatches`]. A torn tail (nothing CRC-valid after
    /// the damage) is still truncated: a flipped bit in the last batch cannot be
    /// told from a torn write of it.
    Strict,
    /// The tail as [`RecoveryMode::TornTail`], and open past lost summarized
    /// segments (RocksDB's best-efforts recovery): a CRC-valid recovery point whose
    /// closed segments are missing, shorter than their summary or not regular files
    /// is [`crate::CorruptKind::SegmentsLost`] in every other mode; here the open
    /// goes on with what is there, lists the lost ranges in
    /// [`super::RecoveryReport::lost`], and writes a fresh recovery point, so the
    /// next open does not ask again (docs/design.md section 3c).
    AcceptLoss,
}

impl std::fmt::Display for RecoveryMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RecoveryMode::TornTail => "torn-tail",
            RecoveryMode::Strict => "strict",
            RecoveryMode::AcceptLoss => "accept-loss",
        })
    }
}

/// Which kind of invalid tail recovery found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum TailKind {
    /// Nothing CRC-valid after the first invalid byte: what a crash leaves.
    TornTail,
    /// CRC-valid batches after the damage: data that was written whole is lost.
    CorruptionBeforeValidBatches,
}

/// What recovery found in the active segment's invalid tail.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct TailTruncation {
    /// Torn, or corruption followed by valid batches.
    pub kind: TailKind,
    /// The mode the open ran in.
    pub mode: RecoveryMode,
    /// The CRC-valid batches after the damage (all zero for a torn tail).
    pub valid_after: ValidAfter,
}

impl TailTruncation {
    /// Classifies a tail from what `crate::segment::salvage::valid_after` found.
    pub fn new(mode: RecoveryMode, valid_after: ValidAfter) -> Self {
        let kind = if valid_after.is_torn_tail() {
            TailKind::TornTail
        } else {
            TailKind::CorruptionBeforeValidBatches
        };
        TailTruncation {
            kind,
            mode,
            valid_after,
        }
    }

    /// `Err` (the open refuses) if the mode forbids truncating this tail. `invalid`
    /// is the scan's error for the first invalid batch.
    pub fn judge(&self, invalid: &Error) -> Result<(), Error> {
        if self.mode != RecoveryMode::Strict || self.kind == TailKind::TornTail {
            return Ok(());
        }
        let Error::Corrupt {
            path,
            position,
            kind,
        } = invalid
        else {
            return Ok(());
        };
        Err(Error::corrupt(
            path,
            *position,
            CorruptKind::BeforeValidBatches {
                damage: Box::new(kind.clone()),
                batches: self.valid_after.batches,
                records: self.valid_after.records,
                first_offset: self.valid_after.first_offset.unwrap_or(-1),
                last_offset: self.valid_after.last_offset.unwrap_or(-1),
            },
        ))
    }
}

impl std::str::FromStr for RecoveryMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "torn-tail" => Ok(RecoveryMode::TornTail),
            "strict" => Ok(RecoveryMode::Strict),
            "accept-loss" => Ok(RecoveryMode::AcceptLoss),
            other => Err(format!(
                "unknown recovery mode {other:?}: torn-tail, strict or accept-loss"
            )),
        }
    }
}

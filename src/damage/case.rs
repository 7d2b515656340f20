//! One damaged image and the verdicts every open of it shares: how an open ended
//! ([`Outcome`]), the structured error it must give, what a failed open may change,
//! and the excuses for blind damage and a reported cut.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::sweep::{self, LOG_DIR};
use crate::workload::LogView;
use seglog::error::{CorruptKind, Error};
use seglog::format::filename;
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::install::InstallCase;
use seglog::log::{LogConfig, RecoveryReport};

use super::kind::{install_paths, is_log, is_trust, FileKind, Role};
use super::plan::{batch_ranges, ordering_holds, Damage};
use super::points::Point;

/// How the open of one damaged image ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A structured error.
    Error,
    /// A recovery equal to the spec (or a reported whole-batch prefix of it).
    Recovered,
    /// Blind damage (see `plan`) the log serves without noticing.
    Undetectable,
    /// Damage in a segment the open trusted from its recovery point or marker (so it
    /// read none of its data): the open succeeds, modifies no `.log`, and the first
    /// read of the damaged bytes fails with a structured error naming the file
    /// ("found later, never silent").
    ReadError,
}

/// One damaged image to judge.
pub struct Case<'a> {
    pub config: &'a LogConfig,
    pub point: &'a Point,
    pub path: &'a Path,
    pub role: Role,
    pub kind: FileKind,
    pub damage: &'a Damage,
    pub original: &'a [u8],
    pub damaged: &'a [u8],
    /// The file's other names (hard links: a carried segment is one inode in the
    /// live or backup directory and in the temp dir). Damage to one is damage to all.
    pub aliases: &'a [PathBuf],
}

impl Case<'_> {
    /// The point's image with the damage applied.
    pub(super) fn image(&self) -> Result<SimFs, String> {
        let fs = sweep::duplicate(&self.point.image);
        fs.write_new(self.path, self.damaged)
            .map_err(|e| format!("cannot apply the damage: {e}"))?;
        Ok(fs)
    }

    /// Where the damaged file lives after recovery chose the content from `origin`.
    pub(super) fn final_path(&self, origin: Role) -> Option<PathBuf> {
        let name = self.path.file_name()?;
        (self.role == origin).then(|| Path::new(LOG_DIR).join(name))
    }
}

/// A failed open changed nothing beyond what the protocol recoveries do.
pub(super) fn check_failed_open(
    case: &Case<'_>,
    before: &BTreeMap<PathBuf, Vec<u8>>,
    after: &BTreeMap<PathBuf, Vec<u8>>,
    same_dirs: bool,
    fs: &SimFs,
) -> Result<(), String> {
    if after == before && same_dirs {
        return Ok(());
    }
    let protocol = protocol_recovered(case.image()?);
    if protocol.snapshot() == *after && protocol.snapshot_dirs() == fs.snapshot_dirs() {
        return Ok(());
    }
    Err(format!(
        "the failed open changed files or directories beyond the protocol recoveries: {}",
        changes(before, after)
    ))
}

/// `image` as the protocol recoveries (install, then retention) leave it: they
/// run before the segment scan and are documented to survive its failure, so this
/// is all a failed open may change. Their own errors are the open's to report.
pub(super) fn protocol_recovered(image: SimFs) -> SimFs {
    let live = Path::new(LOG_DIR);
    let _ = seglog::install::recover(&image, live)
        .and_then(|_| seglog::retention::recover(&image, live));
    image
}

/// The error is structured and names the damaged file.
pub(super) fn check_error(case: &Case<'_>, error: &Error) -> Result<(), String> {
    let paths = install_paths();
    match error {
        // A recovery point is evidence: one that summarizes a segment that is gone
        // (at or above the durable start) is a refusal naming that segment, lies
        // included (a forged next offset that counts a segment retention removed).
        Error::Corrupt {
            kind: CorruptKind::SegmentsLost { .. },
            ..
        } if case.kind == FileKind::TrustCheckpoint && is_trust(case.path) => Ok(()),
        Error::Corrupt { path, position, .. } => {
            let name = path.file_name().unwrap_or_default();
            let mut named = vec![path.clone()];
            if path.parent() == Some(paths.live.as_path()) {
                named.push(paths.tmp.join(name));
                named.push(paths.backup.join(name));
            }
            if !named.iter().any(|p| p == case.path) {
                return Err(format!(
                    "the error names {} instead of the damaged file: {error}",
                    path.display()
                ));
            }
            if *position > case.damaged.len() as u64 {
                return Err(format!(
                    "the error's position {position} is outside the damaged file ({} bytes): {error}",
                    case.damaged.len()
                ));
            }
            // Batches before the damaged one are intact: the error cannot be there.
            let damaged_batch = batch_ranges(case.original)
                .into_iter()
                .map(|(start, _)| start)
                .filter(|start| *start <= case.damage.change.start())
                .max();
            if let Some(floor) = damaged_batch.filter(|_| case.kind.is_log()) {
                if *position < floor {
                    return Err(format!(
                        "the error's position {position} is before the damaged batch at {floor}: {error}"
                    ));
                }
            }
            Ok(())
        }
        Error::Unsupported(_)
            if case.kind.is_log()
                || matches!(case.kind, FileKind::Manifest | FileKind::Checkpoint) =>
        {
            Ok(())
        }
        Error::Ambiguous { .. } if case.point.install_pending => Ok(()),
        other => Err(format!("not a structured error for this damage: {other}")),
    }
}

/// The content recovery kept: which directory the live dir's content came from.
pub(super) fn origin(report: &RecoveryReport) -> Role {
    match report.install.case {
        InstallCase::CommittedRollForward => Role::Temp,
        InstallCase::RolledBackFromBackup => Role::Backup,
        _ => Role::Live,
    }
}

pub(super) fn dir_of(role: Role) -> PathBuf {
    let paths = install_paths();
    match role {
        Role::Live => paths.live,
        Role::Temp => paths.tmp,
        Role::Backup => paths.backup,
        Role::Parent => paths.parent,
    }
}

/// A blind damage is excused only if it still satisfies every rule the format
/// has: for a flipped `baseOffset`, the ordering rules within the segment and
/// against the next one (a cut at a batch boundary and a flipped epoch always do).
pub(super) fn blind_holds(case: &Case<'_>, before: &BTreeMap<PathBuf, Vec<u8>>) -> bool {
    let base_of = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(filename::parse)
            .map(|(base, _)| base)
    };
    let Some(base) = base_of(case.path) else {
        return false;
    };
    let upper = before
        .keys()
        .filter(|p| p.parent() == case.path.parent() && is_log(p))
        .filter_map(|p| base_of(p))
        .filter(|b| *b > base)
        .min();
    ordering_holds(case.damaged, base, upper)
}

/// `view` is `expected` cut after a whole batch: same start, same closed segments,
/// the records of `expected` below `view.next_offset`.
pub(super) fn is_prefix(view: &LogView, expected: &LogView) -> bool {
    let n = view.segments.len();
    let records: Vec<_> = expected
        .records
        .iter()
        .filter(|r| r.offset < view.next_offset)
        .cloned()
        .collect();
    view.log_start_offset == expected.log_start_offset
        && n == expected.segments.len()
        && n > 0
        && view.segments[..n - 1] == expected.segments[..n - 1]
        && view.next_offset <= expected.next_offset
        && view.records == records
}

/// The paths that differ, for a violation message.
pub(super) fn changes(
    before: &BTreeMap<PathBuf, Vec<u8>>,
    after: &BTreeMap<PathBuf, Vec<u8>>,
) -> String {
    let mut out = Vec::new();
    for (path, bytes) in before {
        match after.get(path) {
            None => out.push(format!("removed {}", path.display())),
            Some(now) if now != bytes => out.push(format!("changed {}", path.display())),
            Some(_) => {}
        }
    }
    for path in after.keys().filter(|p| !before.contains_key(*p)) {
        out.push(format!("created {}", path.display()));
    }
    out.join(", ")
}

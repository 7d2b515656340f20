//! Every hint an open ignores is in its report. The recovery point and the
//! clean-shutdown marker are hints (`seglog::log::trust`): an open may ignore one,
//! but never in silence. A successful open whose content came from `dir` is held
//! to this:
//! * a hint file there that does not decode is named in `ignored_checkpoints`;
//! * a marker that decodes but did not vouch for the active segment
//!   (`clean_shutdown` false) is named in `ignored_checkpoints` or `rescanned`
//!   (the marker's name, or the active segment's `.log` with the reason);
//! * a recovery point that decodes and summarizes closed segments below its point
//!   that the open did not trust is named in `ignored_checkpoints`, or each such
//!   segment is in `rescanned` with the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::workload::LogView;
use seglog::format::filename;
use seglog::format::recovery_point::{self, SummaryKind};
use seglog::log::RecoveryReport;

/// Checks `report` against the hint files of `dir` in `before` (the image the open
/// ran on) and the log it served (`view`). `Err` names the silent ignore.
pub fn check_reported(
    before: &BTreeMap<PathBuf, Vec<u8>>,
    dir: &Path,
    report: &RecoveryReport,
    view: &LogView,
) -> Result<(), String> {
    let names = |name: &str| {
        report.ignored_checkpoints.iter().any(|i| i.contains(name))
            || report.rescanned.iter().any(|r| r.contains(name))
    };
    let Some((active, closed)) = view.segments.split_last() else {
        return Ok(());
    };
    let marker_name = recovery_point::CLEAN_SHUTDOWN_NAME;
    if let Some(bytes) = before.get(&dir.join(marker_name)) {
        let decoded = recovery_point::decode(SummaryKind::CleanShutdown, bytes);
        let active_log = filename::build(active.base_offset, filename::LOG_SUFFIX);
        let reported = match decoded {
            Err(_) => report
                .ignored_checkpoints
                .iter()
                .any(|i| i.contains(marker_name)),
            Ok(_) if report.clean_shutdown => true,
            Ok(_) => names(marker_name) || names(&active_log),
        };
        if !reported {
            return Err(format!(
                "the open ignored {marker_name} without a word in its report \
                 (ignored_checkpoints {:?}, rescanned {:?})",
                report.ignored_checkpoints, report.rescanned
            ));
        }
    }
    let point_name = recovery_point::RECOVERY_POINT_NAME;
    let Some(bytes) = before.get(&dir.join(point_name)) else {
        return Ok(());
    };
    let file = match recovery_point::decode(SummaryKind::RecoveryPoint, bytes) {
        Ok(file) => file,
        Err(_) if names(point_name) => return Ok(()),
        Err(e) => {
            return Err(format!(
                "the open ignored an undecodable {point_name} without a word in its report: {e:?}"
            ))
        }
    };
    let vouched: Vec<i64> = closed
        .iter()
        .map(|s| s.base_offset)
        .filter(|base| *base < file.point)
        .filter(|base| file.summaries.iter().any(|s| s.base_offset == *base))
        .collect();
    let trusted_closed = report
        .trusted_segments
        .saturating_sub(u64::from(report.clean_shutdown));
    let untrusted = (vouched.len() as u64).saturating_sub(trusted_closed);
    if untrusted == 0 || names(point_name) {
        return Ok(());
    }
    let rescanned = vouched
        .iter()
        .filter(|base| names(&filename::build(**base, filename::LOG_SUFFIX)))
        .count() as u64;
    if rescanned < untrusted {
        return Err(format!(
            "{point_name} vouches for {} closed segments, the open trusted {trusted_closed} \
             and names neither the point nor {} of them in its report \
             (ignored_checkpoints {:?}, rescanned {:?})",
            vouched.len(),
            untrusted - rescanned,
            report.ignored_checkpoints,
            report.rescanned
        ));
    }
    Ok(())
}

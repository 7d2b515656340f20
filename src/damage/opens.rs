//! Every open kind the CLI has, on every damaged image: besides the writable open
//! (`judge`), the checked open (`Log::open_checked`, what `seglog recover` runs)
//! and the read-only open at the recovery point (`Log::open_read_only`, what
//! `seglog dump` runs). Each is refused or named, never silent:
//! * a refusal is a structured error naming the damaged file (`case::check_error`)
//!   that changes nothing beyond the protocol recoveries (a read-only refusal
//!   changes nothing at all);
//! * a successful open serves what the writable open served, or a log the point
//!   allows, or a whole-batch prefix of one with the cut in its report, or a
//!   structured error at the first read of the damage;
//! * a read-only open issues no mutating call, whatever it finds.

use std::sync::Arc;

use crate::sweep::LOG_DIR;
use crate::workload::{engine, LogView};
use seglog::error::Error;
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::log::{Log, LogConfig, RecoveryReport};

use super::case::Case;

/// The open kinds the CLI has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// `Log::open_with`: trusting the recovery point and the marker (every
    /// writing command).
    Writable,
    /// `Log::open_checked`: every segment scanned (`seglog recover`).
    Checked,
    /// `Log::open_read_only`: nothing changed, trusting as a writable open does
    /// (`seglog dump`).
    ReadOnly,
}

impl Opening {
    /// Every kind, the writable open first.
    pub const ALL: [Opening; 3] = [Opening::Writable, Opening::Checked, Opening::ReadOnly];

    /// Opens the log of `fs` at `sweep::LOG_DIR` this way.
    pub fn open(
        self,
        fs: Arc<dyn FileSystem>,
        config: &LogConfig,
    ) -> seglog::Result<(Log, RecoveryReport)> {
        match self {
            Opening::Writable => Log::open_with(fs, LOG_DIR, config.clone()),
            Opening::Checked => Log::open_checked(fs, LOG_DIR, config.clone()),
            Opening::ReadOnly => Log::open_read_only(fs, LOG_DIR, config.clone()),
        }
    }
}

/// What an open of another kind gave: its refusal, or its report and what the
/// log then served (a read's error included).
pub struct Opened {
    result: Result<(RecoveryReport, Result<LogView, Error>), Error>,
}

/// Opens `fs`, `case`'s damaged image, read-only and checks that it changed
/// nothing; the caller judges the result with [`judge`] once the writable open
/// has served its log. The image is the writable open's: a read-only open leaves
/// it as it found it.
pub fn read_only(case: &Case<'_>, fs: &Arc<SimFs>) -> Result<Opened, String> {
    let ops = fs.mutating_ops();
    let result = Opening::ReadOnly
        .open(fs.clone(), case.config)
        .map(|(log, report)| (report, engine::view(&log)));
    // Nothing changes the simulated disk but a mutating call.
    if fs.mutating_ops() != ops {
        return Err("ReadOnly open: changed the directory".into());
    }
    Ok(Opened { result })
}

/// Opens a fresh copy of `case`'s damaged image checked (every segment scanned)
/// and judges it, and judges `read_only`, against what the writable open served
/// (`writable`: its view, or `None` if it refused or a read failed).
pub fn check(case: &Case<'_>, read_only: Opened, writable: Option<&LogView>) -> Result<(), String> {
    let fs = Arc::new(case.image()?);
    let before = fs.snapshot();
    let dirs_before = fs.snapshot_dirs();
    let result = Opening::Checked
        .open(fs.clone(), case.config)
        .map(|(log, report)| (report, engine::view(&log)));
    if result.is_err() {
        let after = fs.snapshot();
        let same_dirs = dirs_before == fs.snapshot_dirs();
        super::case::check_failed_open(case, &before, &after, same_dirs, &fs)
            .map_err(|d| format!("Checked open: {d}"))?;
    }
    judge(case, Opened { result }, writable).map_err(|e| format!("Checked open: {e}"))?;
    judge(case, read_only, writable).map_err(|e| format!("ReadOnly open: {e}"))
}

fn judge(case: &Case<'_>, opened: Opened, writable: Option<&LogView>) -> Result<(), String> {
    let (report, view) = match opened.result {
        Err(e) => return super::case::check_error(case, &e),
        Ok(opened) => opened,
    };
    let view = match view {
        Ok(view) => view,
        // Found at the first read of it, named.
        Err(Error::Corrupt { .. }) => return Ok(()),
        Err(e) => return Err(format!("a read failed with a non-corruption error: {e}")),
    };
    let point = case.point;
    let expected: Vec<&LogView> = std::iter::once(&point.baseline)
        .chain(&point.allowed)
        .chain(writable)
        .collect();
    if expected.contains(&&view) {
        return Ok(());
    }
    if case.damage.blind && super::case::blind_holds(case, &point.image.snapshot()) {
        // Damage the format cannot see (a base offset outside the CRC that keeps
        // the ordering rules): an open that scans the segment serves it.
        return Ok(());
    }
    let cut = report.truncated_bytes > 0 || report.truncated_tail.is_some();
    if cut && expected.iter().any(|e| super::case::is_prefix(&view, e)) {
        return Ok(());
    }
    Err(format!(
        "serves another log than the writable open without an error: {}",
        writable.unwrap_or(&point.baseline).diff(&view).join(", ")
    ))
}

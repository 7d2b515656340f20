//! Grown files: a file of ours with junk appended past what its format allows,
//! and the open held to the format's bounds.
//!
//! Every file of ours has a size its format cannot exceed, computed from the
//! directory alone: a checkpoint (log start, cleaner offset) is 18 bytes, the
//! recovery point holds at most one summary per segment (and per offset below the
//! first), the clean-shutdown marker one, an index one entry per batch or Kafka's
//! preallocated size, a `.txnindex` one entry per offset of its segment, a key
//! summary one key per record. [`plan`] grows each such file of an image
//! ([`Change::Grow`]) to its bound plus [`GROW_BYTES`]; [`judge`] opens the image,
//! reads the log (and, for the files only a cleaning reads, cleans it by each
//! policy), and counts the bytes read of the grown file ([`SimFs::count_reads`]).
//!
//! Invariants checked:
//! * no more than the bound is read of the grown file (a file larger than its
//!   format allows is never read whole);
//! * a grown derived file (recovery point, marker, cleaner-offset checkpoint,
//!   indexes, key summary, `.txnindex`) fails nothing: the open succeeds and the
//!   log reads as the undamaged image does;
//! * the grown log-start checkpoint fails the open with `Corrupt` `TooLarge`
//!   naming it, and no `.log` changes.
//!
//! The stage grows the files of each workload's end image and of that image closed
//! cleanly (so the recovery point and the marker are grown too); of the indexes,
//! only the active segment's (end image: scanned) and the first segment's (closed
//! image: trusted by the recovery point), which keeps the class to a few cases per
//! workload.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::sweep::{self, Workload, LOG_DIR};
use crate::workload::{engine, LogView};
use seglog::compaction::{CleanOptions, CompactionPolicy};
use seglog::error::{CorruptKind, Error};
use seglog::format::batch::decode_header;
use seglog::format::{checkpoint, filename, index, key_summary, recovery_point, txn_index};
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::log::{Log, LogConfig, RecoveryReport};
use seglog::panics::panic_message;

use super::case::Outcome;
use super::kind::{self, FileKind};
use super::plan::{batch_ranges, Change, Damage};
use super::points::Point;
use super::{DamageViolation, WorkloadDamageReport};

/// Bytes a grown file holds past its bound.
pub const GROW_BYTES: u64 = 4096;

/// The time the cleanings of a grown image run at (every record old enough).
const CLEAN_NOW: i64 = 1_000_000;

/// The bases of the live `.log` files of `files`, ascending.
fn live_bases(files: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<(i64, &[u8])> {
    let live = Path::new(LOG_DIR);
    files
        .iter()
        .filter(|(path, _)| path.parent() == Some(live))
        .filter_map(|(path, bytes)| {
            let name = path.file_name()?.to_str()?;
            match filename::parse(name)? {
                (base, filename::LOG_SUFFIX) => Some((base, bytes.as_slice())),
                _ => None,
            }
        })
        .collect()
}

/// The offset after the last batch of a `.log` holding `bytes` (`base` when it
/// holds none).
fn log_next_offset(base: i64, bytes: &[u8]) -> i64 {
    let Some(&(start, _)) = batch_ranges(bytes).last() else {
        return base;
    };
    let at = usize::try_from(start).unwrap_or(usize::MAX);
    bytes
        .get(at..)
        .and_then(|batch| decode_header(batch).ok())
        .map_or(base, |header| {
            header
                .base_offset
                .saturating_add(i64::from(header.last_offset_delta))
                .saturating_add(1)
        })
}

/// The most bytes the file at `path` may hold by its format, given the other files
/// of the image: at least what the engine reads before deciding. `None` for a
/// file this class does not grow (a `.log`, anything outside the live dir).
pub fn bytes_max(path: &Path, files: &BTreeMap<PathBuf, Vec<u8>>) -> Option<u64> {
    if path.parent() != Some(Path::new(LOG_DIR)) {
        return None;
    }
    let name = path.file_name()?.to_str()?;
    let bases = live_bases(files);
    if name == checkpoint::CHECKPOINT_NAME || name == checkpoint::CLEAN_POINT_NAME {
        return Some(checkpoint::CHECKPOINT_LEN as u64);
    }
    if name == recovery_point::RECOVERY_POINT_NAME {
        let bases: Vec<i64> = bases.iter().map(|(base, _)| *base).collect();
        let summaries = seglog::log::recovery_point_summaries_max(&bases);
        return Some(recovery_point::file_bytes_max(summaries));
    }
    if name == recovery_point::CLEAN_SHUTDOWN_NAME {
        return Some(recovery_point::file_bytes_max(1));
    }
    let (base, suffix) = filename::parse(name)?;
    let position = bases.iter().position(|(b, _)| *b == base)?;
    let log = bases.get(position)?.1;
    let batches = batch_ranges(log).len() as u64;
    match suffix {
        filename::INDEX_SUFFIX => Some(seglog::segment::index_bytes_max(
            batches,
            index::OFFSET_ENTRY_BYTES,
        )),
        filename::TIME_INDEX_SUFFIX => Some(seglog::segment::index_bytes_max(
            batches,
            index::TIME_ENTRY_BYTES,
        )),
        filename::TXN_INDEX_SUFFIX => {
            // Up to the next segment's base or past the last batch, whichever is later.
            let next = bases
                .get(position + 1)
                .map_or(base, |(next, _)| *next)
                .max(log_next_offset(base, log));
            let span = u64::try_from(next.saturating_sub(base)).unwrap_or(0);
            Some(span.saturating_mul(txn_index::ENTRY_BYTES as u64))
        }
        filename::KEYS_SUFFIX => Some(key_summary::bytes_max(
            log.len() / seglog::format::batch_view::RECORD_BYTES_MIN + 1,
        )),
        _ => None,
    }
}

/// The growth of a file of `len` bytes past `bytes_max`.
pub fn growth(len: u64, bytes_max: u64) -> Damage {
    let to = bytes_max.saturating_add(GROW_BYTES).max(len);
    Damage {
        label: format!("grow to {to} (bound {bytes_max})"),
        change: Change::Grow { from: len, to },
        blind: false,
    }
}

/// One planned growth: the file, the damage, the bound it is held to.
pub struct Grown {
    pub path: PathBuf,
    pub damage: Damage,
    pub bytes_max: u64,
}

/// The growths of the files of `files`; of the indexes only those of segment
/// `index_base`.
pub fn plan(files: &BTreeMap<PathBuf, Vec<u8>>, index_base: Option<i64>) -> Vec<Grown> {
    files
        .iter()
        .filter(|(path, _)| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            match filename::parse(name) {
                Some((base, filename::INDEX_SUFFIX | filename::TIME_INDEX_SUFFIX)) => {
                    Some(base) == index_base
                }
                _ => true,
            }
        })
        .filter_map(|(path, bytes)| {
            let bytes_max = bytes_max(path, files)?;
            Some(Grown {
                path: path.clone(),
                damage: growth(bytes.len() as u64, bytes_max),
                bytes_max,
            })
        })
        .collect()
}

/// True for a file only a cleaning reads.
fn cleaner_reads(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(filename::parse)
        .is_some_and(|(_, s)| s == filename::KEYS_SUFFIX || s == filename::TXN_INDEX_SUFFIX)
}

/// The `.log` files of `fs`, with their bytes.
fn logs(fs: &SimFs) -> BTreeMap<PathBuf, Vec<u8>> {
    fs.snapshot()
        .into_iter()
        .filter(|(path, _)| kind::is_log(path))
        .collect()
}

/// Opens `image` with `grown.path` grown and judges it; `Err` is a violation.
pub fn judge(
    config: &LogConfig,
    image: &SimFs,
    allowed: &[LogView],
    grown: &Grown,
) -> Result<Outcome, String> {
    let original = image
        .snapshot()
        .remove(&grown.path)
        .ok_or("the file to grow is missing")?;
    let damaged = grown
        .damage
        .change
        .apply(&original)
        .ok_or("the growth changes nothing")?;
    let fs = Arc::new(sweep::duplicate(image));
    fs.write_new(&grown.path, &damaged)
        .map_err(|e| format!("cannot grow the file: {e}"))?;
    let count = fs
        .count_reads(&grown.path)
        .ok_or("the grown file is missing")?;
    let logs_before = logs(&fs);
    let judged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        judge_open(config, &fs, allowed, grown, &logs_before)
    }))
    .unwrap_or_else(|panic| Err(format!("panicked: {}", panic_message(&*panic))));
    let read = fs.bytes_read(count);
    if read > grown.bytes_max {
        return Err(format!(
            "{read} bytes read of a file grown to {} bytes, more than the {} its format allows",
            damaged.len(),
            grown.bytes_max
        ));
    }
    judged
}

/// The open (and the read, and the cleanings) of a grown image.
fn judge_open(
    config: &LogConfig,
    fs: &Arc<SimFs>,
    allowed: &[LogView],
    grown: &Grown,
    logs_before: &BTreeMap<PathBuf, Vec<u8>>,
) -> Result<Outcome, String> {
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let authoritative =
        grown.path.file_name().and_then(|n| n.to_str()) == Some(checkpoint::CHECKPOINT_NAME);
    match Log::open_with(dyn_fs, LOG_DIR, config.clone()) {
        Err(e) => {
            if logs(fs) != *logs_before {
                return Err(format!("a failed open changed a .log file: {e}"));
            }
            match e {
                Error::Corrupt {
                    ref path,
                    kind: CorruptKind::TooLarge { .. },
                    ..
                } if authoritative && *path == grown.path => Ok(Outcome::Error),
                e => Err(format!("the open failed: {e}")),
            }
        }
        Ok(_) if authoritative => Err("the open accepted a grown log-start checkpoint".into()),
        Ok((mut log, report)) => {
            let view = engine::view(&log).map_err(|e| format!("the log does not read: {e}"))?;
            check_reported(&grown.path, &report, &log, &view)?;
            // The clean point is a hint: ignored, the log start takes its place.
            let reset = |e: &LogView| LogView {
                clean_point: view.log_start_offset,
                ..e.clone()
            };
            let is_clean_point = grown.path.file_name().and_then(|n| n.to_str())
                == Some(checkpoint::CLEAN_POINT_NAME);
            let expected = allowed.contains(&view)
                || (is_clean_point && allowed.iter().any(|e| reset(e) == view));
            if !expected {
                let diff = allowed.first().map(|e| e.diff(&view).join(", "));
                return Err(format!(
                    "the log reads otherwise than the undamaged image: {}",
                    diff.unwrap_or_default()
                ));
            }
            if cleaner_reads(&grown.path) {
                for policy in [CompactionPolicy::Seed, CompactionPolicy::Kafka] {
                    let knobs = CleanOptions {
                        policy,
                        ..CleanOptions::default()
                    };
                    log.clean(CLEAN_NOW, 1000, None, knobs)
                        .map_err(|e| format!("a {policy:?} cleaning failed: {e}"))?;
                }
            }
            Ok(Outcome::Recovered)
        }
    }
}

/// A grown file the open reads is named in its report: a checkpoint as ignored,
/// an index as rebuilt. A closed segment's index the recovery point vouches for is
/// read at the first lookup inside its segment (`seglog::segment::vouched`): one is
/// made here (a read from a record of the segment past its base offset, if it has
/// one; else no lookup ever needs the file), and the log must name the file among
/// its [`Log::rebuilt_indexes`]. (A `.txnindex` and a key summary are read later.)
fn check_reported(
    path: &Path,
    report: &RecoveryReport,
    log: &Log,
    view: &LogView,
) -> Result<(), String> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let reported = match filename::parse(name) {
        Some((base, filename::INDEX_SUFFIX | filename::TIME_INDEX_SUFFIX)) => {
            report.rebuilt_indexes.iter().any(|r| r.file == name)
                || looked_up_and_named(path, base, log, view)?
        }
        Some(_) => true,
        None => report.ignored_checkpoints.iter().any(|i| i.contains(name)),
    };
    if reported {
        Ok(())
    } else {
        Err(format!(
            "neither the open nor a lookup in its segment reports the grown {name}: {report:?}"
        ))
    }
}

/// Makes a lookup inside the segment at `base` and says whether the log names
/// `path` as rebuilt after it; true when no record of the segment needs a lookup.
fn looked_up_and_named(path: &Path, base: i64, log: &Log, view: &LogView) -> Result<bool, String> {
    let next = log
        .segments()
        .iter()
        .map(|s| s.base_offset)
        .find(|b| *b > base)
        .unwrap_or(i64::MAX);
    let Some(inside) = view
        .records
        .iter()
        .map(|r| r.offset)
        .find(|o| *o > base && *o < next)
    else {
        return Ok(true);
    };
    log.read(inside, 1)
        .map_err(|e| format!("a read from {inside} failed: {e}"))?;
    Ok(log.rebuilt_indexes().iter().any(|(p, _)| p == path))
}

/// `image` closed cleanly: the open of a copy, then its close (which writes the
/// recovery point and the clean-shutdown marker).
fn closed(config: &LogConfig, image: &SimFs) -> Result<SimFs, String> {
    let fs = Arc::new(sweep::duplicate(image));
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let (log, _) = Log::open_with(dyn_fs, LOG_DIR, config.clone())
        .map_err(|e| format!("the end image does not open: {e}"))?;
    log.close()
        .map_err(|e| format!("the end image does not close: {e}"))?;
    Ok(sweep::duplicate(&fs))
}

/// The grown class on the end point of a workload: its image as the workload left
/// it, growing the active segment's indexes, and closed cleanly, growing the first
/// segment's. Other points add nothing.
pub(super) fn damage_point_grown(
    workload: &Workload,
    point: &Point,
    report: &mut WorkloadDamageReport,
) {
    if point.name != super::points::END {
        return;
    }
    let closed_image = match closed(&workload.config, &point.image) {
        Ok(image) => image,
        Err(detail) => {
            report.violations.push(DamageViolation {
                workload: workload.name.clone(),
                point: point.name.clone(),
                file: String::new(),
                kind: FileKind::Other,
                damage: "close before growing".into(),
                detail,
            });
            return;
        }
    };
    let images = [
        ("end", &point.image, true),
        ("end closed", &closed_image, false),
    ];
    for (name, image, active) in images {
        let files = image.snapshot();
        let bases = live_bases(&files);
        let index_base = if active {
            bases.last().map(|(base, _)| *base)
        } else {
            bases.first().map(|(base, _)| *base)
        };
        for grown in plan(&files, index_base) {
            let (_, kind) = kind::classify(&grown.path, &files);
            report.grown += 1;
            report.count(
                kind,
                judge(&workload.config, image, &point.allowed, &grown),
                || format!("{name}: {} {}", grown.damage.label, grown.path.display()),
                |detail| DamageViolation {
                    workload: workload.name.clone(),
                    point: name.into(),
                    file: grown.path.display().to_string(),
                    kind,
                    damage: grown.damage.label.clone(),
                    detail,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests;

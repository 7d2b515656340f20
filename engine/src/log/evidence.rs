//! Evidence of lost data: what a CRC-valid recovery point says exists, held against
//! the files (docs/design.md section 3c).
//!
//! A recovery point the engine wrote is evidence, not a hint: every closed segment it
//! summarizes was durable, whole, before the point's rename. Only retention removes
//! closed segments, and only those wholly below the durable log start (the start
//! checkpoint, written and synced first); where no retention ever wrote one the start
//! never moved and every summarized segment counts. A counted segment whose `.log`
//! is missing, shorter than its summary, or not a regular file is data that was
//! acknowledged and is gone: no crash leaves it (model (e), `open_succeeds`; the
//! crash sweep). A file that is unreadable or impossible in itself stays a hint
//! ([`super::trust`]) and never reaches this module.
//!
//! [`lost`] is the pure policy; [`find_lost`] gathers the facts and fills in the
//! offsets a shortened segment still holds.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Loss, LostSegment, Result};
use crate::format::filename;
use crate::format::recovery_point::SegmentSummary;
use crate::fs::FileSystem;

/// What the directory holds under a summarized segment's `.log` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Nothing.
    Missing,
    /// Something other than a regular file (a directory).
    NotAFile,
    /// A regular file of this many bytes.
    Bytes(u64),
}

/// True if the durable log start `start` still counts `summary`: the segment holds
/// an offset at or above it. `None`: no retention ever moved the start.
pub fn counted(summary: &SegmentSummary, start: Option<i64>) -> bool {
    start.is_none_or(|start| summary.next_offset > start)
}

/// The loss `found` shows for `summary`, if any. A file longer than its summary is
/// not a loss (the recovery module treats it as a wrong hint and scans it).
pub fn lost(summary: &SegmentSummary, found: Found) -> Option<Loss> {
    match found {
        Found::Missing => Some(Loss::Missing),
        Found::NotAFile => Some(Loss::NotAFile),
        Found::Bytes(file_bytes) if file_bytes < summary.bytes => {
            Some(Loss::Shorter { file_bytes })
        }
        Found::Bytes(_) => None,
    }
}

/// One lost segment, and the byte position in its `.log` where the loss starts (0
/// for a file that is gone; the end of a shortened file's valid prefix).
pub type Lost = (LostSegment, u64);

/// Every counted segment of `summaries` (the recovery point's, below its point)
/// whose `.log` in `dir` contradicts its summary, ascending. Read-only. A shortened
/// segment's valid prefix is scanned to name the first offset lost: what follows it
/// (a cut batch included) is lost. `logs`: the bases whose `.log` the open's
/// listing found as a regular file, ascending; only their lengths are asked for,
/// and kept in `lengths` (by base offset) for the open's later phases.
pub fn find_lost(
    fs: &dyn FileSystem,
    dir: &Path,
    summaries: &BTreeMap<i64, SegmentSummary>,
    start: Option<i64>,
    logs: &[i64],
    index_interval_bytes: u64,
    lengths: &mut BTreeMap<i64, u64>,
) -> Result<Vec<Lost>> {
    let mut out = Vec::new();
    for summary in summaries.values().filter(|s| counted(s, start)) {
        let name = filename::build(summary.base_offset, filename::LOG_SUFFIX);
        let path = dir.join(&name);
        let found = if logs.binary_search(&summary.base_offset).is_ok() {
            let bytes = fs.len(&path).map_err(|e| Error::io(&path, e))?;
            lengths.insert(summary.base_offset, bytes);
            Found::Bytes(bytes)
        } else if fs.is_dir(&path) {
            Found::NotAFile
        } else {
            Found::Missing
        };
        let Some(loss) = lost(summary, found) else {
            continue;
        };
        let (first_offset, position) = match loss {
            Loss::Shorter { .. } => {
                let scan = crate::segment::scan::scan_segment(
                    fs,
                    dir,
                    summary.base_offset,
                    None,
                    index_interval_bytes,
                )?;
                (scan.segment.next_offset, scan.valid_bytes())
            }
            Loss::Missing | Loss::NotAFile => (summary.base_offset, 0),
        };
        // A shortened file whose batches still reach the summary's next offset has
        // lost no record: the summary's byte count is what is wrong (a hint the
        // file contradicts; the recovery scans it).
        if first_offset >= summary.next_offset {
            continue;
        }
        let lost = LostSegment {
            segment: name,
            loss,
            first_offset,
            last_offset: summary.next_offset - 1,
            bytes: summary.bytes.saturating_sub(position),
        };
        out.push((lost, position));
    }
    Ok(out)
}

/// The refusal for `lost` (not empty): [`crate::CorruptKind::SegmentsLost`] at the
/// first lost `.log`, where its loss starts.
pub fn refusal(dir: &Path, lost: Vec<Lost>) -> Error {
    let (first, position) = lost.first().expect("a refusal names at least one segment");
    let path = dir.join(&first.segment);
    let position = *position;
    Error::corrupt(
        path,
        position,
        crate::error::CorruptKind::SegmentsLost {
            lost: lost.into_iter().map(|(segment, _)| segment).collect(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(base_offset: i64, next_offset: i64, bytes: u64) -> SegmentSummary {
        SegmentSummary {
            base_offset,
            next_offset,
            bytes,
            records: 1,
            batches: 1,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            offset_index_entries: 0,
            time_index_entries: 0,
            offset_index_crc: 0,
            time_index_crc: 0,
        }
    }

    #[test]
    fn only_segments_wholly_below_the_start_may_be_gone() {
        let s = summary(10, 20, 100);
        assert!(counted(&s, None));
        assert!(counted(&s, Some(10)));
        assert!(counted(&s, Some(19)));
        assert!(!counted(&s, Some(20)));
        assert!(!counted(&s, Some(25)));
    }

    #[test]
    fn missing_shorter_and_not_a_file_are_losses_longer_is_not() {
        let s = summary(0, 5, 100);
        assert_eq!(lost(&s, Found::Missing), Some(Loss::Missing));
        assert_eq!(lost(&s, Found::NotAFile), Some(Loss::NotAFile));
        assert_eq!(
            lost(&s, Found::Bytes(99)),
            Some(Loss::Shorter { file_bytes: 99 })
        );
        assert_eq!(
            lost(&s, Found::Bytes(0)),
            Some(Loss::Shorter { file_bytes: 0 })
        );
        assert_eq!(lost(&s, Found::Bytes(100)), None);
        assert_eq!(lost(&s, Found::Bytes(101)), None);
    }
}

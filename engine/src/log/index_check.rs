//! Recovery phase 4: each segment's `.index` and `.timeindex` judged by Kafka's
//! rules (`crate::segment::validate`), not compared byte for byte with a rebuild.
//!
//! A valid file is kept, and its entries become the segment's in-memory index (so
//! lookups and later appends follow the file on disk). An invalid or missing one is
//! rewritten from the `.log` as Kafka's `LogSegment.recover` builds it (the
//! interval rule plus the final time entry), and the report says which rule it
//! broke, at which entry. Read-only: the rewrites are returned, not done.

#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::index::{
    encode_offset_entries, encode_time_entries, OFFSET_ENTRY_BYTES, TIME_ENTRY_BYTES,
};
use crate::fs::FileSystem;
use crate::segment::scan::ScanOutcome;
use crate::segment::validate::{
    index_bytes_max, validate_offset_index, validate_time_index, IndexRule, Invalid, Verdict,
};

use super::report::RebuildReason;

/// An index file that must be rewritten, with its bytes.
#[derive(Debug, Clone)]
pub struct IndexRewrite {
    /// The index file.
    pub path: std::path::PathBuf,
    /// Its correct content, rebuilt from the `.log`.
    pub bytes: Vec<u8>,
    /// Why it is rewritten.
    pub reason: RebuildReason,
    /// Of a closed segment (fsynced: the recovery point will vouch for it); the
    /// active segment's indexes are fsynced by its next roll or close, and a crash
    /// before then rebuilds them again (model (e)).
    pub closed: bool,
    /// The Kafka rule the file broke (`missing` if there was none).
    pub rule: crate::segment::validate::IndexRule,
    /// Where and how (the entry's byte position in the index file).
    pub detail: String,
}

impl IndexRewrite {
    /// The report's line for this rewrite.
    pub(super) fn report(&self) -> super::report::RebuiltIndex {
        super::report::RebuiltIndex {
            file: file_name(&self.path),
            reason: self.reason,
            rule: self.rule,
            detail: self.detail.clone(),
        }
    }
}

/// What phase 4 decided: the files to rewrite, and the valid files kept although
/// they differ from the rebuild (named for the report).
#[derive(Debug, Default)]
pub struct IndexCheck {
    pub rewrites: Vec<IndexRewrite>,
    pub kept_differing: Vec<String>,
}

/// Judges every index file of `scans`; adopts the entries of the valid ones.
/// Each scan's segment must hold the computed (rebuild) index on entry.
pub fn check_indexes(fs: &dyn FileSystem, scans: &mut [ScanOutcome]) -> Result<IndexCheck> {
    let mut check = IndexCheck::default();
    for scan in scans.iter_mut().filter(|scan| !scan.trusted) {
        let segment = &mut scan.segment;
        let rebuilt_offsets = encode_offset_entries(segment.index.get_mut().offset_entries());
        let rebuilt_times = encode_time_entries(segment.index.get_mut().time_entries());
        let mut adopted_offsets = None;
        let mut adopted_times = None;
        let offsets_max = index_bytes_max(segment.batches, OFFSET_ENTRY_BYTES);
        match read_index(fs, &segment.paths.index, offsets_max)? {
            None => check
                .rewrites
                .push(rewrite_missing(&segment.paths.index, rebuilt_offsets)),
            Some(Err(found)) => check.rewrites.push(rewrite_invalid(
                &segment.paths.index,
                rebuilt_offsets,
                found,
            )),
            Some(Ok(bytes)) => match validate_offset_index(&bytes, &scan.batches) {
                Verdict::Valid(entries) => {
                    if bytes != rebuilt_offsets {
                        check.kept_differing.push(file_name(&segment.paths.index));
                    }
                    adopted_offsets = Some(entries);
                }
                Verdict::Invalid(found) => check.rewrites.push(rewrite_invalid(
                    &segment.paths.index,
                    rebuilt_offsets,
                    found,
                )),
            },
        }
        let times_max = index_bytes_max(segment.batches, TIME_ENTRY_BYTES);
        match read_index(fs, &segment.paths.time_index, times_max)? {
            None => check
                .rewrites
                .push(rewrite_missing(&segment.paths.time_index, rebuilt_times)),
            Some(Err(found)) => check.rewrites.push(rewrite_invalid(
                &segment.paths.time_index,
                rebuilt_times,
                found,
            )),
            Some(Ok(bytes)) => match validate_time_index(&bytes, &scan.batches) {
                Verdict::Valid(entries) => {
                    if bytes != rebuilt_times && !is_append_path_shape(&bytes, &rebuilt_times) {
                        check
                            .kept_differing
                            .push(file_name(&segment.paths.time_index));
                    }
                    adopted_times = Some(entries);
                }
                Verdict::Invalid(found) => check.rewrites.push(rewrite_invalid(
                    &segment.paths.time_index,
                    rebuilt_times,
                    found,
                )),
            },
        }
        segment
            .index
            .get_mut()
            .adopt(adopted_offsets, adopted_times);
    }
    Ok(check)
}

/// The active segment's time index as the append path leaves it before close: the
/// rebuild without its final (close-time) entry. Not worth reporting.
fn is_append_path_shape(bytes: &[u8], rebuilt: &[u8]) -> bool {
    let entry = crate::format::index::TIME_ENTRY_BYTES;
    rebuilt.len() >= entry && rebuilt.get(..rebuilt.len() - entry) == Some(bytes)
}

/// The bytes of the index file at `path`: `None` when missing, `Err` (with the
/// verdict) when larger than `bytes_max`, which is not read.
fn read_index(
    fs: &dyn FileSystem,
    path: &Path,
    bytes_max: u64,
) -> Result<Option<std::result::Result<Vec<u8>, Invalid>>> {
    if !fs.exists(path) {
        return Ok(None);
    }
    match crate::fs::read_bounded(fs, path, bytes_max).map_err(|e| Error::io(path, e))? {
        Some(bytes) => Ok(Some(Ok(bytes))),
        None => {
            let bytes = fs.len(path).map_err(|e| Error::io(path, e))?;
            Ok(Some(Err(Invalid {
                rule: IndexRule::TooLarge,
                position: bytes_max,
                detail: format!(
                    "{bytes} bytes, more than the {bytes_max} a valid index of this segment can hold: not read"
                ),
            })))
        }
    }
}

fn rewrite_missing(path: &Path, bytes: Vec<u8>) -> IndexRewrite {
    IndexRewrite {
        path: path.to_path_buf(),
        bytes,
        reason: RebuildReason::Missing,
        closed: false,
        rule: IndexRule::Missing,
        detail: "the file does not exist".into(),
    }
}

fn rewrite_invalid(path: &Path, bytes: Vec<u8>, found: Invalid) -> IndexRewrite {
    let reason = match found.rule {
        IndexRule::Missing => RebuildReason::Missing,
        IndexRule::PartialEntry => RebuildReason::Short,
        _ => RebuildReason::Inconsistent,
    };
    IndexRewrite {
        path: path.to_path_buf(),
        bytes,
        reason,
        closed: false,
        rule: found.rule,
        detail: format!("at byte {}: {}", found.position, found.detail),
    }
}

pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use crate::format::index::TIME_ENTRY_BYTES;
    use crate::format::recovery_point::{CLEAN_SHUTDOWN_NAME, RECOVERY_POINT_NAME};
    use crate::fs::sim::SimFs;
    use crate::fs::FileSystem;
    use crate::log::{Log, LogConfig};
    use crate::NewRecord;

    /// The report names a valid index kept although it differs from the rebuild
    /// (here a closed segment's time index holding only its first entry), and not
    /// the active segment's time index as the append path leaves it (the rebuild
    /// without its close-time entry).
    #[test]
    fn kept_indexes_names_the_differing_and_not_the_append_path_shape() {
        let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
        let dir = Path::new("/log");
        let config = LogConfig {
            index_interval_bytes: 64,
            ..LogConfig::default()
        };
        let (mut log, _) = Log::open_with(fs.clone(), dir, config.clone()).unwrap();
        for round in 0..2 {
            for ts in 0..6 {
                let value = vec![b'v'; 80];
                let record = NewRecord::new(None, Some(value), 100 * round + ts);
                log.append(std::slice::from_ref(&record)).unwrap();
            }
            if round == 0 {
                log.roll().unwrap();
            }
        }
        log.close().unwrap();
        // Nothing vouches for any segment: the open scans and judges every index.
        for name in [RECOVERY_POINT_NAME, CLEAN_SHUTDOWN_NAME] {
            fs.remove_file(&dir.join(name)).unwrap();
        }
        let closed = dir.join("00000000000000000000.timeindex");
        let active = dir.join("00000000000000000006.timeindex");
        let times = fs.read_all(&closed).unwrap();
        assert!(times.len() >= 2 * TIME_ENTRY_BYTES, "{} bytes", times.len());
        fs.write_new(&closed, &times[..TIME_ENTRY_BYTES]).unwrap();
        let active_times = fs.read_all(&active).unwrap();
        assert!(active_times.len() >= 2 * TIME_ENTRY_BYTES);
        fs.write_new(
            &active,
            &active_times[..active_times.len() - TIME_ENTRY_BYTES],
        )
        .unwrap();
        let (_, report) = Log::open_with(fs.clone(), dir, config).unwrap();
        assert!(report.rebuilt_indexes.is_empty(), "{report:?}");
        assert_eq!(
            report.kept_indexes,
            vec!["00000000000000000000.timeindex".to_string()],
            "{report:?}"
        );
    }
}

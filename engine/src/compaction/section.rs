//! The section of the log a pass cleans: the clean point
//! (`cleaner-offset.checkpoint`), where the dirty section starts, and the min-lag
//! rule ([`too_young`], [`first_uncleanable`]) and the last stable offset
//! ([`stable_bound`]), where the cleanable section ends.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::checkpoint;
use crate::fs::FileSystem;

pub use super::rules::txn::stable_bound;

/// The clean point of `dir`: its `cleaner-offset.checkpoint`, or the log start when
/// there is none, and never below the log start (retention moves the start past
/// it). The file is a hint a pass rebuilds, so one that is ignored (see
/// [`judge_clean_point`]) gives the log start: the next pass cleans from there and
/// writes a fresh one.
pub fn read_clean_point(
    fs: &dyn FileSystem,
    dir: &Path,
    log_start_offset: i64,
    active_base: i64,
) -> Result<i64> {
    Ok(judge_clean_point(fs, dir, log_start_offset, active_base)?.0)
}

/// [`read_clean_point`], and why the file was ignored when it was: it does not
/// decode (damaged, a bad size, another version), or its clean point is past the
/// active segment's base, which no pass writes. IO errors are errors.
pub fn judge_clean_point(
    fs: &dyn FileSystem,
    dir: &Path,
    log_start_offset: i64,
    active_base: i64,
) -> Result<(i64, Option<String>)> {
    let path = dir.join(checkpoint::CLEAN_POINT_NAME);
    if !fs.exists(&path) {
        return Ok((log_start_offset, None));
    }
    let bytes = crate::fs::read_bounded(fs, &path, checkpoint::CHECKPOINT_LEN as u64)
        .map_err(|e| Error::io(&path, e))?;
    let Some(bytes) = bytes else {
        let why = format!(
            "{}: larger than the {} bytes of its format: ignored",
            path.display(),
            checkpoint::CHECKPOINT_LEN
        );
        return Ok((log_start_offset, Some(why)));
    };
    let clean_point = match checkpoint::decode_clean_point(&bytes) {
        Ok(clean_point) => clean_point,
        Err(e) => {
            return Ok((
                log_start_offset,
                Some(format!("{}: ignored", e.at(&path, 0))),
            ))
        }
    };
    if clean_point > active_base {
        let why = format!(
            "{}: clean point {clean_point} is past the active segment's base {active_base}: ignored",
            path.display()
        );
        return Ok((log_start_offset, Some(why)));
    }
    Ok((clean_point.max(log_start_offset), None))
}

/// The open's read-only check of the clean point file (a recovery phase): a file
/// [`judge_clean_point`] ignores is reported in `ignored_checkpoints`, never a
/// reason to refuse the open. `bases` are the segment files found, ascending.
pub fn check_clean_point(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    ignored_checkpoints: &mut Vec<String>,
) -> Result<()> {
    if let (Some(&start), Some(&active)) = (bases.first(), bases.last()) {
        if let (_, Some(why)) = judge_clean_point(fs, dir, start, active)? {
            ignored_checkpoints.push(why);
        }
    }
    Ok(())
}

/// The min-lag rule (Kafka's `min.compaction.lag.ms`), the one predicate the
/// seed map, the kafka pass and `Log::cleanable` share: a closed segment that ends
/// past the clean point (`next_offset > clean_point`) and holds a timestamp newer
/// than `now - min_compaction_lag_ms` is too young to clean, and with it every later
/// segment. A lag of 0 holds nothing back.
pub fn too_young(
    next_offset: i64,
    max_timestamp: i64,
    clean_point: i64,
    now: i64,
    min_compaction_lag_ms: i64,
) -> bool {
    min_compaction_lag_ms > 0
        && next_offset > clean_point
        && max_timestamp > now.saturating_sub(min_compaction_lag_ms)
}

/// Kafka's first uncleanable offset: the active segment's base, or with a lag the
/// base of the first closed segment [`too_young`] to clean. `closed`: (base, next
/// offset, max timestamp), ascending.
pub fn first_uncleanable(
    closed: &[(i64, i64, i64)],
    active_base: i64,
    clean_point: i64,
    now: i64,
    min_compaction_lag_ms: i64,
) -> i64 {
    closed
        .iter()
        .find(|&&(_, next, max_ts)| {
            too_young(next, max_ts, clean_point, now, min_compaction_lag_ms)
        })
        .map_or(active_base, |&(base, _, _)| base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lag_holds_back_the_first_uncleanable_offset() {
        // (base, next, max ts): [0,3) ts 5, [3,6) ts 50, active at 6.
        let closed = [(0, 3, 5), (3, 6, 50)];
        assert_eq!(first_uncleanable(&closed, 6, 0, 60, 0), 6);
        assert_eq!(first_uncleanable(&closed, 6, 0, 60, 20), 3);
        assert_eq!(first_uncleanable(&closed, 6, 0, 100, 20), 6);
    }

    #[test]
    fn the_last_stable_offset_holds_back_its_segment() {
        let bases = [0, 3, 6];
        assert_eq!(stable_bound(6, 1, &bases), 0);
        assert_eq!(stable_bound(6, 3, &bases), 3);
        assert_eq!(stable_bound(6, 5, &bases), 3);
        assert_eq!(stable_bound(6, 6, &bases), 6);
        assert_eq!(stable_bound(3, 4, &bases), 3, "the lag's bound is lower");
    }
}

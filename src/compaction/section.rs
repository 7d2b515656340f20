//! The section of the log a pass cleans, as the directory describes it: the clean
//! point (`cleaner-offset.checkpoint`), where the dirty section starts.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::checkpoint;
use crate::fs::FileSystem;

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

//! The disk images the damage stage starts from: each workload's end state, and the
//! first crash point of every distinct protocol state (temp dir, manifest, backup,
//! checkpoint temp file, segments left below the checkpoint) the workload passes
//! through, reached by crashing before every file-system operation as the sweep does.

use std::path::Path;
use std::sync::Arc;

use crate::sweep::{self, Allowed, Workload, LOG_DIR, PARENT_DIR};
use crate::workload::engine;
use crate::workload::LogView;
use seglog::format::{checkpoint, filename};
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::log::Log;

/// The name of the end point.
pub const END: &str = "end";

/// One undamaged image and what a recovery of it may give.
#[derive(Debug)]
pub struct Point {
    /// `end` or `crash before fs op K`.
    pub name: String,
    pub image: SimFs,
    /// The view an open of the undamaged image gives (checked against the spec).
    pub baseline: LogView,
    /// Every view the spec allows at this point (the baseline among them): what a
    /// recovery that rolls an install back because its temp dir is damaged may give.
    pub allowed: Vec<LogView>,
    /// A temp dir, backup or manifest exists next to the log: `Ambiguous` is a
    /// possible answer of recovery.
    pub install_pending: bool,
    /// What a cleaning of the undamaged image by each policy gives (filled by the
    /// judge on first use: only the points with a key summary need it).
    pub cleaned: std::sync::OnceLock<Vec<Result<LogView, String>>>,
}

/// The protocol state of an image: the sibling names next to the log, a checkpoint
/// temp file, and whether retention recovery has segments to remove. Empty for a
/// plain log.
fn shape(fs: &SimFs) -> Vec<String> {
    let live = Path::new(LOG_DIR);
    let mut out: Vec<String> = fs
        .list_dir(Path::new(PARENT_DIR))
        .unwrap_or_default()
        .into_iter()
        .filter(|n| Some(n.as_str()) != live.file_name().and_then(|s| s.to_str()))
        .collect();
    if !fs.exists(live) {
        out.push("no live dir".into());
    }
    if fs.exists(&live.join(checkpoint::CHECKPOINT_TMP_NAME)) {
        out.push(checkpoint::CHECKPOINT_TMP_NAME.into());
    }
    let bases: Vec<i64> = fs
        .list_dir(live)
        .unwrap_or_default()
        .iter()
        .filter_map(|n| filename::parse(n))
        .filter(|(_, suffix)| *suffix == filename::LOG_SUFFIX)
        .map(|(base, _)| base)
        .collect();
    if seglog::retention::wholly_below(fs, live, &bases).is_ok_and(|b| !b.is_empty()) {
        out.push("segments below the checkpoint".into());
    }
    out
}

/// The view an open of a copy of `image` gives.
fn baseline(workload: &Workload, image: &SimFs) -> Result<LogView, String> {
    let fs: Arc<dyn FileSystem> = Arc::new(sweep::duplicate(image));
    let (log, _) = Log::open_with(fs, LOG_DIR, workload.config.clone())
        .map_err(|e| format!("the undamaged image does not open: {e}"))?;
    engine::view(&log).map_err(|e| format!("the undamaged image does not read: {e}"))
}

fn point(
    workload: &Workload,
    name: String,
    image: SimFs,
    allowed: &Allowed,
) -> Result<Point, String> {
    let baseline = baseline(workload, &image)?;
    if let Some(diff) = allowed.mismatch(&baseline) {
        return Err(format!(
            "{name}: the undamaged image recovers wrongly: {diff}"
        ));
    }
    let install_pending = !shape(&image).is_empty();
    Ok(Point {
        name,
        image,
        baseline,
        allowed: allowed.views().iter().map(|(_, v)| v.clone()).collect(),
        install_pending,
        cleaned: std::sync::OnceLock::new(),
    })
}

/// The points of `workload`: for every protocol state each operation passes
/// through, its first and its last crash point (the first finds files just created,
/// the last finds them complete), at most `protocol_points` in all; then the end.
pub fn points(workload: &Workload, protocol_points: usize) -> Result<Vec<Point>, String> {
    let states = Allowed::states(workload);
    let total = sweep::count_operations(workload)?;
    // (interrupted op, shape) -> the first and the last crash point, in order found.
    type Key = (Option<usize>, Vec<String>);
    let mut found: Vec<(Key, Vec<(u64, SimFs)>)> = Vec::new();
    for k in 0..total {
        let fs = Arc::new(SimFs::new());
        fs.set_crash_before(k);
        let Some(interrupted) = sweep::run_until_crash(workload, &fs)? else {
            continue;
        };
        let image = sweep::duplicate(&fs);
        let shape = shape(&image);
        if image.snapshot().is_empty() || shape.is_empty() {
            continue;
        }
        let key = (interrupted, shape);
        match found.iter_mut().find(|(known, _)| *known == key) {
            Some((_, images)) => {
                images.truncate(1);
                images.push((k, image));
            }
            None => found.push((key, vec![(k, image)])),
        }
    }
    let mut out = Vec::new();
    for ((interrupted, _), images) in found {
        let allowed = states.allowed_after_crash(workload, interrupted);
        for (k, image) in images {
            if out.len() >= protocol_points {
                break;
            }
            out.push(point(
                workload,
                format!("crash before fs op {k}"),
                image,
                &allowed,
            )?);
        }
    }
    out.push(end_with(workload, &states)?);
    Ok(out)
}

/// The end point of `workload` alone.
#[cfg(test)]
pub fn end(workload: &Workload) -> Result<Point, String> {
    end_with(workload, &Allowed::states(workload))
}

/// The end point: the image an uninterrupted run leaves.
fn end_with(workload: &Workload, states: &crate::sweep::States) -> Result<Point, String> {
    let fs = Arc::new(SimFs::new());
    sweep::run_to_end(workload, &fs)?;
    let image = sweep::duplicate(&fs);
    point(
        workload,
        END.into(),
        image,
        &states.exactly(workload.ops.len()),
    )
}

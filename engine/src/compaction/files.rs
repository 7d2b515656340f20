//! The file steps every build shares: a written file made durable (behind its
//! fail point, so the crash sweep can stop a build at each), a carried file
//! hard-linked from the live directory.

use std::path::Path;

use crate::error::{Error, Result};
use crate::fail_point;
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint as fp;
use crate::fs::FileSystem;

/// Syncs a file the build wrote into the temp dir.
pub(super) fn build_sync_file(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    fail_point!(fp::COMPACTION_BUILD_SYNC_FILE);
    fs.sync_file(path).map_err(|e| Error::io(path, e))
}

/// Install step 1 for a carried file: `to` becomes a second name of `from`.
pub(super) fn write_link(fs: &dyn FileSystem, from: &Path, to: &Path) -> Result<()> {
    fail_point!(fp::COMPACTION_BUILD_LINK_CARRIED);
    fs.hard_link(from, to).map_err(|e| Error::io(to, e))
}

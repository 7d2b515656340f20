//! Key-based compaction as one flow ([`build`](mod@build)): the section, a pass per policy
//! ([`pass`]) over the one reader, the one map ([`map`]), the one planner and the
//! pure rule sets ([`rules`]: keep/drop per record and batch, grouping,
//! transactions, markers, empty batches), the one writer, and the finish that
//! leaves the new directory for [`crate::install`]. The modules import each other in one direction (docs/design.md
//! section 6 has the layers; `tests/module_graph/` holds them to it); the decoded
//! reference compactors of the unit tests (`reference`) are what the passes that
//! run are held to.
//!
//! Semantics: docs/design.md section 1; map memory and collisions: section 6.

pub mod bitmap;
pub mod build;
pub mod carry;
pub mod cleanable;
pub mod compressed;
mod files;
pub(crate) mod finish;
mod handover;
pub mod headers;
pub mod map;
pub mod options;
pub mod output;
pub mod pass;
mod plan;
mod read;
#[cfg(test)]
mod reference;
mod reseal;
pub mod rewrite;
pub mod rules;
mod runs;
pub mod section;
pub mod snapshot;
pub mod source;
pub mod view;
mod walker;
mod writer;

use std::path::Path;

use crate::error::Result;
use crate::fs::FileSystem;

pub use build::{build, build_indexed, build_with};
pub use options::{
    Built, CleanOptions, CompactOptions, CompactionPolicy, CompactionReport,
    PRODUCER_ID_EXPIRATION_MS_DEFAULT,
};
pub use rules::seed::{Decision, Horizon};
#[cfg(any(test, feature = "test-variants"))]
pub use snapshot::CleanVariant;
pub use snapshot::{CleanBuild, CleanSnapshot, Swapped};

/// Compacts the log directory `dir` and installs the result (steps 1 to 6).
/// `None` when there is no closed segment. The directory's segment files must be
/// durable (flush the log first) and no `Log` may have it open while this runs.
pub fn compact_dir(
    fs: &dyn FileSystem,
    dir: &Path,
    options: CompactOptions,
) -> Result<Option<CompactionReport>> {
    let Some(built) = build::build(fs, dir, options)? else {
        return Ok(None);
    };
    crate::install::install(fs, dir, &built.manifest)?;
    Ok(Some(built.report))
}

/// [`compact_dir`] with a chosen (possibly broken) install protocol. Test builds only.
#[cfg(any(test, feature = "test-variants"))]
pub fn compact_dir_with(
    fs: &dyn FileSystem,
    dir: &Path,
    options: CompactOptions,
    variant: crate::install::InstallVariant,
) -> Result<Option<CompactionReport>> {
    let Some(built) = build::build(fs, dir, options)? else {
        return Ok(None);
    };
    crate::install::install_with(fs, dir, &built.manifest, variant)?;
    Ok(Some(built.report))
}

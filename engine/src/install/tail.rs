//! Step a of a concurrent cleaning's swap (docs/design.md section 6): the *tail*,
//! every segment at or past the snapshot's active base (the then-active segment,
//! any rolled since, the current active one), is hard-linked from `D` into the
//! built temp dir under the append lock, and the manifest lists its `.log` files as
//! they are at that moment (the lock holds them still). The cost is bounded by the
//! tail (normally 1-2 segments), not by the log.

use crate::error::{Error, Result};
use crate::fail_point;
use crate::format::filename::{
    self, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX,
};
use crate::format::manifest::{Manifest, ManifestFile};
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint as fp;
use crate::fs::FileSystem;

use super::InstallPaths;

/// Hard-links each tail segment's `.log` and (when present) its index files
/// (`.index`, `.timeindex`, `.txnindex`) into
/// the temp dir ([`sync_tmp`] makes the entries durable). The links share the
/// inodes: the active segment's later appends land in the new `D` once the swap
/// renamed it.
pub fn link(fs: &dyn FileSystem, paths: &InstallPaths, tail_bases: &[i64]) -> Result<()> {
    assert!(!tail_bases.is_empty(), "the tail holds the active segment");
    assert!(tail_bases.windows(2).all(|w| w[0] < w[1]));
    for &base in tail_bases {
        for suffix in [
            LOG_SUFFIX,
            INDEX_SUFFIX,
            TIME_INDEX_SUFFIX,
            TXN_INDEX_SUFFIX,
        ] {
            let name = filename::build(base, suffix);
            let from = paths.live.join(&name);
            if suffix != LOG_SUFFIX && !fs.exists(&from) {
                // Derived: an open rebuilds a missing one.
                continue;
            }
            let to = paths.tmp.join(&name);
            assert!(!fs.exists(&to), "the build leaves the tail to the swap");
            fail_point!(fp::INSTALL_TAIL_LINK);
            fs.hard_link(&from, &to).map_err(|e| Error::io(&to, e))?;
        }
    }
    Ok(())
}

/// Syncs the temp dir: the links' (and the recovery point's) entries are durable
/// before the manifest names them.
pub fn sync_tmp(fs: &dyn FileSystem, paths: &InstallPaths) -> Result<()> {
    fail_point!(fp::INSTALL_TAIL_SYNC_TMP);
    fs.sync_dir(&paths.tmp)
        .map_err(|e| Error::io(&paths.tmp, e))
}

/// Adds the tail's `.log` files (size and CRC-32C as they are now) to `manifest`
/// and sets its `next_offset`.
pub fn complete_manifest(
    fs: &dyn FileSystem,
    paths: &InstallPaths,
    manifest: &mut Manifest,
    tail_bases: &[i64],
    next_offset: i64,
) -> Result<()> {
    for &base in tail_bases {
        let name = filename::build(base, LOG_SUFFIX);
        let path = paths.tmp.join(&name);
        let bytes = fs.read_all(&path).map_err(|e| Error::io(&path, e))?;
        assert!(
            !manifest.files.iter().any(|f| f.name == name),
            "a tail segment is not built"
        );
        manifest.files.push(ManifestFile {
            name,
            bytes: bytes.len() as u64,
            crc32c: crate::format::crc::crc32c(&bytes),
        });
    }
    manifest.files.sort();
    if next_offset < manifest.next_offset {
        // The built segments hold offsets the log never assigned: a base offset
        // (outside the CRC) of a segment the build read was damaged.
        let last = tail_bases.last().copied().unwrap_or(next_offset);
        return Err(Error::corrupt(
            paths.live.join(filename::build(last, LOG_SUFFIX)),
            0,
            crate::error::CorruptKind::PastSegmentEnd {
                offset: manifest.next_offset - 1,
                end: next_offset,
            },
        ));
    }
    manifest.next_offset = next_offset;
    Ok(())
}

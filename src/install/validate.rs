//! Does a directory hold exactly what a manifest describes?
//! Exactly the listed files (no more, no fewer), each with the listed size and CRC-32C.
//!
//! Derived files ([`is_derived`]: index files and the recovery point) are neither
//! listed nor compared: the compaction writes and syncs them in the temp dir with
//! the rest, but each is checked where it is used (the recovery point by its own
//! checksum, each index file by the checksum the recovery point holds of it), and
//! a damaged one is rebuilt or ignored by the open, never trusted. Damage to one
//! must not make new content look like no content (derived data is never an error).

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::manifest::{Manifest, ManifestFile};
use crate::fs::FileSystem;

/// Files an open rebuilds or ignores when they are damaged, so validation leaves
/// them out: a segment's `.index`, `.timeindex`, `.txnindex` and `.keys` (a key summary the
/// cleaner checks against its segment before trusting it), and the recovery point.
pub fn is_derived(name: &str) -> bool {
    use crate::format::filename::{
        self, INDEX_SUFFIX, KEYS_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX,
    };
    name == crate::format::recovery_point::RECOVERY_POINT_NAME
        || matches!(
            filename::parse(name),
            Some((_, suffix)) if suffix == INDEX_SUFFIX || suffix == TIME_INDEX_SUFFIX
                || suffix == KEYS_SUFFIX || suffix == TXN_INDEX_SUFFIX
        )
}

/// The names in `dir` validation compares (every name but the derived ones).
fn compared_names(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<String>> {
    let mut names = fs.list_dir(dir).map_err(|e| Error::io(dir, e))?;
    names.retain(|n| !is_derived(n));
    Ok(names)
}

/// The manifest entries of every file in `dir` but the derived ones, sorted by name.
pub fn fingerprint(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<ManifestFile>> {
    let names = compared_names(fs, dir)?;
    let mut files = Vec::with_capacity(names.len());
    for name in names {
        let path = dir.join(&name);
        let bytes = fs.read_all(&path).map_err(|e| Error::io(&path, e))?;
        files.push(ManifestFile {
            name,
            bytes: bytes.len() as u64,
            crc32c: crate::format::crc::crc32c(&bytes),
        });
    }
    files.sort();
    Ok(files)
}

/// True if `dir` is a directory holding exactly `manifest.files` (besides derived files).
pub fn matches(fs: &dyn FileSystem, dir: &Path, manifest: &Manifest) -> Result<bool> {
    if !fs.is_dir(dir) {
        return Ok(false);
    }
    let names = compared_names(fs, dir)?;
    let mut expected: Vec<&str> = manifest.files.iter().map(|f| f.name.as_str()).collect();
    expected.sort_unstable();
    if names.len() != expected.len() || names.iter().zip(&expected).any(|(a, b)| a != b) {
        return Ok(false);
    }
    for file in &manifest.files {
        let path = dir.join(&file.name);
        if fs.is_dir(&path) || fs.len(&path).map_err(|e| Error::io(&path, e))? != file.bytes {
            return Ok(false);
        }
    }
    for file in &manifest.files {
        let path = dir.join(&file.name);
        let bytes = fs.read_all(&path).map_err(|e| Error::io(&path, e))?;
        if crate::format::crc::crc32c(&bytes) != file.crc32c {
            return Ok(false);
        }
    }
    Ok(true)
}

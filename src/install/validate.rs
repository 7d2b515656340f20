//! Does a directory hold exactly what a manifest describes?
//! Exactly the listed files (no more, no fewer), each with the listed size and CRC-32C.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::manifest::{Manifest, ManifestFile};
use crate::fs::FileSystem;

/// The manifest entries of every file in `dir`, sorted by name.
pub fn fingerprint(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<ManifestFile>> {
    let names = fs.list_dir(dir).map_err(|e| Error::io(dir, e))?;
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

/// True if `dir` is a directory holding exactly `manifest.files`.
pub fn matches(fs: &dyn FileSystem, dir: &Path, manifest: &Manifest) -> Result<bool> {
    if !fs.is_dir(dir) {
        return Ok(false);
    }
    let names = fs.list_dir(dir).map_err(|e| Error::io(dir, e))?;
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

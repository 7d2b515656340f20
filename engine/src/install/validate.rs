//! Does a directory hold exactly what a manifest describes?
//! Exactly the listed files (no more, no fewer), each with the listed size and CRC-32C,
//! and ([`check_next_offset`]) segments that end where the manifest says the log ends.
//!
//! Derived files ([`is_derived`]: index files and the recovery point) are neither
//! listed nor compared: the compaction writes and syncs them in the temp dir with
//! the rest, but each is checked where it is used (the recovery point by its own
//! checksum, each index file by the checksum the recovery point holds of it), and
//! a damaged one is rebuilt or ignored by the open, never trusted. Damage to one
//! must not make new content look like no content (derived data is never an error).

use std::path::Path;

use crate::error::{CorruptKind, Error, Result};
use crate::format::manifest::Manifest;
#[cfg(test)]
use crate::format::manifest::ManifestFile;
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
#[cfg(test)]
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

/// Byte position of `next_offset` in the manifest (docs/design.md section 6).
const NEXT_OFFSET_POSITION: u64 = 14;

/// For a directory that [`matches()`] `manifest`: its last `.log` ends at the
/// manifest's `next_offset` (the offset after its last batch, or its base offset
/// when it holds none), or the manifest is `Corrupt` at that field. A forged
/// manifest (a valid checksum over an impossible next offset) would otherwise roll
/// a directory forward into a log whose next append reuses or skips offsets. The
/// last segment's headers are walked (its bytes were just checked against the
/// manifest's CRC); a header that does not decode is `Corrupt` in that segment.
pub fn check_next_offset(
    fs: &dyn FileSystem,
    dir: &Path,
    manifest: &Manifest,
    manifest_path: &Path,
) -> Result<()> {
    use crate::format::{batch, filename};
    let last = manifest
        .files
        .iter()
        .filter_map(|f| filename::parse(&f.name).map(|(base, suffix)| (base, suffix, f)))
        .filter(|(_, suffix, _)| *suffix == filename::LOG_SUFFIX)
        .max_by_key(|(base, _, _)| *base);
    let Some((base, _, file)) = last else {
        return Ok(()); // no segment listed: nothing ends anywhere (validated elsewhere)
    };
    let path = dir.join(&file.name);
    let bytes = crate::fs::read_bounded(fs, &path, file.bytes)
        .map_err(|e| Error::io(&path, e))?
        .unwrap_or_default();
    let mut found = base;
    let mut position = 0usize;
    while let Some(rest) = bytes.get(position..).filter(|r| !r.is_empty()) {
        let header = batch::decode_header(rest).map_err(|e| e.at(&path, position as u64))?;
        found = header.last_offset().saturating_add(1);
        position = position.saturating_add(header.size);
    }
    if found != manifest.next_offset {
        return Err(Error::corrupt(
            manifest_path,
            NEXT_OFFSET_POSITION,
            CorruptKind::NextOffsetMismatch {
                manifest: manifest.next_offset,
                found,
            },
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::batch::RecordBatch;
    use crate::format::{filename, NewRecord};
    use crate::fs::sim::SimFs;

    /// A directory with one segment at 5 holding offsets 5 and 6, and its
    /// manifest (files as they are) claiming `next_offset`.
    fn dir_and_manifest(fs: &SimFs, next_offset: i64) -> Manifest {
        let dir = Path::new("/d");
        fs.create_dir_all(dir).unwrap();
        let record = |k: &str| NewRecord::new(Some(k.as_bytes().to_vec()), Some(b"v".to_vec()), 1);
        let bytes = RecordBatch::build(5, &[record("a"), record("b")]).encode();
        fs.write_new(&dir.join(filename::build(5, filename::LOG_SUFFIX)), &bytes)
            .unwrap();
        Manifest {
            log_start_offset: 5,
            next_offset,
            files: fingerprint(fs, dir).unwrap(),
        }
    }

    #[test]
    fn a_manifest_whose_next_offset_is_not_where_its_segments_end_is_corrupt() {
        let fs = SimFs::new();
        let good = dir_and_manifest(&fs, 7);
        assert!(matches(&fs, Path::new("/d"), &good).unwrap());
        check_next_offset(&fs, Path::new("/d"), &good, Path::new("/m")).unwrap();
        for forged in [6, 8, 1_000_000] {
            let manifest = Manifest {
                next_offset: forged,
                ..good.clone()
            };
            // The files match byte for byte: only the meaning check sees it.
            assert!(matches(&fs, Path::new("/d"), &manifest).unwrap());
            match check_next_offset(&fs, Path::new("/d"), &manifest, Path::new("/m")) {
                Err(Error::Corrupt {
                    path,
                    position,
                    kind: CorruptKind::NextOffsetMismatch { manifest, found },
                }) => {
                    assert_eq!(path, Path::new("/m"));
                    assert_eq!(position, NEXT_OFFSET_POSITION);
                    assert_eq!((manifest, found), (forged, 7));
                }
                other => panic!("{forged}: {other:?}"),
            }
        }
    }
}

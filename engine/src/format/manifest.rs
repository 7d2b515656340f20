//! The install manifest `D.compact-manifest`: the commit point of a compaction.
//!
//! ```text
//! offset  size  field             notes
//!      0     4  magic             b"SLMF"
//!      4     2  version           u16 = 1
//!      6     8  log_start_offset  i64
//!     14     8  next_offset       i64
//!     22     4  file_count        u32
//!     26     .  files             file_count entries, sorted by name:
//!                                   name_len u16 | name (UTF-8) | bytes u64 | crc u32
//!                                   (crc = CRC-32C of the file's whole content)
//!    end-4   4  crc               u32, CRC-32C of every byte before it
//! ```
//! All integers big-endian. Written to `D.compact-manifest.tmp`, synced, renamed,
//! parent synced (section 6 of docs/design.md).

use crate::error::CorruptKind;

use super::checkpoint::to_array;
use super::FormatError;

/// The first bytes of a manifest file.
pub const MAGIC: [u8; 4] = *b"SLMF";
/// The manifest format's version.
pub const VERSION: u16 = 1;

const MAGIC_OFFSET: usize = 0;
const VERSION_OFFSET: usize = MAGIC_OFFSET + 4;
const LOG_START_OFFSET_OFFSET: usize = VERSION_OFFSET + 2;
const NEXT_OFFSET_OFFSET: usize = LOG_START_OFFSET_OFFSET + 8;
const FILE_COUNT_OFFSET: usize = NEXT_OFFSET_OFFSET + 8;
const FILES_OFFSET: usize = FILE_COUNT_OFFSET + 4;
const CRC_LEN: usize = 4;
/// Smallest possible manifest (no files).
pub const MANIFEST_LEN_MIN: usize = FILES_OFFSET + CRC_LEN;
/// Fixed bytes of one file entry besides its name.
const FILE_ENTRY_FIXED_LEN: usize = 2 + 8 + 4;
/// The longest file name a manifest names (`NAME_MAX` of the file systems the
/// engine runs on; the engine's own names are at most 30 bytes).
pub const NAME_BYTES_MAX: usize = 255;

/// The most bytes a manifest of `files` files takes: what a reader reads at most
/// before decoding it (a larger file is not read).
pub fn bytes_max(files: usize) -> u64 {
    let entry = (FILE_ENTRY_FIXED_LEN + NAME_BYTES_MAX) as u64;
    u64::try_from(files)
        .unwrap_or(u64::MAX)
        .saturating_mul(entry)
        .saturating_add(MANIFEST_LEN_MIN as u64)
}

const _: () = assert!(FILES_OFFSET == 26);
const _: () = assert!(MANIFEST_LEN_MIN == 30);

/// One file of the new directory content.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ManifestFile {
    /// The file's name inside the directory.
    pub name: String,
    /// Its exact length.
    pub bytes: u64,
    /// The CRC-32C of its whole content.
    pub crc32c: u32,
}

/// What the installed directory must hold, exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The log start offset of the new content.
    pub log_start_offset: i64,
    /// The next offset of the new content (it never moves backwards).
    pub next_offset: i64,
    /// Sorted by name, names unique.
    pub files: Vec<ManifestFile>,
}

impl Manifest {
    /// The manifest's bytes, CRC-32C included.
    pub fn encode(&self) -> Vec<u8> {
        assert!(self.log_start_offset >= 0);
        assert!(self.next_offset >= self.log_start_offset);
        assert!(
            self.files
                .windows(2)
                .all(|w| matches!(w, [a, b] if a.name < b.name)),
            "manifest files must be sorted and unique"
        );
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_be_bytes());
        out.extend_from_slice(&self.log_start_offset.to_be_bytes());
        out.extend_from_slice(&self.next_offset.to_be_bytes());
        let count = u32::try_from(self.files.len()).expect("too many files");
        out.extend_from_slice(&count.to_be_bytes());
        for file in &self.files {
            let name_len = u16::try_from(file.name.len()).expect("file name too long");
            out.extend_from_slice(&name_len.to_be_bytes());
            out.extend_from_slice(file.name.as_bytes());
            out.extend_from_slice(&file.bytes.to_be_bytes());
            out.extend_from_slice(&file.crc32c.to_be_bytes());
        }
        let crc = crate::format::crc::crc32c(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    /// Decodes and checks a manifest; any damage is a structured corruption error.
    pub fn decode(buf: &[u8]) -> Result<Manifest, FormatError> {
        if buf.len() < MANIFEST_LEN_MIN {
            return Err(truncated(MANIFEST_LEN_MIN, buf.len()));
        }
        let magic = buf.get(MAGIC_OFFSET..MAGIC_OFFSET + 4).unwrap_or_default();
        if magic != MAGIC {
            return Err(FormatError::Corrupt {
                position: MAGIC_OFFSET as u64,
                kind: CorruptKind::BadMagic {
                    got: i64::from(u32::from_be_bytes(to_array(magic))),
                    expected: i64::from(u32::from_be_bytes(MAGIC)),
                },
            });
        }
        let body_len = buf.len() - CRC_LEN;
        let body = buf.get(..body_len).unwrap_or_default();
        let stored = u32::from_be_bytes(to_array(buf.get(body_len..).unwrap_or_default()));
        let computed = crate::format::crc::crc32c(body);
        if stored != computed {
            return Err(FormatError::Corrupt {
                position: body_len as u64,
                kind: CorruptKind::ChecksumMismatch {
                    got: computed,
                    expected: stored,
                },
            });
        }
        let mut reader = Reader { buf: body, at: 4 };
        let version = u16::from_be_bytes(reader.take()?);
        if version != VERSION {
            return Err(FormatError::Unsupported(format!(
                "manifest version {version}"
            )));
        }
        let log_start_offset = i64::from_be_bytes(reader.take()?);
        let next_offset = i64::from_be_bytes(reader.take()?);
        if log_start_offset < 0 || next_offset < log_start_offset {
            return Err(other(
                LOG_START_OFFSET_OFFSET,
                format!("offsets out of order: start {log_start_offset}, next {next_offset}"),
            ));
        }
        let count = u32::from_be_bytes(reader.take()?) as usize;
        if count > body_len / FILE_ENTRY_FIXED_LEN {
            return Err(other(FILE_COUNT_OFFSET, format!("file count {count}")));
        }
        let mut files: Vec<ManifestFile> = Vec::with_capacity(count);
        for _ in 0..count {
            let entry_at = reader.at;
            let name_len = u16::from_be_bytes(reader.take()?) as usize;
            let name = reader.bytes(name_len)?;
            let name = String::from_utf8(name.to_vec())
                .map_err(|_| other(entry_at, "file name is not UTF-8".into()))?;
            if name.is_empty() || name.contains('/') || name == "." || name == ".." {
                return Err(other(entry_at, format!("bad file name {name:?}")));
            }
            if let Some(previous) = files.last() {
                if previous.name >= name {
                    return Err(other(entry_at, "file names not sorted".into()));
                }
            }
            let bytes = u64::from_be_bytes(reader.take()?);
            let crc32c = u32::from_be_bytes(reader.take()?);
            files.push(ManifestFile {
                name,
                bytes,
                crc32c,
            });
        }
        if reader.at != body_len {
            return Err(other(reader.at, "trailing bytes".into()));
        }
        Ok(Manifest {
            log_start_offset,
            next_offset,
            files,
        })
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn bytes(&mut self, len: usize) -> Result<&[u8], FormatError> {
        let out = self
            .buf
            .get(self.at..self.at + len)
            .ok_or_else(|| truncated(self.at + len, self.buf.len()))?;
        self.at += len;
        Ok(out)
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], FormatError> {
        Ok(to_array(self.bytes(N)?))
    }
}

fn truncated(needed: usize, available: usize) -> FormatError {
    FormatError::Corrupt {
        position: available as u64,
        kind: CorruptKind::Truncated {
            needed: needed as u64,
            available: available as u64,
        },
    }
}

fn other(position: usize, what: String) -> FormatError {
    FormatError::Corrupt {
        position: position as u64,
        kind: CorruptKind::Other(what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            log_start_offset: 3,
            next_offset: 17,
            files: vec![
                ManifestFile {
                    name: "00000000000000000003.log".into(),
                    bytes: 1234,
                    crc32c: 0xDEAD_BEEF,
                },
                ManifestFile {
                    name: "00000000000000000010.log".into(),
                    bytes: 0,
                    crc32c: 0,
                },
            ],
        }
    }

    #[test]
    fn round_trip() {
        let manifest = sample();
        let bytes = manifest.encode();
        assert_eq!(Manifest::decode(&bytes), Ok(manifest));
        let empty = Manifest {
            log_start_offset: 0,
            next_offset: 0,
            files: vec![],
        };
        assert_eq!(empty.encode().len(), MANIFEST_LEN_MIN);
        assert_eq!(Manifest::decode(&empty.encode()), Ok(empty));
    }

    #[test]
    fn every_flip_and_truncation_is_detected() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x10;
            assert!(Manifest::decode(&damaged).is_err(), "flip at {i}");
        }
        for cut in 0..bytes.len() {
            assert!(
                matches!(
                    Manifest::decode(&bytes[..cut]),
                    Err(FormatError::Corrupt { .. })
                ),
                "cut at {cut}"
            );
        }
    }
}

//! The one error type of the engine.
//!
//! Corruption is structured: which file, at which byte position, and what kind of
//! damage, so a person (or a test) can tell a torn tail from a flipped bit.

use std::path::PathBuf;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the engine can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An IO call failed. The engine does not retry: after a failed fsync the
    /// [`crate::Log`] is poisoned (see [`Error::Poisoned`]).
    #[error("io error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Bytes on disk are not what the format says they must be.
    #[error("corrupt data in {path} at byte {position}: {kind}")]
    Corrupt {
        path: PathBuf,
        position: u64,
        kind: CorruptKind,
    },
    /// Valid Kafka data the engine does not handle (compressed batches, old magic).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A read below `log_start_offset` or beyond `next_offset`.
    #[error("offset {offset} is out of range [{log_start_offset}, {next_offset}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start_offset: i64,
        next_offset: i64,
    },
    /// A caller passed an argument that can never be valid.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Recovery found a combination of directories it cannot decide on safely.
    /// Nothing was deleted.
    #[error("ambiguous state, nothing deleted: {reason} (directories: {dirs:?})")]
    Ambiguous { reason: String, dirs: Vec<PathBuf> },
    /// A previous IO error left the log in an unknown state; reopen it.
    #[error("log is poisoned by an earlier io error; reopen it to recover")]
    Poisoned,
    /// A fail point configured with `return(error)` fired.
    #[error("injected failure at fail point {0}")]
    Injected(String),
}

/// What kind of corruption a [`Error::Corrupt`] is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CorruptKind {
    #[error("truncated: need {needed} bytes, {available} available")]
    Truncated { needed: u64, available: u64 },
    #[error("bad batch length {length}")]
    BadLength { length: i64 },
    #[error("bad magic {got}, expected {expected}")]
    BadMagic { got: i64, expected: i64 },
    #[error("checksum mismatch: got {got:#010x}, expected {expected:#010x}")]
    ChecksumMismatch { got: u32, expected: u32 },
    #[error("record count {declared} does not match {actual} records decoded")]
    RecordCount { declared: i64, actual: i64 },
    #[error("offset delta {delta} not strictly increasing or beyond last offset delta {last}")]
    OffsetDelta { delta: i64, last: i64 },
    #[error("base offset {got} is not after {previous} or outside the segment")]
    BaseOffset { got: i64, previous: i64 },
    #[error("malformed varint")]
    Varint,
    #[error("bad record field: {0}")]
    Field(&'static str),
    #[error("bad file name")]
    FileName,
    /// A compressed batch's records (CRC-valid) do not decompress.
    #[error("{codec} payload does not decompress: {detail}")]
    Decompress {
        /// The codec's name.
        codec: String,
        /// What the decoder said.
        detail: String,
    },
    /// A compressed batch's records would decompress beyond the bound.
    #[error("{codec} payload decompresses beyond {limit_bytes} bytes")]
    DecompressedTooLarge {
        /// The codec's name.
        codec: String,
        /// The bound (`INFLATED_BYTES_MAX`).
        limit_bytes: u64,
    },
    /// Attribute bits 0-2 name no codec (5, 6 or 7).
    #[error("unknown compression codec id {id}")]
    UnknownCodec {
        /// The attribute bits 0-2.
        id: i64,
    },
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// Wraps an IO error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Builds a corruption error.
    pub fn corrupt(path: impl Into<PathBuf>, position: u64, kind: CorruptKind) -> Self {
        Error::Corrupt {
            path: path.into(),
            position,
            kind,
        }
    }

    /// True for errors that describe damaged bytes on disk.
    pub fn is_corrupt(&self) -> bool {
        matches!(self, Error::Corrupt { .. })
    }
}

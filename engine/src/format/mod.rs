//! Pure encode/decode of everything the engine stores. No IO here.
//!
//! * [`batch`] / [`record`]: Kafka record batch v2, byte-compatible with Kafka.
//! * [`batch_view`]: the same batches checked and decoded in place (zero-copy).
//! * [`compression`]: Kafka's four codecs, framed as Kafka frames them.
//! * [`timestamp_type`]: CreateTime and LogAppendTime.
//! * [`produce`]: producer-encoded batches checked by Kafka's produce-request rules.
//! * [`varint`]: zigzag varints.
//! * [`filename`]: 20-digit zero-padded segment file names.
//! * [`crc`]: CRC-32C, the one checksum of every format.
//! * [`checkpoint`]: the retention checkpoint (`log-start-offset.checkpoint`).
//! * [`manifest`]: the install manifest, the commit point of a compaction.
//! * [`recovery_point`]: the recovery point and the clean-shutdown marker, each a
//!   list of segment summaries.
//! * `batch_header`: the fixed 61-byte header of a batch, its field offsets and flags
//!   (re-exported by [`batch`]).
//! * [`index`]: the `.index` and `.timeindex` entries, byte for byte as Kafka's.
//! * [`txn_index`]: Kafka's aborted-transaction index (`.txnindex`).
//! * [`key_summary`]: a clean segment's key summary (`.keys`), for carried segments.
//!
//! ## seglog's own files (`engine/src/format/checkpoint.rs`, `engine/src/format/recovery_point.rs`, `engine/src/format/manifest.rs`, `engine/src/format/key_summary.rs`)
//!
//! Each starts with a magic number and a format version (1) and ends with a CRC-32C of
//! every byte before it; big-endian; read only up to the format's own size limit.
//!
//! The start checkpoint (`log-start-offset.checkpoint`, magic `SLCK`) and the clean point
//! (`cleaner-offset.checkpoint`, magic `SLCO`), 18 bytes (`CHECKPOINT_LEN`):
//!
//! ```text
//! offset  size  field             notes
//!      0     4  magic             b"SLCK" (start checkpoint) or b"SLCO" (clean point)
//!      4     2  version           u16 = 1
//!      6     8  offset            i64 >= 0: the log start, or the clean point
//!     14     4  crc               u32, CRC-32C of bytes [0, 14)
//!     18        end
//! ```
//!
//! The recovery point (`recovery-point.checkpoint`, magic `SLRP`) and the clean-shutdown
//! marker (`clean-shutdown`, magic `SLCS`): the recovery point lists every closed segment,
//! the marker only the active one.
//!
//! ```text
//! offset  size  field      notes
//!      0     4  magic      b"SLRP" or b"SLCS"
//!      4     2  version    u16 = 1
//!      6     8  point      i64: recovery point: segments based below it are trusted;
//!                          marker: the active segment's base
//!     14     4  count      u32: summaries that follow
//!     18  72*n  summaries  ascending by base offset, each:
//!                 0  8  base_offset      8  8  bytes (the .log's length)
//!                16  8  next_offset     24  8  records
//!                32  8  batches         40  8  max_timestamp (-1: none)
//!                48  8  offset_of_max_timestamp
//!                56  4  offset_index_entries    60  4  time_index_entries
//!                64  4  offset_index_crc        68  4  time_index_crc (CRC-32C of each file)
//! 18+72n     4  crc        u32, CRC-32C of every byte before it
//! ```
//!
//! The install manifest (`D.compact-manifest`, magic `SLMF`), at least 30 bytes
//! (`MANIFEST_LEN_MIN`), names at most 255 bytes long (`NAME_BYTES_MAX`):
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
//!  end-4     4  crc               u32, CRC-32C of every byte before it
//! ```
//!
//! A clean segment's key summary (`<base>.keys`, magic `SLKS`), bound to its segment by the
//! `.log`'s length and CRC-32C:
//!
//! ```text
//! offset  size  field              notes
//!      0     4  magic              b"SLKS"
//!      4     2  version            u16 = 1
//!      6     8  base_offset        i64, the segment's
//!     14     8  segment_bytes      u64, the .log file's length
//!     22     4  segment_crc32c     u32, CRC-32C of the whole .log file
//!     26     8  tombstone_ts_min   i64, the oldest keyed tombstone's timestamp; i64::MAX: none
//!     34     4  key_count          u32
//!     38   8*n  key_hashes         u64 each, ascending, distinct
//!  end-4     4  crc                u32, CRC-32C of every byte before it
//! ```

// Tests may unwrap and index; the decoders may not.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

pub mod batch;
mod batch_header;
pub mod batch_view;
pub mod checkpoint;
pub mod compression;
pub mod crc;
pub mod filename;
pub mod index;
pub mod key_summary;
pub mod manifest;
pub mod produce;
pub mod record;
pub mod recovery_point;
pub mod timestamp_type;
pub mod txn_index;
pub mod varint;

use std::path::Path;

use crate::error::{CorruptKind, Error};

pub use batch::RecordBatch;
pub use batch_view::{BatchView, RecordViews};
pub use compression::Compression;
pub use record::{ControlKind, Header, NewRecord, Record, RecordKey, RecordView};
pub use timestamp_type::TimestampType;

/// A decoding failure, with the byte position relative to the decoded buffer.
/// The caller adds the file and the buffer's position in it ([`FormatError::at`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatError {
    /// The bytes are damaged; becomes [`Error::Corrupt`].
    Corrupt {
        /// Byte position relative to the start of the decoded buffer.
        position: u64,
        /// What is wrong there.
        kind: CorruptKind,
    },
    /// Valid Kafka data the engine does not handle; becomes [`Error::Unsupported`].
    Unsupported(String),
}

impl FormatError {
    /// Converts into an engine error for `path`, where the buffer began at `base`.
    pub fn at(self, path: &Path, base: u64) -> Error {
        match self {
            FormatError::Corrupt { position, kind } => Error::corrupt(path, base + position, kind),
            FormatError::Unsupported(what) => {
                Error::Unsupported(format!("{what} in {}", path.display()))
            }
        }
    }
}

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

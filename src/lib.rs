//! # seglog
//!
//! A Kafka-format partition log engine (record batches v2 in segment files, sparse
//! offset and time indexes, retention, key-based compaction with tombstones, and a
//! crash-safe install of compacted segments), together with the suite that verifies it.
//!
//! All disk access goes through [`fs::FileSystem`]; the engine never touches `std::fs`.

pub mod compaction;
pub mod error;
pub mod format;
pub mod fs;
pub mod install;
pub mod retention;
pub mod workload;

pub use error::{CorruptKind, Error, Result};

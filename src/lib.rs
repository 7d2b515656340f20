//! # seglog
//!
//! A Kafka-format partition log engine (record batches v2 in segment files, sparse
//! offset and time indexes, retention, key-based compaction with tombstones, and a
//! crash-safe install of compacted segments), together with the suite that verifies it.
//!
//! All disk access goes through [`fs::FileSystem`]; the engine never touches `std::fs`.
//!
//! ```
//! use seglog::{Log, LogConfig, NewRecord};
//! let dir = tempfile::tempdir()?;
//! let (mut log, _report) = Log::open(dir.path().join("p0"), LogConfig::default())?;
//! let info = log.append(&[NewRecord::new(Some(b"k".to_vec()), Some(b"v".to_vec()), 1_000)])?;
//! assert_eq!((info.base_offset, info.last_offset), (0, 0));
//! log.flush()?; // durable from here on
//! let records = log.read(0, 1 << 20)?;
//! assert_eq!(records[0].value.as_deref(), Some(&b"v"[..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod bench;
pub mod cli;
pub mod clock;
pub mod compaction;
pub mod conformance;
pub mod damage;
pub mod error;
pub mod format;
pub mod fs;
pub mod install;
pub mod interop;
pub mod log;
pub mod retention;
pub mod scenario;
pub mod segment;
pub mod sweep;
pub mod verify;
pub mod workload;

/// The shared byte buffers [`ReadRecord`] keys and values are slices of.
pub use bytes::{self, Bytes};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{CorruptKind, Error, Result};
pub use format::{ControlKind, Header, NewRecord, RecordBatch};
pub use log::{AppendInfo, Fetch, Log, LogConfig, ReadRecord, RecordRef, RecoveryReport};
pub use segment::SegmentInfo;

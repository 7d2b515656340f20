//! # seglog
//!
//! A Kafka-format partition log engine: record batches (v2) in Kafka-named segment
//! files with sparse offset and time indexes, retention by time and size, key-based
//! compaction with tombstones, and a crash-safe install of compacted segments. After
//! any crash, [`Log::open`] recovers to a consistent log that holds everything a
//! successful [`Log::flush`] made durable; damaged bytes are reported as
//! [`Error::Corrupt`] naming file and byte position, never silently dropped.
//!
//! ## Embedding
//!
//! ```toml
//! [dependencies]
//! seglog = { version = "0.1", features = ["compression"] }
//! ```
//!
//! ```
//! use seglog::{Error, Log, LogConfig, NewRecord};
//!
//! let dir = tempfile::tempdir()?; // any directory will do; the log lives in `orders-0`
//! let config = LogConfig { segment_bytes: 64 << 20, ..LogConfig::default() };
//! let (mut log, recovery) = Log::open(dir.path().join("orders-0"), config)?;
//! assert_eq!(recovery.truncated_bytes, 0); // a fresh log: nothing to repair
//! let record = |key: Option<&[u8]>, value: &[u8], ts| {
//!     NewRecord::new(key.map(<[u8]>::to_vec), Some(value.to_vec()), ts)
//! };
//! log.append(&[record(Some(b"k1"), b"v1", 1_000)])?; // offset 0
//! log.roll()?; // close the segment: compaction rewrites closed segments only
//! let info = log.append(&[record(Some(b"k1"), b"v2", 2_000), record(None, b"x", 2_000)])?;
//! assert_eq!((info.base_offset, info.last_offset), (1, 2));
//! log.flush()?; // durable from here on: no crash loses offsets 0 to 2
//! let report = log.compact(3_000, 86_400_000, None)?; // now, delete_retention_ms
//! assert_eq!((report.records_before, report.records_after), (1, 0)); // v1 superseded
//! let records = log.read(log.log_start_offset(), 1 << 20)?; // offsets stay: 1, 2
//! let first = records.first().expect("offset 1 is kept");
//! assert_eq!((first.offset, first.value), (1, Some(&b"v2"[..])));
//! for record in log.fetch(1, 1 << 20)?.records() { // Kafka's fetch: whole batches, no copy
//!     let record = record?;
//!     assert!(record.offset >= 1 && record.value.is_some());
//! }
//! match log.read(99, 1 << 20) { // a consumer past the end resets to a bound
//!     Err(Error::OffsetOutOfRange { next_offset, .. }) => assert_eq!(next_offset, 3),
//!     other => panic!("expected OffsetOutOfRange, got {other:?}"),
//! }
//! log.retain(3_000, Some(60_000), None)?; // now, retention_ms, retention_bytes
//! log.close()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## The API
//!
//! * [`Log`]: open (with recovery), [`append`](Log::append), [`roll`](Log::roll),
//!   [`flush`](Log::flush), [`read`](Log::read), [`fetch`](Log::fetch),
//!   [`retain`](Log::retain), [`compact`](Log::compact), [`close`](Log::close).
//!   Configured by [`LogConfig`]; every error is an [`Error`].
//! * [`fs::FileSystem`]: all disk access goes through it; the engine never touches
//!   `std::fs`. [`fs::StdFs`] is the real disk (the default of [`Log::open`]);
//!   [`fs::sim::SimFs`] is an in-memory file system that can simulate a power loss
//!   and inject IO errors, for testing what an embedding does after a crash
//!   ([`Log::open_with`] takes either).
//! * [`format`](mod@format), [`segment`], [`retention`], [`compaction`], [`install`]: the byte
//!   layouts and the protocols underneath, public for tools and tests: each module
//!   re-exports what tools need of its files, which stay private.
//!
//! The surface is listed line by line in `engine/public-api/` of the repository,
//! and a change to it changes the listing in the same commit.
//!
//! ## The public surface
//!
//! The public surface is curated: the embedder's types at the crate root (`Log`,
//! `LogConfig`, `NewRecord`, `Error`, ...); public modules for tools, with the files of
//! each private and what tools need re-exported by the module
//! (`segment::list_segments`); whole only where tools compose the parts (`format`,
//! `fs::sim`, `compaction::{map, pass, rules}`). The lint `unnameable_types` keeps out
//! a public signature naming a private type.
//! `engine/public-api/{default,all-features}.txt` list the surface (the lines of `cargo
//! public-api -ss`); `tests/public_api.rs` fails on a change they do not carry.
//!
//! ## Cargo features
//!
//! * `compression`: Kafka's four batch codecs (gzip, snappy, lz4, zstd). Off by
//!   default: the codecs are twelve crates, more than the rest of the engine (17
//!   crates in all without them, 29 with; `engine/tests/engine_deps.rs` holds both
//!   bounds), and a log whose producers do not compress never needs them. Without
//!   it the engine reads and writes uncompressed batches only, and nothing is lost
//!   in silence: a compressed batch reads as `Error::Unsupported` naming the codec,
//!   and an append with a codec configured is an `InvalidArgument`.
//! * `serde`: `serde::Serialize` on the reports and [`LogConfig`].
//! * `failpoints`: compiles the named fail points ([`fs::failpoint`]) into the engine,
//!   driven by the `fail` crate's `FAILPOINTS` variable. For crash testing only.
//! * `testing`: the testing seam (`testing`), what the verification suite
//!   (the `seglog-suite` crate) reaches beyond this API. Never in a real build.
//! * `test-variants`: deliberately broken protocol variants for the suite's own
//!   tests, a part of the testing seam. Never enable it in a real build.

#![warn(missing_docs)]
#![warn(unnameable_types)]

pub mod clock;
pub mod compaction;
pub mod error;
pub mod format;
pub mod fs;
pub mod install;
pub mod log;
pub mod manager;
pub mod panics;
pub mod retention;
pub mod segment;
pub mod sync;
#[cfg(feature = "testing")]
pub mod testing;

/// The shared byte buffers [`ReadRecord`] keys and values are slices of.
pub use bytes::{self, Bytes};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{BatchRule, CorruptKind, Error, Loss, LostSegment, Result};
pub use format::txn_index::AbortedTxn;
pub use format::{ControlKind, Header, NewRecord, RecordBatch};
pub use log::{
    AppendInfo, Fetch, Isolation, Log, LogConfig, Producer, ReadRecord, ReadRecords, RecordRef,
    RecoveryMode, RecoveryReport, TailKind, TailTruncation,
};
pub use segment::SegmentInfo;

/// The Rust examples of the crate's page (README.md beside this crate's manifest),
/// run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct CrateReadmeExamples;

//! seglog-model: the executable reference spec of seglog and stateright models of its
//! log, its compaction install protocol, its retention deletion order, its cleaner's
//! clean point and bounded offset map, and concurrent cleaning (see README.md).
//!
//! No IO, no dependency on the engine: the engine's tests and the crash suite depend on
//! this crate, never the other way round.
//!
//! ```
//! use seglog_model::check::{run, CheckOptions, ModelKind, Variant};
//! use seglog_model::spec::{SpecLog, SpecRecordInput};
//!
//! // The spec: the seeds' compaction example, shortened.
//! let mut log = SpecLog::new(1 << 20);
//! let put = |key: &str, value: &str, timestamp| SpecRecordInput {
//!     key: Some(key.as_bytes().to_vec()),
//!     value: Some(value.as_bytes().to_vec()),
//!     timestamp,
//! };
//! log.append(&[put("a", "1", 0), put("b", "x", 1)]).unwrap();
//! log.roll();
//! log.append(&[put("a", "2", 2)]).unwrap();
//! log.roll();
//! let summary = log.compact(10, 1000, None).unwrap();
//! assert_eq!((summary.records_before, summary.records_after), (3, 2));
//! let offsets: Vec<i64> = log.read(0).unwrap().iter().map(|r| r.offset).collect();
//! assert_eq!(offsets, vec![1, 2]); // offset 0 is a gap now, never renumbered
//!
//! // A model check: the seeds' two-rename swap is refuted with a shortest trace.
//! let report = run(&CheckOptions::new(ModelKind::Install).with_variant(Variant::TwoRename));
//! assert!(!report.ok());
//! assert_eq!(report.violations[0].trace.len(), 6);
//! ```

pub mod check;
pub mod cli;
pub mod invariants;
pub mod models;
pub mod spec;

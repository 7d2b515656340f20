//! # seglog-suite
//!
//! The verification suite of the seglog engine (docs/verification.md) and the
//! `seglog` command line over it.

#[allow(missing_docs)] // the suite: internal to the CLI and tests, not the embedding API
pub mod alice;
#[allow(missing_docs)] // the suite: internal to the CLI and tests, not the embedding API
pub mod bench;
#[allow(missing_docs)] // the suite: internal to the CLI and tests, not the embedding API
pub mod cli;
#[allow(missing_docs)] // the suite: internal to the CLI and tests, not the embedding API
pub mod conformance;
#[allow(missing_docs)] // the suite: internal to the CLI and tests, not the embedding API
pub mod damage;
#[allow(missing_docs)] // the suite: internal to the CLI and tests, not the embedding API
pub mod interop;
#[allow(missing_docs)] // the suite: internal to the CLI and tests, not the embedding API
pub mod jobs;
#[allow(missing_docs)] // the suite: internal to the CLI and tests, not the embedding API
pub mod scenario;
#[allow(missing_docs)] // the suite: internal to the CLI and tests, not the embedding API
pub mod soak;
#[allow(missing_docs)] // the suite: internal to the CLI and tests, not the embedding API
pub mod sweep;
#[allow(missing_docs)] // the suite: internal to the CLI and tests, not the embedding API
pub mod verify;
#[allow(missing_docs)] // the suite: internal to the CLI and tests, not the embedding API
pub mod workload;

/// The Rust examples of the repository's README.md, run as doctests so they stay
/// true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;

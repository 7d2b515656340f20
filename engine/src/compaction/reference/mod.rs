//! The decoded reference compactors of the engine's unit tests: simple, slow passes
//! over decoded batches that the passes that run are held to. `kafka` is the
//! `kafka` policy's (the differential tests of `crate::compaction::pass::kafka`
//! compare the two byte for byte), `producers` the walk of the active producers.
//! They share the rules of [`super::rules`] and nothing of the tuned passes'
//! readers and writers. The seed policy's reference compactor is the suite's
//! (`conformance::compactor`). None of it is in a build other than the tests'.

pub(crate) mod kafka;
pub(crate) mod producers;

//! The decoded reference compactors: simple, slow passes over decoded batches that
//! the passes that run are held to. [`plan`] is the seed policy's (the spec's
//! shape, public for the suite), [`kafka`] the `kafka` policy's (test builds: the
//! differential tests of `crate::compaction::pass::kafka` compare the two byte for
//! byte). They share the rules of [`super::rules`] and nothing of the tuned passes'
//! readers and writers.

pub mod kafka;
pub mod plan;
#[cfg(test)]
pub(crate) mod producers;

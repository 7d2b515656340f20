//! The passes of a build (`super::build`), one per policy, between the section and
//! the finish: each reads through the one reader (`super::read`), maps with the one
//! map ([`super::map`]), plans every batch with the one planner (`super::plan`)
//! under its rule set ([`super::rules`]) and writes through the one writer
//! (`super::writer`).
//!
//! - the `seed` policy (`seed`): the full map ([`full`]) when everything is dirty
//!   and the map unbounded, else the incremental one ([`incremental`]: the dirty
//!   section mapped, the clean section looked up), then the rewrite
//!   (`super::rewrite`, described by `super::output`);
//! - the `kafka` policy (`kafka`): split, map (`kafka_map`), clean and write.
//!
//! Each returns what the finish takes (`super::finish::Pass`).

pub mod full;
pub mod incremental;
pub(super) mod kafka;
pub(super) mod kafka_map;
pub(super) mod seed;

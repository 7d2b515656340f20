//! seglog-model: the executable reference spec of seglog and stateright models of its
//! log, its compaction install protocol and its retention deletion order (see README.md).
//!
//! No IO, no dependency on the engine: the engine's tests and the crash suite depend on
//! this crate, never the other way round.

pub mod check;
pub mod cli;
pub mod invariants;
pub mod models;
pub mod spec;

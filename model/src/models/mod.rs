//! The stateright models: (a) the log, (b) the compaction install protocol, (d) the
//! retention deletion order. Each is a plain `stateright::Model`.

pub mod dir;
pub mod install;
pub mod log;
pub mod retention;

//! Crash scenarios: replayable crash-window bugs as data (`crash-scenarios/*.toml`).
//!
//! [`format`](mod@format) is the file format; [`replay`](mod@replay) runs one on the simulated file system,
//! deterministically, and compares the recovered log with the expectation.

pub mod files;
pub mod format;
pub mod inspect;
pub mod replay;
pub mod timeline;

pub use files::{load, scenario_paths};
pub use format::{CrashSpec, Expectation, Outcome, Scenario, ScenarioConfig, Semantics};
pub use inspect::{inspect, Inspection};
pub use replay::{replay, replay_expecting, ReplayResult};

//! Per-partition cleaning states, Kafka's `LogCleanerManager`: a partition is
//! cleaned by at most one cleaner at a time, retention never deletes from a
//! partition being cleaned, cleaning can be paused (counted) and aborted.
//!
//! | state        | `begin_clean` | `try_pause` (retention) | `pause` (blocking) | `abort_and_pause` | `end_clean` | `resume` |
//! |--------------|---------------|-------------------------|--------------------|-------------------|-------------|----------|
//! | `Idle`       | `InProgress`  | `Paused(1)`             | `Paused(1)`        | `Paused(1)`       | -           | error    |
//! | `InProgress` | refused       | refused (skip)          | waits              | `Aborted`, waits  | `Idle`      | error    |
//! | `Paused(n)`  | refused       | `Paused(n+1)`           | `Paused(n+1)`      | `Paused(n+1)`     | -           | `Paused(n-1)` / `Idle` |
//! | `Aborted`    | refused       | refused (skip)          | waits              | waits             | `Paused(1)` | error    |

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::sync::{lock, Condvar, Mutex};

/// One partition's cleaning state (absent from the table: `Idle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleaningState {
    /// No cleaner holds it and cleaning is not paused.
    Idle,
    /// A cleaner is cleaning it.
    InProgress,
    /// Cleaning is paused `n` times (each pause needs its resume).
    Paused(u32),
    /// The cleaner must drop its pass before the commit point; the partition
    /// becomes `Paused(1)` when it does.
    Aborted,
}

/// The table of [`CleaningState`]s, with a condition variable for waiters.
#[derive(Debug, Default)]
pub struct CleaningStates {
    states: Mutex<BTreeMap<String, CleaningState>>,
    changed: Condvar,
}

impl CleaningStates {
    /// The state of `name`.
    pub fn get(&self, name: &str) -> CleaningState {
        lock(&self.states)
            .get(name)
            .copied()
            .unwrap_or(CleaningState::Idle)
    }

    /// `Idle` -> `InProgress`; false (and nothing changes) otherwise.
    pub fn begin_clean(&self, name: &str) -> bool {
        let mut states = lock(&self.states);
        if states.contains_key(name) {
            return false;
        }
        states.insert(name.to_string(), CleaningState::InProgress);
        true
    }

    /// The cleaner is done (swapped, found nothing, failed or dropped an aborted
    /// pass): `InProgress` -> `Idle`, `Aborted` -> `Paused(1)`.
    pub fn end_clean(&self, name: &str) {
        let mut states = lock(&self.states);
        match states.get(name).copied() {
            Some(CleaningState::InProgress) => {
                states.remove(name);
            }
            Some(CleaningState::Aborted) => {
                states.insert(name.to_string(), CleaningState::Paused(1));
            }
            other => panic!("end_clean of {name} in state {other:?}"),
        }
        drop(states);
        self.changed.notify_all();
    }

    /// True if the cleaner of `name` must drop its pass.
    pub fn is_aborted(&self, name: &str) -> bool {
        self.get(name) == CleaningState::Aborted
    }

    /// Retention's pause: false (skip the partition this round) while a cleaner
    /// holds it; otherwise one more pause.
    pub fn try_pause(&self, name: &str) -> bool {
        let mut states = lock(&self.states);
        match states.get(name).copied() {
            Some(CleaningState::InProgress | CleaningState::Aborted) => false,
            Some(CleaningState::Paused(n)) => {
                states.insert(name.to_string(), CleaningState::Paused(n + 1));
                true
            }
            Some(CleaningState::Idle) | None => {
                states.insert(name.to_string(), CleaningState::Paused(1));
                true
            }
        }
    }

    /// Pauses cleaning of `name`, waiting for an in-progress pass to finish
    /// (`abort`: telling it to drop its pass first, unless it is past its commit
    /// point, where the install completes).
    pub fn pause(&self, name: &str, abort: bool) {
        let mut states = lock(&self.states);
        let mut aborted = false;
        loop {
            match states.get(name).copied() {
                Some(CleaningState::InProgress) if abort => {
                    states.insert(name.to_string(), CleaningState::Aborted);
                    aborted = true;
                }
                // The aborted cleaner's `end_clean` left `Paused(1)`: that is this pause.
                Some(CleaningState::Paused(_)) if aborted => return,
                Some(CleaningState::InProgress | CleaningState::Aborted) => {
                    states = self.changed.wait(states).unwrap_or_else(|e| e.into_inner());
                }
                Some(CleaningState::Paused(n)) => {
                    states.insert(name.to_string(), CleaningState::Paused(n + 1));
                    return;
                }
                Some(CleaningState::Idle) | None => {
                    states.insert(name.to_string(), CleaningState::Paused(1));
                    return;
                }
            }
        }
    }

    /// Undoes one pause. Resuming a partition that is not paused is an error.
    pub fn resume(&self, name: &str) -> Result<()> {
        let mut states = lock(&self.states);
        match states.get(name).copied() {
            Some(CleaningState::Paused(1)) => {
                states.remove(name);
            }
            Some(CleaningState::Paused(n)) => {
                states.insert(name.to_string(), CleaningState::Paused(n - 1));
            }
            other => {
                return Err(Error::InvalidArgument(format!(
                    "resume_cleaning of {name} in state {:?}",
                    other.unwrap_or(CleaningState::Idle)
                )))
            }
        }
        drop(states);
        self.changed.notify_all();
        Ok(())
    }

    /// Forgets `name` (a deleted partition; it must be paused).
    pub fn forget(&self, name: &str) {
        let mut states = lock(&self.states);
        assert!(matches!(states.get(name), Some(CleaningState::Paused(_))));
        states.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cleaner_and_no_retention_while_cleaning() {
        let states = CleaningStates::default();
        assert!(states.begin_clean("t-0"));
        assert!(!states.begin_clean("t-0"), "a second cleaner");
        assert!(!states.try_pause("t-0"), "retention during cleaning");
        assert!(states.begin_clean("t-1"), "another partition is free");
        states.end_clean("t-0");
        assert!(states.try_pause("t-0"));
        assert!(!states.begin_clean("t-0"), "cleaning while retention runs");
        states.resume("t-0").unwrap();
        assert_eq!(states.get("t-0"), CleaningState::Idle);
        assert!(states.resume("t-0").is_err());
    }

    #[test]
    fn pauses_are_counted() {
        let states = CleaningStates::default();
        states.pause("p", false);
        states.pause("p", false);
        assert_eq!(states.get("p"), CleaningState::Paused(2));
        states.resume("p").unwrap();
        assert!(!states.begin_clean("p"));
        states.resume("p").unwrap();
        assert!(states.begin_clean("p"));
    }

    #[test]
    fn an_abort_waits_for_the_cleaner_and_leaves_it_paused() {
        let states = std::sync::Arc::new(CleaningStates::default());
        assert!(states.begin_clean("p"));
        let cleaner = {
            let states = std::sync::Arc::clone(&states);
            std::thread::spawn(move || {
                while !states.is_aborted("p") {
                    std::thread::yield_now();
                }
                states.end_clean("p");
            })
        };
        states.pause("p", true);
        cleaner.join().unwrap();
        assert_eq!(states.get("p"), CleaningState::Paused(1));
    }
}

//! The synchronisation primitives of the concurrent code ([`crate::manager`]):
//! `std::sync` and `std::thread`, or the `shuttle` crate's under `--cfg shuttle`
//! (the loom convention: a cfg, not a cargo feature, so `--all-features` builds keep
//! the real primitives), so that a test can run the same code under a controlled
//! scheduler.

#[cfg(not(shuttle))]
pub use std::sync::{Condvar, Mutex, MutexGuard, RwLock};
#[cfg(not(shuttle))]
pub use std::thread;

#[cfg(shuttle)]
pub use shuttle::sync::{Condvar, Mutex, MutexGuard, RwLock};
#[cfg(shuttle)]
pub use shuttle::thread;

/// Locks `mutex`, taking the data of a poisoned one (a panicking holder leaves a
/// state the assertions inside it already judged).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

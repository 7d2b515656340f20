//! The stateright models: (a) the log, (b) the compaction install protocol, (d) the
//! retention deletion order, (e) the cleaner's clean point and bounded map, (f)
//! concurrent cleaning, (g) two processes on one log. Each is a plain `stateright::Model`.

pub mod cleaner;
pub mod concurrent;
pub mod dir;
pub mod durability;
pub mod install;
pub mod log;
pub mod retention;
pub mod txn;
pub mod writers;

/// `steps` without those whose bits are set in `mask` (bit `n`: step `n`): the
/// protocol variants the sync ablation's judge checks.
pub(crate) fn without_steps<T>(steps: Vec<T>, mask: u32) -> Vec<T> {
    steps
        .into_iter()
        .enumerate()
        .filter(|(n, _)| mask & (1 << n) == 0)
        .map(|(_, step)| step)
        .collect()
}

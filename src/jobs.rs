//! Independent units of a suite stage run on several threads, their results handed
//! back in unit order, so that a stage's report is the one a single thread writes.
//!
//! The stages of `seglog verify` (conformance cases, damaged-data workloads, crash
//! and I/O-error sweep workloads, models) are loops over units that share nothing
//! but their inputs. [`map_ordered`] runs such a loop on `jobs` scoped threads:
//! a unit is taken by whichever thread is free next, its result is sent to the
//! calling thread, which alone sees progress, and the results come back indexed
//! by unit. [`map_until`] also stops early, as a sequential loop that breaks at its
//! first failure does: units after the first failing one (in unit order) are not
//! started once it is known, units before it always finish, and the results past
//! it are dropped. Either way the output equals the sequential loop's, for any
//! number of threads (`tests` below hold both to that).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// Threads for the suite's stages: `SEGLOG_JOBS` if set (at least 1), else the
/// machine's available parallelism.
pub fn default_jobs() -> usize {
    std::env::var("SEGLOG_JOBS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map(|n| n.max(1))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// `run(i, &items[i])` for every item on `jobs` threads; `done(finished, total)`
/// is called on the calling thread after each unit. The results are in item order.
pub fn map_ordered<T, R, F>(
    items: &[T],
    jobs: usize,
    run: F,
    done: impl FnMut(usize, usize),
) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(usize, &T) -> R + Sync,
{
    map_until(items, jobs, run, |_| false, done)
}

/// [`map_ordered`] that stops at the first result `stop` accepts, as a sequential
/// loop with a `break` does: the returned results are those of units `0..=first`
/// (all of them if none stops), whatever the number of threads.
pub fn map_until<T, R, F>(
    items: &[T],
    jobs: usize,
    run: F,
    stop: impl Fn(&R) -> bool,
    mut done: impl FnMut(usize, usize),
) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(usize, &T) -> R + Sync,
{
    let total = items.len();
    let jobs = jobs.clamp(1, total.max(1));
    let mut results: Vec<Option<R>> = (0..total).map(|_| None).collect();
    // The smallest index known to stop; units past it are not started.
    let first_stop = AtomicUsize::new(usize::MAX);
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::channel::<(usize, R)>();
        for _ in 0..jobs {
            let sender = sender.clone();
            let (run, next, first_stop) = (&run, &next, &first_stop);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= total || i > first_stop.load(Ordering::SeqCst) {
                    break;
                }
                let result = run(i, &items[i]);
                if sender.send((i, result)).is_err() {
                    break;
                }
            });
        }
        drop(sender);
        let mut finished = 0;
        for (i, result) in receiver {
            if stop(&result) {
                first_stop.fetch_min(i, Ordering::SeqCst);
            }
            results[i] = Some(result);
            finished += 1;
            done(finished, total);
        }
    });
    let end = match first_stop.load(Ordering::SeqCst) {
        usize::MAX => total,
        first => first + 1,
    };
    results.truncate(end);
    let kept: Vec<R> = results.into_iter().flatten().collect();
    assert_eq!(
        kept.len(),
        end,
        "a unit before the first stop did not finish"
    );
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_unit_order_for_any_number_of_threads() {
        let items: Vec<u64> = (0..97).collect();
        let sequential: Vec<u64> = items.iter().map(|x| x * x + 1).collect();
        for jobs in [1, 2, 3, 8, 200] {
            let mut calls = Vec::new();
            let got = map_ordered(
                &items,
                jobs,
                |i, x| {
                    assert_eq!(i as u64, *x);
                    x * x + 1
                },
                |finished, total| calls.push((finished, total)),
            );
            assert_eq!(got, sequential, "jobs {jobs}");
            let expected: Vec<(usize, usize)> = (1..=97).map(|n| (n, 97)).collect();
            assert_eq!(calls, expected, "progress, jobs {jobs}");
        }
        assert!(map_ordered(&[] as &[u8], 4, |_, x| *x, |_, _| {}).is_empty());
    }

    #[test]
    fn a_stop_keeps_exactly_the_units_a_breaking_loop_runs() {
        let items: Vec<u32> = (0..60).collect();
        // Units 17 and 40 fail; a sequential loop stops after 17.
        let fails = |x: &u32| *x == 17 || *x == 40;
        for jobs in [1, 2, 4, 16] {
            let ran = std::sync::Mutex::new(Vec::new());
            let got = map_until(
                &items,
                jobs,
                |_, x| {
                    ran.lock().unwrap().push(*x);
                    (*x, fails(x))
                },
                |(_, failed)| *failed,
                |_, _| {},
            );
            let kept: Vec<u32> = got.iter().map(|(x, _)| *x).collect();
            assert_eq!(kept, (0..=17).collect::<Vec<_>>(), "jobs {jobs}");
            let ran = ran.into_inner().unwrap();
            assert!(
                (0..=17).all(|x| ran.contains(&x)),
                "jobs {jobs}: a unit before the stop was skipped"
            );
        }
        let none = map_until(&items, 3, |_, x| *x, |_| false, |_, _| {});
        assert_eq!(none, items);
    }
}

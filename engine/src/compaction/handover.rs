//! The two-stage hand-over of the one reader ([`super::read`]): a
//! reader fills chunks on a scoped thread, the calling thread consumes them in
//! order, and each consumed chunk goes back to the reader to be filled again, so
//! at most [`CHUNKS`] chunks exist whatever the log's size.

use std::ops::ControlFlow;
use std::sync::mpsc;

use crate::error::Result;

/// Chunks in flight between the reader and the consumer.
pub const CHUNKS: usize = 4;

/// A chunk the reader fills and the consumer empties.
pub trait Chunk: Default + Send {
    /// Empties the chunk for reuse, keeping its allocations.
    fn clear(&mut self);

    /// Called on a full chunk about to be handed over while the consumer holds
    /// every other chunk (it is behind): work the reader can take off the
    /// consumer's hands before it waits anyway.
    fn behind(&mut self) {}
}

/// Runs `read` on a second thread and `consume` on this one. `read` fills the
/// chunk it is given and calls its hand-over when the chunk is full; the
/// hand-over returns false when the consumer has stopped, and `read` should then
/// stop too. `consume` sees every chunk in order and may stop the walk (`Break`).
///
/// What was read before a read error is consumed first, then the error is
/// returned; a consumer error is returned as it is. Either way the reader, if
/// still at work, stops at its next hand-over.
pub fn run<C: Chunk>(
    read: impl FnOnce(&mut C, &mut dyn FnMut(&mut C) -> bool) -> Result<()> + Send,
    mut consume: impl FnMut(&mut C) -> Result<ControlFlow<()>>,
) -> Result<()> {
    let (full_tx, full_rx) = mpsc::sync_channel::<Result<C>>(CHUNKS);
    let (empty_tx, empty_rx) = mpsc::channel::<C>();
    for _ in 0..CHUNKS {
        empty_tx.send(C::default()).expect("the receiver is alive");
    }
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut chunk = C::default();
            let outcome = read(&mut chunk, &mut |full| {
                let free = empty_rx.try_recv().ok();
                if free.is_none() {
                    full.behind();
                }
                if full_tx.send(Ok(std::mem::take(full))).is_err() {
                    return false;
                }
                match free.map_or_else(|| empty_rx.recv(), Ok) {
                    Ok(free) => {
                        *full = free;
                        true
                    }
                    Err(_) => false,
                }
            });
            // What was read before an error comes first, then the error (the
            // consumer may be gone: then nothing is waiting for either).
            let _ = full_tx.send(Ok(chunk));
            if let Err(error) = outcome {
                let _ = full_tx.send(Err(error));
            }
        });
        let mut result = Ok(());
        for chunk in &full_rx {
            let mut chunk = match chunk {
                Ok(chunk) => chunk,
                Err(error) => {
                    result = Err(error);
                    break;
                }
            };
            match consume(&mut chunk) {
                Ok(ControlFlow::Continue(())) => {}
                Ok(ControlFlow::Break(())) => break,
                Err(error) => {
                    result = Err(error);
                    break;
                }
            }
            chunk.clear();
            // The reader may be done and gone: then the chunk is just dropped.
            let _ = empty_tx.send(chunk);
        }
        // Dropping the receivers makes a reader still at work stop at its next
        // hand-over.
        drop(full_rx);
        drop(empty_tx);
        result
    })
}

/// [`run`] on this thread alone: `read` hands each full chunk straight to
/// `consume`, with the same order, the same stop and the same errors (what was read
/// before a read error is consumed first; a consumer's stop or error ends the
/// read). For inputs so small that a second thread costs more than it saves.
pub fn run_here<C: Chunk>(
    read: impl FnOnce(&mut C, &mut dyn FnMut(&mut C) -> bool) -> Result<()>,
    mut consume: impl FnMut(&mut C) -> Result<ControlFlow<()>>,
) -> Result<()> {
    // `Some` once the consumer stopped (`Ok`) or failed (`Err`).
    let mut ended: Option<Result<()>> = None;
    let mut chunk = C::default();
    let outcome = read(&mut chunk, &mut |full| match consume(full) {
        Ok(ControlFlow::Continue(())) => {
            full.clear();
            true
        }
        Ok(ControlFlow::Break(())) => {
            ended = Some(Ok(()));
            false
        }
        Err(error) => {
            ended = Some(Err(error));
            false
        }
    });
    if let Some(ended) = ended {
        return ended;
    }
    // The last, partly filled chunk, then the read's error if it had one.
    match consume(&mut chunk)? {
        ControlFlow::Continue(()) => outcome,
        ControlFlow::Break(()) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[derive(Default)]
    struct Numbers(Vec<u32>);

    impl Chunk for Numbers {
        fn clear(&mut self) {
            self.0.clear();
        }
    }

    /// Reads 0..n in chunks of 3, failing at `fail_at` if given.
    fn read(
        n: u32,
        fail_at: Option<u32>,
        chunk: &mut Numbers,
        hand_over: &mut dyn FnMut(&mut Numbers) -> bool,
    ) -> Result<()> {
        for i in 0..n {
            if Some(i) == fail_at {
                return Err(Error::Unsupported(format!("fail at {i}")));
            }
            chunk.0.push(i);
            if chunk.0.len() == 3 && !hand_over(chunk) {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Both ways of running a hand-over: on two threads and on this one.
    #[derive(Clone, Copy, Debug)]
    enum Way {
        Threads,
        Here,
    }

    fn go(
        way: Way,
        read: impl FnOnce(&mut Numbers, &mut dyn FnMut(&mut Numbers) -> bool) -> Result<()> + Send,
        consume: impl FnMut(&mut Numbers) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        match way {
            Way::Threads => run(read, consume),
            Way::Here => run_here(read, consume),
        }
    }

    #[test]
    fn every_item_is_consumed_in_order_with_reused_chunks() {
        for way in [Way::Threads, Way::Here] {
            let mut seen = Vec::new();
            go(
                way,
                |c, h| read(100, None, c, h),
                |chunk: &mut Numbers| {
                    seen.extend_from_slice(&chunk.0);
                    Ok(ControlFlow::Continue(()))
                },
            )
            .unwrap();
            assert_eq!(seen, (0..100).collect::<Vec<_>>(), "{way:?}");
        }
    }

    #[test]
    fn a_read_error_comes_after_what_was_read_before_it() {
        for way in [Way::Threads, Way::Here] {
            let mut seen = Vec::new();
            let error = go(
                way,
                |c, h| read(100, Some(40), c, h),
                |chunk: &mut Numbers| {
                    seen.extend_from_slice(&chunk.0);
                    Ok(ControlFlow::Continue(()))
                },
            )
            .unwrap_err();
            assert!(error.to_string().contains("fail at 40"), "{way:?}: {error}");
            assert_eq!(seen, (0..40).collect::<Vec<_>>(), "{way:?}");
        }
    }

    #[test]
    fn a_consumer_error_is_returned_as_it_is_and_stops_the_read() {
        for way in [Way::Threads, Way::Here] {
            let mut chunks = 0;
            let error = go(
                way,
                |c, h| read(10_000, Some(9_000), c, h),
                |_: &mut Numbers| {
                    chunks += 1;
                    if chunks == 3 {
                        return Err(Error::Unsupported("consumer gave up".into()));
                    }
                    Ok(ControlFlow::Continue(()))
                },
            )
            .unwrap_err();
            assert!(
                error.to_string().contains("consumer gave up"),
                "{way:?}: {error}"
            );
            assert_eq!(chunks, 3, "{way:?}");
        }
    }

    #[test]
    fn a_stopping_consumer_stops_the_reader() {
        use std::sync::atomic::{AtomicU32, Ordering};
        for way in [Way::Threads, Way::Here] {
            let read_up_to = AtomicU32::new(0);
            let mut chunks = 0;
            go(
                way,
                |c, h| {
                    read(10_000, None, c, &mut |full: &mut Numbers| {
                        read_up_to.store(full.0[2], Ordering::Relaxed);
                        h(full)
                    })
                },
                |_: &mut Numbers| {
                    chunks += 1;
                    Ok(if chunks == 5 {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    })
                },
            )
            .unwrap();
            assert_eq!(chunks, 5, "{way:?}");
            // The reader stopped at a hand-over soon after: at most the chunks in
            // flight and the one it was filling past the five consumed.
            let last = read_up_to.load(Ordering::Relaxed);
            assert!(
                last < 3 * (5 + CHUNKS as u32 + 2),
                "{way:?}: read on to {last}"
            );
        }
    }
}

//! What a pass writes, as runs of bytes: stretches of source segments kept as
//! stored (never copied: written straight from the mapping) and batches the write
//! side rebuilt ([`super::reseal`]) into an owned buffer. Both policies describe
//! their output this way: the seed policy one source segment at a time, the kafka
//! policy a group of source segments.

use std::ops::Range;

/// One run of an output's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Piece {
    /// Bytes `start..end` of source segment `source`.
    Stored {
        source: usize,
        start: usize,
        end: usize,
    },
    /// Bytes `start..end` of [`Runs::rebuilt`].
    Rebuilt { start: usize, end: usize },
}

/// The source segments a [`Runs`] refers to, by index.
pub(super) trait Sources {
    /// The bytes of source segment `source`.
    fn source(&self, source: usize) -> &[u8];
}

/// One source segment alone: source 0.
impl Sources for [u8] {
    fn source(&self, source: usize) -> &[u8] {
        assert_eq!(source, 0, "one source segment");
        self
    }
}

/// An output's bytes in order; its buffers are reused from one output to the next.
#[derive(Debug, Default)]
pub(super) struct Runs {
    /// The runs, in order; adjacent runs of one kind (and one source) are merged.
    pub pieces: Vec<Piece>,
    /// The rebuilt batches the runs refer to.
    pub rebuilt: Vec<u8>,
}

impl Runs {
    /// Empties the runs and the rebuilt bytes, keeping their memory.
    pub fn clear(&mut self) {
        self.pieces.clear();
        self.rebuilt.clear();
    }

    /// Appends source `source`'s bytes `range` (joined to the last run when it
    /// follows it in the same source).
    pub fn push_stored(&mut self, source: usize, range: Range<usize>) {
        if let Some(Piece::Stored {
            source: last, end, ..
        }) = self.pieces.last_mut()
        {
            if *last == source && *end == range.start {
                *end = range.end;
                return;
            }
        }
        self.pieces.push(Piece::Stored {
            source,
            start: range.start,
            end: range.end,
        });
    }

    /// Appends what was written to [`Runs::rebuilt`] from `start` on (joined to the
    /// last run when it is the rebuilt run just before).
    pub fn push_rebuilt(&mut self, start: usize) {
        let new_end = self.rebuilt.len();
        assert!(start <= new_end);
        if let Some(Piece::Rebuilt { end, .. }) = self.pieces.last_mut() {
            if *end == start {
                *end = new_end;
                return;
            }
        }
        self.pieces.push(Piece::Rebuilt {
            start,
            end: new_end,
        });
    }

    /// The runs' bytes, in order.
    pub fn runs<'a, S: Sources + ?Sized>(
        &'a self,
        sources: &'a S,
    ) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.pieces.iter().map(move |piece| match *piece {
            Piece::Stored { source, start, end } => &sources.source(source)[start..end],
            Piece::Rebuilt { start, end } => &self.rebuilt[start..end],
        })
    }

    /// The runs as slices, in order (one `append_vectored` writes them).
    pub fn parts<'a, S: Sources + ?Sized>(&'a self, sources: &'a S) -> Vec<&'a [u8]> {
        self.runs(sources).collect()
    }

    /// Bytes of the output.
    pub fn bytes(&self) -> u64 {
        self.pieces
            .iter()
            .map(|piece| match *piece {
                Piece::Stored { start, end, .. } | Piece::Rebuilt { start, end } => {
                    (end - start) as u64
                }
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of one kind join when adjacent; one source's run never joins another's.
    #[test]
    fn adjacent_runs_of_one_kind_merge() {
        let source: Vec<u8> = (0..64).collect();
        let mut runs = Runs::default();
        runs.push_stored(0, 0..10);
        runs.push_stored(0, 10..25);
        runs.push_stored(0, 30..40);
        runs.rebuilt.extend_from_slice(b"abcde");
        runs.push_rebuilt(0);
        runs.rebuilt.extend_from_slice(b"fghi");
        runs.push_rebuilt(5);
        runs.push_stored(0, 40..41);
        assert_eq!(
            runs.pieces,
            vec![
                Piece::Stored {
                    source: 0,
                    start: 0,
                    end: 25
                },
                Piece::Stored {
                    source: 0,
                    start: 30,
                    end: 40
                },
                Piece::Rebuilt { start: 0, end: 9 },
                Piece::Stored {
                    source: 0,
                    start: 40,
                    end: 41
                },
            ]
        );
        let mut expected = source[0..25].to_vec();
        expected.extend_from_slice(&source[30..40]);
        expected.extend_from_slice(b"abcdefghi");
        expected.push(source[40]);
        assert_eq!(runs.parts(&source[..]).concat(), expected);
        assert_eq!(runs.bytes(), expected.len() as u64);
    }
}

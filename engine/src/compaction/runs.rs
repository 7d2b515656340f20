//! What a pass writes, as runs of bytes: stretches of a source segment kept as
//! stored (never copied: written straight from the mapping) and batches the write
//! side rebuilt ([`super::reseal`]) into an owned buffer. Both policies describe
//! their output this way, one source segment at a time, for the one writer
//! ([`super::writer`]).

use std::ops::Range;

/// One run of an output's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Piece {
    /// Bytes `start..end` of the source segment.
    Stored { start: usize, end: usize },
    /// Bytes `start..end` of [`Runs::rebuilt`].
    Rebuilt { start: usize, end: usize },
}

/// A source segment's output bytes in order; its buffers are reused from one
/// source segment to the next.
#[derive(Debug, Default)]
pub(super) struct Runs {
    /// The runs, in order; adjacent runs of one kind are merged.
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

    /// Appends the source's bytes `range` (joined to the last run when it follows
    /// it); an empty range adds nothing.
    pub fn push_stored(&mut self, range: Range<usize>) {
        if range.is_empty() {
            return;
        }
        if let Some(Piece::Stored { end, .. }) = self.pieces.last_mut() {
            if *end == range.start {
                *end = range.end;
                return;
            }
        }
        self.pieces.push(Piece::Stored {
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

    /// The runs' bytes, in order, over the source segment's bytes `source`.
    pub fn runs<'a>(&'a self, source: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.pieces.iter().map(move |piece| match *piece {
            Piece::Stored { start, end } => &source[start..end],
            Piece::Rebuilt { start, end } => &self.rebuilt[start..end],
        })
    }

    /// `crc` (a CRC-32C) extended by the runs' bytes over `source`.
    pub fn crc32c_append(&self, crc: u32, source: &[u8]) -> u32 {
        self.runs(source).fold(crc, |crc, data| {
            crate::format::crc::crc32c_append(crc, data)
        })
    }

    /// Bytes of the output.
    pub fn bytes(&self) -> u64 {
        self.pieces
            .iter()
            .map(|piece| match *piece {
                Piece::Stored { start, end } | Piece::Rebuilt { start, end } => {
                    (end - start) as u64
                }
            })
            .sum()
    }
}

/// Records and bytes of one source segment before and after compaction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Records before compaction.
    pub records_before: u64,
    /// Records kept.
    pub records_after: u64,
    /// Bytes of the compacted segment.
    pub bytes_after: u64,
}

/// A test's runs over `source`: a short stored run, a rebuilt one, a stored one
/// of `big` bytes and a one-byte stored run, out of order; and the bytes they make.
#[cfg(test)]
pub(super) fn sample(source: &[u8], big: usize) -> (Runs, Vec<u8>) {
    let stored = |start: usize, end: usize| Piece::Stored { start, end };
    let runs = Runs {
        rebuilt: b"encoded!".to_vec(),
        pieces: vec![
            stored(3, 9),
            Piece::Rebuilt { start: 0, end: 8 },
            stored(100, 100 + big),
            stored(20, 21),
        ],
    };
    let mut expected = source[3..9].to_vec();
    expected.extend_from_slice(b"encoded!");
    expected.extend_from_slice(&source[100..100 + big]);
    expected.extend_from_slice(&source[20..21]);
    (runs, expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of one kind join when adjacent; a gap (a dropped batch) or a run of the
    /// other kind between starts a new one; an empty stored range adds nothing.
    #[test]
    fn adjacent_runs_of_one_kind_merge() {
        let source: Vec<u8> = (0..64).collect();
        let mut runs = Runs::default();
        runs.push_stored(0..10);
        runs.push_stored(10..25);
        runs.push_stored(30..40);
        runs.push_stored(40..40);
        runs.rebuilt.extend_from_slice(b"abcde");
        runs.push_rebuilt(0);
        runs.rebuilt.extend_from_slice(b"fghi");
        runs.push_rebuilt(5);
        runs.push_stored(40..41);
        assert_eq!(
            runs.pieces,
            vec![
                Piece::Stored { start: 0, end: 25 },
                Piece::Stored { start: 30, end: 40 },
                Piece::Rebuilt { start: 0, end: 9 },
                Piece::Stored { start: 40, end: 41 },
            ]
        );
        let mut expected = source[0..25].to_vec();
        expected.extend_from_slice(&source[30..40]);
        expected.extend_from_slice(b"abcdefghi");
        expected.push(source[40]);
        assert_eq!(runs.runs(&source).collect::<Vec<_>>().concat(), expected);
        assert_eq!(runs.bytes(), expected.len() as u64);
    }
}

//! The incremental pass's reading stage on a second thread: segments checked and
//! split into batches, records parsed (compressed ones decompressed) and every key
//! hashed twice (the offset map's secret digest and the key summaries' stable hash),
//! handed over in chunks to the calling thread, which does what needs the map: its
//! inserts (`dirty::map_dirty`) or its lookups (the clean section). The two halves
//! cost about the same, so the pass takes about half the time on two cores; the
//! calling thread sees exactly the sequence a single loop would, in order.
//!
//! The full compaction's [`super::scan`] splits its work the same way.

use std::ops::ControlFlow;
use std::path::Path;

use crate::error::Result;
use crate::format::batch::NO_TIMESTAMP;
use crate::format::filename::LOG_SUFFIX;
use crate::format::key_summary::key_hash;

use super::handover;
use super::offset_map::{Digest, Digester};
use super::source::segment_path;
use super::view;
use super::walker::Walker;

/// One keyed record as the reading stage hands it over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashedRecord {
    /// The offset map's digest of the key.
    pub digest: Digest,
    /// The key summaries' stable hash of the key ([`key_hash`]).
    pub stable: u64,
    /// True for a tombstone.
    pub value_is_null: bool,
    /// The timestamp the tombstone rule reads.
    pub timestamp: i64,
}

/// What the reading stage hands over, in log order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A segment starts (before any of its batches): `source` indexes the caller's
    /// list; `next_offset` follows its last batch, `max_timestamp` is its batches'
    /// largest (both from the headers of every batch, whatever the range).
    Segment {
        source: usize,
        next_offset: i64,
        max_timestamp: i64,
    },
    /// A batch in the range: its keyed records are `records` of the chunk (none for
    /// a control batch); `keyless` says whether it holds a keyless record.
    Batch {
        base_offset: i64,
        control: bool,
        keyless: bool,
        records: std::ops::Range<usize>,
    },
}

/// One segment to read: the caller's index, its base offset and its bytes.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub source: usize,
    pub base: i64,
    pub bytes: &'a [u8],
}

/// Records a chunk holds before it is handed over: [`handover::CHUNKS`] x 16K
/// records of 40 bytes, about 2.5 MiB whatever the log's size.
const CHUNK_RECORDS: usize = 16 * 1024;

#[derive(Debug, Default)]
struct Chunk {
    items: Vec<Item>,
    records: Vec<HashedRecord>,
}

impl handover::Chunk for Chunk {
    fn clear(&mut self) {
        self.items.clear();
        self.records.clear();
    }
}

/// Reads `inputs` in order on a second thread and calls `consume` on this one with
/// every segment and every batch whose base offset is in `[from, until)`, in order.
/// `consume` may stop the walk (`Break`). A corrupt batch is the error the
/// single-threaded walk would return at the same point: the items before it are
/// consumed first.
pub fn for_each_batch(
    dir: &Path,
    inputs: &[Input<'_>],
    from: i64,
    until: i64,
    digester: Digester,
    mut consume: impl FnMut(&Item, &[HashedRecord]) -> Result<ControlFlow<()>>,
) -> Result<()> {
    handover::run(
        |chunk, hand_over| read(dir, inputs, from, until, digester, chunk, hand_over),
        |chunk: &mut Chunk| {
            for item in &chunk.items {
                let records = match item {
                    Item::Batch { records, .. } => &chunk.records[records.clone()],
                    Item::Segment { .. } => &[],
                };
                if consume(item, records)?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
            Ok(ControlFlow::Continue(()))
        },
    )
}

/// The reading stage: fills `chunk`, calling `hand_over` when it is full (false:
/// the consumer stopped, so stop too).
fn read(
    dir: &Path,
    inputs: &[Input<'_>],
    from: i64,
    until: i64,
    digester: Digester,
    chunk: &mut Chunk,
    hand_over: &mut dyn FnMut(&mut Chunk) -> bool,
) -> Result<()> {
    let mut walker = Walker::default();
    for input in inputs {
        let path = segment_path(dir, input.base, LOG_SUFFIX);
        let batches = view::batches(&path, input.base, input.bytes)?;
        chunk.items.push(Item::Segment {
            source: input.source,
            next_offset: batches.last().map_or(input.base, |b| b.last_offset() + 1),
            max_timestamp: batches
                .iter()
                .map(|b| b.header.max_timestamp)
                .max()
                .unwrap_or(NO_TIMESTAMP),
        });
        for batch in &batches {
            let base_offset = batch.header.base_offset;
            if base_offset < from {
                continue;
            }
            if base_offset >= until {
                break;
            }
            let start = chunk.records.len();
            let mut keyless = false;
            let control = batch.is_control();
            if !control {
                walker.each(&path, batch, |record| match record.key.bytes() {
                    Some(key) => chunk.records.push(HashedRecord {
                        digest: digester.digest(key),
                        stable: key_hash(key),
                        value_is_null: record.value_is_null,
                        timestamp: record.timestamp,
                    }),
                    None => keyless = true,
                })?;
            }
            chunk.items.push(Item::Batch {
                base_offset,
                control,
                keyless,
                records: start..chunk.records.len(),
            });
            if chunk.records.len() >= CHUNK_RECORDS && !hand_over(chunk) {
                return Ok(());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::offset_map::OffsetMap;
    use crate::error::{CorruptKind, Error};
    use crate::format::{Compression, ControlKind, NewRecord, RecordBatch};

    /// Segment `s` (base `100 * s`): batches of `per_batch` records whose keys
    /// repeat, a keyless record and a tombstone in each, every third batch lz4,
    /// and a control batch in the middle (lz4 with the feature `compression`).
    fn segment(s: i64, batches: i64, per_batch: i64) -> Vec<u8> {
        let mut bytes = Vec::new();
        let mut next = 1_000_000 * s;
        for b in 0..batches {
            if b == batches / 2 {
                RecordBatch::control(next, ControlKind::Commit, 7, 0, 0, 5).encode_into(&mut bytes);
                next += 1;
            }
            let records: Vec<NewRecord> = (0..per_batch)
                .map(|r| {
                    let key = (r != 3).then(|| format!("k{}", (next + r) % 997).into_bytes());
                    let value = (r != 5).then(|| b"value".to_vec());
                    NewRecord::new(key, value, next + r)
                })
                .collect();
            let mut batch = RecordBatch::build(next, &records);
            // Compressed batches only where the build has the codecs.
            if b % 3 == 0 && cfg!(feature = "compression") {
                batch = batch.with_compression(Compression::Lz4);
            }
            batch.encode_into(&mut bytes);
            next += per_batch;
        }
        bytes
    }

    /// What one loop on this thread sees: the items and their records.
    fn single(
        inputs: &[Input<'_>],
        from: i64,
        until: i64,
        digester: Digester,
    ) -> Vec<(Item, Vec<HashedRecord>)> {
        let mut chunk = Chunk::default();
        read(
            Path::new("/log"),
            inputs,
            from,
            until,
            digester,
            &mut chunk,
            &mut |_| true,
        )
        .unwrap();
        chunk
            .items
            .iter()
            .map(|item| {
                let records = match item {
                    Item::Batch { records, .. } => chunk.records[records.clone()].to_vec(),
                    Item::Segment { .. } => Vec::new(),
                };
                (item.clone(), records)
            })
            .collect()
    }

    fn piped(
        inputs: &[Input<'_>],
        from: i64,
        until: i64,
        digester: Digester,
        stop_after: usize,
    ) -> (Result<()>, Vec<(Item, Vec<HashedRecord>)>) {
        let mut seen = Vec::new();
        // Offsets restart per chunk: rebase the ranges to compare with `single`.
        let mut at = 0;
        let result = for_each_batch(
            Path::new("/log"),
            inputs,
            from,
            until,
            digester,
            |item, records| {
                let item = match item.clone() {
                    Item::Batch {
                        base_offset,
                        control,
                        keyless,
                        ..
                    } => {
                        let rebased = at..at + records.len();
                        at += records.len();
                        Item::Batch {
                            base_offset,
                            control,
                            keyless,
                            records: rebased,
                        }
                    }
                    segment => segment,
                };
                seen.push((item, records.to_vec()));
                Ok(if seen.len() == stop_after {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                })
            },
        );
        (result, seen)
    }

    #[test]
    fn the_consumer_sees_what_a_single_loop_sees_over_many_chunks() {
        // Three segments of 40 batches x 500 records: several chunks each.
        let segments: Vec<Vec<u8>> = (0..3).map(|s| segment(s, 40, 500)).collect();
        let inputs: Vec<Input<'_>> = segments
            .iter()
            .enumerate()
            .map(|(s, bytes)| Input {
                source: s + 10,
                base: 1_000_000 * s as i64,
                bytes,
            })
            .collect();
        let digester = OffsetMap::new().digester();
        for (from, until) in [(i64::MIN, i64::MAX), (1_005_000, 2_010_000), (0, 1)] {
            let want = single(&inputs, from, until, digester);
            let (result, got) = piped(&inputs, from, until, digester, usize::MAX);
            result.unwrap();
            assert_eq!(got, want, "{from}..{until}");
        }
        let all = single(&inputs, i64::MIN, i64::MAX, digester);
        assert!(all.iter().map(|(_, r)| r.len()).sum::<usize>() > 3 * CHUNK_RECORDS);
        assert!(all
            .iter()
            .any(|(i, _)| matches!(i, Item::Batch { control: true, .. })));
        assert!(all.iter().all(|(i, _)| !matches!(
            i,
            Item::Batch {
                control: false,
                keyless: false,
                ..
            }
        )));
        // Stopping early: exactly the prefix, and the reader stops too.
        let (result, got) = piped(&inputs, i64::MIN, i64::MAX, digester, 57);
        result.unwrap();
        assert_eq!(got[..], all[..57]);
    }

    #[test]
    fn a_damaged_batch_comes_after_everything_before_it() {
        let good = segment(0, 40, 500);
        let mut bad = segment(1, 40, 500);
        let last = bad.len() - 1;
        bad[last] ^= 1;
        let inputs = [
            Input {
                source: 0,
                base: 0,
                bytes: &good,
            },
            Input {
                source: 1,
                base: 1_000_000,
                bytes: &bad,
            },
        ];
        let digester = OffsetMap::new().digester();
        let (result, got) = piped(&inputs, i64::MIN, i64::MAX, digester, usize::MAX);
        let error = result.unwrap_err();
        assert!(
            matches!(
                error,
                Error::Corrupt {
                    kind: CorruptKind::ChecksumMismatch { .. },
                    ..
                }
            ),
            "{error:?}"
        );
        // The whole first segment, nothing of the second (it is checked whole first).
        assert_eq!(got, single(&inputs[..1], i64::MIN, i64::MAX, digester));
    }
}

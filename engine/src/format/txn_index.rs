//! Kafka's aborted-transaction index (`<base>.txnindex`, `TransactionIndex` and
//! `AbortedTxn` in Kafka's storage module): a sequence of 34-byte entries, one per
//! ABORT marker of the segment, in marker order:
//!
//! ```text
//! offset  size  field
//!      0     2  version            i16 = 0
//!      2     8  producerId         i64
//!     10     8  firstOffset        i64  first offset of the aborted transaction
//!     18     8  lastOffset         i64  the ABORT marker's offset
//!     26     8  lastStableOffset   i64  the LSO once the marker was written
//! ```
//!
//! Big-endian, no header, no checksum (as Kafka). Derived from the log: the engine
//! checks it against the batches before trusting it ([`check_entries`]).

#[cfg(feature = "serde")]
use serde::Serialize;

/// Bytes of one entry.
pub const ENTRY_BYTES: usize = 34;
/// The only entry version Kafka writes.
pub const VERSION: i16 = 0;

/// One aborted transaction: Kafka's `AbortedTxn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct AbortedTxn {
    /// The producer whose transaction was aborted.
    pub producer_id: i64,
    /// The offset of the transaction's first batch.
    pub first_offset: i64,
    /// The offset of the ABORT marker.
    pub last_offset: i64,
    /// The last stable offset once the marker was written: the first offset of the
    /// earliest transaction of another producer still open, or `last_offset + 1`.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    /// Appends the entry's 34 bytes to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&VERSION.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.first_offset.to_be_bytes());
        out.extend_from_slice(&self.last_offset.to_be_bytes());
        out.extend_from_slice(&self.last_stable_offset.to_be_bytes());
    }
}

/// Why a `.txnindex` is not what the log says it must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnIndexProblem {
    /// The length is not a multiple of [`ENTRY_BYTES`].
    TornEntry {
        /// The file's length.
        bytes: usize,
    },
    /// An entry's version is not 0.
    Version {
        /// The entry's index.
        entry: usize,
        /// Its version.
        version: i16,
    },
    /// The entries do not match the segment's ABORT markers.
    Mismatch {
        /// The first entry that does not match.
        entry: usize,
    },
    /// Fewer entries than ABORT markers.
    Missing {
        /// Entries found.
        entries: usize,
        /// ABORT markers that end a transaction.
        expected: usize,
    },
}

impl std::fmt::Display for TxnIndexProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TxnIndexProblem::TornEntry { bytes } => {
                write!(f, "{bytes} bytes is not a whole number of 34-byte entries")
            }
            TxnIndexProblem::Version { entry, version } => {
                write!(f, "entry {entry} has version {version}, not 0")
            }
            TxnIndexProblem::Mismatch { entry } => {
                write!(f, "entry {entry} does not match the segment's ABORT marker")
            }
            TxnIndexProblem::Missing { entries, expected } => {
                write!(f, "{entries} entries for {expected} ABORT markers")
            }
        }
    }
}

fn be_i64(bytes: &[u8], at: usize) -> i64 {
    let mut b = [0u8; 8];
    if let Some(s) = bytes.get(at..at + 8) {
        b.copy_from_slice(s);
    }
    i64::from_be_bytes(b)
}

/// Decodes a whole `.txnindex`.
pub fn decode(bytes: &[u8]) -> Result<Vec<AbortedTxn>, TxnIndexProblem> {
    if !bytes.len().is_multiple_of(ENTRY_BYTES) {
        return Err(TxnIndexProblem::TornEntry { bytes: bytes.len() });
    }
    bytes
        .chunks_exact(ENTRY_BYTES)
        .enumerate()
        .map(|(entry, e)| {
            let version = i16::from_be_bytes([
                e.first().copied().unwrap_or(0),
                e.get(1).copied().unwrap_or(0),
            ]);
            if version != VERSION {
                return Err(TxnIndexProblem::Version { entry, version });
            }
            Ok(AbortedTxn {
                producer_id: be_i64(e, 2),
                first_offset: be_i64(e, 10),
                last_offset: be_i64(e, 18),
                last_stable_offset: be_i64(e, 26),
            })
        })
        .collect()
}

/// Encodes `entries` as a whole `.txnindex`.
pub fn encode(entries: &[AbortedTxn]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * ENTRY_BYTES);
    for e in entries {
        e.encode_into(&mut out);
    }
    out
}

/// Checks a segment's decoded entries against what its batches say (`expected`,
/// rebuilt from the log): validated, not byte-compared. The producer and the
/// marker offset must match entry by entry; the first offset may be lower than
/// the rebuilt one (the rebuild starts at the log start, which retention may have
/// moved past the transaction's first batch) but not higher, nor past the marker;
/// the last stable offset is not checked against the rebuild (it depends on
/// transactions open when the marker was written, which a rebuild from a later log
/// start cannot know), only to be in `0..=last_offset + 1`.
pub fn check_entries(found: &[AbortedTxn], expected: &[AbortedTxn]) -> Result<(), TxnIndexProblem> {
    check_entries_kept(found, expected, &[])
}

/// [`check_entries`], also accepting, between the expected entries, an entry a
/// cleaning kept for an ABORT marker of the segment whose transaction has no data
/// left (Kafka's cleaner keeps the entry of an ABORT whose transaction it read a
/// batch of in the pass that removed it). `aborts`: (producer id, offset) of every
/// ABORT marker of the segment.
pub fn check_entries_kept(
    found: &[AbortedTxn],
    expected: &[AbortedTxn],
    aborts: &[(i64, i64)],
) -> Result<(), TxnIndexProblem> {
    if found.len() < expected.len() {
        return Err(TxnIndexProblem::Missing {
            entries: found.len(),
            expected: expected.len(),
        });
    }
    let sane = |f: &AbortedTxn| {
        f.first_offset >= 0
            && f.first_offset <= f.last_offset
            && f.last_stable_offset >= 0
            && f.last_stable_offset <= f.last_offset + 1
    };
    let mut next = 0;
    for (entry, f) in found.iter().enumerate() {
        if let Some(e) = expected.get(next) {
            if f.producer_id == e.producer_id
                && f.last_offset == e.last_offset
                && f.first_offset <= e.first_offset
                && sane(f)
            {
                next += 1;
                continue;
            }
        }
        let kept = aborts.contains(&(f.producer_id, f.last_offset))
            && !expected.iter().any(|e| e.last_offset == f.last_offset)
            && sane(f);
        if !kept {
            return Err(TxnIndexProblem::Mismatch { entry });
        }
    }
    if next < expected.len() {
        return Err(TxnIndexProblem::Missing {
            entries: next,
            expected: expected.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: i64, first: i64, last: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: last + 1,
        }
    }

    #[test]
    fn kafka_layout_round_trips() {
        let e = AbortedTxn {
            producer_id: 0x0102_0304_0506_0708,
            first_offset: 5,
            last_offset: 9,
            last_stable_offset: 7,
        };
        let bytes = encode(&[e]);
        assert_eq!(bytes.len(), ENTRY_BYTES);
        assert_eq!(&bytes[..2], &[0, 0]);
        assert_eq!(&bytes[2..10], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&bytes[18..26], &9i64.to_be_bytes());
        assert_eq!(&bytes[26..34], &7i64.to_be_bytes());
        assert_eq!(decode(&bytes), Ok(vec![e]));
    }

    #[test]
    fn damage_is_found() {
        let mut bytes = encode(&[entry(1, 0, 3), entry(2, 1, 4)]);
        assert_eq!(
            decode(&bytes[..40]),
            Err(TxnIndexProblem::TornEntry { bytes: 40 })
        );
        bytes[34] = 1;
        assert!(matches!(
            decode(&bytes),
            Err(TxnIndexProblem::Version { entry: 1, .. })
        ));
        let good = [entry(1, 0, 3), entry(2, 1, 4)];
        assert_eq!(check_entries(&good, &good), Ok(()));
        assert!(check_entries(&good[..1], &good).is_err());
        assert!(check_entries(&good, &good[..1]).is_err());
        assert!(check_entries(&[entry(1, 0, 3), entry(2, 1, 5)], &good).is_err());
        // A kept entry of an ABORT marker whose data is gone, between expected ones.
        let kept = [entry(9, 0, 2), entry(1, 0, 3), entry(2, 1, 4)];
        assert!(check_entries(&kept, &good).is_err());
        assert_eq!(check_entries_kept(&kept, &good, &[(9, 2)]), Ok(()));
        assert!(check_entries_kept(&kept, &good, &[(9, 6)]).is_err());
        assert!(check_entries_kept(&kept, &good, &[(8, 2)]).is_err());
        // An expected entry is never taken for a kept one.
        assert!(check_entries_kept(&good[..1], &good, &[(2, 4)]).is_err());
        assert!(check_entries_kept(
            &[entry(1, 0, 3), entry(2, 1, 4), entry(2, 1, 4)],
            &good,
            &[(2, 4)]
        )
        .is_err());
        assert!(check_entries(&[entry(1, 0, 3), entry(2, 2, 4)], &good).is_err());
        // A first offset below the rebuilt one: the rebuild started later.
        assert_eq!(
            check_entries(&[entry(1, 0, 3), entry(2, 0, 4)], &good),
            Ok(())
        );
    }
}

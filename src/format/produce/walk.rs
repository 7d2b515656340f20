//! The produce check's short record walk ([`accepts`]): the records of a batch
//! checked without building a [`RecordView`](crate::format::record::RecordView)
//! or an error per record.
//!
//! It only ever *accepts*: `Some(max timestamp)` for records that the full walk
//! ([`super::check_one`]'s `records_with` loop, Kafka's full decode) accepts with
//! that maximum, `None` for anything else, when the full walk runs and names the
//! rule. So it cannot accept what the full decode refuses as long as every
//! `Some` below is one the full walk gives too; records with headers (rare; their
//! keys need a UTF-8 check) always take the full walk. The differential proptest
//! in `super::tests` (`short_walk_agrees_with_the_full_walk`) feeds both walks
//! valid batches and every kind of damage (bytes flipped, cut, lengths changed,
//! varints made overlong) with the CRC made valid again, so the walks are
//! reached, and checks that they give the same answer.
//!
//! Per record it reads what the full decode reads, with the same varint rules
//! (`Cursor` in [`crate::format::record`]: a varint of at most two bytes decoded
//! inline, a longer one by [`get_varint`]/[`get_varlong`], so overlong encodings
//! that Kafka and the full decode take are taken here too): length >= 0 and
//! within the records, attributes, timestamp delta, offset delta equal to the
//! record's index, key and value lengths >= -1 and within the record, header count
//! 0, nothing left in the record; after `count` records, nothing left at all. Each
//! timestamp (`base_timestamp + delta`, wrapping as the full walk) is >= -1.

use crate::format::batch::NO_TIMESTAMP;
use crate::format::varint::{get_varint, get_varlong};

/// A position in the records' bytes that never reads out of bounds; every
/// failure is `None`.
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    /// The zigzag-decoded varlong at the front: two bytes inline, else
    /// [`get_varlong`] (at most 10 bytes).
    #[inline(always)]
    fn varlong(&mut self) -> Option<i64> {
        let rest = self.buf.get(self.at..)?;
        let raw = match *rest {
            [b0, ..] if b0 < 0x80 => {
                self.at += 1;
                u64::from(b0)
            }
            [b0, b1, ..] if b1 < 0x80 => {
                self.at += 2;
                u64::from(b0 & 0x7f) | u64::from(b1) << 7
            }
            _ => return self.long_varlong(),
        };
        Some(((raw >> 1) as i64) ^ -((raw & 1) as i64))
    }

    #[inline(never)]
    fn long_varlong(&mut self) -> Option<i64> {
        let (value, used) = get_varlong(self.buf.get(self.at..)?).ok()?;
        self.at += used;
        Some(value)
    }

    /// The varint at the front (a varlong within `i32` of at most 5 bytes: two
    /// inline bytes always are).
    #[inline(always)]
    fn varint(&mut self) -> Option<i64> {
        let rest = self.buf.get(self.at..)?;
        match *rest {
            [b0, ..] if b0 < 0x80 => {
                self.at += 1;
                let raw = u64::from(b0);
                Some(((raw >> 1) as i64) ^ -((raw & 1) as i64))
            }
            [b0, b1, ..] if b1 < 0x80 => {
                self.at += 2;
                let raw = u64::from(b0 & 0x7f) | u64::from(b1) << 7;
                Some(((raw >> 1) as i64) ^ -((raw & 1) as i64))
            }
            _ => self.long_varint(),
        }
    }

    #[inline(never)]
    fn long_varint(&mut self) -> Option<i64> {
        let (value, used) = get_varint(self.buf.get(self.at..)?).ok()?;
        self.at += used;
        Some(i64::from(value))
    }

    /// Skips `n` bytes, if there are that many.
    #[inline(always)]
    fn skip(&mut self, n: usize) -> Option<()> {
        let end = self.at.checked_add(n)?;
        if end > self.buf.len() {
            return None;
        }
        self.at = end;
        Some(())
    }

    /// A nullable length (-1: null) and its bytes, skipped.
    #[inline(always)]
    fn skip_nullable(&mut self) -> Option<()> {
        match self.varint()? {
            -1 => Some(()),
            n if n < 0 => None,
            n => self.skip(usize::try_from(n).ok()?),
        }
    }
}

/// `Some(max timestamp)` (-1 if none is above -1) if the `count` records in
/// `records` (exactly the records' bytes: uncompressed after the header, or
/// inflated) pass every record rule of the produce check; `None` if they break
/// one, or have headers (then the full walk decides).
pub(super) fn accepts(records: &[u8], count: usize, base_timestamp: i64) -> Option<i64> {
    let mut outer = Reader {
        buf: records,
        at: 0,
    };
    let mut max_timestamp = NO_TIMESTAMP;
    for index in 0..count {
        let length = usize::try_from(outer.varint()?).ok()?;
        let start = outer.at;
        outer.skip(length)?;
        let mut record = Reader {
            buf: records.get(start..outer.at)?,
            at: 0,
        };
        record.skip(1)?; // attributes
        let timestamp_delta = record.varlong()?;
        if record.varint()? != index as i64 {
            return None;
        }
        record.skip_nullable()?; // key
        record.skip_nullable()?; // value
        if record.varint()? != 0 || record.at != record.buf.len() {
            return None;
        }
        let timestamp = base_timestamp.wrapping_add(timestamp_delta);
        if timestamp < NO_TIMESTAMP {
            return None;
        }
        max_timestamp = max_timestamp.max(timestamp);
    }
    (outer.at == records.len()).then_some(max_timestamp)
}

#[cfg(test)]
mod tests;

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
//!
//! Two readers of a record: [`record_at_fast`] takes the shape producers write
//! (the first five varints of one or two bytes within one 8-byte load, the header
//! count one byte 0 at the end) with few branches and loads, and [`record_at`],
//! field by field, decides whatever the fast one passes on. The fast one only
//! passes on or agrees (its doc says why); `a_varint_past_the_fast_paths_word_is_not_misread`
//! in `tests` holds it to the one bound the proptest does not reach.

use crate::format::batch::NO_TIMESTAMP;
use crate::format::varint::{get_varint, get_varlong};

// Every reader below takes the bytes and a position and returns the value and the
// position after it, so that the position stays in a register through the whole
// walk (a `&mut` cursor that the out-of-line long paths borrow is kept in memory,
// and each varint then waits on a store and a load of it).

/// The zigzag decoding of `raw`.
#[inline(always)]
fn zigzag(raw: u64) -> i64 {
    ((raw >> 1) as i64) ^ -((raw & 1) as i64)
}

/// The zigzag-decoded varlong at `buf[at..]` and the position after it: one or
/// two bytes inline, else [`get_varlong`] (at most 10 bytes).
#[inline(always)]
fn varlong(buf: &[u8], at: usize) -> Option<(i64, usize)> {
    match *buf.get(at..)? {
        [b0, ..] if b0 < 0x80 => Some((zigzag(u64::from(b0)), at + 1)),
        [b0, b1, ..] if b1 < 0x80 => {
            Some((zigzag(u64::from(b0 & 0x7f) | u64::from(b1) << 7), at + 2))
        }
        _ => long_varlong(buf, at),
    }
}

#[cold]
#[inline(never)]
fn long_varlong(buf: &[u8], at: usize) -> Option<(i64, usize)> {
    let (value, used) = get_varlong(buf.get(at..)?).ok()?;
    Some((value, at + used))
}

/// The varint at `buf[at..]` (a varlong within `i32` of at most 5 bytes: two
/// inline bytes always are) and the position after it.
#[inline(always)]
fn varint(buf: &[u8], at: usize) -> Option<(i64, usize)> {
    match *buf.get(at..)? {
        [b0, ..] if b0 < 0x80 => Some((zigzag(u64::from(b0)), at + 1)),
        [b0, b1, ..] if b1 < 0x80 => {
            Some((zigzag(u64::from(b0 & 0x7f) | u64::from(b1) << 7), at + 2))
        }
        _ => long_varint(buf, at),
    }
}

#[cold]
#[inline(never)]
fn long_varint(buf: &[u8], at: usize) -> Option<(i64, usize)> {
    let (value, used) = get_varint(buf.get(at..)?).ok()?;
    Some((i64::from(value), at + used))
}

/// The position `n` bytes after `at`, if `buf` has that many.
#[inline(always)]
fn skip(buf: &[u8], at: usize, n: usize) -> Option<usize> {
    let end = at.checked_add(n)?;
    (end <= buf.len()).then_some(end)
}

/// The position after the nullable length (-1: null) at `buf[at..]` and its bytes.
#[inline(always)]
fn skip_nullable(buf: &[u8], at: usize) -> Option<usize> {
    match varint(buf, at)? {
        (-1, at) => Some(at),
        (n, at) => skip(buf, at, usize::try_from(n).ok()?),
    }
}

/// The timestamp delta of `record` (exactly one record's bytes after its length)
/// if it is the record at `index` and passes every rule but the timestamp's.
#[inline(always)]
fn record_timestamp_delta(record: &[u8], index: usize) -> Option<i64> {
    let at = skip(record, 0, 1)?; // attributes
    let (timestamp_delta, at) = varlong(record, at)?;
    let (offset_delta, at) = varint(record, at)?;
    if offset_delta != index as i64 {
        return None;
    }
    let at = skip_nullable(record, at)?; // key
    let at = skip_nullable(record, at)?; // value
    let (header_count, at) = varint(record, at)?;
    (header_count == 0 && at == record.len()).then_some(timestamp_delta)
}

/// The zigzag varint of one or two bytes at the front of `word` (bytes in order
/// from the low end), and `word` and `used` advanced past it; `None` for a longer
/// one. Past the word's end it reads zero bytes, so `used` beyond 8 means that a
/// field did not fit the word.
#[inline(always)]
fn word_varint(word: &mut u64, used: &mut usize) -> Option<i64> {
    let b0 = *word & 0xff;
    if b0 < 0x80 {
        *word >>= 8;
        *used += 1;
        return Some(zigzag(b0));
    }
    let b1 = (*word >> 8) & 0xff;
    if b1 < 0x80 {
        *word >>= 16;
        *used += 2;
        return Some(zigzag((b0 & 0x7f) | b1 << 7));
    }
    None
}

/// The record at `records[at..]` as a producer nearly always encodes it: its
/// length, attributes, timestamp delta, offset delta and key length in the 8 bytes
/// from `at`, each varint of one or two bytes, and a header count of one byte 0
/// last. `Some((timestamp delta, position after the record))` only where
/// [`record_at`] gives the same; `None` for anything else, which `record_at` then
/// decides. Reads may run past the record's end into the bytes after it, but every
/// position only grows, so one that did cannot end exactly at the record's end.
#[inline(always)]
fn record_at_fast(records: &[u8], at: usize, index: usize) -> Option<(i64, usize)> {
    let bytes: [u8; 8] = records.get(at..at.checked_add(8)?)?.try_into().ok()?;
    let mut word = u64::from_le_bytes(bytes);
    let mut used = 0;
    let length = usize::try_from(word_varint(&mut word, &mut used)?).ok()?;
    let end = skip(records, at + used, length)?;
    word >>= 8; // attributes
    used += 1;
    let timestamp_delta = word_varint(&mut word, &mut used)?;
    let offset_delta = word_varint(&mut word, &mut used)?;
    let key_length = word_varint(&mut word, &mut used)?;
    if used > 8 || offset_delta != index as i64 {
        return None;
    }
    let at = match key_length {
        -1 => at + used,
        n => skip(records, at + used, usize::try_from(n).ok()?)?,
    };
    let at = skip_nullable(records, at)?; // value
                                          // The header count, read where it nearly always is, the record's last byte:
                                          // that load waits on the record's length only, not on the key and value
                                          // lengths, as a read at `at` would.
    (records.get(end - 1) == Some(&0) && at + 1 == end).then_some((timestamp_delta, end))
}

/// The record at `records[at..]` if it is the record at `index` and passes every
/// rule but the timestamp's: its timestamp delta and the position after it.
#[inline(never)]
fn record_at(records: &[u8], at: usize, index: usize) -> Option<(i64, usize)> {
    let (length, start) = varint(records, at)?;
    let end = skip(records, start, usize::try_from(length).ok()?)?;
    let timestamp_delta = record_timestamp_delta(records.get(start..end)?, index)?;
    Some((timestamp_delta, end))
}

/// `Some(max timestamp)` (-1 if none is above -1) if the `count` records in
/// `records` (exactly the records' bytes: uncompressed after the header, or
/// inflated) pass every record rule of the produce check; `None` if they break
/// one, or have headers (then the full walk decides).
pub(super) fn accepts(records: &[u8], count: usize, base_timestamp: i64) -> Option<i64> {
    let mut at = 0;
    let mut max_timestamp = NO_TIMESTAMP;
    // The smallest timestamp, held to >= -1 once after the loop.
    let mut min_timestamp = i64::MAX;
    for index in 0..count {
        let (timestamp_delta, end) = match record_at_fast(records, at, index) {
            Some(fast) => fast,
            None => record_at(records, at, index)?,
        };
        at = end;
        let timestamp = base_timestamp.wrapping_add(timestamp_delta);
        max_timestamp = max_timestamp.max(timestamp);
        min_timestamp = min_timestamp.min(timestamp);
    }
    (min_timestamp >= NO_TIMESTAMP && at == records.len()).then_some(max_timestamp)
}

#[cfg(test)]
mod tests;

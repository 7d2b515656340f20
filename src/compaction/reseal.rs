//! The write side's header patch: a batch whose records were cut, written at the
//! end of an output buffer, gets its length, `maxTimestamp`, record count and CRC
//! anew; everything else in its header stays the source's.

use crate::format::batch::{
    ATTRIBUTES_OFFSET, CRC_OFFSET, LENGTH_OFFSET, LOG_OVERHEAD, MAX_TIMESTAMP_OFFSET,
    RECORDS_OFFSET, RECORD_COUNT_OFFSET,
};

/// Finishes a partly kept batch written at `out[start..]` (the source's header, then
/// the kept records, compressed or not): its length, `maxTimestamp` and record count
/// in the header, then the CRC over everything after it. Base offset and last offset
/// delta stay the source's.
pub(super) fn seal_kept_batch(out: &mut [u8], start: usize, max_timestamp: i64, count: i32) {
    let length = i32::try_from(out.len() - start - LOG_OVERHEAD).expect("a batch's size fits");
    let header = &mut out[start..start + RECORDS_OFFSET];
    header[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
    header[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
        .copy_from_slice(&max_timestamp.to_be_bytes());
    header[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4].copy_from_slice(&count.to_be_bytes());
    let crc = crate::format::crc::crc32c(&out[start + ATTRIBUTES_OFFSET..]);
    out[start + CRC_OFFSET..start + CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

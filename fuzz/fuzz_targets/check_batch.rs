//! The checks of the `decode_batch` fuzz target. Shared with `tests/fuzz_corpus.rs` (included
//! by path), so `cargo test` replays the committed seeds through exactly what the
//! fuzzer runs. The function panics with a description when an invariant breaks.

use seglog::format::batch::{decode, decode_header};

/// Decodes arbitrary bytes as a record batch.
///
/// Invariants checked:
/// - `decode` returns `Ok` or a structured `FormatError`; it never panics, never reads
///   out of bounds, never allocates without bound (the 64 MiB batch cap).
/// - An `Ok` batch uses at most the bytes given and round-trips: encoding it and
///   decoding the result gives the same batch, using exactly the encoded length
///   (byte equality with the input is not required: like Kafka, the decoder accepts
///   non-minimal varints, which the encoder never writes).
/// - `decode_header` agrees with `decode` on base offset and size.
/// - The compaction's key walk (`RecordViews::keys`) yields the records and errors
///   the full record walk yields.
pub fn decode_batch(data: &[u8]) {
    decode_checked(data);
    // The same bytes with the CRC resealed over the declared length: a CRC-valid
    // batch with whatever header fields the input holds (extreme offsets, deltas,
    // counts, timestamps), which the CRC would otherwise refuse first.
    if let Some(sealed) = resealed(data) {
        decode_checked(&sealed);
    }
}

/// `data` with bytes `[17, 21)` set to the CRC-32C of `[21, 12 + batchLength)`,
/// when the declared length fits in `data`.
fn resealed(data: &[u8]) -> Option<Vec<u8>> {
    use seglog::format::batch::{ATTRIBUTES_OFFSET, CRC_OFFSET, LENGTH_OFFSET, LOG_OVERHEAD};
    let length = i32::from_be_bytes(data.get(LENGTH_OFFSET..LOG_OVERHEAD)?.try_into().ok()?);
    let end = LOG_OVERHEAD.checked_add(usize::try_from(length).ok()?)?;
    let covered = data.get(ATTRIBUTES_OFFSET..end)?;
    let crc = seglog::format::crc::crc32c(covered);
    let mut out = data.to_vec();
    out.get_mut(CRC_OFFSET..CRC_OFFSET + 4)?
        .copy_from_slice(&crc.to_be_bytes());
    Some(out)
}

/// The compaction's key walk ([`seglog::format::RecordViews::keys`]) yields what
/// the full record walk yields, records and errors alike, on any batch the view
/// accepts.
fn walks_agree(data: &[u8]) {
    let Ok((view, _)) = seglog::format::BatchView::decode(data) else {
        return;
    };
    let full: Vec<_> = view
        .records()
        .map(|r| {
            r.map(|r| {
                let key = r.key.map(<[u8]>::to_vec);
                (r.offset_delta, r.timestamp_delta, key, r.value.is_none())
            })
        })
        .collect();
    let keys: Vec<_> = view
        .records()
        .keys()
        .map(|r| {
            r.map(|r| {
                let key = r.key.map(<[u8]>::to_vec);
                (r.offset_delta, r.timestamp_delta, key, r.value_is_null)
            })
        })
        .collect();
    assert_eq!(keys, full, "the key walk and the full walk disagree");
}

fn decode_checked(data: &[u8]) {
    walks_agree(data);
    let Ok((batch, used)) = decode(data) else {
        return;
    };
    assert!(used <= data.len(), "used {used} of {} bytes", data.len());
    let encoded = batch.encode();
    assert_eq!(encoded.len(), batch.encoded_len());
    let (again, again_used) = decode(&encoded).expect("a re-encoded batch must decode");
    assert_eq!(again, batch);
    assert_eq!(again_used, encoded.len());
    let header = decode_header(data).expect("the header of a decoded batch decodes");
    assert_eq!(header.size, used);
    assert_eq!(header.base_offset, batch.base_offset);
}

/// A compressed batch around arbitrary payload bytes, with a valid CRC, so only the
/// payload checks can object: byte 0 picks the codec (gzip, snappy, lz4, zstd),
/// byte 1 the declared record count (0-15), bit 4 of byte 1 LogAppendTime; the rest
/// is the compressed payload.
pub fn compressed_batch(data: &[u8]) -> Option<Vec<u8>> {
    use seglog::format::batch::{
        ATTRIBUTES_OFFSET, CRC_OFFSET, LAST_OFFSET_DELTA_OFFSET, LENGTH_OFFSET, RECORDS_OFFSET,
        RECORD_COUNT_OFFSET,
    };
    use seglog::format::{Compression, NewRecord, RecordBatch};
    let (&codec, rest) = data.split_first()?;
    let (&count, payload) = rest.split_first()?;
    let codec = Compression::ALL[1 + usize::from(codec % 4)];
    let mut batch =
        RecordBatch::build(0, &[NewRecord::new(None, Some(Vec::new()), 0)]).with_compression(codec);
    if count & 0x10 != 0 {
        batch = batch.with_log_append_time(7);
    }
    let mut bytes = batch.encode();
    bytes.truncate(RECORDS_OFFSET);
    bytes.extend_from_slice(payload);
    let length = i32::try_from(bytes.len() - 12).ok()?;
    bytes[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
    let count = i32::from(count & 0x0f);
    bytes[LAST_OFFSET_DELTA_OFFSET..LAST_OFFSET_DELTA_OFFSET + 4]
        .copy_from_slice(&15i32.to_be_bytes());
    bytes[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4].copy_from_slice(&count.to_be_bytes());
    let crc = seglog::format::crc::crc32c(&bytes[ATTRIBUTES_OFFSET..]);
    bytes[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    Some(bytes)
}

/// Decodes [`compressed_batch`] of arbitrary bytes.
///
/// Invariants checked:
/// - `decode` never panics and never inflates beyond `INFLATED_BYTES_MAX`
///   (a bomb is `DecompressedTooLarge`, found before the allocation).
/// - A failure is `Corrupt` at the payload's first byte (it does not decompress,
///   or a record inside it is bad) or at `recordCount` (more or fewer records than
///   declared); never `Unsupported`, never elsewhere: the header and CRC are valid.
/// - Success means the payload decompresses (with the same bound) to exactly the
///   decoded records' encoding, and the batch round-trips like any other
///   ([`decode_batch`]); under LogAppendTime every record reads as maxTimestamp.
pub fn decode_compressed(data: &[u8]) {
    use seglog::format::batch::{RECORDS_OFFSET, RECORD_COUNT_OFFSET};
    use seglog::format::batch_view::INFLATED_BYTES_MAX;
    use seglog::format::{FormatError, TimestampType};
    let Some(bytes) = compressed_batch(data) else {
        return;
    };
    match decode(&bytes) {
        Ok((batch, used)) => {
            assert_eq!(used, bytes.len());
            let inflated = batch
                .compression()
                .decompress(&bytes[RECORDS_OFFSET..], INFLATED_BYTES_MAX)
                .expect("a decoded payload decompresses");
            assert_eq!(inflated, batch.encoded_records());
            if batch.timestamp_type() == TimestampType::LogAppendTime {
                assert!(batch.records.iter().all(|r| batch.timestamp_of(r) == 7));
            }
            decode_batch(&bytes);
        }
        Err(FormatError::Corrupt { position, .. }) => {
            assert!(
                position == RECORDS_OFFSET as u64 || position == RECORD_COUNT_OFFSET as u64,
                "error at {position}"
            );
        }
        Err(other) => panic!("a CRC-valid compressed batch failed with {other:?}"),
    }
}

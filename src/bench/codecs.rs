//! The codecs' benchmarks (`seglog bench --only codecs`): each engine path on
//! compressed batches beside the codec doing its part alone, in the same run.
//!
//! * append with a codec (the appends and the flush: the fsync a durable append
//!   needs; the open of the new log and its close are untimed, as they are not
//!   appends) vs compressing the same batches' records with the codec alone (no
//!   log, no IO), and vs the codec + a buffered write + fsync of the compressed
//!   bytes ([`compress_write_fsync`]): the floor that pays the write and the
//!   fsync too, so what is left is the log's own work; and (lz4) vs encoding the
//!   records from `NewRecord`s and compressing them, no IO
//!   ([`encode_compress_only`]);
//! * `fetch` of a compressed log vs `fetch` of the uncompressed log of the same
//!   records: fetch hands out stored bytes, so it must not get slower;
//! * `read` (owned records), [`Log::read_each`] (borrowed) and `fetch` +
//!   `records()` of a compressed log vs decompressing every batch's payload alone;
//! * compaction (install step 1) of a 50%-obsolete lz4 log, where every closed
//!   batch is partly kept, vs decompressing and recompressing the same payloads,
//!   and vs the same + a buffered write + fsync ([`recompress_write_fsync`]);
//! * two ceilings, not the log: the least work a durable structured append does
//!   on its thread ([`encode_compress_write_writeback_fsync`]) and the least an
//!   owned read does ([`owned_records_only`]), beside the codec alone: each is a
//!   part of its log path's work, so the log path's ratio stays at or below it.
//!
//! The timed parts use [`Stopwatch`], so every row carries CPU time beside wall
//! time. No check is skipped on either side: the engine's paths are the ones a
//! user calls.

use std::path::{Path, PathBuf};
use std::time::Duration;

use seglog::compaction::CompactOptions;
use seglog::error::{Error, Result};
use seglog::format::batch::RECORDS_OFFSET;
use seglog::format::batch_view::{BatchView, INFLATED_BYTES_MAX};
use seglog::format::{Compression, NewRecord, RecordBatch};
use seglog::fs::FileSystem;
use seglog::install::InstallPaths;
use seglog::log::{Log, LogConfig, ReadRecords, RecordRef};

use super::{LogFixture, Stopwatch};

/// Segment size of the codec logs (a handful of segments for a million records).
pub const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;

/// The codec benchmarks' records: 16-byte keys and 100-byte values of words drawn
/// from a small vocabulary by a fixed xorshift sequence, which compress about as
/// well as typical JSON or log lines (2-3x with lz4), unlike the shared fixture's
/// values of one repeated byte (which no real topic holds, and which make every
/// codec look free).
pub fn codec_fixture(records: usize, per_batch: usize) -> LogFixture {
    const WORDS: [&str; 16] = [
        "user", "id", "event", "click", "view", "price", "ts", "session", "page", "ok", "error",
        "region", "eu", "us", "mobile", "web",
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let all: Vec<NewRecord> = (0..records)
        .map(|n| {
            let mut value = Vec::with_capacity(super::VALUE_BYTES + 16);
            while value.len() < super::VALUE_BYTES {
                let r = next();
                value.extend_from_slice(WORDS[(r % 16) as usize].as_bytes());
                value.push(b'=');
                value.extend_from_slice(format!("{}", (r >> 8) % 1000).as_bytes());
                value.push(b' ');
            }
            value.truncate(super::VALUE_BYTES);
            NewRecord::new(
                Some(format!("key-{n:012}").into_bytes()),
                Some(value),
                1_700_000_000_000 + n as i64,
            )
        })
        .collect();
    let batches: Vec<Vec<NewRecord>> = all.chunks(per_batch.max(1)).map(<[_]>::to_vec).collect();
    let mut bytes = Vec::new();
    let mut offset = 0i64;
    for batch in &batches {
        let built = RecordBatch::build(offset, batch);
        offset = built.next_offset();
        built.encode_into(&mut bytes);
    }
    LogFixture { batches, bytes }
}

/// The records of every batch of `fixture`, encoded as a compressed batch's
/// payload holds them before compression.
pub fn encoded_records(fixture: &LogFixture) -> Vec<Vec<u8>> {
    let mut next = 0i64;
    fixture
        .batches
        .iter()
        .map(|batch| {
            let built = RecordBatch::build(next, batch);
            next = built.next_offset();
            built.encoded_records()
        })
        .collect()
}

/// Compresses every batch's records with `codec`; the batches compressed.
pub fn compress_only(codec: Compression, records: &[Vec<u8>]) -> Result<usize> {
    let mut out = Vec::new();
    for batch in records {
        out.clear();
        codec.compress_into(batch, &mut out);
        std::hint::black_box(&out);
    }
    Ok(records.len())
}

/// Encodes every batch's records from the caller's [`NewRecord`]s (the Kafka v2
/// record encoding a structured append does, into one reused buffer, as the log
/// does) and compresses them with `codec`, no IO; the batches. [`compress_only`]
/// is handed records encoded ahead of time, so it leaves out work a structured
/// append cannot skip; this floor keeps it and still writes nothing.
pub fn encode_compress_only(codec: Compression, fixture: &LogFixture) -> Result<usize> {
    let (mut plain, mut out) = (Vec::new(), Vec::new());
    for batch in &fixture.batches {
        plain.clear();
        seglog::testing::encode_records_checked(batch, RECORDS_OFFSET, &mut plain)
            .ok_or_else(|| Error::InvalidArgument("the fixture's records are refused".into()))?;
        out.clear();
        codec.compress_into(&plain, &mut out);
        std::hint::black_box(&out);
    }
    Ok(fixture.batches.len())
}

/// Decompresses every payload; the payloads decompressed.
pub fn decompress_only(codec: Compression, payloads: &[Vec<u8>]) -> Result<usize> {
    for payload in payloads {
        let inflated = codec
            .decompress(payload, INFLATED_BYTES_MAX)
            .map_err(|e| Error::InvalidArgument(format!("{codec}: {e:?}")))?;
        std::hint::black_box(&inflated);
    }
    Ok(payloads.len())
}

/// Decompresses every payload and compresses the result again; the payloads.
pub fn recompress_only(codec: Compression, payloads: &[Vec<u8>]) -> Result<usize> {
    let mut out = Vec::new();
    for payload in payloads {
        let inflated = codec
            .decompress(payload, INFLATED_BYTES_MAX)
            .map_err(|e| Error::InvalidArgument(format!("{codec}: {e:?}")))?;
        out.clear();
        codec.compress_into(&inflated, &mut out);
        std::hint::black_box(&out);
    }
    Ok(payloads.len())
}

/// [`recompress_only`] writing the recompressed payloads to a new file in `dir`
/// through a `BufWriter`, then fsyncing it: the floor of a compaction, which
/// must make its output durable too; the time.
pub fn recompress_write_fsync(
    dir: &Path,
    codec: Compression,
    payloads: &[Vec<u8>],
) -> Result<Duration> {
    let path = dir.join("recompressed.bin");
    let mut payloads = payloads.iter();
    let mut failed = None;
    let start = Stopwatch::start();
    crate::bench::baseline::write_produced(&path, |out| {
        let Some(payload) = payloads.next() else {
            return false;
        };
        match codec.decompress(payload, INFLATED_BYTES_MAX) {
            Ok(inflated) => {
                codec.compress_into(&inflated, out);
                true
            }
            Err(e) => {
                failed = Some(e);
                false
            }
        }
    })
    .map_err(|e| Error::io(&path, e))?;
    let took = start.stop();
    match failed {
        Some(e) => Err(Error::InvalidArgument(format!("{codec}: {e:?}"))),
        None => Ok(took),
    }
}

fn config(codec: Compression) -> LogConfig {
    LogConfig {
        segment_bytes: SEGMENT_BYTES,
        compression: codec,
        ..LogConfig::default()
    }
}

/// Appends every batch to a new log in `dir` writing `codec` and flushes it; the
/// time of the appends and the flush. The flush (the fsync of the active segment)
/// is part of a durable append, so it is timed; the open of the new log (creating
/// its directory, files and checkpoint) and the close (Kafka's close-time index
/// entry, the index files' fsyncs, the clean-shutdown marker) are not appends and
/// happen outside the timed part. (Before, both were timed: 60-75 ms of 280-400 ms,
/// which the codec-only floor never pays.)
pub fn append_codec(dir: &Path, fixture: &LogFixture, codec: Compression) -> Result<Duration> {
    append_codec_writeback(dir, fixture, codec, config(codec).writeback_bytes)
}

/// [`append_codec`] with [`LogConfig::writeback_bytes`] set to `writeback_bytes`
/// (0: no write-back hint, so the flush writes everything).
pub fn append_codec_writeback(
    dir: &Path,
    fixture: &LogFixture,
    codec: Compression,
    writeback_bytes: u64,
) -> Result<Duration> {
    let config = LogConfig {
        writeback_bytes,
        ..config(codec)
    };
    let (mut log, _) = Log::open(dir, config)?;
    let start = Stopwatch::start();
    for batch in &fixture.batches {
        log.append(batch)?;
    }
    log.flush()?;
    let took = start.stop();
    log.close()?;
    Ok(took)
}

/// [`append_codec`] without the flush: the appends alone (the kernel has the
/// bytes, nothing is durable yet).
pub fn append_codec_appends_only(
    dir: &Path,
    fixture: &LogFixture,
    codec: Compression,
) -> Result<Duration> {
    let (mut log, _) = Log::open(dir, config(codec))?;
    let start = Stopwatch::start();
    for batch in &fixture.batches {
        log.append(batch)?;
    }
    let took = start.stop();
    log.close()?;
    Ok(took)
}

/// The second floor of a durable append: compresses every batch's records with
/// `codec` and writes them to a new file in `dir` through a `BufWriter`, then
/// fsyncs it; the time. What [`append_codec`] pays beyond it is the log's own
/// work (framing, CRC, indexes, offsets), not the fsync both need.
pub fn compress_write_fsync(
    dir: &Path,
    codec: Compression,
    records: &[Vec<u8>],
) -> Result<Duration> {
    compress_write_hinted_fsync(dir, codec, records, 0)
}

/// [`compress_write_fsync`] starting the file's write-back every
/// [`LogConfig::writeback_bytes`] (the log's default), as the log does.
pub fn compress_write_writeback_fsync(
    dir: &Path,
    codec: Compression,
    records: &[Vec<u8>],
) -> Result<Duration> {
    let every = LogConfig::default().writeback_bytes;
    compress_write_hinted_fsync(dir, codec, records, every)
}

/// The two floors above: a write-back hint every `writeback_bytes` (0: none).
fn compress_write_hinted_fsync(
    dir: &Path,
    codec: Compression,
    records: &[Vec<u8>],
    writeback_bytes: u64,
) -> Result<Duration> {
    let path = dir.join("compressed.bin");
    let mut batches = records.iter();
    let start = Stopwatch::start();
    crate::bench::baseline::write_produced_writeback(&path, writeback_bytes, |out| {
        batches
            .next()
            .map(|batch| codec.compress_into(batch, out))
            .is_some()
    })
    .map_err(|e| Error::io(&path, e))?;
    Ok(start.stop())
}

/// The least a durable structured append of `fixture` does on the appending
/// thread, and nothing more: encode each batch's records from its `NewRecord`s
/// (the log's own encoder), compress them with `codec`, write them to a new file
/// in `dir` through a `BufWriter`, starting the write-back every
/// [`LogConfig::writeback_bytes`] as the log does, and fsync it; no batch
/// header, CRC, offsets, indexes or segment. The time. Beside the codec alone
/// ([`compress_only`]) this is the ceiling of `append/<codec>`: a log that
/// writes its batches on the appending thread does at least this work, so its
/// ratio against the codec alone is at most this one's, noise aside.
pub fn encode_compress_write_writeback_fsync(
    dir: &Path,
    codec: Compression,
    fixture: &LogFixture,
) -> Result<Duration> {
    let path = dir.join("encoded-compressed.bin");
    let every = LogConfig::default().writeback_bytes;
    let mut batches = fixture.batches.iter();
    let (mut plain, mut refused) = (Vec::new(), false);
    let start = Stopwatch::start();
    crate::bench::baseline::write_produced_writeback(&path, every, |out| {
        let Some(batch) = batches.next() else {
            return false;
        };
        plain.clear();
        if seglog::testing::encode_records_checked(batch, RECORDS_OFFSET, &mut plain).is_none() {
            refused = true;
            return false;
        }
        codec.compress_into(&plain, out);
        true
    })
    .map_err(|e| Error::io(&path, e))?;
    let took = start.stop();
    if refused {
        return Err(Error::InvalidArgument(
            "the fixture's records are refused".into(),
        ));
    }
    Ok(took)
}

/// The least an owned read of the compressed batches `stored` (back to back, as
/// [`Log::read_raw`] gives them) does, and nothing more: decompress each batch's
/// payload, decode its records (the log's decoder) and add them to a
/// [`ReadRecords`] holding the decompressed bytes, handed out about every
/// [`super::READ_BYTES`] of batches, as `read` returns them; no CRC, no offset
/// checks, no segment or index. The records. Beside decompression alone this is
/// the ceiling of `read/<codec>`: the owned records' own cost (one buffer per
/// batch, a 48-byte entry per record) is in it.
pub fn owned_records_only(stored: &[u8]) -> Result<usize> {
    let corrupt = |e: seglog::format::FormatError| Error::InvalidArgument(format!("{e:?}"));
    let (mut count, mut at, mut taken) = (0usize, 0usize, 0usize);
    let mut records = ReadRecords::new();
    while let Some(rest) = stored.get(at..).filter(|rest| !rest.is_empty()) {
        if taken == 0 {
            // As `read` does: room for every record of the call, reserved once.
            records.reserve(records_within(rest, super::READ_BYTES).map_err(corrupt)?);
        }
        let (batch, size) = BatchView::decode(rest).map_err(corrupt)?;
        let inflated = batch
            .inflate()
            .map_err(corrupt)?
            .map(bytes::Bytes::from)
            .ok_or_else(|| Error::InvalidArgument("an uncompressed batch".into()))?;
        records.push_batch(inflated.clone());
        for record in batch.records_in(&inflated) {
            let record = record.map_err(corrupt)?;
            records.push(RecordRef::of(&batch, record));
        }
        at += size;
        taken += size;
        if taken >= super::READ_BYTES {
            count += std::mem::take(&mut records).len();
            taken = 0;
        }
    }
    Ok(count + records.len())
}

/// The records of the batches at the front of `stored` up to the first that
/// reaches `budget` bytes (that one included), from their headers.
fn records_within(
    mut stored: &[u8],
    budget: usize,
) -> std::result::Result<usize, seglog::format::FormatError> {
    let (mut records, mut taken) = (0usize, 0usize);
    while !stored.is_empty() && taken < budget {
        let header = seglog::format::batch::decode_header(stored)?;
        records += usize::try_from(header.record_count).unwrap_or(0);
        taken += header.size;
        stored = stored.get(header.size..).unwrap_or_default();
    }
    Ok(records)
}

/// Reads the whole log with [`Log::read_each`] ([`super::READ_BYTES`] a call),
/// touching each record's key and value; the records read.
pub fn read_each_records(log: &Log) -> Result<usize> {
    let mut from = log.log_start_offset();
    let (mut count, mut payload) = (0usize, 0usize);
    loop {
        let mut last = None;
        let visited = log.read_each(from, super::READ_BYTES, |record| {
            payload += record.key.map_or(0, <[u8]>::len) + record.value.map_or(0, <[u8]>::len);
            last = Some(record.offset);
        })?;
        let Some(last) = last else {
            std::hint::black_box(payload);
            return Ok(count);
        };
        count += visited;
        from = last + 1;
    }
}

/// The stored payloads (compressed records) of every batch of the log in `dir`.
pub fn payloads(log: &Log) -> Result<Vec<Vec<u8>>> {
    let raw = log.read_raw(log.log_start_offset(), usize::MAX)?;
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < raw.len() {
        let header = seglog::format::batch::decode_header(&raw[at..])
            .map_err(|e| Error::InvalidArgument(format!("{e:?}")))?;
        out.push(raw[at + RECORDS_OFFSET..at + header.size].to_vec());
        at += header.size;
    }
    Ok(out)
}

/// A closed lz4 log in which every batch is half obsolete: in each batch of
/// `per_batch` records the even ones have keys of their own and the odd ones
/// share keys with every other batch (only the last batch's survive), so a
/// compaction decompresses, filters and recompresses every closed batch but the
/// last.
#[derive(Debug, Clone)]
pub struct HalfObsoleteLog {
    pub dir: PathBuf,
    pub codec: Compression,
    pub input_bytes: u64,
}

impl HalfObsoleteLog {
    pub fn write(dir: &Path, codec: Compression, records: usize, per_batch: usize) -> Result<Self> {
        let (mut log, _) = Log::open(dir, config(codec))?;
        let fixture = codec_fixture(records, per_batch);
        let value = fixture.batches[0][0].value.clone();
        for (b, batch) in fixture.batches.iter().enumerate() {
            let batch: Vec<NewRecord> = batch
                .iter()
                .enumerate()
                .map(|(j, record)| {
                    let key = if j % 2 == 0 {
                        format!("own-{b:09}-{j:04}")
                    } else {
                        format!("hot-{j:04}-{:09}", 0)
                    };
                    NewRecord::new(Some(key.into_bytes()), record.value.clone(), b as i64)
                })
                .collect();
            log.append(&batch)?;
        }
        log.roll()?;
        log.append(&[NewRecord::new(Some(b"active".to_vec()), value, 0)])?;
        let input_bytes = log.segments().iter().map(|s| s.bytes).sum();
        log.close()?;
        Ok(HalfObsoleteLog {
            dir: dir.to_path_buf(),
            codec,
            input_bytes,
        })
    }

    /// Install step 1 of a compaction of the log (its temp dir removed after);
    /// the time, and the records it kept.
    pub fn build(&self, fs: &dyn FileSystem) -> Result<(Duration, u64)> {
        let options = CompactOptions {
            now: 0,
            delete_retention_ms: i64::MAX / 2,
            segment_bytes: SEGMENT_BYTES,
        };
        let start = Stopwatch::start();
        let built = seglog::compaction::build(fs, &self.dir, options)?
            .ok_or_else(|| Error::InvalidArgument("nothing to compact".into()))?;
        let took = start.stop();
        let tmp = InstallPaths::new(&self.dir)?.tmp;
        fs.remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        Ok((took, built.report.records_after))
    }

    /// The closed region's payloads (the baseline's input).
    pub fn closed_payloads(&self) -> Result<Vec<Vec<u8>>> {
        let (log, _) = Log::open(&self.dir, config(self.codec))?;
        let active = log.segments().last().map_or(0, |s| s.base_offset);
        let mut payloads = payloads(&log)?;
        payloads.pop(); // the active segment's batch
        assert!(log.next_offset() > active);
        Ok(payloads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encoding_floor_encodes_what_the_other_floors_are_handed() {
        let fixture = codec_fixture(250, 100);
        let mut plain = Vec::new();
        for (batch, want) in fixture.batches.iter().zip(encoded_records(&fixture)) {
            plain.clear();
            seglog::testing::encode_records_checked(batch, RECORDS_OFFSET, &mut plain).unwrap();
            assert_eq!(plain, want);
        }
        assert_eq!(encode_compress_only(Compression::Lz4, &fixture).unwrap(), 3);
    }

    #[test]
    fn the_ceilings_do_the_work_of_their_log_paths() {
        let fixture = codec_fixture(250, 100);
        let dir = tempfile::tempdir().unwrap();
        encode_compress_write_writeback_fsync(dir.path(), Compression::Lz4, &fixture).unwrap();
        let want: Vec<u8> = encoded_records(&fixture)
            .iter()
            .flat_map(|records| Compression::Lz4.compress(records))
            .collect();
        let got = std::fs::read(dir.path().join("encoded-compressed.bin")).unwrap();
        assert_eq!(got, want);
        // The owned read's ceiling decodes every record of a compressed log.
        let (mut log, _) = Log::open(dir.path().join("log"), config(Compression::Lz4)).unwrap();
        for batch in &fixture.batches {
            log.append(batch).unwrap();
        }
        let stored = log.read_raw(0, usize::MAX).unwrap();
        assert_eq!(owned_records_only(&stored).unwrap(), 250);
        assert!(owned_records_only(&stored[..stored.len() - 1]).is_err());
        let (mut plain, _) =
            Log::open(dir.path().join("plain"), config(Compression::None)).unwrap();
        plain.append(&fixture.batches[0]).unwrap();
        let uncompressed = plain.read_raw(0, usize::MAX).unwrap();
        assert!(owned_records_only(&uncompressed).is_err());
        // A refused record fails the floor instead of timing less work.
        let mut bad = codec_fixture(10, 5);
        bad.batches[1][0].timestamp = -2;
        let other = tempfile::tempdir().unwrap();
        assert!(
            encode_compress_write_writeback_fsync(other.path(), Compression::Lz4, &bad).is_err()
        );
    }

    #[test]
    fn half_obsolete_log_keeps_half_of_every_closed_batch() {
        let dir = tempfile::tempdir().unwrap();
        let log =
            HalfObsoleteLog::write(&dir.path().join("l"), Compression::Lz4, 400, 100).unwrap();
        let payloads = log.closed_payloads().unwrap();
        assert_eq!(payloads.len(), 4);
        assert_eq!(recompress_only(Compression::Lz4, &payloads).unwrap(), 4);
        let (_, kept) = log.build(&seglog::fs::StdFs::new()).unwrap();
        // 4 x 50 own keys, plus the 50 hot keys of the last batch.
        assert_eq!(kept, 250);
        let fixture = LogFixture::new(300, 100);
        let records = encoded_records(&fixture);
        assert_eq!(compress_only(Compression::Zstd, &records).unwrap(), 3);
        // The durable floors write what the codec gives, and fsync it.
        let floor = dir.path().join("floor");
        std::fs::create_dir_all(&floor).unwrap();
        compress_write_fsync(&floor, Compression::Zstd, &records).unwrap();
        let want: Vec<u8> = records
            .iter()
            .flat_map(|r| Compression::Zstd.compress(r))
            .collect();
        assert_eq!(std::fs::read(floor.join("compressed.bin")).unwrap(), want);
        recompress_write_fsync(&floor, Compression::Lz4, &payloads).unwrap();
        let want: Vec<u8> = payloads
            .iter()
            .flat_map(|p| {
                let inflated = Compression::Lz4.decompress(p, INFLATED_BYTES_MAX).unwrap();
                Compression::Lz4.compress(&inflated)
            })
            .collect();
        assert_eq!(std::fs::read(floor.join("recompressed.bin")).unwrap(), want);
        // Every read loop reads every record of an lz4 log.
        let fixture = codec_fixture(1_000, 100);
        let lz4 = dir.path().join("lz4");
        append_codec(&lz4, &fixture, Compression::Lz4).unwrap();
        let (log, _) = Log::open(&lz4, LogConfig::default()).unwrap();
        assert_eq!(read_each_records(&log).unwrap(), 1_000);
        assert_eq!(crate::bench::read_records(&log).unwrap(), 1_000);
    }
}

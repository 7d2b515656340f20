//! The codecs' benchmarks (`seglog bench --only codecs`): each engine path on
//! compressed batches beside the codec doing its part alone, in the same run.
//!
//! * append with a codec vs compressing the same batches' records with the codec
//!   alone (no log, no IO): what the log adds to the compression;
//! * `fetch` of a compressed log vs `fetch` of the uncompressed log of the same
//!   records: fetch hands out stored bytes, so it must not get slower;
//! * `read` of a compressed log vs decompressing every batch's payload alone;
//! * compaction (install step 1) of a 50%-obsolete lz4 log, where every closed
//!   batch is partly kept, vs decompressing and recompressing the same payloads.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::compaction::{cleaner, CompactOptions};
use crate::error::{Error, Result};
use crate::format::batch::RECORDS_OFFSET;
use crate::format::batch_view::INFLATED_BYTES_MAX;
use crate::format::{Compression, NewRecord, RecordBatch};
use crate::fs::FileSystem;
use crate::install::InstallPaths;
use crate::log::{Log, LogConfig};

use super::LogFixture;

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

fn config(codec: Compression) -> LogConfig {
    LogConfig {
        segment_bytes: SEGMENT_BYTES,
        compression: codec,
        ..LogConfig::default()
    }
}

/// Opens a log in `dir` writing `codec`, appends every batch, closes it; the time.
pub fn append_codec(dir: &Path, fixture: &LogFixture, codec: Compression) -> Result<Duration> {
    let start = Instant::now();
    let (mut log, _) = Log::open(dir, config(codec))?;
    for batch in &fixture.batches {
        log.append(batch)?;
    }
    log.close()?;
    Ok(start.elapsed())
}

/// [`append_codec`] timing the appends alone: the log is opened before and closed
/// (its fsyncs) after the timed part. What the open of a new log and the close
/// add to `append/CODEC` is the difference.
pub fn append_codec_appends_only(
    dir: &Path,
    fixture: &LogFixture,
    codec: Compression,
) -> Result<Duration> {
    let (mut log, _) = Log::open(dir, config(codec))?;
    let start = Instant::now();
    for batch in &fixture.batches {
        log.append(batch)?;
    }
    let took = start.elapsed();
    log.close()?;
    Ok(took)
}

/// The stored payloads (compressed records) of every batch of the log in `dir`.
pub fn payloads(log: &Log) -> Result<Vec<Vec<u8>>> {
    let raw = log.read_raw(log.log_start_offset(), usize::MAX)?;
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < raw.len() {
        let header = crate::format::batch::decode_header(&raw[at..])
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
        let start = Instant::now();
        let built = cleaner::build(fs, &self.dir, options)?
            .ok_or_else(|| Error::InvalidArgument("nothing to compact".into()))?;
        let took = start.elapsed();
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
    fn half_obsolete_log_keeps_half_of_every_closed_batch() {
        let dir = tempfile::tempdir().unwrap();
        let log =
            HalfObsoleteLog::write(&dir.path().join("l"), Compression::Lz4, 400, 100).unwrap();
        let payloads = log.closed_payloads().unwrap();
        assert_eq!(payloads.len(), 4);
        assert_eq!(recompress_only(Compression::Lz4, &payloads).unwrap(), 4);
        let (_, kept) = log.build(&crate::fs::StdFs::new()).unwrap();
        // 4 x 50 own keys, plus the 50 hot keys of the last batch.
        assert_eq!(kept, 250);
        let fixture = LogFixture::new(300, 100);
        let records = encoded_records(&fixture);
        assert_eq!(compress_only(Compression::Zstd, &records).unwrap(), 3);
    }
}

//! Regression: compressed batches are read, not rejected.
//!
//! What failed: a partition directory holding one gzip batch (as Kafka's producers
//! write most production data: gzip, snappy, lz4, zstd) was "unsupported": open,
//! read, dump and compaction all refused it (exit 2 from the CLI, files untouched).
//!
//! Invariant: every read path (`read`, `read_raw`, `fetch` + `records`, the offset
//! for a timestamp), recovery, the indexes and compaction work on batches of every
//! Kafka codec exactly as on uncompressed ones: the same records come back, `fetch`
//! and `read_raw` hand out the batches as stored (no decompression, no rewrite), a
//! fully kept batch survives compaction byte for byte, a partly kept one keeps its
//! base offset, last offset delta and codec. A CRC-valid compressed batch whose
//! payload is bad (does not decompress, holds more or fewer records than its
//! header says, inflates beyond the bound) is `Error::Corrupt` naming the file and
//! the payload's byte position, and nothing is truncated for it, in the active
//! segment too.
//!
//! Fix: `engine/src/format/compression` (the four codecs, framed as Kafka frames them),
//! `BatchView::inflate` / `records_in`, and the compaction path for compressed
//! batches (`engine/src/compaction/compressed.rs`).

use std::path::Path;

use seglog::format::batch::{ATTRIBUTES_OFFSET, CRC_OFFSET, RECORDS_OFFSET, RECORD_COUNT_OFFSET};
use seglog::format::compression::Compression;
use seglog::format::{filename, Header};
use seglog::{CorruptKind, Error, Log, LogConfig, NewRecord, RecordBatch};

fn config(compression: Compression) -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 128,
        compression,
        ..LogConfig::default()
    }
}

/// Batch `b` of a workload: 10 records over 5 keys (so half the keyed records are
/// superseded later), a keyless record and a tombstone now and then, headers on one.
fn batch(b: i64) -> Vec<NewRecord> {
    (0..10)
        .map(|i| {
            let n = b * 10 + i;
            let key = (i != 7).then(|| format!("key-{}", n % 5).into_bytes());
            let value = (i != 3 || b % 3 != 0)
                .then(|| format!("value-{n}-{}", "x".repeat(40)).into_bytes());
            let mut record = NewRecord::new(key, value, 1_000 + n);
            if i == 5 {
                record.headers.push(Header {
                    key: "h".into(),
                    value: Some(b"hv".to_vec()),
                });
            }
            record
        })
        .collect()
}

/// What `read` gives: (offset, timestamp, key, value, header count).
type Row = (i64, i64, Option<Vec<u8>>, Option<Vec<u8>>, usize);

fn rows(log: &Log) -> Vec<Row> {
    log.read(log.log_start_offset(), usize::MAX)
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                r.offset,
                r.timestamp,
                r.key.map(|k| k.to_vec()),
                r.value.map(|v| v.to_vec()),
                r.headers.len(),
            )
        })
        .collect()
}

fn fetched_rows(log: &Log) -> Vec<Row> {
    let mut out = Vec::new();
    let mut from = log.log_start_offset();
    while from < log.next_offset() {
        let fetch = log.fetch(from, 1 << 20).unwrap();
        for record in fetch.records() {
            let r = record.unwrap();
            out.push((
                r.offset,
                r.timestamp,
                r.key.map(<[u8]>::to_vec),
                r.value.map(<[u8]>::to_vec),
                r.headers.len(),
            ));
        }
        from = fetch.next_offset();
    }
    out
}

/// The codec bits of every batch in the segment file `path`.
fn codecs_in(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let mut at = 0;
    let mut out = Vec::new();
    while at < bytes.len() {
        let length = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(bytes[at + ATTRIBUTES_OFFSET + 1] & 0x07);
        at += 12 + length;
    }
    out
}

fn log_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_codec_reads_fetches_recovers_and_compacts() {
    for codec in Compression::ALL {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p0");
        let (mut log, _) = Log::open(&path, config(codec)).unwrap();
        let mut expected: Vec<Row> = Vec::new();
        for b in 0..30 {
            let records = batch(b);
            let info = log.append(&records).unwrap();
            for (i, r) in records.iter().enumerate() {
                expected.push((
                    info.base_offset + i as i64,
                    r.timestamp,
                    r.key.clone(),
                    r.value.clone(),
                    r.headers.len(),
                ));
            }
        }
        log.flush().unwrap();
        assert!(log.segments().len() > 2, "{codec}: several segments");
        for file in log_files(&path) {
            assert!(
                codecs_in(&file).iter().all(|&c| c as i16 == codec.id()),
                "{codec}: {}",
                file.display()
            );
        }
        assert_eq!(rows(&log), expected, "{codec}: read");
        assert_eq!(fetched_rows(&log), expected, "{codec}: fetch");
        // read_raw and fetch hand out the batches as stored.
        let stored: Vec<u8> = log_files(&path)
            .iter()
            .flat_map(|f| std::fs::read(f).unwrap())
            .collect();
        assert_eq!(log.read_raw(0, usize::MAX).unwrap(), stored, "{codec}");
        let first = std::fs::read(&log_files(&path)[0]).unwrap();
        assert_eq!(
            &log.fetch(0, usize::MAX).unwrap().bytes()[..],
            &first[..],
            "{codec}"
        );
        // Reads from inside a batch start at the right record.
        let from = expected[123].0;
        assert_eq!(rows_from(&log, from), expected[123..].to_vec(), "{codec}");
        assert_eq!(log.offset_for_timestamp(1_000 + 155).unwrap(), Some(155));
        let segments = log.segments();
        log.close().unwrap();

        // Recovery: nothing to truncate or rebuild.
        let (log, report) = Log::open(&path, config(Compression::None)).unwrap();
        assert_eq!(report.truncated_bytes, 0, "{codec}");
        assert!(report.rebuilt_indexes.is_empty(), "{codec}: {report:?}");
        assert_eq!(log.segments(), segments);
        assert_eq!(rows(&log), expected, "{codec}: after reopen");
        drop(log);

        // Compaction: the latest per key, keyless records and young tombstones.
        let (mut log, _) = Log::open(&path, config(codec)).unwrap();
        let before_files: Vec<Vec<u8>> = log_files(&path)
            .iter()
            .map(|f| std::fs::read(f).unwrap())
            .collect();
        let report = log.compact(1_000 + 300, 1_000_000, None).unwrap();
        assert!(report.records_after < report.records_before, "{codec}");
        let after = rows(&log);
        let active_base = log.segments().last().unwrap().base_offset;
        let closed: Vec<&Row> = expected.iter().filter(|r| r.0 < active_base).collect();
        let latest = |key: &Option<Vec<u8>>| {
            expected
                .iter()
                .filter(|r| r.2 == *key)
                .map(|r| r.0)
                .max()
                .unwrap()
        };
        let want: Vec<Row> = closed
            .iter()
            .filter(|r| r.2.is_none() || latest(&r.2) == r.0)
            .map(|r| (*r).clone())
            .chain(expected.iter().filter(|r| r.0 >= active_base).cloned())
            .collect();
        assert_eq!(after, want, "{codec}: compacted");
        assert_eq!(fetched_rows(&log), want, "{codec}: compacted fetch");
        // Partly kept batches stay compressed with their codec and keep base
        // offset and last offset delta; the batches' offsets still tile.
        for file in log_files(&path) {
            assert!(codecs_in(&file).iter().all(|&c| c as i16 == codec.id()));
        }
        let batches: Vec<RecordBatch> = log
            .segments()
            .iter()
            .flat_map(|s| log.segment_batches(s.base_offset).unwrap())
            .collect();
        for pair in batches.windows(2) {
            assert_eq!(pair[0].next_offset(), pair[1].base_offset, "{codec}");
        }
        assert!(batches.iter().all(|b| b.last_offset_delta == 9));
        // The active segment is copied unchanged.
        let after_files: Vec<Vec<u8>> = log_files(&path)
            .iter()
            .map(|f| std::fs::read(f).unwrap())
            .collect();
        assert_eq!(after_files.last(), before_files.last(), "{codec}");
    }
}

fn rows_from(log: &Log, from: i64) -> Vec<Row> {
    log.read(from, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                r.offset,
                r.timestamp,
                r.key.map(|k| k.to_vec()),
                r.value.map(|v| v.to_vec()),
                r.headers.len(),
            )
        })
        .collect()
}

/// The exact failure of the issue: a segment holding a gzip batch written by
/// another writer (here: built with `RecordBatch`) opens and reads.
#[test]
fn a_gzip_segment_opens_reads_and_dumps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p0");
    std::fs::create_dir_all(&path).unwrap();
    let records = batch(1);
    let bytes = RecordBatch::build(0, &records)
        .with_compression(Compression::Gzip)
        .encode();
    std::fs::write(path.join(filename::build(0, filename::LOG_SUFFIX)), &bytes).unwrap();
    let (log, report) = Log::open(&path, LogConfig::default()).unwrap();
    assert_eq!(report.truncated_bytes, 0);
    let got = rows(&log);
    assert_eq!(got.len(), 10);
    assert_eq!(got[4].3.as_deref(), records[4].value.as_deref());
    drop(log);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_seglog"))
        .args(["dump", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dump: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(dump["records"].as_array().unwrap().len(), 10);
    assert_eq!(dump["next_offset"], 10);
}

/// `bytes` with its CRC-32C recomputed (so only the payload check can object).
fn recrc(mut bytes: Vec<u8>) -> Vec<u8> {
    let crc = seglog::format::crc::crc32c(&bytes[ATTRIBUTES_OFFSET..]);
    bytes[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    bytes
}

/// Writes a good batch then `bad` as the active (only) segment and opens it.
fn open_with_bad_tail(bad: Vec<u8>) -> (tempfile::TempDir, std::path::PathBuf, u64, Error) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p0");
    std::fs::create_dir_all(&path).unwrap();
    let mut bytes = RecordBatch::build(0, &batch(0))
        .with_compression(Compression::Lz4)
        .encode();
    let bad_at = bytes.len() as u64;
    bytes.extend(bad);
    let file = path.join(filename::build(0, filename::LOG_SUFFIX));
    std::fs::write(&file, &bytes).unwrap();
    let error = Log::open(&path, LogConfig::default()).unwrap_err();
    // Nothing truncated or deleted.
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    (dir, file, bad_at, error)
}

#[test]
fn a_payload_that_does_not_decompress_is_corrupt_and_kept() {
    for codec in Compression::ALL.into_iter().skip(1) {
        let mut bytes = RecordBatch::build(10, &batch(1))
            .with_compression(codec)
            .encode();
        // Damage the compressed stream (not its framing's length fields alone:
        // every byte after the first 20 of the payload).
        for b in &mut bytes[RECORDS_OFFSET + 20..] {
            *b ^= 0x5a;
        }
        let (_dir, file, bad_at, error) = open_with_bad_tail(recrc(bytes));
        match error {
            Error::Corrupt {
                path,
                position,
                kind,
            } => {
                assert_eq!(path, file, "{codec}");
                assert_eq!(position, bad_at + RECORDS_OFFSET as u64, "{codec}");
                assert!(
                    matches!(
                        kind,
                        CorruptKind::Decompress { .. }
                            | CorruptKind::RecordCount { .. }
                            | CorruptKind::Varint
                            | CorruptKind::Field(_)
                            | CorruptKind::Truncated { .. }
                            | CorruptKind::OffsetDelta { .. }
                    ),
                    "{codec}: {kind:?}"
                );
            }
            other => panic!("{codec}: {other:?}"),
        }
    }
}

#[test]
fn a_wrong_record_count_in_a_compressed_batch_is_corrupt_and_kept() {
    for (declared, codec) in [(9, Compression::Gzip), (10, Compression::Zstd)] {
        // 10 records inflated; the header says `declared` (one fewer, or one more
        // than the records: the batch declares 10 with 9 compressed).
        let mut built = RecordBatch::build(10, &batch(1));
        if declared == 10 {
            built.records.pop();
            built.last_offset_delta = 9;
        }
        let mut bytes = built.with_compression(codec).encode();
        bytes[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4]
            .copy_from_slice(&(declared as i32).to_be_bytes());
        let (_dir, file, bad_at, error) = open_with_bad_tail(recrc(bytes));
        match error {
            Error::Corrupt {
                path,
                position,
                kind: CorruptKind::RecordCount { declared: d, .. },
            } => {
                assert_eq!(path, file);
                assert_eq!(position, bad_at + RECORD_COUNT_OFFSET as u64);
                assert_eq!(d, declared);
            }
            other => panic!("{codec}: {other:?}"),
        }
    }
}

#[test]
fn a_payload_inflating_beyond_the_bound_is_corrupt_and_kept() {
    // 64 MiB + 1 zero bytes: a few KiB of zstd.
    let bound = seglog::format::batch_view::INFLATED_BYTES_MAX;
    let payload = Compression::Zstd.compress(&vec![0u8; bound + 1]);
    let mut bytes = RecordBatch::build(10, &batch(1))
        .with_compression(Compression::Zstd)
        .encode();
    bytes.truncate(RECORDS_OFFSET);
    bytes.extend_from_slice(&payload);
    let length = (bytes.len() - 12) as i32;
    bytes[8..12].copy_from_slice(&length.to_be_bytes());
    let (_dir, file, bad_at, error) = open_with_bad_tail(recrc(bytes));
    match error {
        Error::Corrupt {
            path,
            position,
            kind: CorruptKind::DecompressedTooLarge { limit_bytes, .. },
        } => {
            assert_eq!(path, file);
            assert_eq!(position, bad_at + RECORDS_OFFSET as u64);
            assert_eq!(limit_bytes, bound as u64);
        }
        other => panic!("{other:?}"),
    }
}

/// A torn compressed batch (a crash cut its tail) is still a torn tail: the
/// active segment is cut there, as for an uncompressed one.
#[test]
fn a_torn_compressed_tail_is_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p0");
    let (mut log, _) = Log::open(&path, config(Compression::Snappy)).unwrap();
    log.append(&batch(0)).unwrap();
    log.append(&batch(1)).unwrap();
    log.flush().unwrap();
    drop(log);
    let file = path.join(filename::build(0, filename::LOG_SUFFIX));
    let len = std::fs::metadata(&file).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(len - 5).unwrap();
    let (log, report) = Log::open(&path, config(Compression::Snappy)).unwrap();
    assert!(report.truncated_bytes > 0);
    assert_eq!(log.next_offset(), 10);
}

/// `seglog append --compression C` writes batches with codec C, and `dump` reads
/// them; a bad codec name is a usage error.
#[test]
fn cli_append_takes_a_codec() {
    let bin = env!("CARGO_BIN_EXE_seglog");
    for codec in Compression::ALL {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p0");
        let out = std::process::Command::new(bin)
            .args([
                "append",
                path.to_str().unwrap(),
                "--compression",
                codec.name(),
            ])
            .args([
                "--batch",
                r#"[{"key":"a","value":"1","ts":5},{"key":null,"value":"2","ts":6}]"#,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let file = path.join(filename::build(0, filename::LOG_SUFFIX));
        assert_eq!(codecs_in(&file), vec![codec.id() as u8]);
        let out = std::process::Command::new(bin)
            .args(["dump", path.to_str().unwrap()])
            .output()
            .unwrap();
        let dump: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(dump["records"][1]["value"], "2", "{codec}");
        assert_eq!(dump["records"][0]["ts"], 5, "{codec}");
    }
    let out = std::process::Command::new(bin)
        .args([
            "append",
            "/nonexistent/x",
            "--compression",
            "brotli",
            "--batch",
            "[]",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A compressed batch compaction keeps whole is copied as stored, byte for byte
/// (not recompressed); a partly kept one keeps its codec, base offset and last
/// offset delta.
#[test]
fn a_fully_kept_compressed_batch_is_copied_as_stored() {
    for codec in Compression::ALL.into_iter().skip(1) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p0");
        let (mut log, _) = Log::open(&path, config(codec)).unwrap();
        let keep = [rec_kv("x", "1"), rec_kv("y", "1")];
        let partly = [rec_kv("a", "1"), rec_kv("b", "1"), rec_kv("c", "1")];
        log.append(&keep).unwrap();
        log.append(&partly).unwrap();
        log.roll().unwrap();
        log.append(&[rec_kv("b", "2")]).unwrap();
        let file = path.join(filename::build(0, filename::LOG_SUFFIX));
        let before = std::fs::read(&file).unwrap();
        let first_len = 12 + i32::from_be_bytes(before[8..12].try_into().unwrap()) as usize;
        log.compact(0, 1_000, None).unwrap();
        let after = std::fs::read(&file).unwrap();
        assert_eq!(&after[..first_len], &before[..first_len], "{codec}");
        let batches = log.segment_batches(0).unwrap();
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[1].compression(), codec);
        assert_eq!(
            (batches[1].base_offset, batches[1].last_offset_delta),
            (2, 2)
        );
        let kept: Vec<i64> = batches[1]
            .records
            .iter()
            .map(|r| batches[1].offset_of(r))
            .collect();
        assert_eq!(kept, vec![2, 4]);
    }
}

fn rec_kv(key: &str, value: &str) -> NewRecord {
    NewRecord::new(
        Some(key.as_bytes().to_vec()),
        Some(value.as_bytes().to_vec()),
        10,
    )
}

#[test]
fn a_bad_payload_in_a_trusted_segment_is_corrupt_at_read_and_kept() {
    for codec in Compression::ALL.into_iter().skip(1) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p0");
        let (mut log, _) = Log::open(&path, config(codec)).unwrap();
        log.append(&batch(0)).unwrap();
        log.roll().unwrap();
        log.append(&batch(1)).unwrap();
        log.close().unwrap();
        // Damage the first (closed) segment's only batch, CRC re-sealed.
        let file = path.join(filename::build(0, filename::LOG_SUFFIX));
        let mut bytes = std::fs::read(&file).unwrap();
        for b in &mut bytes[RECORDS_OFFSET + 20..] {
            *b ^= 0x5a;
        }
        let bytes = recrc(bytes);
        std::fs::write(&file, &bytes).unwrap();
        // The clean-shutdown marker vouches for the segment: opened unscanned.
        let (log, _) = Log::open(&path, config(codec)).unwrap();
        match log.read(0, usize::MAX) {
            Err(Error::Corrupt {
                path: at, position, ..
            }) => {
                assert_eq!(at, file, "{codec}");
                assert_eq!(position, RECORDS_OFFSET as u64, "{codec}");
            }
            other => panic!("{codec}: {other:?}"),
        }
        drop(log);
        assert_eq!(
            std::fs::read(&file).unwrap(),
            bytes,
            "{codec}: nothing truncated"
        );
    }
}

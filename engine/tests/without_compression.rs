#![cfg(not(feature = "compression"))] // the engine built without the codecs
//! The engine without the cargo feature `compression` (`cargo test
//! --no-default-features`): a compressed batch is a structured
//! `Error::Unsupported`, at open (scanned) and at read (trusted, unscanned), and
//! nothing is truncated for it; appending with a codec is an `InvalidArgument`.

use std::path::Path;

use seglog::format::batch::{ATTRIBUTES_OFFSET, ATTR_COMPRESSION_MASK, CRC_OFFSET};
use seglog::format::compression::Compression;
use seglog::format::crc::crc32c;
use seglog::{Error, Log, LogConfig, NewRecord};

fn records() -> Vec<NewRecord> {
    vec![
        NewRecord::new(Some(b"k1".to_vec()), Some(b"v1".to_vec()), 1_000),
        NewRecord::new(Some(b"k2".to_vec()), Some(b"v2".to_vec()), 1_001),
    ]
}

/// The one `.log` of `dir`.
fn log_file(dir: &Path) -> std::path::PathBuf {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs.pop().unwrap()
}

/// Marks the first batch of `path` gzip-compressed and re-seals its CRC: a
/// CRC-valid batch whose codec this build has not.
fn mark_gzip(path: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    let id = Compression::Gzip.id();
    assert_eq!(id & ATTR_COMPRESSION_MASK, id);
    bytes[ATTRIBUTES_OFFSET + 1] |= id as u8;
    let length = u32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let crc = crc32c(&bytes[ATTRIBUTES_OFFSET..12 + length]);
    bytes[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    std::fs::write(path, &bytes).unwrap();
    bytes
}

fn write_closed_log(dir: &Path) {
    let (mut log, _) = Log::open(dir, LogConfig::default()).unwrap();
    log.append(&records()).unwrap();
    log.close().unwrap();
}

#[test]
fn a_configured_codec_is_an_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        assert!(!codec.is_available());
        let config = LogConfig {
            compression: codec,
            ..LogConfig::default()
        };
        let Err(err) = Log::open(dir.path().join("p"), config) else {
            panic!("a codec this build has not was accepted")
        };
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        let (mut log, _) = Log::open(dir.path().join("q"), LogConfig::default()).unwrap();
        let err = log.append_with(&records(), codec, None).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        assert_eq!(log.next_offset(), 0);
    }
}

#[test]
fn a_compressed_batch_in_a_trusted_segment_is_unsupported_at_read() {
    let dir = tempfile::tempdir().unwrap();
    write_closed_log(dir.path());
    let path = log_file(dir.path());
    let before = mark_gzip(&path);
    // The clean-shutdown marker vouches for the segment: opened without a scan.
    let (log, _) = Log::open(dir.path(), LogConfig::default()).unwrap();
    let err = log.read(0, usize::MAX).unwrap_err();
    match &err {
        Error::Unsupported(what) => assert!(what.contains("gzip"), "{what}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
    let each = log.read_each(0, usize::MAX, |_| {}).unwrap_err();
    assert_eq!(each.to_string(), err.to_string());
    drop(log);
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing truncated");
}

#[test]
fn a_compressed_batch_in_a_scanned_segment_is_unsupported_at_open() {
    let dir = tempfile::tempdir().unwrap();
    write_closed_log(dir.path());
    let path = log_file(dir.path());
    let before = mark_gzip(&path);
    // Without the marker (a crash), the open scans the segment.
    std::fs::remove_file(dir.path().join("clean-shutdown")).unwrap();
    let Err(err) = Log::open(dir.path(), LogConfig::default()) else {
        panic!("an open of a gzip batch without the codecs succeeded")
    };
    match &err {
        Error::Unsupported(what) => assert!(what.contains("gzip"), "{what}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing truncated");
}

//! `Log::append_batches`: producer-encoded batches appended as a broker
//! appends a produce request.
//!
//! Invariants checked: a producer's batches (encoded by `RecordBatch::encode`, byte
//! for byte Kafka's producer encoding) leave exactly the files `Log::append` of the
//! same records leaves, rolls and indexes included, also under LogAppendTime and,
//! with the `compression` feature, every codec; a call with one bad batch anywhere
//! is refused with `Error::InvalidBatch` naming that batch, its position and the
//! rule, stores nothing and leaves the log usable; the batches read back and
//! survive a reopen.

use std::path::Path;
use std::sync::Arc;

use seglog::format::{filename, TimestampType};
use seglog::{BatchRule, Error, Log, LogConfig, ManualClock, NewRecord, RecordBatch};

fn records(seed: usize, n: usize) -> Vec<NewRecord> {
    (0..n)
        .map(|i| {
            NewRecord::new(
                (i % 4 != 3).then(|| format!("key-{seed}-{}", i % 5).into_bytes()),
                (i % 6 != 5).then(|| vec![(seed + i) as u8; (seed * 7 + i * 13) % 90]),
                1_000 + (seed * 10 + i) as i64,
            )
        })
        .collect()
}

/// A producer's encoding: base offset 0, CreateTime, the producer's codec.
fn produced(records: &[NewRecord], codec: seglog::format::Compression) -> Vec<u8> {
    RecordBatch::build(0, records)
        .with_compression(codec)
        .encode()
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 700,
        index_interval_bytes: 100,
        ..LogConfig::default()
    }
}

/// Every file of the log directory, name and bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

fn open(dir: &Path, config: LogConfig, clock: &Arc<ManualClock>) -> Log {
    let (mut log, _) = Log::open(dir, config).unwrap();
    log.set_clock(clock.clone());
    log
}

/// Appends the same batches structured into one log and raw into another (some raw
/// calls carrying several batches) and checks both leave the same files.
fn same_files(config: LogConfig, codec: seglog::format::Compression) {
    let clock = Arc::new(ManualClock::new(77_000));
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let mut structured = open(a.path(), config.clone(), &clock);
    let mut raw = open(b.path(), config.clone(), &clock);
    let groups: &[&[usize]] = &[&[1], &[2, 3, 4], &[9], &[1, 1, 1, 1, 1, 1, 1, 1], &[30, 2]];
    let mut seed = 0;
    for group in groups {
        let mut request = Vec::new();
        let mut first = None;
        let mut last = 0;
        for &n in *group {
            seed += 1;
            let recs = records(seed, n);
            let stamp = (config.timestamp_type == TimestampType::LogAppendTime)
                .then(|| seglog::Clock::now_ms(clock.as_ref()));
            let info = structured.append_with(&recs, codec, stamp).unwrap();
            first.get_or_insert(info.base_offset);
            last = info.last_offset;
            request.extend_from_slice(&produced(&recs, codec));
        }
        let info = raw.append_batches(&request).unwrap();
        assert_eq!((Some(info.base_offset), info.last_offset), (first, last));
        clock.advance_ms(1);
    }
    assert_eq!(raw.next_offset(), structured.next_offset());
    assert!(raw.segments().len() > 2, "the calls rolled the log");
    assert_eq!(raw.segments(), structured.segments());
    let read = raw.read(0, 1 << 20).unwrap();
    assert_eq!(read, structured.read(0, 1 << 20).unwrap());
    assert_eq!(read.len() as i64, raw.next_offset());
    structured.close().unwrap();
    raw.close().unwrap();
    assert_eq!(files(a.path()), files(b.path()));
    // And the raw log reopens to the same records, checking every segment.
    let (reopened, report) =
        Log::open_checked(Arc::new(seglog::fs::StdFs::new()), b.path(), config).unwrap();
    assert_eq!(report.truncated_bytes, 0);
    assert_eq!(reopened.read(0, 1 << 20).unwrap(), read);
}

#[test]
fn producer_batches_leave_the_files_of_a_structured_append() {
    same_files(config(), seglog::format::Compression::None);
}

#[test]
fn log_append_time_stamps_like_a_structured_append() {
    let config = LogConfig {
        timestamp_type: TimestampType::LogAppendTime,
        ..config()
    };
    same_files(config, seglog::format::Compression::None);
}

#[cfg(feature = "compression")]
#[test]
fn compressed_producer_batches_are_stored_as_they_came() {
    for codec in seglog::format::Compression::ALL {
        same_files(config(), codec);
        let config = LogConfig {
            timestamp_type: TimestampType::LogAppendTime,
            ..config()
        };
        same_files(config, codec);
    }
}

#[test]
fn one_bad_batch_refuses_the_call_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(5));
    let mut log = open(dir.path(), config(), &clock);
    log.append_batches(&produced(&records(1, 3), Default::default()))
        .unwrap();
    let before = files(dir.path());
    let good = produced(&records(2, 4), Default::default());
    let mut bad = produced(&records(3, 2), Default::default());
    let flip = bad.len() - 2;
    bad[flip] ^= 0x10;
    for place in 0..3 {
        let mut request = Vec::new();
        let mut position = 0;
        for i in 0..3 {
            if i == place {
                position = request.len();
                request.extend_from_slice(&bad);
            } else {
                request.extend_from_slice(&good);
            }
        }
        let err = log.append_batches(&request).unwrap_err();
        match err {
            Error::InvalidBatch {
                batch,
                position: at,
                rule: BatchRule::Format { kind, .. },
            } => {
                assert_eq!(batch, place);
                assert_eq!(at, position as u64);
                assert!(
                    matches!(kind, seglog::CorruptKind::ChecksumMismatch { .. }),
                    "{kind:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(!log.is_poisoned());
        assert_eq!(log.next_offset(), 3);
        assert_eq!(files(dir.path()), before, "nothing of the call was stored");
    }
    // Trailing garbage after valid batches is a batch that does not decode.
    let mut request = good.clone();
    request.extend_from_slice(&[0, 1, 2]);
    assert!(matches!(
        log.append_batches(&request),
        Err(Error::InvalidBatch {
            batch: 1,
            rule: BatchRule::Format { .. },
            ..
        })
    ));
    assert!(matches!(
        log.append_batches(&[]),
        Err(Error::InvalidBatch {
            rule: BatchRule::NoBatches,
            ..
        })
    ));
    // The log stays usable.
    let info = log.append_batches(&good).unwrap();
    assert_eq!((info.base_offset, info.last_offset), (3, 6));
    assert_eq!(log.read(0, 1 << 20).unwrap().len(), 7);
}

#[test]
fn a_batch_over_max_batch_bytes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        max_batch_bytes: 200,
        ..config()
    };
    let (mut log, _) = Log::open(dir.path(), config).unwrap();
    let small = produced(&records(1, 1), Default::default());
    let big = produced(&records(2, 8), Default::default());
    assert!(small.len() <= 200 && big.len() > 200);
    let err = log.append_batches(&[small.clone(), big.clone()].concat());
    assert!(
        matches!(
            err,
            Err(Error::InvalidBatch {
                batch: 1,
                rule: BatchRule::TooLarge { max_bytes: 200, .. },
                ..
            })
        ),
        "{err:?}"
    );
    assert_eq!(log.next_offset(), 0);
    log.append_batches(&small).unwrap();
    assert_eq!(log.next_offset(), 1);
    let invalid = LogConfig {
        max_batch_bytes: 10,
        ..LogConfig::default()
    };
    assert!(matches!(invalid.validate(), Err(Error::InvalidArgument(_))));
}

#[test]
fn base_offset_and_epoch_are_the_logs_whatever_the_producer_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(dir.path(), config()).unwrap();
    log.append_batches(&produced(&records(1, 2), Default::default()))
        .unwrap();
    let mut batch = produced(&records(2, 3), Default::default());
    batch[..8].copy_from_slice(&999i64.to_be_bytes());
    batch[12..16].copy_from_slice(&42i32.to_be_bytes());
    let info = log.append_batches(&batch).unwrap();
    assert_eq!((info.base_offset, info.last_offset), (2, 4));
    log.flush().unwrap();
    let bytes = std::fs::read(dir.path().join(filename::build(0, filename::LOG_SUFFIX))).unwrap();
    let (_, first) = seglog::format::batch::decode(&bytes).unwrap();
    let (stored, _) = seglog::format::batch::decode(&bytes[first..]).unwrap();
    assert_eq!(stored.base_offset, 2);
    assert_eq!(stored.partition_leader_epoch, -1);
    assert_eq!(
        &bytes[first + 16..],
        &batch[16..],
        "the CRC region is as sent"
    );
}

#[test]
fn a_read_only_log_refuses_raw_appends() {
    let dir = tempfile::tempdir().unwrap();
    drop(Log::open(dir.path(), config()).unwrap());
    let (mut log, _) =
        Log::open_read_only(Arc::new(seglog::fs::StdFs::new()), dir.path(), config()).unwrap();
    let err = log.append_batches(&produced(&records(1, 1), Default::default()));
    assert!(matches!(err, Err(Error::InvalidArgument(_))), "{err:?}");
}

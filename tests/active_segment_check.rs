//! The active segment is checked the same way under both policies: a record-level
//! damage behind a valid CRC (a forged batch: a record's length varint off by
//! one, the CRC recomputed) in the active segment fails the cleaning pass of
//! either policy, with the same error naming the active segment's file and a
//! byte position inside the damaged batch, and nothing is installed.
//!
//! Both passes copy the active segment's bytes into the new directory; a pass
//! that copies bytes it cannot parse would carry damage it was the last to see
//! as one policy's silence and the other's error.

use std::path::Path;
use std::sync::Arc;

use seglog::compaction::{build_with, CleanOptions, CompactOptions, CompactionPolicy};
use seglog::format::batch::{ATTRIBUTES_OFFSET, CRC_OFFSET, LENGTH_OFFSET, RECORDS_OFFSET};
use seglog::format::crc::crc32c;
use seglog::format::filename::{self, LOG_SUFFIX};
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{Log, LogConfig, NewRecord};

const DIR: &str = "/log";

/// Two closed segments and an active one of two batches; returns the active
/// segment's base offset and the byte position of its second batch.
fn log(fs: &Arc<SimFs>) -> (i64, usize) {
    let (mut log, _) = Log::open_with(
        Arc::clone(fs) as Arc<dyn FileSystem>,
        DIR,
        LogConfig::default(),
    )
    .unwrap();
    for s in 0..3i64 {
        for b in 0..2i64 {
            let records: Vec<NewRecord> = (0..3)
                .map(|k| {
                    NewRecord::new(
                        Some(format!("k{k}").into_bytes()),
                        Some(format!("v{s}{b}").into_bytes()),
                        s * 10 + b,
                    )
                })
                .collect();
            log.append(&records).unwrap();
        }
        if s < 2 {
            log.roll().unwrap();
        }
    }
    log.flush().unwrap();
    let active = log.segments().last().unwrap().base_offset;
    drop(log);
    let bytes = fs.read_all(&active_path(active)).unwrap();
    let first = batch_len(&bytes, 0);
    assert!(first < bytes.len(), "two batches in the active segment");
    (active, first)
}

fn active_path(base: i64) -> std::path::PathBuf {
    Path::new(DIR).join(filename::build(base, LOG_SUFFIX))
}

fn batch_len(bytes: &[u8], at: usize) -> usize {
    let length = &bytes[at + LENGTH_OFFSET..at + LENGTH_OFFSET + 4];
    LENGTH_OFFSET + 4 + i32::from_be_bytes(length.try_into().unwrap()) as usize
}

/// The batch at `at`: its first record's length (a one-byte zigzag varint) one
/// more, its CRC recomputed, so only a record-level parse sees the damage.
fn forge(bytes: &mut [u8], at: usize) {
    let end = at + batch_len(bytes, at);
    let length = &mut bytes[at + RECORDS_OFFSET];
    assert!(*length < 0x7e, "a one-byte varint");
    *length += 2;
    let crc = crc32c(&bytes[at + ATTRIBUTES_OFFSET..end]);
    bytes[at + CRC_OFFSET..at + CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Replaces `path` with the forged `bytes` and cleans the log under `policy`:
/// the pass's error (a pass that succeeds panics, naming `forged`) and the
/// directory's listing before it.
fn clean_forged(
    fs: &SimFs,
    path: &Path,
    bytes: &[u8],
    policy: CompactionPolicy,
    forged: &str,
) -> (String, Vec<String>) {
    fs.remove_file(path).unwrap();
    fs.write_new(path, bytes).unwrap();
    fs.sync_file(path).unwrap();
    let before = fs.list_dir(Path::new(DIR)).unwrap();
    let clean = CleanOptions {
        policy,
        ..CleanOptions::default()
    };
    let options = CompactOptions {
        now: 1_000,
        delete_retention_ms: 0,
        segment_bytes: 1 << 20,
    };
    match build_with(fs, Path::new(DIR), options, clean) {
        Ok(built) => panic!(
            "{policy:?}: {forged} was cleaned over: {:?}",
            built.map(|b| b.report)
        ),
        Err(error) => (error.to_string(), before),
    }
}

#[test]
fn a_forged_record_in_the_active_segment_fails_either_policy_alike() {
    let mut errors = Vec::new();
    for policy in [CompactionPolicy::Seed, CompactionPolicy::Kafka] {
        let fs = Arc::new(SimFs::new());
        let (active, position) = log(&fs);
        let path = active_path(active);
        let mut bytes = fs.read_all(&path).unwrap();
        forge(&mut bytes, position);
        let (error, before) = clean_forged(
            &fs,
            &path,
            &bytes,
            policy,
            "a forged record in the active segment",
        );
        let name = filename::build(active, LOG_SUFFIX);
        assert!(
            error.contains(&name),
            "{policy:?}: the error names the active segment {name}: {error}"
        );
        let at: usize = error
            .split("at byte ")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{policy:?}: the error names a byte position: {error}"));
        let end = position + batch_len(&bytes, position);
        assert!(
            (position..end).contains(&at),
            "{policy:?}: the error's position {at} lies in the damaged batch {position}..{end}: {error}"
        );
        assert_eq!(
            fs.list_dir(Path::new(DIR)).unwrap(),
            before,
            "{policy:?}: nothing installed"
        );
        errors.push(error);
    }
    assert_eq!(errors[0], errors[1], "one check, one error");
}

/// The batch at `at`: its second record's offset delta (a one-byte zigzag
/// varint, 1) made 0, a repeat of the first record's, its CRC recomputed. Every
/// length still adds up: only a record walk that checks the deltas increase sees it.
fn forge_delta(bytes: &mut [u8], at: usize) {
    let end = at + batch_len(bytes, at);
    let first = at + RECORDS_OFFSET;
    assert!(bytes[first] < 0x80, "a one-byte length varint");
    let second = first + 1 + usize::from(bytes[first] / 2);
    // length, attributes, timestamp delta (one byte: the records share a timestamp)
    let delta = second + 3;
    assert_eq!(bytes[delta], 2, "the second record's offset delta is 1");
    bytes[delta] = 0;
    let crc = crc32c(&bytes[at + ATTRIBUTES_OFFSET..end]);
    bytes[at + CRC_OFFSET..at + CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

/// The readers of closed segments walk records as the active segment's check
/// does: a CRC-valid batch whose offset deltas do not increase fails the pass of
/// either policy, with the same error naming the closed segment's file.
#[test]
fn a_repeated_offset_delta_in_a_closed_segment_fails_either_policy_alike() {
    let mut errors = Vec::new();
    for policy in [CompactionPolicy::Seed, CompactionPolicy::Kafka] {
        let fs = Arc::new(SimFs::new());
        log(&fs);
        let path = Path::new(DIR).join(filename::build(0, LOG_SUFFIX));
        let mut bytes = fs.read_all(&path).unwrap();
        let second = batch_len(&bytes, 0);
        forge_delta(&mut bytes, second);
        let (error, before) = clean_forged(&fs, &path, &bytes, policy, "a forged offset delta");
        assert!(
            error.contains(&filename::build(0, LOG_SUFFIX)) && error.contains("delta"),
            "{policy:?}: the error names the closed segment and the delta: {error}"
        );
        assert_eq!(
            fs.list_dir(Path::new(DIR)).unwrap(),
            before,
            "{policy:?}: nothing installed"
        );
        errors.push(error);
    }
    assert_eq!(errors[0], errors[1], "one record walk, one error");
}

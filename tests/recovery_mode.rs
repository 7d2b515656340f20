//! The recovery mode of the active segment's invalid tail. One flipped
//! bit in the first of three flushed batches made the next `seglog append` cut all
//! three, hand out offset 0 again and exit 0 without a word. The default mode
//! still truncates (a crash may leave valid-looking batches after garbage), but
//! the report and the command's JSON say the tail was corruption followed by
//! valid batches, and what they held; `--recovery-mode strict` refuses and
//! changes nothing. A plain torn tail is reported as torn.

mod cli_support;

use std::path::Path;
use std::process::Output;

use cli_support::{seglog, snapshot};

use seglog::{CorruptKind, Error, Log, LogConfig, NewRecord, RecoveryMode, TailKind};

const LOG: &str = "00000000000000000000.log";

/// Three flushed one-record batches, left as a crash leaves them (no
/// clean-shutdown marker, which would vouch for the segment unread).
fn three_flushed_batches(dir: &Path) -> u64 {
    let (mut log, _) = Log::open(dir, LogConfig::default()).unwrap();
    for i in 0..3 {
        let record = NewRecord::new(Some(format!("k{i}").into_bytes()), Some(b"v".to_vec()), i);
        assert_eq!(log.append(&[record]).unwrap().base_offset, i);
    }
    log.flush().unwrap();
    drop(log);
    let marker = dir.join("clean-shutdown");
    if marker.exists() {
        std::fs::remove_file(marker).unwrap();
    }
    std::fs::metadata(dir.join(LOG)).unwrap().len()
}

/// Flips one bit in the first batch's records (past its header: its length and
/// offsets stay readable, its CRC does not check).
fn flip_bit_in_first_batch(dir: &Path) {
    let path = dir.join(LOG);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[70] ^= 0x01;
    std::fs::write(&path, bytes).unwrap();
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {} / {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[test]
fn cli_corruption_before_valid_batches_is_reported_and_strict_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let log_bytes = three_flushed_batches(&dir);
    flip_bit_in_first_batch(&dir);
    let d = dir.to_str().unwrap();
    let batch = r#"[{"key":"x","value":"y","ts":9}]"#;

    let before = snapshot(&dir);
    let refused = seglog(&["append", d, "--recovery-mode", "strict", "--batch", batch]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("followed by 2 valid batches"), "{stderr}");
    assert!(stderr.contains("strict recovery mode refuses"), "{stderr}");
    assert_eq!(snapshot(&dir), before, "strict mode changed the directory");

    let out = seglog(&["append", d, "--batch", batch]);
    assert_eq!(out.status.code(), Some(0));
    let value = json(&out);
    // The existing fields stay; the truncation is in "recovery".
    assert_eq!(value["base_offset"], 0);
    let recovery = &value["recovery"];
    assert_eq!(recovery["truncated_bytes"], log_bytes);
    assert_eq!(recovery["truncated_batches"], 3);
    assert_eq!(recovery["tail"], "corruption_before_valid_batches");
    assert_eq!(recovery["valid_batches_after"], 2);
    assert_eq!(recovery["valid_records_after"], 2);
    assert_eq!(recovery["valid_offsets_after"], serde_json::json!([1, 2]));
    assert_eq!(recovery["mode"], "torn-tail");
    assert!(recovery["reason"]
        .as_str()
        .unwrap()
        .contains("checksum mismatch"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("warning") && stderr.contains("2 valid batches"),
        "{stderr}"
    );
}

#[test]
fn cli_torn_tail_is_reported_as_torn_and_strict_truncates_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let log_bytes = three_flushed_batches(&dir);
    // A torn write: half of a copy of the last batch's bytes, then zeros.
    let path = dir.join(LOG);
    let mut bytes = std::fs::read(&path).unwrap();
    let third = bytes[(log_bytes as usize * 2 / 3)..].to_vec();
    bytes.extend_from_slice(&third[..third.len() / 2]);
    bytes.extend_from_slice(&[0u8; 100]);
    std::fs::write(&path, &bytes).unwrap();
    let d = dir.to_str().unwrap();

    let out = seglog(&["roll", d, "--recovery-mode", "strict"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value = json(&out);
    assert_eq!(value["active_base_offset"], 3);
    let recovery = &value["recovery"];
    assert_eq!(recovery["truncated_bytes"], bytes.len() as u64 - log_bytes);
    assert_eq!(recovery["tail"], "torn_tail");
    assert_eq!(recovery["valid_batches_after"], 0);
    assert_eq!(recovery["mode"], "strict");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn library_reports_the_tail_and_strict_refuses_before_changing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    three_flushed_batches(&dir);
    flip_bit_in_first_batch(&dir);
    let before = snapshot(&dir);

    let strict = LogConfig {
        recovery_mode: RecoveryMode::Strict,
        ..LogConfig::default()
    };
    match Log::open(&dir, strict) {
        Err(Error::Corrupt {
            position,
            kind:
                CorruptKind::BeforeValidBatches {
                    damage,
                    batches,
                    records,
                    first_offset,
                    last_offset,
                },
            ..
        }) => {
            assert!(position < 61, "inside the first batch's header: {position}");
            assert!(matches!(*damage, CorruptKind::ChecksumMismatch { .. }));
            assert_eq!((batches, records, first_offset, last_offset), (2, 2, 1, 2));
        }
        other => panic!("strict open: {other:?}"),
    }
    assert_eq!(snapshot(&dir), before);

    let (log, report) = Log::open(&dir, LogConfig::default()).unwrap();
    assert_eq!(log.next_offset(), 0);
    assert_eq!(report.truncated_batches, 3);
    let tail = report.truncated_tail.expect("the truncation is classified");
    assert_eq!(tail.kind, TailKind::CorruptionBeforeValidBatches);
    assert_eq!(tail.mode, RecoveryMode::TornTail);
    assert_eq!(tail.valid_after.batches, 2);
    assert_eq!(tail.valid_after.first_offset, Some(1));
    assert_eq!(tail.valid_after.last_offset, Some(2));
    drop(log);

    // Nothing left to cut: no classification.
    let (_log, report) = Log::open(&dir, LogConfig::default()).unwrap();
    assert_eq!(report.truncated_tail, None);
}

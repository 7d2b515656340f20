//! The cases of the interop stage, and the field-by-field comparisons (see the
//! module docs of [`super`]).

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use serde::Deserialize;
use serde_json::json;

use seglog::format::batch::{decode_header, PARTITION_LEADER_EPOCH_OFFSET};
use seglog::format::{filename, Header};
use seglog::fs::StdFs;
use seglog::segment::BatchReader;
use seglog::{Log, LogConfig, NewRecord};

use super::harness::Harness;

/// The harness writes with these (its `write` defaults); seglog uses the same.
pub(super) const SEGMENT_BYTES: u64 = 1200;
pub(super) const INDEX_INTERVAL_BYTES: u64 = 128;

#[allow(
    clippy::needless_update,
    reason = "LogConfig gains fields (codec, timestamp type) in a parallel branch"
)]
fn config() -> LogConfig {
    LogConfig {
        segment_bytes: SEGMENT_BYTES,
        index_interval_bytes: INDEX_INTERVAL_BYTES,
        ..LogConfig::default()
    }
}

/// What the harness's `read` writes: what Kafka read from a directory.
#[derive(Debug, Deserialize)]
pub struct KafkaRead {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub segments: Vec<KafkaSegment>,
    pub records: Vec<KafkaRecord>,
    pub offset_positions: Vec<KafkaPosition>,
    pub timestamp_lookups: Vec<KafkaLookup>,
}

#[derive(Debug, Deserialize)]
pub struct KafkaSegment {
    pub base_offset: i64,
}

/// A record as Kafka read it (key, value and header values in base64).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct KafkaRecord {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<String>,
    pub value: Option<String>,
    pub headers: Vec<KafkaHeader>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct KafkaHeader {
    pub key: String,
    pub value: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct KafkaPosition {
    pub offset: i64,
    pub segment: i64,
    pub position: u64,
}

#[derive(Debug, Deserialize)]
pub struct KafkaLookup {
    pub timestamp: i64,
    pub offset: i64,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The records the harness's `records(i, count)` makes (keys, a null key, a
/// tombstone, headers with a null value, timestamps out of order).
pub fn records(i: i64, count: i64) -> Vec<NewRecord> {
    (0..count)
        .map(|j| {
            let n = i * 7 + j;
            let key = (n % 11 != 5).then(|| format!("key-{}", n % 13).into_bytes());
            let value = (n % 17 != 3)
                .then(|| format!("value-{n}-{}", "x".repeat((n % 23) as usize)).into_bytes());
            let mut record = NewRecord::new(key, value, 1_700_000_000_000 + (n * 7919) % 5000);
            if n % 4 == 0 {
                record.headers = vec![
                    Header {
                        key: format!("h{}", n % 3),
                        value: Some(format!("hv{n}").into_bytes()),
                    },
                    Header {
                        key: "null".into(),
                        value: None,
                    },
                ];
            }
            record
        })
        .collect()
}

/// Every record of `log`, as the harness writes Kafka's.
pub(super) fn seglog_records(log: &Log) -> Result<Vec<KafkaRecord>, String> {
    let mut out = Vec::new();
    let mut from = log.log_start_offset();
    loop {
        let read = log
            .read(from, 1 << 20)
            .map_err(|e| format!("seglog read from {from}: {e}"))?;
        let Some(last) = read.last() else { break };
        from = last.offset + 1;
        out.extend(read.into_iter().map(|r| {
            KafkaRecord {
                offset: r.offset,
                timestamp: r.timestamp,
                key: r.key.as_deref().map(b64),
                value: r.value.as_deref().map(b64),
                headers: r
                    .headers
                    .iter()
                    .map(|h| KafkaHeader {
                        key: h.key.clone(),
                        value: h.value.as_deref().map(b64),
                    })
                    .collect(),
            }
        }));
    }
    Ok(out)
}

/// Compares what Kafka read with what seglog reads, field by field, and Kafka's
/// index lookups with seglog's. Returns (records, lookups) compared.
pub fn compare(log: &Log, dir: &Path, kafka: &KafkaRead) -> Result<(u64, u64), String> {
    if (kafka.log_start_offset, kafka.log_end_offset) != (log.log_start_offset(), log.next_offset())
    {
        return Err(format!(
            "Kafka reads offsets [{}, {}), seglog [{}, {})",
            kafka.log_start_offset,
            kafka.log_end_offset,
            log.log_start_offset(),
            log.next_offset()
        ));
    }
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    let kafka_bases: Vec<i64> = kafka.segments.iter().map(|s| s.base_offset).collect();
    if bases != kafka_bases {
        return Err(format!("segments: Kafka {kafka_bases:?}, seglog {bases:?}"));
    }
    let ours = seglog_records(log)?;
    if ours.len() != kafka.records.len() {
        return Err(format!(
            "Kafka reads {} records, seglog {}",
            kafka.records.len(),
            ours.len()
        ));
    }
    for (mine, theirs) in ours.iter().zip(&kafka.records) {
        if mine != theirs {
            return Err(format!(
                "record {}: Kafka reads {theirs:?}, seglog {mine:?}",
                theirs.offset
            ));
        }
    }
    let positions = batch_positions(dir, &bases)?;
    for entry in &kafka.offset_positions {
        let want = positions
            .iter()
            .find(|(base, _, first, last)| {
                *base == entry.segment && *first <= entry.offset && entry.offset <= *last
            })
            .map(|(_, position, _, _)| *position);
        if want != Some(entry.position) {
            return Err(format!(
                "offset {}: Kafka's index lookup gives position {} in segment {}, seglog wrote the batch at {want:?}",
                entry.offset, entry.position, entry.segment
            ));
        }
    }
    for lookup in &kafka.timestamp_lookups {
        let ours = log
            .offset_for_timestamp(lookup.timestamp)
            .map_err(|e| format!("seglog offset for timestamp {}: {e}", lookup.timestamp))?;
        let theirs = (lookup.offset >= 0).then_some(lookup.offset);
        if ours != theirs {
            return Err(format!(
                "timestamp {}: Kafka's ListOffsets gives {theirs:?}, seglog {ours:?}",
                lookup.timestamp
            ));
        }
    }
    let lookups = kafka.offset_positions.len() + kafka.timestamp_lookups.len();
    Ok((ours.len() as u64, lookups as u64))
}

/// (segment, position, base offset, last offset) of every batch in `dir`.
fn batch_positions(dir: &Path, bases: &[i64]) -> Result<Vec<(i64, u64, i64, i64)>, String> {
    let fs = StdFs::new();
    let mut out = Vec::new();
    for base in bases {
        let path = dir.join(filename::build(*base, filename::LOG_SUFFIX));
        let len = std::fs::metadata(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .len();
        let mut reader = BatchReader::new(&fs, &path, 0, len);
        while let Some((position, raw)) = reader.next_raw().map_err(|e| e.to_string())? {
            let header = decode_header(raw).map_err(|e| format!("{}: {e:?}", path.display()))?;
            out.push((*base, position, header.base_offset, header.last_offset()));
        }
    }
    Ok(out)
}

/// The segment files (`.log`, `.index`, `.timeindex`) of `dir` with their bytes.
/// Kafka's other files (producer snapshots, checkpoints) and seglog's are left out.
fn segment_files(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if matches!(
            filename::parse(&name),
            Some((
                _,
                filename::LOG_SUFFIX | filename::INDEX_SUFFIX | filename::TIME_INDEX_SUFFIX
            ))
        ) {
            let bytes = std::fs::read(entry.path()).map_err(|e| e.to_string())?;
            out.insert(name, bytes);
        }
    }
    Ok(out)
}

fn read_json(path: &Path) -> Result<KafkaRead, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Kafka reads `dir` (on a copy); the result.
pub(super) fn kafka_read(harness: &Harness, dir: &Path, out: &Path) -> Result<KafkaRead, String> {
    harness.run(&["read", "--dir", &path_str(dir), "--out", &path_str(out)])?;
    read_json(out)
}

/// [`kafka_read`] of a compacted directory: Kafka's ListOffsets answers are
/// recorded, not checked against a scan (on a compacted log Kafka's own answers can
/// differ from one); [`compare`] then holds seglog's answers to Kafka's.
pub(super) fn kafka_read_compacted(
    harness: &Harness,
    dir: &Path,
    out: &Path,
) -> Result<KafkaRead, String> {
    harness.run(&[
        "read",
        "--dir",
        &path_str(dir),
        "--out",
        &path_str(out),
        "--lenient-lookups",
        "1",
    ])?;
    read_json(out)
}

fn path_str(path: &Path) -> String {
    path.display().to_string()
}

fn open(dir: &Path) -> Result<(Log, seglog::RecoveryReport), String> {
    Log::open(dir, config()).map_err(|e| format!("seglog open of {}: {e}", dir.display()))
}

fn append(log: &mut Log, from: i64, batches: i64) -> Result<(), String> {
    for i in from..from + batches {
        log.append(&records(i, 1 + i % 3))
            .map_err(|e| format!("seglog append: {e}"))?;
    }
    Ok(())
}

/// seglog writes and closes (two sessions); Kafka reads each time.
pub(super) fn seglog_to_kafka(harness: &Harness, work: &Path) -> Result<(u64, u64), String> {
    let dir = work.join("seglog.written-0");
    let mut totals = (0, 0);
    for (session, (from, batches)) in [(0, 40), (40, 12)].into_iter().enumerate() {
        let (mut log, _) = open(&dir)?;
        append(&mut log, from, batches)?;
        // The active segment's max timestamp comes with its last batch, so only
        // the close-time entry puts it in the time index (where Kafka reads it).
        let newest = NewRecord::new(None, Some(b"newest".to_vec()), 1_800_000_000_000 + from);
        log.append(&[newest])
            .map_err(|e| format!("seglog append: {e}"))?;
        log.close().map_err(|e| format!("seglog close: {e}"))?;
        let kafka = kafka_read(
            harness,
            &dir,
            &work.join(format!("seglog-read-{session}.json")),
        )?;
        let (log, report) = open(&dir)?;
        // (An index written after a reopen differs from a rebuild, as in Kafka, whose
        // byte count since the last entry restarts at 0: kept, not rewritten.)
        if !report.is_clean() {
            return Err(format!(
                "reopening seglog's own closed directory changed something: {report:?}"
            ));
        }
        let (records, lookups) = compare(&log, &dir, &kafka)?;
        totals = (records, totals.1 + lookups);
    }
    Ok(totals)
}

/// Kafka writes `case`; seglog opens (changing nothing), reads, appends, closes;
/// Kafka reads it back.
pub(super) fn kafka_to_seglog(
    harness: &Harness,
    work: &Path,
    case: &str,
) -> Result<(u64, u64), String> {
    let parent = work.join(format!("kafka-{case}"));
    std::fs::create_dir_all(&parent).map_err(|e| e.to_string())?;
    harness.run(&["write", "--parent", &path_str(&parent), "--cases", case])?;
    let dir = parent.join(format!("interop.{case}-0"));
    let written = read_json(&parent.join(format!("interop.{case}-0.json")))?;
    let before = segment_files(&dir)?;
    let (mut log, report) = open(&dir)?;
    if report.truncated_bytes != 0 || !report.rebuilt_indexes.is_empty() {
        return Err(format!(
            "seglog's recovery of Kafka's cleanly closed directory truncated or rebuilt: {}",
            json!({"truncated_bytes": report.truncated_bytes, "rebuilt_indexes": report.rebuilt_indexes})
        ));
    }
    if segment_files(&dir)? != before {
        return Err("seglog's open changed a segment file of Kafka's directory".into());
    }
    let (records, mut lookups) = compare(&log, &dir, &written)?;
    let next = log.next_offset();
    append(&mut log, 1000, 8)?;
    log.close().map_err(|e| format!("seglog close: {e}"))?;
    let back = kafka_read(harness, &dir, &parent.join("read-back.json"))?;
    let (log, _) = open(&dir)?;
    let (all, more) = compare(&log, &dir, &back)?;
    if all <= records || log.next_offset() <= next {
        return Err("Kafka did not read seglog's appends".into());
    }
    lookups += more;
    Ok((all, lookups))
}

/// seglog and Kafka do the same appends, closes and reopens; same bytes.
pub(super) fn twin(harness: &Harness, work: &Path) -> Result<(u64, u64), String> {
    let sessions: Vec<Vec<Vec<NewRecord>>> = [(0, 30), (30, 9), (39, 14)]
        .iter()
        .map(|(from, n)| (*from..from + n).map(|i| records(i, 1 + i % 4)).collect())
        .collect();
    let ours = work.join("twin-seglog/twin.none-0");
    for session in &sessions {
        let (mut log, _) = open(&ours)?;
        for batch in session {
            log.append(batch)
                .map_err(|e| format!("seglog append: {e}"))?;
        }
        log.close().map_err(|e| format!("seglog close: {e}"))?;
    }
    let spec = json!({
        "segment_bytes": SEGMENT_BYTES,
        "index_interval_bytes": INDEX_INTERVAL_BYTES,
        "sessions": sessions.iter().map(|s| s.iter().map(|batch| batch.iter().map(|r| json!({
            "timestamp": r.timestamp,
            "key": r.key.as_deref().map(b64),
            "value": r.value.as_deref().map(b64),
            "headers": r.headers.iter().map(|h| json!({"key": h.key, "value": h.value.as_deref().map(b64)})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>()).collect::<Vec<_>>()).collect::<Vec<_>>(),
    });
    let spec_path = work.join("twin-spec.json");
    std::fs::write(&spec_path, spec.to_string()).map_err(|e| e.to_string())?;
    let theirs = work.join("twin-kafka/twin.none-0");
    harness.run(&[
        "twin",
        "--spec",
        &path_str(&spec_path),
        "--dir",
        &path_str(&theirs),
    ])?;
    let mine = segment_files(&ours)?;
    let kafka = segment_files(&theirs)?;
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    if names(&mine) != names(&kafka) {
        return Err(format!(
            "files: Kafka {:?}, seglog {:?}",
            names(&kafka),
            names(&mine)
        ));
    }
    for (name, bytes) in &mine {
        let mut expected = kafka[name].clone();
        if name.ends_with(filename::LOG_SUFFIX) {
            copy_leader_epochs(bytes, &mut expected);
        }
        if *bytes != expected {
            let at = bytes.iter().zip(&expected).position(|(a, b)| a != b);
            return Err(format!(
                "{name}: seglog's {} bytes differ from Kafka's {} (first difference at {at:?})",
                bytes.len(),
                expected.len()
            ));
        }
    }
    let records = sessions.iter().flatten().map(|b| b.len() as u64).sum();
    Ok((records, 0))
}

/// The broker stamps its leader epoch into each batch (outside the CRC); seglog
/// writes -1. Copies seglog's into Kafka's bytes so the rest compares exactly.
fn copy_leader_epochs(ours: &[u8], theirs: &mut [u8]) {
    let mut position = 0usize;
    while position + PARTITION_LEADER_EPOCH_OFFSET + 4 <= ours.len().min(theirs.len()) {
        let field =
            position + PARTITION_LEADER_EPOCH_OFFSET..position + PARTITION_LEADER_EPOCH_OFFSET + 4;
        theirs[field.clone()].copy_from_slice(&ours[field]);
        let length = u32::from_be_bytes([
            ours[position + 8],
            ours[position + 9],
            ours[position + 10],
            ours[position + 11],
        ]);
        position += 12 + length as usize;
    }
}

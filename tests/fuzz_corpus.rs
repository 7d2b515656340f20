//! Replays the committed fuzz seed corpora (`fuzz/corpus/<target>/seed-*`) through
//! the same checks the cargo-fuzz targets run (`fuzz/fuzz_targets/check_*.rs`, included
//! by path), so `cargo test` exercises every target without libFuzzer.
//!
//! The seeds are generated here too (`seeds_are_current`): raw batches for
//! `decode_batch`, and for the structured targets the first inputs of a fixed
//! pseudo-random byte stream that decode (with `arbitrary`, as libFuzzer's
//! `fuzz_target!` does) into an input of each wanted shape. Regenerate after changing
//! an input type: `SEGLOG_WRITE_SEEDS=1 cargo test --test fuzz_corpus`.

#[path = "../fuzz/fuzz_targets/check_batch.rs"]
mod check_batch;
#[path = "../fuzz/fuzz_targets/check_crash.rs"]
mod check_crash;
#[path = "../fuzz/fuzz_targets/check_dir.rs"]
mod check_dir;
#[path = "../fuzz/fuzz_targets/check_ops.rs"]
mod check_ops;
#[path = "../fuzz/fuzz_targets/check_raw.rs"]
mod check_raw;
#[path = "../fuzz/fuzz_targets/common.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arbitrary::{Arbitrary, Unstructured};
use seglog::format::{Compression, ControlKind, Header, NewRecord, RecordBatch};

use common::{
    CheckpointFile, CrashInput, CrashKind, Damage, DirInput, FuzzOp, IndexFiles, Leftover,
    OpsInput, Step, Stranger,
};

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join("corpus")
        .join(target)
}

/// Decodes fuzz input bytes exactly as `fuzz_target!` does.
fn decode<'a, T: Arbitrary<'a>>(bytes: &'a [u8]) -> Option<T> {
    T::arbitrary_take_rest(Unstructured::new(bytes)).ok()
}

/// The committed seed files of `target`, by name.
fn committed_seeds(target: &str) -> BTreeMap<String, Vec<u8>> {
    let dir = corpus_dir(target);
    let mut seeds = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let entry = entry.expect("dir entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("seed-") {
            seeds.insert(name, std::fs::read(entry.path()).expect("read seed"));
        }
    }
    seeds
}

/// splitmix64: a fixed stream of candidate inputs, the same on every machine.
struct Stream(u64);

impl Stream {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// A named predicate over decoded inputs.
type Shape<'f, T> = (&'f str, &'f dyn Fn(&T) -> bool);

/// For each named shape, the first candidate of the stream that decodes into an
/// input of that shape.
fn search<T: for<'a> Arbitrary<'a>>(
    seed: u64,
    len: usize,
    shapes: &[Shape<T>],
) -> BTreeMap<String, Vec<u8>> {
    let mut stream = Stream(seed);
    let mut found = BTreeMap::new();
    for _ in 0..200_000 {
        if found.len() == shapes.len() {
            break;
        }
        let bytes = stream.bytes(len);
        let Some(input) = decode::<T>(&bytes) else {
            continue;
        };
        for (name, wanted) in shapes {
            let name = format!("seed-{name}");
            if !found.contains_key(&name) && wanted(&input) {
                found.insert(name, bytes.clone());
                break;
            }
        }
    }
    assert_eq!(found.len(), shapes.len(), "not every shape was found");
    found
}

fn batch_seeds() -> BTreeMap<String, Vec<u8>> {
    let record = |key: Option<&str>, value: Option<&str>, ts| {
        NewRecord::new(
            key.map(|k| k.as_bytes().to_vec()),
            value.map(|v| v.as_bytes().to_vec()),
            ts,
        )
    };
    let one = RecordBatch::build(0, &[record(Some("k"), Some("v"), 1_000)]);
    let mut headers = record(None, Some("event"), 5);
    headers.headers = vec![Header {
        key: "h".into(),
        value: Some(b"x".to_vec()),
    }];
    let many = RecordBatch::build(
        42,
        &[
            record(Some("a"), Some("1"), 10),
            headers,
            record(Some("a"), None, 7),
        ],
    );
    let compacted = many
        .retain(|r| r.offset_delta != 1)
        .expect("two records kept");
    let control = RecordBatch::control(7, ControlKind::Commit, 1, 0, 0, 99);
    let mut torn = many.encode();
    torn.truncate(torn.len() - 3);
    let mut bad_crc = one.encode();
    bad_crc[30] ^= 0x10;
    let mut two = one.encode();
    two.extend_from_slice(&control.encode());
    [
        ("one-record", one.encode()),
        ("three-records-headers-tombstone", many.encode()),
        ("compacted-gap", compacted.encode()),
        ("control-commit", control.encode()),
        ("torn", torn),
        ("bad-crc", bad_crc),
        ("two-batches", two),
        (
            "gzip",
            many.clone().with_compression(Compression::Gzip).encode(),
        ),
        (
            "snappy",
            many.clone().with_compression(Compression::Snappy).encode(),
        ),
        (
            "lz4",
            many.clone().with_compression(Compression::Lz4).encode(),
        ),
        (
            "zstd-log-append-time",
            many.clone()
                .with_compression(Compression::Zstd)
                .with_log_append_time(5_000)
                .encode(),
        ),
        (
            "log-append-time-compacted",
            many.clone()
                .with_log_append_time(5_000)
                .retain(|r| r.offset_delta != 0)
                .expect("two records kept")
                .encode(),
        ),
    ]
    .into_iter()
    .map(|(name, bytes)| (format!("seed-{name}"), bytes))
    .collect()
}

fn last_log_damaged(input: &DirInput) -> bool {
    let built = check_dir::build_dir(input);
    let last = built.records.keys().next_back().cloned();
    input.segments.0.len() >= 2
        && last.is_some_and(|last| built.damaged.len() == 1 && built.damaged.contains(&last))
}

fn closed_log_damaged(input: &DirInput) -> bool {
    let built = check_dir::build_dir(input);
    let logs: Vec<_> = built.records.keys().cloned().collect();
    logs.len() >= 2
        && logs[..logs.len() - 1]
            .iter()
            .any(|p| built.damaged.contains(p))
}

fn dir_seeds() -> BTreeMap<String, Vec<u8>> {
    let all_exact = |i: &DirInput| {
        i.segments
            .0
            .iter()
            .all(|s| matches!(s.indexes, IndexFiles::Exact))
    };
    let batches = |i: &DirInput| {
        i.segments
            .0
            .iter()
            .map(|s| s.batches.0.len())
            .sum::<usize>()
    };
    search::<DirInput>(
        1,
        320,
        &[
            ("clean-three-segments", &|i| {
                i.segments.0.len() >= 3 && i.damage.0.is_empty() && all_exact(i) && batches(i) >= 4
            }),
            ("index-repair", &|i| {
                i.damage.0.is_empty() && !all_exact(i) && batches(i) >= 3
            }),
            ("torn-active-tail", &|i| {
                batches(i) >= 3
                    && matches!(i.damage.0.as_slice(), [Damage::Truncate { .. }])
                    && last_log_damaged(i)
            }),
            ("flipped-active-tail", &|i| {
                batches(i) >= 3
                    && matches!(i.damage.0.as_slice(), [Damage::FlipBit { .. }])
                    && last_log_damaged(i)
            }),
            ("forged-batch-header", &|i| {
                batches(i) >= 3 && matches!(i.damage.0.as_slice(), [Damage::Forge { .. }])
            }),
            ("damaged-closed-segment", &|i| {
                batches(i) >= 3 && closed_log_damaged(i)
            }),
            ("strangers", &|i| {
                i.damage.0.is_empty()
                    && batches(i) >= 2
                    && i.strangers.0.iter().any(|s| matches!(s, Stranger::Subdir))
                    && i.strangers.0.len() == 2
            }),
            ("empty-dir", &|i| {
                i.segments.0.is_empty() && i.damage.0.is_empty()
            }),
            ("checkpoint-removes-prefix", &|i| {
                i.damage.0.is_empty()
                    && matches!(i.checkpoint, Some(CheckpointFile::At(_)))
                    && i.segments.0.len() >= 3
                    && matches!(check_dir::open_dir(i), check_dir::DirOutcome::Opened { segments_removed, .. } if segments_removed > 0)
            }),
            // A valid checkpoint past the end of the log (forged: no retention
            // writes one) is refused, naming the checkpoint, and deletes nothing.
            ("forged-checkpoint-past-end", &|i| {
                i.damage.0.is_empty()
                    && matches!(i.checkpoint, Some(CheckpointFile::At(_)))
                    && i.segments.0.len() >= 2
                    && matches!(
                        check_dir::open_dir(i),
                        check_dir::DirOutcome::Refused {
                            past_log_end: true,
                            ..
                        }
                    )
            }),
            // A removed last segment leaves an intact checkpoint past the end of
            // what remains (a fuzzing case: the oracle must not blame the engine
            // for naming the checkpoint).
            ("checkpoint-past-removed-segment", &|i| {
                matches!(i.damage.0.as_slice(), [Damage::Remove { .. }])
                    && matches!(i.checkpoint, Some(CheckpointFile::At(_)))
                    && matches!(
                        check_dir::open_dir(i),
                        check_dir::DirOutcome::Refused {
                            past_log_end: true,
                            ..
                        }
                    )
            }),
            // A checkpoint with no segment beside it: the first segment is created
            // at the checkpointed start, and a second open agrees (a fuzzing
            // case: created at 0, it makes the second open refuse the log).
            ("checkpoint-without-segments", &|i| {
                i.segments.0.is_empty()
                    && i.damage.0.is_empty()
                    && matches!(i.checkpoint, Some(CheckpointFile::At(n)) if n % 2 == 0)
                    && i.first_base.0 > 0
                    && matches!(check_dir::open_dir(i), check_dir::DirOutcome::Opened { .. })
            }),
            ("garbage-checkpoint", &|i| {
                i.damage.0.is_empty()
                    && matches!(i.checkpoint, Some(CheckpointFile::Garbage(_)))
                    && batches(i) >= 2
            }),
            ("uncommitted-compaction", &|i| {
                i.damage.0.is_empty()
                    && batches(i) >= 2
                    && i.leftovers.0.len() == 2
                    && i.leftovers
                        .0
                        .iter()
                        .any(|l| matches!(l, Leftover::UncommittedTmp))
                    && i.leftovers
                        .0
                        .iter()
                        .any(|l| matches!(l, Leftover::ManifestTmp | Leftover::CheckpointTmp))
            }),
            ("damaged-manifest", &|i| {
                i.damage.0.is_empty()
                    && batches(i) >= 2
                    && i.leftovers
                        .0
                        .iter()
                        .any(|l| matches!(l, Leftover::DamagedManifest(_)))
            }),
        ],
    )
}

fn count_ops(steps: &[Step], wanted: fn(&FuzzOp) -> bool) -> usize {
    steps
        .iter()
        .filter(|s| matches!(s, Step::Op(op) if wanted(op)))
        .count()
}

fn ops_seeds() -> BTreeMap<String, Vec<u8>> {
    let appends = |i: &OpsInput| count_ops(&i.steps.0, |o| matches!(o, FuzzOp::Append(_)));
    let rolls = |i: &OpsInput| count_ops(&i.steps.0, |o| matches!(o, FuzzOp::Roll));
    search::<OpsInput>(
        2,
        256,
        &[
            ("compaction-drops-records", &|i| {
                appends(i) >= 4
                    && rolls(i) >= 2
                    && check_ops::ops_vs_model(i).records_compacted_away > 0
            }),
            ("retention-deletes-segments", &|i| {
                appends(i) >= 3 && check_ops::ops_vs_model(i).segments_deleted > 0
            }),
            ("reopen-after-process-crash", &|i| {
                appends(i) >= 3
                    && i.steps.0.iter().any(|s| matches!(s, Step::Reopen))
                    && count_ops(&i.steps.0, |o| matches!(o, FuzzOp::Read { .. })) >= 1
            }),
            ("rejected-arguments", &|i| {
                appends(i) >= 2 && check_ops::ops_vs_model(i).rejected > 0
            }),
            ("auto-roll-small-segments", &|i| {
                i.config.segment_bytes < 150 && appends(i) >= 5
            }),
        ],
    )
}

fn crash_seeds() -> BTreeMap<String, Vec<u8>> {
    let has =
        |i: &CrashInput, wanted: fn(&FuzzOp) -> bool| i.ops.0.iter().filter(|o| wanted(o)).count();
    let interrupted = |i: &CrashInput, wanted: fn(&FuzzOp) -> bool| {
        check_crash::crash_recovery(i)
            .interrupted
            .and_then(|n| i.ops.0.get(n))
            .is_some_and(wanted)
    };
    let power_loss = |i: &CrashInput| matches!(i.crash, CrashKind::PowerLoss { .. });
    search::<CrashInput>(
        3,
        200,
        &[
            ("power-loss-in-compaction", &|i| {
                power_loss(i)
                    && has(i, |o| matches!(o, FuzzOp::Roll)) >= 2
                    && interrupted(i, |o| matches!(o, FuzzOp::Compact { .. }))
            }),
            ("power-loss-in-retention", &|i| {
                power_loss(i)
                    && has(i, |o| matches!(o, FuzzOp::Roll)) >= 2
                    && interrupted(i, |o| matches!(o, FuzzOp::Retain { .. }))
            }),
            ("torn-append", &|i| {
                power_loss(i)
                    && interrupted(i, |o| matches!(o, FuzzOp::Append(_) | FuzzOp::Flush))
                    && check_crash::crash_recovery(i).lost_items > 0
            }),
            ("process-crash-in-roll", &|i| {
                i.crash == CrashKind::Process && interrupted(i, |o| matches!(o, FuzzOp::Roll))
            }),
            ("crash-during-recovery", &|i| {
                has(i, |o| {
                    matches!(o, FuzzOp::Compact { .. } | FuzzOp::Retain { .. })
                }) >= 1
                    && check_crash::crash_recovery(i).recovery_crashed
            }),
        ],
    )
}

/// Seeds of `decode_compressed`: codec byte, count byte, then a payload: each
/// codec's stream of three records (declared 3, and 2: a count mismatch), an
/// empty stream and a bomb of zeros.
fn compressed_seeds() -> BTreeMap<String, Vec<u8>> {
    let records = RecordBatch::build(
        0,
        &[
            NewRecord::new(Some(b"a".to_vec()), Some(b"1".to_vec()), 0),
            NewRecord::new(None, Some(b"2".to_vec()), 0),
            NewRecord::new(Some(b"a".to_vec()), None, 0),
        ],
    )
    .encoded_records();
    let mut out = BTreeMap::new();
    for (i, codec) in Compression::ALL.into_iter().skip(1).enumerate() {
        let payload = codec.compress(&records);
        for (count, label) in [
            (3u8, "three"),
            (2, "count-mismatch"),
            (0x13, "three-log-append-time"),
        ] {
            let mut seed = vec![i as u8, count];
            seed.extend_from_slice(&payload);
            out.insert(format!("seed-{}-{label}", codec.name()), seed);
        }
        let mut empty = vec![i as u8, 0];
        empty.extend_from_slice(&codec.compress(&[]));
        out.insert(format!("seed-{}-empty", codec.name()), empty);
    }
    let mut bomb = vec![3u8, 1];
    bomb.extend_from_slice(&Compression::Zstd.compress(&vec![0u8; (64 << 20) + 1]));
    out.insert("seed-zstd-bomb".into(), bomb);
    out
}

/// Seeds of `append_batches`: produce requests as producers encode them
/// (`seglog_suite::workload::raw::encode`), valid and with every defect, one batch or
/// several, compressed, and bytes after the last batch.
fn raw_seeds() -> BTreeMap<String, Vec<u8>> {
    use seglog_suite::workload::raw::encode_request;
    use seglog_suite::workload::{Defect, RawBatchSpec, RecordSpec};
    let batch = |n: i64, codec: Option<Compression>, defect: Option<Defect>| RawBatchSpec {
        records: (0..n)
            .map(|i| RecordSpec {
                key: (i % 3 != 2).then(|| format!("k{i}")),
                value: (i % 4 != 3).then(|| format!("value-{i}")),
                ts: 100 + i,
            })
            .collect(),
        codec,
        defect,
    };
    let mut seeds = vec![
        ("one".to_string(), encode_request(&[batch(1, None, None)])),
        (
            "three-batches".to_string(),
            encode_request(&[
                batch(2, None, None),
                batch(5, None, None),
                batch(1, None, None),
            ]),
        ),
        (
            "lz4-and-plain".to_string(),
            encode_request(&[batch(4, Some(Compression::Lz4), None), batch(2, None, None)]),
        ),
        (
            "zstd".to_string(),
            encode_request(&[batch(6, Some(Compression::Zstd), None)]),
        ),
        ("trailing-bytes".to_string(), {
            let mut bytes = encode_request(&[batch(2, None, None)]);
            bytes.extend_from_slice(&[0, 0, 0]);
            bytes
        }),
    ];
    for defect in Defect::ALL {
        let name = serde_json::to_string(&defect).expect("a defect serializes");
        seeds.push((
            format!("second-{}", name.trim_matches('"')),
            encode_request(&[batch(2, None, None), batch(3, None, Some(defect))]),
        ));
    }
    seeds
        .into_iter()
        .map(|(name, bytes)| (format!("seed-{name}"), bytes))
        .collect()
}

/// Every seed of every target, as the generator makes them.
fn generated() -> BTreeMap<&'static str, BTreeMap<String, Vec<u8>>> {
    BTreeMap::from([
        ("decode_batch", batch_seeds()),
        ("decode_compressed", compressed_seeds()),
        ("open_dir", dir_seeds()),
        ("ops_vs_model", ops_seeds()),
        ("crash_recovery", crash_seeds()),
        ("append_batches", raw_seeds()),
    ])
}

#[test]
fn seeds_are_current() {
    let write = std::env::var_os("SEGLOG_WRITE_SEEDS").is_some();
    for (target, seeds) in generated() {
        let dir = corpus_dir(target);
        if write {
            std::fs::create_dir_all(&dir).expect("mkdir corpus");
            for old in committed_seeds(target).keys() {
                std::fs::remove_file(dir.join(old)).expect("remove old seed");
            }
            for (name, bytes) in &seeds {
                std::fs::write(dir.join(name), bytes).expect("write seed");
            }
        }
        assert_eq!(
            committed_seeds(target),
            seeds,
            "fuzz/corpus/{target} is stale: run SEGLOG_WRITE_SEEDS=1 cargo test --test fuzz_corpus"
        );
    }
}

#[test]
fn decode_compressed_seeds() {
    let seeds = committed_seeds("decode_compressed");
    assert!(seeds.len() >= 10);
    let mut decoded = 0;
    for bytes in seeds.values() {
        check_batch::decode_compressed(bytes);
        let batch = check_batch::compressed_batch(bytes).expect("a seed has two bytes");
        decoded += usize::from(seglog::format::batch::decode(&batch).is_ok());
    }
    // Both spaces: payloads that decode, and ones that fail (count, bomb).
    assert!(
        decoded >= 8 && decoded < seeds.len(),
        "{decoded} of {}",
        seeds.len()
    );
}

#[test]
fn decode_batch_seeds() {
    let seeds = committed_seeds("decode_batch");
    assert!(seeds.len() >= 5);
    let mut decoded = 0;
    for bytes in seeds.values() {
        check_batch::decode_batch(bytes);
        decoded += usize::from(seglog::format::batch::decode(bytes).is_ok());
    }
    // Both spaces: valid batches and damaged ones.
    assert!(
        decoded >= 3 && decoded < seeds.len(),
        "{decoded} of {}",
        seeds.len()
    );
}

#[test]
fn append_batches_seeds() {
    let seeds = committed_seeds("append_batches");
    assert!(seeds.len() >= 10);
    let outcomes: Vec<check_raw::RawOutcome> = seeds
        .values()
        .map(|bytes| check_raw::append_batches(bytes))
        .collect();
    // Both spaces: requests taken (one batch and several) and refused.
    let refused = outcomes
        .iter()
        .filter(|o| **o == check_raw::RawOutcome::Refused)
        .count();
    assert!(
        outcomes.contains(&check_raw::RawOutcome::Accepted { batches: 3 }),
        "{outcomes:?}"
    );
    assert!(refused >= 7 && refused < seeds.len(), "{outcomes:?}");
}

#[test]
fn open_dir_seeds() {
    let seeds = committed_seeds("open_dir");
    assert!(seeds.len() >= 5);
    let mut outcomes = Vec::new();
    for (name, bytes) in &seeds {
        let input: DirInput = decode(bytes).unwrap_or_else(|| panic!("{name} does not decode"));
        outcomes.push(check_dir::open_dir(&input));
    }
    // The seeds reach every path: a refused open, a truncated tail, a rebuilt index.
    assert!(
        outcomes
            .iter()
            .any(|o| matches!(o, check_dir::DirOutcome::Refused { .. })),
        "{outcomes:?}"
    );
    assert!(
        outcomes
            .iter()
            .any(|o| matches!(o, check_dir::DirOutcome::Opened { truncated_bytes, .. } if *truncated_bytes > 0)),
        "{outcomes:?}"
    );
    assert!(
        outcomes
            .iter()
            .any(|o| matches!(o, check_dir::DirOutcome::Opened { rebuilt_indexes, .. } if *rebuilt_indexes > 0)),
        "{outcomes:?}"
    );
}

#[test]
fn ops_vs_model_seeds() {
    let seeds = committed_seeds("ops_vs_model");
    assert!(seeds.len() >= 4);
    let mut total = check_ops::OpsOutcome::default();
    for (name, bytes) in &seeds {
        let input: OpsInput = decode(bytes).unwrap_or_else(|| panic!("{name} does not decode"));
        let outcome = check_ops::ops_vs_model(&input);
        total.appends += outcome.appends;
        total.rejected += outcome.rejected;
        total.segments_deleted += outcome.segments_deleted;
        total.records_compacted_away += outcome.records_compacted_away;
        total.reopens += outcome.reopens;
    }
    // The seeds reach compaction that drops records, retention that deletes
    // segments, rejected arguments and a reopen.
    assert!(total.appends > 0, "{total:?}");
    assert!(total.rejected > 0, "{total:?}");
    assert!(total.segments_deleted > 0, "{total:?}");
    assert!(total.records_compacted_away > 0, "{total:?}");
    assert!(total.reopens > 0, "{total:?}");
}

#[test]
fn crash_recovery_seeds() {
    let seeds = committed_seeds("crash_recovery");
    assert!(seeds.len() >= 4);
    let mut outcomes = Vec::new();
    for (name, bytes) in &seeds {
        let input: CrashInput = decode(bytes).unwrap_or_else(|| panic!("{name} does not decode"));
        outcomes.push(check_crash::crash_recovery(&input));
    }
    assert!(outcomes.iter().any(|o| o.lost_items > 0), "{outcomes:?}");
    assert!(outcomes.iter().any(|o| o.recovery_crashed), "{outcomes:?}");
    assert!(
        outcomes.iter().any(|o| o.interrupted.is_some()),
        "{outcomes:?}"
    );
}

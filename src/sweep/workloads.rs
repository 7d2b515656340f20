//! The named workloads of the crash sweep.

use crate::workload::{Defect, Op, RawBatchSpec, RecordSpec};
use seglog::format::Compression;
use seglog::log::LogConfig;

/// A named sequence of operations on one log.
#[derive(Debug, Clone)]
pub struct Workload {
    pub name: String,
    pub description: String,
    pub config: LogConfig,
    pub ops: Vec<Op>,
    /// The protocol variant the engine runs (`manifest` is the real one; the others
    /// exist only with the `test-variants` feature, to prove the checks have teeth).
    pub variant: String,
}

fn rec(key: Option<&str>, value: Option<&str>, ts: i64) -> RecordSpec {
    RecordSpec {
        key: key.map(str::to_string),
        value: value.map(str::to_string),
        ts,
    }
}

fn append(records: &[(Option<&str>, Option<&str>, i64)]) -> Op {
    Op::Append {
        records: records.iter().map(|(k, v, ts)| rec(*k, *v, *ts)).collect(),
        codec: None,
        log_append_time: None,
    }
}

/// [`append`] of a batch compressed with `codec`, stamped LogAppendTime at
/// `log_append_time` when given.
fn append_with(
    records: &[(Option<&str>, Option<&str>, i64)],
    codec: Compression,
    log_append_time: Option<i64>,
) -> Op {
    Op::Append {
        records: records.iter().map(|(k, v, ts)| rec(*k, *v, *ts)).collect(),
        codec: Some(codec),
        log_append_time,
    }
}

/// One batch of [`append_raw`]: records, the producer's codec, a defect.
type RawBatch<'a> = (
    &'a [(Option<&'a str>, Option<&'a str>, i64)],
    Option<Compression>,
    Option<Defect>,
);

/// One `append_batches` call of producer-encoded `batches`.
fn append_raw(batches: &[RawBatch<'_>]) -> Op {
    Op::AppendRaw {
        batches: batches
            .iter()
            .map(|(records, codec, defect)| RawBatchSpec {
                records: records.iter().map(|(k, v, ts)| rec(*k, *v, *ts)).collect(),
                codec: *codec,
                defect: *defect,
            })
            .collect(),
    }
}

/// One transactional batch of producer 1 (`Op::AppendTxn`).
fn txn(records: &[(Option<&str>, Option<&str>, i64)]) -> Op {
    Op::AppendTxn {
        records: records.iter().map(|(k, v, ts)| rec(*k, *v, *ts)).collect(),
        producer: crate::workload::TXN_PRODUCER,
    }
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1024 * 1024,
        index_interval_bytes: 64,
        ..Default::default()
    }
}

/// A cleaning pass with a map of `keys` keys (24 bytes a key).
fn clean(now: i64, keys: u64) -> Op {
    Op::Clean {
        now,
        delete_retention_ms: 1000,
        segment_bytes: None,
        dedupe_buffer_bytes: Some(keys * 24),
        min_compaction_lag_ms: 0,
        policy: seglog::compaction::CompactionPolicy::Seed,
        producer_id_expiration_ms: seglog::compaction::PRODUCER_ID_EXPIRATION_MS_DEFAULT,
    }
}

/// A `kafka`-policy cleaning pass at `now` (delete horizon: `now + 500`).
fn kafka_clean(now: i64) -> Op {
    Op::Clean {
        now,
        delete_retention_ms: 500,
        segment_bytes: None,
        dedupe_buffer_bytes: None,
        min_compaction_lag_ms: 0,
        policy: seglog::compaction::CompactionPolicy::Kafka,
        producer_id_expiration_ms: seglog::compaction::PRODUCER_ID_EXPIRATION_MS_DEFAULT,
    }
}

/// Transactions over the same keys, then two cleanings by `policy`: a committed
/// transaction, an aborted one that rewrites its keys, plain appends, and one left
/// open across the first cleaning (committed before the second).
fn txn_clean_ops(policy: seglog::compaction::CompactionPolicy) -> Vec<Op> {
    let clean_expiring = |now, producer_id_expiration_ms| Op::Clean {
        now,
        delete_retention_ms: 500,
        segment_bytes: None,
        dedupe_buffer_bytes: None,
        min_compaction_lag_ms: 0,
        policy,
        producer_id_expiration_ms,
    };
    let clean = |now| clean_expiring(now, seglog::compaction::PRODUCER_ID_EXPIRATION_MS_DEFAULT);
    vec![
        txn(&[(Some("a"), Some("1"), 1), (Some("b"), Some("1"), 2)]),
        Op::AppendControl {
            commit: true,
            ts: 3,
            producer: crate::workload::TXN_PRODUCER,
        },
        txn(&[(Some("a"), Some("x"), 4), (Some("b"), None, 5)]),
        append(&[(Some("c"), Some("1"), 6)]),
        Op::AppendControl {
            commit: false,
            ts: 7,
            producer: crate::workload::TXN_PRODUCER,
        },
        Op::Roll,
        append(&[(Some("c"), Some("2"), 8), (None, Some("k"), 9)]),
        txn(&[(Some("d"), Some("1"), 10)]),
        Op::Roll,
        append(&[(Some("e"), Some("1"), 11)]),
        clean(100),
        Op::AppendControl {
            commit: true,
            ts: 12,
            producer: crate::workload::TXN_PRODUCER,
        },
        Op::Roll,
        append(&[(Some("a"), Some("2"), 13)]),
        clean(2000),
        // Long after the producer's last batch, a COMMIT marker: it holds no open
        // transaction, so it expires, and the kafka policy drops the empty batches
        // it kept for that producer (rule 5 of `kafka_txn`).
        append(&[(Some("b"), Some("2"), 14)]),
        Op::Roll,
        clean_expiring(10_000, 1_000),
    ]
}

/// An incremental cleaning pass with room for 1000 keys, grouping output segments
/// up to `segment_bytes` (`Some(1)`: every source segment alone, so an untouched
/// one is hard-linked).
fn carry_clean(now: i64, segment_bytes: Option<u64>) -> Op {
    Op::Clean {
        now,
        delete_retention_ms: 1000,
        segment_bytes,
        dedupe_buffer_bytes: Some(1000 * 24),
        min_compaction_lag_ms: 0,
        policy: seglog::compaction::CompactionPolicy::Seed,
        producer_id_expiration_ms: seglog::compaction::PRODUCER_ID_EXPIRATION_MS_DEFAULT,
    }
}

/// The workloads every sweep runs (docs/design.md section 8).
pub fn named_workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "seed-retention".into(),
            description: "the seeds' worked example: three closed segments expire at clock 300 / 100 ms".into(),
            config: config(),
            variant: "manifest".into(),
            ops: vec![
                append(&[(None, Some("0"), 0)]),
                Op::Roll,
                append(&[(None, Some("50"), 50)]),
                Op::Roll,
                append(&[(None, Some("150"), 150)]),
                Op::Roll,
                append(&[(None, Some("250"), 250)]),
                Op::Flush,
                Op::Retain { now: 300, retention_ms: Some(100), retention_bytes: None },
            ],
        },
        Workload {
            name: "seed-compaction".into(),
            description: "the seeds' worked example: compaction 4 -> 3 with an active segment".into(),
            config: config(),
            variant: "manifest".into(),
            ops: vec![
                append(&[(Some("a"), Some("1"), 0), (Some("b"), Some("x"), 1)]),
                Op::Roll,
                append(&[(Some("a"), Some("2"), 2), (None, Some("event"), 3)]),
                Op::Roll,
                append(&[(Some("active"), Some("keep"), 4)]),
                Op::Compact { now: 10, delete_retention_ms: 1000, segment_bytes: None },
            ],
        },
        Workload {
            name: "compact-tombstones".into(),
            description: "compaction of 3 closed segments with tombstones (one expired, one in grace), keyless records and a control batch".into(),
            config: config(),
            variant: "manifest".into(),
            ops: vec![
                append(&[(Some("a"), Some("1"), 0), (None, Some("e1"), 1), (Some("b"), Some("1"), 2)]),
                Op::Roll,
                append(&[(Some("a"), None, 100), (Some("c"), Some("1"), 110)]),
                Op::AppendControl { commit: true, ts: 120, producer: crate::workload::TXN_PRODUCER },
                Op::Roll,
                append(&[(Some("b"), None, 1900), (None, Some("e2"), 1950), (Some("c"), Some("2"), 1990)]),
                Op::Roll,
                append(&[(Some("d"), Some("active"), 2000)]),
                Op::Flush,
                Op::Compact { now: 2000, delete_retention_ms: 1000, segment_bytes: Some(200) },
            ],
        },
        Workload {
            name: "retain-prefix".into(),
            description: "retention of a prefix by time then size, with an unexpired segment stopping the time walk".into(),
            config: config(),
            variant: "manifest".into(),
            ops: vec![
                append(&[(Some("a"), Some("1"), 10)]),
                Op::Roll,
                append(&[(Some("b"), Some("1"), 20)]),
                Op::Roll,
                append(&[(Some("c"), Some("1"), 500)]),
                Op::Roll,
                append(&[(Some("d"), Some("1"), 30)]),
                Op::Roll,
                append(&[(Some("e"), Some("1"), 600)]),
                Op::Retain { now: 300, retention_ms: Some(100), retention_bytes: None },
                Op::Retain { now: 300, retention_ms: None, retention_bytes: Some(150) },
            ],
        },
        Workload {
            name: "compact-retain-compact".into(),
            description: "compaction, then retention of the compacted prefix, then an offline compaction of the closed log (compact_dir)".into(),
            config: config(),
            variant: "manifest".into(),
            ops: vec![
                append(&[(Some("a"), Some("1"), 0), (Some("b"), Some("1"), 1)]),
                Op::Roll,
                append(&[(Some("a"), Some("2"), 2), (Some("c"), Some("1"), 3)]),
                Op::Roll,
                append(&[(Some("b"), Some("2"), 400)]),
                Op::Roll,
                append(&[(Some("a"), Some("3"), 500)]),
                Op::Compact { now: 600, delete_retention_ms: 1000, segment_bytes: Some(120) },
                Op::Retain { now: 600, retention_ms: Some(300), retention_bytes: None },
                append(&[(Some("c"), None, 601)]),
                Op::Roll,
                Op::CompactClosed { now: 700, delete_retention_ms: 1000, segment_bytes: None },
            ],
        },
        Workload {
            name: "compressed-log-append-time".into(),
            description: "batches of all four codecs, three stamped LogAppendTime; compaction re-encodes partly kept ones, retention expires by append time".into(),
            config: config(),
            variant: "manifest".into(),
            ops: vec![
                append_with(&[(Some("a"), Some("1"), 0), (Some("b"), Some("1"), 1), (None, Some("k"), 2)], Compression::Lz4, None),
                Op::Roll,
                append_with(&[(Some("a"), Some("2"), 3), (Some("c"), Some("1"), 4)], Compression::Zstd, Some(100)),
                Op::Roll,
                append_with(&[(Some("b"), None, 5), (Some("d"), Some("1"), 6)], Compression::Gzip, Some(200)),
                Op::Flush,
                append_with(&[(Some("c"), Some("2"), 7)], Compression::Snappy, Some(300)),
                Op::Roll,
                Op::Compact { now: 400, delete_retention_ms: 1000, segment_bytes: Some(150) },
                Op::Retain { now: 1150, retention_ms: Some(1000), retention_bytes: None },
                append_with(&[(Some("a"), Some("3"), 8)], Compression::Lz4, Some(1200)),
            ],
        },
        Workload {
            name: "kafka-policy".into(),
            description: "two cleanings under the kafka policy: the first drops keyless records and stamps a tombstone's batch with its delete horizon (the active segment superseding nothing), the second, past the horizon, drops it".into(),
            config: LogConfig {
                compaction_policy: seglog::compaction::CompactionPolicy::Kafka,
                ..config()
            },
            variant: "manifest".into(),
            ops: vec![
                append(&[(Some("a"), Some("1"), 0), (None, Some("e1"), 1), (Some("b"), Some("1"), 2)]),
                Op::Roll,
                append(&[(Some("a"), None, 100), (Some("c"), Some("1"), 110)]),
                Op::Roll,
                append(&[(Some("b"), Some("2"), 200)]),
                kafka_clean(1000),
                Op::Roll,
                append(&[(Some("d"), Some("1"), 300)]),
                kafka_clean(1500),
            ],
        },
        Workload {
            name: "multi-pass-clean".into(),
            description: "three cleaning passes with a two-key offset map over five keys: each pass moves the clean point (written in the temp dir) part way, the last one reaches the active segment".into(),
            config: config(),
            variant: "manifest".into(),
            ops: vec![
                append(&[(Some("a"), Some("1"), 0)]),
                append(&[(Some("b"), Some("1"), 1)]),
                Op::Roll,
                append(&[(Some("c"), Some("1"), 2)]),
                append(&[(Some("a"), Some("2"), 3)]),
                Op::Roll,
                append(&[(Some("b"), None, 4)]),
                append(&[(Some("d"), Some("1"), 5)]),
                Op::Roll,
                append(&[(Some("c"), Some("2"), 6)]),
                clean(10, 2),
                clean(10, 2),
                clean(10, 2),
            ],
        },
        Workload {
            name: "incremental-compaction".into(),
            description: "a compaction, appends that supersede clean records, then an incremental compaction that maps only the dirty section".into(),
            config: config(),
            variant: "manifest".into(),
            ops: vec![
                append(&[(Some("a"), Some("1"), 0), (Some("b"), Some("1"), 1), (Some("c"), Some("1"), 2)]),
                Op::Roll,
                append(&[(Some("a"), Some("2"), 3)]),
                Op::Compact { now: 10, delete_retention_ms: 1000, segment_bytes: None },
                append(&[(Some("b"), None, 4), (None, Some("e"), 5)]),
                Op::Roll,
                append(&[(Some("d"), Some("1"), 6)]),
                Op::Compact { now: 20, delete_retention_ms: 1000, segment_bytes: None },
            ],
        },
        Workload {
            name: "carried-segments".into(),
            description: "incremental passes that hard-link clean segments no dirty key touches (carried segments): the first writes key summaries, the second carries two segments and rewrites one a dirty key touches and one whose tombstone expired, retention drops a carried segment with its summary, a last pass groups carried sources into one rewritten file".into(),
            config: config(),
            variant: "manifest".into(),
            ops: vec![
                append(&[(Some("a"), Some("1"), 0), (Some("b"), Some("1"), 1)]),
                Op::Roll,
                append(&[(Some("c"), Some("1"), 2), (Some("d"), Some("1"), 3)]),
                Op::Roll,
                append(&[(Some("e"), None, 4)]),
                Op::Roll,
                append(&[(Some("f"), Some("1"), 5)]),
                Op::Roll,
                append(&[(Some("a"), Some("2"), 6)]),
                carry_clean(10, Some(1)),
                append(&[(Some("c"), Some("2"), 7)]),
                Op::Roll,
                append(&[(Some("g"), Some("1"), 8)]),
                carry_clean(1005, Some(1)),
                Op::Retain { now: 1005, retention_ms: Some(1002), retention_bytes: None },
                append(&[(Some("h"), Some("1"), 9)]),
                Op::Roll,
                carry_clean(1006, None),
            ],
        },
        Workload {
            name: "concurrent-clean".into(),
            description: "cleanings run as a concurrent cleaner runs them: snapshot and build, then appends to the active segment, a roll and more appends, then the swap that hard-links the tail under the append lock, renames the backup to the trash and removes it after; a second pass cleans what the first left dirty".into(),
            config: config(),
            variant: "manifest".into(),
            ops: vec![
                append(&[(Some("a"), Some("1"), 0), (Some("b"), Some("1"), 1)]),
                Op::Roll,
                append(&[(Some("a"), Some("2"), 2), (Some("c"), None, 3)]),
                Op::Roll,
                append(&[(Some("b"), Some("2"), 4)]),
                Op::CleanWithAppends { now: 10, delete_retention_ms: 1000, records: 3, roll: true, appends_at: None },
                append(&[(Some("t0"), Some("x"), 11)]),
                Op::Roll,
                Op::CleanWithAppends { now: 2000, delete_retention_ms: 1000, records: 2, roll: false, appends_at: None },
            ],
        },
        Workload {
            name: "interleaved-clean".into(),
            description: "concurrent cleanings whose appends (a rewrite of keys the snapshot holds, a roll) run while the build is under way, the build on a thread of its own stopped before one of its file-system calls (workload::interleave): once while it reads the segments it maps, once while it writes the temp dir; the crash sweep stops before every call of that interleaving".into(),
            config: config(),
            variant: "manifest".into(),
            ops: vec![
                append(&[(Some("t0"), Some("1"), 0), (Some("b"), Some("1"), 1)]),
                Op::Roll,
                append(&[(Some("t1"), Some("1"), 2), (Some("t0"), Some("2"), 3)]),
                Op::Roll,
                append(&[(Some("b"), Some("2"), 4), (Some("t1"), Some("2"), 5)]),
                Op::CleanWithAppends { now: 10, delete_retention_ms: 1000, records: 3, roll: true, appends_at: Some(4) },
                Op::Roll,
                Op::CleanWithAppends { now: 2000, delete_retention_ms: 1000, records: 2, roll: false, appends_at: Some(30) },
            ],
        },
        Workload {
            name: "append-flush".into(),
            description: "appends with flushes between, an auto-roll at a small segment size, unflushed tail at the end".into(),
            config: LogConfig {
                segment_bytes: 200,
                index_interval_bytes: 64,
                ..LogConfig::default()
            },
            variant: "manifest".into(),
            ops: vec![
                append(&[(Some("a"), Some("1"), 0), (Some("b"), Some("2"), 1)]),
                Op::Flush,
                append(&[(None, Some("x"), 2)]),
                append(&[(Some("c"), Some("3"), 3), (Some("d"), Some("4"), 4)]),
                Op::Flush,
                append(&[(Some("e"), Some("5"), 5)]),
                append(&[(Some("f"), Some("6"), 6)]),
            ],
        },
        Workload {
            name: "raw-append".into(),
            description: "producer batches through append_batches: a request that rolls between its batches (a crash may keep any prefix of them), a refused request (one bad CRC) that stores nothing, a compressed batch, an unflushed tail".into(),
            config: LogConfig {
                segment_bytes: 200,
                index_interval_bytes: 64,
                ..LogConfig::default()
            },
            variant: "manifest".into(),
            ops: vec![
                append_raw(&[
                    (&[(Some("a"), Some("1"), 0), (Some("b"), Some("2"), 1)], None, None),
                    (&[(None, Some("x"), 2)], None, None),
                    (&[(Some("c"), Some("3"), 3)], None, Some(Defect::ProducerOffsets)),
                    (&[(Some("d"), Some("4"), 4)], None, None),
                ]),
                append_raw(&[
                    (&[(Some("e"), Some("5"), 5)], None, None),
                    (&[(Some("f"), Some("6"), 6)], None, Some(Defect::Crc)),
                ]),
                Op::Flush,
                append_raw(&[
                    (&[(Some("g"), Some("7"), 7), (Some("h"), None, 8)], Some(Compression::Lz4), None),
                    (&[(Some("i"), Some("9"), 9)], None, Some(Defect::MaxTimestamp)),
                ]),
                append(&[(Some("j"), Some("10"), 10)]),
            ],
        },
        Workload {
            name: "close-reopen".into(),
            description: "rolls write the recovery point, clean closes write the marker; the open after each close reads no segment data, a crash anywhere re-checks only the active segment".into(),
            config: LogConfig {
                segment_bytes: 300,
                index_interval_bytes: 64,
                ..LogConfig::default()
            },
            variant: "manifest".into(),
            ops: vec![
                append(&[(Some("a"), Some("1"), 5), (Some("b"), Some("2"), 1)]),
                append(&[(None, Some("x"), 2)]),
                Op::Roll,
                append(&[(Some("c"), Some("3"), 9)]),
                append(&[(Some("d"), Some("4"), 4)]),
                Op::Close,
                append(&[(Some("e"), Some("5"), 12), (Some("f"), Some("6"), 11)]),
                append(&[(Some("g"), Some("7"), 13)]),
                Op::Flush,
                append(&[(Some("h"), Some("8"), 14)]),
                Op::Close,
            ],
        },
        Workload {
            name: "transactions".into(),
            description: "transactional batches of producer 1 with commits and aborts across rolls (each abort appends to its segment's .txnindex), a restart, then retention deleting segments with their .txnindex: a crash anywhere loses nothing acknowledged and leaves no orphan".into(),
            config: LogConfig {
                segment_bytes: 300,
                index_interval_bytes: 64,
                ..LogConfig::default()
            },
            variant: "manifest".into(),
            ops: vec![
                txn(&[(Some("a"), Some("1"), 1), (Some("b"), Some("1"), 2)]),
                Op::AppendControl { commit: true, ts: 3, producer: crate::workload::TXN_PRODUCER },
                txn(&[(Some("a"), Some("x"), 4)]),
                append(&[(Some("p"), Some("plain"), 5)]),
                txn(&[(Some("b"), Some("x"), 6)]),
                Op::AppendControl { commit: false, ts: 7, producer: crate::workload::TXN_PRODUCER },
                Op::Roll,
                txn(&[(Some("c"), Some("1"), 8)]),
                Op::AppendControl { commit: false, ts: 9, producer: crate::workload::TXN_PRODUCER },
                Op::Flush,
                Op::Close,
                txn(&[(Some("d"), Some("1"), 10)]),
                Op::AppendControl { commit: true, ts: 11, producer: crate::workload::TXN_PRODUCER },
                Op::Roll,
                append(&[(Some("e"), Some("1"), 5000)]),
                Op::Retain { now: 5000, retention_ms: Some(100), retention_bytes: None },
            ],
        },
        Workload {
            name: "txn-seed-clean".into(),
            description: "seed-policy cleanings of a log holding transactions: a committed and an aborted transaction on the same keys, one left open past the first cleaning; the aborted records go and never shadow the committed ones, the open ones stay, a marker stays while its data does, each rewritten segment's .txnindex is rebuilt; a crash anywhere ends in the old or the new log".into(),
            config: LogConfig {
                segment_bytes: 300,
                index_interval_bytes: 64,
                ..LogConfig::default()
            },
            variant: "manifest".into(),
            ops: txn_clean_ops(seglog::compaction::CompactionPolicy::Seed),
        },
        Workload {
            name: "txn-kafka-clean".into(),
            description: "the same transactions cleaned by the kafka policy: the first cleaning stops at the open transaction (the last stable offset), aborted data is removed, committed values kept, markers kept while their data remains; the second, after the commit, cleans past it; the third, long after the producer's last batch (a COMMIT marker), finds the producer expired and drops the empty batches kept for it; a crash anywhere ends in the old or the new log".into(),
            config: LogConfig {
                segment_bytes: 300,
                index_interval_bytes: 64,
                compaction_policy: seglog::compaction::CompactionPolicy::Kafka,
                ..LogConfig::default()
            },
            variant: "manifest".into(),
            ops: txn_clean_ops(seglog::compaction::CompactionPolicy::Kafka),
        },
        Workload {
            name: "drop-indexes".into(),
            description: "an operator deletes every closed segment's index files while the log is down (Kafka rebuilds them): the open rebuilds them from the .log files, makes them durable before the recovery point vouches for them, and a crash anywhere in that open or after it loses nothing".into(),
            config: LogConfig {
                segment_bytes: 200,
                index_interval_bytes: 64,
                ..LogConfig::default()
            },
            variant: "manifest".into(),
            ops: vec![
                append(&[(Some("a"), Some("1"), 5), (Some("b"), Some("2"), 1)]),
                append(&[(None, Some("x"), 2)]),
                Op::Roll,
                Op::DropIndexes,
                append(&[(Some("c"), Some("3"), 9), (Some("a"), None, 10)]),
                append_with(&[(Some("d"), Some("4"), 4)], Compression::Lz4, None),
                Op::Roll,
                append(&[(Some("e"), Some("5"), 12)]),
                Op::DropIndexes,
                append(&[(Some("f"), Some("6"), 13)]),
                Op::Roll,
                Op::DropIndexes,
                append(&[(Some("g"), Some("7"), 14)]),
            ],
        },
    ]
}

//! The soak's work on one directory: a [`LogManager`] with its cleaner and
//! retention threads on the real file system, one producer and one consumer
//! thread per partition. Producers report each batch before appending it
//! ([`Event::Intent`]) and after the append returned ([`Event::Ack`]: that is an
//! acknowledged append); consumers check what they read.
//!
//! Invariants checked by the consumers (counted per record read):
//! * `read_offsets_increasing`: offsets strictly increase within a consumer's reads;
//! * `read_at_or_above_log_start`: no record read is below the `log_start_offset`
//!   seen before the read;
//! * `read_matches_append`: the record at offset `o` has the key and value digest the
//!   producer appended at `o` (looked up once the producer's append returned).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use seglog::error::{Error, Result};
use seglog::fs::{FileSystem, StdFs};
use seglog::log::LogConfig;
use seglog::manager::{CleanupPolicy, LogManager, ManagerConfig, Partition, PartitionConfig};
use seglog::{Clock, NewRecord, SystemClock};

use super::ledger::{digest, Written};

/// The topic every soak partition belongs to: `soak-0`, `soak-1`, ...
pub const TOPIC: &str = "soak";

/// One line the workers report (JSON, one per line, over the child's stdout).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "e", rename_all = "snake_case")]
pub enum Event {
    /// The producer of `partition` is about to append `batch`.
    Intent { partition: u32, batch: Vec<Written> },
    /// That append returned `base..=last` after `latency_ns`.
    Ack {
        partition: u32,
        base: i64,
        last: i64,
        latency_ns: u64,
    },
    /// The round's counters so far (cumulative).
    Stats(WorkStats),
}

/// Counters of one round of work.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkStats {
    pub records_read: u64,
    pub cleanings: u64,
    pub retention_deletions: u64,
    pub background_errors: u64,
    /// Consumer checks: name -> (count, failures, first failure).
    pub checks: CheckCounts,
}

/// Where events go: the parent's pipe, or memory.
pub trait Sink: Send + Sync {
    /// Reports one event; it must have left the process when this returns.
    fn send(&self, event: &Event);
}

/// Events kept in memory (the soak without `--kill`).
#[derive(Debug, Default)]
pub struct MemorySink(pub Mutex<Vec<Event>>);

impl Sink for MemorySink {
    fn send(&self, event: &Event) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event.clone());
    }
}

/// Events as JSON lines on stdout, one `write` each (the child).
#[derive(Debug, Default)]
pub struct StdoutSink(pub Mutex<()>);

impl Sink for StdoutSink {
    fn send(&self, event: &Event) {
        use std::io::Write;
        let mut line = serde_json::to_string(event).expect("events serialize");
        line.push('\n');
        let _guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = std::io::stdout().lock();
        // A closed pipe means the parent is gone: nothing left to report to.
        if out
            .write_all(line.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            std::process::exit(3);
        }
    }
}

/// What the work runs.
#[derive(Debug, Clone)]
pub struct WorkOptions {
    pub partitions: u32,
    pub seed: u64,
    /// The round (seeds the producers apart from the rounds before).
    pub round: u64,
    /// Distinct keys per partition.
    pub keys: u32,
    /// Test builds only: a broken cleaning swap (`stale-tail-copy`) run by the
    /// soak's own cleaner thread instead of the manager's.
    pub variant: Option<String>,
}

/// Partition `i`'s config: small segments so they roll, the cleaner and retention
/// run during a soak of seconds; even partitions compact+delete, odd ones compact.
pub fn partition_config(i: u32) -> PartitionConfig {
    PartitionConfig {
        log: LogConfig {
            segment_bytes: 32 * 1024,
            index_interval_bytes: 1024,
            min_cleanable_dirty_ratio: 0.3,
            ..LogConfig::default()
        },
        cleanup_policy: if i.is_multiple_of(2) {
            CleanupPolicy::CompactDelete
        } else {
            CleanupPolicy::Compact
        },
        retention_ms: Some(5_000),
        retention_bytes: Some(256 * 1024),
        delete_retention_ms: 500,
    }
}

/// The manager's config: one cleaner thread with a short backoff, retention every
/// 100 ms (`cleaner_threads` 0 when a variant runs its own cleaner).
pub fn manager_config(cleaner_threads: usize) -> ManagerConfig {
    ManagerConfig {
        cleaner_threads,
        retention_check_interval_ms: 100,
        cleaner_backoff_ms: 20,
        cleaner_backoff_ms_max: 200,
    }
}

/// Opens (or creates) the soak's partitions under `dir`.
pub fn open_partitions(
    manager: &LogManager,
    dir: &Path,
    partitions: u32,
) -> Result<Vec<Partition>> {
    (0..partitions)
        .map(|i| {
            let name = LogManager::partition_name(TOPIC, i)?;
            if dir.join(name).is_dir() {
                manager.open(TOPIC, i, partition_config(i))
            } else {
                manager.create(TOPIC, i, partition_config(i))
            }
        })
        .collect()
}

/// splitmix64: the soak's seeded randomness.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True `percent` times in 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

type Table = Arc<Mutex<HashMap<i64, Written>>>;

/// Counted checks by name: (count, failures, first failure).
pub type CheckCounts = BTreeMap<String, (u64, u64, Option<String>)>;

#[derive(Debug, Default)]
struct ConsumerChecks {
    records_read: AtomicU64,
    checks: Mutex<CheckCounts>,
}

impl ConsumerChecks {
    fn record(&self, name: &str, ok: bool, detail: impl FnOnce() -> String) {
        let mut checks = self.checks.lock().unwrap_or_else(|e| e.into_inner());
        let entry = checks.entry(name.to_string()).or_default();
        entry.0 += 1;
        if !ok {
            entry.1 += 1;
            if entry.2.is_none() {
                entry.2 = Some(detail());
            }
        }
    }
}

/// Runs producers, consumers, the cleaner and retention on `dir` for `run_for`,
/// then closes the manager cleanly. Events go to `sink` as they happen; the last
/// is the round's [`Event::Stats`].
pub fn work(
    dir: &Path,
    options: &WorkOptions,
    run_for: Duration,
    sink: Arc<dyn Sink>,
) -> Result<()> {
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs::new());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let own_cleaner = options.variant.is_some();
    let mut manager = LogManager::new(
        fs,
        dir,
        manager_config(if own_cleaner { 0 } else { 1 }),
        Arc::clone(&clock),
    )?;
    let partitions = open_partitions(&manager, dir, options.partitions)?;
    manager.start();
    let deadline = Instant::now() + run_for;
    let stop = Arc::new(AtomicBool::new(false));
    let consumer_checks = Arc::new(ConsumerChecks::default());
    let variant_cleanings = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for (i, partition) in (0u32..).zip(&partitions) {
        let table: Table = Arc::default();
        let (p, t, s, c) = (
            partition.clone(),
            Arc::clone(&table),
            Arc::clone(&sink),
            Arc::clone(&clock),
        );
        let seed = options.seed ^ options.round.wrapping_mul(0x1000_0000_01b3) ^ u64::from(i) << 48;
        let keys = options.keys;
        let stop_producer = Arc::clone(&stop);
        threads.push(std::thread::spawn(move || {
            produce(
                &p,
                i,
                &t,
                s.as_ref(),
                c.as_ref(),
                Rng::new(seed),
                keys,
                &stop_producer,
            )
        }));
        let (p, stop_c, checks) = (
            partition.clone(),
            Arc::clone(&stop),
            Arc::clone(&consumer_checks),
        );
        // Records below the round's first offset are the parent's to check.
        let round_start = partition.next_offset();
        threads.push(std::thread::spawn(move || {
            consume(&p, &table, round_start, &checks, &stop_c)
        }));
    }
    if let Some(variant) = &options.variant {
        let (ps, stop_c, count) = (
            partitions.clone(),
            Arc::clone(&stop),
            Arc::clone(&variant_cleanings),
        );
        let (variant, clock) = (variant.clone(), Arc::clone(&clock));
        threads.push(std::thread::spawn(move || {
            broken_cleaner(&ps, &variant, clock.as_ref(), &count, &stop_c)
        }));
    }
    let stats = |manager: &LogManager| {
        let counts = manager.background_counts();
        Event::Stats(WorkStats {
            records_read: consumer_checks.records_read.load(Ordering::SeqCst),
            cleanings: counts.cleanings + variant_cleanings.load(Ordering::SeqCst),
            retention_deletions: counts.retention_deletions,
            background_errors: counts.errors,
            checks: consumer_checks
                .checks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        })
    };
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100).min(deadline - Instant::now().min(deadline)));
        sink.send(&stats(&manager));
    }
    stop.store(true, Ordering::SeqCst);
    let mut first_error = Ok(());
    for handle in threads {
        let result = handle
            .join()
            .map_err(|_| Error::InvalidArgument("a soak thread panicked".into()))?;
        if first_error.is_ok() {
            first_error = result;
        }
    }
    sink.send(&stats(&manager));
    let closed = manager.close();
    first_error.and(closed)
}

/// One partition's producer: batches of 1 to 8 keyed records (1 in 16 a
/// tombstone), an intent before and an ack after each append; a flush every 64
/// batches.
#[allow(clippy::too_many_arguments)]
fn produce(
    partition: &Partition,
    index: u32,
    table: &Table,
    sink: &dyn Sink,
    clock: &dyn Clock,
    mut rng: Rng,
    keys: u32,
    stop: &AtomicBool,
) -> Result<()> {
    let mut batches = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let now = clock.now_ms();
        let count = 1 + rng.below(8);
        let mut records = Vec::new();
        let mut written = Vec::new();
        for _ in 0..count {
            let key = format!("k{}", rng.below(u64::from(keys.max(1))));
            let value = (rng.below(16) != 0).then(|| {
                let len = 32 + rng.below(64) as usize;
                let mut v = format!("p{index}-b{batches}-").into_bytes();
                v.extend((0..len).map(|_| b'a' + (rng.below(26) as u8)));
                v
            });
            written.push(Written {
                key: key.clone(),
                digest: value.as_deref().map(digest),
            });
            records.push(NewRecord::new(Some(key.into_bytes()), value, now));
        }
        sink.send(&Event::Intent {
            partition: index,
            batch: written.clone(),
        });
        let started = Instant::now();
        let info = partition.append(&records)?;
        let latency_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        {
            let mut table = table.lock().unwrap_or_else(|e| e.into_inner());
            for (offset, w) in (info.base_offset..).zip(written) {
                table.insert(offset, w);
            }
            if batches % 256 == 255 {
                let start = partition.log_start_offset();
                table.retain(|offset, _| *offset >= start);
            }
        }
        sink.send(&Event::Ack {
            partition: index,
            base: info.base_offset,
            last: info.last_offset,
            latency_ns,
        });
        batches += 1;
        if batches.is_multiple_of(64) {
            partition.flush()?;
        }
    }
    Ok(())
}

/// One partition's consumer: reads from where it got to (or the log start, if
/// retention passed it) and checks every record (the values of those appended
/// this round, from `round_start` on).
fn consume(
    partition: &Partition,
    table: &Table,
    round_start: i64,
    checks: &ConsumerChecks,
    stop: &AtomicBool,
) -> Result<()> {
    let mut position = 0i64;
    let mut last_read: Option<i64> = None;
    while !stop.load(Ordering::SeqCst) {
        let start = partition.log_start_offset();
        position = position.max(start);
        let records = match partition.read(position, 64 * 1024) {
            Ok(records) => records,
            // Retention moved the start past `position` since: start again there.
            Err(Error::OffsetOutOfRange { .. }) => continue,
            Err(e) => return Err(e),
        };
        if records.is_empty() {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        for record in &records {
            checks.record(
                "read_offsets_increasing",
                last_read.is_none_or(|l| record.offset > l),
                || {
                    format!(
                        "{}: offset {} read after {last_read:?}",
                        partition.name(),
                        record.offset
                    )
                },
            );
            checks.record("read_at_or_above_log_start", record.offset >= start, || {
                format!(
                    "{}: offset {} read, log_start_offset was {start}",
                    partition.name(),
                    record.offset
                )
            });
            last_read = Some(record.offset);
            let got = Written {
                key: String::from_utf8_lossy(record.key.unwrap_or_default()).into_owned(),
                digest: record.value.map(digest),
            };
            if record.offset < round_start {
                continue;
            }
            if let Some(expected) = appended(partition, table, record.offset) {
                checks.record("read_matches_append", expected == got, || {
                    format!(
                        "{}: offset {} reads {got:?}, appended as {expected:?}",
                        partition.name(),
                        record.offset
                    )
                });
            }
        }
        checks
            .records_read
            .fetch_add(records.len() as u64, Ordering::SeqCst);
        position = records.last().map_or(position, |r| r.offset + 1);
    }
    Ok(())
}

/// What the producer appended at `offset`, waiting (up to 5 s) for its append to
/// return; `None` if retention dropped it from the table meanwhile.
fn appended(partition: &Partition, table: &Table, offset: i64) -> Option<Written> {
    let waited = Instant::now();
    loop {
        if let Some(w) = table.lock().unwrap_or_else(|e| e.into_inner()).get(&offset) {
            return Some(w.clone());
        }
        if offset < partition.log_start_offset() {
            return None;
        }
        if waited.elapsed() > Duration::from_secs(5) {
            // Never appended at this offset: `read_matches_append` fails.
            return Some(Written {
                key: "<never appended>".into(),
                digest: None,
            });
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Test builds only: cleans each partition in turn with the broken swap named
/// `variant` (the soak's teeth).
#[cfg(feature = "test-variants")]
fn broken_cleaner(
    partitions: &[Partition],
    variant: &str,
    clock: &dyn Clock,
    cleanings: &AtomicU64,
    stop: &AtomicBool,
) -> Result<()> {
    if variant != "stale-tail-copy" {
        return Err(Error::InvalidArgument(format!(
            "the soak runs the variant stale-tail-copy only, not {variant:?}"
        )));
    }
    while !stop.load(Ordering::SeqCst) {
        for partition in partitions {
            let now = clock.now_ms();
            let delete_retention_ms = partition.config().delete_retention_ms;
            let snapshot = partition.with_log_mut(|log| {
                let knobs = log.config().clean_options();
                log.clean_snapshot(now, delete_retention_ms, None, knobs)
            })?;
            let Some(snapshot) = snapshot else { continue };
            let build = seglog::testing::variants::stale_tail_copy(snapshot).build()?;
            // Appends go on here; the broken swap drops them.
            std::thread::sleep(Duration::from_millis(20));
            // This cleaner takes no cleaning state: a retention that ran meanwhile
            // makes the swap refuse (`InvalidArgument`); the next round tries again.
            match partition.with_log_mut(|log| log.clean_swap(build)) {
                Ok(_) => cleanings.fetch_add(1, Ordering::SeqCst),
                Err(Error::InvalidArgument(_)) => continue,
                Err(e) => return Err(e),
            };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

#[cfg(not(feature = "test-variants"))]
fn broken_cleaner(
    _: &[Partition],
    variant: &str,
    _: &dyn Clock,
    _: &AtomicU64,
    _: &AtomicBool,
) -> Result<()> {
    Err(Error::InvalidArgument(format!(
        "variant {variant:?} exists only in builds with `--features test-variants`"
    )))
}

//! The kafka policy's map within `dedupe_buffer_bytes`: the map is the fixed table
//! of `dedupe_buffer_bytes / 24` slots the seed policy's bounded pass uses, so its
//! memory stays within the budget (no set of every key's digest beside it). A log
//! with more distinct keys than the budget holds is cleaned in several passes, each
//! mapping what fits from its clean point; their end is the log one unbounded pass
//! makes.
//!
//! Invariants checked: every bounded pass reports `map_bytes_peak <= budget` and
//! at most `budget / 24` keys; the passes move the clean point forward until it
//! reaches the active segment; then the log reads exactly as after one unbounded
//! pass (offsets, keys, values, timestamps), and a further pass changes nothing.

use std::sync::Arc;

use seglog::compaction::{CleanOptions, CompactionPolicy};
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{Log, LogConfig, NewRecord, ReadRecord};

/// Keys the log writes; the bounded map holds [`BUDGET_KEYS`] of them.
const KEYS: u32 = 1_200;
const BUDGET_KEYS: u64 = 256;

/// A kafka-policy log: four closed segments of 100-record batches cycling over
/// [`KEYS`] keys (every 7th record a tombstone, every 11th keyless) and an active
/// segment.
fn filled() -> Log {
    let fs = Arc::new(SimFs::new());
    let (mut log, _) =
        Log::open_with(fs as Arc<dyn FileSystem>, "/log", LogConfig::default()).unwrap();
    let mut n = 0u32;
    for segment in 0..5 {
        for _ in 0..8 {
            let records: Vec<NewRecord> = (0..100)
                .map(|_| {
                    n += 1;
                    let key = (!n.is_multiple_of(11)).then(|| format!("key-{}", (n * 7919) % KEYS));
                    let value = (!n.is_multiple_of(7)).then(|| format!("value-{n}"));
                    NewRecord::new(
                        key.map(String::into_bytes),
                        value.map(String::into_bytes),
                        i64::from(n),
                    )
                })
                .collect();
            log.append(&records).unwrap();
        }
        if segment < 4 {
            log.roll().unwrap();
        }
    }
    log.flush().unwrap();
    log
}

fn options(dedupe_buffer_bytes: Option<u64>) -> CleanOptions {
    CleanOptions {
        policy: CompactionPolicy::Kafka,
        dedupe_buffer_bytes,
        ..CleanOptions::default()
    }
}

type Seen = (i64, i64, Option<Vec<u8>>, Option<Vec<u8>>);

fn contents(log: &Log) -> Vec<Seen> {
    log.read(0, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|r: ReadRecord| {
            (
                r.offset,
                r.timestamp,
                r.key.map(|k| k.to_vec()),
                r.value.map(|v| v.to_vec()),
            )
        })
        .collect()
}

/// Tombstones older than the retention go in either run alike.
const NOW: i64 = 100_000;
const DELETE_RETENTION_MS: i64 = 1_000_000;

#[test]
fn a_bounded_kafka_map_cleans_in_several_passes_within_its_budget() {
    let mut unbounded = filled();
    let before = contents(&unbounded);
    let one = unbounded
        .clean(NOW, DELETE_RETENTION_MS, None, options(None))
        .unwrap();
    let active_base = unbounded.segments().last().unwrap().base_offset;
    assert_eq!(one.clean_point_after, active_base, "{one:?}");
    let want = contents(&unbounded);
    assert!(want.len() < before.len(), "the unbounded pass cleans");

    let budget = 24 * BUDGET_KEYS;
    let mut bounded = filled();
    let mut passes = 0;
    loop {
        let report = bounded
            .clean(NOW, DELETE_RETENTION_MS, None, options(Some(budget)))
            .unwrap();
        passes += 1;
        assert!(
            report.map_bytes_peak <= budget,
            "pass {passes}: map_bytes_peak {} over the budget {budget}",
            report.map_bytes_peak
        );
        assert!(report.map_keys <= BUDGET_KEYS, "pass {passes}: {report:?}");
        assert!(
            report.clean_point_after > report.clean_point_before,
            "pass {passes} moves the clean point: {report:?}"
        );
        if report.clean_point_after == active_base {
            break;
        }
        assert!(passes < 50, "the passes reach the active segment");
    }
    assert!(
        passes > 2,
        "{KEYS} keys take several passes of {BUDGET_KEYS}"
    );
    assert_eq!(contents(&bounded), want);
    let again = bounded
        .clean(NOW, DELETE_RETENTION_MS, None, options(Some(budget)))
        .unwrap();
    assert_eq!(again.records_after, again.records_before, "{again:?}");
    assert_eq!(contents(&bounded), want);
}

//! Carried segments ("beyond Kafka"): an incremental cleaning pass
//! hard-links a clean segment that no key of its map and no expired tombstone can
//! touch, instead of rewriting it; the result is exactly what rewriting gives.
//!
//! Invariants checked:
//! - the first incremental pass writes a key summary (`.keys`) for every output
//!   segment and carries nothing; the next one carries exactly the segments no
//!   dirty key touches, through `hard_link` (counted on the seam) and nothing else;
//! - the directory after a carrying pass holds the same `.log` bytes and reads the
//!   same records and segments as the same pass with every summary removed (every
//!   segment rewritten): a missing summary degrades to "rewrite";
//! - a damaged summary is never trusted (that segment is rewritten, same result);
//! - damage in a segment that would be carried is a structured corruption error,
//!   not a silent carry (its CRC-32C no longer matches the summary, so it is read).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog::compaction::CleanOptions;
use seglog::fs::sim::SimFs;
use seglog::fs::{FileSystem, TraceCall, TraceFs};
use seglog::{Error, Log, LogConfig, NewRecord};
use seglog_suite::workload::engine::view;

const DIR: &str = "/log";
const SEGMENTS: usize = 6;
const KNOBS: CleanOptions = CleanOptions {
    dedupe_buffer_bytes: Some(1 << 20),
    min_compaction_lag_ms: 0,
    policy: seglog::compaction::CompactionPolicy::Seed,
    producer_id_expiration_ms: seglog::compaction::PRODUCER_ID_EXPIRATION_MS_DEFAULT,
};

fn record(key: String, value: &str, ts: i64) -> NewRecord {
    NewRecord::new(Some(key.into_bytes()), Some(value.as_bytes().to_vec()), ts)
}

/// `SEGMENTS` closed segments of four distinct keys each (two versions of key 0 in
/// the first), an active one, cleaned once: every output has its summary.
fn cleaned_once(sim: &Arc<SimFs>) -> Log {
    let fs: Arc<dyn FileSystem> = sim.clone();
    let (mut log, _) = Log::open_with(fs, DIR, LogConfig::default()).unwrap();
    log.append(&[record("k0".into(), "old", 0)]).unwrap();
    for s in 0..SEGMENTS {
        let records: Vec<NewRecord> = (0..4)
            .map(|i| record(format!("k{}", s * 4 + i), "v1", 1))
            .collect();
        log.append(&records).unwrap();
        log.roll().unwrap();
    }
    log.append(&[record("active".into(), "v", 2)]).unwrap();
    let report = log.clean(10, 1000, Some(1), KNOBS).unwrap();
    assert_eq!(report.segments_carried, 0);
    assert!(report.records_after < report.records_before);
    log
}

/// Dirties key 9 (third segment) and cleans again, counting the hard links.
fn clean_again(sim: &Arc<SimFs>, mut log: Log, before_clean: impl FnOnce(&SimFs)) -> (u64, usize) {
    log.append(&[record("k9".into(), "v2", 3)]).unwrap();
    log.roll().unwrap();
    log.flush().unwrap();
    before_clean(sim);
    drop(log);
    let trace = Arc::new(TraceFs::new(sim.clone()));
    let fs: Arc<dyn FileSystem> = trace.clone();
    let (mut log, _) = Log::open_with(fs, DIR, LogConfig::default()).unwrap();
    let report = log.clean(20, 1000, Some(1), KNOBS).unwrap();
    let links = trace
        .ops()
        .iter()
        .filter(|op| op.call == TraceCall::HardLink)
        .count();
    assert_eq!(report.bytes_carried > 0, report.segments_carried > 0);
    (report.segments_carried, links)
}

fn logs(sim: &SimFs) -> BTreeMap<PathBuf, Vec<u8>> {
    sim.snapshot()
        .into_iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "log"))
        .collect()
}

fn keys_files(sim: &SimFs) -> Vec<PathBuf> {
    sim.snapshot()
        .into_keys()
        .filter(|p| p.extension().is_some_and(|e| e == "keys"))
        .collect()
}

fn final_view(sim: &Arc<SimFs>) -> seglog_suite::workload::LogView {
    let fs: Arc<dyn FileSystem> = sim.clone();
    let (log, _) = Log::open_with(fs, DIR, LogConfig::default()).unwrap();
    view(&log).unwrap()
}

#[test]
fn untouched_segments_are_linked_and_the_result_is_a_rewrite_s() {
    let carried = Arc::new(SimFs::new());
    let log = cleaned_once(&carried);
    assert_eq!(
        keys_files(&carried).len(),
        SEGMENTS,
        "one summary per closed output"
    );
    let (n, links) = clean_again(&carried, log, |_| {});
    // All but the segment holding k9 (the first one, k0, was superseded by nothing
    // new: carried too).
    assert_eq!(n, SEGMENTS as u64 - 1);
    assert_eq!(
        links,
        4 * (SEGMENTS - 1) + 3,
        "its .log, .keys, .index and .timeindex per carried segment, and the swap's \
         links of the tail (the active segment's .log, .index, .timeindex)"
    );

    let rewritten = Arc::new(SimFs::new());
    let log = cleaned_once(&rewritten);
    let (n, links) = clean_again(&rewritten, log, |sim| {
        for path in keys_files(sim) {
            sim.remove_file(&path).unwrap();
        }
    });
    assert_eq!(
        (n, links),
        (0, 3),
        "no summary, no carry: only the tail's links"
    );
    assert_eq!(logs(&carried), logs(&rewritten));
    assert_eq!(final_view(&carried), final_view(&rewritten));
    // Every output of the rewriting pass got its summary back.
    assert_eq!(keys_files(&rewritten).len(), SEGMENTS + 1);
}

#[test]
fn a_damaged_summary_is_never_trusted() {
    let sim = Arc::new(SimFs::new());
    let log = cleaned_once(&sim);
    let (n, _) = clean_again(&sim, log, |sim| {
        let path = keys_files(sim)[1].clone();
        let mut bytes = sim.read_all(&path).unwrap();
        let last = bytes.len() - 5;
        bytes[last] ^= 0x40; // a key hash: the CRC catches it
        sim.write_new(&path, &bytes).unwrap();
    });
    assert_eq!(n, SEGMENTS as u64 - 2);
    let reference = Arc::new(SimFs::new());
    let log = cleaned_once(&reference);
    clean_again(&reference, log, |_| {});
    assert_eq!(logs(&sim), logs(&reference));
}

#[test]
fn damage_in_a_segment_that_would_be_carried_is_an_error() {
    let sim = Arc::new(SimFs::new());
    let log = cleaned_once(&sim);
    let log_path: PathBuf = logs(&sim).keys().nth(1).unwrap().clone();
    drop(log);
    let fs: Arc<dyn FileSystem> = sim.clone();
    let (mut log, _) = Log::open_with(fs, DIR, LogConfig::default()).unwrap();
    log.append(&[record("k9".into(), "v2", 3)]).unwrap();
    log.roll().unwrap();
    log.flush().unwrap();
    let mut bytes = sim.read_all(&log_path).unwrap();
    let mid = bytes.len() - 3; // inside the last record's value
    bytes[mid] ^= 0x01;
    sim.write_new(&log_path, &bytes).unwrap();
    match log.clean(20, 1000, Some(1), KNOBS) {
        Err(Error::Corrupt { path, .. }) => assert_eq!(path, Path::new(&log_path)),
        other => panic!("expected a corruption error naming {log_path:?}, got {other:?}"),
    }
}

#[test]
fn the_sweep_workload_carries_what_it_says() {
    // Coverage mark for the crash sweep's `carried-segments` workload: its second
    // pass links two segments (a .log, .keys, .index and .timeindex each) and
    // rewrites the one a
    // dirty key touches and the one whose tombstone expired; its last pass groups
    // carried sources into one rewritten file (no link).
    let workload = seglog_suite::sweep::named_workloads()
        .into_iter()
        .find(|w| w.name == "carried-segments")
        .expect("the workload exists");
    let sim = Arc::new(SimFs::new());
    let trace = Arc::new(TraceFs::new(sim.clone()));
    let fs: Arc<dyn FileSystem> = trace.clone();
    let (mut log, _) = Log::open_with(fs, DIR, workload.config.clone()).unwrap();
    let mut links_per_clean = Vec::new();
    for op in &workload.ops {
        let before = trace.len();
        seglog_suite::workload::engine::apply(&mut log, op).unwrap();
        if matches!(op, seglog_suite::workload::Op::Clean { .. }) {
            let links = trace.ops()[before..]
                .iter()
                .filter(|o| o.call == TraceCall::HardLink)
                .count();
            links_per_clean.push(links);
        }
    }
    // Each pass's swap links the tail (the active .log, .index, .timeindex): 3.
    assert_eq!(links_per_clean, [3, 11, 3]);
    let records = view(&log).unwrap().records;
    assert!(
        records
            .iter()
            .all(|r| r.key.as_deref() != Some(b"e".as_slice())),
        "the expired tombstone was dropped: {records:?}"
    );
}

/// Key summaries are written only where they can pay: a pass whose dirty keys
/// touch every summarized clean segment (scattered dirt) writes none, and a later
/// pass whose lookups find a clean segment untouched writes them again, so the
/// pass after it carries.
#[test]
fn scattered_dirt_writes_no_summaries_and_clustered_dirt_brings_them_back() {
    let sim = Arc::new(SimFs::new());
    let mut log = cleaned_once(&sim);
    assert_eq!(keys_files(&sim).len(), SEGMENTS);
    let mut dirty_and_clean = |keys: &[usize], now: i64| {
        let records: Vec<NewRecord> = keys
            .iter()
            .map(|k| record(format!("k{k}"), "v2", now))
            .collect();
        log.append(&records).unwrap();
        log.roll().unwrap();
        log.clean(now, 1000, Some(1), KNOBS).unwrap()
    };
    // A key of every closed segment.
    let scattered: Vec<usize> = (0..SEGMENTS).map(|s| s * 4 + 1).collect();
    let report = dirty_and_clean(&scattered, 20);
    assert_eq!(report.segments_carried, 0);
    assert_eq!(
        keys_files(&sim),
        Vec::<PathBuf>::new(),
        "scattered: no summary"
    );
    // One segment's key: the lookups find the others untouched.
    let report = dirty_and_clean(&[9], 30);
    assert_eq!(report.segments_carried, 0, "nothing to carry by yet");
    assert!(!keys_files(&sim).is_empty(), "clustered: summaries again");
    let report = dirty_and_clean(&[9], 40);
    assert!(report.segments_carried > 0, "{report:?}");
}

/// `SEGMENTS` closed segments, the last half lz4-compressed, each of two batches:
/// two keys and a keyless record, then two keys and a tombstone (timestamp 1).
/// Cleaned once with a map of 22 keys, which stops before the second batch of the
/// fifth segment: the clean point falls inside it and the outputs of the four
/// before it get summaries. Then dirtied by a key of every segment and rolled:
/// the log a scattered pass cleans. `strip`: the summaries removed before the dirt.
fn scattered_log(sim: &Arc<SimFs>, strip: bool) -> Log {
    let fs: Arc<dyn FileSystem> = sim.clone();
    let mut config = LogConfig::default();
    let (mut log, _) = Log::open_with(fs.clone(), DIR, config.clone()).unwrap();
    for s in 0..SEGMENTS {
        if s == SEGMENTS / 2 {
            log.close().unwrap();
            config.compression = seglog::format::compression::Compression::Lz4;
            log = Log::open_with(fs.clone(), DIR, config.clone()).unwrap().0;
        }
        let key = |i: usize| record(format!("k{}", s * 4 + i), "v1", 1);
        let keyless = NewRecord::new(None, Some(b"keyless".to_vec()), 1);
        let tombstone = NewRecord::new(Some(format!("t{s}").into_bytes()), None, 1);
        log.append(&[key(0), key(1), keyless]).unwrap();
        log.append(&[key(2), key(3), tombstone]).unwrap();
        log.roll().unwrap();
    }
    log.append(&[record("active".into(), "v", 2)]).unwrap();
    let stopping = CleanOptions {
        dedupe_buffer_bytes: Some(22 * 24),
        ..KNOBS
    };
    log.clean(10, 1000, Some(1), stopping).unwrap();
    let bases = seglog::segment::list_segments(sim.as_ref(), Path::new(DIR)).unwrap();
    let clean_point = log.clean_point().unwrap();
    assert!(
        bases[4] < clean_point && clean_point < bases[5],
        "the clean point {clean_point} inside the fifth of {bases:?}"
    );
    assert_eq!(keys_files(sim).len(), 4);
    if strip {
        for path in keys_files(sim) {
            sim.remove_file(&path).unwrap();
        }
    }
    // A key of every segment: a new value, or (odd segments) a tombstone.
    let dirt: Vec<NewRecord> = (0..SEGMENTS)
        .map(|s| {
            let key = format!("k{}", s * 4 + 1).into_bytes();
            let value = (s % 2 == 0).then(|| b"v2".to_vec());
            NewRecord::new(Some(key), value, 20)
        })
        .collect();
    log.append(&dirt).unwrap();
    log.roll().unwrap();
    log.flush().unwrap();
    log
}

/// Whether the incremental pass over `sim`'s log leaves the clean section's
/// lookups to the rewrite.
fn lookups_left_to_the_rewrite(sim: &Arc<SimFs>, log: &Log, now: i64) -> bool {
    let bases = seglog::segment::list_segments(sim.as_ref(), Path::new(DIR)).unwrap();
    let horizon = seglog::compaction::Horizon {
        now,
        delete_retention_ms: 1000,
    };
    let scan = seglog::compaction::pass::incremental::scan_dirty(
        sim.as_ref(),
        Path::new(DIR),
        &bases,
        log.clean_point().unwrap(),
        horizon,
        KNOBS,
    )
    .unwrap();
    scan.lookups.is_some()
}

#[test]
fn scattered_dirt_is_looked_up_by_the_rewrite_as_the_lookup_pass_decides_it() {
    // At 5000 the clean section's tombstones (timestamp 1) are past the horizon.
    for now in [30, 5000] {
        let rewrite = Arc::new(SimFs::new());
        let mut log = scattered_log(&rewrite, false);
        assert!(lookups_left_to_the_rewrite(&rewrite, &log, now));
        let report = log.clean(now, 1000, Some(1), KNOBS).unwrap();
        assert_eq!(report.segments_carried, 0);
        assert!(report.records_after < report.records_before, "{report:?}");

        let cleaned = all_records(&log);

        // Without summaries the pass reads the clean section before the rewrite.
        let pass = Arc::new(SimFs::new());
        let mut log = scattered_log(&pass, true);
        assert!(!lookups_left_to_the_rewrite(&pass, &log, now));
        let reference = log.clean(now, 1000, Some(1), KNOBS).unwrap();
        assert_eq!(report, reference, "at {now}");
        assert_eq!(rewrite.snapshot(), pass.snapshot(), "at {now}");
        assert_eq!(keys_files(&rewrite), Vec::<PathBuf>::new());

        // Both keep the records a compaction from scratch keeps (no map filter, no
        // lookups: the full scan's bits).
        let scratch = Arc::new(SimFs::new());
        let mut log = scattered_log(&scratch, true);
        scratch
            .remove_file(&Path::new(DIR).join("cleaner-offset.checkpoint"))
            .unwrap();
        let unbounded = CleanOptions {
            dedupe_buffer_bytes: None,
            ..KNOBS
        };
        log.clean(now, 1000, Some(1), unbounded).unwrap();
        assert_eq!(cleaned, all_records(&log), "at {now}");
    }
}

fn all_records(log: &Log) -> Vec<seglog::ReadRecord> {
    let mut from = log.log_start_offset();
    let mut out = Vec::new();
    loop {
        let records = log.read(from, 1 << 20).unwrap();
        let Some(last) = records.last() else {
            return out;
        };
        from = last.offset + 1;
        out.extend(records);
    }
}

#[test]
fn damage_in_a_clean_segment_the_rewrite_looks_up_is_an_error() {
    let sim = Arc::new(SimFs::new());
    let mut log = scattered_log(&sim, false);
    // The third segment's records, CRC no longer matching: no earlier pass reads
    // it, so the rewrite must check it.
    let log_path: PathBuf = logs(&sim).keys().nth(2).unwrap().clone();
    let mut bytes = sim.read_all(&log_path).unwrap();
    let mid = bytes.len() - 3;
    bytes[mid] ^= 0x01;
    sim.write_new(&log_path, &bytes).unwrap();
    assert!(lookups_left_to_the_rewrite(&sim, &log, 30));
    match log.clean(30, 1000, Some(1), KNOBS) {
        Err(Error::Corrupt { path, .. }) => assert_eq!(path, Path::new(&log_path)),
        other => panic!("expected a corruption error naming {log_path:?}, got {other:?}"),
    }
    drop(log);
    // Nothing lost: the reopened log holds the segment as it was, and the half
    // built temp dir is gone.
    let fs: Arc<dyn FileSystem> = sim.clone();
    Log::open_with(fs, DIR, LogConfig::default()).unwrap();
    assert_eq!(sim.read_all(&log_path).unwrap(), bytes);
    assert!(!sim.exists(Path::new("/log.compact-tmp")));
}

/// A seed pass reads each closed segment's bytes once: its header walk, map pass
/// and rewrite share one mapping (with `SimFs`, a `map` is a read of the whole
/// file). Incremental with summaries (the rewrite's lookups), incremental without
/// (a lookup pass) and from scratch.
#[test]
fn a_seed_pass_reads_each_closed_segment_once() {
    for (strip, scratch) in [(false, false), (true, false), (true, true)] {
        let sim = Arc::new(SimFs::new());
        let mut log = scattered_log(&sim, strip);
        let mut knobs = KNOBS;
        if scratch {
            sim.remove_file(&Path::new(DIR).join("cleaner-offset.checkpoint"))
                .unwrap();
            knobs.dedupe_buffer_bytes = None;
        }
        let mut closed: Vec<PathBuf> = logs(&sim).into_keys().collect();
        closed.pop(); // the active segment
        let counted: Vec<_> = closed
            .iter()
            .map(|path| {
                let len = sim.len(path).unwrap();
                (path, len, sim.count_reads(path).unwrap())
            })
            .collect();
        log.clean(30, 1000, Some(1), knobs).unwrap();
        for (path, len, count) in counted {
            assert_eq!(
                sim.bytes_read(count),
                len,
                "{path:?} (summaries stripped {strip}, from scratch {scratch})"
            );
        }
    }
}

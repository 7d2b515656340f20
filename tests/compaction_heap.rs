//! The heap a cleaning pass holds for its output follows one source segment, not
//! the output group: both policies stream each source segment's runs through the
//! one writer (`compaction::writer`), two parts in flight at most.
//!
//! Measured with a counting global allocator (this binary holds this one test, so
//! nothing else allocates beside it): the peak of live heap bytes during one
//! build, above what was live before it. Mapped source segments are not heap and
//! do not count. The log: sixteen 512 KiB segments whose records the pass mostly
//! drops and partly keeps (every batch rebuilt), compacted with a 64 MiB
//! `segment_bytes`, so every source lands in one output group of 8 MiB.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use seglog::compaction::{build_with, CleanOptions, CompactOptions, CompactionPolicy};
use seglog::fs::{FileSystem, StdFs};
use seglog::{Log, LogConfig, NewRecord};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            // Counted as the new block beside the old one: a moving realloc holds both.
            grew(new_size);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const SEGMENT_BYTES: u64 = 512 * 1024;
const SEGMENTS: usize = 16;

/// A log of `SEGMENTS` closed segments of about `SEGMENT_BYTES`: batches of eight
/// 1 KiB records over 64 keys, each batch's records a key the next batches rewrite
/// and one key (`last`) written once, so every batch keeps a record and drops others.
fn write_log(dir: &Path) {
    let fs = Arc::new(StdFs::new());
    let config = LogConfig {
        segment_bytes: SEGMENT_BYTES,
        ..LogConfig::default()
    };
    let (mut log, _) = Log::open_with(Arc::clone(&fs) as Arc<dyn FileSystem>, dir, config).unwrap();
    let value = vec![b'v'; 1024];
    let mut batch = 0u64;
    while log.segments().len() <= SEGMENTS {
        let records: Vec<NewRecord> = (0..8u64)
            .map(|i| {
                let key = if i == 7 {
                    format!("last{batch}")
                } else {
                    format!("k{}", (batch * 7 + i) % 64)
                };
                NewRecord::new(Some(key.into_bytes()), Some(value.clone()), batch as i64)
            })
            .collect();
        log.append(&records).unwrap();
        batch += 1;
    }
    log.flush().unwrap();
}

/// Peak heap bytes above the live ones while `pass` runs, and what it returned.
fn peak_of<T>(pass: impl FnOnce() -> T) -> (usize, T) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let out = pass();
    (PEAK.load(Ordering::Relaxed) - before, out)
}

/// The peak heap of one build of a fresh log under `policy`, grouping its output
/// by `segment_bytes`, and the largest source segment's bytes.
fn build_peak(root: &Path, policy: CompactionPolicy, segment_bytes: u64) -> (usize, u64) {
    let dir = root.join(format!("{policy:?}-{segment_bytes}"));
    write_log(&dir);
    let fs = StdFs::new();
    let largest = fs
        .list_dir(&dir)
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".log"))
        .map(|n| fs.len(&dir.join(n)).unwrap())
        .max()
        .unwrap();
    let options = CompactOptions {
        now: 1_000,
        delete_retention_ms: 0,
        segment_bytes,
    };
    let clean = CleanOptions {
        policy,
        ..CleanOptions::default()
    };
    let (peak, built) = peak_of(|| build_with(&fs, &dir, options, clean).unwrap().unwrap());
    let report = &built.report;
    assert!(
        report.records_after < report.records_before / 2,
        "{report:?}"
    );
    let groups = if segment_bytes >= report.bytes_before {
        1
    } else {
        SEGMENTS as u64
    };
    assert_eq!(report.segments_after, groups, "{policy:?}: {report:?}");
    println!(
        "{policy:?}, {groups} output group(s): peak heap {peak} bytes; {} source bytes, largest source {largest}, map peak {}",
        report.bytes_before, report.map_bytes_peak
    );
    (peak, largest)
}

#[test]
fn a_pass_holds_runs_of_a_source_segment_not_of_its_group() {
    let root = tempfile::tempdir().unwrap();
    for policy in [CompactionPolicy::Seed, CompactionPolicy::Kafka] {
        // Every source its own output segment, then all of them in one.
        let (alone, largest) = build_peak(root.path(), policy, 1);
        let (grouped, _) = build_peak(root.path(), policy, 64 << 20);
        assert!(
            grouped as u64 <= alone as u64 + largest / 2,
            "{policy:?}: one group of {SEGMENTS} sources held {grouped} heap bytes, one source per group {alone}: the pass holds a group, not a source segment"
        );
    }
}

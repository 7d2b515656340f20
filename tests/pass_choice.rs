//! The seed pass's choice between the full scan and the incremental pass.
//!
//! Invariants checked: the choice depends only on the options that change the
//! seed pass (`dedupe_buffer_bytes`, `min_compaction_lag_ms`):
//! `producer_id_expiration_ms`, which only the kafka policy reads, leaves a seed
//! log's first pass the full scan (no `.keys` summaries), with the same report and
//! the same files as under the default options.

use std::path::Path;
use std::sync::Arc;

use seglog::compaction::CleanOptions;
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::{Log, LogConfig, NewRecord};

/// A seed log of three closed segments rewriting the same keys, and an active one.
fn filled() -> (Arc<SimFs>, Log) {
    let fs = Arc::new(SimFs::new());
    let (mut log, _) = Log::open_with(
        Arc::clone(&fs) as Arc<dyn FileSystem>,
        "/log",
        LogConfig::default(),
    )
    .unwrap();
    for s in 0..4 {
        let records: Vec<NewRecord> = (0..5)
            .map(|k| {
                NewRecord::new(
                    Some(format!("k{k}").into_bytes()),
                    Some(format!("v{s}").into_bytes()),
                    s,
                )
            })
            .collect();
        log.append(&records).unwrap();
        if s < 3 {
            log.roll().unwrap();
        }
    }
    (fs, log)
}

fn files(fs: &SimFs) -> Vec<String> {
    let mut names = fs.list_dir(Path::new("/log")).unwrap();
    names.sort();
    names
}

#[test]
fn the_producer_expiration_leaves_the_seed_pass_choice_alone() {
    let (fs_default, mut log_default) = filled();
    let default = log_default
        .clean(100, 1000, None, CleanOptions::default())
        .unwrap();
    let (fs_expiring, mut log_expiring) = filled();
    let expiring = CleanOptions {
        producer_id_expiration_ms: 1,
        ..CleanOptions::default()
    };
    let report = log_expiring.clean(100, 1000, None, expiring).unwrap();
    // The map's peak depends on how its keys spread over its buckets, which its
    // per-map random hash key decides: equal in everything else.
    let without_peak = |report| seglog::compaction::CompactionReport {
        map_bytes_peak: 0,
        ..report
    };
    assert_eq!(without_peak(report), without_peak(default));
    let names = files(&fs_default);
    assert!(
        !names.iter().any(|n| n.ends_with(".keys")),
        "the full scan writes no key summaries: {names:?}"
    );
    assert_eq!(files(&fs_expiring), names);
    // A bounded map does change the seed pass: the incremental pass runs.
    let (fs_bounded, mut log_bounded) = filled();
    let bounded = CleanOptions {
        dedupe_buffer_bytes: Some(1 << 20),
        ..CleanOptions::default()
    };
    log_bounded.clean(100, 1000, None, bounded).unwrap();
    assert!(files(&fs_bounded).iter().any(|n| n.ends_with(".keys")));
}

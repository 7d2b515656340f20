use super::*;
use crate::sweep::named_workloads;

/// The grown class on the end point of each of `names`.
fn grown_report(names: &[&str]) -> WorkloadDamageReport {
    let mut report = WorkloadDamageReport::default();
    for workload in named_workloads()
        .iter()
        .filter(|w| names.contains(&w.name.as_str()))
    {
        let point = super::super::points::end(workload).unwrap();
        damage_point_grown(workload, &point, &mut report);
    }
    report
}

#[test]
fn grown_files_of_workload_images_are_not_read_past_their_bounds() {
    let report = grown_report(&["seed-retention", "incremental-compaction", "transactions"]);
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert!(report.grown > 0);
    assert_eq!(report.grown, report.damages);
    // The closed image grows the recovery point and the marker; the
    // retention the log-start checkpoint, which fails the open.
    let kinds = &report.per_kind;
    assert!(
        kinds
            .get("trust_checkpoint")
            .is_some_and(|k| k.damages >= 2),
        "{kinds:?}"
    );
    assert!(
        kinds.get("offset_index").is_some_and(|k| k.damages >= 2),
        "{kinds:?}"
    );
    assert!(
        kinds.get("checkpoint").is_some_and(|k| k.errors >= 1),
        "{kinds:?}"
    );
    assert!(report.recovered > 0);
}

#[test]
fn a_growth_appends_past_the_bound_or_changes_nothing() {
    let original = [1u8; 10];
    let damage = growth(10, 18);
    let grown = damage.change.apply(&original).unwrap();
    assert_eq!(grown.len() as u64, 18 + GROW_BYTES);
    assert_eq!(grown.get(..10), Some(&original[..]));
    assert!(grown
        .iter()
        .skip(10)
        .all(|b| *b == super::super::plan::GROW_JUNK));
    // A file already past the bound and the junk is left as it is.
    let large = vec![2u8; 18 + GROW_BYTES as usize];
    assert_eq!(growth(large.len() as u64, 18).change.apply(&large), None);
    // A growth planned for another length changes nothing.
    assert_eq!(damage.change.apply(&original[..9]), None);
    assert_eq!(Change::Grow { from: 10, to: 5 }.apply(&original), None);
}

#[test]
fn bounds_follow_the_formats() {
    let files: BTreeMap<PathBuf, Vec<u8>> = [
        (
            Path::new(LOG_DIR).join(checkpoint::CLEAN_POINT_NAME),
            vec![0; 18],
        ),
        (
            Path::new(LOG_DIR).join(recovery_point::CLEAN_SHUTDOWN_NAME),
            vec![],
        ),
        (
            Path::new(LOG_DIR).join(filename::build(0, filename::LOG_SUFFIX)),
            vec![],
        ),
        (
            Path::new(LOG_DIR).join(filename::build(5, filename::LOG_SUFFIX)),
            vec![],
        ),
        (
            Path::new(LOG_DIR).join(filename::build(0, filename::INDEX_SUFFIX)),
            vec![],
        ),
    ]
    .into_iter()
    .collect();
    let bound = |name: &str| bytes_max(&Path::new(LOG_DIR).join(name), &files);
    assert_eq!(bound(checkpoint::CLEAN_POINT_NAME), Some(18));
    assert_eq!(
        bound(recovery_point::CLEAN_SHUTDOWN_NAME),
        Some(recovery_point::file_bytes_max(1))
    );
    assert_eq!(
        bound(recovery_point::RECOVERY_POINT_NAME),
        Some(recovery_point::file_bytes_max(2))
    );
    assert_eq!(
        bound(&filename::build(0, filename::INDEX_SUFFIX)),
        Some(seglog::segment::KAFKA_INDEX_BYTES)
    );
    assert_eq!(
        bound(&filename::build(0, filename::TXN_INDEX_SUFFIX)),
        Some(5 * txn_index::ENTRY_BYTES as u64),
        "up to the next segment's base"
    );
    assert_eq!(bound(&filename::build(0, filename::LOG_SUFFIX)), None);
    assert_eq!(
        bytes_max(Path::new("/elsewhere/x.checkpoint"), &files),
        None
    );
}

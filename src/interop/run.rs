//! The interop stage's run: every case of [`super::cases`] and every workload of
//! the cleaner differential ([`super::differential`]), each as one report line.

use std::path::PathBuf;

use super::cases::{kafka_to_seglog, seglog_to_kafka, twin};
use super::harness::Harness;
use super::{CaseReport, CaseStatus, InteropOptions};

fn case_report(
    case: &str,
    direction: &'static str,
    required: bool,
    result: Result<(u64, u64), String>,
) -> CaseReport {
    let (status, records, lookups, detail) = match result {
        Ok((records, lookups)) => (CaseStatus::Passed, records, lookups, String::new()),
        Err(e) if required => (CaseStatus::Failed, 0, 0, e),
        Err(e) => (CaseStatus::Pending, 0, 0, e),
    };
    CaseReport {
        case: case.into(),
        direction,
        status,
        records,
        lookups,
        detail,
    }
}

/// Runs every case in a fresh temporary directory.
pub fn run_cases(harness: &Harness, options: &InteropOptions) -> Vec<CaseReport> {
    let tmp = match tempfile::tempdir() {
        Ok(tmp) => tmp,
        Err(e) => {
            return vec![case_report("setup", "harness", true, Err(e.to_string()))];
        }
    };
    let work: PathBuf = tmp.path().to_path_buf();
    let mut out = vec![
        case_report(
            "none",
            "seglog_to_kafka",
            true,
            seglog_to_kafka(harness, &work),
        ),
        case_report("none", "twin", true, twin(harness, &work)),
    ];
    // The cleaner differential: every workload is required, the
    // transactional ones too.
    let workloads = super::differential::SEEDS
        .iter()
        .map(|&s| (s, false))
        .chain(super::differential::TXN_SEEDS.iter().map(|&s| (s, true)));
    for (seed, transactions) in workloads {
        let result = super::differential::run_workload(harness, &work, seed, transactions);
        let name = if transactions {
            "cleaner-txn"
        } else {
            "cleaner"
        };
        let mut report = case_report(
            &format!("{name}-{seed}"),
            "cleaner_differential",
            true,
            result
                .as_ref()
                .map(|&(r, l, _, _)| (r, l))
                .map_err(Clone::clone),
        );
        if let Ok((_, _, cleanings, markers)) = &result {
            report.detail = format!(
                "{} rounds, {cleanings} cleanings by both Kafka's Cleaner and seglog's kafka policy; {} markers stamped, {} removed; {} batches kept empty, {} empty batches removed",
                if transactions {
                    super::differential::TXN_ROUNDS
                } else {
                    super::differential::ROUNDS
                },
                markers.stamped,
                markers.removed,
                markers.emptied,
                markers.empty_removed
            );
        }
        out.push(report);
    }
    for case in &options.cases {
        let required = options.required.contains(case);
        out.push(case_report(
            case,
            "kafka_to_seglog",
            required,
            kafka_to_seglog(harness, &work, case),
        ));
    }
    out
}

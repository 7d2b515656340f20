//! `seglog bench --kafka`: the workloads of the selected suites that seglog's bench
//! shares with Apache Kafka 4.4's own log layer, seglog's and Kafka's rounds
//! alternately (`crate::interop::bench_jvm`, the method in `crate::bench::kafka`).
//! Prints the side by side on stderr and the bench's JSON, with a `kafka` field, on
//! stdout (and to `--json FILE`).

use clap::ValueEnum;
use serde_json::json;

use super::bench_cmd::{check_sizes, BenchArgs, Suite};
use super::Outcome;
use crate::bench::kafka::{table, Workload};
use crate::interop::bench_jvm::{self, KafkaBenchOptions};
use seglog::fs::{FileSystem, StdFs};
use seglog::{Error, Result};

/// The suites with workloads Kafka shares, when `--only` names none.
const DEFAULT_SUITES: [Suite; 4] = [Suite::Append, Suite::AppendRaw, Suite::Read, Suite::Compact];

/// The shared workloads of `suites`, in the bench's order; an error naming a suite
/// Kafka shares nothing with.
pub fn workloads(suites: &[Suite]) -> Result<Vec<Workload>> {
    let suites = if suites.is_empty() {
        &DEFAULT_SUITES[..]
    } else {
        suites
    };
    let mut out = Vec::new();
    for suite in suites {
        let shared: &[Workload] = match suite {
            Suite::Append => &[Workload::Append],
            Suite::AppendRaw => &[Workload::AppendRaw],
            Suite::Read => &[Workload::Fetch, Workload::FetchRecords],
            Suite::Compact => &[Workload::Compact],
            other => {
                let name = other
                    .to_possible_value()
                    .map_or_else(|| format!("{other:?}"), |v| v.get_name().to_string());
                return Err(Error::InvalidArgument(format!(
                    "--kafka runs the suites append, append-raw, read and compact; {name} has no Kafka side"
                )));
            }
        };
        out.extend_from_slice(shared);
    }
    Ok(Workload::ALL
        .into_iter()
        .filter(|w| out.contains(w))
        .collect())
}

pub fn kafka(args: &BenchArgs) -> Result<Outcome> {
    check_sizes(args)?;
    let workloads = workloads(&args.only)?;
    let fs = StdFs::new();
    let (_tmp, root) = match &args.dir {
        Some(dir) => {
            if fs.exists(dir) {
                return Err(Error::InvalidArgument(format!(
                    "--dir {} exists; give a new directory",
                    dir.display()
                )));
            }
            fs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            (None, dir.clone())
        }
        None => {
            let tmp = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
            let root = tmp.path().to_path_buf();
            (Some(tmp), root)
        }
    };
    let report = bench_jvm::run(&KafkaBenchOptions {
        records: args.records,
        batch_records: args.batch_records,
        compact_keys: args.compact_keys,
        iterations: args.iterations,
        workloads,
        root: root.clone(),
    })?;
    if args.dir.is_some() {
        fs.remove_dir_all(&root).map_err(|e| Error::io(&root, e))?;
    }
    eprint!("{}", table(&report.workloads, args.iterations));
    let out = json!({
        "records": args.records,
        "batch_records": args.batch_records,
        "compact_keys": args.compact_keys,
        "iterations": args.iterations,
        "results": [],
        "kafka": report,
    });
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&out)
            .map_err(|e| Error::InvalidArgument(format!("cannot print the report: {e}")))?;
        super::bench_compare_cmd::write_report(path, &text)?;
    }
    Ok(Outcome::Ok(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suites_map_to_their_shared_workloads() {
        assert_eq!(workloads(&[]).unwrap(), Workload::ALL.to_vec());
        assert_eq!(
            workloads(&[Suite::Read, Suite::Read]).unwrap(),
            vec![Workload::Fetch, Workload::FetchRecords]
        );
        assert_eq!(
            workloads(&[Suite::Compact, Suite::Append]).unwrap(),
            vec![Workload::Append, Workload::Compact]
        );
        let error = workloads(&[Suite::Open]).unwrap_err().to_string();
        assert!(error.contains("open has no Kafka side"), "{error}");
    }
}

//! `seglog bench --compare OTHER_BINARY`: runs this binary's bench and the other
//! build's alternately, then prints the judgement of `crate::bench::compare`. This
//! file runs the processes; the arithmetic and the table are in that module.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use clap::ValueEnum;
use serde::Serialize;

use super::bench_cmd::BenchArgs;
use super::Outcome;
use crate::bench::compare::{self, Row, RunRows, Verdict, THRESHOLD};
use seglog::fs::{FileSystem, StdFs};
use seglog::{Error, Result};

/// Lines of a failed bench's stderr an error quotes.
const STDERR_TAIL_LINES: usize = 15;

/// The `--json` report.
#[derive(Debug, Serialize)]
struct Report<'a> {
    /// What the ratios are.
    metric: &'static str,
    this: String,
    other: String,
    rounds: usize,
    threshold: f64,
    /// The flags both benches ran with (after `seglog bench`).
    bench_args: &'a [String],
    /// Whether a row is `slower` (the exit code is then 3).
    slower: bool,
    rows: &'a [Row],
}

/// One side of the comparison.
struct Side<'a> {
    label: &'static str,
    binary: &'a Path,
}

pub fn compare(args: &BenchArgs, other: &Path) -> Result<Outcome> {
    if args.rounds == 0 {
        return Err(Error::InvalidArgument("--rounds must be at least 1".into()));
    }
    let this_binary =
        std::env::current_exe().map_err(|e| Error::io("the current executable", e))?;
    let this = Side {
        label: "this",
        binary: &this_binary,
    };
    let other = Side {
        label: "other",
        binary: other,
    };
    let bench_args = forwarded_args(args);
    for side in [&this, &other] {
        check_flags(side, &bench_args)?;
    }
    if let Some(dir) = &args.dir {
        let fs = StdFs::new();
        if fs.exists(dir) {
            return Err(Error::InvalidArgument(format!(
                "--dir {} exists; give a new directory",
                dir.display()
            )));
        }
        fs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let started = Instant::now();
    let mut this_runs = Vec::with_capacity(args.rounds);
    let mut other_runs = Vec::with_capacity(args.rounds);
    for round in 0..args.rounds {
        // The first side swaps every round, so that drift hits both alike.
        let order = if round % 2 == 0 {
            [&this, &other]
        } else {
            [&other, &this]
        };
        for side in order {
            let dir = args
                .dir
                .as_ref()
                .map(|d| d.join(format!("round-{round}-{}", side.label)));
            let rows = run_bench(side, &bench_args, dir.as_deref(), round, args.rounds)?;
            if side.label == "this" {
                this_runs.push(rows);
            } else {
                other_runs.push(rows);
            }
        }
    }
    if let Some(dir) = &args.dir {
        StdFs::new()
            .remove_dir_all(dir)
            .map_err(|e| Error::io(dir, e))?;
    }
    let rows = compare::rows(&this_runs, &other_runs, THRESHOLD);
    let slower = rows.iter().any(|r| r.verdict == Verdict::Slower);
    print!("{}", compare::table(&rows, args.rounds, THRESHOLD));
    println!(
        "this: {}\nother: {}\n{} rounds in {:.0} s",
        this.binary.display(),
        other.binary.display(),
        args.rounds,
        started.elapsed().as_secs_f64()
    );
    if let Some(path) = &args.json {
        let report = Report {
            metric: "median_ms of each row; ratio = this / other (above 1: this is slower)",
            this: this.binary.display().to_string(),
            other: other.binary.display().to_string(),
            rounds: args.rounds,
            threshold: THRESHOLD,
            bench_args: &bench_args,
            slower,
            rows: &rows,
        };
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| Error::InvalidArgument(format!("cannot print the report: {e}")))?;
        write_report(path, &text)?;
    }
    Ok(if slower {
        Outcome::PrintedSlower
    } else {
        Outcome::Printed { passed: true }
    })
}

/// The flags both benches run with: every bench flag, defaults spelled out, so
/// that a build whose defaults differ runs the same bench.
fn forwarded_args(args: &BenchArgs) -> Vec<String> {
    let mut out = vec![
        "--records".to_string(),
        args.records.to_string(),
        "--batch-records".into(),
        args.batch_records.to_string(),
        "--iterations".into(),
        args.iterations.to_string(),
        "--compact-keys".into(),
        args.compact_keys.to_string(),
    ];
    for suite in &args.only {
        if let Some(value) = suite.to_possible_value() {
            out.push("--only".into());
            out.push(value.get_name().to_string());
        }
    }
    out
}

/// Refuses a build whose `bench --help` lacks a flag or an `--only` value the
/// comparison passes: an older build, named with what it lacks.
fn check_flags(side: &Side, bench_args: &[String]) -> Result<()> {
    let output = Command::new(side.binary)
        .args(["bench", "--help"])
        .output()
        .map_err(|e| {
            Error::InvalidArgument(format!(
                "the {} binary {} does not run: {e}",
                side.label,
                side.binary.display()
            ))
        })?;
    if !output.status.success() {
        return Err(failed(side, "bench --help", &output));
    }
    let help = String::from_utf8_lossy(&output.stdout);
    let missing = compare::missing_flags(&help, bench_args);
    if !missing.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "the {} binary {} does not know {} (an older build?): compare with flags both builds have",
            side.label,
            side.binary.display(),
            missing.join(", ")
        )));
    }
    Ok(())
}

/// Runs one side's bench; its rows.
fn run_bench(
    side: &Side,
    bench_args: &[String],
    dir: Option<&Path>,
    round: usize,
    rounds: usize,
) -> Result<RunRows> {
    let mut command = Command::new(side.binary);
    command.arg("bench").args(bench_args);
    if let Some(dir) = dir {
        command.arg("--dir").arg(dir);
    }
    let started = Instant::now();
    let output = command.output().map_err(|e| Error::io(side.binary, e))?;
    if !output.status.success() {
        return Err(failed(side, "bench", &output));
    }
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).map_err(|e| {
        Error::InvalidArgument(format!(
            "the {} binary {}: its bench printed no JSON ({e}); stderr ends:\n{}",
            side.label,
            side.binary.display(),
            stderr_tail(&output.stderr)
        ))
    })?;
    let rows = compare::run_rows(&value).map_err(|e| {
        Error::InvalidArgument(format!(
            "the {} binary {}: {e}",
            side.label,
            side.binary.display()
        ))
    })?;
    eprintln!(
        "seglog bench --compare: round {}/{rounds}: {} ({}) {} rows in {:.1} s",
        round + 1,
        side.label,
        side.binary.display(),
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(rows)
}

/// The error of a side's failed run: the binary, its exit status, its stderr's tail.
fn failed(side: &Side, what: &str, output: &std::process::Output) -> Error {
    Error::InvalidArgument(format!(
        "the {} binary {} failed `{what}` ({}); stderr ends:\n{}",
        side.label,
        side.binary.display(),
        output.status,
        stderr_tail(&output.stderr)
    ))
}

fn stderr_tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(STDERR_TAIL_LINES);
    lines[from..].join("\n")
}

/// Writes `text` to `path`, replacing a file there.
pub(crate) fn write_report(path: &PathBuf, text: &str) -> Result<()> {
    let fs = StdFs::new();
    if fs.exists(path) {
        fs.remove_file(path).map_err(|e| Error::io(path, e))?;
    }
    fs.write_new(path, text.as_bytes())
        .map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::bench_cmd::Suite;

    #[test]
    fn forwarded_args_spell_out_every_flag_and_suite() {
        let args = BenchArgs {
            records: 1000,
            batch_records: 10,
            iterations: 3,
            compact_keys: 50,
            only: vec![Suite::Read, Suite::AppendRaw],
            dir: None,
            compare: Some(PathBuf::from("other")),
            rounds: 5,
            json: None,
            kafka: false,
        };
        let forwarded = forwarded_args(&args);
        assert_eq!(
            forwarded.join(" "),
            "--records 1000 --batch-records 10 --iterations 3 --compact-keys 50 \
             --only read --only append-raw"
        );
        assert!(!forwarded
            .iter()
            .any(|a| a == "--compare" || a == "--rounds"));
    }
}

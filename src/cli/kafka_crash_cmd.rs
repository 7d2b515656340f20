//! `seglog kafka-crash`: Kafka 4.4's own log layer under the crash recorder
//! (`interop::crash`): the harness's `crash-workload` traced, every power-loss
//! image of its trace under each persistence model loaded by Kafka and held to the
//! oracle of its acknowledgments; each image with findings written as a case file.
//! seglog's own binary goes through the same workload's shape
//! (`interop::crash::shape`) under the same models (`alice`), side by side.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::Outcome;
use crate::alice::{self, AliceOptions};
use crate::interop::crash::{self, explore, shape};
use crate::interop::harness::{self, Harness};
use crate::sweep;
use seglog::fs::sim::Persistence;
use seglog::{Error, Result};

#[derive(Debug, Args)]
pub struct KafkaCrashArgs {
    /// The workload's variant: normal (Kafka's own script) or no-flush (flush steps
    /// acknowledge without flushing: its images must give findings).
    #[arg(long, default_value = "normal", value_name = "normal|no-flush")]
    pub variant: String,
    /// Power-loss disk images per crash point (each a prefix of the trace).
    #[arg(long, default_value_t = explore::ExploreOptions::default().images_per_point)]
    pub images_per_point: usize,
    /// Only these persistence models (default: any-subset and ordered-metadata).
    #[arg(long = "persistence", value_name = "any-subset|ordered-metadata")]
    pub models: Vec<Persistence>,
    /// Where to write each image with findings as `MODEL-N.json`.
    #[arg(long)]
    pub cases: Option<PathBuf>,
    /// Also write a self-contained HTML page here: the table of both systems under
    /// each model, and each Kafka case laid open (its calls up to the power loss
    /// with their fates, what the loss took, the image, the records owed against
    /// those served).
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Replay these case files (`--cases`' `MODEL-N.json`) instead of exploring:
    /// the workload of each case's variant is recorded again, each image rebuilt
    /// from its crash point and lost items, loaded by Kafka and judged; exit 1
    /// when a case does not reproduce its findings.
    #[arg(long = "replay", value_name = "CASE")]
    pub replay: Vec<PathBuf>,
    /// The strace to run.
    #[arg(long, default_value = "strace")]
    pub strace: PathBuf,
    /// Where the traced run and the images are laid out (default: /dev/shm where
    /// it exists, else the temp directory).
    #[arg(long)]
    pub scratch: Option<PathBuf>,
}

/// `seglog kafka-crash`: exit 1 when an image has findings.
pub fn kafka_crash(args: KafkaCrashArgs) -> Result<Outcome> {
    if !crash::VARIANTS.contains(&args.variant.as_str()) {
        return Err(Error::InvalidArgument(format!(
            "not a crash-workload variant: {} ({})",
            args.variant,
            crash::VARIANTS.join(", ")
        )));
    }
    let cases = read_cases(&args.replay)?;
    if let Some(reason) = harness::unavailable() {
        return Err(Error::InvalidArgument(reason));
    }
    if !alice::strace_available(&args.strace) {
        return Err(Error::InvalidArgument(format!(
            "{} does not run: install strace",
            args.strace.display()
        )));
    }
    let scratch = args.scratch.unwrap_or_else(alice::default_scratch);
    let failed = |e: String| Error::InvalidArgument(format!("kafka-crash: {e}"));
    let harness = Harness::build().map_err(failed)?;
    if !cases.is_empty() {
        return replay(&harness, &args.strace, &scratch, &cases);
    }
    let recording =
        crash::record_variant(&harness, &args.strace, &scratch, &args.variant).map_err(failed)?;
    let fidelity = recording.fidelity().map_err(failed)?;
    let mut options = explore::ExploreOptions {
        images_per_point: args.images_per_point.max(1),
        ..explore::ExploreOptions::default()
    };
    if !args.models.is_empty() {
        options.models = args.models.clone();
    }
    let reports = explore::explore(&harness, &recording, &options).map_err(failed)?;
    let case_files = match &args.cases {
        Some(dir) => explore::write_cases(&reports, dir).map_err(failed)?,
        None => Vec::new(),
    };
    let seglog_side = seglog_side(&args.strace, &scratch, &options)?;
    let seglog_violations: u64 = seglog_side.iter().map(SeglogSide::violations).sum();
    let kafka_findings: u64 = reports.iter().map(|r| r.findings).sum();
    let findings = kafka_findings + seglog_violations;
    let table: Vec<_> = reports
        .iter()
        .map(|r| {
            let classes = |class: &str| r.cases.iter().filter(|c| c.class == class).count();
            json!({
                "model": r.model,
                "crash_points": r.crash_points,
                "images": r.images,
                "absent": r.absent,
                "load_errors": r.errors,
                "judgments": r.judgments,
                "findings": r.findings,
                "by_kind": r.by_kind,
                "ordered_metadata": classes("ordered-metadata"),
                "pessimistic_only": classes("pessimistic-only"),
            })
        })
        .collect();
    for row in &table {
        eprintln!("kafka {row}");
    }
    let seglog_table: Vec<_> = seglog_side.iter().map(SeglogSide::json).collect();
    for side in &seglog_side {
        eprintln!(
            "seglog {}: binary {} commands, {} system calls, {} images, {} findings; \
             in-process {} crash points, {} disk images, {} findings",
            side.model.name(),
            side.binary.commands,
            side.binary.syscalls,
            side.binary.states,
            side.binary.violations.len(),
            side.in_process.crash_points,
            side.in_process.disk_images,
            side.in_process.violations.len()
        );
    }
    if let Some(out) = &args.html {
        let acks = crash::acks::Acks::from_value(&recording.acks).map_err(failed)?;
        let html = page(&recording, &acks, &reports, &seglog_side, &case_files).map_err(failed)?;
        super::sweep_cmd::write_report(out, &html)?;
    }
    let value = json!({
        "variant": args.variant,
        "calls": recording.calls.len(),
        "markers": recording.markers().len(),
        "fidelity": fidelity,
        "images_per_point": options.images_per_point,
        "models": table,
        "findings": findings,
        "kafka_findings": kafka_findings,
        "case_files": case_files,
        "seglog_workload": shape::workload().name,
        "seglog": seglog_table,
        "seglog_violations": seglog_violations,
    });
    Ok(if findings == 0 {
        Outcome::Ok(value)
    } else {
        Outcome::CheckFailed(value)
    })
}

/// The case files of `--replay`, read and checked before anything runs.
fn read_cases(files: &[PathBuf]) -> Result<Vec<(PathBuf, explore::Case)>> {
    let fs = seglog::fs::StdFs::new();
    let mut cases = Vec::new();
    for file in files {
        let bytes = seglog::fs::FileSystem::read_all(&fs, file)
            .map_err(|e| Error::InvalidArgument(format!("{}: {e}", file.display())))?;
        let case: explore::Case = serde_json::from_slice(&bytes).map_err(|e| {
            Error::InvalidArgument(format!("{}: not a case file: {e}", file.display()))
        })?;
        if !crash::VARIANTS.contains(&case.variant.as_str()) {
            return Err(Error::InvalidArgument(format!(
                "{}: not a crash-workload variant: {}",
                file.display(),
                case.variant
            )));
        }
        cases.push((file.clone(), case));
    }
    Ok(cases)
}

/// `--replay`: each case replayed on a new recording of its variant.
fn replay(
    harness: &Harness,
    strace: &std::path::Path,
    scratch: &std::path::Path,
    cases: &[(PathBuf, explore::Case)],
) -> Result<Outcome> {
    let failed = |e: String| Error::InvalidArgument(format!("kafka-crash --replay: {e}"));
    let mut rows = Vec::new();
    // One recording per variant, made when a case first needs it.
    let mut recordings: std::collections::BTreeMap<&str, crash::Recording> =
        std::collections::BTreeMap::new();
    for (file, case) in cases {
        let variant = case.variant.as_str();
        if !recordings.contains_key(variant) {
            let recording =
                crash::record_variant(harness, strace, scratch, variant).map_err(failed)?;
            recordings.insert(variant, recording);
        }
        let recording = &recordings[variant];
        let replayed = explore::replay_case(harness, recording, case).map_err(failed)?;
        eprintln!(
            "{}: {}",
            file.display(),
            if replayed.reproduced {
                "reproduced".to_string()
            } else {
                format!(
                    "NOT reproduced: {}",
                    replayed.detail.as_deref().unwrap_or_default()
                )
            }
        );
        rows.push(json!({
            "file": file,
            "variant": case.variant,
            "model": case.model,
            "crash_point": case.crash_point,
            "reproduced": replayed.reproduced,
            "detail": replayed.detail,
            "findings": replayed.findings,
            "served": replayed.served,
        }));
    }
    let reproduced = rows.iter().filter(|r| r["reproduced"] == true).count();
    let value = json!({
        "replayed": rows,
        "reproduced": reproduced,
        "not_reproduced": rows.len() - reproduced,
    });
    Ok(if reproduced == rows.len() {
        Outcome::Ok(value)
    } else {
        Outcome::CheckFailed(value)
    })
}

/// The `--html` page: a summary row per system, model and (seglog) runner, and
/// each Kafka case and seglog violation laid open.
fn page(
    recording: &crash::Recording,
    acks: &crash::acks::Acks,
    reports: &[explore::ModelReport],
    seglog_side: &[SeglogSide],
    case_files: &[PathBuf],
) -> std::result::Result<String, String> {
    use crate::scenario::inspect::TreeEntry;
    use crate::verify::html::{page, CrashCase, PageFailure, PageStage};
    let mut stages = Vec::new();
    let mut failures = Vec::new();
    let steps: Vec<String> = acks.steps.iter().map(|s| s.describe()).collect();
    let record = |r: &Option<crash::acks::Record>| {
        r.as_ref().map_or("-".to_string(), |r| {
            format!(
                "{} {}={}",
                r.offset,
                r.key.as_deref().unwrap_or("(no key)"),
                r.value.as_deref().unwrap_or("(tombstone)")
            )
        })
    };
    let mut files = case_files.iter();
    for report in reports {
        stages.push(PageStage {
            name: format!("kafka, {}", report.model),
            passed: report.findings == 0,
            seconds: report.seconds,
            summary: format!(
                "{} images, {} judgments, {} findings",
                report.images, report.judgments, report.findings
            ),
            numbers: vec![
                ("crash_points".into(), report.crash_points.to_string()),
                ("absent".into(), report.absent.to_string()),
                ("load_errors".into(), report.errors.to_string()),
            ],
        });
        for (n, case) in report.cases.iter().enumerate() {
            let kinds: Vec<&str> = case.findings.iter().map(|f| f.kind.name()).collect();
            let mut text: Vec<String> = case
                .findings
                .iter()
                .map(|f| format!("{}: {}", f.kind.name(), f.detail))
                .collect();
            text.push(format!(
                "crash point {} (after {} acknowledged steps, the last {}); the next call: {}",
                case.crash_point,
                case.completed_steps,
                case.last_marker.as_deref().unwrap_or("none"),
                case.next_call.as_deref().unwrap_or("none (the end)")
            ));
            if let Some(file) = files.next() {
                text.push(format!("case file: {}", file.display()));
            }
            let rows = crash::timeline::records(acks, case.completed_steps, &case.served);
            let tree = case
                .dirs
                .iter()
                .map(|d| TreeEntry {
                    path: d.clone(),
                    bytes: None,
                })
                .chain(case.files.iter().map(|f| TreeEntry {
                    path: f.path.clone(),
                    bytes: Some(f.len),
                }))
                .collect();
            failures.push(PageFailure {
                title: format!(
                    "kafka, {} case {n} ({}): {}",
                    case.model,
                    case.class,
                    kinds.join(", ")
                ),
                inspection: None,
                text: Some(text.join("\n")),
                crash: Some(CrashCase {
                    steps: steps.clone(),
                    timeline: crash::timeline::case_timeline(recording, case)?,
                    lost: case.lost.clone(),
                    tree,
                    columns: (
                        "owed (acknowledged durable)".into(),
                        "served by Kafka".into(),
                    ),
                    records: rows
                        .iter()
                        .map(|r| (record(&r.owed), record(&r.served)))
                        .collect(),
                }),
            });
        }
    }
    for side in seglog_side {
        let model = side.model.name();
        stages.push(PageStage {
            name: format!("seglog binary, {model}"),
            passed: side.binary.violations.is_empty(),
            seconds: side.binary.seconds,
            summary: format!(
                "{} images, {} findings",
                side.binary.states,
                side.binary.violations.len()
            ),
            numbers: vec![
                ("commands".into(), side.binary.commands.to_string()),
                ("syscalls".into(), side.binary.syscalls.to_string()),
                ("crash_points".into(), side.binary.crash_points.to_string()),
            ],
        });
        stages.push(PageStage {
            name: format!("seglog in-process, {model}"),
            passed: side.in_process.violations.is_empty(),
            seconds: side.in_process.seconds,
            summary: format!(
                "{} disk images, {} findings",
                side.in_process.disk_images,
                side.in_process.violations.len()
            ),
            numbers: vec![
                ("operations".into(), side.in_process.operations.to_string()),
                (
                    "crash_points".into(),
                    side.in_process.crash_points.to_string(),
                ),
            ],
        });
        let violations = side
            .binary
            .violations
            .iter()
            .map(|v| ("binary", serde_json::to_string_pretty(v)))
            .chain(
                side.in_process
                    .violations
                    .iter()
                    .map(|v| ("in-process", serde_json::to_string_pretty(v))),
            );
        for (runner, text) in violations {
            failures.push(PageFailure {
                title: format!("seglog {runner}, {model}"),
                inspection: None,
                text: Some(text.map_err(|e| e.to_string())?),
                crash: None,
            });
        }
    }
    Ok(page("seglog kafka-crash", &stages, &failures))
}

/// seglog's side under one persistence model.
struct SeglogSide {
    model: Persistence,
    /// The binary, one command a step, under strace (`alice`).
    binary: alice::WorkloadReport,
    /// The engine in one process on the simulated file system (the crash sweep):
    /// the steps' flushes are its only syncs of appended records.
    in_process: sweep::WorkloadReport,
}

impl SeglogSide {
    fn violations(&self) -> u64 {
        (self.binary.violations.len() + self.in_process.violations.len()) as u64
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "model": self.model.name(),
            "binary": {
                "commands": self.binary.commands,
                "syscalls": self.binary.syscalls,
                "crash_points": self.binary.crash_points,
                "images": self.binary.states,
                "findings": self.binary.violations.len(),
                "violations": self.binary.violations,
            },
            "in_process": {
                "operations": self.in_process.operations,
                "crash_points": self.in_process.crash_points,
                "disk_images": self.in_process.disk_images,
                "findings": self.in_process.violations.len(),
                "violations": self.in_process.violations,
            },
        })
    }
}

/// seglog's side: Kafka's workload shape under each model of `options`, run by
/// this binary one command a step under strace, every crash state recovered by
/// the binary and judged (`alice`), and run by the engine in one process through
/// the crash sweep.
fn seglog_side(
    strace: &std::path::Path,
    scratch: &std::path::Path,
    options: &explore::ExploreOptions,
) -> Result<Vec<SeglogSide>> {
    let binary = std::env::current_exe().map_err(|e| Error::io("current_exe", e))?;
    let workload = shape::workload();
    options
        .models
        .iter()
        .map(|&model| {
            let alice_options = AliceOptions {
                binary: binary.clone(),
                strace: strace.to_path_buf(),
                images_per_point: options.images_per_point,
                persistence: model,
                scratch: scratch.to_path_buf(),
            };
            let traced = alice::run_workload(&workload, &alice_options).map_err(|e| {
                Error::InvalidArgument(format!(
                    "kafka-crash: seglog's side ({}): {e}",
                    model.name()
                ))
            })?;
            let sweep_options = sweep::SweepOptions {
                images_per_point: options.images_per_point,
                persistence: model,
                ..sweep::SweepOptions::default()
            };
            Ok(SeglogSide {
                model,
                binary: traced,
                in_process: sweep::sweep(&workload, &sweep_options, |_, _| {}),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: KafkaCrashArgs,
    }

    #[test]
    fn flags_parse_and_an_unknown_variant_is_refused_before_any_run() {
        let cli = Cli::try_parse_from([
            "kafka-crash",
            "--persistence",
            "ordered-metadata",
            "--images-per-point",
            "3",
        ])
        .unwrap();
        assert_eq!(cli.args.models, vec![Persistence::OrderedMetadata]);
        assert_eq!(cli.args.variant, "normal");
        assert_eq!(cli.args.images_per_point, 3);
        assert!(Cli::try_parse_from(["kafka-crash", "--persistence", "journal"]).is_err());

        let bad = Cli::try_parse_from(["kafka-crash", "--variant", "early"]).unwrap();
        let err = kafka_crash(bad.args).unwrap_err().to_string();
        assert!(err.contains("not a crash-workload variant"), "{err}");

        let tmp = tempfile::tempdir().unwrap();
        let not_a_case = tmp.path().join("x.json");
        std::fs::write(&not_a_case, b"{\"model\": 3}").unwrap();
        let bad = Cli::try_parse_from(
            ["kafka-crash", "--replay"]
                .map(Into::into)
                .into_iter()
                .chain([not_a_case.clone().into_os_string()]),
        )
        .unwrap();
        let err = kafka_crash(bad.args).unwrap_err().to_string();
        assert!(err.contains("not a case file"), "{err}");
        assert!(err.contains("x.json"), "{err}");
    }
}

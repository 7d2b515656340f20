//! The stages of `seglog verify`.

use std::time::Instant;

use serde_json::{json, Map, Value};

use seglog_model::check::{self, CheckOptions, ModelKind, Variant};

use std::cell::RefCell;

use crate::conformance::faults::run_random_faults_selected;
use crate::conformance::{self, ConformanceOptions};
use crate::damage::{self, DamageOptions};
use crate::scenario::{self, files, load, scenario_paths, Scenario};
use crate::sweep::io_errors::{sweep_errors, IoErrorOptions};
use crate::sweep::{self, SweepOptions};
use seglog::fs::{FileSystem, StdFs};

use super::{Progress, Shard, StageReport, VerifyOptions};

/// The shard of the run (the whole run without `--shard`).
fn shard(options: &VerifyOptions) -> Shard {
    options.shard.unwrap_or(Shard::ALL)
}

/// Adds `shard_units` (the units this shard ran) to a sharded stage's report.
fn with_units(mut report: StageReport, options: &VerifyOptions, units: Vec<String>) -> StageReport {
    if options.shard.is_some() {
        report.details.insert("shard_units".into(), json!(units));
    }
    report
}

fn stage(
    name: &'static str,
    started: Instant,
    passed: bool,
    summary: String,
    details: Value,
) -> StageReport {
    let details = match details {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    StageReport {
        stage: name,
        passed,
        seconds: started.elapsed().as_secs_f64(),
        summary,
        details,
        counterexample: None,
        replay_command: None,
    }
}

/// Writes `text` as `name` in the counterexample directory; returns its path.
fn emit(options: &VerifyOptions, name: &str, text: &str) -> Option<String> {
    let fs = StdFs::new();
    let dir = &options.emit_scenario_dir;
    let path = dir.join(name);
    fs.create_dir_all(dir).ok()?;
    fs.write_new(&path, text.as_bytes()).ok()?;
    fs.sync_file(&path).ok()?;
    Some(path.display().to_string())
}

/// Writes `scenario` into the counterexample directory; its path and the command
/// that replays it.
fn emit_scenario(options: &VerifyOptions, scenario: &Scenario) -> (Option<String>, Option<String>) {
    let path = files::save(&StdFs::new(), &options.emit_scenario_dir, scenario)
        .ok()
        .map(|p| p.display().to_string());
    let command = path.as_ref().map(|p| format!("seglog replay {p}"));
    (path, command)
}

/// The model variant `name` selects for `model`, if it names one of its variants.
/// The tail of a stage that is one unit, run by the first shard: its report, the
/// replay command when it failed, and its unit when this shard owns it.
fn single_unit(
    options: &VerifyOptions,
    name: &'static str,
    started: Instant,
    passed: bool,
    summary: String,
    details: Value,
    replay_command: Option<String>,
) -> StageReport {
    let mut report = stage(name, started, passed, summary, details);
    if !passed {
        report.replay_command = replay_command;
    }
    let units = if shard(options).owns(0) {
        vec![name.to_string()]
    } else {
        Vec::new()
    };
    with_units(report, options, units)
}

/// Why a one-unit stage is skipped on a shard other than the first.
fn not_this_shard(options: &VerifyOptions) -> String {
    format!("shard {} (shard 1 runs it)", shard(options))
}

fn model_variant(model: ModelKind, name: &str) -> Option<Variant> {
    let variant = <Variant as clap::ValueEnum>::from_str(name, true).ok()?;
    Variant::all(model).contains(&variant).then_some(variant)
}

pub fn model(options: &VerifyOptions, progress: &mut Progress) -> StageReport {
    let started = Instant::now();
    let models = [
        ModelKind::Log,
        ModelKind::Install,
        ModelKind::Retention,
        ModelKind::Durability,
        ModelKind::Cleaner,
        ModelKind::Concurrent,
        ModelKind::Txn,
        ModelKind::Writers,
    ];
    progress.start("model", models.len() as u64);
    let owned: Vec<ModelKind> = models
        .into_iter()
        .enumerate()
        .filter(|(i, _)| shard(options).owns(*i as u64))
        .map(|(_, m)| m)
        .collect();
    // The models on `jobs` threads, the log model (the largest) first.
    let checked = crate::jobs::map_ordered(
        &owned,
        options.jobs,
        |_, model| {
            let variant = model_variant(*model, &options.variant);
            let check_options = CheckOptions {
                model: *model,
                variant,
                depth: None,
                records: if *model == ModelKind::Log {
                    options.model_records
                } else {
                    None
                },
            };
            (variant, check::run(&check_options))
        },
        |done, total| progress.set(done as u64, total as u64, "models"),
    );
    let mut reports = Vec::new();
    let mut counterexample = None;
    let mut replay_command = None;
    let units: Vec<String> = owned
        .iter()
        .map(|model| format!("model {model:?}").to_lowercase())
        .collect();
    for (model, (variant, report)) in owned.iter().zip(checked) {
        if !report.ok() && counterexample.is_none() {
            let variant_name = variant.map_or("default", Variant::name);
            let text = serde_json::to_string_pretty(&report.violations).unwrap_or_default();
            counterexample = emit(
                options,
                &format!("model-{model:?}-{variant_name}.json").to_lowercase(),
                &text,
            );
            replay_command = Some(format!(
                "seglog model check --model {} --variant {variant_name}",
                format!("{model:?}").to_lowercase()
            ));
        }
        reports.push(report);
    }
    let passed = reports.iter().all(|r| r.ok());
    let unique: u64 = reports.iter().map(|r| r.unique_states as u64).sum();
    let violations: usize = reports.iter().map(|r| r.violations.len()).sum();
    let summary = format!(
        "{} models, {unique} unique states, {violations} violations",
        reports.len()
    );
    progress.done(&summary);
    let mut report = stage(
        "model",
        started,
        passed,
        summary,
        json!({ "models": reports, "unique_states": unique, "violations": violations }),
    );
    report.counterexample = counterexample;
    report.replay_command = replay_command;
    with_units(report, options, units)
}

pub fn conformance(options: &VerifyOptions, progress: &mut Progress) -> StageReport {
    let started = Instant::now();
    let total = options.conformance_cases;
    progress.start("conformance", total);
    let conformance_options = ConformanceOptions {
        cases: total,
        ops_per_case: options.conformance_ops,
        seed: options.seed,
        variant: options.variant.clone(),
        // Twice the threads: each case's real-disk half mostly waits on fsync.
        jobs: options.jobs * 2,
    };
    let units = RefCell::new(Vec::new());
    let select = |case: u64| {
        let owned = shard(options).owns(case);
        if owned {
            units.borrow_mut().push(format!("case {case}"));
        }
        owned
    };
    let result = conformance::run_random_selected(&conformance_options, &select, |done| {
        progress.set(done, total, "cases")
    });
    // The LogManager's cleaner rounds against the spec's choice and pass
    // (`conformance::manager`): a quarter as many cases, as many steps each.
    let manager = conformance::manager::run(
        options.seed,
        (total / 4).max(1),
        options.conformance_ops,
        |case| shard(options).owns(case),
    );
    let manager_stats = manager.as_ref().ok().copied().unwrap_or_default();
    let passed = result.failures.is_empty() && manager.is_ok();
    let mut summary = format!(
        "{} cases, {} steps, {} crashes, {} dirty-ratio decisions, {} second opens refused, {} manager rounds ({} cleanings), {} divergences",
        result.cases,
        result.steps,
        result.crashes,
        result.cleanable_checks,
        result.second_opens_refused,
        manager_stats.rounds,
        manager_stats.cleaned,
        result.failures.len() + usize::from(manager.is_err())
    );
    if let Err(e) = &manager {
        summary.push_str(&format!("; {e}"));
    }
    progress.done(&summary);
    let (counterexample, replay_command) = result
        .failures
        .first()
        .map(|first| emit_scenario(options, &first.to_scenario(&options.variant)))
        .unwrap_or_default();
    let mut report = stage("conformance", started, passed, summary, {
        let mut details = serde_json::to_value(&result).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut details {
            map.insert("manager".into(), json!(manager_stats));
            map.insert("manager_divergence".into(), json!(manager.as_ref().err()));
        }
        details
    });
    report.counterexample = counterexample;
    report.replay_command = replay_command;
    with_units(report, options, units.into_inner())
}

pub fn crash_sweep(options: &VerifyOptions, progress: &mut Progress) -> StageReport {
    let started = Instant::now();
    let workloads = options.selected_workloads();
    let sweep_options = SweepOptions {
        images_per_point: options.images_per_point,
        recovery_crash_images: options.recovery_crash_images,
        persistence: options.persistence,
    };
    let count = workloads.len() as u64;
    progress.start("crash_sweep", count);
    // The workloads on `jobs` threads, each with the crash points this shard owns.
    let swept = crate::jobs::map_ordered(
        &workloads,
        options.jobs,
        |i, workload| {
            let mut workload = workload.clone();
            workload.variant = options.variant.clone();
            let name = workload.name.clone();
            let owned = RefCell::new(Vec::new());
            // Unit `i + k`: crash point `k` of workload `i`, so each workload's
            // points spread over the shards from a different one.
            let select = |k: u64| {
                let owns = shard(options).owns(i as u64 + k);
                if owns {
                    owned.borrow_mut().push(format!("{name} {k}"));
                }
                owns
            };
            let report =
                sweep::sweep_selected(&workload, &sweep_options, &|_| {}, &select, |_, _| {});
            (workload, report, owned.into_inner())
        },
        |done, total| progress.set(done as u64, total as u64, "workloads"),
    );
    let mut reports = Vec::new();
    let mut units = Vec::new();
    for (workload, report, owned) in swept {
        units.extend(owned);
        reports.push((workload, report));
    }
    let crash_points: u64 = reports.iter().map(|(_, r)| r.crash_points).sum();
    let disk_images: u64 = reports.iter().map(|(_, r)| r.disk_images).sum();
    let violations: usize = reports.iter().map(|(_, r)| r.violations.len()).sum();
    let seconds = started.elapsed().as_secs_f64();
    let summary = format!(
        "{} workloads, {crash_points} crash points, {disk_images} disk images, {violations} violations ({:.0} images/s)",
        reports.len(),
        disk_images as f64 / seconds.max(1e-9)
    );
    progress.done(&summary);
    let (counterexample, replay_command) = reports
        .iter()
        .find_map(|(w, r)| r.violations.first().map(|v| (w, v)))
        .map(|(workload, violation)| {
            emit_scenario(
                options,
                &Scenario::from_violation(workload, violation, options.persistence),
            )
        })
        .unwrap_or_default();
    let per_workload: Vec<Value> = reports
        .iter()
        .map(|(_, r)| serde_json::to_value(r).unwrap_or(Value::Null))
        .collect();
    let mut report = stage(
        "crash_sweep",
        started,
        violations == 0,
        summary,
        json!({
            "workloads": reports.len(),
            "crash_points": crash_points,
            "disk_images": disk_images,
            "violations": violations,
            "seconds": seconds,
            "per_workload": per_workload,
        }),
    );
    report.counterexample = counterexample;
    report.replay_command = replay_command;
    with_units(report, options, units)
}

/// The I/O-error sweep (`src/sweep/io_errors.rs`): every file-system call of every
/// named workload fails in turn with `EIO`, `ENOSPC` and (appends) a short write.
/// Power-loss images per check: a quarter of the crash sweep's `images_per_point`.
pub fn io_errors(options: &VerifyOptions, progress: &mut Progress) -> StageReport {
    let started = Instant::now();
    let workloads = options.selected_workloads();
    let error_options = IoErrorOptions {
        images_per_point: (options.images_per_point / 4).max(2),
        ..IoErrorOptions::default()
    };
    let count = workloads.len() as u64;
    progress.start("io_errors", count);
    // Units: the workloads (0, 1, ...), then the conformance cases after them.
    let owned: Vec<(usize, sweep::Workload)> = workloads
        .into_iter()
        .enumerate()
        .filter(|(i, _)| shard(options).owns(*i as u64))
        .collect();
    let mut units: Vec<String> = owned
        .iter()
        .map(|(_, w)| format!("workload {}", w.name))
        .collect();
    let reports = crate::jobs::map_ordered(
        &owned,
        options.jobs,
        |_, (_, workload)| {
            let mut workload = workload.clone();
            workload.variant = options.variant.clone();
            sweep_errors(&workload, &error_options, |_, _| {})
        },
        |done, total| progress.set(done as u64, total as u64 + 1, "workloads"),
    );
    // Conformance with `Step::FailNext` woven in: a quarter of the conformance cases.
    let conformance_options = ConformanceOptions {
        cases: (options.conformance_cases / 4).max(1),
        ops_per_case: options.conformance_ops,
        seed: options.seed,
        variant: options.variant.clone(),
        jobs: options.jobs,
    };
    progress.set(count, count + 1, "conformance with io errors");
    let fault_units = RefCell::new(Vec::new());
    let select = |case: u64| {
        let owned = shard(options).owns(count + case);
        if owned {
            fault_units.borrow_mut().push(format!("case {case}"));
        }
        owned
    };
    let fault_cases = run_random_faults_selected(&conformance_options, &select, |_| {});
    units.extend(fault_units.into_inner());
    let error_points: u64 = reports.iter().map(|r| r.error_points).sum();
    let not_reached: u64 = reports.iter().map(|r| r.not_reached).sum();
    let disk_images: u64 = reports.iter().map(|r| r.disk_images).sum();
    let violations: usize = reports.iter().map(|r| r.violations.len()).sum();
    let mut by_kind = std::collections::BTreeMap::<String, u64>::new();
    for report in &reports {
        for (kind, n) in &report.error_points_by_kind {
            *by_kind.entry(kind.clone()).or_default() += n;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let first = reports.iter().find_map(|r| r.violations.first());
    let full_disk = by_kind
        .get(seglog::fs::sim::FaultKind::DiskFull.name())
        .copied()
        .unwrap_or(0);
    let refused_on_full: u64 = reports.iter().map(|r| r.full_disk_refused).sum();
    let mut summary = format!(
        "{} workloads, {error_points} error points ({full_disk} with the disk full, {refused_on_full} reopens refused for space), {disk_images} disk images, {violations} violations; {} conformance cases, {} io errors, {} divergences",
        reports.len(),
        fault_cases.cases,
        fault_cases.io_errors,
        fault_cases.failures.len()
    );
    if let Some(v) = first {
        summary.push_str(&format!("; first: {v}"));
    }
    progress.done(&summary);
    let counterexample = match (first, fault_cases.failures.first()) {
        (Some(v), _) => {
            let text = format!("{v}\n\nreplay with: {}\n", v.replay_command());
            emit(
                options,
                &format!("io-errors-{}-{}-{}.txt", v.workload, v.kind, v.fs_call),
                &text,
            )
        }
        (None, Some(divergence)) => emit(
            options,
            &format!("io-errors-conformance-seed-{}.txt", divergence.seed),
            &divergence.to_string(),
        ),
        (None, None) => None,
    };
    let passed = violations == 0 && not_reached == 0 && fault_cases.failures.is_empty();
    let mut report = stage(
        "io_errors",
        started,
        passed,
        summary,
        json!({
            "workloads": reports.len(),
            "error_points": error_points,
            "error_points_by_kind": by_kind,
            "not_reached": not_reached,
            "disk_images": disk_images,
            "violations": violations,
            "seconds": seconds,
            "first_violation": first.map(ToString::to_string),
            "per_workload": reports,
            "conformance_cases": fault_cases.cases,
            "conformance_steps": fault_cases.steps,
            "conformance_io_errors": fault_cases.io_errors,
            "conformance_failures": fault_cases.failures.len(),
            "conformance_first_failure": fault_cases.failures.first().map(ToString::to_string),
        }),
    );
    report.counterexample = counterexample;
    report.replay_command = first.map(|v| v.replay_command());
    with_units(report, options, units)
}

/// Damaged data (`src/damage`): every planned damage of every file of each named
/// workload's log, at its end and at its protocol crash points, opened and judged.
pub fn damaged_data(options: &VerifyOptions, progress: &mut Progress) -> StageReport {
    let started = Instant::now();
    let mut workloads: Vec<sweep::Workload> = options
        .selected_workloads()
        .into_iter()
        .enumerate()
        .filter(|(i, _)| shard(options).owns(*i as u64))
        .map(|(_, w)| w)
        .collect();
    for workload in &mut workloads {
        workload.variant = options.variant.clone();
    }
    let units: Vec<String> = workloads
        .iter()
        .map(|w| format!("workload {}", w.name))
        .collect();
    let total = workloads.len() as u64;
    progress.start("damaged_data", total);
    // Every planned damage of every file at each workload's end and its first
    // `damage_points` protocol states; the larger budgets take up to 64 states and
    // add every bit of every batch header.
    let damage_options = DamageOptions {
        jobs: options.jobs,
        protocol_points: options.damage_points,
        ..if options.budget == super::Budget::Quick {
            DamageOptions::quick()
        } else {
            DamageOptions::exhaustive()
        }
    };
    let result = damage::run(&workloads, &damage_options, |i, n, name| {
        progress.set(i, n, name)
    });
    let summary = format!(
        "{} workloads, {} points, {} damages ({} forged, {} grown), {} errors, {} recovered, {} undetectable, {} violations",
        result.workloads,
        result.points,
        result.damages,
        result.forged,
        result.grown,
        result.errors,
        result.recovered,
        result.undetectable,
        result.violations
    );
    progress.done(&summary);
    let counterexample = result.first_violation().and_then(|first| {
        emit(
            options,
            "damaged-data-violation.json",
            &serde_json::to_string_pretty(first).unwrap_or_default(),
        )
    });
    let passed = result.violations == 0;
    let mut report = stage(
        "damaged_data",
        started,
        passed,
        summary,
        serde_json::to_value(&result).unwrap_or(Value::Null),
    );
    if let Some(first) = result.first_violation() {
        report.replay_command = Some(format!("seglog damage --workload {}", first.workload));
    }
    report.counterexample = counterexample;
    with_units(report, options, units)
}

pub fn replay(options: &VerifyOptions, progress: &mut Progress) -> StageReport {
    let started = Instant::now();
    let fs = StdFs::new();
    let all_files =
        scenario_paths(&fs, std::slice::from_ref(&options.scenarios_dir)).unwrap_or_default();
    let any_files = !all_files.is_empty();
    let files: Vec<std::path::PathBuf> = all_files
        .into_iter()
        .enumerate()
        .filter(|(i, _)| shard(options).owns(*i as u64))
        .map(|(_, f)| f)
        .collect();
    let units: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    progress.start("replay", files.len() as u64);
    let mut results = Vec::new();
    let mut failed = Vec::new();
    for (i, file) in files.iter().enumerate() {
        progress.set(i as u64, files.len() as u64, &file.display().to_string());
        match load(&fs, file) {
            Ok(scenario) => {
                // Against a broken variant, what our protocol must do still holds:
                // the suite fails if the variant breaks a scenario.
                let result = scenario::replay_expecting(
                    &scenario,
                    &options.variant,
                    scenario.expected_for("manifest"),
                );
                if !result.passed {
                    failed.push(file.display().to_string());
                }
                results.push(json!({ "file": file.display().to_string(), "result": result }));
            }
            Err(e) => {
                failed.push(file.display().to_string());
                results.push(json!({ "file": file.display().to_string(), "error": e }));
            }
        }
    }
    let passed = failed.is_empty() && any_files;
    let summary = if !any_files {
        format!("no scenario files in {}", options.scenarios_dir.display())
    } else {
        format!("{} scenarios, {} failed", files.len(), failed.len())
    };
    progress.done(&summary);
    let mut report = stage(
        "replay",
        started,
        passed,
        summary,
        json!({ "scenarios": files.len(), "failed": failed, "results": results }),
    );
    if let Some(first) = report
        .details
        .get("failed")
        .and_then(|f| f.get(0))
        .and_then(Value::as_str)
    {
        report.replay_command = Some(format!(
            "seglog replay --variant {} {first}",
            options.variant
        ));
    }
    with_units(report, options, units)
}

pub fn fuzz(options: &VerifyOptions, progress: &mut Progress) -> StageReport {
    let started = Instant::now();
    let targets = [
        "decode_batch",
        "decode_compressed",
        "open_dir",
        "ops_vs_model",
        "crash_recovery",
        "append_batches",
    ];
    progress.start("fuzz", targets.len() as u64);
    let mut results = Vec::new();
    let mut passed = true;
    let mut units = Vec::new();
    for (i, target) in targets.iter().enumerate() {
        if !shard(options).owns(i as u64) {
            continue;
        }
        units.push((*target).to_string());
        progress.set(i as u64, targets.len() as u64, target);
        let status = std::process::Command::new("cargo")
            .args(["fuzz", "run", "-s", "none", target, "--"])
            .arg(format!("-max_total_time={}", options.fuzz_seconds))
            .current_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz"))
            .status();
        let ok = matches!(&status, Ok(s) if s.success());
        passed &= ok;
        results.push(json!({
            "target": target,
            "passed": ok,
            "error": status.err().map(|e| format!("cannot run cargo fuzz ({e}); install it with `cargo install cargo-fuzz`")),
        }));
    }
    let summary = format!(
        "{} targets x {}s, {} failed",
        units.len(),
        options.fuzz_seconds,
        results
            .iter()
            .filter(|r| r["passed"] == json!(false))
            .count()
    );
    progress.done(&summary);
    let mut report = stage(
        "fuzz",
        started,
        passed,
        summary,
        json!({ "targets": results }),
    );
    if !passed {
        report.replay_command = Some("ls fuzz/artifacts/*/ and see fuzz/README.md".into());
    }
    with_units(report, options, units)
}

/// Apache Kafka's own storage classes against seglog, both directions
/// (`crate::interop`). Skipped, and reported so with the reason, at the quick
/// budget or where `java` or `mvn` is missing; passes while cases not yet required
/// fail (they are counted as `pending`).
pub fn kafka_interop(options: &VerifyOptions, progress: &mut Progress) -> StageReport {
    let started = Instant::now();
    progress.start("kafka_interop", 1);
    // One unit: the first shard runs it.
    let owned = shard(options).owns(0);
    let report = if options.kafka_interop && owned {
        crate::interop::run(&crate::interop::InteropOptions {
            cases: options.kafka_cases.clone(),
            required: options.kafka_required.clone(),
        })
    } else {
        crate::interop::InteropReport {
            skipped: Some(if owned {
                "quick budget (`--budget standard` or `--kafka-interop` runs it)".into()
            } else {
                not_this_shard(options)
            }),
            ..Default::default()
        }
    };
    let summary = match &report.skipped {
        Some(reason) => format!("skipped: {reason}"),
        None => {
            let pending: Vec<String> = report
                .cases
                .iter()
                .filter(|c| c.status == crate::interop::CaseStatus::Pending)
                .map(|c| c.case.clone())
                .collect();
            format!(
                "{} cases passed, {} failed, {} pending{}",
                report.cases_passed,
                report.cases_failed,
                report.cases_pending,
                if pending.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", pending.join(", "))
                }
            )
        }
    };
    progress.done(&summary);
    single_unit(
        options,
        "kafka_interop",
        started,
        report.cases_failed == 0,
        summary,
        serde_json::to_value(&report).unwrap_or(Value::Null),
        None,
    )
}

/// Mutation testing (overnight): cargo-mutants over the engine with the unit tests
/// and the quick gate as the test command (`super::mutants`), and the score.
/// Fails when a mutant survives; skipped, with the reason, without cargo-mutants.
pub fn mutants(options: &VerifyOptions, progress: &mut Progress) -> StageReport {
    let started = Instant::now();
    progress.start("mutants", 1);
    let owned = shard(options).owns(0);
    let report = if owned {
        super::mutants::run(std::path::Path::new(env!("CARGO_MANIFEST_DIR")))
    } else {
        super::mutants::MutantsReport {
            skipped: Some(not_this_shard(options)),
            ..Default::default()
        }
    };
    let summary = match &report.skipped {
        Some(reason) => format!("skipped: {reason}"),
        None => format!(
            "score {}: {} caught, {} timeouts, {} unviable, {} survivors",
            report
                .measured_score()
                .map_or_else(|| "-".to_string(), |s| format!("{:.1}%", 100.0 * s)),
            report.caught,
            report.timeouts,
            report.unviable,
            report.survivors.len()
        ),
    };
    progress.done(&summary);
    single_unit(
        options,
        "mutants",
        started,
        report.survivors.is_empty(),
        summary,
        serde_json::to_value(&report).unwrap_or(Value::Null),
        Some(report.command.clone()),
    )
}

/// The shuttle tests with the budget's schedules (standard and overnight;
/// `super::schedules`): fails when a test fails or the build does; skipped, with
/// the reason, at the quick budget or without a checkout and cargo.
pub fn schedules(options: &VerifyOptions, progress: &mut Progress) -> StageReport {
    let started = Instant::now();
    progress.start("schedules", 1);
    let owned = shard(options).owns(0);
    let report = if !owned {
        super::schedules::SchedulesReport {
            skipped: Some(not_this_shard(options)),
            ..Default::default()
        }
    } else if options.shuttle_iterations == 0 {
        super::schedules::SchedulesReport {
            skipped: Some(
                "quick budget (`--budget standard` or `--shuttle-iterations N` runs it)".into(),
            ),
            ..Default::default()
        }
    } else {
        super::schedules::run(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
            options.shuttle_iterations,
        )
    };
    let summary = match (&report.skipped, &report.error) {
        (Some(reason), _) => format!("skipped: {reason}"),
        (None, Some(error)) => format!("error: {}", error.lines().next().unwrap_or("")),
        (None, None) => format!(
            "{} schedules, {} tests, {} failed",
            report.schedules,
            report.tests.len(),
            report.failures.len()
        ),
    };
    progress.done(&summary);
    single_unit(
        options,
        "schedules",
        started,
        report.passed(),
        summary,
        serde_json::to_value(&report).unwrap_or(Value::Null),
        Some(report.command.clone()),
    )
}

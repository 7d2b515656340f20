//! Kafka 4.4's own log layer recorded for the crash explorer
//! (`seglog_suite::interop::crash`): the harness's `crash-workload` (appends,
//! explicit flushes with the log manager's checkpoints, a roll, a `Cleaner` round
//! with its segment swap, size retention, close) runs under `strace -f`, and its
//! file-system calls on the workload's directory are parsed as a JVM's.
//!
//! Invariants checked:
//! * the recording is faithful: replayed crash-free on `SimFs` from the empty
//!   directory, the calls give the directory Kafka left: the same directories and
//!   file names, every `.log`, checkpoint and producer snapshot byte for byte, the
//!   memory-mapped indexes by length;
//! * the check has teeth: the same recording with one `.log` write left out does
//!   not compare equal;
//! * every acknowledgment of the workload is in the trace, once and in order (its
//!   marker call), and the trace holds the calls the workload must make (writes,
//!   fsyncs, the cleaner's and retention's renames and unlinks, index maps).
//!
//! A smoke of the loading half follows: the crash-free final image and a few
//! power-loss images after trace prefixes, loaded by Kafka (`crash-load`); what it
//! serves from each is printed, and the final image must serve the log start and
//! end offsets the workload acknowledged at close.
//!
//! The crash explorer over the recording (`crash::explore`): every power-loss image
//! `SimFs` gives at every crash point of the trace, under the any-subset and the
//! ordered-metadata persistence models, deduplicated per model, loaded by Kafka
//! (one `crash-load` JVM per model) and held to the oracle (`crash::oracle`):
//! * Kafka's own workload: at least 1,000 distinct images per model are judged;
//!   each image with findings is written as a case file under
//!   `kafka-crash-cases/normal/` of cargo's `CARGO_TARGET_TMPDIR` and printed (a finding of Kafka's is a
//!   result, reported, not a failure of the test), and each case rebuilds from
//!   its crash point and lost items to the image it holds;
//! * teeth: the `no-flush` variant, whose flush steps acknowledge without
//!   flushing, gives findings (lost acknowledged records) under both models.
//!
//! The report (`seglog kafka-crash --html --cases`): both systems under both
//! models in its table, seglog's side of the same workload's shape (its binary
//! under strace, its engine in one process) without findings, and every Kafka
//! case file laid open on the page with the calls its power loss took marked lost,
//! and replayed from its file alone (`--replay`: rebuilt from the workload
//! recorded again, loaded by Kafka, the same findings); a case whose lost items
//! are taken away does not replay.
//!
//! docs/kafka-crash-states.md's table of results is what the runs measure: the
//! report's rows (both systems, both models) and the teeth variant's.
//!
//! Needs `java` (17), `mvn` and `strace`; without them the test says so and passes,
//! unless `SEGLOG_REQUIRE_KAFKA_INTEROP=1` (CI sets it) makes that a failure.

use std::path::Path;

use seglog::fs::sim::CrashMode;
use seglog_suite::alice::strace::SysCall;
use seglog_suite::alice::{default_scratch, strace_available};
use seglog_suite::interop::crash::{self, explore, oracle::FindingKind};
use seglog_suite::interop::harness::{self, Harness};
use seglog_suite::scenario::timeline::OpFate;

/// Why the recording cannot run here, if it cannot.
fn unavailable() -> Option<String> {
    harness::unavailable().or_else(|| {
        (!strace_available(Path::new("strace"))).then(|| "`strace` is not on the PATH".into())
    })
}

/// True (after saying why) when the test cannot run here and may skip.
fn skipped(name: &str) -> bool {
    let Some(reason) = unavailable() else {
        return false;
    };
    assert!(
        std::env::var("SEGLOG_REQUIRE_KAFKA_INTEROP").as_deref() != Ok("1"),
        "{name} was required but skipped: {reason}"
    );
    eprintln!("{name} skipped: {reason}");
    true
}

/// One row of docs/kafka-crash-states.md's table of results: variant, system,
/// model, then crash points, distinct images, judgments and findings (`None`:
/// `-`, not counted).
type DocRow = (String, String, String, [Option<u64>; 4]);

/// The table of results docs/kafka-crash-states.md states.
fn documented_rows() -> Vec<DocRow> {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/kafka-crash-states.md"),
    )
    .expect("docs/kafka-crash-states.md");
    doc.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line
                .trim()
                .strip_prefix('|')?
                .strip_suffix('|')?
                .split('|')
                .map(str::trim)
                .collect();
            if cells.len() != 7 || !crash::VARIANTS.contains(&cells[0]) {
                return None;
            }
            let number = |cell: &str| -> Option<u64> {
                (cell != "-").then(|| cell.replace(',', "").parse().expect("a number or -"))
            };
            Some((
                cells[0].to_string(),
                cells[1].to_string(),
                cells[2].to_string(),
                [
                    number(cells[3]),
                    number(cells[4]),
                    number(cells[5]),
                    number(cells[6]),
                ],
            ))
        })
        .collect()
}

/// Checks that the document states exactly `measured` for `variant` (rows of
/// [`DocRow`] without the variant, in any order).
fn the_document_states(variant: &str, measured: &[(String, String, [Option<u64>; 4])]) {
    let mut stated: Vec<_> = documented_rows()
        .into_iter()
        .filter(|(v, ..)| v == variant)
        .map(|(_, system, model, numbers)| (system, model, numbers))
        .collect();
    let mut measured = measured.to_vec();
    stated.sort();
    measured.sort();
    assert_eq!(
        stated, measured,
        "docs/kafka-crash-states.md's table for {variant} is not what this run measured"
    );
}

/// The documented row of a Kafka model report.
fn kafka_row(r: &explore::ModelReport) -> (String, String, [Option<u64>; 4]) {
    (
        "Kafka 4.4".into(),
        r.model.clone(),
        [
            Some(r.crash_points),
            Some(r.images),
            Some(r.judgments),
            Some(r.findings),
        ],
    )
}

/// Records `variant`, explores its images under both models, prints the table and
/// every case, and writes the cases under `CARGO_TARGET_TMPDIR/kafka-crash-cases/VARIANT/`.
fn explored(variant: &str) -> Vec<explore::ModelReport> {
    let harness = Harness::build().expect("the harness builds");
    let recording =
        crash::record_variant(&harness, Path::new("strace"), &default_scratch(), variant)
            .expect("recorded");
    recording
        .fidelity()
        .expect("the replay gives Kafka's directory");
    let reports = explore::explore(&harness, &recording, &explore::ExploreOptions::default())
        .expect("the images load and are judged");
    for r in &reports {
        eprintln!(
            "{variant} {}: {} crash points, {} distinct images loaded, {} judgments, {} absent, {} load errors, {} with findings {:?}",
            r.model, r.crash_points, r.images, r.judgments, r.absent, r.errors, r.findings, r.by_kind
        );
        for case in &r.cases {
            eprintln!(
                "  {} [{}] crash point {} after {:?}, lost {:?}: {:?}",
                case.model,
                case.class,
                case.crash_point,
                case.last_marker,
                case.lost,
                case.findings.iter().map(|f| &f.detail).collect::<Vec<_>>()
            );
        }
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("kafka-crash-cases")
        .join(variant);
    let written = explore::write_cases(&reports, &dir).expect("the cases are written");
    eprintln!("{} case files in {}", written.len(), dir.display());
    // Each case rebuilds from its crash point and lost items; without them, not.
    // Its timeline marks a call lost for each directory operation the loss took.
    for case in reports.iter().flat_map(|r| &r.cases) {
        explore::rebuild(&recording, case).expect("the case replays");
        let timeline = crash::timeline::case_timeline(&recording, case).expect("its timeline");
        let lost_rows = timeline
            .iter()
            .filter(|row| matches!(row.fate, OpFate::Lost(_)))
            .count();
        let lost_dir_ops = case.lost.iter().filter(|l| l.starts_with("dir-op")).count();
        assert!(
            lost_rows >= lost_dir_ops && (case.lost.is_empty() || lost_rows > 0),
            "crash point {}: {lost_rows} calls marked lost for {:?}",
            case.crash_point,
            case.lost
        );
        if !case.lost.is_empty() {
            let mut nothing_lost = case.clone();
            nothing_lost.lost.clear();
            assert!(explore::rebuild(&recording, &nothing_lost).is_err());
        }
    }
    reports
}

#[test]
#[ignore = "nightly tier (.ci/nightly): traces Kafka 4.4 and loads thousands of its crash images"]
fn kafkas_crash_images_are_judged_under_both_persistence_models() {
    if skipped("the Kafka crash explorer") {
        return;
    }
    let reports = explored("normal");
    assert_eq!(reports.len(), 2);
    for r in &reports {
        assert!(
            r.images >= 1000,
            "{}: only {} distinct images",
            r.model,
            r.images
        );
        // Every finding is kept as a case, classed by model.
        assert_eq!(r.cases.len() as u64, r.findings);
        assert!(r.cases.iter().all(|c| !c.class.is_empty()));
    }
}

#[test]
#[ignore = "nightly tier (.ci/nightly): traces Kafka 4.4 and loads thousands of its crash images"]
fn a_workload_acknowledging_flushes_it_skips_is_caught() {
    if skipped("the Kafka crash explorer's teeth") {
        return;
    }
    let reports = explored("no-flush");
    the_document_states(
        "no-flush",
        &reports.iter().map(kafka_row).collect::<Vec<_>>(),
    );
    for r in &reports {
        assert!(
            r.by_kind.get("loss").is_some_and(|&n| n > 0),
            "{}: acknowledged unflushed records are never lost: {:?}",
            r.model,
            r.by_kind
        );
        assert!(r
            .cases
            .iter()
            .any(|c| c.findings.iter().any(|f| f.kind == FindingKind::Loss)));
    }
}

#[test]
#[ignore = "nightly tier (.ci/nightly): builds the Java harness and traces Kafka 4.4 under strace"]
fn kafkas_traced_calls_replay_to_the_directory_it_left() {
    if let Some(reason) = unavailable() {
        assert!(
            std::env::var("SEGLOG_REQUIRE_KAFKA_INTEROP").as_deref() != Ok("1"),
            "the Kafka crash recording was required but skipped: {reason}"
        );
        eprintln!("kafka_crash_recording skipped: {reason}");
        return;
    }
    let harness = Harness::build().expect("the harness builds");
    let mut recording =
        crash::record(&harness, Path::new("strace"), &default_scratch()).expect("recorded");
    let counts = recording.counts();
    eprintln!(
        "trace: {} lines, {} calls on the directory: {counts:?}",
        recording.trace_lines,
        recording.calls.len()
    );

    let fidelity = recording
        .fidelity()
        .expect("the replay gives Kafka's directory");
    eprintln!("fidelity: {fidelity:?}");
    assert!(fidelity.files_identical > 0);
    assert!(fidelity.indexes_by_length > 0);

    // Every acknowledgment's marker, once and in order.
    let steps = recording.acks["steps"].as_array().expect("acks list steps");
    let want: Vec<&str> = steps
        .iter()
        .map(|s| s["marker"].as_str().expect("a step names its marker"))
        .collect();
    let got: Vec<String> = recording.markers().into_iter().map(|(_, m)| m).collect();
    assert_eq!(got, want);
    for kind in [
        "write", "fsync", "rename", "unlink", "truncate", "mmap", "munmap",
    ] {
        assert!(
            counts.get(kind).is_some_and(|&n| n > 0),
            "no {kind} in {counts:?}"
        );
    }

    // A first load by Kafka: the crash-free final image, and the first power-loss
    // images after a few acknowledgments and in the middle of the cleaner round.
    let markers = recording.markers();
    let at = |what: &str| {
        markers
            .iter()
            .find(|(_, m)| m.ends_with(what))
            .map(|&(i, _)| i)
            .expect("the workload acknowledges it")
    };
    let (roll, clean) = (at("-9-roll"), at("-10-clean"));
    let mut cuts = vec![at("-3-flush") + 1, (roll + clean) / 2, clean + 1];
    cuts.push(at("-11-retain") + 1);
    let mut images = vec![recording.replayed(recording.calls.len()).expect("replays")];
    for &k in &cuts {
        let state = recording.replayed(k).expect("replays");
        images.extend(
            state
                .crash_images(CrashMode::PowerLoss, 3)
                .into_iter()
                .map(|c| c.fs),
        );
    }
    let loaded = crash::load(&harness, &images, recording.scratch()).expect("crash-load runs");
    for (i, image) in loaded.iter().enumerate() {
        let records = image["records"].as_array().map_or(0, Vec::len);
        eprintln!(
            "image {i}: start {} end {} recovery point {} records {records} segments {} error {}",
            image["log_start_offset"],
            image["log_end_offset"],
            image["recovery_point"],
            image["segments"],
            image["error"]
        );
    }
    // The crash-free final image serves what the workload acknowledged at close.
    let close = steps.last().expect("a close step");
    assert_eq!(close["what"], "close");
    assert_eq!(loaded[0]["log_start_offset"], close["log_start_offset"]);
    assert_eq!(loaded[0]["log_end_offset"], close["log_end_offset"]);

    // Teeth: without the last write to a segment file the replay is not Kafka's.
    let last_log_write = recording
        .calls
        .iter()
        .rposition(|c| matches!(c, SysCall::Write { path, .. } if path.extension().is_some_and(|e| e == "log")))
        .expect("a .log write");
    recording.calls.remove(last_log_write);
    assert!(recording.fidelity().is_err());
}

#[test]
#[ignore = "nightly tier (.ci/nightly): traces Kafka 4.4 and seglog, and judges every crash image of both"]
fn the_report_puts_seglog_beside_kafka_and_lays_every_case_open() {
    if skipped("the Kafka crash report") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let html = tmp.path().join("report.html");
    let cases = tmp.path().join("cases");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_seglog"))
        .arg("kafka-crash")
        .arg("--html")
        .arg(&html)
        .arg("--cases")
        .arg(&cases)
        .output()
        .expect("run seglog kafka-crash");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON ({e}): {stderr}"));
    // Kafka's pessimistic-only findings make the exit 1; an error would be 2.
    let kafka_findings = report["kafka_findings"].as_u64().unwrap();
    assert_eq!(
        out.status.code(),
        Some(if kafka_findings > 0 { 1 } else { 0 })
    );
    assert_eq!(report["seglog_violations"], 0, "{report:#}");
    let models = |rows: &serde_json::Value| -> Vec<String> {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| r["model"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        models(&report["models"]),
        ["any-subset", "ordered-metadata"]
    );
    assert_eq!(
        models(&report["seglog"]),
        ["any-subset", "ordered-metadata"]
    );
    for row in report["seglog"].as_array().unwrap() {
        assert!(row["binary"]["images"].as_u64().unwrap() > 100, "{row}");
        assert!(
            row["in_process"]["disk_images"].as_u64().unwrap() > 1000,
            "{row}"
        );
    }
    let n = |v: &serde_json::Value| Some(v.as_u64().expect("a count"));
    let mut measured = Vec::new();
    for row in report["models"].as_array().unwrap() {
        let model = row["model"].as_str().unwrap().to_string();
        measured.push((
            "Kafka 4.4".to_string(),
            model,
            [
                n(&row["crash_points"]),
                n(&row["images"]),
                n(&row["judgments"]),
                n(&row["findings"]),
            ],
        ));
    }
    for row in report["seglog"].as_array().unwrap() {
        let model = row["model"].as_str().unwrap().to_string();
        let (binary, in_process) = (&row["binary"], &row["in_process"]);
        measured.push((
            "seglog binary".to_string(),
            model.clone(),
            [
                n(&binary["crash_points"]),
                n(&binary["images"]),
                n(&binary["images"]),
                n(&binary["findings"]),
            ],
        ));
        measured.push((
            "seglog in-process".to_string(),
            model,
            [
                n(&in_process["crash_points"]),
                None,
                n(&in_process["disk_images"]),
                n(&in_process["findings"]),
            ],
        ));
    }
    the_document_states("normal", &measured);
    let page = std::fs::read_to_string(&html).unwrap();
    let files = report["case_files"].as_array().unwrap();
    assert_eq!(files.len() as u64, kafka_findings);
    for file in files {
        let name = file.as_str().unwrap();
        assert!(page.contains(name), "{name} is not on the page");
    }
    assert_eq!(
        page.matches("<section id=\"failure-").count(),
        files.len(),
        "one section per case"
    );
    if !files.is_empty() {
        assert!(page.contains("<tr class=\"lost\">"));
        assert!(page.contains("<tr class=\"differs\">"));
    }
    for row in [
        "kafka, any-subset",
        "seglog binary, ordered-metadata",
        "seglog in-process, any-subset",
    ] {
        assert!(page.contains(row), "{row} is not in the summary");
    }
}

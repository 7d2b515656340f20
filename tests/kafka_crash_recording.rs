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
//! Needs `java` (17), `mvn` and `strace`; without them the test says so and passes,
//! unless `SEGLOG_REQUIRE_KAFKA_INTEROP=1` (CI sets it) makes that a failure.

use std::path::Path;

use seglog::fs::sim::CrashMode;
use seglog_suite::alice::strace::SysCall;
use seglog_suite::alice::{default_scratch, strace_available};
use seglog_suite::interop::crash::{self, explore, oracle::FindingKind};
use seglog_suite::interop::harness::{self, Harness};

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
    for case in reports.iter().flat_map(|r| &r.cases) {
        explore::rebuild(&recording, case).expect("the case replays");
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

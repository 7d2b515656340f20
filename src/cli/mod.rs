//! The `seglog` command line: a thin layer over the library.
//!
//! Every command prints one JSON object on stdout (`--pretty` to indent it).
//! Exit codes: 0 ok, 1 a check failed, 2 bad usage or an error (one line on stderr),
//! 3 `bench --compare` found a row slower than the other build's.
//!
//! To add commands: put their clap `Args` and their `run` functions in a file of
//! their own (like [`log_cmds`]), add a variant to [`Command`] and a line to
//! [`dispatch`].

pub mod alice_cmd;
pub mod bench_cmd;
pub mod bench_compare_cmd;
pub mod bench_kafka_cmd;
pub mod cleanup_cmds;
pub mod damage_cmd;
pub mod kafka_crash_cmd;
pub mod log_cmds;
pub mod model_cmd;
pub mod replay_cmd;
pub mod soak_cmd;
pub mod sweep_cmd;
pub mod verify_cmd;

use clap::{Parser, Subcommand};

/// What a command produced.
#[derive(Debug)]
pub enum Outcome {
    /// Success: printed, exit 0.
    Ok(serde_json::Value),
    /// A check ran and failed: printed, exit 1.
    CheckFailed(serde_json::Value),
    /// The command printed its own report (`verify`): exit 0 if it passed, else 1.
    Printed { passed: bool },
    /// The command printed its own report (`bench --compare`) and a row is slower
    /// than the other build's: exit [`EXIT_SLOWER`].
    PrintedSlower,
}

pub const EXIT_OK: i32 = 0;
pub const EXIT_CHECK_FAILED: i32 = 1;
pub const EXIT_ERROR: i32 = 2;
/// `bench --compare`: a row of this build is slower than the other build's.
pub const EXIT_SLOWER: i32 = 3;

#[derive(Debug, Parser)]
#[command(
    name = "seglog",
    version,
    about = "A Kafka-format partition log engine"
)]
pub struct Cli {
    /// Indent the JSON output.
    #[arg(long, global = true)]
    pub pretty: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Append one batch (--batch) or one batch per line (--batch-file), then flush.
    Append(log_cmds::AppendArgs),
    /// Roll the active segment.
    Roll(log_cmds::LogArgs),
    /// Print the segments and the records (read-only).
    Dump(log_cmds::DumpArgs),
    /// Open the log, running recovery, and print the recovery report
    /// (`install.case` names the install protocol's row that applied).
    Recover(log_cmds::LogArgs),
    /// Delete expired closed segments (time, then size), checkpoint first.
    Retain(cleanup_cmds::RetainArgs),
    /// Compact the closed segments by key and install the result crash-safely.
    Compact(cleanup_cmds::CompactArgs),
    /// List every fail point name.
    Failpoints,
    /// Check the stateright models of the protocols, or explore one in a browser (`seglog model check --help` lists them).
    #[command(subcommand)]
    Model(seglog_model::cli::ModelCommand),
    /// Replay crash scenarios (crash-scenarios/*.toml) on the simulated file system; exit 1 on a failure.
    Replay(replay_cmd::ReplayArgs),
    /// Crash before every file-system operation of the named workloads, recover every disk image.
    Sweep(sweep_cmd::SweepArgs),
    /// Crash states from the real binary's system calls (strace), as ALICE builds
    /// them: every prefix of each command's trace with the losses a power loss
    /// allows, laid out on the real disk, recovered by the binary, judged exactly.
    Alice(alice_cmd::AliceArgs),
    /// Kafka's own log layer traced (strace) through a scripted workload: every
    /// power-loss image of its trace under each persistence model loaded by Kafka
    /// and held to the workload's acknowledgments, beside seglog on the same
    /// workload under the same models (needs java, mvn and strace;
    /// docs/kafka-crash-states.md).
    KafkaCrash(kafka_crash_cmd::KafkaCrashArgs),
    /// Flip bits, truncate and zero ranges in every file of the named workloads' logs
    /// (end state and protocol crash points), open each image, check the outcome.
    Damage(damage_cmd::DamageArgs),
    /// Throughput beside plain buffered IO measured in the same run (append, every
    /// read path), as JSON ratios; progress on stderr.
    Bench(bench_cmd::BenchArgs),
    /// The main job: model checks, conformance, crash sweep, scenario replay (and fuzzing
    /// overnight), with a report at a glance and `--json FILE` for machines.
    Verify(verify_cmd::VerifyArgs),
    /// Producers, consumers, the cleaner and retention threads of a LogManager on
    /// the real disk for --seconds; with --kill a child process is SIGKILLed at
    /// random moments, reopened and checked against what it acknowledged.
    Soak(soak_cmd::SoakArgs),
    /// The soak's child process (run by `seglog soak --kill`).
    #[command(hide = true)]
    SoakChild(soak_cmd::SoakChildArgs),
}

/// The environment variable that turns the seam's trace on: the log commands
/// (`append`, `roll`, `recover`, `retain`, `compact`) record every mutating
/// [`FileSystem`](seglog::fs::FileSystem) call they make on the real disk
/// ([`TraceFs`](seglog::fs::TraceFs) over [`StdFs`](seglog::fs::StdFs)) and write
/// them to this file as a JSON array when the command ends (tests/seam_fidelity.rs
/// holds the binary's system calls to it).
pub const TRACE_FS_ENV: &str = "SEGLOG_TRACE_FS";

static TRACE: std::sync::OnceLock<std::sync::Arc<seglog::fs::TraceFs>> = std::sync::OnceLock::new();

/// The file system the log commands use: the real disk, keeping at most
/// `open_files_max` handles open (`--max-open-files`), traced when
/// [`TRACE_FS_ENV`] is set.
pub fn seam(open_files_max: usize) -> std::sync::Arc<dyn seglog::fs::FileSystem> {
    let disk = || seglog::fs::StdFs::with_open_files_max(open_files_max);
    if std::env::var_os(TRACE_FS_ENV).is_some() {
        let traced = TRACE.get_or_init(|| {
            std::sync::Arc::new(seglog::fs::TraceFs::new(std::sync::Arc::new(disk())))
        });
        return traced.clone();
    }
    std::sync::Arc::new(disk())
}

/// Writes the seam's trace to the file [`TRACE_FS_ENV`] names, if it is set.
fn write_trace() {
    use seglog::fs::FileSystem;
    let (Some(path), Some(traced)) = (std::env::var_os(TRACE_FS_ENV), TRACE.get()) else {
        return;
    };
    let text = serde_json::to_string(&traced.ops()).unwrap_or_default();
    let path = std::path::PathBuf::from(path);
    if let Err(e) = seglog::fs::StdFs::new().write_new(&path, text.as_bytes()) {
        eprintln!("seglog: cannot write the trace to {}: {e}", path.display());
    }
}

/// Refuses a log directory that is not there, for every command but `append`
/// (which creates a log): a mistyped path is an error naming it, and nothing is
/// created. A directory missing after a crash mid-install, with its temp dir,
/// backup or manifest beside it, is a log (the open's install recovery finishes
/// it).
pub(crate) fn require_log(dir: &std::path::Path) -> seglog::Result<()> {
    use seglog::fs::FileSystem;
    let fs = seglog::fs::StdFs::new();
    let resolved = fs
        .canonicalize(dir)
        .map_err(|e| seglog::Error::io(dir, e))?;
    let paths = seglog::install::InstallPaths::new(&resolved)?;
    let any = [&paths.live, &paths.tmp, &paths.backup, &paths.manifest]
        .into_iter()
        .any(|p| fs.exists(p));
    if !any {
        return Err(seglog::Error::InvalidArgument(format!(
            "no log at {}",
            dir.display()
        )));
    }
    Ok(())
}

/// Runs one parsed command.
pub fn dispatch(command: Command) -> seglog::Result<Outcome> {
    match command {
        Command::Append(args) => log_cmds::append(args),
        Command::Roll(args) => log_cmds::roll(args),
        Command::Dump(args) => log_cmds::dump(args),
        Command::Recover(args) => log_cmds::recover(args),
        Command::Retain(args) => cleanup_cmds::retain(args),
        Command::Compact(args) => cleanup_cmds::compact(args),
        Command::Failpoints => Ok(log_cmds::failpoints()),
        Command::Model(command) => model_cmd::model(command),
        Command::Replay(args) => replay_cmd::replay(args),
        Command::Sweep(args) => sweep_cmd::sweep(args),
        Command::Verify(args) => verify_cmd::verify(args),
        Command::Bench(args) => match args.compare.clone() {
            Some(other) => bench_compare_cmd::compare(&args, &other),
            None if args.kafka => bench_kafka_cmd::kafka(&args),
            None => bench_cmd::bench(args),
        },
        Command::Damage(args) => damage_cmd::damage(args),
        Command::Alice(args) => alice_cmd::alice(args),
        Command::KafkaCrash(args) => kafka_crash_cmd::kafka_crash(args),
        Command::Soak(args) => soak_cmd::soak(args),
        Command::SoakChild(args) => soak_cmd::soak_child(args),
    }
}

/// Parses `args`, runs the command, prints its output; returns the exit code.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                print!("{e}");
                return EXIT_OK;
            }
            eprintln!("seglog: {}", usage_error_line(&e.to_string()));
            return EXIT_ERROR;
        }
    };
    let outcome = dispatch(cli.command);
    write_trace();
    let (value, code) = match outcome {
        Ok(Outcome::Ok(value)) => (value, EXIT_OK),
        Ok(Outcome::CheckFailed(value)) => (value, EXIT_CHECK_FAILED),
        Ok(Outcome::Printed { passed }) => {
            return if passed { EXIT_OK } else { EXIT_CHECK_FAILED };
        }
        Ok(Outcome::PrintedSlower) => return EXIT_SLOWER,
        Err(e) => {
            eprintln!("seglog: {e}");
            return EXIT_ERROR;
        }
    };
    let text = if cli.pretty {
        serde_json::to_string_pretty(&value)
    } else {
        serde_json::to_string(&value)
    };
    match text {
        Ok(text) => {
            println!("{text}");
            code
        }
        Err(e) => {
            eprintln!("seglog: cannot print output: {e}");
            EXIT_ERROR
        }
    }
}

/// clap's message without its usage block, on one line.
fn usage_error_line(rendered: &str) -> String {
    let parts: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = parts.join(" ");
    line.trim_start_matches("error: ").to_string()
}

/// The binary's entry point.
pub fn main() {
    #[cfg(feature = "failpoints")]
    let scenario = fail::FailScenario::setup();
    let code = run(std::env::args_os());
    #[cfg(feature = "failpoints")]
    scenario.teardown();
    std::process::exit(code);
}

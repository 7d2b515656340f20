//! `seglog-model check|explore`: the same subcommands as `seglog model`, runnable from
//! this crate alone (`cargo run -p seglog-model -- check --model install`).

use clap::Parser;
use seglog_model::check;
use seglog_model::cli::{self, ModelCommand};

#[derive(Parser)]
#[command(name = "seglog-model", about = "Check seglog's stateright models")]
struct Cli {
    #[command(subcommand)]
    command: ModelCommand,
    /// Also write the first counterexample's actions (JSON) to this file.
    #[arg(long, global = true)]
    trace_out: Option<std::path::PathBuf>,
}

fn main() {
    let cli = Cli::parse();
    let (ModelCommand::Check(args), Some(path)) = (&cli.command, &cli.trace_out) else {
        std::process::exit(cli::run(&cli.command));
    };
    let report = match check::try_run(&args.options()) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&report).expect("report serializes")
    );
    if let Some(json) = cli::scenario_json(&report) {
        // Tooling output, not engine IO: the FileSystem seam rule covers src/.
        if let Err(e) = std::fs::write(path, json) {
            eprintln!("error: cannot write {}: {e}", path.display());
            std::process::exit(2);
        }
    }
    std::process::exit(i32::from(!report.ok()));
}

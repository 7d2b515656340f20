//! `seglog model check|explore`: the stateright models of `seglog-model`.

use seglog_model::check;
use seglog_model::cli::ModelCommand;

use super::Outcome;
use seglog::{Error, Result};

/// Runs a model subcommand. `check` prints the report (exit 1 on a violation);
/// `explore` serves the Explorer and does not return.
pub fn model(command: ModelCommand) -> Result<Outcome> {
    match command {
        ModelCommand::Check(args) => {
            let report = check::try_run(&args.options())
                .map_err(|e| Error::InvalidArgument(e.to_string()))?;
            let ok = report.ok();
            let value =
                serde_json::to_value(&report).map_err(|e| Error::InvalidArgument(e.to_string()))?;
            Ok(if ok {
                Outcome::Ok(value)
            } else {
                Outcome::CheckFailed(value)
            })
        }
        ModelCommand::Explore(args) => {
            eprintln!(
                "seglog: serving the stateright Explorer on http://{}/ (Ctrl-C to stop)",
                args.addr
            );
            let options = check::CheckOptions {
                model: args.target.model,
                variant: args.target.variant,
                depth: None,
                records: None,
            };
            check::explore(&options, &args.addr)
                .map_err(|e| Error::InvalidArgument(e.to_string()))?;
            Ok(Outcome::Ok(serde_json::json!({})))
        }
    }
}

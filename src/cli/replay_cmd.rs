//! `seglog replay FILE...`: replay crash scenarios on the simulated file system.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::Outcome;
use crate::fs::StdFs;
use crate::scenario::{self, load, scenario_paths};
use crate::Result;

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Scenario files (TOML), or directories of them.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Replay against this protocol variant instead of the scenario's own (the broken
    /// variants need a build with `--features test-variants`).
    #[arg(long)]
    pub variant: Option<String>,
    /// Do not replay: list the power-loss images possible at each scenario's crash
    /// point (as `lost` lists), to write a power-loss scenario.
    #[arg(long)]
    pub list_images: bool,
}

pub fn replay(args: ReplayArgs) -> Result<Outcome> {
    let fs = StdFs::new();
    let paths = scenario_paths(&fs, &args.files)?;
    let mut results = Vec::new();
    let mut failed = 0;
    for path in &paths {
        let scenario = load(&fs, path).map_err(crate::Error::InvalidArgument)?;
        if args.list_images {
            let variant = args.variant.as_deref().unwrap_or(&scenario.variant);
            let images = scenario::replay::crash_point_images(&scenario, variant, 256)
                .map_err(crate::Error::InvalidArgument)?;
            results.push(json!({ "file": path.display().to_string(), "images": images }));
            continue;
        }
        let result = scenario::replay(&scenario, args.variant.as_deref());
        if result.passed {
            eprintln!(
                "PASS {} ({}: expected {:?}, got {})",
                path.display(),
                result.variant,
                result.expected,
                result.actual
            );
        } else {
            failed += 1;
            eprintln!(
                "FAIL {} ({}: expected {:?}, got {})",
                path.display(),
                result.variant,
                result.expected,
                result.actual
            );
            for line in &result.diff {
                eprintln!("    {line}");
            }
        }
        results.push(json!({ "file": path.display().to_string(), "result": result }));
    }
    let value = json!({
        "scenarios": results,
        "passed": paths.len() - failed,
        "failed": failed,
    });
    Ok(if failed == 0 {
        Outcome::Ok(value)
    } else {
        Outcome::CheckFailed(value)
    })
}

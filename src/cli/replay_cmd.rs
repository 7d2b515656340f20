//! `seglog replay FILE...`: replay crash scenarios on the simulated file system.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::Outcome;
use crate::scenario::{self, load, scenario_paths};
use crate::scenario::{inspect, ReplayResult, Scenario};
use crate::verify::html::{page, PageFailure, PageStage};
use seglog::fs::StdFs;
use seglog::Result;

/// The page's section for one scenario: laid open, or why it could not be.
pub(super) fn failure_page(
    scenario: &Scenario,
    variant: Option<&str>,
    path: &std::path::Path,
    result: &ReplayResult,
) -> PageFailure {
    let title = format!(
        "{} {} ({})",
        if result.passed {
            "VIOLATION (expected)"
        } else {
            "FAIL"
        },
        path.display(),
        result.variant
    );
    match inspect(scenario, variant) {
        Ok(inspection) => PageFailure {
            title,
            inspection: Some(inspection),
            text: None,
            crash: None,
        },
        Err(e) => PageFailure {
            title,
            inspection: None,
            text: Some(format!(
                "cannot lay the scenario open: {e}\n{}",
                result.diff.join("\n")
            )),
            crash: None,
        },
    }
}

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
    /// Also write a self-contained HTML page here: a summary of every scenario and,
    /// for each one that failed or whose recovery is a violation, its operation
    /// timeline, the directory trees at the crash and after recovery, and the
    /// expected against the recovered records.
    #[arg(long, value_name = "OUT", conflicts_with = "list_images")]
    pub html: Option<PathBuf>,
}

pub fn replay(args: ReplayArgs) -> Result<Outcome> {
    let fs = StdFs::new();
    let paths = scenario_paths(&fs, &args.files)?;
    let mut results = Vec::new();
    let mut failed = 0;
    let mut page_rows = Vec::new();
    let mut page_failures = Vec::new();
    for path in &paths {
        let scenario = load(&fs, path).map_err(seglog::Error::InvalidArgument)?;
        let started = std::time::Instant::now();
        if args.list_images {
            let variant = args.variant.as_deref().unwrap_or(&scenario.variant);
            let images = scenario::replay::crash_point_images(&scenario, variant, 256)
                .map_err(seglog::Error::InvalidArgument)?;
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
        if args.html.is_some() {
            page_rows.push(PageStage {
                name: path.display().to_string(),
                passed: result.passed,
                seconds: started.elapsed().as_secs_f64(),
                summary: format!(
                    "{}: expected {:?}, got {}",
                    result.variant, result.expected, result.actual
                ),
                numbers: vec![
                    (
                        "crash_before_op".into(),
                        result.crash_before_op.map_or("-".into(), |k| k.to_string()),
                    ),
                    ("diff_lines".into(), result.diff.len().to_string()),
                ],
            });
            if !result.passed || result.actual == "violation" {
                page_failures.push(failure_page(
                    &scenario,
                    args.variant.as_deref(),
                    path,
                    &result,
                ));
            }
        }
        results.push(json!({ "file": path.display().to_string(), "result": result }));
    }
    if let Some(out) = &args.html {
        let html = page("seglog replay", &page_rows, &page_failures);
        super::sweep_cmd::write_report(out, &html)?;
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

//! `seglog bench --compare`: this build's bench against another build's, judged
//! row by row. Pure: the rows of one run's JSON, the paired ratios, their spread,
//! the verdict and the table. The processes run in `crate::cli::bench_compare_cmd`.
//!
//! Method:
//! - a row's value in one run is its `median_ms` (the engine path's median time
//!   over `--iterations`); a name the run holds more than once is keyed
//!   `name vs baseline`;
//! - the two builds run alternately, one bench each a round, the first side
//!   swapping every round, so that the drift of a shared machine hits both alike;
//! - the paired ratio of a round is this build's time / the other's: above 1, this
//!   build is slower;
//! - the figure is the median of the paired ratios, the spread their min..max over
//!   every round (with a handful of rounds, an interquartile range is two or three
//!   points);
//! - the verdict is [`Verdict::Slower`] when the median ratio is above
//!   1 + [`THRESHOLD`] and every round of this build is slower than every round of
//!   the other (the sides' min..max ranges do not overlap), [`Verdict::Faster`]
//!   symmetrically (below 1 / (1 + [`THRESHOLD`]), ranges apart the other way),
//!   else [`Verdict::WithinNoise`].

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use seglog::error::{Error, Result};

/// How much slower (or faster) the median ratio must say before a verdict is more
/// than noise: 10%.
pub const THRESHOLD: f64 = 0.10;

/// One run's rows: each row's time in milliseconds, by name.
pub type RunRows = BTreeMap<String, f64>;

/// What a row's comparison says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// More than [`THRESHOLD`] slower, and every round slower than every round of
    /// the other build.
    #[serde(rename = "slower")]
    Slower,
    /// More than [`THRESHOLD`] faster, and every round faster.
    #[serde(rename = "faster")]
    Faster,
    #[serde(rename = "within noise")]
    WithinNoise,
    /// Only this build's runs have the row (the other build is older, or lacks it).
    #[serde(rename = "only this")]
    OnlyThis,
    /// Only the other build's runs have the row.
    #[serde(rename = "only other")]
    OnlyOther,
    /// A side has the row in some of its rounds but not all: no pairs to judge.
    #[serde(rename = "incomplete")]
    Incomplete,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Slower => "slower",
            Verdict::Faster => "faster",
            Verdict::WithinNoise => "within noise",
            Verdict::OnlyThis => "only this",
            Verdict::OnlyOther => "only other",
            Verdict::Incomplete => "incomplete",
        }
    }
}

/// The smallest and the largest of some values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// The range of `values`, which must not be empty.
    pub fn of(values: &[f64]) -> Spread {
        assert!(!values.is_empty(), "the spread of no values");
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert!(min <= max);
        Spread { min, max }
    }
}

/// One row of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub name: String,
    /// Median of the per-round ratios this / other (time): above 1 is slower.
    pub median_ratio: Option<f64>,
    /// Min..max of the per-round ratios.
    pub spread: Option<Spread>,
    pub verdict: Verdict,
    /// Each round's `median_ms` of the row, this build's and the other's.
    pub this_ms: Vec<f64>,
    pub other_ms: Vec<f64>,
}

/// The rows of one `seglog bench` JSON output (`results[].name`, `.median_ms`).
pub fn run_rows(bench: &serde_json::Value) -> Result<RunRows> {
    let results = bench
        .get("results")
        .and_then(|r| r.as_array())
        .ok_or_else(|| Error::InvalidArgument("the bench output has no `results` array".into()))?;
    let mut named = Vec::with_capacity(results.len());
    for result in results {
        let field = |key: &str| {
            result.get(key).ok_or_else(|| {
                Error::InvalidArgument(format!("a bench result has no `{key}`: {result}"))
            })
        };
        let name = field("name")?.as_str().unwrap_or_default().to_string();
        let baseline = field("baseline")?.as_str().unwrap_or_default().to_string();
        let ms = field("median_ms")?
            .as_f64()
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .ok_or_else(|| Error::InvalidArgument(format!("`{name}` has no usable `median_ms`")))?;
        named.push((name, baseline, ms));
    }
    let mut seen = BTreeMap::<&str, usize>::new();
    for (name, _, _) in &named {
        *seen.entry(name.as_str()).or_default() += 1;
    }
    let mut rows = RunRows::new();
    for (name, baseline, ms) in &named {
        let key = if seen.get(name.as_str()).copied().unwrap_or(0) > 1 {
            format!("{name} vs {baseline}")
        } else {
            name.clone()
        };
        if rows.insert(key.clone(), *ms).is_some() {
            return Err(Error::InvalidArgument(format!(
                "the bench output has `{key}` twice"
            )));
        }
    }
    Ok(rows)
}

/// This build's time / the other's, round by round.
pub fn paired_ratios(this_ms: &[f64], other_ms: &[f64]) -> Vec<f64> {
    assert_eq!(this_ms.len(), other_ms.len(), "pairs need as many rounds");
    this_ms
        .iter()
        .zip(other_ms)
        .map(|(this, other)| this / other.max(1e-9))
        .collect()
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    assert!(!values.is_empty(), "the median of no values");
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// The verdict of a row whose paired ratios have `median_ratio`, with this build's
/// times in `this` and the other's in `other`.
pub fn verdict(median_ratio: f64, this: Spread, other: Spread, threshold: f64) -> Verdict {
    assert!(threshold >= 0.0);
    let slower = median_ratio > 1.0 + threshold && this.min > other.max;
    let faster = median_ratio < 1.0 / (1.0 + threshold) && this.max < other.min;
    assert!(!(slower && faster));
    if slower {
        Verdict::Slower
    } else if faster {
        Verdict::Faster
    } else {
        Verdict::WithinNoise
    }
}

/// Every row either side's runs name, judged (`this_runs` and `other_runs` are the
/// rounds, in order; both have one run a round).
pub fn rows(this_runs: &[RunRows], other_runs: &[RunRows], threshold: f64) -> Vec<Row> {
    assert_eq!(this_runs.len(), other_runs.len());
    let names: BTreeSet<&String> = this_runs
        .iter()
        .chain(other_runs)
        .flat_map(|r| r.keys())
        .collect();
    let values = |runs: &[RunRows], name: &str| -> Vec<f64> {
        runs.iter().filter_map(|r| r.get(name).copied()).collect()
    };
    let rounds = this_runs.len();
    names
        .into_iter()
        .map(|name| {
            let this_ms = values(this_runs, name);
            let other_ms = values(other_runs, name);
            let mut row = Row {
                name: name.clone(),
                median_ratio: None,
                spread: None,
                verdict: Verdict::Incomplete,
                this_ms,
                other_ms,
            };
            let (this_n, other_n) = (row.this_ms.len(), row.other_ms.len());
            if this_n == rounds && other_n == rounds && rounds > 0 {
                let ratios = paired_ratios(&row.this_ms, &row.other_ms);
                let median_ratio = median(&ratios);
                row.median_ratio = Some(median_ratio);
                row.spread = Some(Spread::of(&ratios));
                row.verdict = verdict(
                    median_ratio,
                    Spread::of(&row.this_ms),
                    Spread::of(&row.other_ms),
                    threshold,
                );
            } else if this_n == rounds && other_n == 0 {
                row.verdict = Verdict::OnlyThis;
            } else if other_n == rounds && this_n == 0 {
                row.verdict = Verdict::OnlyOther;
            }
            row
        })
        .collect()
}

/// The flags in `args` (each `--flag`, and each value of `--only`) that a build's
/// `seglog bench --help` text does not name: an older build's.
pub fn missing_flags(help: &str, args: &[String]) -> Vec<String> {
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let names = |word: &str| {
        help.match_indices(word).any(|(at, _)| {
            let before = help[..at].chars().next_back();
            let after = help[at + word.len()..].chars().next();
            !before.is_some_and(is_name_char) && !after.is_some_and(is_name_char)
        })
    };
    let mut missing = Vec::new();
    let mut after_only = false;
    for arg in args {
        if arg.starts_with("--") {
            if !names(arg) {
                missing.push(arg.clone());
            }
            after_only = arg == "--only";
        } else if after_only {
            if !lists_value(help, arg) {
                missing.push(format!("--only {arg}"));
            }
            after_only = false;
        }
    }
    missing
}

/// Whether a help text lists `value` as a possible value: `- value:` (clap's long
/// help) or an item of `[possible values: a, b]`.
fn lists_value(help: &str, value: &str) -> bool {
    let long = help.lines().any(|line| {
        line.trim_start()
            .strip_prefix("- ")
            .and_then(|rest| rest.strip_prefix(value))
            .is_some_and(|rest| rest.starts_with(':'))
    });
    let short = help.split("[possible values: ").skip(1).any(|list| {
        let list = list.split(']').next().unwrap_or_default();
        list.split(',').any(|item| item.trim() == value)
    });
    long || short
}

/// The table for humans: one line a row, the rule above it.
pub fn table(rows: &[Row], rounds: usize, threshold: f64) -> String {
    let pct = threshold * 100.0;
    let mut out = format!(
        "seglog bench --compare: {rounds} rounds. ratio = this build's time / the other's \
         (median_ms of the row; above 1: this build is slower); spread = min..max of the \
         per-round ratios; slower/faster = the median ratio beyond {pct:.0}% and the two \
         sides' min..max times apart.\n"
    );
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(3).max(3);
    out += &format!(
        "{:<width$}  {:>7}  {:>13}  {:>19}  {:>19}  verdict\n",
        "row", "ratio", "spread", "this ms", "other ms"
    );
    let range = |values: &[f64]| {
        if values.is_empty() {
            "-".to_string()
        } else {
            let s = Spread::of(values);
            format!("{:.2}..{:.2}", s.min, s.max)
        }
    };
    for row in rows {
        let ratio = row
            .median_ratio
            .map_or("-".to_string(), |r| format!("{r:.3}"));
        let spread = row
            .spread
            .map_or("-".to_string(), |s| format!("{:.3}..{:.3}", s.min, s.max));
        out += &format!(
            "{:<width$}  {ratio:>7}  {spread:>13}  {:>19}  {:>19}  {}\n",
            row.name,
            range(&row.this_ms),
            range(&row.other_ms),
            row.verdict.label()
        );
    }
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    out += &format!(
        "{} slower, {} faster, {} within noise",
        count(Verdict::Slower),
        count(Verdict::Faster),
        count(Verdict::WithinNoise)
    );
    if count(Verdict::OnlyThis) > 0 {
        out += &format!(
            "; {} only in this build (the other build lacks them: older?)",
            count(Verdict::OnlyThis)
        );
    }
    if count(Verdict::OnlyOther) > 0 {
        out += &format!(
            "; {} only in the other build (this build lacks them)",
            count(Verdict::OnlyOther)
        );
    }
    if count(Verdict::Incomplete) > 0 {
        out += &format!(
            "; {} incomplete (not in every round)",
            count(Verdict::Incomplete)
        );
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(name: &str, times: &[f64]) -> Vec<RunRows> {
        times
            .iter()
            .map(|ms| RunRows::from([(name.to_string(), *ms)]))
            .collect()
    }

    #[test]
    fn paired_ratios_median_and_spread() {
        let ratios = paired_ratios(&[12.0, 10.0, 30.0], &[10.0, 10.0, 10.0]);
        assert_eq!(ratios, vec![1.2, 1.0, 3.0]);
        assert_eq!(median(&ratios), 1.2);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(Spread::of(&ratios), Spread { min: 1.0, max: 3.0 });
    }

    #[test]
    fn slower_needs_the_threshold_and_apart_ranges() {
        let s = |min, max| Spread { min, max };
        // 20% slower, every round: slower.
        assert_eq!(
            verdict(1.2, s(12.0, 13.0), s(10.0, 11.0), THRESHOLD),
            Verdict::Slower
        );
        // 20% slower by the median, but the ranges overlap: noise.
        assert_eq!(
            verdict(1.2, s(10.5, 13.0), s(10.0, 11.0), THRESHOLD),
            Verdict::WithinNoise
        );
        // Ranges apart but only 5% slower: noise.
        assert_eq!(
            verdict(1.05, s(10.6, 10.8), s(10.0, 10.2), THRESHOLD),
            Verdict::WithinNoise
        );
        // The same, the other way round.
        assert_eq!(
            verdict(0.8, s(8.0, 9.0), s(10.0, 11.0), THRESHOLD),
            Verdict::Faster
        );
        assert_eq!(
            verdict(0.8, s(8.0, 10.5), s(10.0, 11.0), THRESHOLD),
            Verdict::WithinNoise
        );
        assert_eq!(
            verdict(0.95, s(9.0, 9.5), s(10.0, 11.0), THRESHOLD),
            Verdict::WithinNoise
        );
        // Exactly at the threshold is not beyond it.
        assert_eq!(
            verdict(1.1, s(11.0, 11.0), s(10.0, 10.0), THRESHOLD),
            Verdict::WithinNoise
        );
    }

    #[test]
    fn rows_pair_rounds_and_list_one_sided_rows() {
        let mut this = runs("alpha", &[13.0, 12.0, 12.5, 14.0, 12.2]);
        let mut other = runs("alpha", &[10.0, 10.5, 10.1, 11.0, 10.2]);
        for (round, (t, o)) in this.iter_mut().zip(&mut other).enumerate() {
            t.insert("beta".into(), 5.0 + round as f64 * 0.1);
            o.insert("beta".into(), 5.0 + (4 - round) as f64 * 0.1);
            t.insert("gamma".into(), 1.0);
            o.insert("delta".into(), 1.0);
        }
        this[2].insert("epsilon".into(), 1.0);
        let rows = rows(&this, &other, THRESHOLD);
        let by_name: BTreeMap<&str, &Row> = rows.iter().map(|r| (r.name.as_str(), r)).collect();
        let alpha = by_name["alpha"];
        assert_eq!(alpha.verdict, Verdict::Slower);
        assert_eq!(alpha.this_ms.len(), 5);
        let median_ratio = alpha.median_ratio.unwrap();
        assert!((median_ratio - 12.5 / 10.1).abs() < 1e-9, "{median_ratio}");
        let spread = alpha.spread.unwrap();
        assert!((spread.min - 12.0 / 10.5).abs() < 1e-9);
        assert!((spread.max - 1.3).abs() < 1e-9);
        assert_eq!(by_name["beta"].verdict, Verdict::WithinNoise);
        assert_eq!(by_name["gamma"].verdict, Verdict::OnlyThis);
        assert!(by_name["gamma"].median_ratio.is_none());
        assert_eq!(by_name["delta"].verdict, Verdict::OnlyOther);
        assert_eq!(by_name["epsilon"].verdict, Verdict::Incomplete);
        let text = table(&rows, 5, THRESHOLD);
        assert!(
            text.contains("1 slower, 0 faster, 1 within noise"),
            "{text}"
        );
        assert!(text.contains("1 only in this build"), "{text}");
        assert!(text.contains("1 only in the other build"), "{text}");
        assert!(text.contains("1 incomplete"), "{text}");
    }

    #[test]
    fn run_rows_reads_the_bench_json_and_keys_repeated_names_by_baseline() {
        let bench = serde_json::json!({
            "records": 10,
            "results": [
                {"name": "alpha", "baseline": "base", "median_ms": 2.5},
                {"name": "beta", "baseline": "one", "median_ms": 1.0},
                {"name": "beta", "baseline": "two", "median_ms": 3.0},
            ]
        });
        let rows = run_rows(&bench).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows["alpha"], 2.5);
        assert_eq!(rows["beta vs one"], 1.0);
        assert_eq!(rows["beta vs two"], 3.0);
        assert!(run_rows(&serde_json::json!({"records": 1})).is_err());
        let no_time = serde_json::json!({"results": [{"name": "a", "baseline": "b"}]});
        assert!(run_rows(&no_time).is_err());
    }

    #[test]
    fn missing_flags_names_what_an_older_help_lacks() {
        let help = "Options:\n      --records <RECORDS>\n      --only <ONLY>\n\
                    Possible values:\n          - append: Append\n          - read:   Read\n\
                    \n      --only-x <X>  [possible values: alpha, beta]\n";
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(missing_flags(help, &args(&["--records", "9", "--only", "read"])).is_empty());
        assert!(missing_flags(help, &args(&["--only", "beta"])).is_empty());
        assert_eq!(
            missing_flags(
                help,
                &args(&["--iterations", "3", "--only", "open", "--only", "app"])
            ),
            vec!["--iterations", "--only open", "--only app"]
        );
        // A flag that only prefixes another is not there, nor a value named only
        // in prose.
        assert_eq!(missing_flags(help, &args(&["--rec"])), vec!["--rec"]);
        assert_eq!(
            missing_flags(help, &args(&["--only", "values"])),
            vec!["--only values"]
        );
    }
}

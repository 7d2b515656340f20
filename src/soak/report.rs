//! The soak's counters and checks, and its report (human and JSON).

use std::collections::BTreeMap;

use serde::Serialize;

/// One named check: how often it ran, how often it failed, the first failure.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Times it ran.
    pub count: u64,
    /// Times it failed.
    pub failures: u64,
    /// The first failure's detail.
    pub first_failure: Option<String>,
}

/// Every check made, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Checks {
    checks: BTreeMap<String, Check>,
    #[serde(skip)]
    first: Option<String>,
}

impl Checks {
    /// Counts one run of `name`; `detail` is built only when it failed.
    pub fn record(&mut self, name: &str, ok: bool, detail: impl FnOnce() -> String) {
        let check = self.checks.entry(name.to_string()).or_default();
        check.count += 1;
        if !ok {
            check.failures += 1;
            if check.first_failure.is_none() {
                let detail = detail();
                check.first_failure = Some(detail.clone());
                if self.first.is_none() {
                    self.first = Some(format!("{name}: {detail}"));
                }
            }
        }
    }

    /// Adds `count` runs and `failures` failures of `name` counted elsewhere (the
    /// child's consumers), with their first failure.
    pub fn merge(&mut self, name: &str, count: u64, failures: u64, first: Option<String>) {
        let check = self.checks.entry(name.to_string()).or_default();
        check.count += count;
        check.failures += failures;
        if check.first_failure.is_none() {
            if let Some(detail) = first {
                check.first_failure = Some(detail.clone());
                if self.first.is_none() {
                    self.first = Some(format!("{name}: {detail}"));
                }
            }
        }
    }

    /// Failures of every check.
    pub fn failures(&self) -> u64 {
        self.checks.values().map(|c| c.failures).sum()
    }

    /// Failures of `name`.
    pub fn count_failed(&self, name: &str) -> u64 {
        self.checks.get(name).map_or(0, |c| c.failures)
    }

    /// The first failure, `check: detail`.
    pub fn first_failure(&self) -> Option<&str> {
        self.first.as_deref()
    }

    /// The checks by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Check)> {
        self.checks.iter()
    }
}

/// Append latency percentiles, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// Appends measured.
    pub samples: usize,
}

impl Latency {
    /// Percentiles of `samples_ns` (sorted here).
    pub fn of(mut samples_ns: Vec<u64>) -> Latency {
        samples_ns.sort_unstable();
        let at = |q: f64| -> f64 {
            if samples_ns.is_empty() {
                return 0.0;
            }
            let i = ((samples_ns.len() as f64 * q).ceil() as usize).clamp(1, samples_ns.len()) - 1;
            samples_ns[i] as f64 / 1000.0
        };
        Latency {
            p50_us: at(0.50),
            p99_us: at(0.99),
            p999_us: at(0.999),
            max_us: at(1.0),
            samples: samples_ns.len(),
        }
    }
}

/// The soak's report.
#[derive(Debug, Clone, Serialize)]
pub struct SoakReport {
    pub passed: bool,
    pub first_failure: Option<String>,
    pub seed: u64,
    pub partitions: u32,
    pub seconds: f64,
    pub kill: bool,
    pub rounds: u64,
    pub kills: u64,
    /// Records whose append was started (intents).
    pub records_appended: u64,
    /// Records whose append returned and was reported (acknowledged).
    pub records_acknowledged: u64,
    /// Records consumers read and checked.
    pub records_read: u64,
    pub append_records_per_sec: f64,
    pub read_records_per_sec: f64,
    pub append_latency: Latency,
    /// Cleaning passes installed, and segments retention deleted (as the
    /// workers last reported them: a killed round's last ~100 ms are not counted).
    pub cleanings: u64,
    pub retention_deletions: u64,
    /// Background rounds that ended in an error.
    pub background_errors: u64,
    pub checks: Checks,
}

impl SoakReport {
    /// The human summary (stderr).
    pub fn human(&self) -> String {
        let mut out = format!(
            "soak: {} ({} partitions, {:.1} s, seed {}, {} rounds, {} kills)\n\
             appended {} records, acknowledged {}, read {}\n\
             append {:.0} records/s, read {:.0} records/s\n\
             append latency p50 {:.0} us, p99 {:.0} us, p99.9 {:.0} us, max {:.0} us\n\
             cleanings {}, retention deleted {} segments, background errors {}\n",
            if self.passed { "PASSED" } else { "FAILED" },
            self.partitions,
            self.seconds,
            self.seed,
            self.rounds,
            self.kills,
            self.records_appended,
            self.records_acknowledged,
            self.records_read,
            self.append_records_per_sec,
            self.read_records_per_sec,
            self.append_latency.p50_us,
            self.append_latency.p99_us,
            self.append_latency.p999_us,
            self.append_latency.max_us,
            self.cleanings,
            self.retention_deletions,
            self.background_errors,
        );
        for (name, check) in self.checks.iter() {
            out.push_str(&format!(
                "  {name:<28} {:>10} checks {:>6} failures\n",
                check.count, check.failures
            ));
        }
        if let Some(first) = &self.first_failure {
            out.push_str(&format!("first failure: {first}\n"));
        }
        out
    }
}

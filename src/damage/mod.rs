//! Damaged data: flip bits, truncate and zero ranges in every file of a log's
//! directory and its install siblings, open each damaged image, and hold the
//! outcome to the corruption policy (docs/design.md sections 2, 3, 5, 6 and 8).
//!
//! For every named sweep workload the stage takes the end state and the first crash
//! point of every protocol state it passes through (`points`), plans deterministic
//! damages for every file present (`plan`: each batch header field of the first and
//! last batch, the records, the last byte, truncations, zeroed ranges), and judges
//! each open (`judge`): a structured error naming the damaged file and a position in
//! it, or a correct recovery; never a silent acceptance, never a deletion beyond the
//! active segment's torn tail, never a damaged temp dir rolled forward, and a failed
//! open changes nothing beyond the protocol recoveries.
//!
//! Damage the format cannot see (a flip in `baseOffset` or `partitionLeaderEpoch`,
//! which are outside Kafka's CRC; a `.log` cut exactly at a batch boundary that no
//! recovery point describes) is counted as `undetectable` when the log serves it,
//! not as a violation. Closed segments removed, cut, emptied or replaced by a
//! directory are the `vanished_segment` class (`vanish`): refused or named, never
//! served in silence where a recovery point reveals the loss. A live key summary
//! (`.keys`) also gets flips that make it lie (`plan::key_summary_damages`), and a
//! cleaning of the damaged image must keep what a cleaning of the undamaged one
//! keeps: a damaged summary makes a segment rewritten, never carried on its word.
//! Files of ours grown past what their format allows are the `grown` class
//! (`grown`): the open reads no more of them than the bound, counted by the
//! simulated file system. Every successful open is also held to its report
//! (`hints`): a recovery point or marker it ignored is named there. Every damaged
//! image is opened by each open kind the CLI has (`opens`: checked and read-only
//! besides writable; a read-only open changes nothing, ever). Kafka's leftovers
//! beside real segments are the `kafka_leftover` class (`leftover`).

mod case;
mod grown;
mod hints;
mod judge;
mod kind;
mod leftover;
mod opens;
mod plan;
mod points;
mod quiet;
mod vanish;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use crate::sweep::{named_workloads, Workload};
use seglog::format::filename;

pub use case::Outcome;
pub use kind::FileKind;
pub use plan::{batch_ranges, Change, Damage, Seal};

/// How much to try.
#[derive(Debug, Clone, Serialize)]
pub struct DamageOptions {
    /// Crash points per workload besides its end (the first and the last of each
    /// protocol state each operation passes through).
    pub protocol_points: usize,
    /// At most this many damages per file (in plan order; `usize::MAX`: all).
    pub damages_per_file: usize,
    /// Also flip every bit of the first and last batch header of every `.log`
    /// (about 1,000 more damages per `.log`; the standard and overnight budgets).
    pub all_header_bits: bool,
    /// Threads the workloads are damaged on (the report is the same for any
    /// number: `crate::jobs`).
    pub jobs: usize,
}

impl DamageOptions {
    /// The quick budget already covers every protocol state of the named workloads
    /// and every planned damage: a few seconds in release.
    pub fn quick() -> DamageOptions {
        DamageOptions {
            protocol_points: 64,
            damages_per_file: usize::MAX,
            all_header_bits: false,
            jobs: crate::jobs::default_jobs(),
        }
    }

    /// The quick plan plus every header bit.
    pub fn exhaustive() -> DamageOptions {
        DamageOptions {
            all_header_bits: true,
            ..DamageOptions::quick()
        }
    }
}

impl Default for DamageOptions {
    fn default() -> Self {
        DamageOptions::quick()
    }
}

/// Damages tried on one kind of file, by outcome.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KindCount {
    pub damages: u64,
    pub errors: u64,
    pub recovered: u64,
    pub undetectable: u64,
    /// Damage in a trusted segment, reported by the first read of it (see
    /// `case::Outcome::ReadError`).
    pub read_errors: u64,
    pub violations: u64,
}

/// One failed check, with what reproduces it.
#[derive(Debug, Clone, Serialize)]
pub struct DamageViolation {
    pub workload: String,
    pub point: String,
    pub file: String,
    pub kind: FileKind,
    pub damage: String,
    pub detail: String,
}

impl std::fmt::Display for DamageViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "workload {} at {}: {} {}: {}",
            self.workload, self.point, self.damage, self.file, self.detail
        )
    }
}

/// One workload's numbers.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WorkloadDamageReport {
    pub workload: String,
    /// Undamaged images damaged from (crash points and the end).
    pub points: u64,
    /// Files damaged (summed over points).
    pub files: u64,
    /// Damaged images opened.
    pub damages: u64,
    pub errors: u64,
    pub recovered: u64,
    pub undetectable: u64,
    pub read_errors: u64,
    /// Of `damages`, the forged ones (valid checksums, out-of-range values:
    /// `plan::forged_damages`).
    pub forged: u64,
    /// Of `damages`, the grown ones (a file of ours past its format's bound:
    /// `grown`).
    pub grown: u64,
    pub violations: Vec<DamageViolation>,
    pub per_kind: BTreeMap<String, KindCount>,
    /// A few undetectable damages, as `point: damage file`.
    pub undetectable_examples: Vec<String>,
    pub seconds: f64,
}

/// Runs the stage on one workload.
pub fn damage_workload(workload: &Workload, options: &DamageOptions) -> WorkloadDamageReport {
    let started = Instant::now();
    let mut report = WorkloadDamageReport {
        workload: workload.name.clone(),
        ..WorkloadDamageReport::default()
    };
    let points = match points::points(workload, options.protocol_points) {
        Ok(points) => points,
        Err(detail) => {
            report.violations.push(DamageViolation {
                workload: workload.name.clone(),
                point: "setup".into(),
                file: String::new(),
                kind: FileKind::Other,
                damage: String::new(),
                detail,
            });
            return report;
        }
    };
    // The points on `jobs` threads; their numbers are added up in point order, so
    // the report is the one a single thread writes.
    let judged = crate::jobs::map_ordered(
        &points,
        options.jobs,
        |_, point| damage_point(workload, point, options),
        |_, _| {},
    );
    for part in judged {
        report.add(part);
    }
    report.seconds = started.elapsed().as_secs_f64();
    report
}

/// Every planned damage of every file of one point's image, opened and judged:
/// the point's share of its workload's report.
fn damage_point(
    workload: &Workload,
    point: &points::Point,
    options: &DamageOptions,
) -> WorkloadDamageReport {
    let mut report = WorkloadDamageReport::default();
    report.points += 1;
    let files = point.image.snapshot();
    for (path, original) in &files {
        let (role, kind) = kind::classify(path, &files);
        let aliases: Vec<PathBuf> = point
            .image
            .names_of(path)
            .into_iter()
            .filter(|p| p != path)
            .collect();
        if matches!(role, kind::Role::Temp | kind::Role::Parent) && !aliases.is_empty() {
            // A carried segment's temp name, or a concurrent cleaning's tail
            // linked into the temp dir and left in the trash: the same inode as
            // its live or backup name, damaged (and counted) under that one.
            continue;
        }
        let mut damages = if kind.is_log() {
            plan::log_damages(original)
        } else {
            plan::generic_damages(original)
        };
        if kind == FileKind::KeySummary {
            for damage in plan::key_summary_damages(original) {
                if !damages.iter().any(|d| d.change == damage.change) {
                    damages.push(damage);
                }
            }
        }
        let first_forged = damages.len();
        for damage in plan::forged_damages(original, kind.is_log()) {
            if !damages.iter().any(|d| d.change == damage.change) {
                damages.push(damage);
            }
        }
        let forged = first_forged..damages.len();
        if kind.is_log() && options.all_header_bits {
            for damage in plan::header_bit_damages(original) {
                if !damages.iter().any(|d| d.change == damage.change) {
                    damages.push(damage);
                }
            }
        }
        report.files += 1;
        // The forged damages are not cut by `damages_per_file`: every file gets
        // them (the class the checksums cannot see).
        let planned = damages
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < options.damages_per_file || forged.contains(i));
        for (i, damage) in planned {
            let Some(damaged) = damage.change.apply(original) else {
                continue;
            };
            if forged.contains(&i) {
                report.forged += 1;
            }
            let case = case::Case {
                config: &workload.config,
                point,
                path,
                role,
                kind,
                damage,
                original,
                damaged: &damaged,
                aliases: &aliases,
            };
            report.count(
                kind,
                caught(|| judge::judge(&case)),
                || format!("{}: {} {}", point.name, damage.label, path.display()),
                |detail| DamageViolation {
                    workload: workload.name.clone(),
                    point: point.name.clone(),
                    file: path.display().to_string(),
                    kind,
                    damage: damage.label.clone(),
                    detail,
                },
            );
        }
    }
    damage_point_vanish(workload, point, &mut report);
    damage_point_leftover(workload, point, &mut report);
    damage_point_quiet(workload, point, &mut report);
    grown::damage_point_grown(workload, point, &mut report);
    report
}

/// Runs one judge, turning a panic (of the engine or the judge) into a violation
/// that carries its message: one bad case is reported with the rest, and
/// the stage goes on.
fn caught<T>(judge: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(judge)).unwrap_or_else(|panic| {
        Err(format!(
            "panicked: {}",
            seglog::panics::panic_message(&*panic)
        ))
    })
}

/// The `vanished_segment` class (`vanish`) on one point's image: closed segments
/// removed, cut at every batch boundary, emptied or replaced by a directory.
fn damage_point_vanish(
    workload: &Workload,
    point: &points::Point,
    report: &mut WorkloadDamageReport,
) {
    let cases = vanish::plan(&point.image).into_iter().map(|case| Planned {
        label: case.label(),
        file: filename::build(case.base, filename::LOG_SUFFIX),
        judged: caught(|| vanish::judge(&workload.config, point, &case)),
    });
    report.count_all(workload, point, FileKind::VanishedSegment, cases);
}

/// The `kafka_leftover` class (`leftover`) on one point's image: Kafka's
/// `.swap`, `.cleaned` and `.deleted` files beside its first and last segment.
fn damage_point_leftover(
    workload: &Workload,
    point: &points::Point,
    report: &mut WorkloadDamageReport,
) {
    let cases = leftover::plan(point).into_iter().map(|case| Planned {
        label: case.label(),
        file: leftover::file(&case).display().to_string(),
        judged: caught(|| leftover::judge(&workload.config, point, &case)),
    });
    report.count_all(workload, point, FileKind::KafkaLeftover, cases);
}

/// One judged case of a class that is not a damage of one file's bytes.
struct Planned {
    label: String,
    file: String,
    judged: std::result::Result<Outcome, String>,
}

/// The `quiet_reopen` check (`quiet`) on one point's image, counted as one case
/// of its kind (none for a log without data).
fn damage_point_quiet(
    workload: &Workload,
    point: &points::Point,
    report: &mut WorkloadDamageReport,
) {
    let judged = match caught(|| quiet::judge(&workload.config, point)) {
        Ok(None) => return,
        Ok(Some(outcome)) => Ok(outcome),
        Err(detail) => Err(detail),
    };
    let case = Planned {
        label: "close cleanly, reopen and close, open read-only".into(),
        file: quiet::file().display().to_string(),
        judged,
    };
    report.count_all(
        workload,
        point,
        FileKind::QuietReopen,
        std::iter::once(case),
    );
}

impl WorkloadDamageReport {
    /// Counts every case of `cases`, of `kind`, at `point`.
    fn count_all(
        &mut self,
        workload: &Workload,
        point: &points::Point,
        kind: FileKind,
        cases: impl Iterator<Item = Planned>,
    ) {
        for case in cases {
            self.count(
                kind,
                case.judged,
                || format!("{}: {}", point.name, case.label),
                |detail| DamageViolation {
                    workload: workload.name.clone(),
                    point: point.name.clone(),
                    file: case.file.clone(),
                    kind,
                    damage: case.label.clone(),
                    detail,
                },
            );
        }
    }

    /// Counts one judged damage of `kind`: its outcome (an undetectable one with the
    /// example `label` gives, while there are fewer than eight), or the violation
    /// `violation` makes of the judge's detail.
    fn count(
        &mut self,
        kind: FileKind,
        judged: std::result::Result<Outcome, String>,
        label: impl FnOnce() -> String,
        violation: impl FnOnce(String) -> DamageViolation,
    ) {
        let count = self.per_kind.entry(kind.name()).or_default();
        count.damages += 1;
        self.damages += 1;
        match judged {
            Ok(Outcome::Error) => {
                count.errors += 1;
                self.errors += 1;
            }
            Ok(Outcome::Recovered) => {
                count.recovered += 1;
                self.recovered += 1;
            }
            Ok(Outcome::ReadError) => {
                count.read_errors += 1;
                self.read_errors += 1;
            }
            Ok(Outcome::Undetectable) => {
                count.undetectable += 1;
                self.undetectable += 1;
                if self.undetectable_examples.len() < 8 {
                    self.undetectable_examples.push(label());
                }
            }
            Err(detail) => {
                count.violations += 1;
                self.violations.push(violation(detail));
            }
        }
    }

    /// Adds a point's share (`damage_point`) to this workload's report.
    fn add(&mut self, part: WorkloadDamageReport) {
        self.points += part.points;
        self.files += part.files;
        self.damages += part.damages;
        self.errors += part.errors;
        self.recovered += part.recovered;
        self.undetectable += part.undetectable;
        self.read_errors += part.read_errors;
        self.forged += part.forged;
        self.grown += part.grown;
        self.violations.extend(part.violations);
        for (kind, count) in part.per_kind {
            let total = self.per_kind.entry(kind).or_default();
            total.damages += count.damages;
            total.errors += count.errors;
            total.recovered += count.recovered;
            total.undetectable += count.undetectable;
            total.read_errors += count.read_errors;
            total.violations += count.violations;
        }
        let room = 8usize.saturating_sub(self.undetectable_examples.len());
        self.undetectable_examples
            .extend(part.undetectable_examples.into_iter().take(room));
    }
}

/// The whole stage's numbers.
#[derive(Debug, Clone, Serialize)]
pub struct DamageReport {
    pub workloads: usize,
    pub points: u64,
    pub damages: u64,
    pub errors: u64,
    pub recovered: u64,
    pub undetectable: u64,
    /// Damage in trusted segments, reported by the first read of it.
    pub read_errors: u64,
    /// Of `damages`, the forged ones (valid checksums, out-of-range values).
    pub forged: u64,
    /// Of `damages`, the grown ones (a file of ours past its format's bound).
    pub grown: u64,
    pub violations: usize,
    pub seconds: f64,
    pub per_kind: BTreeMap<String, KindCount>,
    pub per_workload: Vec<WorkloadDamageReport>,
}

impl DamageReport {
    pub fn first_violation(&self) -> Option<&DamageViolation> {
        self.per_workload.iter().find_map(|w| w.violations.first())
    }
}

/// Runs the stage on `workloads` (`progress(done, total, name)` after each
/// finishes, naming a workload still to come).
pub fn run(
    workloads: &[Workload],
    options: &DamageOptions,
    mut progress: impl FnMut(u64, u64, &str),
) -> DamageReport {
    let started = Instant::now();
    let total = workloads.len() as u64;
    let per_workload = crate::jobs::map_ordered(
        workloads,
        options.jobs,
        |_, workload| damage_workload(workload, options),
        |done, _| {
            let name = workloads.get(done).map_or("", |w| w.name.as_str());
            progress(done as u64, total, name)
        },
    );
    let mut per_kind: BTreeMap<String, KindCount> = BTreeMap::new();
    for report in &per_workload {
        for (kind, count) in &report.per_kind {
            let total = per_kind.entry(kind.clone()).or_default();
            total.damages += count.damages;
            total.errors += count.errors;
            total.recovered += count.recovered;
            total.undetectable += count.undetectable;
            total.read_errors += count.read_errors;
            total.violations += count.violations;
        }
    }
    DamageReport {
        workloads: per_workload.len(),
        points: per_workload.iter().map(|r| r.points).sum(),
        damages: per_workload.iter().map(|r| r.damages).sum(),
        errors: per_workload.iter().map(|r| r.errors).sum(),
        recovered: per_workload.iter().map(|r| r.recovered).sum(),
        undetectable: per_workload.iter().map(|r| r.undetectable).sum(),
        read_errors: per_workload.iter().map(|r| r.read_errors).sum(),
        forged: per_workload.iter().map(|r| r.forged).sum(),
        grown: per_workload.iter().map(|r| r.grown).sum(),
        violations: per_workload.iter().map(|r| r.violations.len()).sum(),
        seconds: started.elapsed().as_secs_f64(),
        per_kind,
        per_workload,
    }
}

/// Runs the stage on every named sweep workload.
pub fn run_named(options: &DamageOptions) -> DamageReport {
    run(&named_workloads(), options, |_, _, _| {})
}

//! The crash images of a recording under each persistence model, loaded by Kafka
//! and held to the oracle ([`explore`]).
//!
//! Per model ([`Persistence`]): the state before the workload is replayed call by
//! call on a `SimFs` of that model; before the first call and after each one (the
//! crash points), the first `images_per_point` power-loss images `SimFs` gives are
//! taken, and identical images of the model are kept once. Each is laid out in its
//! own directory, all are loaded by one `crash-load` JVM, and each answer is
//! judged by [`oracle::judge`] once per number of markers the image occurs after
//! (the same image after a flush's marker owes what the flush acknowledged).
//!
//! Memory-mapped index content is not in the trace: an image's `.index` and
//! `.timeindex` hold what the system calls made of them, zeros at the traced
//! length (a sparse file on the disk). That is the state of a power loss before
//! any mapped page reached the disk; it misses images where a part of the mapped
//! entries did (a stale or half-written index entry that could point Kafka's
//! reads or recovery elsewhere).
//!
//! An image with findings is kept as a [`Case`]: the crash point, the model, what
//! the power loss took (as `SimFs`'s `LostItem` lines, which rebuild the image
//! from the replayed prefix with `SimFs::crash_image_with`), the findings, what
//! Kafka served, and the image's directories and files (each file's bytes up to
//! its last non-zero byte, base64, and its length). A case of the any-subset
//! model whose image the ordered-metadata model also gives with findings is
//! classed `ordered-metadata`; the others `pessimistic-only` (`unclassified` when
//! the ordered-metadata model is not explored);
//! a case names its workload's variant, so that [`replay_case`] replays it from its
//! file alone on a new recording: the image rebuilt, loaded by Kafka, judged.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::{Deserialize, Serialize};

use super::acks::{Acks, Served};
use super::oracle::{self, Finding};
use super::{load_dirs, Recording};
use crate::alice::image;
use crate::alice::strace::SysCall;
use crate::interop::harness::Harness;
use crate::sweep::PARENT_DIR;
use seglog::fs::sim::{CrashMode, LostItem, Persistence, SimFs};
use seglog::fs::{FileSystem, StdFs};

/// How hard to look.
#[derive(Debug, Clone)]
pub struct ExploreOptions {
    /// Power-loss images per crash point (the first ones of `SimFs`'s fixed order).
    pub images_per_point: usize,
    /// The persistence models, each explored on its own.
    pub models: Vec<Persistence>,
}

impl Default for ExploreOptions {
    fn default() -> Self {
        ExploreOptions {
            images_per_point: 64,
            models: Persistence::ALL.to_vec(),
        }
    }
}

/// One file of a case's image.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseFile {
    /// Its path in the image (under the image's root, `/data`).
    pub path: String,
    /// Its length.
    pub len: u64,
    /// Its bytes up to the last non-zero one (zeros follow up to `len`), base64.
    pub base64: String,
}

/// One image with findings, replayable ([`replay_case`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Case {
    /// The workload's variant (`normal`, `no-flush`).
    #[serde(default = "normal")]
    pub variant: String,
    /// `any-subset` or `ordered-metadata`.
    pub model: String,
    /// `ordered-metadata` (the ordered model gives the image with findings too),
    /// `pessimistic-only`, or `unclassified` (the ordered model was not explored).
    pub class: String,
    /// The crash point: the calls replayed before the power loss.
    pub crash_point: usize,
    /// The markers (acknowledged steps) among them.
    pub completed_steps: usize,
    /// The last of them, if any.
    pub last_marker: Option<String>,
    /// The call the power loss came before, if any.
    pub next_call: Option<String>,
    /// What the power loss took away (`SimFs`'s `LostItem` lines).
    pub lost: Vec<String>,
    pub findings: Vec<Finding>,
    /// What Kafka served from the image.
    pub served: Served,
    /// The image's directories.
    pub dirs: Vec<String>,
    pub files: Vec<CaseFile>,
}

fn normal() -> String {
    "normal".into()
}

/// The numbers of one model.
#[derive(Debug, Clone, Serialize)]
pub struct ModelReport {
    pub model: String,
    /// Crash points: before each call and after the last.
    pub crash_points: u64,
    /// Distinct images loaded by Kafka and judged.
    pub images: u64,
    /// Images without the partition directory.
    pub absent: u64,
    /// Images whose load threw.
    pub errors: u64,
    /// Judgments: each image against the acknowledgments of each number of
    /// markers it occurs after.
    pub judgments: u64,
    /// Judgments with findings (each a case).
    pub findings: u64,
    /// Findings by kind.
    pub by_kind: BTreeMap<String, u64>,
    /// Every image with findings.
    pub cases: Vec<Case>,
    /// Seconds to take, load and judge the model's images.
    pub seconds: f64,
}

/// An image as laid out: its directories and files (bytes up to the last non-zero
/// one, and the length), comparable and small for zero-filled indexes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Image {
    dirs: Vec<PathBuf>,
    files: Vec<(PathBuf, u64, Vec<u8>)>,
}

impl Image {
    fn of(sim: &SimFs) -> Image {
        let files = sim
            .snapshot()
            .into_iter()
            .map(|(path, bytes)| {
                let kept = nonzero_len(&bytes);
                (path, bytes.len() as u64, bytes[..kept].to_vec())
            })
            .collect();
        Image {
            dirs: sim.snapshot_dirs().into_iter().collect(),
            files,
        }
    }

    /// Lays the image out at the empty real `root` (its `/data` tree).
    fn lay_out(&self, root: &Path) -> Result<(), String> {
        let fs = StdFs::new();
        let parent = Path::new(PARENT_DIR);
        let real = |p: &Path| p.strip_prefix(parent).ok().map(|rel| root.join(rel));
        for dir in self.dirs.iter().filter_map(|d| real(d)) {
            fs.create_dir_all(&dir)
                .map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        for (path, len, bytes) in &self.files {
            let Some(file) = real(path) else { continue };
            fs.write_new(&file, bytes)
                .and_then(|()| fs.set_len(&file, *len))
                .map_err(|e| format!("{}: {e}", file.display()))?;
        }
        Ok(())
    }

    /// The image a case holds.
    fn of_case(case: &Case) -> Result<Image, String> {
        let files = case
            .files
            .iter()
            .map(|f| {
                base64::engine::general_purpose::STANDARD
                    .decode(&f.base64)
                    .map(|bytes| (PathBuf::from(&f.path), f.len, bytes))
                    .map_err(|e| format!("{}: {e}", f.path))
            })
            .collect::<Result<_, _>>()?;
        Ok(Image {
            dirs: case.dirs.iter().map(PathBuf::from).collect(),
            files,
        })
    }

    fn case_files(&self) -> (Vec<String>, Vec<CaseFile>) {
        let dirs = self.dirs.iter().map(|d| d.display().to_string()).collect();
        let files = self
            .files
            .iter()
            .map(|(path, len, bytes)| CaseFile {
                path: path.display().to_string(),
                len: *len,
                base64: base64::engine::general_purpose::STANDARD.encode(bytes),
            })
            .collect();
        (dirs, files)
    }
}

/// The length of `bytes` without its trailing zeros (compared a block at a time:
/// a preallocated index is megabytes of them).
fn nonzero_len(bytes: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    const ZEROS: [u8; BLOCK] = [0; BLOCK];
    let mut end = bytes.len();
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let block = &bytes[start..end];
        if block != &ZEROS[..block.len()] {
            return start + block.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        }
        end = start;
    }
    0
}

/// Where an image occurs: the first crash point after a given number of markers,
/// and what the power loss took there.
struct Occurrence {
    crash_point: usize,
    completed: usize,
    lost: Vec<String>,
}

/// One distinct image of a model, and where it occurs: once per number of markers
/// before it (the same image after more acknowledgments owes more).
struct Taken {
    image: Image,
    at: Vec<Occurrence>,
}

/// The distinct power-loss images of `recording` under `model`, and the crash
/// points walked.
fn images(
    recording: &Recording,
    model: Persistence,
    per_point: usize,
) -> Result<(Vec<Taken>, u64), String> {
    let sim = image::read_tree(&recording.before).map_err(|e| e.to_string())?;
    sim.set_persistence(model);
    let mut seen: HashMap<Image, usize> = HashMap::new();
    let mut taken: Vec<Taken> = Vec::new();
    let mut completed = 0;
    let mut points = 0;
    for k in 0..=recording.calls.len() {
        if k > 0 {
            let call = &recording.calls[k - 1];
            image::replay(&sim, &recording.root, call)
                .map_err(|e| format!("system call {} ({call}) does not replay: {e}", k - 1))?;
            if matches!(call, SysCall::Mark(_)) {
                completed += 1;
            }
        }
        points += 1;
        for crash in sim.crash_images(CrashMode::PowerLoss, per_point.max(1)) {
            let image = Image::of(&crash.fs);
            let i = *seen.entry(image.clone()).or_insert_with(|| {
                taken.push(Taken {
                    image,
                    at: Vec::new(),
                });
                taken.len() - 1
            });
            if taken[i].at.iter().all(|o| o.completed != completed) {
                taken[i].at.push(Occurrence {
                    crash_point: k,
                    completed,
                    lost: crash.lost.iter().map(ToString::to_string).collect(),
                });
            }
        }
    }
    Ok((taken, points))
}

/// Every crash image of `recording` under each model of `options`, loaded by
/// Kafka and judged; one report per model, in `options`' order.
pub fn explore(
    harness: &Harness,
    recording: &Recording,
    options: &ExploreOptions,
) -> Result<Vec<ModelReport>, String> {
    let acks = Acks::from_value(&recording.acks)?;
    let markers: Vec<String> = recording.markers().into_iter().map(|(_, m)| m).collect();
    let mut reports = Vec::new();
    let mut finding_images: HashMap<Persistence, HashSet<Image>> = HashMap::new();
    let mut case_images: Vec<Vec<Image>> = Vec::new();
    for &model in &options.models {
        let started = std::time::Instant::now();
        let (taken, points) = images(recording, model, options.images_per_point)?;
        let tmp = tempfile::tempdir_in(recording.scratch()).map_err(|e| e.to_string())?;
        let mut dirs = Vec::with_capacity(taken.len());
        for (i, t) in taken.iter().enumerate() {
            let dir = tmp.path().join(format!("image-{i}"));
            t.image.lay_out(&dir)?;
            dirs.push(dir);
        }
        let answers = load_dirs(harness, &dirs, tmp.path())?;
        let mut report = ModelReport {
            model: model.name().to_string(),
            crash_points: points,
            images: taken.len() as u64,
            absent: 0,
            errors: 0,
            judgments: 0,
            findings: 0,
            by_kind: BTreeMap::new(),
            cases: Vec::new(),
            seconds: 0.0,
        };
        let mut images_of_cases = Vec::new();
        for (t, answer) in taken.into_iter().zip(&answers) {
            let served = Served::from_value(answer)?;
            match served {
                Served::Absent => report.absent += 1,
                Served::Error { .. } => report.errors += 1,
                Served::Log(_) => {}
            }
            report.judgments += t.at.len() as u64;
            for at in t.at {
                let findings = oracle::judge(&acks, at.completed, &served);
                if findings.is_empty() {
                    continue;
                }
                report.findings += 1;
                for f in &findings {
                    *report.by_kind.entry(f.kind.name().to_string()).or_default() += 1;
                }
                let (dirs, files) = t.image.case_files();
                report.cases.push(Case {
                    variant: acks.variant.clone().unwrap_or_else(normal),
                    model: model.name().to_string(),
                    class: String::new(),
                    crash_point: at.crash_point,
                    completed_steps: at.completed,
                    last_marker: at
                        .completed
                        .checked_sub(1)
                        .and_then(|i| markers.get(i).cloned()),
                    next_call: recording.calls.get(at.crash_point).map(ToString::to_string),
                    lost: at.lost,
                    findings,
                    served: served.clone(),
                    dirs,
                    files,
                });
                finding_images
                    .entry(model)
                    .or_default()
                    .insert(t.image.clone());
                images_of_cases.push(t.image.clone());
            }
        }
        report.seconds = started.elapsed().as_secs_f64();
        reports.push(report);
        case_images.push(images_of_cases);
    }
    let explored_ordered = options.models.contains(&Persistence::OrderedMetadata);
    let ordered = finding_images
        .remove(&Persistence::OrderedMetadata)
        .unwrap_or_default();
    for (report, images) in reports.iter_mut().zip(&case_images) {
        for (case, image) in report.cases.iter_mut().zip(images) {
            let also_ordered =
                case.model == Persistence::OrderedMetadata.name() || ordered.contains(image);
            case.class = if also_ordered {
                "ordered-metadata"
            } else if explored_ordered {
                "pessimistic-only"
            } else {
                "unclassified"
            }
            .to_string();
        }
    }
    Ok(reports)
}

/// Rebuilds the image of `case` from `recording` (its calls up to the crash point
/// replayed under the case's model, then the power loss that lost the case's
/// items) and checks it is the image the case holds; `Err` says how it differs.
pub fn rebuild(recording: &Recording, case: &Case) -> Result<(), String> {
    let model: Persistence = case.model.parse().map_err(|e| format!("{e}"))?;
    let sim = image::read_tree(&recording.before).map_err(|e| e.to_string())?;
    sim.set_persistence(model);
    for call in recording.calls.iter().take(case.crash_point) {
        image::replay(&sim, &recording.root, call)
            .map_err(|e| format!("system call ({call}) does not replay: {e}"))?;
    }
    let lost = case
        .lost
        .iter()
        .map(|l| l.parse::<LostItem>().map_err(|e| format!("{l}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let rebuilt = sim
        .crash_image_with(&lost)
        .map_err(|e| format!("the power loss of {:?}: {e}", case.lost))?;
    let (dirs, files) = Image::of(&rebuilt).case_files();
    let same_files = files.len() == case.files.len()
        && files
            .iter()
            .zip(&case.files)
            .all(|(a, b)| a.path == b.path && a.len == b.len && a.base64 == b.base64);
    if dirs != case.dirs || !same_files {
        return Err(format!(
            "the rebuilt image differs from the case's (crash point {}, lost {:?})",
            case.crash_point, case.lost
        ));
    }
    Ok(())
}

/// Writes every case of `reports` to `dir` as `MODEL-N.json`; the paths written.
pub fn write_cases(reports: &[ModelReport], dir: &Path) -> Result<Vec<PathBuf>, String> {
    let fs = StdFs::new();
    fs.create_dir_all(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for report in reports {
        for (i, case) in report.cases.iter().enumerate() {
            let path = dir.join(format!("{}-{i}.json", report.model));
            let json = serde_json::to_vec_pretty(case).map_err(|e| e.to_string())?;
            if fs.exists(&path) {
                fs.remove_file(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
            fs.write_new(&path, &json)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            written.push(path);
        }
    }
    Ok(written)
}

/// What replaying a case gave.
#[derive(Debug, Clone, Serialize)]
pub struct Replayed {
    /// The case's image rebuilt from the recording, loaded by Kafka, gave the
    /// case's findings again.
    pub reproduced: bool,
    /// Why not, if not.
    pub detail: Option<String>,
    /// The findings of this load.
    pub findings: Vec<Finding>,
    /// What Kafka served from the image this time.
    pub served: Option<Served>,
}

/// Replays `case` on `recording` (of the case's variant): its image rebuilt from
/// the crash point and lost items must be the one the case holds; that image,
/// laid out and loaded by Kafka, is judged at the case's crash point, and the case
/// reproduces when the findings are the case's.
pub fn replay_case(
    harness: &Harness,
    recording: &Recording,
    case: &Case,
) -> Result<Replayed, String> {
    let acks = Acks::from_value(&recording.acks)?;
    if let Err(detail) = rebuild(recording, case) {
        return Ok(Replayed {
            reproduced: false,
            detail: Some(detail),
            findings: Vec::new(),
            served: None,
        });
    }
    let tmp = tempfile::tempdir_in(recording.scratch()).map_err(|e| e.to_string())?;
    let dir = tmp.path().join("image");
    Image::of_case(case)?.lay_out(&dir)?;
    let answers = load_dirs(harness, &[dir], tmp.path())?;
    let served = Served::from_value(&answers[0])?;
    let findings = oracle::judge(&acks, case.completed_steps, &served);
    let reproduced = findings == case.findings;
    Ok(Replayed {
        reproduced,
        detail: (!reproduced).then(|| {
            format!(
                "the case recorded {:?}, this load gave {:?}",
                case.findings, findings
            )
        }),
        findings,
        served: Some(served),
    })
}

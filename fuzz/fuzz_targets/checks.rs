//! The checks behind every fuzz target, one function per target. Shared with
//! `tests/fuzz_corpus.rs` (included by path), so `cargo test` replays the committed
//! seed corpora through exactly what the fuzzers run. Each function panics with a
//! description when an invariant breaks; the invariants are listed on each function
//! and in the target files' headers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog::format::batch::{decode, decode_header};
use seglog::format::index::{encode_offset_entries, encode_time_entries};
use seglog::format::{checkpoint, filename};
use seglog::format::{ControlKind, RecordBatch};
use seglog::fs::sim::{CrashMode, SimFs};
use seglog::fs::FileSystem;
use seglog::scenario::Scenario;
use seglog::segment::index::SegmentIndex;
use seglog::sweep::{
    check_image, count_operations, duplicate, run_until_crash, Allowed, Violation, Workload,
};
use seglog::workload::{engine, new_records, spec, Op, OpOutcome, RecordView};
use seglog::{Error, Log};
use seglog_model::spec::SpecLog;

use crate::common::{
    CheckpointFile, CrashInput, CrashKind, Damage, DirInput, FuzzOp, IndexFiles, Leftover,
    OpsInput, Step, Stranger,
};

/// Where the targets keep the log inside the simulated file system.
pub const LOG_DIR: &str = "/data/log";
/// The install protocol's siblings of [`LOG_DIR`].
pub const COMPACT_TMP_DIR: &str = "/data/log.compact-tmp";
pub const MANIFEST: &str = "/data/log.compact-manifest";
pub const MANIFEST_TMP: &str = "/data/log.compact-manifest.tmp";

// ---- decode_batch ----

/// Decodes arbitrary bytes as a record batch.
///
/// Invariants checked:
/// - `decode` returns `Ok` or a structured `FormatError`; it never panics, never reads
///   out of bounds, never allocates without bound (the 64 MiB batch cap).
/// - An `Ok` batch uses at most the bytes given and round-trips: encoding it and
///   decoding the result gives the same batch, using exactly the encoded length
///   (byte equality with the input is not required: like Kafka, the decoder accepts
///   non-minimal varints, which the encoder never writes).
/// - `decode_header` agrees with `decode` on base offset and size.
pub fn decode_batch(data: &[u8]) {
    let Ok((batch, used)) = decode(data) else {
        return;
    };
    assert!(used <= data.len(), "used {used} of {} bytes", data.len());
    let encoded = batch.encode();
    assert_eq!(encoded.len(), batch.encoded_len());
    let (again, again_used) = decode(&encoded).expect("a re-encoded batch must decode");
    assert_eq!(again, batch);
    assert_eq!(again_used, encoded.len());
    let header = decode_header(data).expect("the header of a decoded batch decodes");
    assert_eq!(header.size, used);
    assert_eq!(header.base_offset, batch.base_offset);
}

// ---- open_dir ----

/// A directory built from a [`DirInput`], before the open under test.
pub struct BuiltDir {
    pub fs: Arc<SimFs>,
    /// Per segment (by `.log` path), the records it holds as the engine must read them.
    pub records: BTreeMap<PathBuf, Vec<RecordView>>,
    /// Every file that was damaged (truncated, flipped, extended or removed).
    pub damaged: BTreeSet<PathBuf>,
}

/// Builds the directory a [`DirInput`] describes: valid segments (compaction gaps
/// and control batches included) with exact, missing, cut or garbage indexes,
/// files the log does not own, then the damage. Everything is durable (settled).
pub fn build_dir(input: &DirInput) -> BuiltDir {
    let fs = Arc::new(SimFs::new());
    let dir = Path::new(LOG_DIR);
    fs.create_dir_all(dir).expect("mkdir");
    let mut records = BTreeMap::new();
    let mut next = input.first_base.0;
    let count = input.segments.0.len();
    for (i, segment) in input.segments.0.iter().enumerate() {
        let base = next + segment.gap.0;
        let mut index = SegmentIndex::new(base, input.config.index_interval_bytes);
        let mut bytes = Vec::new();
        let mut views = Vec::new();
        let mut offset = base;
        for spec in &segment.batches.0 {
            offset += spec.gap.0;
            let first_ts = spec.records.0.first().map_or(0, |r| r.ts.0);
            let batch = match spec.control {
                Some(commit) => {
                    let kind = if commit {
                        ControlKind::Commit
                    } else {
                        ControlKind::Abort
                    };
                    Some(RecordBatch::control(offset, kind, 1, 0, 0, first_ts))
                }
                None => {
                    let specs: Vec<_> = spec.records.0.iter().map(|r| r.spec()).collect();
                    let full = RecordBatch::build(offset, &new_records(&specs));
                    // A mask that keeps nothing keeps everything (a batch with no
                    // record is not stored; its offsets are a gap, which `gap` covers).
                    full.retain(|r| spec.kept_mask & (1 << r.offset_delta) != 0)
                        .or(Some(full))
                }
            };
            let Some(batch) = batch else { continue };
            let encoded = batch.encode();
            index.on_batch(
                bytes.len() as u64,
                encoded.len() as u64,
                batch.last_offset(),
                batch.max_timestamp,
            );
            for r in &batch.records {
                views.push(RecordView {
                    offset: batch.offset_of(r),
                    key: r.key.clone(),
                    value: r.value.clone(),
                    ts: batch.timestamp_of(r),
                    control: batch.is_control(),
                });
            }
            bytes.extend_from_slice(&encoded);
            offset = batch.next_offset();
        }
        if i + 1 < count {
            index.on_roll();
        }
        // An empty segment still takes its base: the next one starts after it.
        next = offset.max(base + 1);
        let log_path = dir.join(filename::build(base, filename::LOG_SUFFIX));
        fs.write_new(&log_path, &bytes).expect("write log");
        let offset_index = encode_offset_entries(index.offset_entries());
        let time_index = encode_time_entries(index.time_entries());
        let (offset_bytes, time_bytes) = match &segment.indexes {
            IndexFiles::Exact => (Some(offset_index), Some(time_index)),
            IndexFiles::Missing => (None, None),
            IndexFiles::Cut(n) => {
                let n = usize::from(*n);
                let cut = |mut v: Vec<u8>| {
                    let len = v.len();
                    v.truncate(n % (len + 1));
                    v
                };
                (Some(cut(offset_index)), Some(cut(time_index)))
            }
            IndexFiles::Garbage(bytes) => (Some(bytes.0.clone()), Some(bytes.0.clone())),
        };
        for (suffix, content) in [
            (filename::INDEX_SUFFIX, offset_bytes),
            (filename::TIME_INDEX_SUFFIX, time_bytes),
        ] {
            if let Some(content) = content {
                let path = dir.join(filename::build(base, suffix));
                fs.write_new(&path, &content).expect("write index");
            }
        }
        records.insert(log_path, views);
    }
    let mut damaged = BTreeSet::new();
    match &input.checkpoint {
        Some(CheckpointFile::At(n)) => {
            let span = next - input.first_base.0 + 2;
            let start = input.first_base.0 + i64::from(*n) % span;
            let path = dir.join(checkpoint::CHECKPOINT_NAME);
            fs.write_new(&path, &checkpoint::encode(start))
                .expect("write checkpoint");
        }
        Some(CheckpointFile::Garbage(bytes)) => {
            let path = dir.join(checkpoint::CHECKPOINT_NAME);
            fs.write_new(&path, &bytes.0).expect("write checkpoint");
            damaged.insert(path);
        }
        None => {}
    }
    for leftover in &input.leftovers.0 {
        let (path, content) = match leftover {
            Leftover::CheckpointTmp => (
                dir.join(checkpoint::CHECKPOINT_TMP_NAME),
                checkpoint::encode(next),
            ),
            Leftover::UncommittedTmp => {
                fs.create_dir_all(Path::new(COMPACT_TMP_DIR))
                    .expect("mkdir tmp");
                (
                    Path::new(COMPACT_TMP_DIR).join(filename::build(0, filename::LOG_SUFFIX)),
                    b"half-built".to_vec(),
                )
            }
            Leftover::ManifestTmp => (PathBuf::from(MANIFEST_TMP), b"half-written".to_vec()),
            Leftover::DamagedManifest(bytes) => {
                damaged.insert(PathBuf::from(MANIFEST));
                (PathBuf::from(MANIFEST), bytes.0.clone())
            }
        };
        fs.write_new(&path, &content).expect("write leftover");
    }
    for (i, stranger) in input.strangers.0.iter().enumerate() {
        let (path, content) = match stranger {
            Stranger::Temp => (dir.join(format!("scratch-{i}.tmp")), b"temp".to_vec()),
            Stranger::OddName => (dir.join(format!("{i}.log")), b"not a segment".to_vec()),
            Stranger::Subdir => {
                let sub = dir.join(format!("sub-{i}"));
                fs.create_dir_all(&sub).expect("mkdir sub");
                (sub.join("00000000000000000000.log"), b"nested".to_vec())
            }
        };
        fs.write_new(&path, &content).expect("write stranger");
    }
    for damage in &input.damage.0 {
        let files: Vec<PathBuf> = fs.snapshot().into_keys().collect();
        if files.is_empty() {
            break;
        }
        let pick = |file: u8| files[usize::from(file) % files.len()].clone();
        let path = match damage {
            Damage::Truncate { file, at } => {
                let path = pick(*file);
                let len = fs.len(&path).expect("len");
                fs.set_len(&path, u64::from(*at) % (len + 1))
                    .expect("truncate");
                path
            }
            Damage::FlipBit { file, at, bit } => {
                let path = pick(*file);
                let mut bytes = fs.read_all(&path).expect("read");
                if bytes.is_empty() {
                    continue;
                }
                let at = usize::from(*at) % bytes.len();
                bytes[at] ^= 1 << (bit % 8);
                fs.write_new(&path, &bytes).expect("rewrite");
                path
            }
            Damage::AppendBytes { file, bytes } => {
                let path = pick(*file);
                fs.append(&path, &bytes.0).expect("append");
                path
            }
            Damage::Remove { file } => {
                let path = pick(*file);
                fs.remove_file(&path).expect("remove");
                path
            }
        };
        damaged.insert(path);
    }
    fs.settle();
    BuiltDir {
        fs,
        records,
        damaged,
    }
}

/// Files a successful open may remove: leftovers of the retention and install
/// protocols, and every file of the segments wholly below a valid checkpoint (a
/// checkpointed deletion is committed; recovery finishes it).
fn removable(path: &Path, before: &BTreeMap<PathBuf, Vec<u8>>) -> bool {
    let dir = Path::new(LOG_DIR);
    if path.starts_with(COMPACT_TMP_DIR)
        || path == Path::new(MANIFEST_TMP)
        || path == dir.join(checkpoint::CHECKPOINT_TMP_NAME)
    {
        return true;
    }
    let Some(start) = before
        .get(&dir.join(checkpoint::CHECKPOINT_NAME))
        .and_then(|bytes| checkpoint::decode(bytes).ok())
    else {
        return false;
    };
    let bases: Vec<i64> = segment_logs(before)
        .iter()
        .filter_map(|p| base_of(p))
        .collect();
    // The segment holding the checkpoint (the last base <= it) and all after it stay.
    let keep_from = bases.iter().rposition(|&b| b <= start).unwrap_or(0);
    let below = &bases[..keep_from];
    path.parent() == Some(dir) && base_of(path).is_some_and(|b| below.contains(&b))
}

fn base_of(path: &Path) -> Option<i64> {
    let (base, _) = filename::parse(path.file_name()?.to_str()?)?;
    Some(base)
}

fn is_index(path: &Path) -> bool {
    path.parent() == Some(Path::new(LOG_DIR))
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(filename::parse)
            .is_some_and(|(_, suffix)| suffix != filename::LOG_SUFFIX)
}

/// The `.log` files of the log directory, ascending by base offset.
fn segment_logs(files: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<PathBuf> {
    files
        .keys()
        .filter(|p| p.parent() == Some(Path::new(LOG_DIR)))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(filename::parse)
                .is_some_and(|(_, suffix)| suffix == filename::LOG_SUFFIX)
        })
        .cloned()
        .collect()
}

/// Opens a small arbitrary directory of segment and index files.
///
/// Invariants checked:
/// - `Log::open` never panics.
/// - An open that fails changed nothing (every file and directory as before), except
///   that it may have finished the install and retention protocols first (removed
///   leftovers, or segments wholly below a valid checkpoint); it fails only if
///   something was damaged, and a `Corrupt` error names a damaged file.
/// - An open that succeeds deleted no byte outside a torn active tail: every file
///   other than the index files keeps its bytes, and the last segment's `.log`
///   keeps a prefix. The exceptions are committed deletions and leftovers: the files
///   of segments wholly below a valid retention checkpoint, the checkpoint temp
///   file, and an uncommitted compaction's temp dir and manifest temp (which must be
///   gone). New files are index files only (or the first segment of a directory
///   that had none).
/// - After a successful open every `.log` decodes completely, batch after batch
///   (closed segments were never cut, so they must have been whole), and the engine
///   reads back exactly the records those files hold.
/// - Every record of the segments before the first damaged `.log` is read back
///   exactly; an undamaged directory reads back everything and truncates nothing.
/// - A read-only open (first) changes nothing, even when it fails; when it succeeds it
///   serves exactly the records the writable open then serves.
/// - Recovery is idempotent: a second open changes no byte and finds nothing to repair.
pub fn open_dir(input: &DirInput) -> DirOutcome {
    let built = build_dir(input);
    let fs = built.fs.clone();
    let before = fs.snapshot();
    let dirs_before = fs.snapshot_dirs();
    let logs_before = segment_logs(&before);
    let config = input.config.log_config();
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    // A read-only open first: it must change nothing at all, whatever it finds.
    let read_only = Log::open_read_only(dyn_fs.clone(), LOG_DIR, config.clone())
        .ok()
        .map(|(log, _)| all_records(&log).expect("read a read-only log"));
    assert!(fs.snapshot() == before, "a read-only open changed files");
    assert_eq!(
        fs.snapshot_dirs(),
        dirs_before,
        "a read-only open changed dirs"
    );
    let (log, report) = match Log::open_with(dyn_fs.clone(), LOG_DIR, config.clone()) {
        Ok(opened) => opened,
        Err(e) => {
            // Install and retention recovery run before the segment scan (install
            // recovery decides what the log directory is), so an open that then
            // fails may already have finished those protocols: removed leftovers or
            // segments wholly below a valid checkpoint. Nothing else may change.
            let after = fs.snapshot();
            for (path, bytes) in &after {
                assert!(
                    before.get(path) == Some(bytes),
                    "a failed open ({e}) changed or created {}",
                    path.display()
                );
            }
            let removed: Vec<&PathBuf> =
                before.keys().filter(|p| !after.contains_key(*p)).collect();
            for path in &removed {
                assert!(
                    removable(path, &before),
                    "a failed open ({e}) removed {}",
                    path.display()
                );
            }
            for gone in dirs_before.difference(&fs.snapshot_dirs()) {
                assert!(
                    gone.starts_with(COMPACT_TMP_DIR),
                    "a failed open ({e}) removed {}",
                    gone.display()
                );
            }
            assert!(
                !built.damaged.is_empty(),
                "an undamaged directory failed to open: {e}"
            );
            match &e {
                Error::Corrupt { path, .. } => assert!(
                    built.damaged.contains(path),
                    "corruption reported in an undamaged file: {e}"
                ),
                Error::Unsupported(_) => {}
                other => panic!("unexpected error kind: {other}"),
            }
            return DirOutcome::Refused {
                removed: removed.len(),
            };
        }
    };
    let after = fs.snapshot();
    let last_log = logs_before.last();
    for (path, bytes) in &before {
        if is_index(path) {
            continue;
        }
        let Some(now) = after.get(path) else {
            assert!(removable(path, &before), "open deleted {}", path.display());
            continue;
        };
        if Some(path) == last_log {
            assert!(
                bytes.starts_with(now),
                "the active segment {} is not a prefix of what it was",
                path.display()
            );
        } else {
            assert!(now == bytes, "open changed {}", path.display());
        }
    }
    for path in after.keys().filter(|p| !before.contains_key(*p)) {
        let first_segment = logs_before.is_empty()
            && *path == Path::new(LOG_DIR).join(filename::build(0, filename::LOG_SUFFIX));
        assert!(
            is_index(path) || first_segment,
            "open created {}",
            path.display()
        );
    }
    let dirs_after = fs.snapshot_dirs();
    for gone in dirs_before.difference(&dirs_after) {
        assert!(
            gone.starts_with(COMPACT_TMP_DIR),
            "open removed {}",
            gone.display()
        );
    }

    let read = all_records(&log).expect("read everything after open");
    if let Some(read_only) = &read_only {
        assert!(
            *read_only == read,
            "a read-only open serves {read_only:?}, a writable one {read:?}"
        );
    }
    // An independent reading of the files as they are now: every closed segment
    // decodes completely, batch after batch, and the engine serves exactly those
    // records (the last segment was cut to its valid prefix).
    let logs_after = segment_logs(&after);
    let mut on_disk = Vec::new();
    for (i, path) in logs_after.iter().enumerate() {
        let bytes = &after[path];
        let mut at = 0;
        while at < bytes.len() {
            let (batch, used) = decode(&bytes[at..]).unwrap_or_else(|e| {
                panic!(
                    "open accepted {} (segment {i} of {}) with an undecodable batch at {at}: {e:?}",
                    path.display(),
                    logs_after.len()
                )
            });
            on_disk.extend(batch.records.iter().map(|r| RecordView {
                offset: batch.offset_of(r),
                key: r.key.clone(),
                value: r.value.clone(),
                ts: batch.timestamp_of(r),
                control: batch.is_control(),
            }));
            at += used;
        }
    }
    assert!(
        read == on_disk,
        "the engine reads {read:?}, the files hold {on_disk:?}"
    );
    let mut intact = Vec::new();
    for path in &logs_before {
        if built.damaged.contains(path) {
            break;
        }
        if !after.contains_key(path) {
            continue; // below the checkpoint, checked above
        }
        intact.extend(built.records.get(path).cloned().unwrap_or_default());
    }
    assert!(
        read.starts_with(&intact),
        "records of intact segments are missing: read {read:?}, intact {intact:?}"
    );
    if built.damaged.is_empty() {
        assert_eq!(
            read, intact,
            "an undamaged directory must read back exactly"
        );
        assert_eq!(report.truncated_bytes, 0);
        assert!(report.removed_files.is_empty(), "{report:?}");
        for leftover in [COMPACT_TMP_DIR, MANIFEST_TMP] {
            assert!(
                !fs.exists(Path::new(leftover)),
                "{leftover} survived the open"
            );
        }
    }
    drop(log);

    let settled = fs.snapshot();
    let (again, second) = Log::open_with(dyn_fs, LOG_DIR, config).expect("second open");
    assert!(
        fs.snapshot() == settled,
        "a second open changed files: {second:?}"
    );
    assert!(
        second.is_clean(),
        "a second open repaired something: {second:?}"
    );
    drop(again);
    DirOutcome::Opened {
        truncated_bytes: report.truncated_bytes,
        rebuilt_indexes: report.rebuilt_indexes.len(),
        segments_removed: logs_before
            .iter()
            .filter(|p| !after.contains_key(*p))
            .count(),
    }
}

/// Every record of `log`, from its start.
fn all_records(log: &Log) -> seglog::Result<Vec<RecordView>> {
    Ok(log
        .read(log.log_start_offset(), usize::MAX)?
        .into_iter()
        .map(|r| RecordView {
            offset: r.offset,
            key: r.key.map(|k| k.to_vec()),
            value: r.value.map(|v| v.to_vec()),
            ts: r.timestamp,
            control: r.control,
        })
        .collect())
}

/// What [`open_dir`] saw, so seed replays can show which paths they reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirOutcome {
    /// The open failed, having removed only `removed` leftover or
    /// below-the-checkpoint files.
    Refused { removed: usize },
    Opened {
        truncated_bytes: u64,
        rebuilt_indexes: usize,
        /// Segments removed as wholly below the retention checkpoint.
        segments_removed: usize,
    },
}

// ---- ops_vs_model ----

/// Runs arbitrary steps on the engine (on a `SimFs`) and on the reference spec.
///
/// Invariants checked:
/// - every operation returns the same outcome on both sides (`engine::apply` vs
///   `spec::apply`, the shared workload vocabulary; argument errors are `Rejected`
///   on both sides, nothing else may fail);
/// - after every step the engine's `LogView` (offsets, segment metadata, every record)
///   equals the spec's;
/// - a reopen after a process crash (every completed call survives) truncates nothing
///   and leaves the view unchanged.
pub fn ops_vs_model(input: &OpsInput) -> OpsOutcome {
    let config = input.config.log_config();
    let mut fs = Arc::new(SimFs::new());
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    let (mut log, _) = Log::open_with(dyn_fs, LOG_DIR, config.clone()).expect("open an empty log");
    let mut spec = SpecLog::new(config.segment_bytes);
    let mut done: Vec<Op> = Vec::new();
    let mut outcome = OpsOutcome::default();
    for (i, step) in input.steps.0.iter().enumerate() {
        let context = |done: &[Op]| {
            format!(
                "config {config:?}\nworkload so far (step {i}): {}",
                ops_json(done)
            )
        };
        match step {
            Step::Op(fuzz_op) => {
                let op = fuzz_op.op();
                done.push(op.clone());
                let want = spec::apply(&mut spec, &op);
                let got = engine::apply(&mut log, &op)
                    .unwrap_or_else(|e| panic!("engine failed on {op}: {e}\n{}", context(&done)));
                assert!(
                    got == want,
                    "{op}: engine {got:?}, spec {want:?}\n{}",
                    context(&done)
                );
                outcome.count(&got);
            }
            Step::Reopen => {
                let image = fs
                    .crash_images(CrashMode::Process, 1)
                    .pop()
                    .expect("one process-crash image");
                drop(log);
                fs = Arc::new(image.fs);
                let dyn_fs: Arc<dyn FileSystem> = fs.clone();
                let (reopened, report) = Log::open_with(dyn_fs, LOG_DIR, config.clone())
                    .unwrap_or_else(|e| panic!("reopen failed: {e}\n{}", context(&done)));
                assert_eq!(report.truncated_bytes, 0, "{report:?}\n{}", context(&done));
                log = reopened;
                outcome.reopens += 1;
            }
        }
        let got =
            engine::view(&log).unwrap_or_else(|e| panic!("engine view: {e}\n{}", context(&done)));
        let want = spec::view(&spec);
        assert!(
            got == want,
            "after step {i}: {}\n{}",
            want.diff(&got).join("; "),
            context(&done)
        );
    }
    outcome
}

/// What [`ops_vs_model`] exercised, so seed replays can show what they reach.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpsOutcome {
    pub appends: usize,
    pub rejected: usize,
    pub segments_deleted: usize,
    pub records_compacted_away: u64,
    pub reopens: usize,
}

impl OpsOutcome {
    fn count(&mut self, outcome: &OpOutcome) {
        match outcome {
            OpOutcome::Appended { .. } => self.appends += 1,
            OpOutcome::Rejected => self.rejected += 1,
            OpOutcome::Retained { deleted_segments } => {
                self.segments_deleted += deleted_segments.len()
            }
            OpOutcome::Compacted {
                records_before,
                records_after,
                ..
            } => self.records_compacted_away += records_before.saturating_sub(*records_after),
            _ => {}
        }
    }
}

// ---- crash_recovery ----

/// Picks the disk image a crash of `kind` leaves on `fs`.
fn crash_image(fs: &SimFs, kind: CrashKind) -> (SimFs, Vec<String>, &'static str) {
    let (mode, index, name) = match kind {
        CrashKind::Process => (CrashMode::Process, 0, "process"),
        CrashKind::PowerLoss { image } => (CrashMode::PowerLoss, usize::from(image), "power_loss"),
    };
    let mut images = fs.crash_images(mode, index + 1);
    let pick = index.min(images.len() - 1);
    let image = images.swap_remove(pick);
    let lost = image.lost.iter().map(ToString::to_string).collect();
    (image.fs, lost, name)
}

/// Runs an arbitrary workload, crashes it before an arbitrary file-system call,
/// takes one of the disk images the crash may leave (optionally crashes recovery
/// too) and recovers.
///
/// Invariants checked (the crash sweep's `check_image`):
/// - recovery succeeds, no panic;
/// - the recovered log equals the spec at one of the states the crash allows: from
///   the last durability point before the interrupted op to the state right after it
///   (nothing flushed is lost; an interrupted retention or compaction is exactly old
///   or exactly new);
/// - no install or checkpoint leftovers remain;
/// - a second open changes no byte and gives the same view.
pub fn crash_recovery(input: &CrashInput) -> CrashOutcome {
    let workload = Workload {
        name: "fuzz".into(),
        description: "crash_recovery fuzz input".into(),
        config: input.config.log_config(),
        ops: input.ops.0.iter().map(FuzzOp::op).collect(),
        variant: "manifest".into(),
    };
    let ops_json = ops_json(&workload.ops);
    let states = Allowed::states(&workload).unwrap_or_else(|e| panic!("spec states: {e}"));
    let total = count_operations(&workload)
        .unwrap_or_else(|e| panic!("uninterrupted run failed: {e}\nops {ops_json}"));
    let k = u64::from(input.crash_before) % total.max(1);
    let fs = Arc::new(SimFs::new());
    fs.set_crash_before(k);
    let interrupted = match run_until_crash(&workload, &fs) {
        Ok(Some(interrupted)) => interrupted,
        Ok(None) => panic!("crash before fs op {k} of {total} was never reached\nops {ops_json}"),
        Err(e) => panic!("run failed: {e}\nops {ops_json}"),
    };
    let allowed = states.allowed_after_crash(&workload, interrupted);
    let (image, lost, semantics) = crash_image(&fs, input.crash);
    let scenario = || {
        format!(
            "config {:?}\nops {ops_json}\ncrash before_fs_op = {k} (during op {interrupted:?}), \
             semantics = {semantics}, lost = {lost:?}",
            workload.config
        )
    };
    let violation = |detail: String, rk: Option<u64>, recovery_lost: Vec<String>| Violation {
        workload: workload.name.clone(),
        crash_before_op: k,
        interrupted_op: interrupted,
        mode: semantics.to_string(),
        lost: lost.clone(),
        recovery_crash_before_op: rk,
        recovery_lost,
        detail,
    };
    if let Err(detail) = check_image(&workload, &allowed, &image) {
        let v = violation(detail, None, Vec::new());
        panic!(
            "{v}\n{}\n--- crash scenario (save under crash-scenarios/, check with `seglog replay`):\n{}",
            scenario(),
            Scenario::from_violation(&workload, &v).to_toml()
        );
    }
    let mut outcome = CrashOutcome {
        interrupted,
        lost_items: lost.len(),
        recovery_crashed: false,
    };
    if let Some((rk, kind)) = input.recovery_crash {
        // How many calls does a clean recovery of this image take?
        let probe = Arc::new(duplicate(&image));
        let start = probe.mutating_ops();
        let dyn_probe: Arc<dyn FileSystem> = probe.clone();
        drop(Log::open_with(dyn_probe, LOG_DIR, workload.config.clone()).expect("checked above"));
        let recovery_ops = probe.mutating_ops() - start;
        if recovery_ops > 0 {
            let rk = u64::from(rk) % recovery_ops;
            let nested = Arc::new(duplicate(&image));
            nested.set_crash_before(nested.mutating_ops() + rk);
            let dyn_nested: Arc<dyn FileSystem> = nested.clone();
            let crashed = Log::open_with(dyn_nested, LOG_DIR, workload.config.clone()).is_err();
            assert!(
                crashed,
                "recovery did not reach its call {rk} of {recovery_ops}\n{}",
                scenario()
            );
            let (again, nested_lost, nested_semantics) = crash_image(&nested, kind);
            if let Err(detail) = check_image(&workload, &allowed, &again) {
                // A scenario's `recovery_lost` names the power-loss image; empty is a
                // process crash.
                let recovery_lost = match kind {
                    CrashKind::Process => Vec::new(),
                    CrashKind::PowerLoss { .. } => nested_lost.clone(),
                };
                let v = violation(detail, Some(rk), recovery_lost);
                panic!(
                    "{v}\n{}\nthen recovery_crash_before_op = {rk}, semantics = \
                     {nested_semantics}, lost = {nested_lost:?}\n--- crash scenario \
                     (save under crash-scenarios/, check with `seglog replay`):\n{}",
                    scenario(),
                    Scenario::from_violation(&workload, &v).to_toml()
                );
            }
            outcome.recovery_crashed = true;
        }
    }
    outcome
}

/// What [`crash_recovery`] exercised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashOutcome {
    /// The workload op the crash interrupted (`None`: the initial open).
    pub interrupted: Option<usize>,
    pub lost_items: usize,
    pub recovery_crashed: bool,
}

/// A workload as a JSON array in the shared vocabulary (what scenario files hold).
fn ops_json(ops: &[Op]) -> String {
    let items: Vec<String> = ops.iter().map(ToString::to_string).collect();
    format!("[{}]", items.join(","))
}

//! The checks of the `open_dir` fuzz target. Shared with `tests/fuzz_corpus.rs` (included
//! by path), so `cargo test` replays the committed seeds through exactly what the
//! fuzzer runs. The function panics with a description when an invariant breaks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog::format::batch::decode;
use seglog::format::index::{encode_offset_entries, encode_time_entries};
use seglog::format::{checkpoint, filename};
use seglog::format::{ControlKind, RecordBatch};
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::segment::SegmentIndex;
use seglog::{CorruptKind, Error, Log};
use seglog_suite::workload::{new_records, RecordView};

use crate::common::{CheckpointFile, Damage, DirInput, IndexFiles, Leftover, Stranger, LOG_DIR};

/// The install protocol's siblings of [`LOG_DIR`].
pub const COMPACT_TMP_DIR: &str = "/data/log.compact-tmp";
pub const MANIFEST: &str = "/data/log.compact-manifest";
pub const MANIFEST_TMP: &str = "/data/log.compact-manifest.tmp";

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
    // The log's end: the next offset of the last segment (its base when it is empty).
    let mut end = next;
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
        end = offset;
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
            // A start past the log's end is a forged value (no retention writes
            // one): the open must refuse it naming the checkpoint.
            if start > end {
                damaged.insert(path);
            }
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
            Damage::Forge {
                file,
                batch,
                field,
                value,
            } => {
                let logs: Vec<&PathBuf> = files.iter().filter(|p| is_log(p)).collect();
                if logs.is_empty() {
                    continue;
                }
                let path = logs[usize::from(*file) % logs.len()].clone();
                let bytes = fs.read_all(&path).expect("read");
                let ranges = seglog_suite::damage::batch_ranges(&bytes);
                if ranges.is_empty() {
                    continue;
                }
                let (start, _) = ranges[usize::from(*batch) % ranges.len()];
                let (offset, len) = field.place();
                let forged = seglog_suite::damage::Change::Forge {
                    position: start + offset as u64,
                    len,
                    value: value.0,
                    seal: seglog_suite::damage::Seal::Batch,
                }
                .apply(&bytes);
                let Some(forged) = forged else {
                    continue; // the field already held the value
                };
                fs.write_new(&path, &forged).expect("rewrite");
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
        || is_trust(path)
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

/// The recovery point and the clean-shutdown marker (and their temps): derived
/// checkpoints an open may create, replace or remove.
fn is_trust(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| seglog::format::recovery_point::NAMES.contains(&n))
}

fn is_index(path: &Path) -> bool {
    path.parent() == Some(Path::new(LOG_DIR))
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(filename::parse)
            .is_some_and(|(_, suffix)| suffix != filename::LOG_SUFFIX)
}

fn is_log(path: &Path) -> bool {
    path.parent() == Some(Path::new(LOG_DIR))
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(filename::parse)
            .is_some_and(|(_, suffix)| suffix == filename::LOG_SUFFIX)
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
                // A start offset past the end of what remains: the checkpoint is
                // intact but the segments it is checked against lost their end
                // (a removed or cut `.log`); the open refuses naming the checkpoint.
                Error::Corrupt {
                    path,
                    kind: CorruptKind::PastLogEnd { .. },
                    ..
                } if path.ends_with(checkpoint::CHECKPOINT_NAME) => assert!(
                    built.damaged.contains(path) || built.damaged.iter().any(|p| is_log(p)),
                    "a start offset past the end with no damaged segment: {e}"
                ),
                Error::Corrupt { path, .. } => assert!(
                    built.damaged.contains(path),
                    "corruption reported in an undamaged file: {e}"
                ),
                Error::Unsupported(_) => {}
                other => panic!("unexpected error kind: {other}"),
            }
            return DirOutcome::Refused {
                removed: removed.len(),
                past_log_end: matches!(
                    e,
                    Error::Corrupt {
                        kind: CorruptKind::PastLogEnd { .. },
                        ..
                    }
                ),
            };
        }
    };
    let after = fs.snapshot();
    let last_log = logs_before.last();
    for (path, bytes) in &before {
        if is_index(path) || is_trust(path) {
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
        // An empty directory gets its first segment at the checkpointed start (0
        // without a checkpoint): offsets below it were handed out once.
        let first_base = before
            .get(&Path::new(LOG_DIR).join(checkpoint::CHECKPOINT_NAME))
            .and_then(|bytes| checkpoint::decode(bytes).ok())
            .unwrap_or(0);
        let first_segment = logs_before.is_empty()
            && *path == Path::new(LOG_DIR).join(filename::build(first_base, filename::LOG_SUFFIX));
        assert!(
            is_index(path) || is_trust(path) || first_segment,
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
    /// below-the-checkpoint files; `past_log_end` when it refused a start offset
    /// past the log's end.
    Refused { removed: usize, past_log_end: bool },
    Opened {
        truncated_bytes: u64,
        rebuilt_indexes: usize,
        /// Segments removed as wholly below the retention checkpoint.
        segments_removed: usize,
    },
}

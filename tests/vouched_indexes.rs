//! A closed segment's index files, vouched for by the recovery point, are read at
//! the first lookup that needs them, not at the open (`seglog::segment::vouched`).
//!
//! The failure this holds off: every open after a clean close read, checksummed
//! and decoded both index files of every closed segment (and, on the real disk,
//! kept a descriptor for each), so its cost and its descriptors grew with the
//! segment count although no read needed them.
//!
//! The invariants: an open after a clean close reads no byte of a closed
//! segment's files, writable or read-only, and on the real disk holds no
//! descriptor on them; a read reads the index files of the segment it starts in
//! and of no other. Index files changed behind the log's back are never trusted:
//! a missing or cut one is found at the open (a `stat`) and rebuilt as before; one
//! of the right length that fails its checksum is found at its first lookup, the
//! index is rebuilt from the `.log` in memory (lookups stay right, the log names
//! the file in `Log::rebuilt_indexes`), and a damaged `.log` behind it is an error
//! naming the `.log`.

mod closed_log_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use closed_log_support::{closed_log, config, fill, segment_bases};
use seglog::format::filename;
use seglog::fs::sim::{ReadCount, SimFs};
use seglog::fs::{FileSystem, StdFs};
use seglog::{Error, Log, ReadRecords};

/// The index files of the closed segments of `dir` (all but the last base), with
/// their base offsets, counted from now on.
fn count_closed_indexes(fs: &SimFs, dir: &Path) -> Vec<(i64, PathBuf, ReadCount)> {
    let mut bases = segment_bases(fs, dir);
    bases.pop();
    bases
        .into_iter()
        .flat_map(|base| {
            [filename::INDEX_SUFFIX, filename::TIME_INDEX_SUFFIX].map(|suffix| {
                let path = dir.join(filename::build(base, suffix));
                let count = fs.count_reads(&path).unwrap();
                (base, path, count)
            })
        })
        .collect()
}

fn offsets(records: &ReadRecords) -> Vec<i64> {
    records.offsets().collect()
}

#[test]
fn an_open_after_a_clean_close_reads_no_closed_segment_file() {
    for segments in [10, 100] {
        let (fs, dir) = closed_log(segments);
        for read_only in [true, false] {
            let counts = count_closed_indexes(&fs, dir);
            assert_eq!(counts.len(), 2 * (segments - 1));
            let (log, report) = if read_only {
                Log::open_read_only(fs.clone(), dir, config()).unwrap()
            } else {
                Log::open_with(fs.clone(), dir, config()).unwrap()
            };
            assert_eq!(report.scanned_segments, 0, "{report:?}");
            for (_, path, count) in &counts {
                assert_eq!(fs.bytes_read(*count), 0, "{} read", path.display());
            }
            // A read from the middle of one closed segment loads its indexes and
            // no other segment's: the next ones are walked from their start.
            let infos = log.segments();
            let target = &infos[segments / 2];
            let from = target.base_offset + 2;
            let records = log.read(from, usize::MAX).unwrap();
            assert_eq!(records.first().map(|r| r.offset), Some(from));
            assert_eq!(
                records.last().map(|r| r.offset),
                Some(log.next_offset() - 1)
            );
            for (base, path, count) in &counts {
                let read = fs.bytes_read(*count);
                if *base == target.base_offset {
                    assert_eq!(read, fs.len(path).unwrap(), "{}", path.display());
                } else {
                    assert_eq!(read, 0, "{} read", path.display());
                }
            }
            assert!(log.rebuilt_indexes().is_empty());
            if !read_only {
                log.close().unwrap();
            }
        }
    }
}

/// On the real disk: after a clean close of a 60-segment log, an open holds
/// descriptors on the active segment's files and the lock only, and a read from
/// a closed segment adds that segment's.
#[test]
fn an_open_after_a_clean_close_holds_no_closed_segment_descriptor() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap().join("log");
    fill(Arc::new(StdFs::new()), &dir, 60);
    let under = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
            .filter(|target| target.starts_with(dir))
            .collect()
    };
    let (log, report) = Log::open_with(Arc::new(StdFs::new()), &dir, config()).unwrap();
    assert_eq!(report.scanned_segments, 0, "{report:?}");
    let active = log.segments().last().unwrap().base_offset;
    let active_name = filename::build(active, "");
    let held = under(&dir);
    assert!(
        held.iter().all(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.starts_with(&active_name) || !name.starts_with("0000")
        }),
        "{held:?}"
    );
    assert!(held.len() <= 4, "{held:?}");
    let third = log.segments()[3].base_offset;
    log.read(third + 1, 1).unwrap();
    let third_name = filename::build(third, "");
    let now: Vec<_> = under(&dir)
        .into_iter()
        .filter(|p| !held.contains(p))
        .collect();
    assert!(!now.is_empty());
    assert!(
        now.iter().all(|p| p
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with(&third_name)),
        "{now:?}"
    );
}

/// Flips one byte of the file at `path`, keeping its length.
fn flip(fs: &SimFs, path: &Path, at: usize) {
    let mut bytes = fs.read_all(path).unwrap();
    bytes[at] ^= 0x40;
    fs.write_new(path, &bytes).unwrap();
    fs.sync_file(path).unwrap();
}

#[test]
fn a_damaged_vouched_index_is_rebuilt_at_its_first_lookup() {
    for suffix in [filename::INDEX_SUFFIX, filename::TIME_INDEX_SUFFIX] {
        let (fs, dir) = closed_log(8);
        let (reference, _) = Log::open_read_only_checked(fs.clone(), dir, config()).unwrap();
        let want: Vec<Vec<i64>> = (0..reference.next_offset())
            .map(|from| offsets(&reference.read(from, 300).unwrap()))
            .collect();
        let base = reference.segments()[2].base_offset;
        let path = dir.join(filename::build(base, suffix));
        flip(&fs, &path, 5);
        let damaged = fs.read_all(&path).unwrap();
        for read_only in [true, false] {
            let (log, report) = if read_only {
                Log::open_read_only(fs.clone(), dir, config()).unwrap()
            } else {
                Log::open_with(fs.clone(), dir, config()).unwrap()
            };
            assert_eq!(report.scanned_segments, 0, "{report:?}");
            assert!(log.rebuilt_indexes().is_empty());
            for (from, want) in want.iter().enumerate() {
                let got = offsets(&log.read(from as i64, 300).unwrap());
                assert_eq!(&got, want, "read from {from}");
                let ts = reference
                    .read(from as i64, 1)
                    .unwrap()
                    .first()
                    .unwrap()
                    .timestamp;
                assert_eq!(
                    log.offset_for_timestamp(ts).unwrap(),
                    reference.offset_for_timestamp(ts).unwrap()
                );
            }
            let rebuilt = log.rebuilt_indexes();
            assert_eq!(rebuilt.len(), 1, "{rebuilt:?}");
            assert_eq!(rebuilt[0].0, path);
            assert!(rebuilt[0].1.contains("checksum"), "{rebuilt:?}");
            // The derived file is left as it is, never trusted.
            assert_eq!(fs.read_all(&path).unwrap(), damaged);
            if !read_only {
                log.close().unwrap();
            }
        }
    }
}

/// A `.log` damaged behind a damaged index: the lookup's rebuild scans the `.log`
/// and fails naming it, at the byte the damage is in.
#[test]
fn a_damaged_log_behind_a_damaged_index_fails_the_lookup_naming_the_log() {
    let (fs, dir) = closed_log(6);
    let (log, _) = Log::open_read_only(fs.clone(), dir, config()).unwrap();
    let segment = log.segments()[2].clone();
    drop(log);
    let index = dir.join(filename::build(segment.base_offset, filename::INDEX_SUFFIX));
    let data = dir.join(filename::build(segment.base_offset, filename::LOG_SUFFIX));
    flip(&fs, &index, 1);
    let at = segment.bytes as usize - 5;
    flip(&fs, &data, at);
    let (log, report) = Log::open_read_only(fs.clone(), dir, config()).unwrap();
    assert_eq!(report.scanned_segments, 0, "{report:?}");
    let error = log.read(segment.base_offset + 1, 1).unwrap_err();
    assert!(
        matches!(&error, Error::Corrupt { path, .. } if *path == data),
        "{error:?}"
    );
    // Reads below the segment are not affected.
    assert_eq!(log.read(0, 1).unwrap().first().unwrap().offset, 0);
}

/// A missing or cut index file of a vouched segment is found at the open (its
/// length: what a power loss leaves of index files an open rebuilt without an
/// fsync), the segment scanned and the file rewritten, as Kafka's open rebuilds a
/// missing one.
#[test]
fn a_missing_or_cut_vouched_index_is_rebuilt_at_the_open() {
    for cut in [false, true] {
        let (fs, dir) = closed_log(6);
        let base = Log::open_read_only(fs.clone(), dir, config())
            .unwrap()
            .0
            .segments()[1]
            .base_offset;
        let path = dir.join(filename::build(base, filename::TIME_INDEX_SUFFIX));
        let whole = fs.read_all(&path).unwrap();
        if cut {
            fs.set_len(&path, whole.len() as u64 - 1).unwrap();
        } else {
            fs.remove_file(&path).unwrap();
        }
        let (log, report) = Log::open_with(fs.clone(), dir, config()).unwrap();
        assert_eq!(report.scanned_segments, 1, "{report:?}");
        assert!(
            report
                .rescanned
                .iter()
                .any(|why| why.contains(".timeindex")),
            "{report:?}"
        );
        assert_eq!(fs.read_all(&path).unwrap(), whole);
        log.read(base + 1, 1).unwrap();
        assert!(log.rebuilt_indexes().is_empty());
        log.close().unwrap();
    }
}

//! A read-only open trusts what a writable open trusts: after a clean close it
//! reads no closed segment's data (the recovery point vouches for them) and of
//! the active segment only the batch headers after its last index entry (the
//! marker vouches for the rest), whatever the segment count; damage in a segment
//! it did not read is a structured error naming the file at the first read of it.
//! `Log::open_read_only_checked` (`seglog dump --check`) reads every batch.

mod closed_log_support;

use std::path::{Path, PathBuf};

use closed_log_support::{closed_log, config, segment_bases};
use seglog::format::filename;
use seglog::fs::sim::{ReadCount, SimFs};
use seglog::fs::FileSystem;
use seglog::{Error, Log};

/// Counts the reads of every `.log` of `dir`: (path, is the active one, count).
fn count_logs(fs: &SimFs, dir: &Path) -> Vec<(PathBuf, bool, ReadCount)> {
    let bases = segment_bases(fs, dir);
    let last = bases.len() - 1;
    bases
        .into_iter()
        .enumerate()
        .map(|(i, base)| {
            let path = dir.join(filename::build(base, filename::LOG_SUFFIX));
            let count = fs.count_reads(&path).unwrap();
            (path, i == last, count)
        })
        .collect()
}

#[test]
fn a_read_only_open_after_a_clean_close_reads_no_closed_segment() {
    for segments in [10, 100] {
        let (fs, dir) = closed_log(segments);
        let counts = count_logs(&fs, dir);
        let (log, report) = Log::open_read_only(fs.clone(), dir, config()).unwrap();
        assert_eq!(report.scanned_segments, 0, "{report:?}");
        assert_eq!(report.trusted_segments, segments as u64, "{report:?}");
        for (path, active, count) in &counts {
            let read = fs.bytes_read(*count);
            if *active {
                // Headers after the last index entry: under an index interval.
                assert!(read <= 256 + 61, "{}: {read} bytes", path.display());
            } else {
                assert_eq!(read, 0, "{} was read", path.display());
            }
        }
        // The log is whole: every record reads back.
        let records = log.read(0, usize::MAX).unwrap();
        assert_eq!(records.len() as i64, log.next_offset());
    }
}

#[test]
fn a_checked_read_only_open_reads_every_segment() {
    let (fs, dir) = closed_log(10);
    let counts = count_logs(&fs, dir);
    let (_, report) = Log::open_read_only_checked(fs.clone(), dir, config()).unwrap();
    assert_eq!(report.scanned_segments, 10, "{report:?}");
    for (path, _, count) in &counts {
        assert_eq!(
            fs.bytes_read(*count),
            fs.len(path).unwrap(),
            "{}",
            path.display()
        );
    }
}

/// A flipped byte in a record of a closed segment the recovery point vouches for:
/// the trusting read-only open succeeds without reading it, the first read of it
/// fails naming the file; the checked open refuses at once, naming the same file.
#[test]
fn damage_in_a_trusted_segment_is_found_at_the_first_read() {
    let (fs, dir) = closed_log(5);
    let path = dir.join(filename::build(0, filename::LOG_SUFFIX));
    let mut bytes = fs.read_all(&path).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 1;
    fs.write_new(&path, &bytes).unwrap();
    let (log, report) = Log::open_read_only(fs.clone(), dir, config()).unwrap();
    assert_eq!(report.scanned_segments, 0, "{report:?}");
    let error = log.read(0, usize::MAX).unwrap_err();
    assert!(
        matches!(&error, Error::Corrupt { path: p, .. } if *p == path),
        "{error:?}"
    );
    let checked = Log::open_read_only_checked(fs.clone(), dir, config()).unwrap_err();
    assert!(
        matches!(&checked, Error::Corrupt { path: p, .. } if *p == path),
        "{checked:?}"
    );
}

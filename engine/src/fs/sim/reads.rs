//! Read counting: how many bytes the engine read from a chosen file.
//!
//! [`SimFs::count_reads`] names a file; from then on every read entry point of
//! the simulated [`FileSystem`](crate::fs::FileSystem) (`read_at`, and `read_all`
//! and `map`, which `SimFs` serves through it) adds the bytes it returns from that
//! file to its count, under any of the
//! file's names (hard links share one inode, so one count). A file that replaces
//! it under the same name later (a rename over it, as an open rewrites a derived
//! file) is a new file and is not counted. [`SimFs::bytes_read`] gives the count. The damage stage uses it to hold
//! an open to the format's bounds: a file larger than its format allows must not
//! be read whole.

use std::collections::BTreeMap;
use std::path::Path;

use super::state::State;
use super::tree::Ino;
use super::SimFs;

/// The counted files, by inode, and the bytes read from each so far.
#[derive(Debug, Default)]
pub(super) struct Reads {
    counted: BTreeMap<Ino, u64>,
}

impl Reads {
    /// Adds `bytes` read from the file at `path` (in `state`) if it is counted:
    /// the hook of every read (`SimFs::read_at`).
    pub(super) fn note(&mut self, state: &State, path: &Path, bytes: usize) {
        if self.counted.is_empty() {
            return;
        }
        let Some(ino) = state.resolve(path) else {
            return;
        };
        if let Some(count) = self.counted.get_mut(&ino) {
            *count = count.saturating_add(bytes as u64);
        }
    }
}

/// One counted file ([`SimFs::count_reads`]): what [`SimFs::bytes_read`] asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadCount {
    ino: Ino,
}

impl SimFs {
    /// Counts, from now on, the bytes every read returns from the file at `path`
    /// (through any of its names, and after it is renamed or removed), starting
    /// from 0. `None` (and nothing counted) when no file is there.
    pub fn count_reads(&self, path: &Path) -> Option<ReadCount> {
        let mut inner = self.lock();
        let inner = &mut *inner;
        inner.state.file(path).ok()?;
        let ino = inner.state.resolve(path)?;
        inner.reads.counted.insert(ino, 0);
        Some(ReadCount { ino })
    }

    /// The bytes read so far from the file `count` counts.
    pub fn bytes_read(&self, count: ReadCount) -> u64 {
        let inner = self.lock();
        inner.reads.counted.get(&count.ino).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::fs::sim::SimFs;
    use crate::fs::FileSystem;

    fn fixture() -> SimFs {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        fs.write_new(Path::new("/d/a"), &[7; 100]).unwrap();
        fs.write_new(Path::new("/d/b"), &[8; 10]).unwrap();
        fs
    }

    #[test]
    fn every_read_entry_point_is_counted() {
        let fs = fixture();
        let a = Path::new("/d/a");
        let count = fs.count_reads(a).unwrap();
        assert_eq!(fs.bytes_read(count), 0);
        let mut buf = [0; 30];
        assert_eq!(fs.read_at(a, 90, &mut buf).unwrap(), 10);
        assert_eq!(fs.bytes_read(count), 10, "the bytes returned, not asked");
        assert_eq!(fs.read_all(a).unwrap().len(), 100);
        assert_eq!(fs.bytes_read(count), 110);
        assert_eq!(fs.map(a).unwrap().len(), 100);
        assert_eq!(fs.bytes_read(count), 210);
    }

    #[test]
    fn only_the_counted_file_is_counted_under_all_its_names() {
        let fs = fixture();
        let (a, b, link) = (Path::new("/d/a"), Path::new("/d/b"), Path::new("/d/l"));
        fs.hard_link(a, link).unwrap();
        let count = fs.count_reads(a).unwrap();
        fs.read_all(b).unwrap();
        assert_eq!(fs.bytes_read(count), 0, "another file");
        fs.read_all(link).unwrap();
        assert_eq!(fs.bytes_read(count), 100, "a hard link is the same file");
        // A file renamed over the counted one is another file.
        fs.rename(b, a).unwrap();
        fs.read_all(a).unwrap();
        assert_eq!(fs.bytes_read(count), 100);
        fs.read_all(link).unwrap();
        assert_eq!(
            fs.bytes_read(count),
            200,
            "still counted under its other name"
        );
        assert_eq!(fs.count_reads(Path::new("/d/missing")), None);
        assert_eq!(
            fs.count_reads(Path::new("/d")),
            None,
            "a directory is no file"
        );
    }
}

//! The compaction fixture and run: `seglog bench --only compact` and
//! `benches/compaction.rs`.
//!
//! The fixture is a closed region of about 256 MiB at the default 1,000,000 keys:
//! every 16-byte key written twice with 100-byte values (so 50% of the records are
//! obsolete), in 64 MiB segments, plus a small active segment. With `partial`, the
//! second round rewrites only a scattered half of the keys, so that every batch of
//! the first round is partly kept.

use std::path::{Path, PathBuf};
use std::time::Duration;

use seglog::compaction::CompactOptions;
use seglog::error::{Error, Result};
use seglog::format::{filename, NewRecord, RecordBatch};
use seglog::fs::FileSystem;
use seglog::install::InstallPaths;

/// Segment size of the fixture and of the compacted output.
pub const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;
const VALUE_BYTES: usize = 100;
const BATCH_RECORDS: u64 = 100;

/// A log directory to compact.
#[derive(Debug, Clone)]
pub struct CompactionFixture {
    pub dir: PathBuf,
    /// Bytes of every file in `dir` (the closed region and the active segment).
    pub input_bytes: u64,
    pub keys: u64,
}

impl CompactionFixture {
    /// Writes the fixture for `keys` distinct keys into the new directory `dir`.
    pub fn write(
        fs: &dyn FileSystem,
        dir: &Path,
        keys: u64,
        partial: bool,
    ) -> Result<CompactionFixture> {
        Self::write_with(fs, dir, keys, partial, false)
    }

    /// [`CompactionFixture::write`] with every fifth batch (20% of the records)
    /// written by a transactional producer and followed by its ABORT marker: 20% of
    /// the records in aborted transactions.
    pub fn write_aborted(fs: &dyn FileSystem, dir: &Path, keys: u64) -> Result<CompactionFixture> {
        Self::write_with(fs, dir, keys, false, true)
    }

    fn write_with(
        fs: &dyn FileSystem,
        dir: &Path,
        keys: u64,
        partial: bool,
        aborted: bool,
    ) -> Result<CompactionFixture> {
        if keys < 2 {
            return Err(Error::InvalidArgument(
                "a compaction fixture needs 2 keys or more".into(),
            ));
        }
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |e| Error::io(path, e)
        };
        fs.create_dir_all(dir).map_err(io(dir))?;
        let mut writer = SegmentWriter::new(fs, dir)?;
        let value = vec![b'v'; VALUE_BYTES];
        for round in 0..2u64 {
            let written = if partial && round == 1 {
                keys / 2
            } else {
                keys
            };
            for chunk in 0..written.div_ceil(BATCH_RECORDS) {
                let records: Vec<NewRecord> = (chunk * BATCH_RECORDS
                    ..((chunk + 1) * BATCH_RECORDS).min(written))
                    .map(|k| {
                        // The partial round rewrites keys k * 7919 mod keys.
                        let id = match (partial, round) {
                            (true, 1) => (k * 7919) % keys,
                            _ => (k + round * (keys / 2)) % keys,
                        };
                        let key = format!("key-{id:012}").into_bytes();
                        NewRecord::new(Some(key), Some(value.clone()), (round * keys + k) as i64)
                    })
                    .collect();
                if aborted && chunk % 5 == 0 {
                    let producer = i64::try_from(round * keys + chunk).unwrap_or(i64::MAX);
                    let mut batch = RecordBatch::build(writer.next, &records);
                    batch.attributes |= seglog::format::batch::ATTR_TRANSACTIONAL;
                    batch.producer_id = producer;
                    batch.producer_epoch = 0;
                    writer.write_batch(&batch)?;
                    let marker = RecordBatch::control(
                        writer.next,
                        seglog::format::ControlKind::Abort,
                        producer,
                        0,
                        0,
                        0,
                    );
                    writer.write_batch(&marker)?;
                } else {
                    writer.write(&records, false)?;
                }
            }
        }
        // A small active segment.
        let active = NewRecord::new(Some(b"active".to_vec()), Some(value), 0);
        writer.write(&[active], true)?;
        writer.finish()?;
        let mut input_bytes = 0;
        for name in fs.list_dir(dir).map_err(io(dir))? {
            let path = dir.join(name);
            input_bytes += fs.len(&path).map_err(io(&path))?;
        }
        Ok(CompactionFixture {
            dir: dir.to_path_buf(),
            input_bytes,
            keys,
        })
    }

    /// Install step 1 (offset map over every segment, rewrite of the closed region,
    /// copy of the active segment, fsync of every file) into `D.compact-tmp`, which
    /// is removed afterwards; its time and the build.
    pub fn build(&self, fs: &dyn FileSystem) -> Result<(Duration, seglog::compaction::Built)> {
        self.build_with(fs, seglog::compaction::CompactionPolicy::Seed)
    }

    /// [`CompactionFixture::build`] under `policy` (one pass from scratch, unbounded).
    pub fn build_with(
        &self,
        fs: &dyn FileSystem,
        policy: seglog::compaction::CompactionPolicy,
    ) -> Result<(Duration, seglog::compaction::Built)> {
        let options = CompactOptions {
            now: i64::MAX / 2,
            delete_retention_ms: 0,
            segment_bytes: SEGMENT_BYTES,
        };
        let clean = seglog::compaction::CleanOptions {
            policy,
            ..seglog::compaction::CleanOptions::default()
        };
        let start = super::Stopwatch::start();
        let built = seglog::compaction::build_with(fs, &self.dir, options, clean)?
            .ok_or_else(|| Error::InvalidArgument("the fixture has nothing to compact".into()))?;
        let took = start.stop();
        let tmp = InstallPaths::new(&self.dir)?.tmp;
        fs.remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        Ok((took, built))
    }
}

/// Appends batches to 64 MiB segment files (the fixture skips the log's bookkeeping).
struct SegmentWriter<'a> {
    fs: &'a dyn FileSystem,
    dir: &'a Path,
    next: i64,
    segment_bytes: u64,
    path: PathBuf,
}

impl<'a> SegmentWriter<'a> {
    fn new(fs: &'a dyn FileSystem, dir: &'a Path) -> Result<Self> {
        let path = dir.join(filename::build(0, filename::LOG_SUFFIX));
        fs.create_file(&path).map_err(|e| Error::io(&path, e))?;
        Ok(SegmentWriter {
            fs,
            dir,
            next: 0,
            segment_bytes: 0,
            path,
        })
    }

    fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let bytes = batch.encode();
        self.put(&bytes, false)?;
        self.next = batch.next_offset();
        Ok(())
    }

    fn write(&mut self, records: &[NewRecord], force_roll: bool) -> Result<()> {
        let batch = RecordBatch::build(self.next, records).encode();
        self.put(&batch, force_roll)?;
        self.next += records.len() as i64;
        Ok(())
    }

    fn put(&mut self, batch: &[u8], force_roll: bool) -> Result<()> {
        if force_roll || self.segment_bytes + batch.len() as u64 > SEGMENT_BYTES {
            self.fs
                .sync_file(&self.path)
                .map_err(|e| Error::io(&self.path, e))?;
            self.segment_bytes = 0;
            self.path = self
                .dir
                .join(filename::build(self.next, filename::LOG_SUFFIX));
            self.fs
                .create_file(&self.path)
                .map_err(|e| Error::io(&self.path, e))?;
        }
        self.fs
            .append(&self.path, batch)
            .map_err(|e| Error::io(&self.path, e))?;
        self.segment_bytes += batch.len() as u64;
        Ok(())
    }

    fn finish(self) -> Result<()> {
        self.fs
            .sync_file(&self.path)
            .map_err(|e| Error::io(&self.path, e))?;
        self.fs
            .sync_dir(self.dir)
            .map_err(|e| Error::io(self.dir, e))
    }
}

#[cfg(test)]
mod tests {
    use seglog::fs::sim::SimFs;

    use super::*;

    #[test]
    fn the_fixture_compacts_to_its_latest_records() {
        let fs = SimFs::new();
        for partial in [false, true] {
            let dir = PathBuf::from(format!("/bench-{partial}"));
            let fixture = CompactionFixture::write(&fs, &dir, 500, partial).unwrap();
            assert!(fixture.input_bytes > 0);
            let (_, built) = fixture.build(&fs).unwrap();
            // Both rounds of the closed region; the active segment's record is apart.
            let before = if partial { 750 } else { 1_000 };
            assert_eq!(built.report.records_before, before);
            // Every key's latest record survives; the active segment's key is new.
            assert_eq!(built.report.records_after, 500);
            assert_eq!(built.report.map_keys, 501);
            assert!(!fs.exists(&InstallPaths::new(&dir).unwrap().tmp));
        }
    }

    #[test]
    fn the_aborted_fixture_loses_its_aborted_records() {
        let fs = SimFs::new();
        let fixture = CompactionFixture::write_aborted(&fs, Path::new("/aborted"), 1_000).unwrap();
        let (_, built) = fixture.build(&fs).unwrap();
        // 2 rounds of 1,000 keys in batches of 100: 4 of 20 batches aborted, and
        // each round-1 record is superseded by its round-2 write unless that is
        // aborted (2 of 10 round-2 batches): 200 round-1 records stay, with the 600
        // committed round-2 records.
        assert_eq!(built.report.records_before, 2_000 + 4);
        assert_eq!(built.report.records_after, 800 + 4, "{:?}", built.report);
    }
}

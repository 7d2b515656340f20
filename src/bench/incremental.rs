//! Incremental compaction with 10% of the log dirty against compacting the same log
//! from scratch, in the same run: `seglog bench --only
//! incremental`. The fixture is a log of `keys` distinct keys (16-byte keys,
//! 100-byte values, 16 MiB segments) cleaned once by an incremental pass (so every
//! segment has its key summary), then 10% of the keys written again: the first
//! tenth of the key space (`clustered`, the keys of the oldest segments: what a
//! per-segment summary can exploit) or a scattered tenth (every segment touched:
//! nothing can be carried, so this shows the cost of the summaries alone).

use std::path::{Path, PathBuf};
use std::time::Duration;

use seglog::compaction::pass::full as scan;
use seglog::compaction::pass::incremental::map_pass;
use seglog::compaction::{build, build_with, CleanOptions, CompactOptions, CompactionReport};
use seglog::error::{Error, Result};
use seglog::format::checkpoint::CLEAN_POINT_NAME;
use seglog::fs::{FileSystem, StdFs};
use seglog::install::InstallPaths;
use seglog::log::{Log, LogConfig};
use seglog::segment::list_segments;
use seglog::NewRecord;

/// Segment size of the fixture and of the output.
pub const SEGMENT_BYTES: u64 = 16 * 1024 * 1024;
const BATCH_RECORDS: u64 = 1_000;
const NOW: i64 = 1;
const DELETE_RETENTION_MS: i64 = 1_000;

/// A log whose clean section has key summaries, with a dirty tenth.
#[derive(Debug, Clone)]
pub struct IncrementalFixture {
    pub dir: PathBuf,
    pub keys: u64,
    pub dirty_keys: u64,
    pub clustered: bool,
    /// Bytes of the segment files.
    pub bytes: u64,
    pub clean_point: i64,
    /// Segment size of the log and of the output.
    pub segment_bytes: u64,
}

fn config(segment_bytes: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        ..LogConfig::default()
    }
}

fn write_keys(log: &mut Log, keys: impl Iterator<Item = u64>, round: u8) -> Result<()> {
    let value = vec![b'a' + round; 100];
    let mut batch = Vec::with_capacity(BATCH_RECORDS as usize);
    for k in keys {
        batch.push(NewRecord::new(
            Some(format!("key-{k:012}").into_bytes()),
            Some(value.clone()),
            0,
        ));
        if batch.len() as u64 == BATCH_RECORDS {
            log.append(&batch)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        log.append(&batch)?;
    }
    Ok(())
}

impl IncrementalFixture {
    /// Writes the fixture into the new directory `dir` ([`SEGMENT_BYTES`] segments
    /// for the bench).
    pub fn write(
        dir: &Path,
        keys: u64,
        clustered: bool,
        segment_bytes: u64,
    ) -> Result<IncrementalFixture> {
        if keys < 10 {
            return Err(Error::InvalidArgument(
                "the incremental fixture needs 10 keys or more".into(),
            ));
        }
        let dirty_keys = keys / 10;
        let (mut log, _) = Log::open(dir, config(segment_bytes))?;
        write_keys(&mut log, 0..keys, 0)?;
        log.roll()?;
        // The previous pass: incremental (a bounded map, so not the full scan), so
        // every output segment gets its key summary.
        let knobs = CleanOptions {
            dedupe_buffer_bytes: Some((keys + 1_000) * 24),
            min_compaction_lag_ms: 0,
            ..CleanOptions::default()
        };
        log.clean(NOW, DELETE_RETENTION_MS, None, knobs)?;
        if clustered {
            write_keys(&mut log, 0..dirty_keys, 1)?;
        } else {
            write_keys(&mut log, (0..dirty_keys).map(|k| (k * 7_919) % keys), 1)?;
        }
        log.roll()?;
        log.append(&[NewRecord::new(Some(b"active".to_vec()), None, 0)])?;
        let clean_point = log.clean_point()?;
        log.close()?;
        let fs = StdFs::new();
        let mut bytes = 0;
        for base in list_segments(&fs, dir)? {
            let path = seglog::segment::segment_path(dir, base, ".log");
            bytes += fs.len(&path).map_err(|e| Error::io(&path, e))?;
        }
        Ok(IncrementalFixture {
            dir: dir.to_path_buf(),
            keys,
            dirty_keys,
            clustered,
            bytes,
            clean_point,
            segment_bytes,
        })
    }

    fn options(&self) -> CompactOptions {
        CompactOptions {
            now: NOW,
            delete_retention_ms: DELETE_RETENTION_MS,
            segment_bytes: self.segment_bytes,
        }
    }

    fn remove_tmp(&self, fs: &dyn FileSystem) -> Result<()> {
        let tmp = InstallPaths::new(&self.dir)?.tmp;
        fs.remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))
    }

    /// Install step 1 of the incremental pass (from the clean point), its time and
    /// report; the temp dir is removed afterwards.
    pub fn build_incremental(&self, fs: &dyn FileSystem) -> Result<(Duration, CompactionReport)> {
        let start = super::Stopwatch::start();
        let built = build_with(fs, &self.dir, self.options(), CleanOptions::default())?
            .ok_or_else(|| Error::InvalidArgument("nothing to clean".into()))?;
        let took = start.stop();
        assert_eq!(built.report.clean_point_before, self.clean_point);
        self.remove_tmp(fs)?;
        Ok((took, built.report))
    }

    /// Install step 1 of a compaction of the same log from scratch (its clean point
    /// file set aside for the run, so the full two-thread scan runs).
    pub fn build_from_scratch(&self, fs: &dyn FileSystem) -> Result<(Duration, CompactionReport)> {
        let point = self.dir.join(CLEAN_POINT_NAME);
        let aside = self.dir.with_extension("clean-point-aside");
        fs.rename(&point, &aside)
            .map_err(|e| Error::io(&point, e))?;
        let start = super::Stopwatch::start();
        let built = build(fs, &self.dir, self.options());
        let took = start.stop();
        fs.rename(&aside, &point)
            .map_err(|e| Error::io(&aside, e))?;
        let built = built?.ok_or_else(|| Error::InvalidArgument("nothing to compact".into()))?;
        assert_eq!(built.report.segments_carried, 0);
        self.remove_tmp(fs)?;
        Ok((took, built.report))
    }

    /// The incremental map pass alone (the dirty section into the map).
    pub fn map_incremental(&self, fs: &dyn FileSystem) -> Result<Duration> {
        let bases = list_segments(fs, &self.dir)?;
        let start = super::Stopwatch::start();
        let (mapped, _) = map_pass(
            fs,
            &self.dir,
            &bases,
            self.clean_point,
            NOW,
            CleanOptions::default(),
        )?;
        let took = start.stop();
        if mapped as u64 > self.dirty_keys + 1 {
            return Err(Error::InvalidArgument(format!(
                "mapped {mapped} keys, expected at most {}",
                self.dirty_keys + 1
            )));
        }
        Ok(took)
    }

    /// The full compaction's map pass (every segment).
    pub fn map_full(&self, fs: &dyn FileSystem) -> Result<Duration> {
        let bases = list_segments(fs, &self.dir)?;
        let start = super::Stopwatch::start();
        let scan = scan::scan(fs, &self.dir, &bases)?;
        let took = start.stop();
        if (scan.superseded.keys as u64) < self.keys {
            return Err(Error::InvalidArgument("the full map missed keys".into()));
        }
        Ok(took)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clustered_dirt_carries_the_untouched_segments_and_scattered_dirt_none() {
        let root = tempfile::tempdir().unwrap();
        let fs = StdFs::new();
        // 40,000 keys (about 5 MiB) in 512 KiB segments: about ten clean segments.
        for clustered in [true, false] {
            let dir = root.path().join(format!("log-{clustered}"));
            let fixture = IncrementalFixture::write(&dir, 40_000, clustered, 512 * 1024).unwrap();
            let (_, incremental) = fixture.build_incremental(&fs).unwrap();
            let (_, scratch) = fixture.build_from_scratch(&fs).unwrap();
            assert_eq!(incremental.records_after, scratch.records_after);
            assert_eq!(incremental.bytes_after, scratch.bytes_after);
            assert_eq!(incremental.segments_after, scratch.segments_after);
            if clustered {
                // The dirty tenth is the oldest segment's keys: most are untouched.
                assert!(incremental.segments_carried >= 6, "{incremental:?}");
                assert!(incremental.bytes_carried > fixture.bytes / 2);
            } else {
                // Every segment holds some of a scattered tenth.
                assert_eq!(incremental.segments_carried, 0, "{incremental:?}");
            }
            fixture.map_incremental(&fs).unwrap();
            fixture.map_full(&fs).unwrap();
        }
    }
}

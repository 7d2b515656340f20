//! The exact crash oracle: which one state a disk image must recover to.
//!
//! A range of acceptable outcomes ("old or new", "anything from the last durability
//! point on") lets a recovery that picks the wrong side pass. The durable state of an
//! image decides the side, so the oracle reads it, never the engine's opinion of it:
//! * **install** (an interrupted `compact` or `clean`): this install's manifest (one
//!   that lists exactly the new segment files) survived in the image means *new*; so
//!   does a live directory that already holds exactly the new segment layout and the
//!   new clean point with no sibling left (the install ran to its last step; a pass
//!   may move only the clean point, so the layout alone cannot tell); anything else
//!   is *old*. The clean point is part of every compared state, so recovering the
//!   right segments under the wrong clean point is a violation;
//! * **retention** (an interrupted `retain`): the checkpoint in the image holds the new
//!   `log_start_offset` means *new*, otherwise *old*;
//! * **appends** since the last durability point: the latest candidate state whose
//!   every segment file is in the image at least as long as the spec says. Recovery
//!   keeps every whole batch and cuts only a torn one, so any other result lost a batch
//!   the image still held whole (or kept one it did not).
//!
//! These are facts of the image as it lies on disk, before recovery touches it: read
//! with the file-system trait, without the engine's decoder.

use std::collections::BTreeMap;
use std::path::Path;

use seglog_model::spec::SpecLog;

use seglog::format::manifest::Manifest;
use seglog::format::{checkpoint, filename};
use seglog::fs::FileSystem;
use seglog::install::InstallPaths;

use super::LOG_DIR;

/// What an image holds durably, as far as the oracle needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageFacts {
    /// The `.log` files (base offset -> length) listed by the `D.compact-manifest`
    /// next to the log directory, if it exists and decodes.
    pub manifest: Option<BTreeMap<i64, u64>>,
    /// Any other install sibling (temp dir, backup, manifest temp) exists.
    pub install_siblings: bool,
    /// The value of `log-start-offset.checkpoint` in the log directory, if it parses.
    pub checkpoint: Option<i64>,
    /// The value of `cleaner-offset.checkpoint` in the log directory, if it parses.
    pub clean_point: Option<i64>,
    /// `.log` files in the log directory: base offset -> length.
    pub segments: BTreeMap<i64, u64>,
}

impl ImageFacts {
    /// Reads the facts of the image `fs` (the log at [`LOG_DIR`]).
    pub fn read(fs: &dyn FileSystem) -> ImageFacts {
        let live = Path::new(LOG_DIR);
        let paths = InstallPaths::new(live).expect("LOG_DIR has a name");
        let install_siblings = [&paths.tmp, &paths.backup, &paths.manifest_tmp]
            .into_iter()
            .any(|p| fs.exists(p));
        let checkpoint = fs
            .read_all(&live.join(checkpoint::CHECKPOINT_NAME))
            .ok()
            .and_then(|bytes| checkpoint::decode(&bytes).ok());
        let clean_point = fs
            .read_all(&live.join(checkpoint::CLEAN_POINT_NAME))
            .ok()
            .and_then(|bytes| checkpoint::decode_clean_point(&bytes).ok());
        let mut segments = BTreeMap::new();
        if fs.is_dir(live) {
            for name in fs.list_dir(live).unwrap_or_default() {
                if let Some((base, filename::LOG_SUFFIX)) = filename::parse(&name) {
                    if let Ok(len) = fs.len(&live.join(&name)) {
                        segments.insert(base, len);
                    }
                }
            }
        }
        let manifest = fs
            .read_all(&paths.manifest)
            .ok()
            .and_then(|bytes| Manifest::decode(&bytes).ok())
            .map(|m| {
                m.files
                    .iter()
                    .filter_map(|f| match filename::parse(&f.name) {
                        Some((base, filename::LOG_SUFFIX)) => Some((base, f.bytes)),
                        _ => None,
                    })
                    .collect()
            });
        ImageFacts {
            manifest,
            install_siblings,
            checkpoint,
            clean_point,
            segments,
        }
    }

    /// True if every segment of `spec` has its `.log` file in the image, at least as
    /// long as the spec's segment: recovery can (and so must) reach `spec`.
    pub fn holds(&self, spec: &SpecLog) -> bool {
        spec.raw_segments().iter().all(|s| {
            self.segments
                .get(&s.base_offset)
                .is_some_and(|len| *len >= s.bytes())
        })
    }

    /// True if the log directory holds exactly `spec`'s segment files, each exactly as
    /// long, and no install sibling is left: an install that ran to its end.
    pub fn is_exactly(&self, spec: &SpecLog) -> bool {
        let start = spec.log_start_offset();
        !self.install_siblings
            && self.clean_point.unwrap_or(start).max(start) == spec.clean_point()
            && self.segments.len() == spec.raw_segments().len()
            && spec
                .raw_segments()
                .iter()
                .all(|s| self.segments.get(&s.base_offset) == Some(&s.bytes()))
    }

    /// The side of an interrupted compaction this image is on: `Some(reason)` for new.
    pub fn install_committed(&self, new: &SpecLog) -> Option<&'static str> {
        let layout: BTreeMap<i64, u64> = new
            .raw_segments()
            .iter()
            .map(|s| (s.base_offset, s.bytes()))
            .collect();
        if self.manifest.as_ref() == Some(&layout) {
            Some("this install's manifest is durable: new")
        } else if self.is_exactly(new) {
            Some("the live directory is the new content and no sibling is left: new")
        } else {
            None
        }
    }

    /// The side of an interrupted retention: `Some(reason)` for new.
    pub fn retention_committed(&self, old: &SpecLog, new: &SpecLog) -> Option<String> {
        let wanted = new.log_start_offset();
        (wanted > old.log_start_offset() && self.checkpoint.is_some_and(|c| c >= wanted))
            .then(|| format!("the checkpoint holds {wanted}: new"))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use seglog::fs::sim::SimFs;
    use seglog::log::{Log, LogConfig};
    use seglog::NewRecord;

    fn log_with_two_segments(fs: &Arc<SimFs>) -> SpecLog {
        let dyn_fs: Arc<dyn FileSystem> = fs.clone();
        let (mut log, _) = Log::open_with(dyn_fs, LOG_DIR, LogConfig::default()).unwrap();
        let mut spec = SpecLog::new(LogConfig::default().segment_bytes);
        for ts in [1, 2] {
            let record = NewRecord::new(Some(b"k".to_vec()), Some(b"v".to_vec()), ts);
            log.append(std::slice::from_ref(&record)).unwrap();
            spec.append(&[seglog_model::spec::SpecRecordInput {
                key: Some(b"k".to_vec()),
                value: Some(b"v".to_vec()),
                timestamp: ts,
            }])
            .unwrap();
            log.roll().unwrap();
            spec.roll();
        }
        log.close().unwrap();
        spec
    }

    #[test]
    fn holds_needs_every_segment_at_least_as_long() {
        let fs = Arc::new(SimFs::new());
        let spec = log_with_two_segments(&fs);
        let facts = ImageFacts::read(&*fs);
        assert_eq!(facts.segments.len(), 3);
        assert!(facts.holds(&spec));
        assert!(facts.is_exactly(&spec));
        assert!(facts.manifest.is_none() && !facts.install_siblings);
        assert_eq!(facts.checkpoint, None);

        let mut longer = spec.clone();
        longer
            .append(&[seglog_model::spec::SpecRecordInput {
                key: None,
                value: Some(b"x".to_vec()),
                timestamp: 3,
            }])
            .unwrap();
        assert!(!facts.holds(&longer), "the active file is shorter");
        assert!(!facts.is_exactly(&longer));

        let first = Path::new(LOG_DIR).join(filename::build(0, filename::LOG_SUFFIX));
        fs.remove_file(&first).unwrap();
        let facts = ImageFacts::read(&*fs);
        assert!(!facts.holds(&spec), "a segment file is missing");
    }

    #[test]
    fn retention_side_follows_the_checkpoint() {
        let fs = Arc::new(SimFs::new());
        let old = log_with_two_segments(&fs);
        let mut new = old.clone();
        new.delete_prefix(&[0]).unwrap();
        let facts = ImageFacts::read(&*fs);
        assert_eq!(facts.retention_committed(&old, &new), None);
        let path = Path::new(LOG_DIR).join(checkpoint::CHECKPOINT_NAME);
        fs.write_new(&path, &checkpoint::encode(new.log_start_offset()))
            .unwrap();
        let facts = ImageFacts::read(&*fs);
        assert!(facts.retention_committed(&old, &new).is_some());
        // A retention that deletes nothing has no side to choose.
        assert_eq!(facts.retention_committed(&old, &old), None);
    }
}

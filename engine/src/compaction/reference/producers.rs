//! The producers' walk the passes took before the header walk
//! (`crate::compaction::headers::walk`) served both the transaction rules and
//! [`ActiveProducers`]: the tests hold [`ActiveProducers::of_facts`] to it.

use std::path::Path;

use crate::compaction::rules::retain_empty::{ActiveProducers, ProducerBatch};
use crate::error::{Error, Result};
use crate::format::batch::{
    decode_header, ATTR_CONTROL, ATTR_TRANSACTIONAL, PRODUCER_EPOCH_OFFSET, PRODUCER_ID_OFFSET,
};
use crate::format::filename::LOG_SUFFIX;
use crate::fs::FileSystem;
use crate::segment::files::segment_path;

/// [`ActiveProducers::of`] the batch headers of the segments `bases` of `dir`
/// (the last one active; a torn tail ends the walk, as the reads report it).
pub(crate) fn gather(
    fs: &dyn FileSystem,
    dir: &Path,
    bases: &[i64],
    now: i64,
    producer_id_expiration_ms: i64,
) -> Result<ActiveProducers> {
    let mut batches = Vec::new();
    for &base in bases {
        let path = segment_path(dir, base, LOG_SUFFIX);
        let bytes = fs.map(&path).map_err(|e| Error::io(&path, e))?;
        let mut at = 0usize;
        while at < bytes.len() {
            let rest = &bytes[at..];
            let header = decode_header(rest).map_err(|e| e.at(&path, at as u64))?;
            if rest.len() < header.size {
                break;
            }
            let epoch = &rest[PRODUCER_EPOCH_OFFSET..PRODUCER_EPOCH_OFFSET + 2];
            let pid = &rest[PRODUCER_ID_OFFSET..PRODUCER_ID_OFFSET + 8];
            batches.push(ProducerBatch {
                producer_id: i64::from_be_bytes(pid.try_into().expect("eight bytes")),
                producer_epoch: i16::from_be_bytes(epoch.try_into().expect("two bytes")),
                control: header.attributes & ATTR_CONTROL != 0,
                transactional: header.attributes & ATTR_TRANSACTIONAL != 0,
                last_offset: header.base_offset + i64::from(header.last_offset_delta),
                max_timestamp: header.max_timestamp,
            });
            at += header.size;
        }
    }
    Ok(ActiveProducers::of(batches, now, producer_id_expiration_ms))
}

#[cfg(test)]
mod tests {
    use crate::compaction::reference::producers as reference;
    use crate::compaction::reseal::write_empty;
    use crate::compaction::rules::retain_empty::ActiveProducers;
    use crate::format::batch::{ATTR_TRANSACTIONAL, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};
    use crate::format::{NewRecord, RecordBatch};

    /// One walk's facts give the reference walk's producers on a log written to
    /// disk: epochs bumped, a producer without a data batch at its epoch, an
    /// idempotent (non-transactional) producer, an open transaction, multi-record
    /// batches, an empty marker (no record: not transactional to the transaction
    /// rules) and batches of no producer, over two segments.
    #[test]
    fn one_walk_gives_the_reference_producers() {
        use crate::compaction::headers as txn;
        use crate::format::filename::LOG_SUFFIX;
        use crate::format::ControlKind;
        use crate::fs::sim::SimFs;
        use crate::fs::FileSystem;
        use crate::segment::files::segment_path;
        use std::path::Path;

        let data = |base: i64, pid: i64, epoch: i16, transactional: bool, ts: i64| {
            let records = [
                NewRecord::new(Some(b"a".to_vec()), None, ts - 1),
                NewRecord::new(Some(b"b".to_vec()), None, ts),
            ];
            let mut batch = RecordBatch::build(base, &records);
            if pid != NO_PRODUCER_ID {
                batch.producer_id = pid;
                batch.producer_epoch = epoch;
            }
            if transactional {
                batch.attributes |= ATTR_TRANSACTIONAL;
            }
            batch.encode()
        };
        let marker = |base: i64, kind, pid: i64, epoch: i16, ts: i64| {
            RecordBatch::control(base, kind, pid, epoch, 0, ts).encode()
        };
        let mut empty_marker = Vec::new();
        write_empty(
            &marker(13, ControlKind::Commit, 5, 2, 40),
            &mut empty_marker,
        );
        let segments: [(i64, Vec<Vec<u8>>); 2] = [
            (
                0,
                vec![
                    data(0, 1, 0, true, 10),
                    marker(2, ControlKind::Commit, 1, 0, 20),
                    data(3, 2, 0, true, 10),
                    marker(5, ControlKind::Abort, 2, 1, 30),
                ],
            ),
            (
                6,
                vec![
                    data(6, 3, 4, false, 2),
                    data(8, 4, 0, true, 1),
                    data(10, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, false, 1),
                    marker(12, ControlKind::Abort, 5, 1, 3),
                    empty_marker,
                ],
            ),
        ];
        let fs = SimFs::new();
        let dir = Path::new("/one-walk");
        fs.create_dir_all(dir).unwrap();
        for (base, batches) in &segments {
            let path = segment_path(dir, *base, LOG_SUFFIX);
            fs.create_file(&path).unwrap();
            for batch in batches {
                fs.append(&path, batch).unwrap();
            }
        }
        let bases = [0, 6];
        let walk = txn::walk(&fs, dir, &bases).unwrap();
        assert_eq!(walk.batches.len(), 9);
        assert_eq!(walk.closed_batches, 4);
        assert!(walk.transactional);
        for (now, expiration_ms) in [(40, 25), (41, 25), (44, 25), (45, 25), (60, 1_000)] {
            let got = ActiveProducers::of_facts(&walk.batches, now, expiration_ms);
            let want = reference::gather(&fs, dir, &bases, now, expiration_ms).unwrap();
            assert_eq!(got, want, "now {now}, expiration {expiration_ms}");
        }
        let active = ActiveProducers::of_facts(&walk.batches, 40, 25);
        assert_eq!(active.get(1).unwrap().last_data_offset, Some(1));
        assert_eq!(active.get(1).unwrap().last_timestamp, 20);
        assert_eq!(active.get(2).unwrap().epoch, 1);
        assert_eq!(active.get(2).unwrap().last_data_offset, None);
        assert_eq!(active.get(3), None, "40 - 2 >= 25");
        assert!(active.get(4).unwrap().open_transaction);
        assert_eq!(active.get(5).unwrap().epoch, 2);
        assert!(!active.get(5).unwrap().open_transaction);
        assert!(ActiveProducers::of_facts(&walk.batches, 100, 1_000)
            .get(3)
            .is_some_and(|p| p.epoch == 4 && p.last_data_offset == Some(7)));
    }
}

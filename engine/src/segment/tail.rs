//! The end of a trusted active segment, read from its data: the batch headers from
//! its offset index's last entry to the end its summary names, as Kafka's
//! `LogSegment.readNextOffset` reads the batches after the last index entry on a
//! clean start. The clean-shutdown marker is CRC-sealed, but a seal only says the
//! file is whole, not that its numbers describe this segment (a forged or foreign
//! marker): the next offset the log hands out comes from the batches themselves.
//! Reads one header per batch after the last index entry (at most about
//! `index.interval.bytes` of batches), never a record.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::batch::{decode_header, HEADER_LEN};
use crate::fs::FileSystem;

/// Walks the batch headers of `path` from `position` (a batch start: the last
/// offset index entry's, or 0) to `end`. `Ok(Ok(next))` is the offset after the
/// last batch (`base_offset` for an empty range at 0); `Ok(Err(why))` says why
/// the bytes are no chain of batches ending exactly at `end`; `Err` is IO.
pub fn next_offset_from(
    fs: &dyn FileSystem,
    path: &Path,
    position: u64,
    end: u64,
    base_offset: i64,
) -> Result<std::result::Result<i64, String>> {
    let mut at = position;
    let mut next = None;
    let mut header = [0u8; HEADER_LEN];
    while at < end {
        if at.saturating_add(HEADER_LEN as u64) > end {
            return Ok(Err(format!("a batch header at {at} runs past {end}")));
        }
        let read = fs
            .read_at(path, at, &mut header)
            .map_err(|e| Error::io(path, e))?;
        if read < HEADER_LEN {
            return Ok(Err(format!(
                "the file ends inside the batch header at {at}"
            )));
        }
        let batch = match decode_header(&header) {
            Ok(batch) => batch,
            Err(e) => return Ok(Err(format!("the batch header at {at}: {e:?}"))),
        };
        let after = at.saturating_add(batch.size as u64);
        if after > end {
            return Ok(Err(format!(
                "the batch at {at} ({} bytes) runs past {end}",
                batch.size
            )));
        }
        next = Some(batch.last_offset().saturating_add(1));
        at = after;
    }
    match next {
        Some(next) => Ok(Ok(next)),
        None if position == 0 => Ok(Ok(base_offset)),
        None => Ok(Err(format!(
            "no batch between the last index entry at {position} and {end}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{NewRecord, RecordBatch};
    use crate::fs::sim::SimFs;

    fn segment(fs: &SimFs, path: &Path, bases: &[(i64, usize)]) -> Vec<u64> {
        fs.create_file(path).unwrap();
        let mut starts = Vec::new();
        let mut at = 0;
        for (base, records) in bases {
            let records: Vec<NewRecord> = (0..*records)
                .map(|i| NewRecord::new(None, Some(vec![b'v'; i + 1]), 5))
                .collect();
            let bytes = RecordBatch::build(*base, &records).encode();
            starts.push(at);
            at += bytes.len() as u64;
            fs.append(path, &bytes).unwrap();
        }
        starts.push(at);
        starts
    }

    #[test]
    fn the_next_offset_is_the_last_batchs_from_any_batch_start() {
        let fs = SimFs::new();
        let path = Path::new("/s.log");
        let starts = segment(&fs, path, &[(10, 2), (12, 3), (15, 1)]);
        let end = *starts.last().unwrap();
        for start in &starts[..3] {
            assert_eq!(
                next_offset_from(&fs, path, *start, end, 10).unwrap(),
                Ok(16)
            );
        }
        assert_eq!(next_offset_from(&fs, path, 0, 0, 10).unwrap(), Ok(10));
    }

    #[test]
    fn an_end_inside_a_batch_or_past_the_file_is_no_chain() {
        let fs = SimFs::new();
        let path = Path::new("/s.log");
        let starts = segment(&fs, path, &[(0, 2), (2, 2)]);
        let end = *starts.last().unwrap();
        // An end the batches do not reach exactly.
        assert!(next_offset_from(&fs, path, 0, end - 1, 0).unwrap().is_err());
        assert!(next_offset_from(&fs, path, 0, end + 5, 0).unwrap().is_err());
        // A start that is no batch start.
        assert!(next_offset_from(&fs, path, 1, end, 0).unwrap().is_err());
        // A start at the end past an index entry: no batch to read.
        assert!(next_offset_from(&fs, path, end, end, 0).unwrap().is_err());
    }
}

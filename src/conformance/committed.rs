//! `read_committed` compared with the spec: from every position `log_start_offset
//! - 1 ..= next_offset + 1`, [`Log::read_with`] at [`Isolation::ReadCommitted`]
//! (unbounded) returns the records of [`SpecLog::read_committed`] (data records
//! below the last stable offset, none of an aborted transaction, no marker), or
//! both sides refuse the position. Only for a log holding a transactional batch
//! (data or marker): without one `read_committed` is `read` below `next_offset`,
//! which [`super::compare::compare_reads`] checks already.

use seglog_model::spec::SpecLog;

use crate::log::{Isolation, Log};
use crate::workload::RecordView;
use crate::Error;

/// The comparison (module docs); returns the reads made.
pub fn compare_committed(log: &Log, spec_log: &SpecLog) -> Result<u64, String> {
    if !spec_log.batches().any(|b| b.transactional) {
        return Ok(0);
    }
    let mut reads = 0;
    for from in spec_log.log_start_offset() - 1..=spec_log.next_offset() + 1 {
        reads += 1;
        let engine = match log.read_with(from, usize::MAX, Isolation::ReadCommitted) {
            Ok(records) => Some(records.into_iter().map(RecordView::from).collect()),
            Err(Error::OffsetOutOfRange { .. }) => None,
            Err(e) => return Err(format!("read_committed({from}) failed: {e}")),
        };
        let spec: Option<Vec<RecordView>> = spec_log
            .read_committed(from)
            .ok()
            .map(|records| records.into_iter().map(RecordView::from).collect());
        if engine != spec {
            let offsets = |r: &Option<Vec<RecordView>>| {
                r.as_ref()
                    .map(|r| r.iter().map(|r| r.offset).collect::<Vec<_>>())
            };
            return Err(format!(
                "read_committed({from}): engine {:?} spec {:?}",
                offsets(&engine),
                offsets(&spec)
            ));
        }
    }
    Ok(reads)
}

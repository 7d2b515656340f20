//! [`Compactor::plan`]: the seed policy's reference compactor, the whole compaction
//! as a pure function of decoded segments.
//!
//! The cleaner ([`seglog::compaction::build`](fn@seglog::compaction::build)) streams
//! the same decisions segment by segment without holding the log in memory; this
//! form keeps everything, for tests and comparison with the reference spec. Both
//! use the engine's seed rules ([`seglog::compaction::rules::seed`]).

use seglog::format::RecordBatch;

use seglog::compaction::map::OffsetMap;
use seglog::compaction::rules::seed::{compact_batch, Grouper, Horizon, Placement};
use seglog::compaction::CompactionReport;

/// One source segment: its base offset and decoded batches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSegment {
    /// The segment's base offset.
    pub base_offset: i64,
    /// Its batches, in offset order.
    pub batches: Vec<RecordBatch>,
}

/// One output segment of the closed region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputSegment {
    /// The base offset of the first source segment in its group.
    pub base_offset: i64,
    /// Its batches after compaction, in offset order.
    pub batches: Vec<RecordBatch>,
}

/// The decision for a whole log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionPlan {
    /// The new closed region (empty when there was no closed segment).
    pub closed: Vec<OutputSegment>,
    /// Counts as the cleaner reports them.
    pub report: CompactionReport,
}

/// The seed compaction policy as a pure function of decoded segments.
#[derive(Debug, Clone, Copy)]
pub struct Compactor;

impl Compactor {
    /// Plans the compaction of `segments` (the last one is the active segment and
    /// is only read for the latest-offset map). Pure.
    pub fn plan(
        segments: &[SourceSegment],
        horizon: Horizon,
        segment_bytes: u64,
    ) -> CompactionPlan {
        let mut map = OffsetMap::new();
        for segment in segments {
            for batch in segment.batches.iter().filter(|b| !b.is_control()) {
                for record in &batch.records {
                    if let Some(key) = &record.key {
                        map.insert(key, batch.offset_of(record));
                    }
                }
            }
        }
        map.finish();
        let mut report = CompactionReport {
            map_keys: map.len() as u64,
            map_bytes: map.resident_bytes() as u64,
            map_bytes_peak: map.peak_bytes() as u64,
            ..CompactionReport::default()
        };
        let closed = segments.split_last().map_or(&[][..], |(_, closed)| closed);
        let mut grouper = Grouper::new(segment_bytes);
        let mut out: Vec<OutputSegment> = Vec::new();
        for segment in closed {
            let kept: Vec<RecordBatch> = segment
                .batches
                .iter()
                .filter_map(|b| compact_batch(b, &map, horizon))
                .collect();
            let bytes_before: usize = segment.batches.iter().map(RecordBatch::encoded_len).sum();
            let bytes_after: usize = kept.iter().map(RecordBatch::encoded_len).sum();
            report.records_before += segment
                .batches
                .iter()
                .map(|b| b.records.len() as u64)
                .sum::<u64>();
            report.records_after += kept.iter().map(|b| b.records.len() as u64).sum::<u64>();
            report.bytes_before += bytes_before as u64;
            report.bytes_after += bytes_after as u64;
            match (grouper.place(bytes_after as u64), out.last_mut()) {
                (Placement::Join, Some(group)) => group.batches.extend(kept),
                _ => out.push(OutputSegment {
                    base_offset: segment.base_offset,
                    batches: kept,
                }),
            }
        }
        report.segments_before = closed.len() as u64;
        report.segments_after = out.len() as u64;
        CompactionPlan {
            closed: out,
            report,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seglog::format::NewRecord;

    fn rec(key: &str, value: Option<&str>, ts: i64) -> NewRecord {
        NewRecord::new(
            Some(key.as_bytes().to_vec()),
            value.map(|v| v.as_bytes().to_vec()),
            ts,
        )
    }

    #[test]
    fn groups_and_counts() {
        let segments = vec![
            SourceSegment {
                base_offset: 0,
                batches: vec![RecordBatch::build(
                    0,
                    &[rec("a", Some("1"), 0), rec("b", Some("1"), 0)],
                )],
            },
            SourceSegment {
                base_offset: 2,
                batches: vec![RecordBatch::build(2, &[rec("a", Some("2"), 0)])],
            },
            SourceSegment {
                base_offset: 3,
                batches: vec![RecordBatch::build(3, &[rec("b", None, 0)])],
            },
        ];
        let horizon = Horizon {
            now: 0,
            delete_retention_ms: 0,
        };
        let plan = Compactor::plan(&segments, horizon, 1 << 20);
        // b=1 is obsoleted by the active tombstone; a=1 by a=2.
        assert_eq!(plan.report.records_before, 3);
        assert_eq!(plan.report.records_after, 1);
        assert_eq!(plan.report.segments_after, 1);
        assert_eq!(plan.closed[0].base_offset, 0);
        assert_eq!(plan.closed[0].batches.len(), 1);
        assert_eq!(plan.closed[0].batches[0].base_offset, 2);
        // Tiny segments: every source starts its own group, the first one empty.
        let plan = Compactor::plan(&segments, horizon, 1);
        let bases: Vec<i64> = plan.closed.iter().map(|s| s.base_offset).collect();
        assert_eq!(bases, vec![0, 2]);
        assert!(plan.closed[0].batches.is_empty());
        // No closed segment: nothing.
        let plan = Compactor::plan(&segments[2..], horizon, 1);
        assert!(plan.closed.is_empty());
        assert_eq!(plan.report.segments_before, 0);
    }
}

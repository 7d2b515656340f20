//! The in-memory image of a segment's `.index` and `.timeindex`, and Kafka's rule
//! for when each gets an entry (`LogSegment.append` / `recover`).
//!
//! For each batch, in file order:
//! 1. if `batch.maxTimestamp > maxTimestampSoFar`, remember
//!    `(batch.maxTimestamp, batch.lastOffset)` as the max so far;
//! 2. if more than `index_interval_bytes` were written since the last entry, append
//!    the offset entry `(batch.lastOffset - base, position of the batch)` and
//!    `maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar)` to the time index,
//!    which appends only if the timestamp is greater than the last entry's
//!    (an empty time index behaves as if its last timestamp were -1);
//! 3. add the batch's bytes to the bytes since the last entry.
//!
//! When the segment is rolled (becomes inactive) the time index gets one final
//! `maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar)`.
//!
//! Recovery recomputes the same entries from the `.log` (plus the final time entry,
//! as Kafka's `LogSegment.recover` does) for an index file it must rebuild, so
//! append and recovery share this one implementation. A file that is valid by
//! Kafka's rules (`super::validate`) is kept instead, and its entries replace the
//! computed ones here ([`SegmentIndex::adopt`]).
//!
//! ## When entries are written (Kafka's `LogSegment.append`, `engine/src/segment/index.rs`)
//! For each batch, in file order: remember `(maxTimestamp, lastOffset)` when it raises the
//! segment's max timestamp; when the bytes since the last entry exceed
//! `index_interval_bytes`, append the offset entry `(lastOffset - base, position)` and
//! `maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar)` to the time index (only a
//! timestamp above the last entry's), and reset the count; add the batch's size. A roll and
//! a close add one final `maybeAppend` (Kafka's `onBecomeInactiveSegment`). So the first
//! batch of a segment is never indexed, a closed segment's time index ends with its max
//! timestamp, and, since an open restarts the count at 0 as Kafka's does, seglog and Kafka
//! index the same batches after a restart.
//!
//! Both indexes live in memory (one entry per `index_interval_bytes`); new entries are
//! appended to the files in bulk, before every fsync of the segment and whenever 64 KiB
//! are pending. `read(from)` starts at the last offset entry <= `from`;
//! `offset_for_timestamp(ts)` skips segments whose max timestamp is < `ts`, starts at the
//! last time entry <= `ts` and scans batch headers to the first batch reaching `ts`.

use crate::format::batch::NO_TIMESTAMP;
use crate::format::index::{OffsetEntry, TimeEntry};

/// What one batch added to the indexes (to be appended to the files).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexAppend {
    /// The `.index` entry the batch added, if the index interval was reached.
    pub offset: Option<OffsetEntry>,
    /// The `.timeindex` entry the batch added, if its max timestamp is a new maximum.
    pub time: Option<TimeEntry>,
}

/// Both sparse indexes of one segment, plus the state Kafka's rule needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentIndex {
    base_offset: i64,
    index_interval_bytes: u64,
    offset_entries: Vec<OffsetEntry>,
    time_entries: Vec<TimeEntry>,
    bytes_since_last_entry: u64,
    max_timestamp_so_far: i64,
    offset_of_max_timestamp_so_far: i64,
}

impl SegmentIndex {
    /// The indexes of an empty segment at `base_offset`, with an entry every `index_interval_bytes`.
    pub fn new(base_offset: i64, index_interval_bytes: u64) -> Self {
        assert!(base_offset >= 0);
        SegmentIndex {
            base_offset,
            index_interval_bytes,
            offset_entries: Vec::new(),
            time_entries: Vec::new(),
            bytes_since_last_entry: 0,
            max_timestamp_so_far: NO_TIMESTAMP,
            offset_of_max_timestamp_so_far: base_offset,
        }
    }

    /// The index of a segment opened from its summary: entries read back from the
    /// index files, checked against the summary by the rules every entry this type
    /// appends obeys (offsets and positions strictly increasing and inside the
    /// segment, timestamps strictly increasing, none above the segment's maximum).
    /// `Err` says which rule failed; the caller rebuilds the index from the `.log`.
    pub fn restore(
        base_offset: i64,
        index_interval_bytes: u64,
        offset_entries: Vec<OffsetEntry>,
        time_entries: Vec<TimeEntry>,
        summary: &crate::format::recovery_point::SegmentSummary,
    ) -> Result<Self, String> {
        if offset_entries.len() != summary.offset_index_entries as usize {
            return Err(format!(
                "{} offset index entries, the summary says {}",
                offset_entries.len(),
                summary.offset_index_entries
            ));
        }
        if time_entries.len() != summary.time_index_entries as usize {
            return Err(format!(
                "{} time index entries, the summary says {}",
                time_entries.len(),
                summary.time_index_entries
            ));
        }
        // The summary's numbers come from disk: a span that does not fit is no segment.
        let span = summary
            .next_offset
            .checked_sub(base_offset)
            .filter(|span| *span >= 0)
            .ok_or_else(|| {
                format!(
                    "next offset {} is below the base offset {base_offset}",
                    summary.next_offset
                )
            })?;
        for pair in offset_entries.windows(2) {
            let [a, b] = pair else { continue };
            if b.relative_offset <= a.relative_offset || b.position <= a.position {
                return Err(format!(
                    "offset index entries out of order: {a:?} then {b:?}"
                ));
            }
        }
        if let Some(last) = offset_entries.last() {
            if i64::from(last.relative_offset) >= span || u64::from(last.position) >= summary.bytes
            {
                return Err(format!("offset index entry {last:?} beyond the segment"));
            }
        }
        for pair in time_entries.windows(2) {
            let [a, b] = pair else { continue };
            if b.timestamp <= a.timestamp || b.relative_offset < a.relative_offset {
                return Err(format!("time index entries out of order: {a:?} then {b:?}"));
            }
        }
        if let Some(last) = time_entries.last() {
            if i64::from(last.relative_offset) >= span.max(1)
                || last.timestamp > summary.max_timestamp
            {
                return Err(format!("time index entry {last:?} beyond the segment"));
            }
            // A roll and a close end the time index with the largest timestamp
            // (`on_roll`), so a summary that claims a larger one is not this
            // segment's.
            if last.timestamp != summary.max_timestamp {
                return Err(format!(
                    "the time index ends at timestamp {}, the summary says {}",
                    last.timestamp, summary.max_timestamp
                ));
            }
        }
        if time_entries.is_empty() && summary.max_timestamp != NO_TIMESTAMP {
            return Err(format!(
                "the time index is empty, the summary says timestamp {}",
                summary.max_timestamp
            ));
        }
        // The last entry's position is below `summary.bytes` (checked above).
        let bytes_since_last_entry = summary.bytes.saturating_sub(
            offset_entries
                .last()
                .map_or(0, |entry| u64::from(entry.position)),
        );
        Ok(SegmentIndex {
            base_offset,
            index_interval_bytes,
            offset_entries,
            time_entries,
            bytes_since_last_entry,
            max_timestamp_so_far: summary.max_timestamp,
            offset_of_max_timestamp_so_far: summary.offset_of_max_timestamp,
        })
    }

    /// The offset of the batch that holds the maximum timestamp so far (the base
    /// offset while there is none): what a summary records to restore this index.
    pub fn offset_of_max_timestamp(&self) -> i64 {
        self.offset_of_max_timestamp_so_far
    }

    /// The `.index` entries so far.
    pub fn offset_entries(&self) -> &[OffsetEntry] {
        &self.offset_entries
    }

    /// The `.timeindex` entries so far.
    pub fn time_entries(&self) -> &[TimeEntry] {
        &self.time_entries
    }

    /// Relative offset of `offset` in this segment; the caller has checked the range.
    fn relative(&self, offset: i64) -> u32 {
        let relative = offset
            .checked_sub(self.base_offset)
            .expect("an offset of the segment and its base differ by an i64");
        assert!(
            relative >= 0,
            "offset {offset} below base {}",
            self.base_offset
        );
        u32::try_from(relative).expect("relative offset checked against u32 by the caller")
    }

    /// Applies Kafka's rule for a batch of `size_bytes` at `position` (see module docs).
    pub fn on_batch(
        &mut self,
        position: u64,
        size_bytes: u64,
        last_offset: i64,
        max_timestamp: i64,
    ) -> IndexAppend {
        let mut added = IndexAppend::default();
        if max_timestamp > self.max_timestamp_so_far {
            self.max_timestamp_so_far = max_timestamp;
            self.offset_of_max_timestamp_so_far = last_offset;
        }
        if self.bytes_since_last_entry > self.index_interval_bytes {
            let entry = OffsetEntry {
                relative_offset: self.relative(last_offset),
                position: u32::try_from(position).expect("position checked by the caller"),
            };
            if let Some(last) = self.offset_entries.last() {
                assert!(entry.relative_offset > last.relative_offset);
                assert!(entry.position > last.position);
            }
            self.offset_entries.push(entry);
            added.offset = Some(entry);
            added.time = self.time_maybe_append();
            self.bytes_since_last_entry = 0;
        }
        self.bytes_since_last_entry = self.bytes_since_last_entry.saturating_add(size_bytes);
        added
    }

    /// The final time index entry Kafka adds when the segment becomes inactive.
    pub fn on_roll(&mut self) -> Option<TimeEntry> {
        self.time_maybe_append()
    }

    /// Replaces the entries with those of index files found valid on open (the
    /// max timestamp so far, from the scan, stays). An entry of the kept file may
    /// differ from the computed one (Kafka's append indexes whole appends; a closed
    /// file carries the close-time entry); later entries follow the kept ones.
    pub fn adopt(&mut self, offsets: Option<Vec<OffsetEntry>>, times: Option<Vec<TimeEntry>>) {
        if let Some(entries) = offsets {
            for pair in entries.windows(2) {
                let [a, b] = pair else { continue };
                assert!(a.relative_offset < b.relative_offset && a.position < b.position);
            }
            self.offset_entries = entries;
        }
        if let Some(entries) = times {
            for pair in entries.windows(2) {
                let [a, b] = pair else { continue };
                assert!(a.timestamp < b.timestamp && a.relative_offset <= b.relative_offset);
            }
            if let Some(last) = entries.last() {
                assert!(last.timestamp <= self.max_timestamp_so_far);
            }
            self.time_entries = entries;
        }
    }

    /// What Kafka's `LogSegment` does when it is loaded: the byte count since the
    /// last index entry starts again at 0 (so an append after a reopen gets its next
    /// entry after `index_interval_bytes` more bytes, exactly as in Kafka).
    pub fn on_open(&mut self) {
        self.bytes_since_last_entry = 0;
    }

    fn time_maybe_append(&mut self) -> Option<TimeEntry> {
        let last_timestamp = self
            .time_entries
            .last()
            .map_or(NO_TIMESTAMP, |e| e.timestamp);
        if self.max_timestamp_so_far <= last_timestamp {
            return None;
        }
        let entry = TimeEntry {
            timestamp: self.max_timestamp_so_far,
            relative_offset: self.relative(self.offset_of_max_timestamp_so_far),
        };
        if let Some(last) = self.time_entries.last() {
            assert!(entry.relative_offset >= last.relative_offset);
        }
        self.time_entries.push(entry);
        Some(entry)
    }

    /// Byte position to start scanning for `offset`: the position of the last
    /// indexed batch whose last offset is <= `offset`, or 0.
    pub fn lookup_position(&self, offset: i64) -> u64 {
        let relative = offset.saturating_sub(self.base_offset);
        if relative < 0 {
            return 0;
        }
        let after = self
            .offset_entries
            .partition_point(|e| i64::from(e.relative_offset) <= relative);
        match after
            .checked_sub(1)
            .and_then(|i| self.offset_entries.get(i))
        {
            Some(entry) => u64::from(entry.position),
            None => 0,
        }
    }

    /// Offset to start scanning for the first timestamp >= `timestamp`: the offset of
    /// the last time index entry with timestamp <= `timestamp`, or the base offset.
    /// Every batch before that offset has a max timestamp < `timestamp`.
    pub fn lookup_timestamp(&self, timestamp: i64) -> i64 {
        let after = self
            .time_entries
            .partition_point(|e| e.timestamp <= timestamp);
        match after.checked_sub(1).and_then(|i| self.time_entries.get(i)) {
            Some(entry) => self
                .base_offset
                .saturating_add(i64::from(entry.relative_offset)),
            None => self.base_offset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::recovery_point::SegmentSummary;

    fn summary_of(times: &[TimeEntry]) -> SegmentSummary {
        SegmentSummary {
            base_offset: 100,
            bytes: 1000,
            next_offset: 120,
            records: 20,
            batches: 20,
            // A roll or a close ends the time index with the largest timestamp.
            max_timestamp: times.last().map_or(NO_TIMESTAMP, |e| e.timestamp),
            offset_of_max_timestamp: 119,
            offset_index_entries: 0,
            time_index_entries: times.len() as u32,
            offset_index_crc: 0,
            time_index_crc: 0,
        }
    }

    /// `restore` holds a trusted segment's time index to the rules the appender
    /// obeys: timestamps strictly rising, offsets never falling (an entry whose
    /// offset falls would start a timestamp lookup past its record). Equal offsets
    /// pass: the rule is Kafka's (`TimeIndex` entries only need monotonic offsets).
    #[test]
    fn restore_refuses_time_entries_whose_offsets_fall() {
        let entry = |timestamp, relative_offset| TimeEntry {
            timestamp,
            relative_offset,
        };
        let restore = |times: Vec<TimeEntry>| {
            let summary = summary_of(&times);
            SegmentIndex::restore(100, 4096, Vec::new(), times, &summary)
        };
        assert!(restore(vec![entry(10, 2), entry(20, 5), entry(30, 9)]).is_ok());
        assert!(restore(vec![entry(10, 2), entry(20, 2)]).is_ok());
        let falling = restore(vec![entry(10, 6), entry(20, 5)]).unwrap_err();
        assert!(falling.contains("out of order"), "{falling}");
        let same_time = restore(vec![entry(10, 2), entry(10, 5)]).unwrap_err();
        assert!(same_time.contains("out of order"), "{same_time}");
    }

    /// A summary's largest timestamp is where a roll or a close ended the time
    /// index: a summary that claims another (a CRC-valid lie the damage stage
    /// forges) is refused, so the segment is scanned instead of trusted.
    #[test]
    fn restore_refuses_a_largest_timestamp_the_time_index_does_not_end_at() {
        let times = vec![
            TimeEntry {
                timestamp: 10,
                relative_offset: 2,
            },
            TimeEntry {
                timestamp: 30,
                relative_offset: 9,
            },
        ];
        let restore = |max_timestamp: i64, times: Vec<TimeEntry>| {
            let summary = SegmentSummary {
                max_timestamp,
                ..summary_of(&times)
            };
            SegmentIndex::restore(100, 4096, Vec::new(), times, &summary)
        };
        assert!(restore(30, times.clone()).is_ok());
        let above = restore(31, times.clone()).unwrap_err();
        assert!(above.contains("ends at timestamp 30"), "{above}");
        let below = restore(29, times).unwrap_err();
        assert!(below.contains("beyond the segment"), "{below}");
        assert!(restore(NO_TIMESTAMP, Vec::new()).is_ok());
        let untimed = restore(0, Vec::new()).unwrap_err();
        assert!(untimed.contains("time index is empty"), "{untimed}");
    }

    #[test]
    fn kafka_rule_indexes_after_interval_and_uses_max_so_far() {
        let mut index = SegmentIndex::new(100, 150);
        // Batches of 100 bytes; offsets 100..=109, 110..=119, ...
        let mut position = 0;
        let mut added = Vec::new();
        for (i, ts) in [5, 3, 9, 9, 7].iter().enumerate() {
            let last = 109 + 10 * i as i64;
            added.push(index.on_batch(position, 100, last, *ts));
            position += 100;
        }
        // After batch 0: 100 bytes (not > 150). After batch 1: 200 > 150, so batch 2 is indexed.
        assert_eq!(added[0], IndexAppend::default());
        assert_eq!(added[1], IndexAppend::default());
        assert_eq!(
            added[2].offset,
            Some(OffsetEntry {
                relative_offset: 29,
                position: 200
            })
        );
        assert_eq!(
            added[2].time,
            Some(TimeEntry {
                timestamp: 9,
                relative_offset: 29
            })
        );
        assert_eq!(added[3], IndexAppend::default());
        // Batch 4 is indexed again, but the max timestamp (9 at offset 129) is unchanged.
        assert_eq!(
            added[4].offset,
            Some(OffsetEntry {
                relative_offset: 49,
                position: 400
            })
        );
        assert_eq!(added[4].time, None);
        assert_eq!(index.on_roll(), None);
        assert_eq!(index.lookup_position(99), 0);
        // Entries are keyed by a batch's *last* offset: offset 128 (inside the batch
        // ending at 129) must start from the previous entry, here the file start.
        assert_eq!(index.lookup_position(128), 0);
        assert_eq!(index.lookup_position(129), 200);
        assert_eq!(index.lookup_position(148), 200);
        assert_eq!(index.lookup_position(149), 400);
        assert_eq!(index.lookup_timestamp(8), 100);
        assert_eq!(index.lookup_timestamp(9), 129);
    }

    #[test]
    fn roll_appends_final_time_entry_only_when_greater() {
        let mut index = SegmentIndex::new(0, 4096);
        index.on_batch(0, 80, 2, 50);
        assert!(index.time_entries().is_empty());
        assert_eq!(
            index.on_roll(),
            Some(TimeEntry {
                timestamp: 50,
                relative_offset: 2
            })
        );
        assert_eq!(index.on_roll(), None);
        let mut untimed = SegmentIndex::new(0, 4096);
        untimed.on_batch(0, 80, 0, NO_TIMESTAMP);
        assert_eq!(untimed.on_roll(), None);
    }
}

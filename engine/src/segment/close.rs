//! Kafka's close-time treatment of a segment (`LogSegment.onBecomeInactiveSegment`,
//! which `UnifiedLog.roll` and, through `prepareActiveSegmentForClose`, a broker's
//! clean shutdown run on the active segment):
//!
//! 1. `timeIndex.maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar)`: the
//!    final time index entry, if the max so far is greater than the last entry's;
//! 2. `offsetIndex.trimToValidSize()`, `timeIndex.trimToValidSize()`: the files
//!    hold exactly their entries (Kafka preallocates them while active);
//! 3. `log.trim()`: the same for a preallocated `.log`.
//!
//! seglog never preallocates: its index files are appended entry by entry, so once
//! the pending entries are written (the caller's next step, before its fsync) they
//! are trimmed by construction; an untrimmed Kafka file found on open is rebuilt
//! (`super::validate`, rule `untrimmed`). Without step 1 Kafka, loading a cleanly
//! shut down directory, reads the active segment's max timestamp from its time
//! index as -1.
//!
//! `Log::close` gives the active segment this final entry before its fsyncs, as a
//! broker's clean shutdown does (`engine/tests/clean_close.rs`), so seglog and Kafka 4.4
//! leave identical files for the same appends, closes and reopens (the `kafka_interop`
//! stage; docs/design.md section 3, "Clean close").

use super::Segment;

impl Segment {
    /// Step 1 of Kafka's close-time treatment: queues the final time index entry
    /// (written with the other pending entries). Idempotent: a second call adds
    /// nothing, since the entry is then the last one.
    pub fn close_active(&mut self) {
        if let Some(entry) = self.index.get_mut().on_roll() {
            assert_eq!(entry.timestamp, self.max_timestamp);
            entry.encode_into(&mut self.pending_time_index);
        }
    }
}

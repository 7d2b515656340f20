//! Append, roll, flush and close. Any IO error here poisons the log.
//!
//! The write-back hint (docs/design.md section 1):
//! Write-back hint (`LogConfig::writeback_bytes`, default 1 MiB, 0 for off; CLI
//! `--writeback-bytes`): each time an append takes the active `.log` past another
//! multiple of it, the log starts that file's write-back
//! (`FileSystem::start_writeback`: `sync_file_range(SYNC_FILE_RANGE_WRITE)`, RocksDB's
//! `bytes_per_sync`), so `flush` waits for the tail only. It makes nothing durable and
//! orders nothing, so model (e), SimFs and the sweeps are unchanged; its error is
//! reported by the next fsync, which cuts the segment back and poisons the log
//! (`engine/tests/writeback.rs`).

use crate::error::{Error, Result};
use crate::format::batch::{BATCH_BYTES_MAX, NO_TIMESTAMP};
use crate::format::{Compression, ControlKind, NewRecord, RecordBatch, TimestampType};
// The fail point names are only referenced when the `failpoints` feature is on.
#[cfg_attr(not(feature = "failpoints"), allow(unused_imports))]
use crate::fs::failpoint::*;
use crate::segment::{BatchFacts, Segment};

use crate::format::recovery_point::SummaryKind;

use super::recovery::create_segment_files;
use super::{trust, AppendInfo, Log};

impl Log {
    /// Appends `records` as one batch at `next_offset` (rolling first if the
    /// active segment would exceed `segment_bytes`). Not durable until [`Log::flush`].
    pub fn append(&mut self, records: &[NewRecord]) -> Result<AppendInfo> {
        self.check_writable()?;
        if records.is_empty() {
            return Err(refusal(records));
        }
        let base_offset = self.next_offset();
        check_offsets(base_offset, records.len())?;
        if self.config.compression != Compression::None
            || self.config.timestamp_type != TimestampType::CreateTime
        {
            let stamp = (self.config.timestamp_type == TimestampType::LogAppendTime)
                .then(|| self.clock.now_ms());
            let codec = self.config.compression;
            return self.append_encoded_with(base_offset, records, codec, stamp);
        }
        // Encoded straight from the caller's records, checked on the way.
        let mut bytes = std::mem::take(&mut self.scratch);
        bytes.clear();
        let encoded = super::encode::encode_batch_checked(base_offset, records, &mut bytes);
        let Ok((size_bytes, max_timestamp)) = encoded else {
            self.scratch = bytes;
            return Err(refusal(records));
        };
        let facts = BatchFacts {
            base_offset,
            last_offset: base_offset.saturating_add(records.len() as i64 - 1),
            size_bytes: size_bytes as u64,
            records: records.len() as u64,
            max_timestamp,
        };
        self.append_checked(&facts, bytes)
    }

    /// [`Log::append`] of one batch with codec `compression` and, when
    /// `log_append_time_ms` is given, stamped LogAppendTime at that time (what a
    /// Kafka producer's codec and a broker's `message.timestamp.type` choose per
    /// batch), whatever [`super::LogConfig`] says.
    pub fn append_with(
        &mut self,
        records: &[NewRecord],
        compression: Compression,
        log_append_time_ms: Option<i64>,
    ) -> Result<AppendInfo> {
        self.check_writable()?;
        // The records' own errors come first, as they always have.
        if records.is_empty() {
            return Err(refusal(records));
        }
        if !compression.is_available() {
            check_records(records)?;
            return Err(Error::InvalidArgument(format!(
                "compression {compression} needs the seglog feature `compression`"
            )));
        }
        if let Some(stamp) = log_append_time_ms.filter(|stamp| *stamp < NO_TIMESTAMP) {
            check_records(records)?;
            return Err(Error::InvalidArgument(format!(
                "log append time {stamp} is below -1 (no timestamp)"
            )));
        }
        let base_offset = self.next_offset();
        check_offsets(base_offset, records.len())?;
        self.append_encoded_with(base_offset, records, compression, log_append_time_ms)
    }

    /// Builds (checking the records on the way), compresses and stamps the batch,
    /// and appends it.
    fn append_encoded_with(
        &mut self,
        base_offset: i64,
        records: &[NewRecord],
        compression: Compression,
        log_append_time_ms: Option<i64>,
    ) -> Result<AppendInfo> {
        // Encoded straight from the caller's records (no copy of a key or value)
        // into a reused scratch, compressed behind the header, sealed once.
        let mut bytes = std::mem::take(&mut self.scratch);
        bytes.clear();
        let mut plain = std::mem::take(&mut self.plain_scratch);
        let encoded = super::encode::encode_compressed_batch(
            base_offset,
            records,
            compression,
            log_append_time_ms,
            &mut plain,
            &mut bytes,
        );
        self.plain_scratch = plain;
        let Ok(max_timestamp) = encoded else {
            self.scratch = bytes;
            return Err(refusal(records));
        };
        let facts = BatchFacts {
            base_offset,
            last_offset: base_offset.saturating_add(records.len() as i64 - 1),
            size_bytes: bytes.len() as u64,
            records: records.len() as u64,
            max_timestamp,
        };
        self.append_checked(&facts, bytes)
    }

    /// Appends one transaction marker (a control batch with one record, Kafka's
    /// layout: key version 0 and type, value version 0 and coordinator epoch 0),
    /// ending `producer_id`'s open transaction; an ABORT that ends one writes the
    /// aborted transaction into the active segment's `.txnindex`.
    pub fn append_control(
        &mut self,
        kind: ControlKind,
        producer_id: i64,
        producer_epoch: i16,
        timestamp: i64,
    ) -> Result<AppendInfo> {
        self.check_writable()?;
        if timestamp < NO_TIMESTAMP {
            return Err(Error::InvalidArgument(format!(
                "timestamp {timestamp} is below -1 (no timestamp)"
            )));
        }
        // The transaction state must know the open transaction this marker ends.
        self.ensure_txn_state_writing()?;
        let batch = RecordBatch::control(
            self.next_offset(),
            kind,
            producer_id,
            producer_epoch,
            0,
            timestamp,
        );
        let info = self.append_batch(&batch)?;
        self.txn_observe(producer_id, info.base_offset, true, Some(kind))?;
        Ok(info)
    }

    pub(super) fn append_batch(&mut self, batch: &RecordBatch) -> Result<AppendInfo> {
        let span = usize::try_from(batch.last_offset_delta).unwrap_or(usize::MAX);
        check_offsets(batch.base_offset, span.saturating_add(1))?;
        let mut bytes = std::mem::take(&mut self.scratch);
        bytes.clear();
        batch.encode_into(&mut bytes);
        let facts = BatchFacts {
            base_offset: batch.base_offset,
            last_offset: batch.last_offset(),
            size_bytes: bytes.len() as u64,
            records: batch.records.len() as u64,
            max_timestamp: batch.max_timestamp,
        };
        self.append_checked(&facts, bytes)
    }

    /// Writes an encoded batch; poisons the log on failure; keeps the buffer.
    fn append_checked(&mut self, facts: &BatchFacts, bytes: Vec<u8>) -> Result<AppendInfo> {
        assert_eq!(facts.base_offset, self.next_offset());
        assert_eq!(facts.size_bytes, bytes.len() as u64);
        let result = self.append_encoded(facts, &bytes);
        self.scratch = bytes;
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    fn append_encoded(&mut self, facts: &BatchFacts, bytes: &[u8]) -> Result<AppendInfo> {
        self.append_encoded_all(std::slice::from_ref(facts), &[bytes], 1)?;
        Ok(AppendInfo {
            base_offset: facts.base_offset,
            last_offset: facts.last_offset,
        })
    }

    /// Writes the encoded batches described in order by `facts` (the first at
    /// `next_offset`); batch `i` is the concatenation of the `per_batch` pieces
    /// `pieces[i * per_batch..][..per_batch]` (a raw append passes its rewritten
    /// header and the producer's records, so the records are never copied). Each run
    /// of batches that fits the active segment goes in one write, rolling first
    /// where the next batch would not fit (as a single append rolls). Poisons
    /// nothing itself: the callers do.
    pub(super) fn append_encoded_all(
        &mut self,
        facts: &[BatchFacts],
        pieces: &[&[u8]],
        per_batch: usize,
    ) -> Result<()> {
        assert!(per_batch > 0);
        assert_eq!(pieces.len(), facts.len() * per_batch);
        for (f, parts) in facts.iter().zip(pieces.chunks_exact(per_batch)) {
            assert_eq!(
                f.size_bytes,
                parts.iter().map(|p| p.len() as u64).sum::<u64>()
            );
        }
        let mut run_start = 0;
        let mut run_bytes = 0u64;
        for (i, f) in facts.iter().enumerate() {
            let active = self.active();
            let relative_last = f.last_offset - active.base_offset;
            let too_big = active.bytes + run_bytes + f.size_bytes > self.config.segment_bytes;
            let empty = active.is_empty() && run_bytes == 0;
            if !empty && (too_big || relative_last > i64::from(u32::MAX)) {
                self.append_run(
                    &facts[run_start..i],
                    &pieces[run_start * per_batch..i * per_batch],
                )?;
                run_start = i;
                run_bytes = 0;
                self.roll_active()?;
            }
            run_bytes += f.size_bytes;
        }
        self.append_run(&facts[run_start..], &pieces[run_start * per_batch..])
    }

    /// Appends the batches `pieces` (described by `facts`) to the active segment in
    /// one write, then records them (indexes, offsets).
    fn append_run(&mut self, facts: &[BatchFacts], pieces: &[&[u8]]) -> Result<()> {
        let Some(first) = facts.first() else {
            return Ok(());
        };
        assert_eq!(first.base_offset, self.next_offset());
        self.unmark()?;
        let fs = std::sync::Arc::clone(&self.fs);
        let every = self.config.writeback_bytes;
        let active = self.active_mut();
        let position_before = active.bytes;
        crate::fail_point!(LOG_APPEND_WRITE);
        fs.append_vectored(&active.paths.log, pieces)
            .map_err(|e| Error::io(&active.paths.log, e))?;
        for facts in facts {
            let added = active.on_batch(facts);
            if let Some(entry) = added.offset {
                entry.encode_into(&mut active.pending_index);
            }
            if let Some(entry) = added.time {
                entry.encode_into(&mut active.pending_time_index);
            }
        }
        if active.pending_index.len() + active.pending_time_index.len() >= PENDING_INDEX_BYTES_MAX {
            write_pending_indexes(fs.as_ref(), active)?;
        }
        let written: u64 = pieces.iter().map(|p| p.len() as u64).sum();
        assert_eq!(active.bytes, position_before + written);
        if every > 0 && active.bytes / every != position_before / every {
            // A hint; its error is ignored on purpose: a write-back failure stays
            // with the file for the next fsync (flush, roll, close) to report,
            // which cuts the segment back and poisons the log (sync_active_log).
            let _hint = fs.start_writeback(&active.paths.log);
        }
        if let Some(last) = facts.last() {
            assert_eq!(active.next_offset, last.last_offset + 1);
        }
        Ok(())
    }

    /// Closes the active segment (durably) and starts a new one at `next_offset`.
    /// On an empty active segment, does nothing. Returns the active base offset.
    pub fn roll(&mut self) -> Result<i64> {
        self.check_writable()?;
        let result = self.roll_active();
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    fn roll_active(&mut self) -> Result<i64> {
        if self.active().is_empty() {
            return Ok(self.active().base_offset);
        }
        self.unmark()?;
        let fs = std::sync::Arc::clone(&self.fs);
        let synced_log_bytes = self.synced_log_bytes;
        let active = self.active_mut();
        // Kafka's onBecomeInactiveSegment: a last time index entry for the max so far.
        active.close_active();
        write_pending_indexes(fs.as_ref(), active)?;
        #[cfg(any(test, feature = "test-variants"))]
        let broken = self.roll_variant == super::RollVariant::RecoveryPointBeforeFlush;
        #[cfg(not(any(test, feature = "test-variants")))]
        let broken = false;
        if !broken {
            // The closed segment must be durable before the next one exists, so that
            // only the last segment can ever have a torn tail; its indexes too, before
            // the recovery point vouches for them.
            sync_closed(fs.as_ref(), self.active(), synced_log_bytes)?;
        }
        let active = self.active();
        let next_base_offset = active.next_offset;
        let next = Segment::empty(
            &self.dir,
            next_base_offset,
            self.config.index_interval_bytes,
        );
        crate::fail_point!(LOG_ROLL_CREATE_SEGMENT);
        create_segment_files(fs.as_ref(), &next.paths)?;
        let base_offset = next.base_offset;
        self.segments.push(next);
        self.synced_log_bytes = 0;
        trust::write(
            fs.as_ref(),
            &self.dir,
            SummaryKind::RecoveryPoint,
            &trust::recovery_point_of(&self.segments),
            &trust::WritePoints {
                sync: LOG_ROLL_SYNC_RECOVERY_POINT,
                rename: LOG_ROLL_RENAME_RECOVERY_POINT,
            },
        )?;
        // One directory fsync for the new files' entries and the recovery point's
        // rename: a power loss keeping the rename but not the new files leaves the
        // closed segment last, where the recovery point is never trusted.
        crate::fail_point!(LOG_ROLL_SYNC_DIR);
        fs.sync_dir(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))?;
        if broken {
            let closed = &self.segments[self.segments.len() - 2];
            sync_closed(fs.as_ref(), closed, synced_log_bytes)?;
        }
        self.assert_invariants();
        Ok(base_offset)
    }

    /// Makes everything appended so far durable: one fsync, of the active segment's
    /// `.log`. The index files are derived and the active segment is never trusted
    /// after a crash, so recovery rebuilds them; the directory entries were made
    /// durable when the segment was created (model (e) proves Kafka's extra fsyncs of
    /// both redundant here: `--model durability --variant flush-like-kafka`).
    pub fn flush(&mut self) -> Result<()> {
        self.check_writable()?;
        let result = self.flush_active();
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    fn flush_active(&mut self) -> Result<()> {
        let fs = std::sync::Arc::clone(&self.fs);
        write_pending_indexes(fs.as_ref(), self.active_mut())?;
        crate::fail_point!(LOG_FLUSH_SYNC_LOG);
        sync_active_log(fs.as_ref(), self.active(), self.synced_log_bytes)?;
        self.synced_log_bytes = self.active().bytes;
        Ok(())
    }

    /// Closes the log cleanly, as a Kafka broker's clean shutdown closes a partition:
    /// the active segment gets Kafka's close-time treatment (its final time index
    /// entry, `Segment::close_active`), its three files are fsynced and the
    /// clean-shutdown marker written, so the next open reads no segment data
    /// (docs/design.md sections 3 and 3b). (A read-only log has nothing to flush.)
    pub fn close(mut self) -> Result<()> {
        self.close_in_place()
    }

    /// [`Log::close`] keeping the handle, which refuses everything afterwards (a
    /// harness that owns the log behind `&mut` closes it this way).
    pub fn close_in_place(&mut self) -> Result<()> {
        if self.read_only {
            return self.check_usable();
        }
        self.check_writable()?;
        let result = self.close_cleanly();
        if result.is_err() {
            self.poisoned = true;
        }
        self.closed = true;
        // The next writer may open it now (a restart below, or another process).
        self.lock = None;
        result
    }

    /// Closes the log cleanly and opens it again on the same file system, as a broker
    /// restart does: the open after the clean close reads no segment data.
    pub fn restart(&mut self) -> Result<super::RecoveryReport> {
        self.close_in_place()?;
        let reopened = Log::open_with(
            std::sync::Arc::clone(&self.fs),
            &self.dir,
            self.config.clone(),
        );
        let (mut log, report) = reopened.inspect_err(|_| self.poisoned = true)?;
        // A restart keeps the clock LogAppendTime stamps read, as the reopen after
        // retention and compaction does.
        log.set_clock(std::sync::Arc::clone(&self.clock));
        *self = log;
        Ok(report)
    }

    /// Removes the marker the open kept (`marker_kept`), durably, before the first
    /// change to the segment it describes (an append, a roll): from then on it would
    /// vouch for a prefix of a longer segment whose index files no longer match it,
    /// which a power loss would leave the next open to rescan. One remove and one
    /// directory fsync per reopen that writes, none for one that only reads
    /// (model (e), `Unmark`). A marker already gone (a compaction's install
    /// replaced the directory) is fine.
    fn unmark(&mut self) -> Result<()> {
        if !self.marker_kept {
            return Ok(());
        }
        let fs = std::sync::Arc::clone(&self.fs);
        let path = self
            .dir
            .join(crate::format::recovery_point::CLEAN_SHUTDOWN_NAME);
        crate::fail_point!(LOG_UNMARK_REMOVE_MARKER);
        match fs.remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(&path, e)),
            _ => {}
        }
        crate::fail_point!(LOG_UNMARK_SYNC_DIR);
        fs.sync_dir(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))?;
        self.marker_kept = false;
        Ok(())
    }

    /// True if the open kept the marker, nothing changed since (the first change
    /// removes it: `unmark`), and the marker in the directory is still the one this
    /// close would write (a compaction's install starts its directory without one):
    /// the active segment is as the clean close that wrote the marker left it, its
    /// files durable, so the close has nothing to do. A marker that cannot be read
    /// is not current.
    fn marker_is_current(&self) -> bool {
        let active = self.active();
        if !self.marker_kept
            || !active.pending_index.is_empty()
            || !active.pending_time_index.is_empty()
            || self.synced_log_bytes != active.bytes
        {
            return false;
        }
        let want = crate::format::recovery_point::encode(
            SummaryKind::CleanShutdown,
            &trust::marker_of(&self.segments),
        );
        let path = self
            .dir
            .join(crate::format::recovery_point::CLEAN_SHUTDOWN_NAME);
        matches!(
            crate::fs::read_bounded(self.fs.as_ref(), &path, want.len() as u64),
            Ok(Some(bytes)) if bytes == want
        )
    }

    fn close_cleanly(&mut self) -> Result<()> {
        let fs = std::sync::Arc::clone(&self.fs);
        let fs = fs.as_ref();
        self.active_mut().close_active();
        if self.marker_is_current() {
            return Ok(());
        }
        write_pending_indexes(fs, self.active_mut())?;
        let active = self.active();
        crate::fail_point!(LOG_CLOSE_SYNC_LOG);
        sync_active_log(fs, active, self.synced_log_bytes)?;
        crate::fail_point!(LOG_CLOSE_SYNC_INDEX);
        fs.sync_file(&active.paths.index)
            .map_err(|e| Error::io(&active.paths.index, e))?;
        crate::fail_point!(LOG_CLOSE_SYNC_TIME_INDEX);
        fs.sync_file(&active.paths.time_index)
            .map_err(|e| Error::io(&active.paths.time_index, e))?;
        self.synced_log_bytes = active.bytes;
        trust::write(
            fs,
            &self.dir,
            SummaryKind::CleanShutdown,
            &trust::marker_of(&self.segments),
            &trust::WritePoints {
                sync: LOG_CLOSE_SYNC_MARKER,
                rename: LOG_CLOSE_RENAME_MARKER,
            },
        )?;
        crate::fail_point!(LOG_CLOSE_SYNC_DIR);
        fs.sync_dir(&self.dir).map_err(|e| Error::io(&self.dir, e))
    }
}

/// Refuses an append of `records` records at `base_offset` whose offsets (and the
/// offset after them) would pass `i64::MAX`: a log whose active segment's file name
/// is near `i64::MAX` has no offsets left. Nothing is written.
pub(super) fn check_offsets(base_offset: i64, records: usize) -> Result<()> {
    let fits = i64::try_from(records)
        .ok()
        .and_then(|records| base_offset.checked_add(records))
        .is_some();
    if !fits {
        return Err(Error::InvalidArgument(format!(
            "the log's offsets are exhausted: {records} records at offset {base_offset} pass i64::MAX"
        )));
    }
    Ok(())
}

/// The error [`check_records`] gives `records`, which an encoder refused
/// ([`super::encode::Refused`]): the same checks, so the same message.
fn refusal(records: &[NewRecord]) -> Error {
    check_records(records).expect_err("the encoder refused records that check_records accepts")
}

/// The checks every append makes of its records (at least one, timestamps >= -1,
/// the encoded batch within `BATCH_BYTES_MAX`); returns the encoded size. The
/// structured appends make them while encoding (`encode::encode_records_checked`,
/// one pass over the records) and ask this function only for the error.
pub fn check_records(records: &[NewRecord]) -> Result<usize> {
    if records.is_empty() {
        return Err(Error::InvalidArgument(
            "an append needs at least one record".into(),
        ));
    }
    if let Some(r) = records.iter().find(|r| r.timestamp < NO_TIMESTAMP) {
        return Err(Error::InvalidArgument(format!(
            "timestamp {} is below -1 (no timestamp)",
            r.timestamp
        )));
    }
    let size_bytes = super::encode::encoded_len(records);
    if size_bytes > BATCH_BYTES_MAX {
        return Err(Error::InvalidArgument(format!(
            "batch of {size_bytes} bytes exceeds the limit of {BATCH_BYTES_MAX}"
        )));
    }
    Ok(size_bytes)
}

/// The roll's fsyncs of the segment it closes: `.log`, `.index`, `.timeindex`.
fn sync_closed(
    fs: &dyn crate::fs::FileSystem,
    segment: &Segment,
    synced_log_bytes: u64,
) -> Result<()> {
    crate::fail_point!(LOG_ROLL_SYNC_CLOSED);
    sync_active_log(fs, segment, synced_log_bytes)?;
    crate::fail_point!(LOG_ROLL_SYNC_INDEX);
    fs.sync_file(&segment.paths.index)
        .map_err(|e| Error::io(&segment.paths.index, e))?;
    crate::fail_point!(LOG_ROLL_SYNC_TIME_INDEX);
    fs.sync_file(&segment.paths.time_index)
        .map_err(|e| Error::io(&segment.paths.time_index, e))
}

/// Fsyncs the active segment's `.log`. If that fails, the file is cut back to
/// `synced_bytes`, its length at the last successful fsync (or on open): Linux marks
/// the pages whose writeback failed clean, so they would still read back (after a
/// reopen too) but no later fsync would write them, and a power loss after a later
/// "successful" flush would find zeros in the middle of the segment and lose what
/// that flush reported durable (fsyncgate; the I/O-error sweep models it). Cutting
/// drops those pages; nothing cut was ever reported durable. Best effort: the log is
/// poisoned either way, and the error returned is the fsync's.
fn sync_active_log(
    fs: &dyn crate::fs::FileSystem,
    active: &Segment,
    synced_bytes: u64,
) -> Result<()> {
    let path = &active.paths.log;
    fs.sync_file(path).map_err(|e| {
        if active.bytes > synced_bytes {
            // Ignored on purpose: the sync's error is the one to report.
            let _cut = fs.set_len(path, synced_bytes);
        }
        Error::io(path, e)
    })
}

/// Index entries are derived data (recovery rebuilds a short index), so they are
/// buffered and appended to their files in bulk: before every fsync of the segment,
/// and whenever this many bytes are pending.
const PENDING_INDEX_BYTES_MAX: usize = 64 * 1024;

/// Appends the segment's buffered index entries to its index files.
fn write_pending_indexes(fs: &dyn crate::fs::FileSystem, segment: &mut Segment) -> Result<()> {
    if !segment.pending_index.is_empty() {
        let path = &segment.paths.index;
        fs.append(path, &segment.pending_index)
            .map_err(|e| Error::io(path, e))?;
        segment.pending_index.clear();
    }
    if !segment.pending_time_index.is_empty() {
        let path = &segment.paths.time_index;
        fs.append(path, &segment.pending_time_index)
            .map_err(|e| Error::io(path, e))?;
        segment.pending_time_index.clear();
    }
    Ok(())
}

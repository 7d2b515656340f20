//! The search past an invalid tail: batches whose CRC checks after the first
//! invalid byte of a `.log`.
//!
//! A crash leaves a *torn tail*: bytes the process wrote and the disk never made
//! durable, garbage or zeros or a prefix of a batch. Nothing CRC-valid follows the
//! first invalid byte of a torn tail except by chance (a whole batch written after
//! a torn one, whose pages reached the disk first). Damage to data that was
//! durable (a flipped bit in a flushed batch) is followed by the batches written
//! after it, intact. This walk tells the two apart for the recovery report and
//! the strict recovery mode (`crate::log::RecoveryMode`); it never modifies
//! anything.
//!
//! At every byte position it decodes a batch header (length bounds, magic 2), then
//! checks the header is plausible (a positive record count, a last offset at or
//! past `next_offset`) and the whole batch fits the file, and only then reads the
//! batch and checks its CRC-32C. A batch that checks is counted and the walk jumps
//! past it; otherwise it moves one byte on.

use std::path::Path;

#[cfg(feature = "serde")]
use serde::Serialize;

use crate::error::{Error, Result};
use crate::format::batch::{self, HEADER_LEN};
use crate::format::batch_view::check_batch_crc;
use crate::fs::FileSystem;

/// Bytes read per probe window.
const WINDOW_BYTES: usize = 256 * 1024;

/// The CRC-valid batches found after the first invalid byte.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct ValidAfter {
    /// Batches whose header and CRC check.
    pub batches: u64,
    /// Records those batches declare.
    pub records: u64,
    /// The smallest base offset among them.
    pub first_offset: Option<i64>,
    /// The largest last offset among them.
    pub last_offset: Option<i64>,
    /// Bytes those batches hold.
    pub bytes: u64,
}

impl ValidAfter {
    /// True if nothing valid follows the damage: a torn tail.
    pub fn is_torn_tail(&self) -> bool {
        self.batches == 0
    }

    fn add(&mut self, header: &batch::BatchHeader, size: u64) {
        self.batches = self.batches.saturating_add(1);
        self.records = self
            .records
            .saturating_add(u64::try_from(header.record_count).unwrap_or(0));
        self.bytes = self.bytes.saturating_add(size);
        let last = header.last_offset();
        self.first_offset = Some(
            self.first_offset
                .map_or(header.base_offset, |o| o.min(header.base_offset)),
        );
        self.last_offset = Some(self.last_offset.map_or(last, |o| o.max(last)));
    }
}

/// Walks `[from, to)` of `path` for CRC-valid batches (see the module docs).
/// `next_offset` is the offset after the valid prefix: a batch below it cannot
/// have been written after that prefix.
pub fn valid_after(
    fs: &dyn FileSystem,
    path: &Path,
    from: u64,
    to: u64,
    next_offset: i64,
) -> Result<ValidAfter> {
    let mut found = ValidAfter::default();
    let mut window = Window::default();
    let mut position = from;
    while position.saturating_add(HEADER_LEN as u64) <= to {
        let header = window.get(fs, path, position, HEADER_LEN, to)?;
        let plausible = batch::decode_header(header).ok().filter(|h| {
            h.record_count > 0 && h.last_offset_delta >= 0 && h.last_offset() >= next_offset
        });
        if let Some(header) = plausible {
            let size = header.size as u64;
            if position.saturating_add(size) <= to {
                let bytes = window.get(fs, path, position, header.size, to)?;
                if check_batch_crc(bytes).is_ok() {
                    found.add(&header, size);
                    position = position.saturating_add(size);
                    continue;
                }
            }
        }
        position = position.saturating_add(1);
    }
    Ok(found)
}

/// A buffer of file bytes starting at `start`.
#[derive(Default)]
struct Window {
    start: u64,
    bytes: Vec<u8>,
}

impl Window {
    /// `len` bytes at `position` (which the caller checked end by `to`).
    fn get(
        &mut self,
        fs: &dyn FileSystem,
        path: &Path,
        position: u64,
        len: usize,
        to: u64,
    ) -> Result<&[u8]> {
        let offset = position.checked_sub(self.start).map(|o| o as usize);
        let inside = offset.is_some_and(|o| o.saturating_add(len) <= self.bytes.len());
        if !inside {
            let want = len.max(WINDOW_BYTES) as u64;
            let want = want.min(to.saturating_sub(position)) as usize;
            self.bytes.resize(want, 0);
            let mut done = 0;
            while let Some(rest) = self.bytes.get_mut(done..).filter(|r| !r.is_empty()) {
                let n = fs
                    .read_at(path, position.saturating_add(done as u64), rest)
                    .map_err(|e| Error::io(path, e))?;
                if n == 0 {
                    return Err(Error::io(
                        path,
                        std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
                    ));
                }
                done = done.saturating_add(n);
            }
            self.start = position;
        }
        let offset = position.saturating_sub(self.start) as usize;
        self.bytes
            .get(offset..offset.saturating_add(len))
            .ok_or_else(|| Error::io(path, std::io::Error::other("salvage window out of range")))
    }
}

//! [`BatchReader`]: walks the batches of a `.log` from a byte position, reading
//! through the [`FileSystem`] in large chunks, and checks every length against
//! the file's end so a torn tail is reported, never read past.

use std::path::Path;

use crate::error::{CorruptKind, Error, Result};
use crate::format::batch::{self, HEADER_LEN};
use crate::fs::FileSystem;

/// Default bytes read per call into the file system.
pub const CHUNK_BYTES: usize = 128 * 1024;

/// Walks the batches of one `.log` file in order (see the module docs).
pub struct BatchReader<'a> {
    fs: &'a dyn FileSystem,
    path: &'a Path,
    file_bytes: u64,
    chunk_bytes: usize,
    /// Read buffer; only `buf[..filled]` holds file bytes. Its length only grows,
    /// so refills do not zero memory again.
    buf: Vec<u8>,
    filled: usize,
    /// File position of `buf[0]`.
    buf_position: u64,
    /// Index in `buf` of the next batch.
    at: usize,
}

impl<'a> BatchReader<'a> {
    /// A reader from `position` to `file_bytes` (the file's length, or less).
    pub fn new(fs: &'a dyn FileSystem, path: &'a Path, position: u64, file_bytes: u64) -> Self {
        Self::with_chunk(fs, path, position, file_bytes, CHUNK_BYTES)
    }

    /// [`BatchReader::new`] with a chosen read size (tests use small ones to cross chunk boundaries).
    pub fn with_chunk(
        fs: &'a dyn FileSystem,
        path: &'a Path,
        position: u64,
        file_bytes: u64,
        chunk_bytes: usize,
    ) -> Self {
        assert!(position <= file_bytes);
        BatchReader {
            fs,
            path,
            file_bytes,
            chunk_bytes: chunk_bytes.max(HEADER_LEN),
            buf: Vec::new(),
            filled: 0,
            buf_position: position,
            at: 0,
        }
    }

    /// File position of the next batch.
    pub fn position(&self) -> u64 {
        self.buf_position.saturating_add(self.at as u64)
    }

    /// Makes `[position, position + needed)` available in `buf`, or reports how
    /// many bytes the file has left.
    fn ensure(&mut self, needed: usize) -> Result<()> {
        if self.filled.saturating_sub(self.at) >= needed {
            return Ok(());
        }
        let position = self.position();
        let remaining = self.file_bytes.saturating_sub(position);
        if (needed as u64) > remaining {
            return Err(Error::corrupt(
                self.path,
                position,
                CorruptKind::Truncated {
                    needed: needed as u64,
                    available: remaining,
                },
            ));
        }
        self.buf.copy_within(self.at..self.filled, 0);
        self.filled = self.filled.saturating_sub(self.at);
        self.buf_position = position;
        self.at = 0;
        let want = (needed.max(self.chunk_bytes) as u64).min(remaining) as usize;
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        let mut done = self.filled;
        while done < want {
            let n = self
                .fs
                .read_at(
                    self.path,
                    self.buf_position.saturating_add(done as u64),
                    &mut self.buf[done..want],
                )
                .map_err(|e| Error::io(self.path, e))?;
            if n == 0 {
                // The file shrank under us: report what we have as a torn tail.
                self.filled = done;
                return Err(Error::corrupt(
                    self.path,
                    position,
                    CorruptKind::Truncated {
                        needed: needed as u64,
                        available: done as u64,
                    },
                ));
            }
            done = done.saturating_add(n);
        }
        self.filled = want;
        Ok(())
    }

    /// The next batch's position and raw bytes (length bounds and magic checked, not
    /// the CRC), or `None` at the end.
    pub fn next_raw(&mut self) -> Result<Option<(u64, &[u8])>> {
        let position = self.position();
        if position == self.file_bytes {
            return Ok(None);
        }
        let header_bytes = self
            .file_bytes
            .saturating_sub(position)
            .min(HEADER_LEN as u64) as usize;
        self.ensure(header_bytes)?;
        let header = batch::decode_header(&self.buf[self.at..self.at.saturating_add(header_bytes)])
            .map_err(|e| e.at(self.path, position))?;
        self.ensure(header.size)?;
        let start = self.at;
        self.at = self.at.saturating_add(header.size);
        Ok(Some((position, &self.buf[start..self.at])))
    }
}

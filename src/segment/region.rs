//! [`RegionReader`]: walks the batches of a `.log` from a byte position like
//! [`super::reader::BatchReader`], but hands each batch out as a [`Bytes`] that
//! shares the chunk it was read into, so records decoded from it can keep slices
//! of the chunk instead of copies. Every length is checked against the file's end
//! so a torn tail is reported, never read past.
//!
//! A chunk is never written again once read: a refill reads into a new chunk, and
//! the old one is freed when the last slice of it is dropped. A caller that reads
//! repeatedly can hand back the last chunk ([`RegionReader::into_chunk`]); the next
//! reader reuses its memory if nothing else still shares it ([`RegionReader::reusing`]),
//! which saves allocating, zeroing and faulting in a fresh buffer per read.

use std::path::Path;

use bytes::Bytes;

use crate::error::{CorruptKind, Error, Result};
use crate::format::batch::{self, HEADER_LEN};
use crate::fs::FileSystem;

pub struct RegionReader<'a> {
    fs: &'a dyn FileSystem,
    path: &'a Path,
    file_bytes: u64,
    /// Bytes read per chunk (more when one batch is larger).
    chunk_bytes: usize,
    /// File bytes at `[chunk_position, chunk_position + chunk.len())`.
    chunk: Bytes,
    chunk_position: u64,
    /// Index in `chunk` of the next batch.
    at: usize,
    /// Memory for the next chunk, from an earlier reader.
    spare: Option<Vec<u8>>,
}

impl<'a> RegionReader<'a> {
    /// A reader from `position` to `file_bytes` (the file's length, or less) that
    /// reads `chunk_bytes` at a time; the first read happens at the first batch.
    pub fn new(
        fs: &'a dyn FileSystem,
        path: &'a Path,
        position: u64,
        file_bytes: u64,
        chunk_bytes: usize,
    ) -> Self {
        assert!(position <= file_bytes);
        RegionReader {
            fs,
            path,
            file_bytes,
            chunk_bytes: chunk_bytes.max(HEADER_LEN),
            chunk: Bytes::new(),
            chunk_position: position,
            at: 0,
            spare: None,
        }
    }

    /// Reads the first chunk into the memory of `chunk` (from an earlier
    /// [`RegionReader::into_chunk`]) if no slice of it is alive anymore.
    pub fn reusing(mut self, chunk: Bytes) -> Self {
        self.spare = chunk.try_into_mut().ok().map(Vec::from);
        self
    }

    /// The current chunk, for [`RegionReader::reusing`] by a later reader.
    pub fn into_chunk(self) -> Bytes {
        self.chunk
    }

    /// File position of the next batch.
    pub fn position(&self) -> u64 {
        self.chunk_position + self.at as u64
    }

    /// Makes `[position, position + needed)` available in `chunk`, or reports how
    /// many bytes the file has left.
    fn ensure(&mut self, needed: usize) -> Result<()> {
        let kept = self.chunk.len() - self.at;
        if kept >= needed {
            return Ok(());
        }
        let position = self.position();
        let remaining = self.file_bytes - position;
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
        let want = (needed.max(self.chunk_bytes) as u64).min(remaining) as usize;
        // Never the old chunk: it may still be shared by records read from it.
        let mut buf = match self.spare.take() {
            // Its bytes are overwritten below; only a longer buffer needs zeroing.
            Some(mut spare) if spare.capacity() >= want => {
                spare.resize(want, 0);
                spare
            }
            _ => vec![0u8; want],
        };
        buf[..kept].copy_from_slice(&self.chunk[self.at..]);
        let mut done = kept;
        while done < want {
            let n = self
                .fs
                .read_at(self.path, position + done as u64, &mut buf[done..])
                .map_err(|e| Error::io(self.path, e))?;
            if n == 0 {
                // The file shrank under us: report what we have as a torn tail.
                return Err(Error::corrupt(
                    self.path,
                    position,
                    CorruptKind::Truncated {
                        needed: needed as u64,
                        available: done as u64,
                    },
                ));
            }
            done += n;
        }
        self.chunk = Bytes::from(buf);
        self.chunk_position = position;
        self.at = 0;
        Ok(())
    }

    /// The next batch's position and bytes (length bounds and magic checked, not
    /// the CRC), or `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<(u64, Bytes)>> {
        let position = self.position();
        if position == self.file_bytes {
            return Ok(None);
        }
        let header_bytes = (self.file_bytes - position).min(HEADER_LEN as u64) as usize;
        self.ensure(header_bytes)?;
        let header = batch::decode_header(&self.chunk[self.at..self.at + header_bytes])
            .map_err(|e| e.at(self.path, position))?;
        self.ensure(header.size)?;
        let start = self.at;
        self.at += header.size;
        Ok(Some((position, self.chunk.slice(start..self.at))))
    }
}

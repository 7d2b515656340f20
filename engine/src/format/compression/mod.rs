//! Kafka's record-batch codecs: the records of a compressed batch (everything after
//! the 61-byte header) are one compressed stream, framed as Kafka's producer and
//! broker frame it.
//!
//! | codec | id | framing (what Kafka's classes write) | crate |
//! |---|---|---|---|
//! | gzip | 1 | RFC 1952 member, header `1f 8b 08 00 00000000 00 ff` (Java 17's `GZIPOutputStream`), deflate level 6 | `flate2` |
//! | snappy | 2 | xerial `SnappyOutputStream`: magic `82 'SNAPPY' 00`, version 1, compatible version 1 (i32 BE), then blocks of at most 32 KiB of input, each `i32 BE length` + raw snappy | `snap` (raw blocks) |
//! | lz4 | 3 | LZ4 frame as `Lz4BlockOutputStream`: magic `04 22 4d 18`, FLG `0x60` (version 1, independent blocks, no checksums, no content size), BD `0x40` (64 KiB blocks), HC, blocks (`u32 LE` size, high bit = stored), end mark 0 | `lz4_flex` |
//! | zstd | 4 | one zstd frame, level 3, no content size, no checksum (`ZstdOutputStreamNoFinalizer`) | `zstd` |
//!
//! Decoding accepts every stream Kafka's readers accept that these crates decode
//! (a gzip stream of several members, a snappy stream without the xerial header,
//! lz4 frames with checksums or a content size, any zstd frame). The compressed
//! bytes themselves may differ from Kafka's (another deflate, snappy, LZ4 or zstd
//! implementation chooses other matches), never the framing: docs/design.md
//! section 2 says where.
//!
//! One file per framing: `gzip`, `snappy` (xerial's stream framing), `lz4`
//! (Kafka's `Lz4BlockOutputStream` frame); zstd's frame is the crate's own.
//!
//! The codecs are the cargo feature `compression` (off by default). Without it
//! [`Compression`] still names every codec (attributes, configuration), but only
//! [`Compression::None`] encodes or decodes: [`Compression::decompress`] of any other
//! codec is [`CodecError::Unsupported`] (a read, a scan or a compaction meeting such
//! a batch fails with [`crate::Error::Unsupported`]), and [`Compression::is_available`]
//! is false for it (the log rejects such a configured codec as an invalid argument).
//!
//! Every decode is bounded: a stream that would inflate beyond the caller's
//! `limit_bytes` stops there with [`CodecError::TooLarge`], before allocating more.
//!
//! ## Compressed batches (`engine/src/format/compression/`)
//! Bits 0-2 of `attributes` name the codec; the records are then one stream of it, framed
//! as Kafka's classes frame it (the compressed *bytes* may differ, the framing and every
//! decoded record do not):
//!
//! | codec | id | Kafka writes | seglog writes | where bytes may differ |
//! |---|---|---|---|---|
//! | gzip | 1 | `GZIPOutputStream` (8 KiB buffer) in a 16 KiB `BufferedOutputStream`, level 6 (`compression.gzip.level` -1) | `flate2` at level 6; header `1f 8b 08 00 00000000 00 ff` (mtime 0, XFL 0, OS 255: Java 17's) | the deflate blocks (zlib vs miniz_oxide) |
//! | snappy | 2 | xerial `SnappyOutputStream`: magic `82 'SNAPPY' 00`, version 1, compatible version 1, blocks of 32 KiB input each as `i32 BE length` + raw snappy | the same framing and block size; raw blocks by `snap` | each block's snappy encoding |
//! | lz4 | 3 | `Lz4BlockOutputStream`: magic `04 22 4d 18`, FLG `0x60`, BD `0x40` (64 KiB), HC, blocks (`u32 LE`, high bit = stored when incompressible), end mark 0, no checksums, no content size | `lz4_flex`'s frame encoder with exactly those options | each block's LZ4 encoding (Kafka: lz4-java's fast compressor) |
//! | zstd | 4 | `ZstdOutputStreamNoFinalizer` level 3 in a 16 KiB `BufferedOutputStream`: one frame, no content size, no checksum | `zstd` (libzstd 1.5.7) streaming encoder, level 3: one frame, no content size, no checksum | block boundaries and encoding (zstd-jni's libzstd version, buffer sizes) |
//!
//! Decoding accepts what Kafka's readers accept: several gzip members, a snappy stream
//! without the xerial header, LZ4 frames with checksums or a content size (dependent
//! blocks refused, as Kafka does; the LZ4 reader is seglog's own, `compression/lz4.rs`,
//! so that it requires the end mark), any zstd frame. `engine/tests/kafka_codecs.rs` holds every
//! codec to an independent implementation both ways.
//!
//! Checks (`BatchView::inflate`, `records_in`): a compressed batch passes every batch's
//! header and CRC checks, then its payload must decompress within `INFLATED_BYTES_MAX`
//! (64 MiB; a stream that would inflate further stops there, `DecompressedTooLarge`) to
//! exactly `recordCount` records, each checked. A CRC-valid compressed batch whose
//! payload fails is bad data a writer produced, not a torn write: recovery returns the
//! error even for the active segment and truncates nothing
//! (`is_compressed_payload_error`); a compressed batch cut by a crash fails its CRC and is
//! a torn tail like any other.
//!
//! `fetch` and `read_raw` hand out compressed batches as stored; `Fetch::records()` and
//! `read` decompress each batch once and borrow or slice its records. Indexes use header
//! fields only. Compaction copies a fully kept compressed batch as stored and splices a
//! partly kept one, recompressed with its own codec (`compaction/compressed.rs`), byte for
//! byte what `RecordBatch::retain` and encoding give.

use std::fmt;
use std::str::FromStr;

#[cfg(feature = "compression")]
mod gzip;
#[cfg(feature = "compression")]
mod lz4;
#[cfg(feature = "compression")]
mod snappy;
#[cfg(feature = "compression")]
mod zstd;

/// The codec of a batch: bits 0-2 of its attributes. Serialized by its
/// [`Compression::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Compression {
    /// Records stored as they are (id 0).
    #[default]
    None,
    /// gzip (id 1).
    Gzip,
    /// Snappy in xerial's stream framing (id 2).
    Snappy,
    /// The LZ4 frame format, as Kafka writes it (id 3).
    Lz4,
    /// Zstandard (id 4).
    Zstd,
}

impl Compression {
    /// Every codec, `None` first (the CLI's and the generators' order).
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// The attribute bits (Kafka's `CompressionType.id`).
    pub fn id(self) -> i16 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// The codec with Kafka's id `id`; `None` for 5-7 (no codec has them).
    pub fn from_id(id: i16) -> Option<Compression> {
        Compression::ALL.into_iter().find(|c| c.id() == id)
    }

    /// Kafka's name (`compression.type`): `none`, `gzip`, `snappy`, `lz4`, `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// Whether this build encodes and decodes the codec: always for `None`, for the
    /// others with the cargo feature `compression`.
    pub fn is_available(self) -> bool {
        self == Compression::None || cfg!(feature = "compression")
    }

    /// Compresses `data` as Kafka frames it (see the module docs). `None` copies.
    ///
    /// # Panics
    ///
    /// For a codec that is not [`Compression::is_available`] (a build without the
    /// `compression` feature): the log rejects such a codec before it encodes.
    pub fn compress(self, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        self.compress_into(data, &mut out);
        out
    }

    /// [`Compression::compress`] appending to `out`.
    ///
    /// # Panics
    ///
    /// As [`Compression::compress`].
    pub fn compress_into(self, data: &[u8], out: &mut Vec<u8>) {
        match self {
            Compression::None => out.extend_from_slice(data),
            #[cfg(feature = "compression")]
            Compression::Gzip => gzip::compress(data, out),
            #[cfg(feature = "compression")]
            Compression::Snappy => snappy::compress(data, out),
            #[cfg(feature = "compression")]
            Compression::Lz4 => lz4::compress(data, out),
            #[cfg(feature = "compression")]
            Compression::Zstd => zstd::compress(data, out),
            #[cfg(not(feature = "compression"))]
            codec => panic!("{codec} compression needs the seglog feature `compression`"),
        }
    }

    /// Decompresses `data` (the whole stream), at most `limit_bytes` of output.
    pub fn decompress(self, data: &[u8], limit_bytes: usize) -> Result<Vec<u8>, CodecError> {
        let out = match self {
            Compression::None => {
                if data.len() > limit_bytes {
                    return Err(CodecError::TooLarge { limit_bytes });
                }
                data.to_vec()
            }
            #[cfg(feature = "compression")]
            Compression::Gzip => gzip::decompress(data, limit_bytes)?,
            #[cfg(feature = "compression")]
            Compression::Snappy => snappy::decompress(data, limit_bytes)?,
            #[cfg(feature = "compression")]
            Compression::Lz4 => lz4::decompress(data, limit_bytes)?,
            #[cfg(feature = "compression")]
            Compression::Zstd => zstd::decompress(data, limit_bytes)?,
            #[cfg(not(feature = "compression"))]
            codec => return Err(CodecError::Unsupported(codec)),
        };
        assert!(out.len() <= limit_bytes);
        Ok(out)
    }
}

impl Compression {
    /// [`Compression::decompress`] into `buf`, a buffer kept between calls: the
    /// bytes are `buf[..returned length]`; what `buf` holds beyond them is
    /// unspecified. For lz4 (a frame of blocks) `buf` is an arena that each block is
    /// decompressed into in place, with no allocation, zeroing or copy once it has
    /// grown; the other codecs' streaming decoders hand over their own vector.
    pub fn decompress_reusing(
        self,
        data: &[u8],
        limit_bytes: usize,
        buf: &mut Vec<u8>,
    ) -> Result<usize, CodecError> {
        let len = match self {
            #[cfg(feature = "compression")]
            Compression::Lz4 => lz4::decompress_reusing(data, limit_bytes, buf)?,
            _ => {
                *buf = self.decompress(data, limit_bytes)?;
                buf.len()
            }
        };
        assert!(len <= limit_bytes);
        assert!(len <= buf.len());
        Ok(len)
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Compression {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("unknown compression {s:?} (none, gzip, snappy, lz4, zstd)"))
    }
}

/// Why a payload did not decompress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodecError {
    /// The stream is not valid for its codec.
    Invalid(String),
    /// The stream inflates beyond the limit.
    TooLarge {
        /// The limit it would exceed.
        limit_bytes: usize,
    },
    /// This build has not the codec (the cargo feature `compression` is off): the
    /// stream is not looked at.
    Unsupported(Compression),
}

impl From<std::io::Error> for CodecError {
    fn from(e: std::io::Error) -> Self {
        CodecError::Invalid(e.to_string())
    }
}

#[cfg(feature = "compression")]
/// Reads `reader` to its end into a vector, failing once it yields more than
/// `limit_bytes`: the bound of every streaming decoder here.
fn read_bounded(reader: impl std::io::Read, limit_bytes: usize) -> Result<Vec<u8>, CodecError> {
    use std::io::Read;
    let mut out = Vec::new();
    let limit = u64::try_from(limit_bytes).unwrap_or(u64::MAX);
    reader.take(limit.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() > limit_bytes {
        return Err(CodecError::TooLarge { limit_bytes });
    }
    Ok(out)
}

#[cfg(all(test, feature = "compression"))]
mod tests;

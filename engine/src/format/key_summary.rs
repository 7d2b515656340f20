//! A clean segment's key summary: `<base>.keys` beside its `.log` (for the
//! carried segments, docs/design.md section 6, "Carried segments").
//!
//! ```text
//! offset  size  field              notes
//!      0     4  magic              b"SLKS"
//!      4     2  version            u16 = 1
//!      6     8  base_offset        i64, the segment's
//!     14     8  segment_bytes      u64, the `.log` file's length
//!     22     4  segment_crc32c     u32, CRC-32C of the whole `.log` file
//!     26     8  tombstone_ts_min   i64, the oldest keyed tombstone's timestamp as
//!                                  the tombstone rule reads it; i64::MAX: none
//!     34     4  key_count          u32
//!     38   8*n  key_hashes         u64 each, ascending, distinct ([`key_hash`])
//!  end-4     4  crc                u32, CRC-32C of every byte before it
//! ```
//! All integers big-endian. The hashes cover at least every key of a keyed record
//! of a data batch in the segment (a superset is allowed: it only makes a carry
//! less likely). The file is *derived*: written and synced in the compaction's temp
//! dir, left out of the manifest, bound to its segment by length and CRC-32C. Any
//! doubt (missing, damaged, another segment's) means "rewrite", never "carry".

use siphasher::sip::SipHasher13;
use std::hash::Hasher;

/// First bytes of a key summary file.
pub const MAGIC: [u8; 4] = *b"SLKS";
/// The format's version.
pub const VERSION: u16 = 1;
/// `tombstone_ts_min` of a segment without a keyed tombstone.
pub const NO_TOMBSTONE: i64 = i64::MAX;

const MAGIC_OFFSET: usize = 0;
const VERSION_OFFSET: usize = MAGIC_OFFSET + 4;
const BASE_OFFSET_OFFSET: usize = VERSION_OFFSET + 2;
const SEGMENT_BYTES_OFFSET: usize = BASE_OFFSET_OFFSET + 8;
const SEGMENT_CRC_OFFSET: usize = SEGMENT_BYTES_OFFSET + 8;
/// Where `tombstone_ts_min` starts.
pub const TOMBSTONE_TS_MIN_OFFSET: usize = SEGMENT_CRC_OFFSET + 4;
const KEY_COUNT_OFFSET: usize = TOMBSTONE_TS_MIN_OFFSET + 8;
/// Where the key hashes start.
pub const HASHES_OFFSET: usize = KEY_COUNT_OFFSET + 4;
const CRC_BYTES: usize = 4;
/// Bytes of a summary with no key.
pub const EMPTY_LEN: usize = HASHES_OFFSET + CRC_BYTES;

const _: () = assert!(HASHES_OFFSET == 38);

/// The fixed keys of [`key_hash`]: part of the format (a summary written by one
/// build is read by the next), never drawn at random.
const HASH_KEYS: (u64, u64) = (0x7365_676c_6f67_6b73, 0x6b65_792d_7375_6d31);

/// The 64-bit hash of a record key the summaries hold: SipHash-1-3 under fixed
/// keys, stable across runs and builds. Only its determinism matters for safety
/// (equal keys, equal hashes); a collision makes a segment look touched (rewrite).
pub fn key_hash(key: &[u8]) -> u64 {
    let mut hasher = SipHasher13::new_with_keys(HASH_KEYS.0, HASH_KEYS.1);
    hasher.write(key);
    hasher.finish()
}

/// What a `.keys` file says about its segment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeySummary {
    /// The segment's base offset.
    pub base_offset: i64,
    /// The segment file's length.
    pub segment_bytes: u64,
    /// CRC-32C of the whole segment file.
    pub segment_crc32c: u32,
    /// The oldest keyed tombstone's timestamp ([`NO_TOMBSTONE`]: none).
    pub tombstone_ts_min: i64,
    /// [`key_hash`] of the keys, ascending and distinct.
    pub key_hashes: Vec<u64>,
}

impl KeySummary {
    /// True if a key whose hash is in `dirty` (ascending) may occur in the segment.
    pub fn touched_by(&self, dirty: &[u64]) -> bool {
        let (mut i, mut j) = (0, 0);
        while let (Some(a), Some(b)) = (self.key_hashes.get(i), dirty.get(j)) {
            match a.cmp(b) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }
}

/// True if `hashes` is strictly ascending.
fn ascending(hashes: &[u64]) -> bool {
    hashes.iter().zip(hashes.iter().skip(1)).all(|(a, b)| a < b)
}

/// Encodes `summary` (its hashes must be ascending and distinct).
pub fn encode(summary: &KeySummary) -> Vec<u8> {
    assert!(
        ascending(&summary.key_hashes),
        "key hashes ascending and distinct"
    );
    let count = u32::try_from(summary.key_hashes.len()).expect("a segment's keys fit u32");
    let mut out = Vec::with_capacity(EMPTY_LEN + 8 * summary.key_hashes.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&summary.base_offset.to_be_bytes());
    out.extend_from_slice(&summary.segment_bytes.to_be_bytes());
    out.extend_from_slice(&summary.segment_crc32c.to_be_bytes());
    out.extend_from_slice(&summary.tombstone_ts_min.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    assert_eq!(out.len(), HASHES_OFFSET);
    for hash in &summary.key_hashes {
        out.extend_from_slice(&hash.to_be_bytes());
    }
    let crc = super::crc::crc32c(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

fn field<const N: usize>(buf: &[u8], at: usize) -> Option<[u8; N]> {
    buf.get(at..at + N)?.try_into().ok()
}

/// The bytes of a summary of `keys` keys: what a reader reads at most (a larger
/// file is not read).
pub fn bytes_max(keys: usize) -> u64 {
    u64::try_from(keys)
        .unwrap_or(u64::MAX)
        .saturating_mul(8)
        .saturating_add(EMPTY_LEN as u64)
}

/// Decodes a summary; `None` for anything that is not exactly a valid one (the
/// caller then rewrites the segment).
pub fn decode(buf: &[u8]) -> Option<KeySummary> {
    let body_len = buf.len().checked_sub(CRC_BYTES)?;
    let stored = u32::from_be_bytes(field(buf, body_len)?);
    let body = buf.get(..body_len)?;
    if super::crc::crc32c(body) != stored
        || field::<4>(buf, MAGIC_OFFSET)? != MAGIC
        || u16::from_be_bytes(field(buf, VERSION_OFFSET)?) != VERSION
    {
        return None;
    }
    let count = u32::from_be_bytes(field(buf, KEY_COUNT_OFFSET)?) as usize;
    if body_len != HASHES_OFFSET.checked_add(count.checked_mul(8)?)? {
        return None;
    }
    let key_hashes: Vec<u64> = body
        .get(HASHES_OFFSET..)?
        .chunks_exact(8)
        .map(|c| u64::from_be_bytes(c.try_into().unwrap_or_default()))
        .collect();
    if !ascending(&key_hashes) {
        return None;
    }
    Some(KeySummary {
        base_offset: i64::from_be_bytes(field(buf, BASE_OFFSET_OFFSET)?),
        segment_bytes: u64::from_be_bytes(field(buf, SEGMENT_BYTES_OFFSET)?),
        segment_crc32c: u32::from_be_bytes(field(buf, SEGMENT_CRC_OFFSET)?),
        tombstone_ts_min: i64::from_be_bytes(field(buf, TOMBSTONE_TS_MIN_OFFSET)?),
        key_hashes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary() -> KeySummary {
        let mut key_hashes: Vec<u64> = [b"a".as_slice(), b"b", b"k42"]
            .iter()
            .map(|k| key_hash(k))
            .collect();
        key_hashes.sort_unstable();
        KeySummary {
            base_offset: 42,
            segment_bytes: 1000,
            segment_crc32c: 0xdead_beef,
            tombstone_ts_min: 7,
            key_hashes,
        }
    }

    /// `body` (a summary without its CRC) with a CRC that matches it.
    fn with_crc(mut body: Vec<u8>) -> Vec<u8> {
        let crc = crate::format::crc::crc32c(&body);
        body.extend_from_slice(&crc.to_be_bytes());
        body
    }

    /// Every single-bit flip, every cut and every extension of a summary (with
    /// keys and without) decodes to `None`: the CRC refuses a flip in a field no
    /// other check reads (base offset, segment length and CRC, tombstone bound).
    #[test]
    fn round_trips_and_every_damage_is_refused() {
        let empty = KeySummary {
            key_hashes: Vec::new(),
            tombstone_ts_min: NO_TOMBSTONE,
            ..summary()
        };
        for s in [summary(), empty] {
            let bytes = encode(&s);
            assert_eq!(bytes.len(), EMPTY_LEN + 8 * s.key_hashes.len());
            assert_eq!(decode(&bytes), Some(s));
            for i in 0..bytes.len() {
                for bit in 0..8 {
                    let mut flipped = bytes.clone();
                    flipped[i] ^= 1 << bit;
                    assert_eq!(decode(&flipped), None, "flip of bit {bit} at {i}");
                }
            }
            for len in 0..bytes.len() {
                assert_eq!(decode(&bytes[..len]), None, "cut at {len}");
            }
            for extra in [&[0u8][..], &[0; 8], &bytes] {
                let longer = [&bytes[..], extra].concat();
                assert_eq!(decode(&longer), None, "{} bytes more", extra.len());
            }
        }
    }

    /// A body whose CRC matches but whose magic, version, key count or key order
    /// is wrong decodes to `None`; the same body with a changed base offset (a
    /// field only the CRC guards) decodes as written.
    #[test]
    fn a_matching_crc_does_not_admit_a_wrong_header_count_or_order() {
        let s = summary();
        let bytes = encode(&s);
        let body = &bytes[..bytes.len() - CRC_BYTES];
        assert_eq!(with_crc(body.to_vec()), bytes);
        let changed = |at: usize, with: &[u8]| {
            let mut b = body.to_vec();
            b[at..at + with.len()].copy_from_slice(with);
            with_crc(b)
        };
        let mut moved = s.clone();
        moved.base_offset = 43;
        assert_eq!(
            decode(&changed(BASE_OFFSET_OFFSET, &43i64.to_be_bytes())),
            Some(moved)
        );
        let count = s.key_hashes.len() as u32;
        let refused = [
            ("magic", changed(MAGIC_OFFSET, b"SLKT")),
            ("version 0", changed(VERSION_OFFSET, &0u16.to_be_bytes())),
            ("version 2", changed(VERSION_OFFSET, &2u16.to_be_bytes())),
            (
                "count + 1",
                changed(KEY_COUNT_OFFSET, &(count + 1).to_be_bytes()),
            ),
            (
                "count - 1",
                changed(KEY_COUNT_OFFSET, &(count - 1).to_be_bytes()),
            ),
            (
                "count max",
                changed(KEY_COUNT_OFFSET, &u32::MAX.to_be_bytes()),
            ),
            (
                "hashes swapped",
                changed(
                    HASHES_OFFSET,
                    &[s.key_hashes[1].to_be_bytes(), s.key_hashes[0].to_be_bytes()].concat(),
                ),
            ),
            (
                "a hash twice",
                changed(HASHES_OFFSET + 8, &s.key_hashes[0].to_be_bytes()),
            ),
            ("a hash dropped", with_crc(body[..body.len() - 8].to_vec())),
        ];
        for (what, bytes) in refused {
            assert_eq!(decode(&bytes), None, "{what}");
        }
    }

    #[test]
    fn the_hash_is_pinned_and_touch_means_a_shared_key() {
        // Pinned: summaries on disk must read the same under every later build.
        assert_eq!(key_hash(b"a"), key_hash(b"a"));
        assert_eq!(key_hash(b""), 0x9494_11fc_f671_aae8);
        let s = summary();
        let mut dirty = vec![key_hash(b"zz"), key_hash(b"k42")];
        dirty.sort_unstable();
        assert!(s.touched_by(&dirty));
        let mut other = vec![key_hash(b"zz"), key_hash(b"c")];
        other.sort_unstable();
        assert!(!s.touched_by(&other));
        assert!(!s.touched_by(&[]));
    }
}

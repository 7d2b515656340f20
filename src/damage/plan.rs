//! Which damages to try on one file: pure, deterministic, no IO.
//!
//! A `.log` gets, for its first and its last batch, one flipped bit in every header
//! field (the field's least significant bit, plus the most significant bit of
//! `baseOffset`), one in the middle of the records; then a flipped last byte,
//! truncations (to 0, into the middle of the last batch, by one byte) and zeroed
//! ranges (the start of the last batch's records, the last 8 bytes). Every other file
//! (indexes, manifest, checkpoints) gets flips at its start, middle and end, the same
//! truncations and a zeroed range.
//!
//! CRC coverage (docs/design.md section 2): a batch's CRC-32C covers bytes
//! `[21, end)` of the batch, i.e. everything from `attributes` on. `baseOffset`
//! `[0, 8)`, `batchLength` `[8, 12)`, `partitionLeaderEpoch` `[12, 16)`, `magic`
//! `[16, 17)` and the CRC itself `[17, 21)` are outside it. `batchLength` and
//! `magic` are checked by the framing (a changed length moves the CRC's range or the
//! next batch's start, a changed magic is `Corrupt`/`Unsupported`); `baseOffset`
//! is checked only by the ordering rules and `partitionLeaderEpoch` not at all, so a
//! flip there is *blind* (Kafka shares the blind spot). A truncation of a `.log` at a
//! batch boundary is blind as well: Kafka's format has no per-file length or
//! checksum, and for the active segment it is exactly what a crash leaves. Manifest
//! and checkpoint carry a CRC-32C over every byte before it, so no damage to them is
//! blind. Indexes are derived data: any damage must be rebuilt (or fail closed).

use seglog::format::batch::{
    ATTRIBUTES_OFFSET, BASE_OFFSET_OFFSET, BASE_SEQUENCE_OFFSET, BASE_TIMESTAMP_OFFSET, CRC_OFFSET,
    LAST_OFFSET_DELTA_OFFSET, LENGTH_OFFSET, LOG_OVERHEAD, MAGIC_OFFSET, MAX_TIMESTAMP_OFFSET,
    PARTITION_LEADER_EPOCH_OFFSET, PRODUCER_EPOCH_OFFSET, PRODUCER_ID_OFFSET, RECORDS_OFFSET,
    RECORD_COUNT_OFFSET,
};

/// One field of the batch header: name, offset in the batch, size, outside the CRC
/// and unchecked by anything but the ordering rules (blind).
const HEADER_FIELDS: [(&str, usize, usize, bool); 13] = [
    ("base_offset", BASE_OFFSET_OFFSET, 8, true),
    ("batch_length", LENGTH_OFFSET, 4, false),
    (
        "partition_leader_epoch",
        PARTITION_LEADER_EPOCH_OFFSET,
        4,
        true,
    ),
    ("magic", MAGIC_OFFSET, 1, false),
    ("crc", CRC_OFFSET, 4, false),
    ("attributes", ATTRIBUTES_OFFSET, 2, false),
    ("last_offset_delta", LAST_OFFSET_DELTA_OFFSET, 4, false),
    ("base_timestamp", BASE_TIMESTAMP_OFFSET, 8, false),
    ("max_timestamp", MAX_TIMESTAMP_OFFSET, 8, false),
    ("producer_id", PRODUCER_ID_OFFSET, 8, false),
    ("producer_epoch", PRODUCER_EPOCH_OFFSET, 2, false),
    ("base_sequence", BASE_SEQUENCE_OFFSET, 4, false),
    ("record_count", RECORD_COUNT_OFFSET, 4, false),
];

/// How a file is changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Flip bit `bit` (0 = least significant) of byte `position`.
    Flip { position: u64, bit: u8 },
    /// Flip bit `bit` of byte `position` inside a batch and recompute that batch's
    /// CRC-32C: bad bytes a writer produced (a broken compressor, a producer bug),
    /// which no crash and no CRC can explain. For a compressed batch only the
    /// payload's own checks can catch it.
    FlipResealed { position: u64, bit: u8 },
    /// Cut the file to `len` bytes.
    Truncate { len: u64 },
    /// Overwrite `[start, end)` with zeros.
    Zero { start: u64, end: u64 },
    /// Append junk (the byte `0xA5`) to a file of `from` bytes until it holds `to`:
    /// a file larger than its format allows (`grown`), which an open must not read
    /// whole.
    Grow { from: u64, to: u64 },
    /// Write `value` (its low `len` bytes, big-endian) at `position` and recompute
    /// the checksum `seal` names: a *forged* file, whose checksums all hold and
    /// whose value is out of range (a start offset past the end, a summary length
    /// that is not the file's, a batch whose offsets overflow). Only a check of
    /// meaning can see it.
    Forge {
        position: u64,
        len: u8,
        value: i64,
        seal: Seal,
    },
}

/// The checksum a forged value is sealed under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seal {
    /// The CRC-32C of the batch the position is in (a `.log`).
    Batch,
    /// The trailing CRC-32C of every byte before it (the checkpoints, the recovery
    /// point and the marker, the manifest: every file of ours but the indexes).
    File,
}

impl Change {
    /// The first byte position the change touches (the new length for a truncation).
    pub fn start(&self) -> u64 {
        match *self {
            Change::Flip { position, .. } | Change::FlipResealed { position, .. } => position,
            Change::Truncate { len } => len,
            Change::Zero { start, .. } => start,
            Change::Forge { position, .. } => position,
            Change::Grow { from, .. } => from,
        }
    }

    /// The damaged bytes, or `None` if the change would leave `bytes` as they are.
    pub fn apply(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let mut out = bytes.to_vec();
        match *self {
            Change::Flip { position, bit } => {
                let byte = out.get_mut(usize::try_from(position).ok()?)?;
                *byte ^= 1 << bit;
            }
            Change::FlipResealed { position, bit } => {
                let (start, end) = batch_ranges(bytes)
                    .into_iter()
                    .find(|(start, end)| (*start..*end).contains(&position))?;
                let (start, end) = (usize::try_from(start).ok()?, usize::try_from(end).ok()?);
                let byte = out.get_mut(usize::try_from(position).ok()?)?;
                *byte ^= 1 << bit;
                let crc = seglog::format::crc::crc32c(out.get(start + ATTRIBUTES_OFFSET..end)?);
                out.get_mut(start + CRC_OFFSET..start + CRC_OFFSET + 4)?
                    .copy_from_slice(&crc.to_be_bytes());
            }
            Change::Forge {
                position,
                len,
                value,
                seal,
            } => {
                let at = usize::try_from(position).ok()?;
                let len = usize::from(len).min(8);
                let field = value.to_be_bytes();
                out.get_mut(at..at.checked_add(len)?)?
                    .copy_from_slice(field.get(8 - len..)?);
                match seal {
                    Seal::Batch => {
                        let (start, end) = batch_ranges(bytes)
                            .into_iter()
                            .find(|(start, end)| (*start..*end).contains(&position))?;
                        let (start, end) =
                            (usize::try_from(start).ok()?, usize::try_from(end).ok()?);
                        let crc =
                            seglog::format::crc::crc32c(out.get(start + ATTRIBUTES_OFFSET..end)?);
                        out.get_mut(start + CRC_OFFSET..start + CRC_OFFSET + 4)?
                            .copy_from_slice(&crc.to_be_bytes());
                    }
                    Seal::File => {
                        let body = out.len().checked_sub(4)?;
                        let crc = seglog::format::crc::crc32c(out.get(..body)?);
                        out.get_mut(body..)?.copy_from_slice(&crc.to_be_bytes());
                    }
                }
            }
            Change::Truncate { len } => out.truncate(usize::try_from(len).ok()?),
            Change::Grow { from, to } => {
                if u64::try_from(out.len()).ok()? != from {
                    return None;
                }
                out.resize(usize::try_from(to).ok()?.max(out.len()), GROW_JUNK);
            }
            Change::Zero { start, end } => {
                let end = usize::try_from(end).ok()?.min(out.len());
                let start = usize::try_from(start).ok()?.min(end);
                out[start..end].fill(0);
            }
        }
        (out != bytes).then_some(out)
    }
}

/// The byte [`Change::Grow`] appends: neither zeros (Kafka's preallocated index
/// tail) nor anything a format of ours starts with.
pub const GROW_JUNK: u8 = 0xA5;

/// One planned damage of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// Where, for reports: `flip batch[last].crc`, `truncate to 0`, ...
    pub label: String,
    pub change: Change,
    /// The format cannot detect this damage (see the module docs); it is counted as
    /// `undetectable` when the log serves it, not as a violation.
    pub blind: bool,
}

/// The byte ranges `[start, end)` of the whole batches at the front of `bytes`,
/// walked by their declared lengths.
pub fn batch_ranges(bytes: &[u8]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut position = 0usize;
    while let Some(length) = bytes
        .get(position + LENGTH_OFFSET..position + LOG_OVERHEAD)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(i32::from_be_bytes)
    {
        let Ok(length) = usize::try_from(length) else {
            break;
        };
        let end = position + LOG_OVERHEAD + length;
        if length < RECORDS_OFFSET - LOG_OVERHEAD || end > bytes.len() {
            break;
        }
        out.push((position as u64, end as u64));
        position = end;
    }
    out
}

/// True if the batches of a `.log` holding `bytes` satisfy the ordering rules of
/// docs/design.md section 2 (the only check on `baseOffset`): the first base offset
/// is >= `segment_base`, each base offset is > the previous batch's last offset,
/// and every last offset is < `upper` (the next segment's base offset). A blind
/// flip of `baseOffset` is excused only while this holds.
pub fn ordering_holds(bytes: &[u8], segment_base: i64, upper: Option<i64>) -> bool {
    let mut next = segment_base;
    for (start, _) in batch_ranges(bytes) {
        let field = |offset: usize, size: usize| {
            let at = usize::try_from(start).ok()? + offset;
            bytes.get(at..at + size)
        };
        let base = field(BASE_OFFSET_OFFSET, 8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(i64::from_be_bytes);
        let delta = field(LAST_OFFSET_DELTA_OFFSET, 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(i32::from_be_bytes);
        let (Some(base), Some(delta)) = (base, delta) else {
            return false;
        };
        let last = base.saturating_add(i64::from(delta));
        if base < next || upper.is_some_and(|u| last >= u) {
            return false;
        }
        next = last.saturating_add(1);
    }
    true
}

/// The batches every `.log` plan damages: the first, and the last when it is
/// another, as `(label, (start, end))`.
fn first_and_last(ranges: &[(u64, u64)]) -> Vec<(&'static str, (u64, u64))> {
    let mut picked = Vec::new();
    picked.extend(ranges.first().map(|r| ("first", *r)));
    picked.extend(
        ranges
            .last()
            .filter(|_| ranges.len() > 1)
            .map(|r| ("last", *r)),
    );
    picked
}

/// The damages to try on a `.log` holding `bytes`.
pub fn log_damages(bytes: &[u8]) -> Vec<Damage> {
    let ranges = batch_ranges(bytes);
    let boundaries: Vec<u64> = std::iter::once(0)
        .chain(ranges.iter().map(|r| r.1))
        .collect();
    let mut out = Vec::new();
    for (which, (start, end)) in first_and_last(&ranges) {
        for (name, offset, size, blind) in HEADER_FIELDS {
            out.push(Damage {
                label: format!("flip batch[{which}].{name}"),
                change: Change::Flip {
                    position: start + (offset + size - 1) as u64,
                    bit: 0,
                },
                blind,
            });
        }
        out.push(Damage {
            label: format!("flip batch[{which}].base_offset high bit"),
            change: Change::Flip {
                position: start + BASE_OFFSET_OFFSET as u64,
                bit: 7,
            },
            // A negative base offset breaks the ordering rules.
            blind: false,
        });
        let records = start + RECORDS_OFFSET as u64;
        if end > records {
            out.push(Damage {
                label: format!("flip batch[{which}].records middle"),
                change: Change::Flip {
                    position: records + (end - records) / 2,
                    bit: 3,
                },
                blind: false,
            });
        }
        out.extend(compressed_payload_damages(bytes, which, start, end));
    }
    let len = bytes.len() as u64;
    let mut tail = generic_damages(bytes);
    if let Some(&(start, end)) = ranges.last() {
        tail.push(Damage {
            label: "truncate into the last batch".into(),
            change: Change::Truncate {
                len: start + (end - start) / 2,
            },
            blind: false,
        });
        tail.push(Damage {
            label: "zero the last batch's first record bytes".into(),
            change: Change::Zero {
                start: start + RECORDS_OFFSET as u64,
                end: (start + RECORDS_OFFSET as u64 + 16).min(end),
            },
            blind: false,
        });
    }
    for mut damage in tail {
        if let Change::Truncate { len: cut } = damage.change {
            damage.blind = boundaries.contains(&cut) && cut < len;
        }
        out.push(damage);
    }
    out
}

/// For a compressed batch `[start, end)` of `bytes`: damages to its payload with
/// the CRC resealed, so that only the payload checks stand between them and the
/// reader (a structured `Corrupt` error at the payload, never a truncation, in the
/// active segment too). The declared record count plus one is always caught
/// (`RecordCount`). A flipped bit in the middle of the stream is caught by gzip
/// (its CRC-32 and length trailer) but may decode to other valid records under
/// snappy, lz4 and zstd as Kafka frames them (no checksum inside): blind there.
fn compressed_payload_damages(bytes: &[u8], which: &str, start: u64, end: u64) -> Vec<Damage> {
    let codec = usize::try_from(start)
        .ok()
        .and_then(|s| bytes.get(s + ATTRIBUTES_OFFSET + 1))
        .map_or(0, |attributes| attributes & 0x07);
    let records = start + RECORDS_OFFSET as u64;
    if codec == 0 || end <= records {
        return Vec::new();
    }
    vec![
        Damage {
            label: format!("flip batch[{which}].payload middle, CRC resealed"),
            change: Change::FlipResealed {
                position: records + (end - records) / 2,
                bit: 2,
            },
            blind: codec != 1,
        },
        Damage {
            label: format!("flip batch[{which}].record_count, CRC resealed"),
            change: Change::FlipResealed {
                position: start + (RECORD_COUNT_OFFSET + 3) as u64,
                bit: 0,
            },
            blind: false,
        },
    ]
}

/// Every single-bit flip of the header (`[0, 61)`) of the first and the last batch
/// of a `.log`: the exhaustive plan of the larger budgets. Flips in `baseOffset`
/// and `partitionLeaderEpoch` are blind (outside the CRC).
pub fn header_bit_damages(bytes: &[u8]) -> Vec<Damage> {
    let ranges = batch_ranges(bytes);
    let mut out = Vec::new();
    for (which, (start, _)) in first_and_last(&ranges) {
        for byte in 0..RECORDS_OFFSET {
            let (name, _, _, blind) = HEADER_FIELDS
                .iter()
                .copied()
                .rev()
                .find(|(_, offset, _, _)| *offset <= byte)
                .unwrap_or(HEADER_FIELDS[0]);
            for bit in 0..8 {
                out.push(Damage {
                    label: format!("flip batch[{which}].{name} byte {byte} bit {bit}"),
                    change: Change::Flip {
                        position: start + byte as u64,
                        bit,
                    },
                    blind,
                });
            }
        }
    }
    out
}

/// A value past the end of every log the named workloads write (they hold a few
/// hundred offsets at most): a start offset, clean point or next offset this large
/// lies beyond what the directory describes.
pub const PAST_THE_END: i64 = 1_000_000;

/// The *forged* damages of a file (valid checksums, impossible values): for a
/// `.log`, header fields of its first and last batch set to extreme values with the
/// batch CRC resealed; for a file of ours sealed by a trailing CRC-32C (recognised
/// by its magic), its offsets and lengths set out of range and the file resealed.
/// Nothing else (indexes carry no checksum: any damage to them is already a
/// "forgery", covered by `generic_damages`).
pub fn forged_damages(bytes: &[u8], is_log: bool) -> Vec<Damage> {
    if is_log {
        forged_log(bytes)
    } else {
        forged_sealed(bytes)
    }
}

fn forged_log(bytes: &[u8]) -> Vec<Damage> {
    let ranges = batch_ranges(bytes);
    let mut out = Vec::new();
    for (which, (start, _)) in first_and_last(&ranges) {
        let fields: [(&str, usize, u8, i64, bool); 5] = [
            // The last offset (and so the next one) overflows i64.
            ("base_offset", BASE_OFFSET_OFFSET, 8, i64::MAX, false),
            ("last_offset_delta", LAST_OFFSET_DELTA_OFFSET, 4, -1, false),
            // A delta above the record count is valid (a compacted batch keeps
            // its last delta): blind where the ordering rules still hold, i.e. in
            // the last segment.
            (
                "last_offset_delta",
                LAST_OFFSET_DELTA_OFFSET,
                4,
                i64::from(i32::MAX),
                true,
            ),
            ("record_count", RECORD_COUNT_OFFSET, 4, -1, false),
            (
                "record_count",
                RECORD_COUNT_OFFSET,
                4,
                i64::from(i32::MAX),
                false,
            ),
        ];
        for (name, offset, len, value, blind) in fields {
            out.push(Damage {
                label: format!("forge batch[{which}].{name} = {value}, CRC resealed"),
                change: Change::Forge {
                    position: start + offset as u64,
                    len,
                    value,
                    seal: Seal::Batch,
                },
                blind,
            });
        }
    }
    out
}

/// Reads the big-endian integer of `len` bytes at `at`.
fn field_at(bytes: &[u8], at: usize, len: usize) -> Option<i64> {
    let raw = bytes.get(at..at.checked_add(len)?)?;
    let mut wide = [0u8; 8];
    wide.get_mut(8 - len..)?.copy_from_slice(raw);
    Some(i64::from_be_bytes(wide))
}

fn forged_sealed(bytes: &[u8]) -> Vec<Damage> {
    use seglog::format::crc::crc32c;
    let Some(body) = bytes.len().checked_sub(4) else {
        return Vec::new();
    };
    let sealed = bytes
        .get(body..)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .is_some_and(|crc| u32::from_be_bytes(crc) == crc32c(&bytes[..body]));
    let magic = bytes.get(..4).unwrap_or_default();
    if !sealed {
        return Vec::new();
    }
    // (label, position, len, value, blind)
    let mut fields: Vec<(String, usize, u8, i64, bool)> = Vec::new();
    let rel = |label: &str, at: usize, len: u8, delta: i64| {
        field_at(bytes, at, usize::from(len)).map(|v| {
            (
                format!("{label} {delta:+}"),
                at,
                len,
                v.saturating_add(delta),
                false,
            )
        })
    };
    use seglog::format::{checkpoint, manifest, recovery_point};
    match magic {
        // The start-offset checkpoint and the clean point: one offset at 6.
        m if m == checkpoint::MAGIC || m == checkpoint::CLEAN_POINT_MAGIC => {
            fields.push(("offset past the end".into(), 6, 8, PAST_THE_END, false));
            fields.push(("offset i64::MAX".into(), 6, 8, i64::MAX, false));
            fields.push(("offset -1".into(), 6, 8, -1, false));
        }
        // The recovery point and the marker: the point and every numeric field of
        // the first and the last summary, each moved one ahead of and one behind
        // what the file says; the count one ahead; a next offset and the point far
        // past the end.
        m if m == recovery_point::RECOVERY_POINT_MAGIC
            || m == recovery_point::CLEAN_SHUTDOWN_MAGIC =>
        {
            fields.extend(rel("point", 6, 8, 1));
            fields.extend(rel("point", 6, 8, -1));
            fields.extend(rel("count", 14, 4, 1));
            let count = field_at(bytes, 14, 4)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0);
            let mut summaries = vec![0];
            if count > 1 {
                summaries.push(count - 1);
            }
            for i in summaries.into_iter().filter(|i| *i < count) {
                let at = recovery_point::HEADER_LEN + recovery_point::SUMMARY_LEN * i;
                for (name, offset, len, blind) in SUMMARY_FIELDS {
                    for delta in [1, -1] {
                        fields.extend(
                            rel(&format!("summary[{i}].{name}"), at + offset, len, delta)
                                .map(|(label, at, len, value, _)| (label, at, len, value, blind)),
                        );
                    }
                }
            }
            fields.push((
                "summary[0].next_offset past the end".into(),
                recovery_point::HEADER_LEN + 16,
                8,
                PAST_THE_END,
                false,
            ));
            fields.push(("point past the end".into(), 6, 8, PAST_THE_END, false));
        }
        // The manifest: its offsets, its count, and its first file's length.
        m if m == manifest::MAGIC => {
            fields.push(("log_start_offset -1".into(), 6, 8, -1, false));
            fields.push((
                "next_offset past the end".into(),
                14,
                8,
                PAST_THE_END,
                false,
            ));
            fields.extend(rel("next_offset", 14, 8, -1));
            fields.extend(rel("file_count", 22, 4, 1));
            if let Some(name_len) = field_at(bytes, 26, 2).and_then(|n| usize::try_from(n).ok()) {
                fields.extend(rel("files[0].bytes", 28 + name_len, 8, 1));
            }
        }
        _ => {}
    }
    fields
        .into_iter()
        .filter(|(_, at, len, _, _)| at + usize::from(*len) <= body)
        .map(|(label, at, len, value, blind)| Damage {
            label: format!("forge {label}, resealed"),
            change: Change::Forge {
                position: at as u64,
                len,
                value,
                seal: Seal::File,
            },
            blind,
        })
        .collect()
}

/// The numeric fields of a recovery point's or marker's segment summary: name,
/// offset in the summary, length (`format::recovery_point::encode`), and whether a
/// CRC-valid lie in it is blind to an open that reads no segment data.
///
/// The open checks a summary's base offset and length against the file, its index
/// entry counts against the index files' lengths, and its fields against each other
/// (`SegmentSummary::check`); the marker's next offset and index checksums against
/// the active segment's batches and index files. What a closed segment holds
/// (records, batches, its next offset inside the gap before the next segment, its
/// largest timestamp) is trusted as summarized, and its index checksums are checked
/// at the first lookup: a lie there is blind at open, excused where the log
/// still serves every record at its offset (`judge`), and reported by the first read
/// that meets it.
const SUMMARY_FIELDS: [(&str, usize, u8, bool); 11] = [
    ("base_offset", 0, 8, false),
    ("bytes", 8, 8, false),
    ("next_offset", 16, 8, true),
    ("records", 24, 8, true),
    ("batches", 32, 8, true),
    ("max_timestamp", 40, 8, true),
    ("offset_of_max_timestamp", 48, 8, true),
    ("offset_index_entries", 56, 4, false),
    ("time_index_entries", 60, 4, false),
    ("offset_index_crc", 64, 4, true),
    ("time_index_crc", 68, 4, true),
];

/// Key hashes of one summary whose low bit [`key_summary_damages`] flips, at most.
const KEY_SUMMARY_HASHES_MAX: usize = 4;

/// The damages that make a key summary (`.keys`) lie, CRC left as it was: the low
/// bit of a key hash's last byte (the summary hides that key, so a pass whose map
/// holds it would carry records it must drop), for up to
/// [`KEY_SUMMARY_HASHES_MAX`] hashes spread over the list, and bit 62 of
/// `tombstone_ts_min` (an expired tombstone looks within its grace). Only the
/// summary's own CRC refuses them. Empty for bytes that are not a valid summary.
pub fn key_summary_damages(bytes: &[u8]) -> Vec<Damage> {
    use seglog::format::key_summary::{self, HASHES_OFFSET, NO_TOMBSTONE, TOMBSTONE_TS_MIN_OFFSET};
    let Some(summary) = key_summary::decode(bytes) else {
        return Vec::new();
    };
    let count = summary.key_hashes.len();
    let step = count.div_ceil(KEY_SUMMARY_HASHES_MAX).max(1);
    let mut out: Vec<Damage> = (0..count)
        .filter(|i| i % step == 0 || *i + 1 == count)
        .map(|i| Damage {
            label: format!("flip key_hashes[{i}] bit 0 (hides a key)"),
            change: Change::Flip {
                position: (HASHES_OFFSET + 8 * i + 7) as u64,
                bit: 0,
            },
            blind: false,
        })
        .collect();
    if summary.tombstone_ts_min != NO_TOMBSTONE {
        out.push(Damage {
            label: "flip tombstone_ts_min bit 62 (a later tombstone bound)".into(),
            change: Change::Flip {
                position: TOMBSTONE_TS_MIN_OFFSET as u64,
                bit: 6,
            },
            blind: false,
        });
    }
    out
}

/// The damages to try on any other file: flips at the start, middle and end,
/// truncations to 0, to half and by one byte, and a zeroed range in the middle.
pub fn generic_damages(bytes: &[u8]) -> Vec<Damage> {
    let len = bytes.len() as u64;
    if len == 0 {
        return Vec::new();
    }
    let flip = |label: &str, position: u64| Damage {
        label: format!("flip {label}"),
        change: Change::Flip { position, bit: 0 },
        blind: false,
    };
    let truncate = |label: &str, len: u64| Damage {
        label: format!("truncate {label}"),
        change: Change::Truncate { len },
        blind: false,
    };
    let mut out = vec![
        flip("first byte", 0),
        flip("middle byte", len / 2),
        flip("last byte", len - 1),
        truncate("to 0", 0),
        truncate("to half", len / 2),
        truncate("by one byte", len - 1),
        Damage {
            label: "zero 8 middle bytes".into(),
            change: Change::Zero {
                start: len / 2,
                end: (len / 2 + 8).min(len),
            },
            blind: false,
        },
    ];
    out.dedup_by(|a, b| a.change == b.change);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use seglog::format::{NewRecord, RecordBatch};

    fn two_batches() -> Vec<u8> {
        let mut bytes = Vec::new();
        for base in [0, 1] {
            let batch = RecordBatch::build(
                base,
                &[NewRecord::new(Some(b"k".to_vec()), Some(b"v".to_vec()), 5)],
            );
            bytes.extend(batch.encode());
        }
        bytes
    }

    #[test]
    fn log_damages_cover_every_field_of_both_batches() {
        let bytes = two_batches();
        let ranges = batch_ranges(&bytes);
        assert_eq!(ranges.len(), 2);
        assert_eq!(ranges[1].1, bytes.len() as u64);
        let damages = log_damages(&bytes);
        for which in ["first", "last"] {
            for (name, ..) in HEADER_FIELDS {
                let label = format!("flip batch[{which}].{name}");
                assert!(damages.iter().any(|d| d.label == label), "{label}");
            }
        }
        // Blind exactly where the format cannot see: baseOffset LSB, the epoch,
        // and a cut at the boundary between the batches (to 0 is one too).
        let blind: Vec<&str> = damages
            .iter()
            .filter(|d| d.blind)
            .map(|d| d.label.as_str())
            .collect();
        assert!(blind.contains(&"flip batch[first].partition_leader_epoch"));
        assert!(blind.contains(&"truncate to 0"));
        assert!(!blind.contains(&"truncate by one byte"));
        assert!(!blind.contains(&"flip batch[last].crc"));
        for damage in &damages {
            assert!(damage.change.apply(&bytes).is_some(), "{}", damage.label);
        }
    }

    #[test]
    fn header_bits_are_every_bit_of_both_headers() {
        let bytes = two_batches();
        let damages = header_bit_damages(&bytes);
        assert_eq!(damages.len(), 2 * RECORDS_OFFSET * 8);
        let blind = damages.iter().filter(|d| d.blind).count();
        assert_eq!(
            blind,
            2 * (8 + 4) * 8,
            "baseOffset and the epoch, both batches"
        );
    }

    /// Each forgery of a recovery point moves exactly the field its label names,
    /// by exactly one, and keeps the file's CRC valid: the offsets in
    /// `SUMMARY_FIELDS` are the encoder's.
    #[test]
    fn summary_forgeries_move_the_named_field_by_one() {
        use seglog::format::recovery_point::{self, SegmentSummary, SummaryFile, SummaryKind};
        let summary = |base: i64| SegmentSummary {
            base_offset: base,
            bytes: 100 + base as u64,
            next_offset: base + 7,
            records: 7,
            batches: 3,
            max_timestamp: 5_000 + base,
            offset_of_max_timestamp: base + 2,
            offset_index_entries: 2,
            time_index_entries: 3,
            offset_index_crc: 0x1234,
            time_index_crc: 0x5678,
        };
        let file = SummaryFile {
            point: 30,
            summaries: vec![summary(0), summary(10), summary(20)],
        };
        let kind = SummaryKind::RecoveryPoint;
        let bytes = recovery_point::encode(kind, &file);
        let forged = forged_damages(&bytes, false);
        // point +-1, count +1, 11 fields +-1 of the first and the last summary,
        // next offset and point past the end.
        assert_eq!(forged.len(), 2 + 1 + 2 * 11 * 2 + 2, "{forged:?}");
        let fields = |s: &SegmentSummary| {
            [
                s.base_offset,
                s.bytes as i64,
                s.next_offset,
                s.records as i64,
                s.batches as i64,
                s.max_timestamp,
                s.offset_of_max_timestamp,
                i64::from(s.offset_index_entries),
                i64::from(s.time_index_entries),
                i64::from(s.offset_index_crc),
                i64::from(s.time_index_crc),
            ]
        };
        for damage in forged.iter().filter(|d| d.label.contains("summary[")) {
            if damage.label.contains("past the end") {
                continue;
            }
            let damaged = damage.change.apply(&bytes).unwrap();
            let decoded = match recovery_point::decode(kind, &damaged) {
                Ok(decoded) => decoded,
                // Refused for its value (a negative base offset), never for its CRC.
                Err(seglog::format::FormatError::Corrupt { kind, .. }) => {
                    assert!(
                        !matches!(kind, seglog::error::CorruptKind::ChecksumMismatch { .. }),
                        "{}: {kind:?}",
                        damage.label
                    );
                    continue;
                }
                Err(other) => panic!("{}: {other:?}", damage.label),
            };
            let i = if damage.label.contains("summary[0]") {
                0
            } else {
                2
            };
            let (name, _, _, _) = SUMMARY_FIELDS
                .iter()
                .find(|(name, _, _, _)| damage.label.contains(&format!("].{name} ")))
                .unwrap_or_else(|| panic!("no field in {}", damage.label));
            let delta = if damage.label.ends_with("+1, resealed") {
                1
            } else {
                -1
            };
            let which = SUMMARY_FIELDS.iter().position(|f| f.0 == *name).unwrap();
            let (was, now) = (fields(&file.summaries[i]), fields(&decoded.summaries[i]));
            for (f, (a, b)) in was.iter().zip(now).enumerate() {
                let want = if f == which { a + delta } else { *a };
                assert_eq!(b, want, "{}: field {f}", damage.label);
            }
            assert_eq!(decoded.point, file.point, "{}", damage.label);
        }
    }

    #[test]
    fn compressed_batches_get_resealed_payload_damages() {
        use seglog::format::Compression;
        let record = NewRecord::new(Some(b"k".to_vec()), Some(b"v".repeat(50)), 5);
        for codec in Compression::ALL {
            let bytes = RecordBatch::build(0, &[record.clone(), record.clone()])
                .with_compression(codec)
                .encode();
            let damages = log_damages(&bytes);
            let resealed: Vec<&Damage> = damages
                .iter()
                .filter(|d| matches!(d.change, Change::FlipResealed { .. }))
                .collect();
            if codec == Compression::None {
                assert!(resealed.is_empty());
                continue;
            }
            assert_eq!(resealed.len(), 2, "{codec}");
            for damage in resealed {
                let damaged = damage.change.apply(&bytes).unwrap();
                // The CRC still holds: only the payload checks can object ...
                assert!(seglog::format::batch_view::check_batch_crc(&damaged).is_ok());
                // ... and they do, unless the codec cannot (blind).
                let decoded = seglog::format::batch::decode(&damaged);
                if !damage.blind {
                    assert!(
                        matches!(decoded, Err(seglog::format::FormatError::Corrupt { .. })),
                        "{codec} {}: {decoded:?}",
                        damage.label
                    );
                }
            }
        }
    }

    #[test]
    fn forged_damages_keep_every_checksum_valid() {
        use seglog::format::{checkpoint, manifest};
        // A `.log`: the batch CRC still holds after each forgery.
        let bytes = two_batches();
        let forged = forged_damages(&bytes, true);
        assert_eq!(forged.len(), 2 * 5, "five fields of both batches");
        for damage in &forged {
            let damaged = damage.change.apply(&bytes).unwrap();
            for (start, end) in batch_ranges(&damaged) {
                let batch = &damaged[start as usize..end as usize];
                assert!(
                    seglog::format::batch_view::check_batch_crc(batch).is_ok(),
                    "{}",
                    damage.label
                );
            }
        }
        // Sealed files: each forgery still decodes past its checksum (or is refused
        // for its value, never for its checksum).
        let start = checkpoint::encode(3);
        for damage in forged_damages(&start, false) {
            let damaged = damage.change.apply(&start).unwrap();
            match checkpoint::decode(&damaged) {
                Ok(value) => assert!(value == PAST_THE_END || value == i64::MAX),
                Err(seglog::format::FormatError::Corrupt { kind, .. }) => assert!(
                    !matches!(kind, seglog::error::CorruptKind::ChecksumMismatch { .. }),
                    "{}: {kind:?}",
                    damage.label
                ),
                Err(other) => panic!("{other:?}"),
            }
        }
        let m = manifest::Manifest {
            log_start_offset: 0,
            next_offset: 4,
            files: vec![manifest::ManifestFile {
                name: "00000000000000000000.log".into(),
                bytes: 10,
                crc32c: 1,
            }],
        };
        let encoded = m.encode();
        let forged = forged_damages(&encoded, false);
        assert_eq!(forged.len(), 5, "{forged:?}");
        for damage in forged {
            let damaged = damage.change.apply(&encoded).unwrap();
            if let Err(seglog::format::FormatError::Corrupt { kind, .. }) =
                manifest::Manifest::decode(&damaged)
            {
                assert!(
                    !matches!(kind, seglog::error::CorruptKind::ChecksumMismatch { .. }),
                    "{}",
                    damage.label
                );
            }
        }
        // Files of no format of ours (an index) get none.
        assert!(forged_damages(&[0u8; 24], false).is_empty());
    }

    #[test]
    fn a_change_that_changes_nothing_is_dropped() {
        assert_eq!(Change::Zero { start: 0, end: 2 }.apply(&[0, 0, 1]), None);
        assert_eq!(Change::Truncate { len: 3 }.apply(&[0, 0, 1]), None);
        assert_eq!(
            Change::Flip {
                position: 2,
                bit: 1
            }
            .apply(&[0, 0, 1]),
            Some(vec![0, 0, 3])
        );
    }

    /// Each key summary damage breaks the CRC only (a decode refuses it) and, with
    /// the CRC resealed, changes exactly the field it names: one key hash (the
    /// first and the last among them), or the tombstone bound to a later time.
    #[test]
    fn key_summary_damages_make_the_summary_lie_in_one_field() {
        use seglog::format::key_summary::{self, KeySummary, NO_TOMBSTONE};
        let summary = KeySummary {
            base_offset: 4,
            segment_bytes: 500,
            segment_crc32c: 7,
            tombstone_ts_min: 1000,
            key_hashes: (1..=10u64).map(|k| k << 40).collect(),
        };
        let bytes = key_summary::encode(&summary);
        let damages = key_summary_damages(&bytes);
        let mut hashes_changed = Vec::new();
        let mut tombstone_changed = 0;
        for damage in &damages {
            let damaged = damage.change.apply(&bytes).expect("a change");
            assert_eq!(key_summary::decode(&damaged), None, "{}", damage.label);
            let mut resealed = damaged[..damaged.len() - 4].to_vec();
            let crc = seglog::format::crc::crc32c(&resealed);
            resealed.extend_from_slice(&crc.to_be_bytes());
            let lie = key_summary::decode(&resealed).expect("a valid summary");
            let changed: Vec<usize> = (0..summary.key_hashes.len())
                .filter(|&i| lie.key_hashes[i] != summary.key_hashes[i])
                .collect();
            if lie.tombstone_ts_min == summary.tombstone_ts_min {
                assert_eq!(changed.len(), 1, "{}", damage.label);
                hashes_changed.extend(changed);
            } else {
                assert!(changed.is_empty(), "{}", damage.label);
                assert_eq!(lie.tombstone_ts_min, 1000 + (1 << 62), "{}", damage.label);
                tombstone_changed += 1;
            }
            let rest = KeySummary {
                key_hashes: summary.key_hashes.clone(),
                tombstone_ts_min: summary.tombstone_ts_min,
                ..lie
            };
            assert_eq!(rest, summary, "{}", damage.label);
        }
        assert_eq!(hashes_changed, [0, 3, 6, 9]);
        assert_eq!(tombstone_changed, 1);
        let without_tombstone = key_summary::encode(&KeySummary {
            tombstone_ts_min: NO_TOMBSTONE,
            ..summary
        });
        assert_eq!(key_summary_damages(&without_tombstone).len(), 4);
        assert!(key_summary_damages(&bytes[1..]).is_empty());
    }
}

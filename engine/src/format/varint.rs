//! Zigzag varints as Kafka writes them (protobuf style, LEB128 of the zigzag value).

use crate::error::CorruptKind;

/// Appends `value` as a zigzag varint (32-bit).
pub fn put_varint(out: &mut Vec<u8>, value: i32) {
    put_varlong(out, i64::from(value));
}

/// Appends `value` as a zigzag varlong (64-bit).
#[inline]
pub fn put_varlong(out: &mut Vec<u8>, value: i64) {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    if v < 0x80 {
        out.push(v as u8);
        return;
    }
    // Built on the stack and appended once: one capacity check, not one per byte.
    // Ten bytes hold any u64 (7 bits a byte), so the loop always ends in a `break`.
    let mut buf = [0u8; 10];
    let mut n = 0;
    for slot in &mut buf {
        n += 1;
        if v < 0x80 {
            *slot = v as u8;
            break;
        }
        *slot = (v as u8) | 0x80;
        v >>= 7;
    }
    out.extend_from_slice(buf.get(..n).unwrap_or_default());
}

/// Encoded length of a zigzag varint/varlong.
#[inline]
pub fn varlong_len(value: i64) -> usize {
    // 7 bits a byte, at least one byte: ceil(significant bits / 7), with zero
    // counted as one significant bit.
    let v = ((value << 1) ^ (value >> 63)) as u64 | 1;
    (70 - v.leading_zeros() as usize) / 7
}

/// Decodes a zigzag varlong from the front of `buf`: (value, bytes used).
/// At most 10 bytes; a longer or unterminated encoding is [`CorruptKind::Varint`].
#[inline]
pub fn get_varlong(buf: &[u8]) -> Result<(i64, usize), CorruptKind> {
    // Fast path: most fields of a record (attributes aside) fit one byte.
    if let Some(&byte) = buf.first() {
        if byte & 0x80 == 0 {
            let raw = u64::from(byte);
            return Ok((((raw >> 1) as i64) ^ -((raw & 1) as i64), 1));
        }
    }
    let mut raw: u64 = 0;
    for (i, byte) in buf.iter().enumerate().take(10) {
        let bits = u64::from(byte & 0x7f);
        if i == 9 && bits > 1 {
            return Err(CorruptKind::Varint);
        }
        raw |= bits << (7 * i);
        if byte & 0x80 == 0 {
            let value = ((raw >> 1) as i64) ^ -((raw & 1) as i64);
            return Ok((value, i + 1));
        }
    }
    Err(CorruptKind::Varint)
}

/// Decodes a zigzag varint that must fit 32 bits.
#[inline]
pub fn get_varint(buf: &[u8]) -> Result<(i32, usize), CorruptKind> {
    let (value, used) = get_varlong(buf)?;
    let value = i32::try_from(value).map_err(|_| CorruptKind::Varint)?;
    if used > 5 {
        return Err(CorruptKind::Varint);
    }
    Ok((value, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_edges() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            300,
            -300,
            i64::from(i32::MAX),
            i64::from(i32::MIN),
            i64::MAX,
            i64::MIN,
        ] {
            let mut out = Vec::new();
            put_varlong(&mut out, v);
            assert_eq!(out.len(), varlong_len(v));
            assert_eq!(get_varlong(&out).unwrap(), (v, out.len()));
        }
        // Kafka's known encodings: 0 -> 00, -1 -> 01, 1 -> 02, 300 -> d8 04.
        let mut out = Vec::new();
        put_varint(&mut out, 300);
        assert_eq!(out, [0xd8, 0x04]);
    }

    /// The byte-at-a-time LEB128 length, the reference for the branch-free one.
    fn reference_len(value: i64) -> usize {
        let mut v = ((value << 1) ^ (value >> 63)) as u64;
        let mut n = 1;
        while v >= 0x80 {
            v >>= 7;
            n += 1;
        }
        n
    }

    #[test]
    fn length_and_encoding_agree_at_every_byte_boundary() {
        // Around every power of two (both signs): each place a length changes.
        for bit in 0..63 {
            let p = 1i64 << bit;
            for v in [p - 1, p, p + 1, -p - 1, -p, -p + 1] {
                let mut out = vec![0xaa];
                put_varlong(&mut out, v);
                assert_eq!(varlong_len(v), reference_len(v), "value {v}");
                assert_eq!(out.len() - 1, varlong_len(v), "value {v}");
                assert_eq!(get_varlong(&out[1..]).unwrap(), (v, out.len() - 1));
            }
        }
        for v in [i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1] {
            assert_eq!(varlong_len(v), reference_len(v), "value {v}");
            assert_eq!(varlong_len(v), 10);
        }
    }

    proptest::proptest! {
        #[test]
        fn length_matches_the_reference(v in proptest::num::i64::ANY) {
            let mut out = Vec::new();
            put_varlong(&mut out, v);
            proptest::prop_assert_eq!(varlong_len(v), reference_len(v));
            proptest::prop_assert_eq!(out.len(), reference_len(v));
            proptest::prop_assert_eq!(get_varlong(&out).unwrap(), (v, out.len()));
        }
    }

    #[test]
    fn rejects_unterminated_and_overlong() {
        assert_eq!(get_varlong(&[0x80, 0x80]), Err(CorruptKind::Varint));
        assert_eq!(get_varlong(&[0xff; 11]), Err(CorruptKind::Varint));
        assert_eq!(
            get_varint(&[0xff, 0xff, 0xff, 0xff, 0x7f]),
            Err(CorruptKind::Varint)
        );
    }
}

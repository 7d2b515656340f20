//! Kafka's file naming: the base offset, zero-padded to 20 digits, plus a suffix.

/// Digits in a segment file name.
pub const OFFSET_WIDTH: usize = 20;
/// Suffix of a segment's record batches.
pub const LOG_SUFFIX: &str = ".log";
/// Suffix of a segment's sparse offset index.
pub const INDEX_SUFFIX: &str = ".index";
/// Suffix of a segment's sparse time index.
pub const TIME_INDEX_SUFFIX: &str = ".timeindex";
/// Suffix of a clean segment's key summary (`format::key_summary`, derived).
pub const KEYS_SUFFIX: &str = ".keys";
/// Suffix of a segment's aborted-transaction index (`format::txn_index`, derived).
pub const TXN_INDEX_SUFFIX: &str = ".txnindex";

/// `00000000000000000042.log` for base offset 42 and suffix `.log`.
pub fn build(base_offset: i64, suffix: &str) -> String {
    assert!(base_offset >= 0, "negative base offset {base_offset}");
    // Digit by digit (an open builds three names a segment; `format!`'s padding
    // was a tenth of a trusting open's time): i64::MAX has 19 digits.
    let mut digits = [b'0'; OFFSET_WIDTH];
    let mut rest = base_offset.unsigned_abs();
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    let mut name = String::with_capacity(OFFSET_WIDTH + suffix.len());
    name.push_str(std::str::from_utf8(&digits).expect("ASCII digits"));
    name.push_str(suffix);
    name
}

/// The base offset and suffix of a segment file name, or `None` for any other name.
pub fn parse(name: &str) -> Option<(i64, &str)> {
    let digits = name.get(..OFFSET_WIDTH)?;
    let suffix = name.get(OFFSET_WIDTH..)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if ![
        LOG_SUFFIX,
        INDEX_SUFFIX,
        TIME_INDEX_SUFFIX,
        KEYS_SUFFIX,
        TXN_INDEX_SUFFIX,
    ]
    .contains(&suffix)
    {
        return None;
    }
    Some((digits.parse().ok()?, suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_and_parse() {
        assert_eq!(build(0, LOG_SUFFIX), "00000000000000000000.log");
        assert_eq!(build(42, INDEX_SUFFIX), "00000000000000000042.index");
        assert_eq!(
            parse("00000000000000000042.timeindex"),
            Some((42, TIME_INDEX_SUFFIX))
        );
        assert_eq!(parse("00000000000000000042.txt"), None);
        assert_eq!(parse("0000000000000000004a.log"), None);
        assert_eq!(parse("42.log"), None);
    }

    #[test]
    fn build_pads_every_base_offset_as_kafka_does() {
        for base in [
            0,
            7,
            10,
            99,
            100,
            123_456_789,
            i64::MAX / 10,
            i64::MAX - 1,
            i64::MAX,
        ] {
            let name = build(base, LOG_SUFFIX);
            assert_eq!(name, format!("{base:020}.log"));
            assert_eq!(parse(&name), Some((base, LOG_SUFFIX)));
        }
    }
}

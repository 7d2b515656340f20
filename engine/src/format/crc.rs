//! CRC-32C (Castagnoli): the checksum of Kafka batches, manifests and checkpoints.
//!
//! One seam so the implementation can change without touching the formats. It is
//! `crc-fast`, which picks the widest carry-less-multiply folding the CPU has at
//! run time (VPCLMULQDQ/AVX-512, PCLMULQDQ, or the SSE4.2/ARMv8 CRC instructions):
//! on the 2-core EPYC machines here it checksums cache-resident data at about twice
//! the rate of the `crc32c` crate (61 vs 30 GB/s), which matters on every read.

use crc_fast::{CrcAlgorithm, Digest};

/// The CRC-32C of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc_fast::crc32_iscsi(data)
}

/// The CRC-32C of `prefix ++ data`, given `crc`, the CRC-32C of `prefix`.
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    // The register holds the finalised value with the output XOR undone.
    let mut digest =
        Digest::new_with_init_state(CrcAlgorithm::Crc32Iscsi, u64::from(crc ^ 0xffff_ffff));
    digest.update(data);
    u32::try_from(digest.finalize()).expect("a CRC-32 fits in 32 bits")
}

/// A CRC-32C computed over several pieces, equal to [`crc32c`] of their concatenation.
#[derive(Clone)]
pub struct Crc32c(Digest);

impl Crc32c {
    /// An empty checksum (of zero bytes).
    pub fn new() -> Self {
        Crc32c(Digest::new(CrcAlgorithm::Crc32Iscsi))
    }

    /// Adds `data` to the checksummed bytes.
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The CRC-32C of everything added so far.
    pub fn finish(&self) -> u32 {
        u32::try_from(self.0.finalize()).expect("a CRC-32 fits in 32 bits")
    }
}

impl Default for Crc32c {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Crc32c {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Crc32c({:#010x})", self.finish())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn check_value_of_the_catalogue() {
        // reveng's CRC-32/ISCSI check value.
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(b""), 0);
        let mut streaming = Crc32c::new();
        streaming.update(b"1234");
        streaming.update(b"");
        streaming.update(b"56789");
        assert_eq!(streaming.finish(), 0xe306_9283);
        assert_eq!(crc32c_append(crc32c(b"1234"), b"56789"), 0xe306_9283);
        assert_eq!(crc32c_append(0, b""), 0);
    }

    proptest! {
        /// The accelerated paths (chosen by length and CPU) agree with the `crc32c`
        /// crate, an independent implementation, one-shot and in pieces.
        #[test]
        fn agrees_with_an_independent_implementation(
            data in proptest::collection::vec(any::<u8>(), 0..20_000),
            cut in any::<prop::sample::Index>(),
        ) {
            let expected = ::crc32c::crc32c(&data);
            prop_assert_eq!(crc32c(&data), expected);
            let (head, tail) = data.split_at(cut.index(data.len() + 1).min(data.len()));
            let mut streaming = Crc32c::new();
            streaming.update(head);
            streaming.update(tail);
            prop_assert_eq!(streaming.finish(), expected);
            prop_assert_eq!(crc32c_append(crc32c(head), tail), expected);
        }
    }
}

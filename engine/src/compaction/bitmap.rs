//! A growable bitmap of `u64` words: the offset map's superseded records and the
//! scan's plain batches (one bit per record or batch, 1/8 byte each).

use std::ops::Range;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
/// A growable set of bits, all clear until set.
pub struct Bitmap {
    words: Vec<u64>,
}

const WORD_BITS: usize = 64;

impl Bitmap {
    /// Sets bit `index`, growing the bitmap when needed.
    pub fn set(&mut self, index: usize) {
        let word = index / WORD_BITS;
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (index % WORD_BITS);
    }

    /// Bit `index` (false beyond the last set bit).
    pub fn get(&self, index: usize) -> bool {
        self.words
            .get(index / WORD_BITS)
            .is_some_and(|word| word & (1 << (index % WORD_BITS)) != 0)
    }

    /// Set bits in `range`, a word at a time.
    pub fn count(&self, range: Range<usize>) -> usize {
        if range.is_empty() {
            return 0;
        }
        let (first, last) = (range.start / WORD_BITS, (range.end - 1) / WORD_BITS);
        let word = |i: usize| self.words.get(i).copied().unwrap_or(0);
        // Masks of the bits of the first and last words that lie in the range.
        let head = u64::MAX << (range.start % WORD_BITS);
        let tail = u64::MAX >> (WORD_BITS - 1 - (range.end - 1) % WORD_BITS);
        if first == last {
            return (word(first) & head & tail).count_ones() as usize;
        }
        let len = self.words.len();
        let middle: u32 = self
            .words
            .get((first + 1).min(len)..last.min(len))
            .unwrap_or_default()
            .iter()
            .map(|w| w.count_ones())
            .sum();
        ((word(first) & head).count_ones() + middle + (word(last) & tail).count_ones()) as usize
    }

    /// Sets every bit set in `other`.
    pub fn union_with(&mut self, other: &Bitmap) {
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (word, theirs) in self.words.iter_mut().zip(&other.words) {
            *word |= theirs;
        }
    }

    /// The indices of the set bits, ascending.
    pub fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(i * WORD_BITS + bit)
            })
        })
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.words.capacity() * size_of::<u64>()
    }

    /// Releases the words beyond the highest bit set (a bitmap kept between runs).
    pub fn shrink_to_fit(&mut self) {
        self.words.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ones_lists_the_set_bits() {
        let mut bitmap = Bitmap::default();
        for index in [0, 5, 63, 64, 200] {
            bitmap.set(index);
        }
        assert_eq!(bitmap.ones().collect::<Vec<_>>(), vec![0, 5, 63, 64, 200]);
        assert_eq!(Bitmap::default().ones().count(), 0);
    }

    #[test]
    fn counts_agree_with_single_bits() {
        let mut bits = Bitmap::default();
        let set: Vec<usize> = (0..700).filter(|i| i % 3 == 0 || i % 64 == 63).collect();
        for &i in &set {
            bits.set(i);
        }
        for i in 0..800 {
            assert_eq!(bits.get(i), set.contains(&i), "bit {i}");
        }
        for start in (0..760).step_by(7) {
            for end in (start..800).step_by(11) {
                let expected = set.iter().filter(|&&i| (start..end).contains(&i)).count();
                assert_eq!(bits.count(start..end), expected, "{start}..{end}");
            }
        }
        assert_eq!(bits.count(0..usize::MAX / 2), set.len());
        assert_eq!(Bitmap::default().count(0..1000), 0);
        let mut more = Bitmap::default();
        more.set(1);
        more.set(900);
        let mut union = more.clone();
        union.union_with(&bits);
        for i in 0..1000 {
            assert_eq!(union.get(i), bits.get(i) || more.get(i), "bit {i}");
        }
        more.union_with(&bits);
        assert_eq!(more, union);
        assert!(!Bitmap::default().get(5));
    }
}

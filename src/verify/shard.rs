//! `--shard K/N`: one of `N` disjoint, deterministic parts of a run, so a CI matrix
//! splits a budget. Each stage numbers its units (crash points, cases, files,
//! models, workloads) `0, 1, 2, ...` in the same order in every run, and shard `K`
//! takes the units `u` with `u % N == K - 1`: the shards are pairwise disjoint and
//! together are exactly the unsharded run.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// Shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shard {
    /// Which shard, `1..=count`.
    pub index: u64,
    /// How many shards split the run (at least 1).
    pub count: u64,
}

impl Shard {
    /// The whole run: shard 1 of 1.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Shard `index` of `count`; an error unless `1 <= index <= count`.
    pub fn new(index: u64, count: u64) -> Result<Shard, String> {
        if count == 0 {
            return Err(format!("shard {index}/{count}: N must be at least 1"));
        }
        if index == 0 || index > count {
            return Err(format!(
                "shard {index}/{count}: K must be between 1 and N ({count})"
            ));
        }
        Ok(Shard { index, count })
    }

    /// True if unit `unit` of a stage belongs to this shard.
    pub fn owns(self, unit: u64) -> bool {
        unit % self.count == self.index - 1
    }

    /// True if this is the whole run.
    pub fn is_all(self) -> bool {
        self.count == 1
    }
}

impl Default for Shard {
    fn default() -> Self {
        Shard::ALL
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let bad = || format!("{text:?} is not a shard: expected K/N with 1 <= K <= N, e.g. 2/4");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let k: u64 = k.trim().parse().map_err(|_| bad())?;
        let n: u64 = n.trim().parse().map_err(|_| bad())?;
        Shard::new(k, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_good_values_and_rejects_bad_ones() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!("1/1".parse::<Shard>(), Ok(Shard::ALL));
        for bad in ["0/2", "3/2", "x", "1/0", "1/", "/2", "-1/2", "1/2/3", ""] {
            let err = bad.parse::<Shard>().expect_err(bad);
            assert!(err.contains("shard"), "{bad}: {err}");
        }
    }

    #[test]
    fn shards_are_disjoint_and_cover_every_unit() {
        for count in 1..=7 {
            let shards: Vec<Shard> = (1..=count).map(|k| Shard::new(k, count).unwrap()).collect();
            for unit in 0..100 {
                let owners = shards.iter().filter(|s| s.owns(unit)).count();
                assert_eq!(owners, 1, "unit {unit} of {count} shards");
            }
        }
        assert!(Shard::ALL.owns(0));
        assert!(Shard::ALL.owns(u64::MAX));
    }
}

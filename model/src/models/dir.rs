//! A directory's entries under the two crash semantics the models check.
//!
//! `entries` is what processes see. `durable` is what the disk holds as of the last
//! fsync of the directory; `pending` lists the entry operations (create, rename,
//! unlink) since then, in order.
//! - Process crash: every completed operation persists (nothing changes).
//! - Power loss: each pending operation may be lost independently (file systems such as
//!   ext4 or xfs give no ordering guarantee between unsynced directory operations). The
//!   disk is the durable entries with the kept operations replayed in order; a kept
//!   operation whose source no longer exists is a no-op. Rename stays atomic.

use std::collections::BTreeMap;
use std::fmt::Debug;

use serde::{Deserialize, Serialize};

/// One directory entry operation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DirOp<N, O> {
    Create(N, O),
    Rename { from: N, to: N },
    Remove(N),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Dir<N: Ord, O> {
    pub entries: BTreeMap<N, O>,
    pub durable: BTreeMap<N, O>,
    pub pending: Vec<DirOp<N, O>>,
}

fn apply<N: Ord + Clone, O: Clone>(entries: &mut BTreeMap<N, O>, op: &DirOp<N, O>) {
    match op {
        DirOp::Create(name, obj) => {
            entries.insert(name.clone(), obj.clone());
        }
        DirOp::Rename { from, to } => {
            if let Some(obj) = entries.remove(from) {
                entries.insert(to.clone(), obj);
            }
        }
        DirOp::Remove(name) => {
            entries.remove(name);
        }
    }
}

impl<N: Ord + Clone + Debug, O: Clone + PartialEq + Debug> Dir<N, O> {
    /// A directory whose entries are all durable.
    pub fn synced(entries: BTreeMap<N, O>) -> Self {
        Dir {
            durable: entries.clone(),
            entries,
            pending: Vec::new(),
        }
    }

    pub fn get(&self, name: &N) -> Option<&O> {
        self.entries.get(name)
    }

    /// Performs `op` (visible at once, durable after the next [`Dir::sync`]).
    pub fn run(&mut self, op: DirOp<N, O>) {
        apply(&mut self.entries, &op);
        self.pending.push(op);
    }

    /// fsync of the directory: every pending operation becomes durable.
    pub fn sync(&mut self) {
        self.durable = self.entries.clone();
        self.pending.clear();
        debug_assert_eq!(self.durable, self.entries);
    }

    /// Power loss keeping the pending operations whose index is not in `lost`.
    pub fn power_loss(&mut self, lost: &[usize]) {
        let mut disk = self.durable.clone();
        for (i, op) in self.pending.iter().enumerate() {
            if !lost.contains(&i) {
                apply(&mut disk, op);
            }
        }
        *self = Dir::synced(disk);
    }

    /// True if a power loss now could change what processes see.
    pub fn is_durable(&self) -> bool {
        self.pending.is_empty()
    }
}

/// Every subset of `0..n`, as sorted index lists, smallest first (so a breadth-first
/// checker reports the counterexample that loses the fewest operations).
pub fn subsets(n: usize) -> Vec<Vec<usize>> {
    let mut all: Vec<Vec<usize>> = (0..1u32 << n)
        .map(|mask| (0..n).filter(|i| mask & (1 << i) != 0).collect())
        .collect();
    all.sort_by_key(|s: &Vec<usize>| s.len());
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_loss_keeps_any_subset_of_pending_operations() {
        let mut dir: Dir<&str, u8> = Dir::synced(BTreeMap::from([("d", 1)]));
        dir.run(DirOp::Create("t", 2));
        dir.run(DirOp::Rename { from: "d", to: "b" });
        dir.run(DirOp::Rename { from: "t", to: "d" });
        assert_eq!(dir.entries, BTreeMap::from([("b", 1), ("d", 2)]));
        let mut process_crash = dir.clone();
        process_crash.sync();
        assert_eq!(process_crash.entries, dir.entries);
        // Losing the create makes the later rename of "t" a no-op: "d" is gone.
        let mut lost_create = dir.clone();
        lost_create.power_loss(&[0]);
        assert_eq!(lost_create.entries, BTreeMap::from([("b", 1)]));
        assert!(lost_create.is_durable());
        let mut lost_all = dir.clone();
        lost_all.power_loss(&[0, 1, 2]);
        assert_eq!(lost_all.entries, BTreeMap::from([("d", 1)]));
        assert_eq!(subsets(3).len(), 8);
        assert_eq!(subsets(3)[0], Vec::<usize>::new());
    }
}

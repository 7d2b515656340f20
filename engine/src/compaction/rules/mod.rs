//! The rule sets a compaction pass consults, each a pure function of what the
//! reader found (no `FileSystem`, no IO: `tests/module_graph/` holds them to it):
//! the [`seed`] policy's and the [`kafka`] policy's record and grouping rules, the
//! transaction rules ([`txn`]: aborted data, the last stable offset, the
//! `.txnindex` entries kept), the [`markers`] rule, and [`retain_empty`] (an active
//! producer's last batch kept as an empty batch).

pub mod kafka;
pub mod markers;
pub mod retain_empty;
pub mod seed;
pub mod txn;

//! Key-based compaction as one flow (`build`): the section, a pass per policy
//! ([`pass`]) over the one reader, the one map ([`map`]), the one planner and the
//! pure rule sets ([`rules`]: keep/drop per record and batch, grouping,
//! transactions, markers, empty batches), the one writer, and the finish that
//! leaves the new directory for [`crate::install`]. The modules import each other in one direction (the table
//! "The compaction modules" below has the layers; `tests/module_graph/` holds them to it); the decoded
//! reference compactors of the unit tests (`reference`) are what the passes that
//! run are held to.
//!
//! Semantics: docs/design.md section 1; map memory and collisions: "The offset map
//! and collisions" below.
//!
//! ## The offset map and collisions
//! 24-byte entries (16-byte key digest + 8-byte offset, like Kafka's `SkimpyOffsetMap`),
//! one per distinct digest, over every keyed record of non-control batches in *all*
//! segments (the active one included), kept in 1024 buckets deduplicated in place and
//! concatenated at the end: 24 bytes per distinct key (`map_bytes`; `map_bytes_peak` about
//! 48). A bucket is deduplicated when it fills at 128 entries or more and only doubles
//! below that: a dedup at every doubling from 16 entries went over most entries three
//! times, and the small buckets hold at most 3 MiB whatever the keys repeat. A map that answers lookups by key (the incremental pass's map of the dirty section)
//! is sorted once and gets a directory of the digests' top bits, 2 to 4 entries a slot (at
//! most 2 bytes a key), so a lookup reads one slot's entries instead of searching them all. The digest is SipHash-2-4 with 128-bit output under a key drawn from the OS for
//! every compaction: for keys chosen without knowledge of it, `n` keys collide with
//! probability at most about `n^2 / 2^129` (1.5e-21 for 10^9 keys, far below the rate of
//! undetected disk errors), and no fixed set of keys collides every time. A collision
//! would make the older key's latest record look obsolete; seglog relies on it being
//! astronomically unlikely rather than detecting it.
//!
//! The map pass inserts record *ordinals* and sets one bit per ordinal a later entry
//! replaced (`OffsetMap::tracking_superseded`), and one bit per *plain* batch (no
//! control, every record keyed with a value). One thread checks every batch (length,
//! magic, CRC-32C, offsets, framing) while the other hashes and inserts, the reader
//! taking a chunk's hashing when the inserting thread falls behind; the incremental
//! pass's clean-section lookups share the work the same way. The rewrite
//! pass decides a plain batch by its bits alone: none set, a run of source bytes; all
//! set, it disappears. Other batches are decided record by record, and a partly kept
//! one is *spliced* (its header rewritten, the kept records' bytes copied as they
//! are), byte for byte what decoding, `RecordBatch::retain` and encoding give. Closed
//! segments are mapped (`FileSystem::map`) and never modified, so the rewrite pass
//! does not recompute their CRCs. A build maps each closed segment once
//! (`segment::files::map_segments`): the check that its batches end below the next base, the
//! header walk, the map pass and the rewrite all read that one mapping, so no page is
//! faulted in twice and a file system whose `map` reads the file reads it once.
//!
//! **The incremental map pass** (`compaction::pass::incremental`): unless the clean point is the log
//! start with default knobs, the pass maps the dirty section (`compaction::map::Map`, both
//! policies: with `dedupe_buffer_bytes` the fixed `map::Table` of that many bytes / 24
//! slots, so `map_bytes_peak <= dedupe_buffer_bytes`; else the sorted `map::OffsetMap`),
//! then looks each clean key up: in the map means superseded; past the horizon batches stay as they are.
//!
//! The closed region is written on two threads (`compaction::output`): one describes each
//! source segment while the calling thread makes every file-system call one segment
//! behind, in exactly the order a single thread would, so the crash sweeps' k-th call does
//! not depend on scheduling. A read-only open refuses while an install is pending.
//!
//! ## Carried segments (beyond Kafka; `compaction::carry`, `format::key_summary`)
//! Kafka rewrites every segment below the cleanable horizon on every pass. Here a clean
//! segment nothing can change is hard-linked into the temp dir instead. The rule is the
//! spec's: below the horizon a clean record is dropped only if the map holds its key or it
//! is an expired keyed tombstone, so a segment wholly below the clean point whose key
//! hashes share none with the pass's map, and whose oldest keyed tombstone is within the
//! grace, keeps every record: its compacted form is its own bytes. It is *carried*: not
//! read, left out of the map pass's ordinals, linked if it forms an output segment alone,
//! copied as one run otherwise.
//!
//! The key summary (`<base>.keys`, layout in section 2) holds exact 64-bit key hashes
//! (SipHash-1-3 under fixed keys; a collision only makes a segment look touched) rather
//! than a Bloom filter, whose false-positive rate would have to be below one in the number
//! of dirty keys. A pass writes one for every output segment whose sources it read in
//! full, synced in the temp dir; it is derived and left out of the manifest. The pass
//! trusts one only if it decodes, names this base and length, and holds the CRC-32C of the
//! segment's bytes; else the segment is rewritten, never carried
//! (`tests/carried_segments.rs`).
//!
//! Summaries cost a stable hash of every key the pass reads, a sort and a `.keys` file per
//! output segment, and pay only when a later pass carries a segment. A pass writes them
//! when it carries a segment or has no wholly clean segment to judge by (a first pass),
//! and writes none when every wholly clean segment has a summary that its dirty keys
//! touch: scattered dirt, where the next pass will most likely touch every segment again
//! (`carry::SummaryPlan`). Such a pass reads its clean section once, not twice: nothing is
//! carried, so the rewrite reads every clean segment anyway, and it checks each batch's
//! CRC-32C and looks each keyed record up in the map of the dirty section as it writes
//! (`rewrite::Lookups`, `map::Fate`), instead of a lookup pass before it setting bits by
//! ordinal. Damage found there fails the build after the temp dir is made; the log is
//! poisoned and the next open removes the temp dir, as for any error of a build. Every
//! clean-section lookup, the rewrite's or a lookup pass's, first tests a filter of the
//! mapped keys' stable hashes (`map::KeyFilter`: one bit per hash, 16 bits a key, about
//! 1 in 16 other keys passing): a clear bit says the key is not dirty without the map's
//! digest and search, which most clean keys of a pass never need. Equal keys have equal
//! hashes, so the filter never hides a mapped key. When some
//! clean segments have no summary and none is carried, the pass computes the hashes and
//! writes summaries only if its lookups find one of those segments untouched by the mapped
//! keys, so a log whose dirt turns clustered gets its summaries back one pass later and
//! carries from the pass after that. Whatever the choice, the output's records are the
//! same; only what a later pass may carry changes.
//!
//! A carried `.log` and `.keys` get a second name in the temp dir (`FileSystem::hard_link`,
//! `compaction::build::link_carried`): the inode's data is durable since its roll or
//! compaction, and the new name is made durable by the temp dir's fsync before the commit
//! point, so every recovery row keeps the inode whole. Model (b) refutes `carry-by-rename`
//! (the old content loses a file) and `link-without-dir-sync` (a link after the temp dir's
//! fsync can be lost after the commit point). The report gives `segments_carried` and
//! `bytes_carried`.
//!
//! ## The compaction modules
//!
//! A build is one flow (`build::build_indexed`): the section (clean point, min lag, first uncleanable offset),
//! then one pass per policy (`pass::seed`, `pass::kafka`) that reads through the one reader (`read`), maps into the one map (`map`),
//! plans each batch with the one planner (`plan`) under its policy's pure rules (`engine/src/compaction/rules/`), describes its output one source segment at a time as `runs` (with `reseal`)
//! and writes it through the one `writer` (two source segments' runs in flight, so the heap a pass holds for its output follows a source segment, not an output group); then the one finish (`finish`) and the install.
//! Before its map, a pass walks the section's batch headers once (`headers::walk`: aborted transactions, the last stable offset, the producers): the map must know the aborted batches before its first key, since their keys never enter it. The map's read and the rewrite then each go through the records once.
//!
//! **Code layout of `engine/src/compaction/`**, lowest first (`tests/module_graph/` fails on
//! an import cycle and on a rule set that reaches IO):
//!
//! | layer | modules | what they hold |
//! |---|---|---|
//! | leaves | `source`, `section`, `view`, `walker`, `bitmap`, `handover`, `files`, `runs`, `map`, `options`, `cleanable` | what a pass writes as runs of stored and rebuilt bytes (`runs::Runs`, both policies), the active segment's read (`source::read_active`; the segment list is `segment::files`: both policies read and check the active segment the same way, every batch as a full decode checks it, so neither copies a batch it could not read), the clean point and the min-lag rule (`section::too_young`, the one predicate of the seed map, the kafka pass and `Log::cleanable`), zero-copy batch views, the one record walk of every reader (`walker::Walker`: the format's record decoder, compressed batches inflated into one arena, so a forged record fails both policies with one error), the one map of every pass (`map::Map`: the fixed table under a key budget, the sorted map without one; `map::Fate`, how a rewritten record learns it is the latest; `map::KeyFilter`, the dirty keys' filter), a build's sync and link steps, the shared types (`CompactOptions`, `CleanOptions`, `CompactionPolicy`, `BuildFrom`, `Built`, `CompactionReport`, `Cleanable`) |
//! | rules (no IO) | `rules/seed`, `rules/kafka`, `rules/txn`, `rules/markers`, `rules/retain_empty` | per-record and per-batch decisions and grouping of each policy, the transaction rules of both (aborted data, last stable offset, `.txnindex` entries kept), the marker rule, `RETAIN_EMPTY`'s active producers |
//! | over the rules | `plan`, `carry`, `headers`, `reseal`, `writer`, `finish` | the one planner (`plan::BatchPlan`: copy, drop, keep empty, splice, rebuild with a horizon; pure, both policies: the write side only executes plans), the one writer of output segments (`writer::write_parts`: per-source runs with start and end marks, every file-system call on one thread in a fixed order, both policies), carry decisions, the header walk and `.txnindex` read that feed the rules, the one header patch and CRC of every batch written other than as stored (`reseal::reseal`: spliced, rebuilt, horizon-stamped and empty batches), the end of a build (active copy, carried files, clean point, index, `.txnindex` and recovery-point writers, the manifest) |
//! | read | `read`, `compressed` | the one batch reader of both policies (`read::each`: every batch split, CRC-checked and walked on a second thread (on the consuming one for inputs under 1 MiB, `read::SECOND_THREAD_BYTES`: there a thread's start and hand-overs cost more than they save), its records counted, the keys of the batches a pass maps handed over in chunks, hashed by the consumer unless it falls behind), inflated batch walks |
//! | write | `rewrite`, `output` | the seed policy's execution of plans and its description of the output |
//! | passes | `pass/full`, `pass/incremental`, `pass/kafka_map`, `pass/seed`, `pass/kafka` | each policy's map step over the reader and the map (the seed policy's full and incremental ones, the kafka policy's split and map), each policy's pass (`pass::Pass`: what the finish takes) |
//! | drive | `build`, `snapshot` | the one flow of a build, concurrent cleaning's snapshot and its build (the `Log` methods that call them are `log/compact.rs`, `log/clean.rs`) |
//! | reference (unit tests only) | `reference/kafka`, `reference/producers` | the decoded reference compactor of the `kafka` policy and the producers' walk, that the passes that run are held to; the seed policy's reference compactor is the suite's (`src/conformance/compactor.rs`) |

pub(crate) mod bitmap;
pub(crate) mod build;
pub(crate) mod carry;
pub(crate) mod cleanable;
pub(crate) mod compressed;
mod files;
pub(crate) mod finish;
mod handover;
pub(crate) mod headers;
pub mod map;
pub(crate) mod options;
pub(crate) mod output;
pub mod pass;
mod plan;
mod read;
#[cfg(test)]
mod reference;
mod reseal;
pub(crate) mod rewrite;
pub mod rules;
mod runs;
pub(crate) mod section;
pub(crate) mod snapshot;
pub(crate) mod source;
pub(crate) mod view;
mod walker;
mod writer;

use std::path::Path;

use crate::error::Result;
use crate::fs::FileSystem;

pub use bitmap::Bitmap;
pub use build::{build, build_indexed, build_with};
pub use carry::{ReadKeys, SourceKeys};
pub use cleanable::Cleanable;
pub use options::{
    Built, CleanOptions, CompactOptions, CompactionPolicy, CompactionReport,
    PRODUCER_ID_EXPIRATION_MS_DEFAULT,
};
pub use rules::seed::{Decision, Horizon};
#[cfg(any(test, feature = "test-variants"))]
pub use snapshot::CleanVariant;
pub use snapshot::{CleanBuild, CleanSnapshot, Swapped};
pub use view::RecordView;

/// Compacts the log directory `dir` and installs the result (steps 1 to 6).
/// `None` when there is no closed segment. The directory's segment files must be
/// durable (flush the log first) and no `Log` may have it open while this runs.
pub fn compact_dir(
    fs: &dyn FileSystem,
    dir: &Path,
    options: CompactOptions,
) -> Result<Option<CompactionReport>> {
    let Some(built) = build::build(fs, dir, options)? else {
        return Ok(None);
    };
    crate::install::install(fs, dir, &built.manifest)?;
    Ok(Some(built.report))
}

/// [`compact_dir`] with a chosen (possibly broken) install protocol. Test builds only.
#[cfg(any(test, feature = "test-variants"))]
pub fn compact_dir_with(
    fs: &dyn FileSystem,
    dir: &Path,
    options: CompactOptions,
    variant: crate::install::InstallVariant,
) -> Result<Option<CompactionReport>> {
    let Some(built) = build::build(fs, dir, options)? else {
        return Ok(None);
    };
    crate::install::install_with(fs, dir, &built.manifest, variant)?;
    Ok(Some(built.report))
}

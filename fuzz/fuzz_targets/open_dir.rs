//! Fuzz target: opening an arbitrary small log directory.
//!
//! The input describes a directory (`common::DirInput`): up to four segments of valid
//! batches (compaction gaps, partly kept batches and control batches included) at
//! arbitrary base offsets, each with exact, missing, cut or garbage index files, files
//! the log does not own (temp files, odd names, a subdirectory), a valid or garbage
//! retention checkpoint, install-protocol leftovers (an uncommitted compaction temp
//! dir, a manifest temp, a damaged manifest), and up to three
//! damages (truncate, flip a bit, append bytes, remove) to any file. It is built in a
//! `SimFs`, snapshotted, and opened with `Log::open_with`.
//!
//! Invariants checked (`check_dir::open_dir`):
//! - open never panics;
//! - a failed open changed nothing, except that install and retention recovery (which
//!   run first) may have removed leftovers or segments wholly below a valid
//!   checkpoint; it happens only if something was damaged, and a `Corrupt` error
//!   names a damaged file;
//! - a successful open deleted no byte outside a torn active tail: every file other
//!   than the index files keeps its bytes, the last segment's `.log` keeps a prefix,
//!   only index files (or the first segment of an empty directory) are created; the
//!   exceptions are committed deletions (segments wholly below a valid retention
//!   checkpoint) and protocol leftovers (checkpoint temp, an uncommitted compaction's
//!   temp dir and manifest temp, which must then be gone);
//! - after a successful open every `.log` decodes completely, and the engine reads
//!   back exactly the records the files hold;
//! - every record of the segments before the first damaged `.log` reads back exactly,
//!   and an undamaged directory reads back everything with nothing truncated;
//! - a read-only open (`Log::open_read_only`, run first) changes nothing, even when it
//!   fails, and when it succeeds serves exactly what the writable open then serves;
//! - a second open changes no byte and reports nothing to repair.
#![no_main]

#[allow(dead_code)]
mod check_dir;
#[allow(dead_code)]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: common::DirInput| {
    check_dir::open_dir(&input);
});

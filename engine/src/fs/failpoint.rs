//! Every fail point in the engine, by name, in one place.
//!
//! Names follow `module::operation::point`. Each rename, sync and remove call
//! site on the append, roll, flush, recovery, retention, compaction and install
//! paths carries one, through the [`crate::fail_point!`] macro, which compiles
//! to nothing unless the `failpoints` cargo feature is on.
//!
//! Actions (set through the `FAILPOINTS` environment variable of the `fail`
//! crate, or `fail::cfg` in tests):
//! * `return` or `return(crash)`: print one line on stderr and abort the process
//!   at once: no destructors, no buffered writes, like `kill -9`.
//! * `return(error)`: the operation fails with [`crate::Error::Injected`] and the
//!   engine carries on as it would after an IO error.
//! * the `fail` crate's own actions (`panic`, `sleep(ms)`, `off`, counts like `2*off->return`).

// --- log: append, roll, flush ---------------------------------------------
/// Before an append writes its batch to the active segment's `.log`.
pub const LOG_APPEND_WRITE: &str = "log::append::write";
/// Before an ABORT marker's entry is appended to the active segment's `.txnindex`.
pub const LOG_TXN_INDEX_APPEND: &str = "log::txn_index::append";
/// Before the transaction state pass rewrites a missing or invalid `.txnindex`.
pub const LOG_TXN_INDEX_REWRITE: &str = "log::txn_index::rewrite";
/// Before a roll syncs the closing segment's `.log` and indexes.
pub const LOG_ROLL_SYNC_CLOSED: &str = "log::roll::sync_closed";
/// Before a roll syncs the closing segment's `.index`.
pub const LOG_ROLL_SYNC_INDEX: &str = "log::roll::sync_index";
/// Before a roll syncs the closing segment's `.timeindex`.
pub const LOG_ROLL_SYNC_TIME_INDEX: &str = "log::roll::sync_time_index";
/// Before a roll creates the new active segment's files.
pub const LOG_ROLL_CREATE_SEGMENT: &str = "log::roll::create_segment";
/// Before the first append or roll after an open that kept the clean-shutdown
/// marker removes it.
pub const LOG_UNMARK_REMOVE_MARKER: &str = "log::unmark::remove_marker";
/// Before that removal's directory fsync.
pub const LOG_UNMARK_SYNC_DIR: &str = "log::unmark::sync_dir";
/// Before a roll syncs the recovery point's temp file.
pub const LOG_ROLL_SYNC_RECOVERY_POINT: &str = "log::roll::sync_recovery_point";
/// Before a roll renames the recovery point's temp file over it.
pub const LOG_ROLL_RENAME_RECOVERY_POINT: &str = "log::roll::rename_recovery_point";
/// Before a roll syncs the log directory (the new segment's entries and the recovery point's rename).
pub const LOG_ROLL_SYNC_DIR: &str = "log::roll::sync_dir";
/// Before a flush syncs the active segment's `.log`.
pub const LOG_FLUSH_SYNC_LOG: &str = "log::flush::sync_log";
/// Before a clean close syncs the active segment's `.log`.
pub const LOG_CLOSE_SYNC_LOG: &str = "log::close::sync_log";
/// Before a clean close syncs the active segment's `.index`.
pub const LOG_CLOSE_SYNC_INDEX: &str = "log::close::sync_index";
/// Before a clean close syncs the active segment's `.timeindex`.
pub const LOG_CLOSE_SYNC_TIME_INDEX: &str = "log::close::sync_time_index";
/// Before a clean close syncs the clean-shutdown marker's temp file.
pub const LOG_CLOSE_SYNC_MARKER: &str = "log::close::sync_marker";
/// Before a clean close renames the marker's temp file into place.
pub const LOG_CLOSE_RENAME_MARKER: &str = "log::close::rename_marker";
/// Before a clean close syncs the log directory (the marker's rename).
pub const LOG_CLOSE_SYNC_DIR: &str = "log::close::sync_dir";
// --- log: recovery on open ------------------------------------------------
/// Before recovery truncates a torn tail off the active segment's `.log`.
pub const LOG_RECOVERY_TRUNCATE_TAIL: &str = "log::recovery::truncate_tail";
/// Before recovery writes a rebuilt (missing or damaged) index file.
pub const LOG_RECOVERY_REBUILD_INDEX: &str = "log::recovery::rebuild_index";
/// Before recovery fsyncs the active segment's `.log` it scanned (the bytes found).
pub const LOG_RECOVERY_SYNC_ACTIVE: &str = "log::recovery::sync_active";
/// Before recovery creates the first segment of an empty log.
pub const LOG_RECOVERY_CREATE_SEGMENT: &str = "log::recovery::create_segment";
/// Before recovery removes an orphan index file (one without its `.log`).
pub const LOG_RECOVERY_REMOVE_ORPHAN: &str = "log::recovery::remove_orphan";
/// Before recovery syncs an ancestor entry of a log directory it created.
pub const LOG_RECOVERY_SYNC_DIR: &str = "log::recovery::sync_dir";
/// Before recovery removes the clean-shutdown marker, a checkpoint temp or a stale recovery point.
pub const LOG_RECOVERY_REMOVE_MARKER: &str = "log::recovery::remove_marker";
/// Before recovery syncs a closed segment it scanned, before a new recovery point vouches for it.
pub const LOG_RECOVERY_SYNC_SCANNED: &str = "log::recovery::sync_scanned";
/// Before recovery syncs the log directory ahead of writing a new recovery point.
pub const LOG_RECOVERY_SYNC_SCANNED_DIR: &str = "log::recovery::sync_scanned_dir";
/// Before recovery syncs the temp file of the recovery point it writes.
pub const LOG_RECOVERY_SYNC_RECOVERY_POINT: &str = "log::recovery::sync_recovery_point";
/// Before recovery renames the recovery point's temp file over it.
pub const LOG_RECOVERY_RENAME_RECOVERY_POINT: &str = "log::recovery::rename_recovery_point";
/// Before recovery's final sync of the log directory (always: the entries it found may not be durable).
pub const LOG_RECOVERY_SYNC_LOG_DIR: &str = "log::recovery::sync_log_dir";
/// Before recovery syncs the parent (or an ancestor) of a new or still empty log directory.
pub const LOG_RECOVERY_SYNC_PARENT: &str = "log::recovery::sync_parent";

// --- retention: checkpoint first, then delete --------------------------------
/// Before retention syncs the new checkpoint's temp file.
pub const RETENTION_CHECKPOINT_SYNC_TMP: &str = "retention::checkpoint::sync_tmp";
/// Before retention renames the checkpoint's temp file over the checkpoint.
pub const RETENTION_CHECKPOINT_RENAME: &str = "retention::checkpoint::rename";
/// Before retention syncs the directory, making the new start offset durable.
pub const RETENTION_CHECKPOINT_SYNC_DIR: &str = "retention::checkpoint::sync_dir";
/// Before retention removes a file of a segment below the new start offset.
pub const RETENTION_DELETE_REMOVE_FILE: &str = "retention::delete::remove_file";
// --- retention: recovery on open --------------------------------------------
/// Before recovery removes a segment file the checkpoint already put below the start.
pub const RETENTION_RECOVER_REMOVE_FILE: &str = "retention::recover::remove_file";
/// Before recovery syncs the directory first, so the checkpoint it acts on is durable.
pub const RETENTION_RECOVER_SYNC_DIR_FIRST: &str = "retention::recover::sync_dir_first";
// --- compaction: building the temp directory (install step 1) --------------
/// Before compaction syncs a file it wrote into the temp directory (install step 1).
pub const COMPACTION_BUILD_SYNC_FILE: &str = "compaction::build::sync_file";
/// Before compaction syncs the clean point file it writes into the temp dir.
pub const COMPACTION_BUILD_SYNC_CLEAN_POINT: &str = "compaction::build::sync_clean_point";
/// Before the fsync of the new directory's recovery point in the temp dir.
pub const COMPACTION_BUILD_SYNC_RECOVERY_POINT: &str = "compaction::build::sync_recovery_point";
/// Before compaction syncs the temp directory itself.
pub const COMPACTION_BUILD_SYNC_TMP_DIR: &str = "compaction::build::sync_tmp_dir";
/// Before a carried segment's `.log` or `.keys` is hard-linked into the temp dir.
pub const COMPACTION_BUILD_LINK_CARRIED: &str = "compaction::build::link_carried";
// --- install: steps 2 to 6 ---------------------------------------------------
/// Before the install syncs the parent directory so the temp directory's entry is durable.
pub const INSTALL_MANIFEST_SYNC_TEMP_ENTRY: &str = "install::manifest::sync_temp_entry";
/// Before the install syncs the manifest's temp file.
pub const INSTALL_MANIFEST_SYNC_TMP: &str = "install::manifest::sync_tmp";
/// Before the install renames the manifest's temp file into place (the commit point).
pub const INSTALL_MANIFEST_RENAME: &str = "install::manifest::rename";
/// Before the install syncs the parent directory after the manifest rename.
pub const INSTALL_MANIFEST_SYNC_PARENT: &str = "install::manifest::sync_parent";
/// Before the install renames the live log directory to the backup.
pub const INSTALL_SWAP_RENAME_LIVE_BACKUP: &str = "install::swap::rename_live_backup";
/// Before the install renames the temp directory to the live one.
pub const INSTALL_SWAP_RENAME_TMP_LIVE: &str = "install::swap::rename_tmp_live";
/// Before the swap hard-links a tail segment's file (`.log`, `.index`, `.timeindex`)
/// into the temp directory (step a, under the append lock).
pub const INSTALL_TAIL_LINK: &str = "install::tail::link";
/// Before the swap syncs the temp directory after linking the tail (step a).
pub const INSTALL_TAIL_SYNC_TMP: &str = "install::tail::sync_tmp";
/// Before the install renames the backup to the trash (step e).
pub const INSTALL_TRASH_RENAME: &str = "install::trash::rename";
/// Before the install syncs the parent directory after the trash rename (step e).
pub const INSTALL_TRASH_SYNC_PARENT: &str = "install::trash::sync_parent";
/// Before the trash directory is removed, after the append lock is released (step f).
pub const INSTALL_TRASH_REMOVE: &str = "install::trash::remove";
/// Before the install removes the manifest (the install is complete).
pub const INSTALL_CLEANUP_REMOVE_MANIFEST: &str = "install::cleanup::remove_manifest";
/// Before the install syncs the parent directory after removing the manifest.
pub const INSTALL_CLEANUP_SYNC_PARENT_MANIFEST: &str = "install::cleanup::sync_parent_manifest";
// --- install: recovery on open (the decision table) -------------------------
/// Before install recovery removes a manifest temp file (an uncommitted install).
pub const INSTALL_RECOVER_REMOVE_MANIFEST_TMP: &str = "install::recover::remove_manifest_tmp";
/// Before install recovery removes a trash directory (never authoritative).
pub const INSTALL_RECOVER_REMOVE_TRASH: &str = "install::recover::remove_trash";
/// Before install recovery removes a temp directory.
pub const INSTALL_RECOVER_REMOVE_TMP: &str = "install::recover::remove_tmp";
/// Before install recovery renames the live directory aside to the backup (rolling forward).
pub const INSTALL_RECOVER_RENAME_LIVE_ASIDE: &str = "install::recover::rename_live_aside";
/// Before install recovery renames the temp directory to the live one (rolling forward).
pub const INSTALL_RECOVER_RENAME_TMP_LIVE: &str = "install::recover::rename_tmp_live";
/// Before install recovery renames the backup back to live (rolling back).
pub const INSTALL_RECOVER_RENAME_BACKUP_LIVE: &str = "install::recover::rename_backup_live";
/// Before install recovery removes the backup directory.
pub const INSTALL_RECOVER_REMOVE_BACKUP: &str = "install::recover::remove_backup";
/// Before install recovery removes the manifest.
pub const INSTALL_RECOVER_REMOVE_MANIFEST: &str = "install::recover::remove_manifest";
/// Before install recovery syncs the parent directory after a step.
pub const INSTALL_RECOVER_SYNC_PARENT: &str = "install::recover::sync_parent";
/// Before install recovery syncs the parent directory first, so what it reads is durable.
pub const INSTALL_RECOVER_SYNC_PARENT_FIRST: &str = "install::recover::sync_parent_first";

/// Every fail point name, in the order the engine's paths reach them.
/// `seglog failpoints` prints this list. Keep it in step with the constants.
pub const ALL: &[&str] = &[
    LOG_UNMARK_REMOVE_MARKER,
    LOG_UNMARK_SYNC_DIR,
    LOG_APPEND_WRITE,
    LOG_TXN_INDEX_APPEND,
    LOG_TXN_INDEX_REWRITE,
    LOG_ROLL_SYNC_CLOSED,
    LOG_ROLL_SYNC_INDEX,
    LOG_ROLL_SYNC_TIME_INDEX,
    LOG_ROLL_CREATE_SEGMENT,
    LOG_ROLL_SYNC_RECOVERY_POINT,
    LOG_ROLL_RENAME_RECOVERY_POINT,
    LOG_ROLL_SYNC_DIR,
    LOG_FLUSH_SYNC_LOG,
    LOG_CLOSE_SYNC_LOG,
    LOG_CLOSE_SYNC_INDEX,
    LOG_CLOSE_SYNC_TIME_INDEX,
    LOG_CLOSE_SYNC_MARKER,
    LOG_CLOSE_RENAME_MARKER,
    LOG_CLOSE_SYNC_DIR,
    LOG_RECOVERY_TRUNCATE_TAIL,
    LOG_RECOVERY_REBUILD_INDEX,
    LOG_RECOVERY_SYNC_ACTIVE,
    LOG_RECOVERY_CREATE_SEGMENT,
    LOG_RECOVERY_REMOVE_ORPHAN,
    LOG_RECOVERY_SYNC_DIR,
    LOG_RECOVERY_REMOVE_MARKER,
    LOG_RECOVERY_SYNC_SCANNED,
    LOG_RECOVERY_SYNC_SCANNED_DIR,
    LOG_RECOVERY_SYNC_RECOVERY_POINT,
    LOG_RECOVERY_RENAME_RECOVERY_POINT,
    LOG_RECOVERY_SYNC_LOG_DIR,
    LOG_RECOVERY_SYNC_PARENT,
    RETENTION_CHECKPOINT_SYNC_TMP,
    RETENTION_CHECKPOINT_RENAME,
    RETENTION_CHECKPOINT_SYNC_DIR,
    RETENTION_DELETE_REMOVE_FILE,
    RETENTION_RECOVER_REMOVE_FILE,
    RETENTION_RECOVER_SYNC_DIR_FIRST,
    COMPACTION_BUILD_SYNC_FILE,
    COMPACTION_BUILD_SYNC_CLEAN_POINT,
    COMPACTION_BUILD_SYNC_RECOVERY_POINT,
    COMPACTION_BUILD_LINK_CARRIED,
    COMPACTION_BUILD_SYNC_TMP_DIR,
    INSTALL_MANIFEST_SYNC_TEMP_ENTRY,
    INSTALL_MANIFEST_SYNC_TMP,
    INSTALL_MANIFEST_RENAME,
    INSTALL_MANIFEST_SYNC_PARENT,
    INSTALL_SWAP_RENAME_LIVE_BACKUP,
    INSTALL_SWAP_RENAME_TMP_LIVE,
    INSTALL_TAIL_LINK,
    INSTALL_TAIL_SYNC_TMP,
    INSTALL_TRASH_RENAME,
    INSTALL_TRASH_SYNC_PARENT,
    INSTALL_TRASH_REMOVE,
    INSTALL_CLEANUP_REMOVE_MANIFEST,
    INSTALL_CLEANUP_SYNC_PARENT_MANIFEST,
    INSTALL_RECOVER_REMOVE_MANIFEST_TMP,
    INSTALL_RECOVER_REMOVE_TRASH,
    INSTALL_RECOVER_REMOVE_TMP,
    INSTALL_RECOVER_RENAME_LIVE_ASIDE,
    INSTALL_RECOVER_RENAME_TMP_LIVE,
    INSTALL_RECOVER_RENAME_BACKUP_LIVE,
    INSTALL_RECOVER_REMOVE_BACKUP,
    INSTALL_RECOVER_REMOVE_MANIFEST,
    INSTALL_RECOVER_SYNC_PARENT,
    INSTALL_RECOVER_SYNC_PARENT_FIRST,
];

/// Called by [`crate::fail_point!`] when a fail point fires with `return`.
/// Aborts the process for `return` / `return(crash)`; returns the error to
/// propagate for `return(error)`.
pub fn fire(name: &str, arg: Option<String>) -> crate::Error {
    match arg.as_deref() {
        Some("error") => crate::Error::Injected(name.to_string()),
        None | Some("") | Some("crash") => {
            eprintln!("seglog: crashed at fail point {name}");
            std::process::abort()
        }
        Some(other) => {
            eprintln!("seglog: fail point {name}: unknown return argument {other:?}; crashing");
            std::process::abort()
        }
    }
}

/// Inserts the named fail point. With the `failpoints` feature off this only
/// records the hit for an installed [`Recorder`] (a thread-local check); with it on,
/// the `fail` crate's registry decides. The enclosing function must return
/// `crate::Result<_>`.
#[macro_export]
macro_rules! fail_point {
    ($name:expr) => {{
        $crate::fs::failpoint::reached($name);
        #[cfg(feature = "failpoints")]
        {
            ::fail::fail_point!($name, |arg: Option<String>| Err(
                $crate::fs::failpoint::fire($name, arg).into()
            ));
        }
    }};
}

type Probe = Box<dyn Fn() -> u64>;
type Recording = Option<(Vec<(&'static str, u64)>, Option<Probe>)>;

thread_local! {
    static RECORDER: std::cell::RefCell<Recording> =
        const { std::cell::RefCell::new(None) };
    /// The fail point reached last on this thread, until a sync call consumes it.
    static LAST_REACHED: std::cell::Cell<Option<&'static str>> =
        const { std::cell::Cell::new(None) };
    /// The sync step an [`Ablation`] makes a no-op on this thread, and how many of
    /// its calls had something pending when skipped.
    static ABLATED: std::cell::Cell<Option<(&'static str, u64)>> =
        const { std::cell::Cell::new(None) };
}

/// Called by [`crate::fail_point!`] at every fail point: records the name when a
/// [`Recorder`] is installed on this thread. This is how the crash sweep and the
/// scenario replayer map a fail point name to a file-system operation, and how tests
/// prove a path was reached (a coverage mark), without the `failpoints` feature.
pub fn reached(name: &'static str) {
    LAST_REACHED.with(|last| last.set(Some(name)));
    RECORDER.with(|r| {
        if let Some((hits, probe)) = r.borrow_mut().as_mut() {
            let at = probe.as_ref().map_or(0, |p| p());
            hits.push((name, at));
        }
    });
}

/// Called by a simulated file system at each sync call: true if an [`Ablation`] on
/// this thread makes this call a no-op (the fail point reached right before it is
/// the ablated step; every sync call site carries one). `pending` says whether the
/// call had anything to make durable, for [`Ablation::pending_skipped`]. Consumes
/// the last fail point either way, so a sync is never judged by an older one.
pub fn sync_ablated_here(pending: impl FnOnce() -> bool) -> bool {
    let last = LAST_REACHED.with(|last| last.take());
    ABLATED.with(|ablated| match ablated.get() {
        Some((step, skipped)) if last == Some(step) => {
            ablated.set(Some((step, skipped + u64::from(pending()))));
            true
        }
        _ => false,
    })
}

/// Sync ablation by protocol step: while alive, every sync call on this thread
/// right after the fail point `step` completes as a no-op, in every simulated file
/// system, crash image and recovery the thread runs (the engine without that step,
/// as a protocol model's `WithoutSyncs` variant removes it everywhere).
#[derive(Debug)]
pub struct Ablation {
    _private: (),
}

impl Ablation {
    /// Starts ablating `step` (a sync fail point) on this thread.
    pub fn of(step: &'static str) -> Ablation {
        ABLATED.with(|ablated| ablated.set(Some((step, 0))));
        Ablation { _private: () }
    }

    /// How many skipped calls had something pending (unsynced bytes or directory
    /// operations). Zero means the step never had work to do in what ran: nothing
    /// ran could judge it.
    pub fn pending_skipped(&self) -> u64 {
        ABLATED.with(|ablated| ablated.get().map_or(0, |(_, skipped)| skipped))
    }
}

impl Drop for Ablation {
    fn drop(&mut self) {
        ABLATED.with(|ablated| ablated.set(None));
    }
}

/// Records the fail points reached on this thread while it is alive.
#[derive(Debug)]
pub struct Recorder {
    _private: (),
}

impl Recorder {
    /// Starts recording on this thread (replacing any earlier recording).
    pub fn start() -> Recorder {
        RECORDER.with(|r| *r.borrow_mut() = Some((Vec::new(), None)));
        Recorder { _private: () }
    }

    /// Starts recording, noting with each hit the value of `probe` at that moment
    /// (the simulated file system's count of mutating operations, so a fail point name
    /// maps to "before file-system operation k").
    pub fn start_with_probe(probe: impl Fn() -> u64 + 'static) -> Recorder {
        RECORDER.with(|r| *r.borrow_mut() = Some((Vec::new(), Some(Box::new(probe)))));
        Recorder { _private: () }
    }

    /// The names reached so far, in order.
    pub fn hits(&self) -> Vec<&'static str> {
        self.hits_with_probe()
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    /// The names reached so far with the probe's value at each hit.
    pub fn hits_with_probe(&self) -> Vec<(&'static str, u64)> {
        RECORDER.with(|r| {
            r.borrow()
                .as_ref()
                .map(|(hits, _)| hits.clone())
                .unwrap_or_default()
        })
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        RECORDER.with(|r| *r.borrow_mut() = None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch() -> crate::Result<()> {
        crate::fail_point!(LOG_FLUSH_SYNC_LOG);
        Ok(())
    }

    #[test]
    fn recorder_sees_reached_points() {
        let recorder = Recorder::start();
        touch().unwrap();
        touch().unwrap();
        assert_eq!(
            recorder.hits(),
            vec![LOG_FLUSH_SYNC_LOG, LOG_FLUSH_SYNC_LOG]
        );
        drop(recorder);
        touch().unwrap();
        let counter = std::rc::Rc::new(std::cell::Cell::new(7u64));
        let probe = std::rc::Rc::clone(&counter);
        let recorder = Recorder::start_with_probe(move || probe.get());
        touch().unwrap();
        counter.set(9);
        touch().unwrap();
        assert_eq!(
            recorder.hits_with_probe(),
            vec![(LOG_FLUSH_SYNC_LOG, 7), (LOG_FLUSH_SYNC_LOG, 9)]
        );
        drop(recorder);
        assert!(Recorder::start().hits().is_empty());
    }

    #[test]
    fn names_are_unique_and_well_formed() {
        let mut seen = std::collections::BTreeSet::new();
        for name in ALL {
            assert!(seen.insert(*name), "duplicate fail point {name}");
            assert_eq!(
                name.split("::").count(),
                3,
                "{name} is not module::op::point"
            );
        }
    }
}

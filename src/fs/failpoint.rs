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
pub const LOG_APPEND_WRITE: &str = "log::append::write";
pub const LOG_ROLL_SYNC_CLOSED: &str = "log::roll::sync_closed";
pub const LOG_ROLL_CREATE_SEGMENT: &str = "log::roll::create_segment";
pub const LOG_ROLL_SYNC_DIR: &str = "log::roll::sync_dir";
pub const LOG_FLUSH_SYNC_LOG: &str = "log::flush::sync_log";
pub const LOG_FLUSH_SYNC_INDEX: &str = "log::flush::sync_index";
pub const LOG_FLUSH_SYNC_TIME_INDEX: &str = "log::flush::sync_time_index";
pub const LOG_FLUSH_SYNC_DIR: &str = "log::flush::sync_dir";
// --- log: recovery on open ------------------------------------------------
pub const LOG_RECOVERY_TRUNCATE_TAIL: &str = "log::recovery::truncate_tail";
pub const LOG_RECOVERY_SYNC_TAIL: &str = "log::recovery::sync_tail";
pub const LOG_RECOVERY_REBUILD_INDEX: &str = "log::recovery::rebuild_index";
pub const LOG_RECOVERY_SYNC_INDEX: &str = "log::recovery::sync_index";
pub const LOG_RECOVERY_CREATE_SEGMENT: &str = "log::recovery::create_segment";
pub const LOG_RECOVERY_REMOVE_ORPHAN: &str = "log::recovery::remove_orphan";
pub const LOG_RECOVERY_SYNC_DIR: &str = "log::recovery::sync_dir";
pub const LOG_RECOVERY_SYNC_PARENT: &str = "log::recovery::sync_parent";

// --- retention: checkpoint first, then delete --------------------------------
pub const RETENTION_CHECKPOINT_SYNC_TMP: &str = "retention::checkpoint::sync_tmp";
pub const RETENTION_CHECKPOINT_RENAME: &str = "retention::checkpoint::rename";
pub const RETENTION_CHECKPOINT_SYNC_DIR: &str = "retention::checkpoint::sync_dir";
pub const RETENTION_DELETE_REMOVE_FILE: &str = "retention::delete::remove_file";
// --- retention: recovery on open --------------------------------------------
pub const RETENTION_RECOVER_REMOVE_FILE: &str = "retention::recover::remove_file";
pub const RETENTION_RECOVER_SYNC_DIR: &str = "retention::recover::sync_dir";
pub const RETENTION_RECOVER_SYNC_DIR_FIRST: &str = "retention::recover::sync_dir_first";
// --- compaction: building the temp directory (install step 1) --------------
pub const COMPACTION_BUILD_SYNC_FILE: &str = "compaction::build::sync_file";
pub const COMPACTION_BUILD_SYNC_CLEAN_POINT: &str = "compaction::build::sync_clean_point";
pub const COMPACTION_BUILD_SYNC_TMP_DIR: &str = "compaction::build::sync_tmp_dir";
// --- install: steps 2 to 6 ---------------------------------------------------
pub const INSTALL_MANIFEST_SYNC_TEMP_ENTRY: &str = "install::manifest::sync_temp_entry";
pub const INSTALL_MANIFEST_SYNC_TMP: &str = "install::manifest::sync_tmp";
pub const INSTALL_MANIFEST_RENAME: &str = "install::manifest::rename";
pub const INSTALL_MANIFEST_SYNC_PARENT: &str = "install::manifest::sync_parent";
pub const INSTALL_SWAP_RENAME_LIVE_BACKUP: &str = "install::swap::rename_live_backup";
pub const INSTALL_SWAP_RENAME_TMP_LIVE: &str = "install::swap::rename_tmp_live";
pub const INSTALL_CLEANUP_REMOVE_BACKUP: &str = "install::cleanup::remove_backup";
pub const INSTALL_CLEANUP_SYNC_PARENT_BACKUP: &str = "install::cleanup::sync_parent_backup";
pub const INSTALL_CLEANUP_REMOVE_MANIFEST: &str = "install::cleanup::remove_manifest";
pub const INSTALL_CLEANUP_SYNC_PARENT_MANIFEST: &str = "install::cleanup::sync_parent_manifest";
// --- install: recovery on open (the decision table) -------------------------
pub const INSTALL_RECOVER_REMOVE_MANIFEST_TMP: &str = "install::recover::remove_manifest_tmp";
pub const INSTALL_RECOVER_REMOVE_TMP: &str = "install::recover::remove_tmp";
pub const INSTALL_RECOVER_RENAME_LIVE_ASIDE: &str = "install::recover::rename_live_aside";
pub const INSTALL_RECOVER_RENAME_TMP_LIVE: &str = "install::recover::rename_tmp_live";
pub const INSTALL_RECOVER_RENAME_BACKUP_LIVE: &str = "install::recover::rename_backup_live";
pub const INSTALL_RECOVER_REMOVE_BACKUP: &str = "install::recover::remove_backup";
pub const INSTALL_RECOVER_REMOVE_MANIFEST: &str = "install::recover::remove_manifest";
pub const INSTALL_RECOVER_SYNC_PARENT: &str = "install::recover::sync_parent";
pub const INSTALL_RECOVER_SYNC_PARENT_FIRST: &str = "install::recover::sync_parent_first";

/// Every fail point name, in the order the engine's paths reach them.
/// `seglog failpoints` prints this list. Keep it in step with the constants.
pub const ALL: &[&str] = &[
    LOG_APPEND_WRITE,
    LOG_ROLL_SYNC_CLOSED,
    LOG_ROLL_CREATE_SEGMENT,
    LOG_ROLL_SYNC_DIR,
    LOG_FLUSH_SYNC_LOG,
    LOG_FLUSH_SYNC_INDEX,
    LOG_FLUSH_SYNC_TIME_INDEX,
    LOG_FLUSH_SYNC_DIR,
    LOG_RECOVERY_TRUNCATE_TAIL,
    LOG_RECOVERY_SYNC_TAIL,
    LOG_RECOVERY_REBUILD_INDEX,
    LOG_RECOVERY_SYNC_INDEX,
    LOG_RECOVERY_CREATE_SEGMENT,
    LOG_RECOVERY_REMOVE_ORPHAN,
    LOG_RECOVERY_SYNC_DIR,
    LOG_RECOVERY_SYNC_PARENT,
    RETENTION_CHECKPOINT_SYNC_TMP,
    RETENTION_CHECKPOINT_RENAME,
    RETENTION_CHECKPOINT_SYNC_DIR,
    RETENTION_DELETE_REMOVE_FILE,
    RETENTION_RECOVER_REMOVE_FILE,
    RETENTION_RECOVER_SYNC_DIR,
    RETENTION_RECOVER_SYNC_DIR_FIRST,
    COMPACTION_BUILD_SYNC_FILE,
    COMPACTION_BUILD_SYNC_CLEAN_POINT,
    COMPACTION_BUILD_SYNC_TMP_DIR,
    INSTALL_MANIFEST_SYNC_TEMP_ENTRY,
    INSTALL_MANIFEST_SYNC_TMP,
    INSTALL_MANIFEST_RENAME,
    INSTALL_MANIFEST_SYNC_PARENT,
    INSTALL_SWAP_RENAME_LIVE_BACKUP,
    INSTALL_SWAP_RENAME_TMP_LIVE,
    INSTALL_CLEANUP_REMOVE_BACKUP,
    INSTALL_CLEANUP_SYNC_PARENT_BACKUP,
    INSTALL_CLEANUP_REMOVE_MANIFEST,
    INSTALL_CLEANUP_SYNC_PARENT_MANIFEST,
    INSTALL_RECOVER_REMOVE_MANIFEST_TMP,
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
}

/// Called by [`crate::fail_point!`] at every fail point: records the name when a
/// [`Recorder`] is installed on this thread. This is how the crash sweep and the
/// scenario replayer map a fail point name to a file-system operation, and how tests
/// prove a path was reached (a coverage mark), without the `failpoints` feature.
pub fn reached(name: &'static str) {
    RECORDER.with(|r| {
        if let Some((hits, probe)) = r.borrow_mut().as_mut() {
            let at = probe.as_ref().map_or(0, |p| p());
            hits.push((name, at));
        }
    });
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

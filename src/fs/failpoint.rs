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

/// Inserts the named fail point. With the `failpoints` feature off this expands
/// to nothing. The enclosing function must return `crate::Result<_>`.
#[macro_export]
macro_rules! fail_point {
    ($name:expr) => {{
        #[cfg(feature = "failpoints")]
        {
            ::fail::fail_point!($name, |arg: Option<String>| Err(
                $crate::fs::failpoint::fire($name, arg).into()
            ));
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

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

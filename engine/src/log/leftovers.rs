//! Kafka's leftovers in a log directory: the files Kafka's log cleaner and its
//! asynchronous deletion leave when a broker stops mid-way, judged as Kafka's
//! `LogLoader` judges them (docs/design.md section 3, "Kafka's leftovers").
//!
//! * `NNN.<suffix>.deleted`: a segment file Kafka already took out of the log
//!   (retention, or the old side of a finished swap), waiting for its deletion:
//!   removed, as Kafka's loader removes it;
//! * `NNN.<suffix>.cleaned`: a cleaner's output before its swap began: removed (the
//!   segments it would have replaced are still the log's);
//! * `NNN.<suffix>.swap`: a cleaner's output whose swap into the log was cut short;
//!   the segments it replaces may already be gone, so its data may be the only copy.
//!   Kafka's loader completes the swap; seglog does not rewrite Kafka's segments, so
//!   every open refuses with the file named and changes nothing.
//!
//! As Kafka's `LogLoader` judges them, before anything is modified:
//! `NNN.<suffix>.deleted` and `.cleaned` are removed by a writable open (phase 5b) and
//! listed in `removed_files`; a `.swap` (a swap cut short, maybe the only copy of its
//! data) is refused by every open (`Error::Ambiguous` naming it): seglog does not
//! complete Kafka's swaps. Any other entry the log does not own is listed in
//! `unknown_files` by every open and left alone (a compaction copies it, and the
//! `compact` JSON's `"recovery"` names it).
//!
//! [`classify`] and [`plan`] are pure; the recovery phases do the IO.

use std::path::Path;

use crate::error::Error;
use crate::format::filename;

/// A Kafka leftover's kind, by its name's last suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leftover {
    /// `.swap`: a swap cut short.
    Swap,
    /// `.cleaned`: a cleaner's output before its swap.
    Cleaned,
    /// `.deleted`: a file scheduled for deletion.
    Deleted,
}

/// The kind of `name` if it is a segment file's name (`NNN.log`, `NNN.index`, ...)
/// followed by `.swap`, `.cleaned` or `.deleted`.
pub fn classify(name: &str) -> Option<Leftover> {
    let (stem, kind) = [
        (".swap", Leftover::Swap),
        (".cleaned", Leftover::Cleaned),
        (".deleted", Leftover::Deleted),
    ]
    .into_iter()
    .find_map(|(suffix, kind)| name.strip_suffix(suffix).map(|stem| (stem, kind)))?;
    filename::parse(stem).map(|_| kind)
}

/// What an open does with the leftovers of `dir` (`names`, each with its kind): the
/// names to remove, or the refusal naming the first swap file.
pub fn plan(dir: &Path, leftovers: &[(String, Leftover)]) -> Result<Vec<String>, Error> {
    if let Some((name, _)) = leftovers.iter().find(|(_, kind)| *kind == Leftover::Swap) {
        let path = dir.join(name);
        return Err(Error::Ambiguous {
            reason: format!(
                "{name} is a Kafka cleaner's swap file whose swap was cut short: its data may be \
                 the only copy of the segments it replaces, and seglog does not complete \
                 Kafka's swaps; open the directory with Kafka once (its loader completes the \
                 swap), or restore the segments and remove the file"
            ),
            dirs: vec![path],
        });
    }
    Ok(leftovers.iter().map(|(name, _)| name.clone()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_segment_names_with_a_leftover_suffix_are_leftovers() {
        let log = "00000000000000000042.log";
        assert_eq!(classify(&format!("{log}.swap")), Some(Leftover::Swap));
        assert_eq!(classify(&format!("{log}.cleaned")), Some(Leftover::Cleaned));
        assert_eq!(classify(&format!("{log}.deleted")), Some(Leftover::Deleted));
        assert_eq!(
            classify("00000000000000000042.index.deleted"),
            Some(Leftover::Deleted)
        );
        assert_eq!(classify(log), None);
        assert_eq!(classify("notes.txt.deleted"), None);
        assert_eq!(classify("42.log.swap"), None);
        assert_eq!(classify(&format!("{log}.swap.tmp")), None);
    }

    #[test]
    fn a_swap_refuses_and_the_rest_are_removed() {
        let dir = Path::new("/log");
        let cleaned = (
            "00000000000000000000.log.cleaned".to_string(),
            Leftover::Cleaned,
        );
        let deleted = (
            "00000000000000000000.index.deleted".to_string(),
            Leftover::Deleted,
        );
        let swap = ("00000000000000000005.log.swap".to_string(), Leftover::Swap);
        assert_eq!(
            plan(dir, &[cleaned.clone(), deleted.clone()]).unwrap(),
            vec![cleaned.0.clone(), deleted.0.clone()]
        );
        match plan(dir, &[cleaned, swap, deleted]) {
            Err(Error::Ambiguous { reason, dirs }) => {
                assert!(reason.contains("00000000000000000005.log.swap"), "{reason}");
                assert_eq!(dirs, vec![dir.join("00000000000000000005.log.swap")]);
            }
            other => panic!("{other:?}"),
        }
    }
}

//! [`Persistence`]: which directory operations a power loss may take, the one
//! choice of the simulated disk's persistence model that [`super::SimFs`] lets a
//! stage make.

use std::fmt;
use std::io;
use std::str::FromStr;

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Which directory operations a power loss may take away (docs/verification.md,
/// "The simulated file system and its persistence model"). File data is the same
/// under both: what `sync_file` did not make durable may be cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Persistence {
    /// Any set of the pending (unsynced) directory operations may be lost, short of
    /// breaking a dependency (a later operation on the same entry needs the
    /// earlier one): what POSIX promises, and more pessimistic than ext4 or xfs.
    #[default]
    AnySubset,
    /// Directory operations persist in the order they were issued: a power loss
    /// keeps a prefix of them, and a `sync_dir` that makes one durable makes every
    /// earlier one durable too (a journal committed in order, as ext4's
    /// `data=ordered` and xfs's log behave).
    OrderedMetadata,
}

impl Persistence {
    /// Both models, the default first.
    pub const ALL: [Persistence; 2] = [Persistence::AnySubset, Persistence::OrderedMetadata];

    /// The name a command line or a scenario file uses.
    pub fn name(self) -> &'static str {
        match self {
            Persistence::AnySubset => "any-subset",
            Persistence::OrderedMetadata => "ordered-metadata",
        }
    }
}

impl fmt::Display for Persistence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Persistence {
    type Err = io::Error;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Persistence::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("not a persistence model: {name:?} (any-subset, ordered-metadata)"),
                )
            })
    }
}

//! The same runs judged by stateright's `LinearizabilityTester` (`stateright::semantics`)
//! against the sequential spec's view, instead of the hand-written
//! `reads_linearizable`: appends (returning their offset), retention (checkpoint to
//! directory fsync), cleanings (snapshot to lock release, or abort) and reads (segment
//! list to bytes) are operations of their own threads; the property
//! `history_linearizable` asks the tester for a total order of the history that the
//! spec accepts. Off by default ([`super::ConcurrentModel::history`]): a history in the
//! state separates states the properties do not need to tell apart.

use stateright::semantics::{ConsistencyTester, SequentialSpec};

use super::state::{History, Rec, Snapshot, SpecView};

/// The processes as threads of the history.
#[derive(Clone, Copy, Debug)]
pub enum Thread {
    Appender = 0,
    Retention = 1,
    Reader = 2,
    /// Cleaner thread `n` is `Cleaner as u8 + n`.
    Cleaner = 3,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LogOp {
    Append {
        key: u8,
    },
    Retain {
        log_start: i64,
    },
    /// The pass of this snapshot over the whole current log.
    Clean(Snapshot),
    /// A read of the whole log.
    Read,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LogRet {
    Offset(i64),
    Done,
    /// A cleaning aborted before its commit point: no effect.
    Aborted,
    Records(Vec<Rec>),
}

impl SequentialSpec for SpecView {
    type Op = LogOp;
    type Ret = LogRet;

    fn invoke(&mut self, op: &LogOp) -> LogRet {
        match op {
            LogOp::Append { key } => {
                self.append(*key);
                LogRet::Offset(self.next_offset - 1)
            }
            LogOp::Retain { log_start } => {
                self.retain_from(*log_start);
                LogRet::Done
            }
            LogOp::Clean(snap) => {
                *self = self.cleaned(snap);
                LogRet::Done
            }
            LogOp::Read => LogRet::Records(self.records.clone()),
        }
    }

    fn is_valid_step(&mut self, op: &LogOp, ret: &LogRet) -> bool {
        if let (LogOp::Clean(_), LogRet::Aborted) = (op, ret) {
            return true;
        }
        &self.invoke(op) == ret
    }
}

/// Records an operation's invocation (`ret: None`) or its return.
pub fn record(history: &mut Option<History>, thread: u8, op: Option<LogOp>, ret: Option<LogRet>) {
    let Some(history) = history else {
        return;
    };
    if let Some(op) = op {
        history
            .on_invoke(thread, op)
            .expect("one operation in flight per thread");
    }
    if let Some(ret) = ret {
        history
            .on_return(thread, ret)
            .expect("a return follows its invocation");
    }
}

/// The recorded history has a linearization the spec accepts (or none is recorded).
pub fn linearizable(history: &Option<History>) -> bool {
    history.as_ref().is_none_or(|h| h.is_consistent())
}

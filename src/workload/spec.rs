//! Applying workload operations to the reference spec (`seglog_model::spec::SpecLog`).

use seglog_model::spec::{CleanKnobs, CompactionPolicy, ReadRec, SpecLog, SpecRecordInput};

use crate::workload::{LogView, Op, OpOutcome, RecordView, SegmentView};

/// Installs seglog's codecs as the spec's sizer of compressed batches
/// (`seglog_model::spec::size::install_codec`); idempotent.
pub fn install_codec() {
    fn codec_bytes(codec: u8, records: &[u8]) -> u64 {
        let codec = seglog::format::Compression::from_id(i16::from(codec))
            .expect("the spec holds Kafka's codec ids");
        codec.compress(records).len() as u64
    }
    seglog_model::spec::size::install_codec(codec_bytes);
}

/// Workload records as the spec's append input.
fn spec_records(records: &[crate::workload::RecordSpec]) -> Vec<SpecRecordInput> {
    records
        .iter()
        .map(|r| SpecRecordInput {
            key: r.key.as_ref().map(|k| k.as_bytes().to_vec()),
            value: r.value.as_ref().map(|v| v.as_bytes().to_vec()),
            timestamp: r.ts,
        })
        .collect()
}

/// Applies `op` to the spec of a CreateTime log ([`apply_stamped`] with `None`); a
/// spec error is `OpOutcome::Rejected`.
pub fn apply(spec: &mut SpecLog, op: &Op) -> OpOutcome {
    apply_stamped(spec, op, None)
}

/// Applies `op` to the spec of a log whose `LogConfig::timestamp_type` is
/// LogAppendTime with its clock at `log_stamp` when given (`None`:
/// CreateTime), as the engine's appends stamp: `Log::append` (an [`Op::Append`]
/// naming no codec and no stamp), `Log::append_batches` ([`Op::AppendRaw`]),
/// `Log::append_transactional` ([`Op::AppendTxn`]) and the appends of an
/// [`Op::CleanWithAppends`] take the clock; an [`Op::Append`] naming a codec or a
/// stamp is `Log::append_with`, which stamps by its arguments only; a marker
/// ([`Op::AppendControl`]) keeps its own timestamp. A spec error is
/// `OpOutcome::Rejected`.
pub fn apply_stamped(spec: &mut SpecLog, op: &Op, log_stamp: Option<i64>) -> OpOutcome {
    match op {
        Op::Append {
            records,
            codec,
            log_append_time,
        } => {
            let input: Vec<SpecRecordInput> = records
                .iter()
                .map(|r| SpecRecordInput {
                    key: r.key.as_ref().map(|k| k.as_bytes().to_vec()),
                    value: r.value.as_ref().map(|v| v.as_bytes().to_vec()),
                    timestamp: r.ts,
                })
                .collect();
            let codec = codec.map_or(0, |c| u8::try_from(c.id()).expect("ids are 0-4"));
            if codec != 0 {
                install_codec();
            }
            let stamp = match (codec, log_append_time) {
                (0, None) => log_stamp,
                _ => *log_append_time,
            };
            match spec.append_with(&input, codec, stamp) {
                Ok((base_offset, last_offset)) => OpOutcome::Appended {
                    base_offset,
                    last_offset,
                },
                Err(_) => OpOutcome::Rejected,
            }
        }
        Op::AppendRaw { batches } => {
            let input: Vec<_> = batches.iter().map(super::raw::spec_batch).collect();
            if input.iter().any(|b| b.codec != 0) {
                install_codec();
            }
            match spec.append_batches(&input, log_stamp) {
                Ok((base_offset, last_offset)) => OpOutcome::Appended {
                    base_offset,
                    last_offset,
                },
                Err(_) => OpOutcome::Rejected,
            }
        }
        Op::AppendTxn { records, producer } => {
            match spec.append_transactional_with(*producer, &spec_records(records), log_stamp) {
                Ok((base_offset, last_offset)) => OpOutcome::Appended {
                    base_offset,
                    last_offset,
                },
                Err(_) => OpOutcome::Rejected,
            }
        }
        Op::AppendControl {
            commit,
            ts,
            producer,
        } => {
            let (base_offset, last_offset) = spec.append_control_of(*producer, *commit, *ts);
            OpOutcome::Appended {
                base_offset,
                last_offset,
            }
        }
        Op::Roll => {
            spec.roll();
            OpOutcome::Rolled
        }
        Op::Flush => OpOutcome::Flushed,
        Op::Close => OpOutcome::Restarted { clean: true },
        // The open rebuilds every closed segment's index files from its `.log`: it
        // reads segment data exactly when there is a closed segment.
        Op::DropIndexes => OpOutcome::Restarted {
            clean: spec.closed_segments().is_empty(),
        },
        Op::Retain {
            now,
            retention_ms,
            retention_bytes,
        } => match spec.retain(*now, *retention_ms, *retention_bytes) {
            Ok(deleted_segments) => OpOutcome::Retained { deleted_segments },
            Err(_) => OpOutcome::Rejected,
        },
        Op::Compact {
            now,
            delete_retention_ms,
            segment_bytes,
        }
        | Op::CompactClosed {
            now,
            delete_retention_ms,
            segment_bytes,
        } => match spec.compact(*now, *delete_retention_ms, *segment_bytes) {
            Ok(s) => compacted(&s),
            Err(_) => OpOutcome::Rejected,
        },
        Op::Clean {
            now,
            delete_retention_ms,
            segment_bytes,
            dedupe_buffer_bytes,
            min_compaction_lag_ms,
            policy,
            producer_id_expiration_ms,
        } => {
            let knobs = CleanKnobs {
                dedupe_buffer_bytes: *dedupe_buffer_bytes,
                min_compaction_lag_ms: *min_compaction_lag_ms,
                policy: match policy {
                    seglog::compaction::CompactionPolicy::Seed => CompactionPolicy::Seed,
                    seglog::compaction::CompactionPolicy::Kafka => CompactionPolicy::Kafka,
                },
                producer_id_expiration_ms: *producer_id_expiration_ms,
            };
            match spec.clean(*now, *delete_retention_ms, *segment_bytes, knobs) {
                Ok(s) => compacted(&s),
                Err(_) => OpOutcome::Rejected,
            }
        }
        Op::CleanWithAppends {
            now,
            delete_retention_ms,
            records,
            roll,
            // When the appends ran changes nothing: the map ends at the snapshot.
            appends_at: _,
        } => {
            // The snapshot's map ends at `next_offset`: the appends after it
            // influence nothing in this pass, so the pass is `compact` on the log as
            // it was, then the appends (docs/design.md section 6).
            let Ok(s) = spec.compact(*now, *delete_retention_ms, None) else {
                return OpOutcome::Rejected;
            };
            for step in crate::workload::clean_with_appends_steps(*records, *roll, *now) {
                match step {
                    Some(record) => {
                        spec.append_with(
                            &spec_records(std::slice::from_ref(&record)),
                            0,
                            log_stamp,
                        )
                        .expect("one small record fits");
                    }
                    None => spec.roll(),
                }
            }
            compacted(&s)
        }
        Op::Read { from } => match spec.read(*from) {
            Ok(records) => OpOutcome::Read {
                records: records.into_iter().map(RecordView::from).collect(),
            },
            Err(_) => OpOutcome::Rejected,
        },
    }
}

impl From<ReadRec> for RecordView {
    fn from(r: ReadRec) -> RecordView {
        RecordView {
            offset: r.offset,
            key: r.key,
            value: r.value,
            ts: r.timestamp,
            control: r.control,
        }
    }
}

/// Everything observable about the spec's log.
pub fn view(spec: &SpecLog) -> LogView {
    let records = match spec.read(spec.log_start_offset()) {
        Ok(records) => records.into_iter().map(RecordView::from).collect(),
        Err(_) => Vec::new(),
    };
    LogView {
        log_start_offset: spec.log_start_offset(),
        next_offset: spec.next_offset(),
        clean_point: spec.clean_point(),
        segments: spec
            .segments()
            .into_iter()
            .map(|s| SegmentView {
                base_offset: s.base_offset,
                closed: s.closed,
                bytes: s.bytes,
                records: s.records,
                max_timestamp: s.max_timestamp,
            })
            .collect(),
        records,
    }
}

/// A state an append passes through ([`append_walk`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkStep {
    /// The roll a batch made first, alone: durable once it is done.
    Rolled,
    /// The state after one more batch.
    Batch,
}

/// The states `op` (an append of any kind, applied to `before`) passes through, in
/// order, one per batch it writes, each preceded by the roll alone when that batch
/// rolled first: what a crash or an IO error during it may leave (a power loss
/// keeps a prefix of its batches, each whole or not at all). The last is the state
/// after `op`. Empty for an operation that appends nothing (refused, or no append).
/// The states an [`Op::CleanWithAppends`] passes through before its swap commits:
/// `before` uncleaned plus each of its appends (and its roll), named `+a{k}` /
/// `roll(+a{k})`. Empty for any other operation or a rejected one.
pub fn clean_appends_walk(before: &SpecLog, op: &Op) -> Vec<(String, SpecLog)> {
    clean_appends_walk_stamped(before, op, None)
}

/// [`clean_appends_walk`] on a log stamping LogAppendTime at `log_append_time` when
/// given ([`apply_stamped`]).
pub fn clean_appends_walk_stamped(
    before: &SpecLog,
    op: &Op,
    log_append_time: Option<i64>,
) -> Vec<(String, SpecLog)> {
    let Op::CleanWithAppends {
        now, records, roll, ..
    } = op
    else {
        return Vec::new();
    };
    let mut probe = before.clone();
    if apply_stamped(&mut probe, op, log_append_time) == OpOutcome::Rejected {
        return Vec::new();
    }
    let mut log = before.clone();
    let mut out = Vec::new();
    let mut done = 0;
    for step in crate::workload::clean_with_appends_steps(*records, *roll, *now) {
        match step {
            Some(record) => {
                apply_stamped(&mut log, &Op::append(vec![record]), log_append_time);
                done += 1;
                out.push((format!("+a{done}"), log.clone()));
            }
            None => {
                log.roll();
                out.push((format!("roll(+a{done})"), log.clone()));
            }
        }
    }
    out
}

pub fn append_walk(before: &SpecLog, op: &Op) -> Vec<(WalkStep, SpecLog)> {
    append_walk_stamped(before, op, None)
}

/// [`append_walk`] on a log stamping LogAppendTime at `log_append_time` when given
/// ([`apply_stamped`]).
pub fn append_walk_stamped(
    before: &SpecLog,
    op: &Op,
    log_append_time: Option<i64>,
) -> Vec<(WalkStep, SpecLog)> {
    let single: Vec<Op> = match op {
        Op::AppendRaw { batches } => {
            let mut probe = before.clone();
            if apply_stamped(&mut probe, op, log_append_time) == OpOutcome::Rejected {
                return Vec::new();
            }
            batches
                .iter()
                .map(|b| Op::AppendRaw {
                    batches: vec![b.clone()],
                })
                .collect()
        }
        Op::Append { .. } | Op::AppendTxn { .. } | Op::AppendControl { .. } => vec![op.clone()],
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    let mut state = before.clone();
    for one in &single {
        let mut next = state.clone();
        if apply_stamped(&mut next, one, log_append_time) == OpOutcome::Rejected {
            return Vec::new();
        }
        if next.raw_segments().len() > state.raw_segments().len() {
            let mut rolled = state.clone();
            rolled.roll();
            out.push((WalkStep::Rolled, rolled));
        }
        out.push((WalkStep::Batch, next.clone()));
        state = next;
    }
    out
}

/// Extends `chain` (the states a crash may recover to, from the last durability
/// point on) by the append `op` that took `before` to `after`: each roll it made
/// restarts the chain.
pub fn extend_chain(chain: &mut Vec<SpecLog>, before: &SpecLog, op: &Op, after: &SpecLog) {
    extend_chain_stamped(chain, before, op, after, None);
}

/// [`extend_chain`] on a log stamping LogAppendTime at `log_append_time` when given
/// ([`apply_stamped`]).
pub fn extend_chain_stamped(
    chain: &mut Vec<SpecLog>,
    before: &SpecLog,
    op: &Op,
    after: &SpecLog,
    log_append_time: Option<i64>,
) {
    let walk = append_walk_stamped(before, op, log_append_time);
    if walk.is_empty() {
        chain.push(after.clone());
        return;
    }
    for (step, state) in walk {
        match step {
            WalkStep::Rolled => *chain = vec![state],
            WalkStep::Batch => chain.push(state),
        }
    }
    assert_eq!(chain.last(), Some(after));
}

/// The outcome of a compaction the spec ran: its summary's counts.
fn compacted(s: &seglog_model::spec::CompactionSummary) -> OpOutcome {
    OpOutcome::Compacted {
        records_before: s.records_before,
        records_after: s.records_after,
        segments_before: s.segments_before,
        segments_after: s.segments_after,
        bytes_before: s.bytes_before,
        bytes_after: s.bytes_after,
        keyless_dropped: s.keyless_dropped,
    }
}

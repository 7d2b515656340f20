//! The parent's ledger: every acknowledged record (partition, offset, key, value
//! digest), the batch in flight when the child was killed, and the checks of a
//! reopened partition against them (pure: the caller reads the log).
//!
//! Invariants checked (docs/verification.md, "The soak"), per partition after a reopen:
//! * `acked_present_or_gone`: an acknowledged record is at its offset with its key
//!   and value digest, or it is legitimately gone: below `log_start_offset`
//!   (retention), or compaction removed it: a record of the same key at a higher
//!   offset exists (acknowledged, present, or in the batch in flight) or it is a
//!   tombstone (tombstones expire after `delete_retention_ms`);
//! * `no_unacknowledged_garbage`: a record present but not acknowledged is one of
//!   the batch in flight (key and digest at its position after the last
//!   acknowledged offset), and that batch is there whole or not at all;
//! * `offsets_not_reused`: `next_offset` after the reopen is above every
//!   acknowledged offset, and every acknowledged base offset is above the ones
//!   before (`ack_offsets_increasing`, checked as acks arrive);
//! * `log_start_monotonic`: `log_start_offset` never goes back.
//!
//! After a check the ledger keeps only the records found: one gone never comes
//! back (a resurrected one fails `no_unacknowledged_garbage`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::report::Checks;

/// A record as the producer wrote it: its key and its value's digest (`None`: a
/// tombstone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Written {
    /// The key.
    pub key: String,
    /// FNV-1a of the value; `None` for a tombstone.
    pub digest: Option<u64>,
}

/// A record found in the reopened log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its offset.
    pub offset: i64,
    /// Its key and value digest.
    pub record: Written,
}

/// What the parent knows about one partition.
#[derive(Debug, Default, Clone)]
pub struct PartitionLedger {
    /// Acknowledged records (and in-flight ones a reopen found), by offset.
    known: BTreeMap<i64, Written>,
    /// The batch whose intent came but whose ack did not.
    in_flight: Option<Vec<Written>>,
    /// The offset the next append gets, as far as the parent knows.
    next_expected: i64,
    /// The highest `log_start_offset` seen.
    log_start_seen: i64,
}

/// The FNV-1a 64-bit digest of a value.
pub fn digest(value: &[u8]) -> u64 {
    value.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl PartitionLedger {
    /// The producer is about to append `batch`.
    pub fn intent(&mut self, batch: Vec<Written>) {
        self.in_flight = Some(batch);
    }

    /// The append of the batch in flight returned `base..=last`.
    pub fn ack(&mut self, base: i64, last: i64, checks: &mut Checks) {
        let batch = self.in_flight.take().unwrap_or_default();
        let sized = usize::try_from(last - base + 1).ok() == Some(batch.len());
        checks.record("ack_matches_intent", sized, || {
            format!("ack {base}..={last} for a batch of {} records", batch.len())
        });
        let above = self.known.last_key_value().is_none_or(|(o, _)| base > *o)
            && base >= self.next_expected;
        checks.record("ack_offsets_increasing", above, || {
            format!(
                "ack at base {base}, but offset {:?} was acknowledged and next_expected is {}",
                self.known.last_key_value().map(|(o, _)| *o),
                self.next_expected
            )
        });
        for (offset, record) in (base..).zip(batch) {
            self.known.insert(offset, record);
        }
        self.next_expected = self.next_expected.max(last + 1);
    }

    /// Records the ledger holds (acknowledged or adopted, and not gone).
    pub fn tracked(&self) -> usize {
        self.known.len()
    }

    /// Starts from what an earlier soak left in the partition: every record found
    /// is taken as acknowledged.
    pub fn adopt(&mut self, log_start_offset: i64, next_offset: i64, found: &[Found]) {
        self.known = found.iter().map(|f| (f.offset, f.record.clone())).collect();
        self.in_flight = None;
        self.next_expected = next_offset;
        self.log_start_seen = log_start_offset;
    }

    /// Checks the reopened partition (`found`: every record from
    /// `log_start_offset` on, ascending) and adopts what it found of the batch in
    /// flight. `partition` names the failures.
    pub fn check_reopened(
        &mut self,
        partition: &str,
        log_start_offset: i64,
        next_offset: i64,
        found: &[Found],
        checks: &mut Checks,
    ) {
        checks.record(
            "log_start_monotonic",
            log_start_offset >= self.log_start_seen,
            || {
                format!(
                    "{partition}: log_start_offset {log_start_offset} after {}",
                    self.log_start_seen
                )
            },
        );
        self.log_start_seen = self.log_start_seen.max(log_start_offset);
        let increasing = found.windows(2).all(|w| w[0].offset < w[1].offset);
        checks.record("found_offsets_increasing", increasing, || {
            format!("{partition}: offsets not strictly increasing after reopen")
        });
        let by_offset: BTreeMap<i64, &Written> =
            found.iter().map(|f| (f.offset, &f.record)).collect();
        let in_flight = self.in_flight.take().unwrap_or_default();
        // The latest offset of each key that is known, found or in flight.
        let mut latest: BTreeMap<&str, i64> = BTreeMap::new();
        for (offset, record) in self
            .known
            .iter()
            .chain(by_offset.iter().map(|(o, r)| (o, *r)))
        {
            let slot = latest.entry(record.key.as_str()).or_insert(*offset);
            *slot = (*slot).max(*offset);
        }
        for record in &in_flight {
            latest.insert(record.key.as_str(), i64::MAX);
        }
        for (offset, record) in &self.known {
            if *offset < log_start_offset {
                checks.record("acked_present_or_gone", true, String::new);
                continue;
            }
            let ok = match by_offset.get(offset) {
                Some(got) => *got == record,
                None => record.digest.is_none() || latest[record.key.as_str()] > *offset,
            };
            checks.record("acked_present_or_gone", ok, || {
                match by_offset.get(offset) {
                    Some(got) => format!(
                        "{partition}: offset {offset} acknowledged as {record:?} reads as {got:?}"
                    ),
                    None => format!(
                        "{partition}: offset {offset} ({record:?}) acknowledged, lost \
                     (log_start_offset {log_start_offset}, no later record of its key)"
                    ),
                }
            });
        }
        let mut adopted = 0usize;
        for f in found {
            if self.known.contains_key(&f.offset) {
                continue;
            }
            let position = f.offset - self.next_expected;
            let expected = usize::try_from(position)
                .ok()
                .and_then(|i| in_flight.get(i));
            let ok = expected == Some(&f.record);
            checks.record("no_unacknowledged_garbage", ok, || {
                format!(
                    "{partition}: offset {} holds {:?}, never acknowledged (in flight from {}: {:?})",
                    f.offset, f.record, self.next_expected, expected
                )
            });
            if ok {
                adopted += 1;
            }
        }
        checks.record(
            "in_flight_whole_or_absent",
            adopted == 0 || adopted == in_flight.len(),
            || {
                format!(
                    "{partition}: {adopted} of the {} records in flight survived",
                    in_flight.len()
                )
            },
        );
        let top = self.known.last_key_value().map_or(-1, |(o, _)| *o);
        checks.record(
            "offsets_not_reused",
            next_offset > top && next_offset >= self.next_expected,
            || {
                format!(
                    "{partition}: next_offset {next_offset} after reopen, acknowledged up to {top}"
                )
            },
        );
        if adopted > 0 && adopted == in_flight.len() {
            for (offset, record) in (self.next_expected..).zip(in_flight) {
                self.known.insert(offset, record);
            }
        }
        // Keep what is there: a record gone (retention, compaction) never comes
        // back, and should it, it is reported as garbage next time.
        self.known
            .retain(|offset, _| by_offset.contains_key(offset));
        self.next_expected = self.next_expected.max(next_offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(key: &str, value: Option<&str>) -> Written {
        Written {
            key: key.to_string(),
            digest: value.map(|v| digest(v.as_bytes())),
        }
    }

    fn found(offset: i64, key: &str, value: Option<&str>) -> Found {
        Found {
            offset,
            record: w(key, value),
        }
    }

    /// a@0, b@1, a@2 (acked); c, d in flight.
    fn ledger(checks: &mut Checks) -> PartitionLedger {
        let mut l = PartitionLedger::default();
        l.intent(vec![w("a", Some("1")), w("b", Some("2"))]);
        l.ack(0, 1, checks);
        l.intent(vec![w("a", Some("3"))]);
        l.ack(2, 2, checks);
        l.intent(vec![w("c", Some("4")), w("d", None)]);
        l
    }

    #[test]
    fn everything_present_or_legitimately_gone_passes() {
        let mut checks = Checks::default();
        let mut l = ledger(&mut checks);
        // a@0 compacted away (a@2 is later); the batch in flight survived whole.
        let log = [
            found(1, "b", Some("2")),
            found(2, "a", Some("3")),
            found(3, "c", Some("4")),
            found(4, "d", None),
        ];
        l.check_reopened("p", 0, 5, &log, &mut checks);
        assert_eq!(checks.failures(), 0, "{checks:?}");
        assert_eq!(
            l.tracked(),
            4,
            "a@0 is gone for good; the batch in flight adopted"
        );
        // Then retention moves the start past everything but d.
        l.check_reopened("p", 4, 5, &[found(4, "d", None)], &mut checks);
        assert_eq!(checks.failures(), 0, "{checks:?}");
        assert_eq!(l.tracked(), 1);
    }

    #[test]
    fn a_record_compacted_away_that_comes_back_is_caught() {
        let mut checks = Checks::default();
        let mut l = ledger(&mut checks);
        let log = [found(1, "b", Some("2")), found(2, "a", Some("3"))];
        l.check_reopened("p", 0, 3, &log, &mut checks);
        assert_eq!(checks.failures(), 0, "{checks:?}");
        let back = [
            found(0, "a", Some("1")),
            found(1, "b", Some("2")),
            found(2, "a", Some("3")),
        ];
        l.check_reopened("p", 0, 3, &back, &mut checks);
        assert_eq!(
            checks.count_failed("no_unacknowledged_garbage"),
            1,
            "{checks:?}"
        );
    }

    #[test]
    fn a_lost_record_is_caught() {
        let mut checks = Checks::default();
        let mut l = ledger(&mut checks);
        // b@1 has no later record of its key: it may not go.
        l.check_reopened("p", 0, 3, &[found(2, "a", Some("3"))], &mut checks);
        assert_eq!(checks.failures(), 1);
        assert!(checks.first_failure().unwrap().contains("offset 1"));
    }

    #[test]
    fn a_changed_record_garbage_a_torn_batch_and_a_reused_offset_are_caught() {
        let mut checks = Checks::default();
        let mut l = ledger(&mut checks);
        l.check_reopened(
            "p",
            0,
            3,
            &[
                found(0, "a", Some("1")),
                found(1, "b", Some("X")),
                found(2, "a", Some("3")),
            ],
            &mut checks,
        );
        assert_eq!(checks.failures(), 1, "changed value");
        let mut checks = Checks::default();
        let mut l = ledger(&mut checks);
        let log = [
            found(1, "b", Some("2")),
            found(2, "a", Some("3")),
            found(3, "z", Some("9")),
        ];
        l.check_reopened("p", 0, 4, &log, &mut checks);
        assert_eq!(
            checks.count_failed("no_unacknowledged_garbage"),
            1,
            "{checks:?}"
        );
        assert_eq!(
            checks.failures(),
            1,
            "not adopted: no in-flight record survived"
        );
        let mut checks = Checks::default();
        let mut l = ledger(&mut checks);
        let log = [
            found(1, "b", Some("2")),
            found(2, "a", Some("3")),
            found(3, "c", Some("4")),
        ];
        l.check_reopened("p", 0, 4, &log, &mut checks);
        assert_eq!(checks.failures(), 1, "half the batch in flight: {checks:?}");
        let mut checks = Checks::default();
        let mut l = ledger(&mut checks);
        l.check_reopened("p", 0, 2, &[found(1, "b", Some("2"))], &mut checks);
        assert!(checks.count_failed("offsets_not_reused") == 1, "{checks:?}");
        l.intent(vec![w("e", Some("5"))]);
        l.ack(1, 1, &mut checks);
        assert_eq!(checks.count_failed("ack_offsets_increasing"), 1);
        l.check_reopened("p", 3, 9, &[], &mut checks);
        l.check_reopened("p", 2, 9, &[], &mut checks);
        assert_eq!(checks.count_failed("log_start_monotonic"), 1);
    }
}

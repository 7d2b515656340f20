//! Kafka's timestamp types: bit 3 of a batch's attributes.
//!
//! `CreateTime` (0): each record's timestamp is `baseTimestamp + timestampDelta`,
//! the producer's. `LogAppendTime` (1): the broker stamped the batch when it
//! appended it; every record's timestamp *is* the batch's `maxTimestamp`, whatever
//! its delta says (Kafka's `DefaultRecordBatch` iterator), so the time index,
//! retention and compaction's tombstone horizon see that one time.
//!
//! Bit 3 of `attributes`: 0 CreateTime, 1 LogAppendTime. Under LogAppendTime every
//! record reads as the batch's `maxTimestamp` (`BatchView::timestamp_of`,
//! `RecordBatch::timestamp_of`); the stored deltas are not interpreted. Since the time
//! index, segment max timestamps and time retention already use `maxTimestamp`, they
//! see the append time; compaction's tombstone horizon uses the read timestamp; a
//! partly kept batch keeps `maxTimestamp`.

use std::fmt;
use std::str::FromStr;

/// The attribute bit of [`TimestampType::LogAppendTime`].
pub const ATTR_LOG_APPEND_TIME: i16 = 1 << 3;

/// A batch's timestamp type. Serialized by its Kafka name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum TimestampType {
    /// The producer's time, per record (bit 3 clear).
    #[default]
    CreateTime,
    /// The broker's append time, the batch's `maxTimestamp`, for every record.
    LogAppendTime,
}

impl TimestampType {
    /// The type the attributes `attributes` declare.
    pub fn of_attributes(attributes: i16) -> TimestampType {
        if attributes & ATTR_LOG_APPEND_TIME != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Kafka's name (`message.timestamp.type`).
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }
    }

    /// The timestamp a record of a batch of this type reads as: its own
    /// (`base_timestamp + delta`) under CreateTime, the batch's `max_timestamp`
    /// under LogAppendTime.
    #[inline]
    pub fn record_timestamp(self, base_timestamp: i64, delta: i64, max_timestamp: i64) -> i64 {
        match self {
            TimestampType::CreateTime => base_timestamp.wrapping_add(delta),
            TimestampType::LogAppendTime => max_timestamp,
        }
    }
}

impl fmt::Display for TimestampType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TimestampType {
    type Err = String;

    /// `CreateTime` / `LogAppendTime` (Kafka's names), or `create-time` /
    /// `log-append-time` (the CLI's).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "CreateTime" | "create-time" => Ok(TimestampType::CreateTime),
            "LogAppendTime" | "log-append-time" => Ok(TimestampType::LogAppendTime),
            _ => Err(format!(
                "unknown timestamp type {s:?} (CreateTime, LogAppendTime)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_three_is_log_append_time() {
        assert_eq!(TimestampType::of_attributes(0), TimestampType::CreateTime);
        assert_eq!(
            TimestampType::of_attributes(8),
            TimestampType::LogAppendTime
        );
        assert_eq!(
            TimestampType::of_attributes(0x37),
            TimestampType::CreateTime
        );
        assert_eq!(TimestampType::LogAppendTime.record_timestamp(10, 5, 99), 99);
        assert_eq!(TimestampType::CreateTime.record_timestamp(10, 5, 99), 15);
        for t in [TimestampType::CreateTime, TimestampType::LogAppendTime] {
            assert_eq!(t.name().parse::<TimestampType>(), Ok(t));
        }
    }
}

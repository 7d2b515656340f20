//! The crash workload's acknowledgments ([`Acks`], its `ACKS.json`) and what
//! `crash-load` says Kafka serves from one image ([`Served`]), read from the
//! harness's JSON into types the oracle takes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One record: its offset, key and value (`None`: no key, or a tombstone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub offset: i64,
    pub key: Option<String>,
    pub value: Option<String>,
}

/// One acknowledged step of the workload.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Step {
    pub step: usize,
    /// `open`, `append`, `flush`, `roll`, `clean`, `retain` or `close`.
    pub what: String,
    /// The marker file's name (`.seglog-mark-N-WHAT`).
    pub marker: String,
    pub recovery_point: i64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// The records an append step appended, with their offsets.
    #[serde(default)]
    pub records: Vec<Record>,
    /// The offset below which the step acknowledges the log durable (a flush and
    /// the close).
    #[serde(default)]
    pub flushed_to: Option<i64>,
    /// The step wrote the log manager's two checkpoints.
    #[serde(default)]
    pub checkpointed: bool,
    /// The cleaner round's end: it cleaned the offsets below it.
    #[serde(default)]
    pub cleaned_to_offset: Option<i64>,
    /// Every key's latest value before the cleaner round (`None`: a tombstone).
    #[serde(default)]
    pub latest_before: Option<BTreeMap<String, Option<String>>>,
    /// Every key's latest value after it.
    #[serde(default)]
    pub latest_after: Option<BTreeMap<String, Option<String>>>,
}

impl Step {
    /// The step on one line: what it did and what it acknowledged.
    pub fn describe(&self) -> String {
        let mut out = self.what.clone();
        if let (Some(first), Some(last)) = (self.records.first(), self.records.last()) {
            let records: Vec<String> = self
                .records
                .iter()
                .map(|r| {
                    format!(
                        "{}={}",
                        r.key.as_deref().unwrap_or("(no key)"),
                        r.value.as_deref().unwrap_or("(tombstone)")
                    )
                })
                .collect();
            out.push_str(&format!(
                " offsets {}..={}: {}",
                first.offset,
                last.offset,
                records.join(" ")
            ));
        }
        if let Some(to) = self.flushed_to {
            out.push_str(&format!(", durable below {to}"));
        }
        if let Some(to) = self.cleaned_to_offset {
            out.push_str(&format!(", cleaned below {to}"));
        }
        if self.checkpointed {
            out.push_str(&format!(
                ", checkpointed (recovery point {}, log start {})",
                self.recovery_point, self.log_start_offset
            ));
        }
        out.push_str(&format!(", log end {}", self.log_end_offset));
        out
    }
}

/// The workload's acknowledgments, in order.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Acks {
    /// `normal`, or the variant that ran (`no-flush`).
    #[serde(default)]
    pub variant: Option<String>,
    pub steps: Vec<Step>,
}

impl Acks {
    /// Reads the harness's `ACKS.json`.
    pub fn from_value(value: &serde_json::Value) -> Result<Acks, String> {
        Acks::deserialize(value).map_err(|e| format!("the acknowledgments: {e}"))
    }

    /// Every record appended by the whole workload, by offset.
    pub fn appended(&self) -> BTreeMap<i64, &Record> {
        self.steps
            .iter()
            .flat_map(|s| &s.records)
            .map(|r| (r.offset, r))
            .collect()
    }
}

/// One segment Kafka loaded: its base offset and the offset after its last record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    pub base_offset: i64,
    pub next_offset: i64,
}

/// The log Kafka loaded from an image, as it serves it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedLog {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub recovery_point: i64,
    pub segments: Vec<Segment>,
    pub records: Vec<Record>,
    /// Where reading stopped below the log end: no record at or after it.
    #[serde(default)]
    pub read_ends_at: Option<i64>,
}

/// What Kafka did with one image (a case file holds it as serialized here;
/// [`Served::from_value`] reads the harness's answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Served {
    /// The image holds no partition directory.
    Absent,
    /// Loading or reading threw.
    Error { class: String, message: String },
    /// The log opened and served this.
    Log(ServedLog),
}

impl Served {
    /// Reads one image's answer of `crash-load`.
    pub fn from_value(value: &serde_json::Value) -> Result<Served, String> {
        if value.get("absent").is_some_and(|a| a == true) {
            return Ok(Served::Absent);
        }
        if let Some(error) = value.get("error") {
            let text = |k: &str| error[k].as_str().unwrap_or_default().to_string();
            return Ok(Served::Error {
                class: text("class"),
                message: text("message"),
            });
        }
        ServedLog::deserialize(value)
            .map(Served::Log)
            .map_err(|e| format!("crash-load's answer {value}: {e}"))
    }
}

//! Batch-level reads compared with the spec: which whole batches [`Log::fetch`] and
//! [`Log::read_raw`] return (base offset, last offset = `baseOffset +
//! lastOffsetDelta`, record count, bytes, control flag) and [`Fetch::next_offset`].
//!
//! Record-level reads cannot see a batch that ends in a compaction gap: from an
//! offset inside the gap it contributes no record. Its end still decides what a
//! fetch returns and where the next one starts, so an engine that takes a batch's
//! end from its last stored record passes every record comparison and fails here.

use seglog_model::spec::{Batch, Fetched, SpecLog};

use seglog::format::BatchView;
use seglog::log::{Fetch, Log};
use seglog::Error;

/// A batch as a batch-level read returns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSummary {
    pub base_offset: i64,
    pub last_offset: i64,
    pub records: usize,
    pub bytes: u64,
    pub control: bool,
}

impl BatchSummary {
    pub(super) fn of_view(batch: &BatchView<'_>) -> BatchSummary {
        BatchSummary {
            base_offset: batch.base_offset,
            last_offset: batch.base_offset + i64::from(batch.last_offset_delta),
            records: batch.record_count,
            bytes: batch.size() as u64,
            control: batch.is_control(),
        }
    }

    pub(super) fn of_spec(batch: &Batch) -> BatchSummary {
        BatchSummary {
            base_offset: batch.base_offset,
            last_offset: batch.last_offset(),
            records: batch.records.len(),
            bytes: batch.bytes(),
            control: batch.control,
        }
    }
}

impl std::fmt::Display for BatchSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}..={}] {} records {} bytes{}",
            self.base_offset,
            self.last_offset,
            self.records,
            self.bytes,
            if self.control { " control" } else { "" }
        )
    }
}

/// A batch-level read's result: the batches and the offset to read from next.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Batches {
    batches: Vec<BatchSummary>,
    next_offset: i64,
}

impl Batches {
    fn of_spec(fetched: Fetched) -> Batches {
        Batches {
            batches: fetched.batches.iter().map(BatchSummary::of_spec).collect(),
            next_offset: fetched.next_offset,
        }
    }
}

fn describe(read: &Option<Batches>) -> String {
    match read {
        None => "out of range".into(),
        Some(read) => format!(
            "next_offset {} batches [{}]",
            read.next_offset,
            read.batches
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The batches of `bytes`, decoded back to back (each fully checked).
fn summaries(bytes: &[u8]) -> Result<Vec<BatchSummary>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let (batch, size) =
            BatchView::decode(&bytes[at..]).map_err(|e| format!("batch at byte {at}: {e:?}"))?;
        out.push(BatchSummary::of_view(&batch));
        at += size;
    }
    Ok(out)
}

fn compare_batches(
    what: &str,
    engine: Option<Batches>,
    spec: Option<Batches>,
) -> Result<(), String> {
    if engine == spec {
        return Ok(());
    }
    Err(format!(
        "{what}: engine {} spec {}",
        describe(&engine),
        describe(&spec)
    ))
}

/// [`Log::fetch`]`(from, max_bytes)` against [`SpecLog::fetch`]: the same batches and
/// the same `next_offset`, or both out of range. Returns the engine's fetch.
pub fn check_fetch(
    log: &Log,
    spec_log: &SpecLog,
    from: i64,
    max_bytes: usize,
) -> Result<Option<Fetch>, String> {
    let fetch = match log.fetch(from, max_bytes) {
        Ok(fetch) => Some(fetch),
        Err(Error::OffsetOutOfRange { .. }) => None,
        Err(e) => return Err(format!("fetch({from}, {max_bytes}) failed: {e}")),
    };
    let engine = match &fetch {
        None => None,
        Some(fetch) => {
            let batches = fetch
                .batches()
                .map(|b| b.map(|b| BatchSummary::of_view(&b)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("fetch({from}, {max_bytes}) batches: {e}"))?;
            Some(Batches {
                batches,
                next_offset: fetch.next_offset(),
            })
        }
    };
    let spec = spec_log
        .fetch(from, max_bytes as u64)
        .ok()
        .map(Batches::of_spec);
    compare_batches(&format!("fetch({from}, {max_bytes})"), engine, spec)?;
    Ok(fetch)
}

/// [`Log::read_raw`]`(from, max_bytes)` against [`SpecLog::read_raw`]: the same
/// batches, or both out of range.
pub fn check_read_raw(
    log: &Log,
    spec_log: &SpecLog,
    from: i64,
    max_bytes: usize,
) -> Result<(), String> {
    let engine = match log.read_raw(from, max_bytes) {
        Ok(bytes) => {
            let batches = summaries(&bytes)
                .map_err(|e| format!("read_raw({from}, {max_bytes}) bytes: {e}"))?;
            let next_offset = batches.last().map_or(from, |b| b.last_offset + 1);
            Some(Batches {
                batches,
                next_offset,
            })
        }
        Err(Error::OffsetOutOfRange { .. }) => None,
        Err(e) => return Err(format!("read_raw({from}, {max_bytes}) failed: {e}")),
    };
    let spec = spec_log
        .read_raw(from, max_bytes as u64)
        .ok()
        .map(Batches::of_spec);
    compare_batches(&format!("read_raw({from}, {max_bytes})"), engine, spec)
}

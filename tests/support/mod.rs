//! Helpers shared by integration tests (`mod support;`; a subdirectory of `tests/`
//! is not a test target of its own).

use seglog::format::BatchView;

/// The batches of `bytes` (whole batches, as a segment or a fetch holds them) as
/// `(base offset, last offset, record count)`.
pub fn batches(bytes: &[u8]) -> Vec<(i64, i64, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let (batch, size) = BatchView::decode(&bytes[at..]).unwrap();
        out.push((
            batch.base_offset,
            batch.base_offset + i64::from(batch.last_offset_delta),
            batch.record_count,
        ));
        at += size;
    }
    out
}

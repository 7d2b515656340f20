//! Raw append beside the structured one: producer-encoded batches stored as they
//! came (`cargo run --example raw_append --package seglog`).

use seglog::{BatchRule, Error, Log, LogConfig, NewRecord, RecordBatch};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (mut log, _report) = Log::open(dir.path().join("orders-0"), LogConfig::default())?;
    let records = [NewRecord::new(
        Some(b"k1".to_vec()),
        Some(b"v1".to_vec()),
        1_000,
    )];
    log.append(&records)?; // structured: the engine encodes the batch
                           // Raw: the bytes a producer sent (base offset 0 here, as producers write it);
                           // checked by Kafka's produce rules, offsets written in place, no re-encoding.
    let request = [
        RecordBatch::build(0, &records).encode(),
        RecordBatch::build(0, &records).encode(),
    ]
    .concat();
    let info = log.append_batches(&request)?;
    assert_eq!((info.base_offset, info.last_offset), (1, 2));
    let mut bad = request.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1; // a flipped bit in the second batch: refused, nothing stored
    match log.append_batches(&bad) {
        Err(Error::InvalidBatch {
            batch: 1,
            rule: BatchRule::Format { .. },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(log.next_offset(), 3);
    log.close()?;
    Ok(())
}

//! The README's library example.

use seglog::{Log, LogConfig, NewRecord};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (mut log, _report) = Log::open(dir.path().join("orders-0"), LogConfig::default())?;
    log.append(&[NewRecord::new(
        Some(b"k1".to_vec()),
        Some(b"v1".to_vec()),
        1_000,
    )])?;
    log.roll()?; // close the segment: compaction rewrites closed segments only
    log.append(&[NewRecord::new(
        Some(b"k1".to_vec()),
        Some(b"v2".to_vec()),
        2_000,
    )])?;
    log.flush()?; // durable from here on
    let report = log.compact(3_000, 86_400_000, None)?; // now, delete_retention_ms
    assert_eq!((report.records_before, report.records_after), (1, 0));
    for record in log.read(log.log_start_offset(), 1 << 20)? {
        println!("{} {:?} {:?}", record.offset, record.key, record.value); // 1 "k1" "v2"
    }
    // The same records borrowed, one at a time (no per-record allocation).
    log.read_each(log.log_start_offset(), 1 << 20, |record| {
        assert_eq!(record.offset, 1)
    })?;
    let fetch = log.fetch(log.log_start_offset(), 1 << 20)?; // Kafka's fetch: no copy
    for record in fetch.records() {
        let record = record?; // key and value borrow the fetched (mapped) bytes
        assert_eq!((record.offset, record.value), (1, Some(&b"v2"[..])));
    }
    let deleted = log.retain(3_000, Some(60_000), None)?; // now, retention_ms, retention_bytes
    println!("deleted segments {:?}", deleted.deleted_segments);
    log.close()?;
    Ok(())
}

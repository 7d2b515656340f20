use super::*;
use crate::compaction::map::OffsetMap;
use crate::error::{CorruptKind, Error};
use crate::format::{Compression, ControlKind, NewRecord, RecordBatch};

/// Segment `s` (base `1_000_000 * s`): batches of `per_batch` records whose keys
/// repeat, a keyless record and a tombstone in each, every third batch lz4 (with
/// the feature `compression`), and a control batch in the middle.
fn segment(s: i64, batches: i64, per_batch: i64) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut next = 1_000_000 * s;
    for b in 0..batches {
        if b == batches / 2 {
            RecordBatch::control(next, ControlKind::Commit, 7, 0, 0, 5).encode_into(&mut bytes);
            next += 1;
        }
        let records: Vec<NewRecord> = (0..per_batch)
            .map(|r| {
                let key = (r != 3).then(|| format!("k{}", (next + r) % 997).into_bytes());
                let value = (r != 5).then(|| b"value".to_vec());
                NewRecord::new(key, value, next + r)
            })
            .collect();
        let mut batch = RecordBatch::build(next, &records);
        if b % 3 == 0 && cfg!(feature = "compression") {
            batch = batch.with_compression(Compression::Lz4);
        }
        batch.encode_into(&mut bytes);
        next += per_batch;
    }
    bytes
}

/// What a consumer saw: the walk's outcome and every event with its records.
type Walked = (Result<()>, Vec<(Event, Vec<Seen>)>);

/// A handed-over record as the tests compare it: the key hashed whichever
/// thread hashed it.
type Seen = (Digest, u64, bool, i64);

fn seen(records: &[Rec<'_>], digester: &Digester) -> Vec<Seen> {
    records
        .iter()
        .map(|r| (r.digest(digester), r.stable, r.value_is_null, r.timestamp))
        .collect()
}

/// An event as the tests compare it (record ranges restart per chunk: left out).
fn comparable(event: &Event) -> Event {
    match event.clone() {
        Event::Batch(batch) => Event::Batch(Batch {
            records: batch.records.map(|r| 0..r.len()),
            ..batch
        }),
        segment => segment,
    }
}

fn plan(from: i64, until: i64, keys: &(dyn Fn(usize, i64) -> bool + Sync)) -> Plan<'_> {
    Plan {
        from,
        until,
        checked: false,
        stable: true,
        keep_inflated: true,
        keys,
        digester: OffsetMap::new().digester(),
    }
}

/// What one loop on this thread sees.
fn single(inputs: &[Input<'_>], plan: &Plan<'_>) -> Vec<(Event, Vec<Seen>)> {
    let mut chunk = Chunk::default();
    read(Path::new("/log"), inputs, plan, &mut chunk, &mut |_| true).unwrap();
    chunk
        .events
        .iter()
        .map(|event| {
            let records = match event {
                Event::Batch(Batch {
                    records: Some(r), ..
                }) => seen(&chunk.records[r.clone()], &plan.digester),
                _ => Vec::new(),
            };
            (comparable(event), records)
        })
        .collect()
}

/// What the consumer of [`each`] sees, stopping after `stop_after` events; a
/// `slow` consumer makes the reader hash the chunks it hands over.
fn piped(inputs: &[Input<'_>], plan: &Plan<'_>, stop_after: usize, slow: bool) -> Walked {
    piped_counting(inputs, plan, stop_after, slow).0
}

/// [`piped`], and how many keys of uncompressed batches came hashed by the reader.
fn piped_counting(
    inputs: &[Input<'_>],
    plan: &Plan<'_>,
    stop_after: usize,
    slow: bool,
) -> (Walked, usize) {
    let mut got = Vec::new();
    let mut hashed = 0;
    let result = each(Path::new("/log"), inputs, plan, |event, records| {
        if slow && got.len() < 200 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        if matches!(event, Event::Batch(b) if b.attributes & 7 == 0) {
            hashed += records
                .iter()
                .filter(|r| matches!(r.key, KeyRef::Hashed(_)))
                .count();
        }
        got.push((comparable(event), seen(records, &plan.digester)));
        Ok(if got.len() == stop_after {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    });
    ((result, got), hashed)
}

fn inputs(segments: &[Vec<u8>]) -> Vec<Input<'_>> {
    segments
        .iter()
        .enumerate()
        .map(|(s, bytes)| Input {
            source: s + 10,
            base: 1_000_000 * s as i64,
            bytes,
        })
        .collect()
}

#[test]
fn the_consumer_sees_what_a_single_loop_sees_over_many_chunks() {
    // Three segments of 40 batches x 500 records: several chunks each.
    let segments: Vec<Vec<u8>> = (0..3).map(|s| segment(s, 40, 500)).collect();
    let inputs = inputs(&segments);
    let every = |_: usize, _: i64| true;
    let odd = |index: usize, _: i64| index % 2 == 1;
    for (from, until, keys) in [
        (
            i64::MIN,
            i64::MAX,
            &every as &(dyn Fn(usize, i64) -> bool + Sync),
        ),
        (1_005_000, 2_010_000, &every),
        (0, 1, &every),
        (i64::MIN, i64::MAX, &odd),
    ] {
        let plan = plan(from, until, keys);
        let want = single(&inputs, &plan);
        for slow in [false, true] {
            let (result, got) = piped(&inputs, &plan, usize::MAX, slow);
            result.unwrap();
            assert_eq!(got, want, "{from}..{until} slow {slow}");
        }
    }
    // One plan: each has a digester of its own (a secret key).
    let whole = plan(i64::MIN, i64::MAX, &every);
    let all = single(&inputs, &whole);
    assert!(all.iter().map(|(_, r)| r.len()).sum::<usize>() > 3 * CHUNK_RECORDS);
    let batches: Vec<&Batch> = all
        .iter()
        .filter_map(|(e, _)| match e {
            Event::Batch(b) => Some(b),
            Event::Segment { .. } => None,
        })
        .collect();
    // Control batches never hand keys over; every data batch counts its records.
    assert!(batches
        .iter()
        .any(|b| b.control && b.records.is_none() && b.record_count == 1));
    for b in batches.iter().filter(|b| !b.control) {
        assert_eq!((b.keyed, b.keyless, b.tombstones), (499, 1, 1));
        assert_eq!(b.records.as_ref().map(|r| r.len()), Some(499));
        assert_eq!(b.inflated.is_some(), b.attributes & 7 != 0);
    }
    assert!(batches.iter().enumerate().all(|(i, b)| b.index == i));
    // Stopping early: exactly the prefix, and the reader stops too.
    let (result, got) = piped(&inputs, &whole, 57, false);
    result.unwrap();
    assert_eq!(got[..], all[..57]);
}

#[test]
fn a_consumer_that_falls_behind_gets_keys_hashed_by_the_reader() {
    // More chunks than the hand-over holds, and a consumer that sleeps first.
    let segments: Vec<Vec<u8>> = (0..3).map(|s| segment(s, 120, 500)).collect();
    let inputs = inputs(&segments);
    let every = |_: usize, _: i64| true;
    let plan = plan(i64::MIN, i64::MAX, &every);
    let want = single(&inputs, &plan);
    let ((result, got), hashed) = piped_counting(&inputs, &plan, usize::MAX, true);
    result.unwrap();
    assert_eq!(got, want);
    assert!(hashed > 0, "the reader never hashed a stored key");
    // A consumer that keeps up hashes stored keys itself (none come hashed).
    let ((result, _), hashed) = piped_counting(&inputs[..1], &plan, usize::MAX, false);
    result.unwrap();
    assert!(hashed < CHUNK_RECORDS * handover::CHUNKS, "{hashed}");
}

#[test]
fn a_damaged_batch_comes_after_everything_before_it() {
    let mut segments = vec![segment(0, 40, 500), segment(1, 40, 500)];
    let last = segments[1].len() - 1;
    segments[1][last] ^= 1;
    let inputs = inputs(&segments);
    let every = |_: usize, _: i64| true;
    let plan = plan(i64::MIN, i64::MAX, &every);
    let (result, got) = piped(&inputs, &plan, usize::MAX, false);
    let error = result.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Corrupt {
                kind: CorruptKind::ChecksumMismatch { .. },
                ..
            }
        ),
        "{error:?}"
    );
    // The whole first segment, nothing of the second (it is checked whole first).
    assert_eq!(got, single(&inputs[..1], &plan));
}

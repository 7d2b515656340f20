use super::*;

#[test]
fn latest_offset_wins_in_any_order() {
    let mut map = OffsetMap::new();
    map.insert(b"a", 5);
    map.insert(b"b", 1);
    map.insert(b"a", 2);
    map.insert(b"a", 9);
    map.insert(b"c", 0);
    map.finish();
    assert_eq!(map.latest(b"a"), Some(9));
    assert_eq!(map.latest(b"b"), Some(1));
    assert_eq!(map.latest(b"c"), Some(0));
    assert_eq!(map.latest(b"d"), None);
    assert_eq!(map.len(), 3);
}

#[test]
fn many_keys_stay_within_26_bytes_each() {
    let keys = 100_000u32;
    let mut map = OffsetMap::new();
    for round in 0..2i64 {
        for k in 0..keys {
            map.insert(&k.to_be_bytes(), round * i64::from(keys) + i64::from(k));
        }
    }
    map.finish();
    assert_eq!(map.len(), keys as usize);
    // 24 bytes an entry, and the directory's 4 bytes a slot, a slot for 2 keys or more.
    let directory = map.resident_bytes() - keys as usize * ENTRY_BYTES;
    assert!(
        directory > 0 && directory <= 2 * keys as usize + 4,
        "{directory}"
    );
    assert!(
        map.peak_bytes() <= 3 * keys as usize * ENTRY_BYTES,
        "{}",
        map.peak_bytes()
    );
    for k in (0..keys).step_by(997) {
        assert_eq!(map.latest(&k.to_be_bytes()), Some(i64::from(keys + k)));
    }
}

#[test]
fn lookups_find_every_key_and_no_other() {
    for n in [0u32, 1, 2, 17, 1000, 50_000] {
        let mut map = OffsetMap::new();
        for k in 0..n {
            map.insert(&k.to_le_bytes(), i64::from(k));
        }
        map.finish();
        for k in 0..n {
            assert_eq!(map.latest(&k.to_le_bytes()), Some(i64::from(k)));
        }
        for k in n..n + 1000 {
            assert_eq!(map.latest(&k.to_le_bytes()), None);
        }
    }
}

/// Digests at the edges of the directory's slots (all-zero and all-one top
/// words, digests sharing a top word, a slot's first and last digests) and maps of
/// every size around a power of two: every digest is found, none other.
#[test]
fn lookups_at_the_directory_slots_edges() {
    let edges: Vec<Digest> = [0u64, 1, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1]
        .iter()
        .flat_map(|&top| [[top, 0], [top, 7], [top, u64::MAX]])
        .collect();
    for n in (0..70u64).chain([255, 256, 257, 1023, 1024, 1025]) {
        let mut map = OffsetMap::new();
        let spread = |k: u64| [(k + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15), k + 1];
        let inserted: Vec<Digest> = edges.iter().copied().chain((0..n).map(spread)).collect();
        for (i, &digest) in inserted.iter().enumerate() {
            map.insert_digest(digest, i as i64);
        }
        map.finish();
        for (i, digest) in inserted.iter().enumerate() {
            assert!(map.contains_digest(*digest), "n {n}: {digest:?}");
            assert_eq!(
                map.find(digest).map(|at| map.entries[at].offset),
                Some(i as i64)
            );
        }
        for absent in [
            [0, 3],
            [u64::MAX, 3],
            [1 << 63, 3],
            spread(n + 1),
            spread(n + 2),
        ] {
            assert!(!map.contains_digest(absent), "n {n}: {absent:?}");
        }
    }
}

#[test]
fn sorted_lookups_agree_with_single_lookups() {
    let mut map = OffsetMap::new();
    for k in 0..5_000u32 {
        map.insert(&(k * 2).to_le_bytes(), i64::from(k));
    }
    map.finish();
    let mut queries: Vec<(Digest, u32)> = (0..10_000u32)
        .map(|k| (map.digest(&k.to_le_bytes()), k))
        .collect();
    queries.push(queries[7]);
    queries.sort_unstable();
    let mut seen = 0;
    map.latest_sorted(&queries, |k, latest| {
        assert_eq!(latest, map.latest(&k.to_le_bytes()), "key {k}");
        assert_eq!(latest.is_some(), k % 2 == 0);
        seen += 1;
    });
    assert_eq!(seen, queries.len());
    OffsetMap::new()
        .tap_finish()
        .latest_sorted(&queries, |_, latest| assert!(latest.is_none()));
}

#[test]
fn superseded_positions_are_exactly_the_overwritten_ones() {
    // Keys k % 700 at positions 0..5000: a position is superseded iff the same
    // key comes again at a higher position (within the first 4300).
    let mut map = OffsetMap::tracking_superseded();
    for p in 0..5_000i64 {
        map.insert(&(p % 700).to_le_bytes(), p);
    }
    map.finish();
    assert_eq!(map.len(), 700);
    for p in 0..5_000i64 {
        assert_eq!(map.is_superseded(p), p + 700 < 5_000, "position {p}");
    }
    assert!(!map.is_superseded(1 << 40), "never inserted");
    for (start, end) in [
        (0, 5_000),
        (0, 0),
        (3, 70),
        (4_250, 4_400),
        (64, 128),
        (4_990, 9_000),
    ] {
        let one_by_one = (start..end).filter(|&p| map.is_superseded(p)).count();
        assert_eq!(
            map.superseded_count(start..end),
            one_by_one,
            "{start}..{end}"
        );
    }
    assert_eq!(map.superseded_count(0..5_000), 4_300);
    assert!(map.superseded_bytes() <= 5_000 / 8 + 8);
    // Untracked maps keep no bitmap.
    let mut plain = OffsetMap::new();
    plain.insert(b"a", 1);
    plain.insert(b"a", 2);
    plain.finish();
    assert_eq!(plain.superseded_bytes(), 0);
}

#[test]
fn finishing_on_two_threads_keeps_every_mark() {
    // Enough pending entries for the two-thread finish: key k at positions k
    // and keys + k; exactly the first round is superseded, in both halves.
    let keys = FINISH_PARALLEL_ENTRIES as i64;
    let mut map = OffsetMap::tracking_superseded();
    for position in 0..2 * keys {
        map.insert(&(position % keys).to_le_bytes(), position);
    }
    map.finish();
    assert_eq!(map.len(), keys as usize);
    assert_eq!(map.superseded_count(0..keys), keys as usize);
    assert_eq!(map.superseded_count(keys..2 * keys), 0);
    assert_eq!(map.latest(&7i64.to_le_bytes()), Some(keys + 7));
    assert_eq!(map.bucket_capacity, 0);
    assert_eq!(
        map.resident_bytes(),
        keys as usize * ENTRY_BYTES + map.directory.bytes()
    );
}

#[test]
fn positions_in_any_order_supersede_only_lower_ones() {
    let mut map = OffsetMap::tracking_superseded();
    map.insert(b"a", 5);
    map.insert(b"a", 2);
    map.insert(b"b", 3);
    map.insert(b"a", 9);
    map.insert(b"b", 3); // the same position again supersedes nothing
    map.finish();
    let superseded: Vec<i64> = (0..10).filter(|&p| map.is_superseded(p)).collect();
    assert_eq!(superseded, vec![2, 5]);
    assert_eq!(map.latest(b"a"), Some(9));
    assert_eq!(map.latest(b"b"), Some(3));
}

#[test]
fn superseded_positions_alone_agree_with_the_finished_map() {
    for keys in [10i64, FINISH_PARALLEL_ENTRIES as i64] {
        let build = || {
            let mut map = OffsetMap::tracking_superseded();
            for position in 0..3 * keys {
                map.insert(&((position * 7) % keys).to_le_bytes(), position);
            }
            map
        };
        let mut finished = build();
        finished.finish();
        let alone = build().into_superseded();
        assert_eq!(alone.keys, finished.len());
        for position in 0..3 * keys {
            assert_eq!(
                alone.is_superseded(position),
                finished.is_superseded(position)
            );
        }
        assert_eq!(alone.count(0..3 * keys), 2 * keys as usize);
        assert_eq!(alone.count(2 * keys..3 * keys), 0);
        // 24 bytes per key; the peak also holds the 1024 bucket headers.
        let headers = BUCKETS * size_of::<Vec<Entry>>();
        assert_eq!(alone.map_bytes, keys as usize * ENTRY_BYTES);
        assert!(alone.map_bytes_peak >= alone.map_bytes + headers);
    }
}

impl OffsetMap {
    fn tap_finish(mut self) -> Self {
        self.finish();
        self
    }
}

#[test]
fn distinct_keys_get_distinct_digests() {
    let map = OffsetMap::new();
    assert_ne!(map.digest(b""), map.digest(b"\0"));
    assert_ne!(map.digest(b"ab"), map.digest(b"ba"));
    assert_eq!(map.digest(b"ab"), map.digest(b"ab"));
    assert_ne!(
        map.digest(b"ab"),
        OffsetMap::new().digest(b"ab"),
        "keys are secret per map"
    );
}

#[test]
fn repeated_keys_are_deduplicated_as_they_come() {
    // Ten keys a million times: each key's bucket is deduplicated whenever it
    // fills at DEDUP_FROM entries, so the build never holds the repeats.
    let mut map = OffsetMap::tracking_superseded();
    for i in 0..1_000_000u32 {
        map.insert(&(i % 10).to_be_bytes(), i64::from(i));
    }
    // The bucket headers (24 KiB), ten buckets of 128 entries, one dedup table.
    let bound = 64 << 10;
    assert!(map.peak_bytes() <= bound, "{} > {bound}", map.peak_bytes());
    map.finish();
    assert_eq!(map.len(), 10);
    assert!(map.is_superseded(999_989));
    assert!(!map.is_superseded(999_990));
}

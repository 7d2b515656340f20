//! The kafka pass against the reference pass (`crate::compaction::reference::kafka`) on
//! random logs, transactional and damaged ones among them.

use super::*;
use crate::compaction::options::BuildFrom;
use crate::compaction::reseal::rebuild;
use crate::compaction::rules::kafka::BatchOutcome;
use crate::compaction::section::read_clean_point;
use crate::format::batch::{
    decode, ATTRIBUTES_OFFSET, ATTR_DELETE_HORIZON, ATTR_TRANSACTIONAL, CRC_OFFSET, RECORDS_OFFSET,
};
use crate::format::batch_view::BatchView;
use crate::format::record::Header;
use crate::format::record::RecordView;
use crate::format::{ControlKind, NewRecord, RecordBatch};
use crate::fs::sim::SimFs;
use crate::install::InstallPaths;
use crate::segment::files::list_segments;
use proptest::prelude::*;
use std::ops::Range;
use std::path::PathBuf;

/// SplitMix64: the random log of one seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A random data batch at `base`: keyed, keyless and tombstone records of a few
/// keys, timestamps out of order, some headers and long values; sometimes
/// LogAppendTime, a delete horizon already stamped, or a codec.
fn random_data_batch(rng: &mut Rng, base: i64) -> RecordBatch {
    let records: Vec<NewRecord> = (0..1 + rng.below(6))
        .map(|_| {
            let key = (!rng.chance(15)).then(|| format!("k{}", rng.below(6)).into_bytes());
            let value = (!rng.chance(25)).then(|| {
                let len = if rng.chance(10) { 200 } else { rng.below(20) };
                vec![b'v'; len as usize]
            });
            let mut record = NewRecord::new(key, value, rng.below(1_000) as i64);
            if rng.chance(10) {
                record.headers.push(Header {
                    key: "h".into(),
                    value: Some(b"x".to_vec()),
                });
            }
            record
        })
        .collect();
    let mut batch = RecordBatch::build(base, &records);
    if rng.chance(15) {
        batch = batch.with_log_append_time(rng.below(1_000) as i64);
    }
    if rng.chance(10) {
        batch.attributes |= ATTR_DELETE_HORIZON;
    }
    #[cfg(feature = "compression")]
    if rng.chance(15) {
        batch = batch.with_compression(crate::format::Compression::Lz4);
    }
    batch
}

/// The producers of a transactional random log.
const PRODUCERS: [i64; 2] = [7, 8];

/// The generator's state: the next offset and, in a transactional log, which
/// of [`PRODUCERS`] has a transaction open.
struct Gen {
    next: i64,
    transactional: bool,
    open: [bool; 2],
}

impl Gen {
    /// The next batch: in a transactional log, sometimes the COMMIT or ABORT of
    /// an open transaction, or a transactional data batch of one of the two
    /// producers (opening its transaction); otherwise a control batch of
    /// producer 7 (which ends its transaction, if open, or nothing) or a plain
    /// data batch. Gaps of 3 offsets between batches, sometimes.
    fn batch(&mut self, rng: &mut Rng) -> RecordBatch {
        let base = self.next;
        let p = rng.below(2) as usize;
        let batch = if self.transactional && self.open[p] && rng.chance(30) {
            self.open[p] = false;
            let kind = if rng.chance(50) {
                ControlKind::Commit
            } else {
                ControlKind::Abort
            };
            RecordBatch::control(base, kind, PRODUCERS[p], 0, 0, rng.below(1_000) as i64)
        } else if self.transactional && rng.chance(40) {
            self.open[p] = true;
            let mut batch = random_data_batch(rng, base);
            batch.attributes |= ATTR_TRANSACTIONAL;
            batch.producer_id = PRODUCERS[p];
            batch.producer_epoch = 0;
            batch
        } else if rng.chance(10) {
            let kind = if rng.chance(50) {
                ControlKind::Commit
            } else {
                ControlKind::Abort
            };
            self.open[0] = false;
            RecordBatch::control(base, kind, PRODUCERS[0], 0, 0, rng.below(1_000) as i64)
        } else {
            random_data_batch(rng, base)
        };
        self.next = batch.next_offset() + if rng.chance(10) { 3 } else { 0 };
        batch
    }

    /// Appends `count` batches to segment `path`.
    fn append(&mut self, fs: &SimFs, path: &Path, rng: &mut Rng, count: u64) {
        for _ in 0..count {
            let batch = self.batch(rng);
            fs.append(path, &batch.encode()).unwrap();
        }
    }
}

/// Writes a random log (closed segments, then the active one) into `dir`; half
/// of the logs hold transactions.
fn random_log(fs: &SimFs, dir: &Path, rng: &mut Rng) -> Gen {
    fs.create_dir_all(dir).unwrap();
    let mut gen = Gen {
        next: 0,
        transactional: rng.chance(50),
        open: [false; 2],
    };
    let segments = 2 + rng.below(5);
    for segment in 0..segments {
        let path = dir.join(filename::build(gen.next, LOG_SUFFIX));
        fs.create_file(&path).unwrap();
        let batches = if segment + 1 == segments {
            rng.below(3)
        } else {
            rng.below(5)
        };
        gen.append(fs, &path, rng, batches);
        if gen.next == 0 || fs.len(&path).unwrap() == 0 && segment + 1 < segments {
            // Closed segments hold a batch, so that the next base is new.
            gen.append(fs, &path, rng, 1);
        }
        fs.sync_file(&path).unwrap();
    }
    write_txn_indexes(fs, dir, 0);
    fs.sync_dir(dir).unwrap();
    gen
}

/// Between two cleanings: sometimes rolls a new active segment, then appends a
/// few batches (markers of open transactions among them) to the active one.
fn append_more(fs: &SimFs, dir: &Path, rng: &mut Rng, gen: &mut Gen) {
    let from = gen.next;
    let mut active = *list_segments(fs, dir).unwrap().last().unwrap();
    let active_path = dir.join(filename::build(active, LOG_SUFFIX));
    if rng.chance(50) && fs.len(&active_path).unwrap() > 0 {
        active = gen.next;
        fs.create_file(&dir.join(filename::build(active, LOG_SUFFIX)))
            .unwrap();
    }
    let path = dir.join(filename::build(active, LOG_SUFFIX));
    let count = rng.below(4);
    gen.append(fs, &path, rng, count);
    fs.sync_file(&path).unwrap();
    write_txn_indexes(fs, dir, from);
    fs.sync_dir(dir).unwrap();
}

/// Adds the aborted-transaction index entries of the ABORT markers at or past
/// `from` to their segments' `.txnindex` (what the log writes on append).
fn write_txn_indexes(fs: &SimFs, dir: &Path, from: i64) {
    use crate::format::filename::TXN_INDEX_SUFFIX;
    use crate::format::txn_index;
    let bases = list_segments(fs, dir).unwrap();
    let Some((facts, _)) = crate::compaction::headers::gather(fs, dir, &bases).unwrap() else {
        return;
    };
    let never = crate::compaction::rules::seed::Horizon {
        now: i64::MIN,
        delete_retention_ms: i64::MAX,
    };
    let plan = crate::compaction::rules::txn::decide(&facts, 0, i64::MAX, never);
    for entry in plan.entries.iter().filter(|e| e.last_offset >= from) {
        let base = *bases.iter().rfind(|&&b| b <= entry.last_offset).unwrap();
        let path = dir.join(filename::build(base, TXN_INDEX_SUFFIX));
        let mut entries = if fs.exists(&path) {
            let found = txn_index::decode(&fs.read_all(&path).unwrap()).unwrap();
            fs.remove_file(&path).unwrap();
            found
        } else {
            Vec::new()
        };
        entries.push(*entry);
        fs.write_new(&path, &txn_index::encode(&entries)).unwrap();
        fs.sync_file(&path).unwrap();
    }
}

/// Damages a random segment of `dir`: one bit anywhere (the batch checks see
/// it), or a record's length made negative in an uncompressed batch whose
/// CRC-32C is made right again (the record walk sees it).
fn damage(fs: &SimFs, dir: &Path, rng: &mut Rng) {
    let bases = list_segments(fs, dir).unwrap();
    let base = bases[rng.below(bases.len() as u64) as usize];
    let path = dir.join(filename::build(base, LOG_SUFFIX));
    let mut bytes = fs.read_all(&path).unwrap();
    if bytes.is_empty() {
        return;
    }
    let Ok(batches) = crate::compaction::view::batches(&path, base, &bytes) else {
        return; // damaged already
    };
    if rng.chance(50) {
        // A bit the CRC-32C covers (damage to a base offset, which it does not
        // cover, can make both passes panic: a separate problem).
        let batch = &batches[rng.below(batches.len() as u64) as usize];
        let covered = batch.bytes.len() - ATTRIBUTES_OFFSET;
        let at = batch.position as usize + ATTRIBUTES_OFFSET + rng.below(covered as u64) as usize;
        bytes[at] ^= 1 << rng.below(8);
    } else {
        // (position, size, record starts) of the uncompressed batches.
        let mut uncompressed = Vec::new();
        for batch in batches {
            let Ok((view, size)) = BatchView::decode(batch.bytes) else {
                return;
            };
            if view.is_compressed() {
                continue;
            }
            let mut records = view.records();
            let mut starts = Vec::new();
            loop {
                let at = records.consumed_bytes();
                match records.next() {
                    Some(Ok(_)) => starts.push(at),
                    _ => break,
                }
            }
            if !starts.is_empty() {
                uncompressed.push((batch.position as usize, size, starts));
            }
        }
        if uncompressed.is_empty() {
            return;
        }
        let (start, size, starts) = &uncompressed[rng.below(uncompressed.len() as u64) as usize];
        let record = starts[rng.below(starts.len() as u64) as usize];
        bytes[start + RECORDS_OFFSET + record] = 0x01; // a varint of -1
        let crc = crate::format::crc::crc32c(&bytes[start + ATTRIBUTES_OFFSET..start + size]);
        bytes[start + CRC_OFFSET..start + CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    }
    fs.remove_file(&path).unwrap();
    fs.write_new(&path, &bytes).unwrap();
    fs.sync_file(&path).unwrap();
}

/// A temp dir's files: (name, bytes), by name.
type Files = Vec<(String, Vec<u8>)>;

/// The temp dir's files, by name.
fn temp_files(fs: &SimFs, paths: &InstallPaths) -> Files {
    let mut names = fs.list_dir(&paths.tmp).unwrap();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let bytes = fs.read_all(&paths.tmp.join(&name)).unwrap();
            (name, bytes)
        })
        .collect()
}

/// One pass of `pass` (the reference or the tuned one) over `dir`: its temp dir
/// and report, or its error; the temp dir stays for the install.
fn run_pass(
    fs: &SimFs,
    dir: &Path,
    options: CompactOptions,
    clean: CleanOptions,
    tuned: bool,
) -> std::result::Result<(Files, crate::compaction::Built), String> {
    let paths = InstallPaths::new(dir).unwrap();
    let bases = list_segments(fs, dir).unwrap();
    let clean_point_before = read_clean_point(fs, dir, bases[0], *bases.last().unwrap()).unwrap();
    let from = BuildFrom {
        bases: None,
        active_len: None,
        copy_active: true,
    };
    let inputs = BuildInputs {
        paths: &paths,
        bases: &bases,
        clean_point_before,
        index_interval_bytes: 64,
        carry_point: true,
        from: &from,
    };
    let built = if tuned {
        crate::segment::files::map_segments(fs, dir, &bases[..bases.len() - 1])
            .and_then(|closed| run(fs, dir, options, clean, &inputs, closed))
            .and_then(|pass| crate::compaction::finish::finish_pass(fs, dir, &inputs, pass))
    } else {
        crate::compaction::reference::kafka::build(fs, dir, options, clean, inputs)
    }
    .map_err(|e| format!("{e:?}"))?;
    Ok((temp_files(fs, &paths), built))
}

/// What the cleanings of one seed met (the generator's coverage).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Met {
    /// Cleanings compared.
    compared: u64,
    /// Cleanings of a log holding transactional data.
    transactional: u64,
    /// ... with aborted data in a closed segment (removed where cleaned).
    aborted_closed: u64,
    /// ... with aborted data in the active segment.
    aborted_active: u64,
    /// ... with an open transaction holding the first uncleanable offset back.
    held_back: u64,
    /// Markers a cleaning stamped with a delete horizon.
    markers_stamped: u64,
    /// Markers a cleaning removed (past their horizon).
    markers_removed: u64,
    /// Batches a cleaning kept as empty batches (rule 5), and empty batches
    /// it removed (their producer expired).
    emptied: u64,
    empty_removed: u64,
    /// Cleanings of a damaged log.
    damaged: u64,
    /// ... that failed (both passes, with the same error).
    damaged_failed: u64,
}

impl Met {
    fn add(&mut self, other: Met) {
        self.compared += other.compared;
        self.transactional += other.transactional;
        self.aborted_closed += other.aborted_closed;
        self.aborted_active += other.aborted_active;
        self.held_back += other.held_back;
        self.markers_stamped += other.markers_stamped;
        self.markers_removed += other.markers_removed;
        self.emptied += other.emptied;
        self.empty_removed += other.empty_removed;
        self.damaged += other.damaged;
        self.damaged_failed += other.damaged_failed;
    }

    /// The transaction facts of `dir` as a cleaning finds them.
    fn observe(&mut self, fs: &SimFs, dir: &Path) {
        let bases = list_segments(fs, dir).unwrap();
        let Ok(Some((facts, closed))) = crate::compaction::headers::gather(fs, dir, &bases) else {
            return;
        };
        self.transactional += 1;
        let never = crate::compaction::rules::seed::Horizon {
            now: i64::MIN,
            delete_retention_ms: i64::MAX,
        };
        let plan = crate::compaction::rules::txn::decide(&facts, closed, i64::MAX, never);
        let aborted = |range: Range<usize>| range.into_iter().any(|i| plan.aborted.get(i));
        self.aborted_closed += u64::from(aborted(0..closed));
        self.aborted_active += u64::from(aborted(closed..facts.len()));
        let active_base = *bases.last().unwrap();
        let t = crate::compaction::rules::txn::KafkaTxn::decide(&facts, closed);
        self.held_back += u64::from(t.bound(active_base, &bases) < active_base);
    }
}

/// The control batches of `dir` (up to the first undecodable batch of each
/// segment): base offset -> stamped with a delete horizon.
fn markers(fs: &SimFs, dir: &Path) -> std::collections::BTreeMap<i64, bool> {
    batch_walk(fs, dir, |b| {
        b.is_control().then(|| b.delete_horizon().is_some())
    })
}

/// The batches of `dir` with no record: base offset -> a marker.
fn empties(fs: &SimFs, dir: &Path) -> std::collections::BTreeMap<i64, bool> {
    batch_walk(fs, dir, |b| b.records.is_empty().then(|| b.is_control()))
}

/// `pick` of every batch of `dir` (up to the first undecodable batch of each
/// segment), by base offset.
fn batch_walk(
    fs: &SimFs,
    dir: &Path,
    pick: impl Fn(&RecordBatch) -> Option<bool>,
) -> std::collections::BTreeMap<i64, bool> {
    let mut out = std::collections::BTreeMap::new();
    for base in list_segments(fs, dir).unwrap() {
        let path = crate::segment::files::segment_path(dir, base, LOG_SUFFIX);
        let Ok(bytes) = fs.read_all(&path) else {
            continue;
        };
        let mut at = 0;
        while let Some(Ok((batch, used))) = bytes.get(at..).map(decode) {
            if let Some(value) = pick(&batch) {
                out.insert(batch.base_offset, value);
            }
            at += used;
        }
    }
    out
}

/// Cleans a random log three times, the clock advancing and batches appended
/// between cleanings, with both passes from the same directory each time: the
/// same files (segments, `.txnindex`), byte for byte, and the same report (or
/// the same error); the tuned pass's result is installed for the next cleaning.
fn compare_on_seed(seed: u64) -> Met {
    let mut rng = Rng(seed);
    let fs = SimFs::new();
    let dir = PathBuf::from(format!("/log-{seed}"));
    let mut gen = random_log(&fs, &dir, &mut rng);
    let paths = InstallPaths::new(&dir).unwrap();
    let mut now = rng.below(1_000) as i64;
    let mut met = Met::default();
    for cleaning in 0..3 {
        if cleaning > 0 {
            append_more(&fs, &dir, &mut rng, &mut gen);
        }
        let damaged = cleaning == 2 && rng.chance(25);
        if damaged {
            // One or two damages: which one the passes report is checked too.
            for _ in 0..1 + rng.below(2) {
                damage(&fs, &dir, &mut rng);
            }
            met.damaged += 1;
        }
        met.observe(&fs, &dir);
        let markers_before = markers(&fs, &dir);
        let empties_before = empties(&fs, &dir);
        let options = CompactOptions {
            now,
            delete_retention_ms: rng.below(600) as i64,
            segment_bytes: 150 + rng.below(2_000),
        };
        let clean = CleanOptions {
            dedupe_buffer_bytes: rng.chance(25).then(|| 24 * (1 + rng.below(6))),
            min_compaction_lag_ms: if rng.chance(25) {
                rng.below(800) as i64
            } else {
                0
            },
            policy: crate::compaction::CompactionPolicy::Kafka,
            producer_id_expiration_ms: if rng.chance(60) {
                1 + rng.below(400) as i64
            } else {
                crate::compaction::PRODUCER_ID_EXPIRATION_MS_DEFAULT
            },
        };
        let reference = run_pass(&fs, &dir, options, clean, false);
        if fs.exists(&paths.tmp) {
            fs.remove_dir_all(&paths.tmp).unwrap();
        }
        let tuned = run_pass(&fs, &dir, options, clean, true);
        match (&reference, &tuned) {
            (Ok((want, want_built)), Ok((got, got_built))) => {
                assert_eq!(got.len(), want.len(), "seed {seed}");
                for ((name, bytes), (want_name, want_bytes)) in got.iter().zip(want) {
                    assert_eq!(name, want_name, "seed {seed}");
                    assert!(bytes == want_bytes, "seed {seed}: {name} differs");
                }
                // The reference's map reports no bytes; the tuned one its own.
                let report = CompactionReport {
                    map_bytes: 0,
                    map_bytes_peak: 0,
                    ..got_built.report.clone()
                };
                assert_eq!(report, want_built.report, "seed {seed}");
                assert_eq!(
                    format!("{:?}", got_built.manifest),
                    format!("{:?}", want_built.manifest),
                    "seed {seed}"
                );
            }
            (Err(want), Err(got)) => {
                assert_eq!(got, want, "seed {seed}");
                met.damaged_failed += u64::from(damaged);
            }
            _ => panic!(
                "seed {seed}: reference {:?}, tuned {:?}",
                reference.as_ref().err(),
                tuned.as_ref().err()
            ),
        }
        met.compared += 1;
        match tuned {
            Ok((_, built)) => {
                crate::install::install(&fs, &dir, &built.manifest).unwrap();
                let after = markers(&fs, &dir);
                let empties_after = empties(&fs, &dir);
                met.emptied += empties_after
                    .keys()
                    .filter(|b| !empties_before.contains_key(b))
                    .count() as u64;
                met.empty_removed += empties_before
                    .keys()
                    .filter(|b| !empties_after.contains_key(b))
                    .count() as u64;
                for (base, stamped) in &markers_before {
                    match after.get(base) {
                        None => met.markers_removed += 1,
                        Some(true) if !stamped => met.markers_stamped += 1,
                        Some(_) => {}
                    }
                }
            }
            Err(_) => {
                if fs.exists(&paths.tmp) {
                    fs.remove_dir_all(&paths.tmp).unwrap();
                }
            }
        }
        now += rng.below(700) as i64;
    }
    met
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The tuned pass writes the reference pass's bytes.
    #[test]
    fn the_tuned_pass_writes_the_reference_bytes(seed in any::<u64>()) {
        prop_assert_eq!(compare_on_seed(seed).compared, 3);
    }
}

/// The producers of one walk (`txn::walk`, which both passes take) against the
/// walk of their own the passes took before (`producers::reference`), on the
/// random logs (appended to, sometimes damaged) at a few clocks and
/// expirations: the same active producers wherever the walk succeeds, and an
/// error wherever the reference's walk fails. Returns the producers compared.
fn compare_producers_on_seed(seed: u64) -> usize {
    use crate::compaction::reference::producers as reference;
    use crate::compaction::rules::retain_empty::ActiveProducers;
    let mut rng = Rng(seed);
    let fs = SimFs::new();
    let dir = PathBuf::from(format!("/producers-{seed}"));
    let mut gen = random_log(&fs, &dir, &mut rng);
    let mut compared = 0;
    for round in 0..3 {
        if round > 0 {
            append_more(&fs, &dir, &mut rng, &mut gen);
        }
        if round == 2 && rng.chance(25) {
            damage(&fs, &dir, &mut rng);
        }
        let bases = list_segments(&fs, &dir).unwrap();
        let walk = crate::compaction::headers::walk(&fs, &dir, &bases);
        for _ in 0..3 {
            let now = rng.below(1_500) as i64;
            let expiration_ms = 1 + rng.below(800) as i64;
            let want = reference::gather(&fs, &dir, &bases, now, expiration_ms);
            match (&walk, want) {
                (Ok(walk), Ok(want)) => {
                    let got = ActiveProducers::of_facts(&walk.batches, now, expiration_ms);
                    assert_eq!(got, want, "seed {seed}");
                    compared += PRODUCERS.iter().filter(|&&p| want.get(p).is_some()).count();
                }
                (Ok(_), Err(e)) => panic!("seed {seed}: only the reference fails: {e:?}"),
                // The walk checks control batches too: it may fail alone.
                (Err(_), _) => {}
            }
        }
    }
    compared
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// One walk finds the producers the reference walk finds.
    #[test]
    fn the_one_walk_finds_the_reference_producers(seed in any::<u64>()) {
        compare_producers_on_seed(seed);
    }
}

#[test]
fn the_producer_comparison_meets_active_producers() {
    // The comparison above compares something: over fixed seeds, active
    // producers of the transactional logs (seeds 0..64 meet 585, 543 without
    // default features; SplitMix64 is fixed).
    let compared: usize = (0..64).map(compare_producers_on_seed).sum();
    assert!(compared >= 400, "{compared}");
}

#[test]
fn the_random_logs_meet_every_transaction_case() {
    // The proptest's generator reaches what it claims to compare: over fixed
    // seeds, cleanings of transactional logs with aborted data in closed and
    // active segments and an open transaction holding the cleaner back, markers
    // stamped with a delete horizon and markers removed past it, batches kept
    // as empty batches and empty batches removed, and
    // damaged logs that both passes reject with the same error.
    let mut met = Met::default();
    for seed in 0..128 {
        met.add(compare_on_seed(seed));
    }
    assert_eq!(met.compared, 3 * 128);
    // Seeds 0..128 meet 220, 80, 16, 129, 65 stamped and 14 removed markers,
    // 23 batches emptied and 2 empty ones removed, 36 and 32 (all features;
    // without default features 219, 88, 11, 133, 59, 13, 27, 4, 28, 23;
    // SplitMix64 is fixed).
    assert!(met.transactional >= 150, "{met:?}");
    assert!(met.aborted_closed >= 40, "{met:?}");
    assert!(met.aborted_active >= 8, "{met:?}");
    assert!(met.held_back >= 100, "{met:?}");
    assert!(met.markers_stamped >= 50, "{met:?}");
    assert!(met.markers_removed >= 12, "{met:?}");
    assert!(met.emptied >= 15, "{met:?}");
    assert!(met.empty_removed >= 1, "{met:?}");
    assert!(met.damaged >= 16, "{met:?}");
    assert!(met.damaged_failed >= 12, "{met:?}");
}

#[test]
fn a_rebuilt_batch_is_the_reference_encoding() {
    // Dropped first record (base timestamp moves), a stamped tombstone, both
    // timestamp types: `rebuild` against `clean_batch` + `encode`.
    for log_append_time in [false, true] {
        let mut batch = RecordBatch::build(
            10,
            &[
                NewRecord::new(Some(b"a".to_vec()), Some(b"1".to_vec()), 500),
                NewRecord::new(None, Some(b"x".to_vec()), 90),
                NewRecord::new(Some(b"b".to_vec()), None, 700),
                NewRecord::new(Some(b"a".to_vec()), Some(b"2".to_vec()), 100),
            ],
        );
        if log_append_time {
            batch = batch.with_log_append_time(900);
        }
        let bytes = batch.encode();
        let map = crate::compaction::rules::kafka::KafkaMap::build([&batch], None).unwrap();
        let mut keyless = 0;
        let BatchOutcome::Rewritten(want) =
            crate::compaction::rules::kafka::clean_batch(&batch, &map, 1_000, 50, &mut keyless)
        else {
            panic!("partly kept and stamped");
        };
        let (view, _) = BatchView::decode(&bytes).unwrap();
        let records: Vec<RecordView<'_>> = view.records().map(|r| r.unwrap()).collect();
        let keep = [false, false, true, true];
        let mut out = Vec::new();
        let facts = rebuild(&view, &records, &keep, Some(1_050), &mut out);
        assert_eq!(out, want.encode());
        assert_eq!(facts.records, 2);
        assert_eq!(facts.max_timestamp, want.max_timestamp);
        assert_eq!(facts.last_offset, 13);
    }
}

//! Cost of SimFs crash images, against a baseline measured in the same run.
//!
//! The crash sweep opens tens of thousands of images, so an image must cost far less
//! than copying the data. Baseline: `snapshot()`, a deep copy of every file of the
//! same state. Measured: `crash_images(PowerLoss, all)` (reported per image by
//! dividing by the image count printed at start) and one `crash_image_with` replay.
//! Report the ratio measured / baseline, never the absolute times.

use std::path::{Path, PathBuf};

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use seglog::fs::sim::{CrashMode, SimFs};
use seglog::fs::FileSystem;

/// A log directory as the engine leaves it mid-append: three closed segments
/// (64 KiB each, synced), an active segment with 256 KiB synced and five unsynced
/// 1 KiB batches, index files, and a checkpoint replaced by rename without a dir sync.
fn log_like_state() -> SimFs {
    let fs = SimFs::new();
    let dir = Path::new("/log/topic-0");
    fs.create_dir_all(dir).unwrap();
    let segment = |base: u64| dir.join(format!("{base:020}.log"));
    let index = |base: u64| dir.join(format!("{base:020}.index"));
    for base in [0u64, 1000, 2000] {
        fs.write_new(&segment(base), &vec![7u8; 64 << 10]).unwrap();
        fs.write_new(&index(base), &vec![1u8; 4 << 10]).unwrap();
    }
    fs.write_new(&segment(3000), &vec![9u8; 256 << 10]).unwrap();
    fs.write_new(&index(3000), &[]).unwrap();
    fs.write_new(&dir.join("ckpt"), b"0").unwrap();
    fs.settle();
    for _ in 0..5 {
        fs.append(&segment(3000), &[5u8; 1024]).unwrap();
    }
    fs.append(&index(3000), &[2u8; 8]).unwrap();
    let tmp: PathBuf = dir.join("ckpt.tmp");
    fs.write_new(&tmp, b"3000").unwrap();
    fs.sync_file(&tmp).unwrap();
    fs.rename(&tmp, &dir.join("ckpt")).unwrap();
    fs
}

fn crash_images(c: &mut Criterion) {
    let fs = log_like_state();
    let images = fs.crash_images(CrashMode::PowerLoss, usize::MAX);
    let lost = images.last().map(|i| i.lost.clone()).unwrap_or_default();
    eprintln!("simfs bench: {} power-loss images per state", images.len());
    let mut group = c.benchmark_group("simfs");
    group.bench_function("baseline_snapshot_deep_copy", |b| {
        b.iter(|| black_box(fs.snapshot()))
    });
    group.bench_function("crash_images_all", |b| {
        b.iter(|| black_box(fs.crash_images(CrashMode::PowerLoss, usize::MAX)))
    });
    group.bench_function("crash_image_with_one", |b| {
        b.iter(|| black_box(fs.crash_image_with(&lost).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, crash_images);
criterion_main!(benches);

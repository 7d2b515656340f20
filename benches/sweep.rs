//! Cost of the crash sweep and of a conformance case, each against a baseline
//! measured in the same run. Report the ratios, never the absolute times.
//!
//! * sweep: baseline = one uninterrupted run of the workload on SimFs (engine only);
//!   measured = the default sweep of the same workload (every crash point, every
//!   image, nested recovery crashes). The ratio divided by the images checked (printed
//!   at start) is the cost of one image in uninterrupted runs.
//! * conformance: baseline = the case's operations on the engine alone on SimFs;
//!   measured = `run_case` (engine and spec in lockstep, every comparison, crashes).

use std::sync::Arc;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use seglog::fs::sim::SimFs;
use seglog::fs::FileSystem;
use seglog::log::Log;
use seglog_suite::conformance::{case_config, case_steps, run_case, Backend, Step};
use seglog_suite::sweep::{named_workloads, run_to_end, sweep, SweepOptions};
use seglog_suite::workload::engine;

fn sweep_bench(c: &mut Criterion) {
    let workload = named_workloads()
        .into_iter()
        .find(|w| w.name == "compact-tombstones")
        .expect("named workload");
    let options = SweepOptions::default();
    let report = sweep(&workload, &options, |_, _| {});
    assert!(report.violations.is_empty());
    eprintln!(
        "sweep bench: {} crash points, {} disk images per sweep of {}",
        report.crash_points, report.disk_images, workload.name
    );
    let mut group = c.benchmark_group("sweep");
    group.sample_size(10);
    group.bench_function("baseline_uninterrupted_run", |b| {
        b.iter(|| {
            let fs = Arc::new(SimFs::new());
            run_to_end(&workload, &fs).expect("runs");
            black_box(fs.mutating_ops())
        })
    });
    group.bench_function("default_sweep", |b| {
        b.iter(|| black_box(sweep(&workload, &options, |_, _| {}).disk_images))
    });
    group.finish();
}

fn conformance_bench(c: &mut Criterion) {
    let steps = case_steps(1, 40);
    let ops: Vec<_> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Op(op) => Some(op.clone()),
            _ => None,
        })
        .collect();
    let mut group = c.benchmark_group("conformance");
    group.sample_size(10);
    group.bench_function("baseline_engine_ops_only", |b| {
        b.iter(|| {
            let fs: Arc<dyn FileSystem> = Arc::new(SimFs::new());
            let (mut log, _) = Log::open_with(fs, "/data/log", case_config()).expect("open");
            for op in &ops {
                black_box(engine::apply(&mut log, op).expect("applies"));
            }
        })
    });
    group.bench_function("run_case_sim", |b| {
        b.iter(|| black_box(run_case(&steps, Backend::Sim, "manifest").expect("conforms")))
    });
    group.finish();
}

criterion_group!(benches, sweep_bench, conformance_bench);
criterion_main!(benches);

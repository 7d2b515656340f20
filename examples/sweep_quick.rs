//! Runs the crash sweep over the named workloads and prints its numbers:
//! `cargo run --release --example sweep_quick -- [variant] [images_per_point] [recovery_crash_images]`.
fn main() {
    let mut args = std::env::args().skip(1);
    let variant = args.next().unwrap_or_else(|| "manifest".into());
    let mut options = seglog::sweep::SweepOptions::default();
    if let Some(n) = args.next().and_then(|s| s.parse().ok()) {
        options.images_per_point = n;
    }
    if let Some(n) = args.next().and_then(|s| s.parse().ok()) {
        options.recovery_crash_images = n;
    }
    let started = std::time::Instant::now();
    let (mut images, mut violations) = (0, 0);
    for mut workload in seglog::sweep::named_workloads() {
        workload.variant = variant.clone();
        let report = seglog::sweep::sweep(&workload, &options, |_, _| {});
        images += report.disk_images;
        violations += report.violations.len();
        println!(
            "{}: ops {} points {} images {} violations {} in {:.2}s",
            report.workload,
            report.operations,
            report.crash_points,
            report.disk_images,
            report.violations.len(),
            report.seconds
        );
        for v in report.violations.iter().take(3) {
            println!("  {v}");
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "total: {images} disk images, {violations} violations in {seconds:.2}s ({:.0} images/s)",
        images as f64 / seconds.max(1e-9)
    );
}

fn main() {
    let options = seglog::sweep::SweepOptions::default();
    let variant = std::env::args().nth(1).unwrap_or_else(|| "manifest".into());
    for mut workload in seglog::sweep::named_workloads() {
        workload.variant = variant.clone();
        let report = seglog::sweep::sweep(&workload, &options, |_, _| {});
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
}

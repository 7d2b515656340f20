//! Runs the conformance check and prints its numbers:
//! `cargo run --release --example conformance_quick -- [cases] [ops_per_case] [seed] [variant]`.
fn main() {
    let mut args = std::env::args().skip(1);
    let cases = args.next().and_then(|s| s.parse().ok()).unwrap_or(200);
    let ops_per_case = args.next().and_then(|s| s.parse().ok()).unwrap_or(40);
    let seed = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let variant = args.next().unwrap_or_else(|| "manifest".into());
    let options = seglog::conformance::ConformanceOptions {
        cases,
        ops_per_case,
        seed,
        variant,
    };
    let report = seglog::conformance::run_random(&options, |_| {});
    println!(
        "cases {} steps {} crashes {} (lost tail {}) reads {} in {:.2}s: sim {:.2}s ({:.1} cases/s), disk {:.2}s ({:.1} cases/s)",
        report.cases,
        report.steps,
        report.crashes,
        report.crashes_lost_tail,
        report.reads,
        report.seconds,
        report.sim_seconds,
        report.cases as f64 / report.sim_seconds.max(1e-9),
        report.disk_seconds,
        report.cases as f64 / report.disk_seconds.max(1e-9),
    );
    for failure in &report.failures {
        println!("{failure}");
        println!("{}", failure.to_scenario(&options.variant).to_toml());
    }
}

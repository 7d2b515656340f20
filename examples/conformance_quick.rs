//! Runs the conformance check and prints its numbers:
//! `cargo run --release --example conformance_quick -- [cases] [ops_per_case] [seed] [variant]`.
fn main() {
    let mut args = std::env::args().skip(1);
    let cases = args.next().and_then(|s| s.parse().ok()).unwrap_or(200);
    let ops_per_case = args.next().and_then(|s| s.parse().ok()).unwrap_or(40);
    let seed = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let variant = args.next().unwrap_or_else(|| "manifest".into());
    let options = seglog_suite::conformance::ConformanceOptions {
        cases,
        ops_per_case,
        seed,
        variant,
        ..Default::default()
    };
    if std::env::var("SIM_ONLY").is_ok() {
        // Bug hunting: SimFs only, many cases.
        let started = std::time::Instant::now();
        let mut steps_total = 0;
        for case in 0..cases {
            let seed = seglog_suite::conformance::case_seed(seed, case);
            let steps = seglog_suite::conformance::case_steps(seed, ops_per_case);
            match seglog_suite::conformance::run_case(
                &steps,
                seglog_suite::conformance::Backend::Sim,
                &options.variant,
            ) {
                Ok(stats) => steps_total += stats.steps,
                Err(d) => {
                    let d = seglog_suite::conformance::shrink(d, |s| {
                        seglog_suite::conformance::run_case(
                            s,
                            seglog_suite::conformance::Backend::Sim,
                            &options.variant,
                        )
                        .err()
                    });
                    println!("seed {seed}: {d}");
                    return;
                }
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "sim only: {cases} cases, {steps_total} steps in {seconds:.2}s ({:.1} cases/s)",
            cases as f64 / seconds
        );
        return;
    }
    let report = seglog_suite::conformance::run_random(&options, |_| {});
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

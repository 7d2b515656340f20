fn main() {
    seglog_suite::cli::main()
}

fn main() {
    seglog::cli::main()
}

fn main() {
    println!("{{}}");
}

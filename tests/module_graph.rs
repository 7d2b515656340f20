//! The modules of `src/compaction` import each other in one direction: no module
//! reaches, through its imports, back to itself.
//!
//! Read from the source with `syn`: every `use` tree and every path in code
//! (expressions, types, patterns, and the paths inside macro invocations) that names
//! a sibling through `super::`, `crate::compaction::` or a re-export of
//! `compaction/mod.rs` is an edge from the file's top-level module to that sibling.
//! The rule sets in `src/compaction/rules` and the planner (`plan.rs`) do no IO: their non-test code names no
//! `FileSystem`, nothing of `std::fs`, `std::io`, `std::path`, `std::net`,
//! `std::process` or `crate::fs`, and of compaction's own modules only the pure
//! ones ([`PURE`]).
//!
//! Items under `#[cfg(test)]` do not count: a unit test may drive its layer through
//! the whole pipeline above it. Doc links do not either (they are attributes, not
//! paths). docs/design.md, "Compaction": the layers and their order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// The directory whose child modules must form no cycle.
const LAYERED: &str = "src/compaction";

/// The directory whose files must do no IO.
const RULES: &str = "src/compaction/rules";

/// The modules of `src/compaction` the rules may use: no IO in any of them.
const PURE: &[&str] = &["rules", "bitmap", "map", "view", "plan", "walker"];

/// The planner: pure like the rules it consults.
const PLANNER: &str = "src/compaction/plan.rs";

/// Paths that reach IO.
const IO_PREFIXES: &[&[&str]] = &[
    &["std", "fs"],
    &["std", "io"],
    &["std", "path"],
    &["std", "net"],
    &["std", "process"],
    &["crate", "fs"],
];

/// The module path (from the crate root) of a file under `src/`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("a file under src/");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.strip_suffix(".rs").expect("a .rs file").to_owned();
    if stem != "mod" && stem != "lib" {
        parts.push(stem);
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read a source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// Every path a `use` tree names, with the names it imports as last segments.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            use_paths(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) => {
            let mut full = prefix.clone();
            full.push(name.ident.to_string());
            out.push(full);
        }
        syn::UseTree::Rename(rename) => {
            let mut full = prefix.clone();
            full.push(rename.ident.to_string());
            out.push(full);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(group) => {
            for item in &group.items {
                use_paths(item, prefix, out);
            }
        }
    }
}

/// The absolute module path a path names, when it starts with `crate`, `self` or
/// `super` (other paths are local names, extern crates or names a `use` brought in,
/// whose `use` is its own edge).
fn resolve(module: &[String], segments: &[String]) -> Option<Vec<String>> {
    let first = segments.first()?;
    let mut base: Vec<String>;
    let mut rest = segments;
    match first.as_str() {
        "crate" => {
            base = Vec::new();
            rest = &segments[1..];
        }
        "self" => {
            base = module.to_vec();
            rest = &segments[1..];
        }
        "super" => {
            base = module.to_vec();
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The paths one file names, each resolved against the module it appears in.
struct Names {
    module: Vec<String>,
    found: Vec<Vec<String>>,
    /// Every path as written (unresolved), for the IO check.
    written: Vec<Vec<String>>,
}

impl Names {
    fn new(module: Vec<String>) -> Self {
        Names {
            module,
            found: Vec::new(),
            written: Vec::new(),
        }
    }

    fn record(&mut self, segments: &[String]) {
        self.written.push(segments.to_vec());
        if let Some(path) = resolve(&self.module, segments) {
            self.found.push(path);
        }
    }

    /// `a::b::c` sequences inside a macro's tokens (a macro body is not parsed).
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let mut path: Vec<String> = Vec::new();
        let mut colons = 0;
        for token in tokens {
            match token {
                TokenTree::Ident(ident) if path.is_empty() || colons == 2 => {
                    path.push(ident.to_string());
                    colons = 0;
                }
                TokenTree::Punct(punct) if punct.as_char() == ':' && !path.is_empty() => {
                    colons += 1;
                }
                TokenTree::Group(group) => {
                    self.flush(&mut path);
                    self.scan_tokens(group.stream());
                    colons = 0;
                }
                other => {
                    self.flush(&mut path);
                    colons = 0;
                    if let TokenTree::Ident(ident) = other {
                        path.push(ident.to_string());
                    }
                }
            }
        }
        self.flush(&mut path);
    }

    fn flush(&mut self, path: &mut Vec<String>) {
        if path.len() > 1 {
            let segments = std::mem::take(path);
            self.record(&segments);
        }
        path.clear();
    }
}

/// `#[cfg(test)]`, exactly (a `cfg(any(test, feature = ..))` item is built outside tests).
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

impl<'ast> Visit<'ast> for Names {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Type(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !test_only(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if item.content.is_some() {
            self.module.push(item.ident.to_string());
            syn::visit::visit_item_mod(self, item);
            self.module.pop();
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&item.tree, &mut Vec::new(), &mut paths);
        for path in paths {
            self.record(&path);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.record(&segments);
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.scan_tokens(mac.tokens.clone());
    }
}

/// The edges between the child modules of `layered` (a module path such as
/// `["compaction"]`): `from -> {to}`.
fn module_edges(src: &Path, layered: &[String]) -> BTreeMap<String, BTreeSet<String>> {
    let dir = src.join(layered.join("/"));
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    files.sort();

    let mut children = BTreeSet::new();
    let mut parsed = Vec::new();
    for file in &files {
        let module = module_of(src, file);
        if let Some(child) = module.get(layered.len()) {
            children.insert(child.clone());
        }
        let text = std::fs::read_to_string(file).expect("read a source file");
        let ast = syn::parse_file(&text)
            .unwrap_or_else(|err| panic!("{} does not parse: {err}", file.display()));
        parsed.push((module, ast));
    }

    // Names the parent module re-exports (`pub use child::{A, B}`) stand for their child.
    let mut reexports: BTreeMap<String, String> = BTreeMap::new();
    for (module, ast) in &parsed {
        if module.as_slice() != layered {
            continue;
        }
        for item in &ast.items {
            if let syn::Item::Use(item) = item {
                let mut paths = Vec::new();
                use_paths(&item.tree, &mut Vec::new(), &mut paths);
                for path in paths {
                    if let (Some(child), Some(name)) = (path.first(), path.last()) {
                        if children.contains(child) && path.len() > 1 {
                            reexports.insert(name.clone(), child.clone());
                        }
                    }
                }
            }
        }
    }

    let mut edges: BTreeMap<String, BTreeSet<String>> = children
        .iter()
        .map(|child| (child.clone(), BTreeSet::new()))
        .collect();
    for (module, ast) in parsed {
        let Some(from) = module.get(layered.len()).cloned() else {
            continue;
        };
        let mut names = Names::new(module);
        names.visit_file(&ast);
        for path in names.found {
            if !path.starts_with(layered) {
                continue;
            }
            let Some(named) = path.get(layered.len()) else {
                continue;
            };
            let to = if children.contains(named) {
                named.clone()
            } else if let Some(child) = reexports.get(named) {
                child.clone()
            } else {
                continue;
            };
            if to != from {
                edges.get_mut(&from).expect("a child module").insert(to);
            }
        }
    }
    edges
}

/// One cycle of `edges`, if there is any (depth-first search, the path on the stack).
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        marks.insert(node.to_owned(), Mark::Open);
        stack.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            match marks.get(next.as_str()) {
                Some(Mark::Open) => {
                    let start = stack.iter().position(|n| n == next).expect("on the stack");
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(Mark::Done) => {}
                None => {
                    if let Some(cycle) = visit(next, edges, marks, stack) {
                        return Some(cycle);
                    }
                }
            }
        }
        stack.pop();
        marks.insert(node.to_owned(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in edges.keys() {
        if !marks.contains_key(node) {
            if let Some(cycle) = visit(node, edges, &mut marks, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

/// The modules on some cycle (a node reaches itself), for the failure message.
fn on_cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = edges[from].iter().map(String::as_str).collect();
        while let Some(node) = todo.pop() {
            if seen.insert(node.to_owned()) {
                todo.extend(edges[node].iter().map(String::as_str));
            }
        }
        seen
    };
    edges
        .keys()
        .filter(|node| reach(node).contains(*node))
        .cloned()
        .collect()
}

fn layered_module() -> Vec<String> {
    LAYERED
        .strip_prefix("src/")
        .expect("under src/")
        .split('/')
        .map(str::to_owned)
        .collect()
}

/// Where the non-test code of the files under `dir` reaches IO: `(file, path)` for
/// each path naming `FileSystem`, starting with an [`IO_PREFIXES`] entry, or
/// naming a module of `src/compaction` outside [`PURE`].
fn io_reaches(src: &Path, dir: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    io_reaches_in(src, files)
}

/// [`io_reaches`] over the files `files`.
fn io_reaches_in(src: &Path, mut files: Vec<PathBuf>) -> Vec<(String, String)> {
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let ast = syn::parse_file(&text)
            .unwrap_or_else(|err| panic!("{} does not parse: {err}", file.display()));
        let module = module_of(src, &file);
        let mut names = Names::new(module.clone());
        names.visit_file(&ast);
        let shown = file
            .strip_prefix(src)
            .unwrap_or(&file)
            .display()
            .to_string();
        for written in &names.written {
            let resolved = resolve(&module, written).unwrap_or_else(|| written.clone());
            let io = written.iter().any(|s| s == "FileSystem")
                || IO_PREFIXES.iter().any(|prefix| {
                    resolved.len() >= prefix.len()
                        && resolved.iter().zip(prefix.iter()).all(|(a, b)| a == b)
                        || written.len() >= prefix.len()
                            && written.iter().zip(prefix.iter()).all(|(a, b)| a == b)
                })
                || (resolved.first().is_some_and(|s| s == "compaction")
                    && resolved.get(1).is_some_and(|m| !PURE.contains(&m.as_str())));
            if io {
                out.push((shown.clone(), written.join("::")));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Fails listing every IO reach `reaches` found in `what`.
fn assert_no_io(what: &str, reaches: &[(String, String)]) {
    assert!(
        reaches.is_empty(),
        "{what} reaches IO:\n{}",
        reaches
            .iter()
            .map(|(file, path)| format!("  {file}: {path}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_rules_do_no_io() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join(RULES);
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    assert!(files.len() >= 5, "{RULES} holds {} files", files.len());
    assert_no_io(RULES, &io_reaches(&root.join("src"), &dir));
}

#[test]
fn the_planner_does_no_io() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_no_io(
        PLANNER,
        &io_reaches_in(&root.join("src"), vec![root.join(PLANNER)]),
    );
}

/// The IO check finds each form it claims to: a `FileSystem` parameter, a
/// `std::fs` call, a `use` of `crate::fs`, an impure sibling through `super::super`;
/// and passes pure code and test-only IO.
#[test]
fn the_io_check_sees_each_form() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path().join("src");
    let rules = src.join("compaction").join("rules");
    std::fs::create_dir_all(&rules).expect("create the tree");
    let write = |name: &str, text: &str| std::fs::write(rules.join(name), text).expect("write");
    write("pure.rs", "use super::super::bitmap::Bitmap;\nuse std::collections::BTreeMap;\npub fn f(b: &Bitmap) -> usize { b.len() }\n#[cfg(test)]\nmod tests { fn t() { std::fs::read(\"x\").unwrap(); } }\n");
    assert!(io_reaches(&src, &rules).is_empty());
    write("a.rs", "pub fn f(fs: &dyn crate::fs::FileSystem) {}\n");
    write("b.rs", "pub fn g() { let _ = std::fs::read(\"x\"); }\n");
    write("c.rs", "use crate::fs::read_bounded;\n");
    write("d.rs", "pub fn h() { super::super::headers::walk(); }\n");
    let found: Vec<String> = io_reaches(&src, &rules)
        .into_iter()
        .map(|(file, _)| file)
        .collect();
    for name in ["a.rs", "b.rs", "c.rs", "d.rs"] {
        let file = format!("compaction/rules/{name}");
        assert!(found.contains(&file), "{file} not found in {found:?}");
    }
    assert!(!found.iter().any(|f| f.ends_with("pure.rs")));
}

#[test]
fn compaction_has_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = module_edges(&src, &layered_module());
    assert!(
        edges.len() > 10,
        "found only {} modules under {LAYERED}: the reader is broken",
        edges.len()
    );
    if let Some(cycle) = find_cycle(&edges) {
        let members = on_cycles(&edges);
        let listing: Vec<String> = members
            .iter()
            .map(|m| {
                let inside: Vec<&str> = edges[m]
                    .iter()
                    .filter(|t| members.contains(*t))
                    .map(String::as_str)
                    .collect();
                format!("  {m} -> {}", inside.join(", "))
            })
            .collect();
        panic!(
            "{LAYERED} has an import cycle: {}\n{} modules are on cycles:\n{}",
            cycle.join(" -> "),
            members.len(),
            listing.join("\n")
        );
    }
}

/// The reader sees each kind of reference it claims to (so a cycle cannot hide in a
/// form it skips): a grouped `use`, a `super::super` from an inline module, a path
/// in an expression, a path inside a macro, a re-export of the parent, a path in a
/// type; it skips `#[cfg(test)]` items and doc links; and a cycle through them is
/// found.
#[test]
fn the_reader_sees_every_kind_of_reference() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path().join("src");
    let layer = src.join("layer");
    std::fs::create_dir_all(layer.join("d")).expect("create the tree");
    let write = |path: &Path, text: &str| std::fs::write(path, text).expect("write a file");
    write(
        &layer.join("mod.rs"),
        "pub mod a; pub mod b; pub mod c; pub mod d; pub mod e; pub mod f;\npub use e::Thing;\n",
    );
    write(&layer.join("a.rs"), "use super::{b::{self, X}, c};\n");
    write(
        &layer.join("b.rs"),
        "mod inner { use super::super::c::Y; }\n#[cfg(test)] mod tests { use super::super::f::Y; }\n#[cfg(test)] fn t() { crate::layer::e::t(); }\n/// [`super::f`] is a doc link, not an edge.\npub struct X;\n",
    );
    write(
        &layer.join("c.rs"),
        "fn f() { let _ = crate::layer::d::g(); }\n",
    );
    write(
        &layer.join("d").join("mod.rs"),
        "pub fn g() { assert!(super::Thing::ok()); }\n",
    );
    write(&layer.join("e.rs"), "pub struct Thing;\n");
    write(
        &layer.join("f.rs"),
        "fn h(z: super::a::Z) -> super::a::Z { z }\n",
    );

    let edges = module_edges(&src, &["layer".to_owned()]);
    let to = |from: &str| -> Vec<&str> { edges[from].iter().map(String::as_str).collect() };
    assert_eq!(to("a"), ["b", "c"]);
    assert_eq!(to("b"), ["c"]);
    assert_eq!(to("c"), ["d"]);
    assert_eq!(to("d"), ["e"]);
    assert!(to("e").is_empty());
    assert_eq!(to("f"), ["a"]);
    assert_eq!(find_cycle(&edges), None);

    write(&layer.join("e.rs"), "pub struct Thing(super::b::X);\n");
    let edges = module_edges(&src, &["layer".to_owned()]);
    let cycle = find_cycle(&edges).expect("b -> c -> d -> e -> b is a cycle");
    assert_eq!(cycle.first(), cycle.last());
    assert_eq!(
        on_cycles(&edges),
        ["b", "c", "d", "e"].iter().map(|s| s.to_string()).collect()
    );
}

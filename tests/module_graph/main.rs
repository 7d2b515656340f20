//! The imports of the workspace run one way, and the compaction room's rules do no IO.
//!
//! Read from the source with `syn` (`reader.rs`): every `use` tree and every path in
//! code (expressions, types, patterns, and the paths inside macro invocations) is
//! resolved to the file that defines what it names (`workspace.rs`).
//! - Across each crate, a module names only modules of rows above its own in the
//!   layer table of docs/design.md, "Layers", and every top-level module has a row.
//! - Inside any module, no circle runs among its child modules, each taken with
//!   everything under it (a module's own file and its parts may use each other).
//! - The modules of `engine/src/compaction` form no cycle, the rule sets in
//!   `engine/src/compaction/rules` and the planner (`plan.rs`) do no IO: their non-test
//!   code names no `FileSystem`, nothing of `std::fs`, `std::io`, `std::path`,
//!   `std::net`, `std::process` or `crate::fs`, and of compaction's own modules only
//!   the pure ones ([`PURE`]).
//!
//! Items under `#[cfg(test)]` and files declared by a `#[cfg(test)] mod` do not count:
//! a unit test may drive its layer through the whole pipeline above it. Doc links
//! do not either (they are attributes, not paths).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

mod cycles;
mod reader;
mod workspace;

use cycles::{cycle_listing, find_cycle, on_cycles};
use reader::{module_of, resolve, rust_files, use_paths, Names};
use workspace::{Crate, Layers};

/// The engine's source directory.
const ENGINE_SRC: &str = "engine/src";

/// The directory whose child modules must form no cycle.
const LAYERED: &str = "engine/src/compaction";

/// The directory whose files must do no IO.
const RULES: &str = "engine/src/compaction/rules";

/// The modules of `engine/src/compaction` the rules may use: no IO in any of them.
const PURE: &[&str] = &["rules", "bitmap", "map", "view", "plan", "walker"];

/// The planner: pure like the rules it consults.
const PLANNER: &str = "engine/src/compaction/plan.rs";

/// Paths that reach IO.
const IO_PREFIXES: &[&[&str]] = &[
    &["std", "fs"],
    &["std", "io"],
    &["std", "path"],
    &["std", "net"],
    &["std", "process"],
    &["crate", "fs"],
];

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

fn layered_module() -> Vec<String> {
    LAYERED
        .strip_prefix("engine/src/")
        .expect("under engine/src/")
        .split('/')
        .map(str::to_owned)
        .collect()
}

/// Where the non-test code of the files under `dir` reaches IO: `(file, path)` for
/// each path naming `FileSystem`, starting with an [`IO_PREFIXES`] entry, or
/// naming a module of `engine/src/compaction` outside [`PURE`].
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
    assert_no_io(RULES, &io_reaches(&root.join(ENGINE_SRC), &dir));
}

#[test]
fn the_planner_does_no_io() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_no_io(
        PLANNER,
        &io_reaches_in(&root.join(ENGINE_SRC), vec![root.join(PLANNER)]),
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
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(ENGINE_SRC);
    let edges = module_edges(&src, &layered_module());
    assert!(
        edges.len() > 10,
        "found only {} modules under {LAYERED}: the reader is broken",
        edges.len()
    );
    if let Some(cycle) = find_cycle(&edges) {
        let listing = cycle_listing(&edges);
        panic!(
            "{LAYERED} has an import cycle: {}\n{} modules are on cycles:\n  {}",
            cycle.join(" -> "),
            listing.len(),
            listing.join("\n  ")
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

/// The heading in docs/design.md of the layer table this check reads.
const LAYER_HEADING: &str = "## Layers";

fn layer_table(root: &Path) -> Layers {
    let text = std::fs::read_to_string(root.join("docs/design.md")).expect("read design.md");
    Layers::parse(&text, LAYER_HEADING)
}

/// Every upward import of `krate`, as `crate: file -> module`.
fn upward_of(krate: &Crate, layers: &Layers) -> BTreeSet<String> {
    workspace::upward(krate, layers)
        .into_iter()
        .map(|(from, to, _)| {
            let to_top = to.split('/').next().unwrap_or(&to).trim_end_matches(".rs");
            format!("{}: {from} -> {to_top}", krate.name)
        })
        .collect()
}

/// Every sibling circle of `krate`, as `crate: parent: the modules on circles`.
fn circles_of(krate: &Crate) -> BTreeSet<String> {
    workspace::sibling_cycles(&krate.edges())
        .into_iter()
        .map(|(parent, members)| {
            let names: Vec<&str> = members
                .iter()
                .map(|m| m.split(" -> ").next().unwrap_or(m))
                .collect();
            format!("{}: {parent}: {}", krate.name, names.join(", "))
        })
        .collect()
}

#[test]
fn every_module_has_a_row() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layers = layer_table(root);
    for (name, src) in workspace::crates(root) {
        let krate = Crate::load(&name, &src);
        assert!(krate.len() > 30, "{name}: only {} files read", krate.len());
        let found = krate.top_modules();
        let placed = layers.modules(&name);
        let unplaced: Vec<&String> = found.difference(&placed).collect();
        let stale: Vec<&String> = placed.difference(&found).collect();
        assert!(
            unplaced.is_empty() && stale.is_empty(),
            "{name}: modules without a row in docs/design.md, \"Layers\": {unplaced:?}; rows naming no module: {stale:?}"
        );
    }
}

#[test]
fn imports_run_down_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layers = layer_table(root);
    let mut found = BTreeSet::new();
    for (name, src) in workspace::crates(root) {
        found.extend(upward_of(&Crate::load(&name, &src), &layers));
    }
    assert!(
        found.is_empty(),
        "imports against the layer table of docs/design.md, \"Layers\" ({}):\n  {}",
        found.len(),
        found.into_iter().collect::<Vec<_>>().join("\n  ")
    );
}

#[test]
fn no_circle_between_sibling_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = BTreeSet::new();
    for (name, src) in workspace::crates(root) {
        found.extend(circles_of(&Crate::load(&name, &src)));
    }
    assert!(
        found.is_empty(),
        "circles between sibling modules ({}):\n  {}",
        found.len(),
        found.into_iter().collect::<Vec<_>>().join("\n  ")
    );
}

/// The workspace check on a planted crate: it follows a re-export of the root, a
/// glob re-export, a child's name in a `mod.rs`, a `#[macro_export]` macro; it skips
/// a `#[cfg(test)]` file and a module's own file using its parts; and it finds a
/// planted upward import, a planted import within a row and a planted circle.
#[test]
fn the_layer_check_sees_what_it_claims() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("low")).expect("create the tree");
    std::fs::create_dir_all(src.join("high")).expect("create the tree");
    let write = |path: &str, text: &str| std::fs::write(src.join(path), text).expect("write");
    let table = "## Layers\n\n| row | crate | modules |\n|---|---|---|\n| 1 | `x` | `base` |\n| 2 | `x` | `low`, `side` |\n| 3 | `x` | `high` |\n";
    let layers = Layers::parse(table, "## Layers");
    write(
        "lib.rs",
        "pub mod base; pub mod low; pub mod side; pub mod high;\npub use low::Thing;\n",
    );
    write(
        "base.rs",
        "#[macro_export]\nmacro_rules! point { () => {} }\npub struct B;\n",
    );
    write("side.rs", "pub fn s() { crate::point!(); }\n");
    write("low/mod.rs", "mod parts; mod other;\npub use parts::*;\npub fn f() { other::g(); }\n#[cfg(test)]\nmod tests;\n");
    write("low/parts.rs", "pub struct Thing(crate::base::B);\n");
    write("low/other.rs", "pub fn g() { let _ = super::f; }\n");
    write("low/tests.rs", "use crate::high::H;\n");
    write(
        "high/mod.rs",
        "pub mod a; pub mod b;\npub struct H(crate::Thing);\n",
    );
    write("high/a.rs", "pub fn a() {}\n");
    write("high/b.rs", "pub fn b() { super::a::a(); }\n");
    let krate = Crate::load("x", &src);
    let edges = krate.edges();
    let to = |from: &str| -> Vec<&str> { edges[from].keys().map(String::as_str).collect() };
    assert_eq!(
        to("high"),
        ["low::parts"],
        "through the root's and the glob's re-exports"
    );
    assert_eq!(to("side"), ["base"], "an exported macro");
    assert_eq!(
        to("low"),
        ["low::other"],
        "a child by its name; the glob's target is not named"
    );
    assert!(!edges.contains_key("low::tests"), "a test file is outside");
    assert!(upward_of(&krate, &layers).is_empty());
    assert!(
        circles_of(&krate).is_empty(),
        "a module's own file and its parts"
    );

    write(
        "low/parts.rs",
        "pub struct Thing(crate::base::B, crate::high::H);\n",
    );
    write(
        "side.rs",
        "pub fn s() { crate::point!(); let _ = crate::low::f; }\n",
    );
    write("high/a.rs", "pub fn a() { super::b::b(); }\n");
    let krate = Crate::load("x", &src);
    assert_eq!(
        upward_of(&krate, &layers),
        [
            "x: low/parts.rs -> high".to_owned(),
            "x: side.rs -> low".to_owned()
        ]
        .into_iter()
        .collect()
    );
    assert_eq!(
        circles_of(&krate),
        ["x: crate: high, low".to_owned(), "x: high: a, b".to_owned()]
            .into_iter()
            .collect()
    );
}

//! The import graph of a whole crate, file by file, and the layer table of
//! docs/design.md that orders its top-level modules.
//!
//! A path resolves to the file that defines the item it names: through `crate::`,
//! `self::`, `super::` and a child module's name, then through every `use` of the
//! file it reaches (a re-export, a glob, a rename), as rustc does. Naming a module
//! itself is an edge to that module's file. A file's `mod child;` is containment,
//! not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

use crate::reader::{module_of, resolve, rust_files, test_only, Names};

/// What one file offers to paths that reach it.
#[derive(Default)]
struct Offers {
    /// The items it defines (functions, types, constants, macros, inline modules).
    defined: BTreeSet<String>,
    /// The names its `use`s bring in, with the absolute path each stands for.
    imported: BTreeMap<String, Vec<String>>,
    /// The modules its glob `use`s bring in.
    globs: Vec<Vec<String>>,
}

/// One crate's source files, parsed.
pub struct Crate {
    /// The crate's name, for messages.
    pub name: String,
    /// Each file's module path, its path for messages and its syntax tree.
    files: BTreeMap<Vec<String>, (String, syn::File)>,
    /// Every module: the files and the inline modules inside them.
    modules: BTreeSet<Vec<String>>,
    offers: BTreeMap<Vec<String>, Offers>,
}

/// An edge of the file graph: the file that names, the file it names, and one path
/// that makes the edge (for messages).
pub type Edges = BTreeMap<String, BTreeMap<String, String>>;

fn shown(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_owned()
    } else {
        module.join("::")
    }
}

impl Crate {
    /// The library crate rooted at `engine/src/lib.rs` (binary roots, `main.rs` and
    /// `bin/`, sit above it and reach it only through its public names).
    pub fn load(name: &str, src: &Path) -> Crate {
        let mut paths = Vec::new();
        rust_files(src, &mut paths);
        paths.retain(|p| p != &src.join("main.rs") && !p.starts_with(src.join("bin")));
        paths.sort();
        let mut files = BTreeMap::new();
        // Files declared by a `#[cfg(test)] mod x;`: unit tests, outside the graph.
        let mut tests: BTreeSet<Vec<String>> = BTreeSet::new();
        for path in paths {
            let text = std::fs::read_to_string(&path).expect("read a source file");
            let ast = syn::parse_file(&text)
                .unwrap_or_else(|err| panic!("{} does not parse: {err}", path.display()));
            let rel = path
                .strip_prefix(src)
                .unwrap_or(&path)
                .display()
                .to_string();
            let module = module_of(src, &path);
            for item in &ast.items {
                if let syn::Item::Mod(m) = item {
                    if m.content.is_none() && test_only(&m.attrs) {
                        let mut child = module.clone();
                        child.push(m.ident.to_string());
                        tests.insert(child);
                    }
                }
            }
            files.insert(module, (rel, ast));
        }
        files.retain(|module, _| !tests.iter().any(|t| module.starts_with(t)));
        let mut modules: BTreeSet<Vec<String>> = files.keys().cloned().collect();
        let mut offers = BTreeMap::new();
        // `#[macro_export]` puts a macro at the crate root, wherever it is defined.
        let mut exported = BTreeMap::new();
        for (module, (_, ast)) in &files {
            let mut offer = Offers::default();
            collect(module, &ast.items, &mut offer, &mut modules, &mut exported);
            offers.insert(module.clone(), offer);
        }
        if let Some(root) = offers.get_mut(&Vec::new()) {
            for (name, module) in exported {
                let mut path = module;
                path.push(name.clone());
                root.imported.insert(name, path);
            }
        }
        Crate {
            name: name.to_owned(),
            files,
            modules,
            offers,
        }
    }

    /// The number of files read.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// The file an absolute path names, and whether it defines (or brings in) the
    /// name, following `use`s at most `depth` times.
    fn locate(&self, path: &[String], depth: usize) -> (Vec<String>, bool) {
        let mut cut = path.len();
        while cut > 0 && !self.files.contains_key(&path[..cut]) {
            cut -= 1;
        }
        let file = path[..cut].to_vec();
        let Some(name) = path.get(cut) else {
            return (file, true);
        };
        let offer = &self.offers[&file];
        if offer.defined.contains(name) || depth == 0 {
            return (file, offer.defined.contains(name));
        }
        let rest = &path[cut + 1..];
        if let Some(target) = offer.imported.get(name) {
            let mut next = target.clone();
            next.extend(rest.iter().cloned());
            let (found, ok) = self.locate(&next, depth - 1);
            return if ok { (found, true) } else { (file, true) };
        }
        for glob in &offer.globs {
            let mut next = glob.clone();
            next.extend(path[cut..].iter().cloned());
            let (found, ok) = self.locate(&next, depth - 1);
            if ok && found != file {
                return (found, true);
            }
        }
        (file, false)
    }

    /// Every edge between two files of the crate.
    pub fn edges(&self) -> Edges {
        let mut edges: Edges = self
            .files
            .keys()
            .map(|m| (shown(m), BTreeMap::new()))
            .collect();
        for (module, (_, ast)) in &self.files {
            let mut names = Names::within(module.clone(), &self.modules);
            names.visit_file(ast);
            for path in names.found {
                let (to, _) = self.locate(&path, 16);
                if &to != module {
                    edges
                        .get_mut(&shown(module))
                        .expect("a file")
                        .entry(shown(&to))
                        .or_insert_with(|| path.join("::"));
                }
            }
        }
        edges
    }

    /// The file (relative to `src/`) of a module path as [`Crate::edges`] shows it.
    pub fn file_of(&self, shown_module: &str) -> String {
        self.files
            .iter()
            .find(|(m, _)| shown(m) == shown_module)
            .map(|(_, (file, _))| file.clone())
            .unwrap_or_else(|| shown_module.to_owned())
    }

    /// The crate's top-level modules.
    pub fn top_modules(&self) -> BTreeSet<String> {
        self.files
            .keys()
            .filter_map(|m| m.first().cloned())
            .collect()
    }
}

/// The cycles between sibling modules, at every level: for each module whose
/// children (each taken with everything under it) name each other round in a
/// circle, `(parent, the circle)`. A module's own file (its `mod.rs`) may use its
/// children and be used by them: that is a module and its parts, not a circle.
pub fn sibling_cycles(edges: &Edges) -> Vec<(String, Vec<String>)> {
    let split = |shown_module: &str| -> Vec<String> {
        if shown_module == "crate" {
            Vec::new()
        } else {
            shown_module.split("::").map(str::to_owned).collect()
        }
    };
    let mut levels: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (from, tos) in edges {
        let a = split(from);
        for to in tos.keys() {
            let b = split(to);
            let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            let (Some(x), Some(y)) = (a.get(common), b.get(common)) else {
                continue; // one is the other's ancestor
            };
            let level = levels.entry(a[..common].to_vec()).or_default();
            level.entry(y.clone()).or_default();
            level.entry(x.clone()).or_default().insert(y.clone());
        }
    }
    levels
        .into_iter()
        .filter_map(|(parent, level)| {
            crate::cycles::find_cycle(&level)
                .map(|_| (shown(&parent), crate::cycles::cycle_listing(&level)))
        })
        .collect()
}

/// What `items` (of `module`) define and import; inline modules are added to
/// `modules` and read as files of their own would be, into the same offer.
fn collect(
    module: &[String],
    items: &[syn::Item],
    offer: &mut Offers,
    modules: &mut BTreeSet<Vec<String>>,
    exported: &mut BTreeMap<String, Vec<String>>,
) {
    for item in items {
        let (attrs, ident) = match item {
            syn::Item::Const(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Enum(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Fn(i) => (&i.attrs, Some(&i.sig.ident)),
            syn::Item::Static(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Struct(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Trait(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Type(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Union(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Macro(i) => {
                if let (Some(ident), false) = (&i.ident, test_only(&i.attrs)) {
                    offer.defined.insert(ident.to_string());
                    if i.attrs.iter().any(|a| a.path().is_ident("macro_export")) {
                        exported.insert(ident.to_string(), module.to_vec());
                    }
                }
                continue;
            }
            syn::Item::Mod(i) => {
                if test_only(&i.attrs) {
                    continue;
                }
                if i.content.is_some() {
                    let mut child = module.to_vec();
                    child.push(i.ident.to_string());
                    modules.insert(child);
                    offer.defined.insert(i.ident.to_string());
                }
                continue;
            }
            syn::Item::Use(i) => {
                if test_only(&i.attrs) {
                    continue;
                }
                imports(module, &i.tree, &mut Vec::new(), offer);
                continue;
            }
            _ => continue,
        };
        if test_only(attrs) {
            continue;
        }
        if let Some(ident) = ident {
            offer.defined.insert(ident.to_string());
        }
    }
}

/// The names one `use` tree brings into `module`, each with its absolute path.
fn imports(module: &[String], tree: &syn::UseTree, prefix: &mut Vec<String>, offer: &mut Offers) {
    let absolute = |segments: &[String]| -> Option<Vec<String>> {
        resolve(module, segments).or_else(|| {
            // `use child::X` in a module with a child `child`.
            let mut child = module.to_vec();
            child.extend(segments.iter().cloned());
            Some(child)
        })
    };
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            imports(module, &path.tree, prefix, offer);
            prefix.pop();
        }
        syn::UseTree::Name(name) => {
            let mut full = prefix.clone();
            full.push(name.ident.to_string());
            if name.ident == "self" {
                full.pop();
            }
            if let (Some(last), Some(target)) = (full.last().cloned(), absolute(&full)) {
                offer.imported.insert(last, target);
            }
        }
        syn::UseTree::Rename(rename) => {
            let mut full = prefix.clone();
            full.push(rename.ident.to_string());
            if rename.ident == "self" {
                full.pop();
            }
            if let Some(target) = absolute(&full) {
                offer.imported.insert(rename.rename.to_string(), target);
            }
        }
        syn::UseTree::Glob(_) => {
            if let Some(target) = absolute(prefix) {
                offer.globs.push(target);
            }
        }
        syn::UseTree::Group(group) => {
            for item in &group.items {
                imports(module, item, prefix, offer);
            }
        }
    }
}

/// The layer table: each crate's top-level modules, in rows from the lowest layer up.
/// A module may name modules of lower rows only: not its own row, not a higher one.
pub struct Layers {
    /// `(crate, row, module)` for every module the table names.
    rows: BTreeMap<(String, String), usize>,
}

impl Layers {
    /// The table under the heading `heading` of the Markdown document `text`: rows
    /// `| n | crate | modules |`, the modules as a comma-separated list of
    /// `` `name` `` (the crate root's own items, if any, are `crate`).
    pub fn parse(text: &str, heading: &str) -> Layers {
        let start = text
            .lines()
            .position(|line| line.trim() == heading)
            .unwrap_or_else(|| panic!("no heading {heading:?}"));
        let mut rows = BTreeMap::new();
        let mut in_table = false;
        for line in text.lines().skip(start + 1) {
            let line = line.trim();
            if !line.starts_with('|') {
                if in_table {
                    break;
                }
                if line.starts_with("## ") {
                    break;
                }
                continue;
            }
            in_table = true;
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            let [row, krate, modules, ..] = cells.as_slice() else {
                panic!("a layer row has three cells: {line}");
            };
            let Ok(row) = row.parse::<usize>() else {
                continue; // the header and its rule
            };
            for module in modules.split(',') {
                let module = module.trim().trim_matches('`');
                if module.is_empty() {
                    continue;
                }
                let key = (krate.trim_matches('`').to_owned(), module.to_owned());
                assert!(rows.insert(key, row).is_none(), "{module} is named twice");
            }
        }
        assert!(!rows.is_empty(), "no layer table under {heading:?}");
        Layers { rows }
    }

    /// The row of `module` in `krate`.
    pub fn row(&self, krate: &str, module: &str) -> Option<usize> {
        self.rows
            .get(&(krate.to_owned(), module.to_owned()))
            .copied()
    }

    /// The modules the table names for `krate`.
    pub fn modules(&self, krate: &str) -> BTreeSet<String> {
        self.rows
            .keys()
            .filter(|(k, _)| k == krate)
            .map(|(_, m)| m.clone())
            .collect()
    }
}

/// The imports of `krate` that run against `layers`: `(from file, to file, path)`,
/// one per pair of files.
pub fn upward(krate: &Crate, layers: &Layers) -> Vec<(String, String, String)> {
    let top = |shown_module: &str| -> String {
        shown_module
            .split("::")
            .next()
            .unwrap_or("crate")
            .to_owned()
    };
    let mut out = Vec::new();
    for (from, tos) in krate.edges() {
        let from_top = top(&from);
        if from_top == "crate" {
            continue; // the root re-exports the crate's names
        }
        for (to, path) in tos {
            let to_top = top(&to);
            if to_top == from_top {
                continue;
            }
            let (Some(a), Some(b)) = (
                layers.row(&krate.name, &from_top),
                layers.row(&krate.name, &to_top),
            ) else {
                continue; // an unplaced module is its own failure
            };
            if b >= a {
                out.push((krate.file_of(&from), krate.file_of(&to), path));
            }
        }
    }
    out
}

/// Where the source of each checked crate is.
pub fn crates(root: &Path) -> Vec<(String, PathBuf)> {
    vec![
        ("seglog".to_owned(), root.join("engine").join("src")),
        ("seglog-suite".to_owned(), root.join("src")),
        ("seglog-model".to_owned(), root.join("model").join("src")),
    ]
}

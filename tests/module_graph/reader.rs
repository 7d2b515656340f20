//! Reading a crate's source: the module of each file and every path it names.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// The module path (from the crate root) of a file under `src/`.
pub fn module_of(src: &Path, file: &Path) -> Vec<String> {
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

pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
pub fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
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
pub fn resolve(module: &[String], segments: &[String]) -> Option<Vec<String>> {
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
pub struct Names<'m> {
    pub module: Vec<String>,
    pub found: Vec<Vec<String>>,
    /// Every path as written (unresolved), for the IO check.
    pub written: Vec<Vec<String>>,
    /// The crate's modules (files and inline ones): a path whose first segment is a
    /// child of the current module names that child (`child::f()` in a `mod.rs`).
    modules: Option<&'m BTreeSet<Vec<String>>>,
}

impl<'m> Names<'m> {
    pub fn new(module: Vec<String>) -> Self {
        Names {
            module,
            found: Vec::new(),
            written: Vec::new(),
            modules: None,
        }
    }

    /// A reader that also resolves paths starting with a child module's name.
    pub fn within(module: Vec<String>, modules: &'m BTreeSet<Vec<String>>) -> Self {
        Names {
            modules: Some(modules),
            ..Names::new(module)
        }
    }

    fn record(&mut self, segments: &[String]) {
        self.written.push(segments.to_vec());
        if let Some(path) = resolve(&self.module, segments) {
            self.found.push(path);
        } else if let (Some(modules), Some(first), true) =
            (self.modules, segments.first(), segments.len() > 1)
        {
            let mut child = self.module.clone();
            child.push(first.clone());
            if modules.contains(&child) {
                child.extend(segments[1..].iter().cloned());
                self.found.push(child);
            }
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
pub fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

impl<'ast> Visit<'ast> for Names<'_> {
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

    /// `pub(in crate::a)` says who may see an item; it imports nothing.
    fn visit_vis_restricted(&mut self, _: &'ast syn::VisRestricted) {}

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.scan_tokens(mac.tokens.clone());
    }
}

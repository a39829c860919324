//! Dependencies in `src/` point one way: down the layers `docs/architecture.md` lists (its
//! "Layers" section, read here, so the document and the test cannot disagree), and no files
//! form a circle.
//!
//! A file depends on the files whose items its code names. It names an item by a `use`, or by a
//! path in its code (inside macro calls such as `format!` too) that starts from `crate`,
//! `super`, `self`, a module the file declares, or a module a `use` brought in. A path leads to
//! the file of its longest module prefix (`crate::rules::locks::Lock`: `src/rules/locks.rs`),
//! and on through a `use` of that file when the next name is one it brought in
//! (`crate::rules::SourceFile`, which `rules` re-exports, leads to the file that defines
//! `SourceFile`). A glob (`use super::*`) leads to the files of the names the code uses from it.
//!
//! Structure is not use: `mod` declarations, and a `pub use` whose name the file's own code never
//! uses (it only passes the name on; who uses the name depends on where it is defined). Test code
//! (items under `#[cfg(test)]`, and the files of `#[cfg(test)] mod` declarations) may use the
//! layers above it: a rule's tests run it through the lint engine.

use proc_macro2::{Span, TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

type ModPath = Vec<String>;

/// A file of `src/`.
struct File {
    /// `src/rules/context.rs`, as messages show it.
    shown: String,
    module: ModPath,
    syntax: syn::File,
}

/// Where a file names another: the line, the path as written, and the files whose re-exports
/// the path went through to get there (they count for the layers: a path through a module of
/// a higher layer reaches up, wherever the item is defined).
#[derive(Clone, Debug, PartialEq)]
struct Use {
    line: usize,
    path: String,
    through: Vec<usize>,
}

/// What the reader knows of the crate before it follows a file's paths.
struct Crate {
    /// Module → its file (an index).
    modules: BTreeMap<ModPath, usize>,
    /// Per file: the names its top-level `use` items bring in → the paths they stand for.
    imports: Vec<BTreeMap<String, ModPath>>,
    /// Per file: the modules its top-level `use … ::*` items bring in whole.
    globs: Vec<Vec<ModPath>>,
    /// Per file: the names of the items it defines at its top level.
    defined: Vec<BTreeSet<String>>,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file defines: `src/lib.rs` is the crate root, `src/a/mod.rs` and `src/a.rs`
/// are `a`, `src/a/b.rs` is `a::b`.
fn module_of(relative: &Path) -> ModPath {
    let mut parts: ModPath = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap();
    if !(stem == "mod" || (parts.is_empty() && stem == "lib")) {
        parts.push(stem.to_string());
    }
    parts
}

fn has_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test"))
}

/// Every file of the library crate (`main.rs` is the binary's and only calls `sluice::cli`).
fn read_files() -> Vec<File> {
    let src = src_dir();
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths
        .into_iter()
        .filter(|p| p != &src.join("main.rs"))
        .map(|path| {
            let relative = path.strip_prefix(&src).unwrap().to_path_buf();
            let text = std::fs::read_to_string(&path).unwrap();
            let shown = format!("src/{}", relative.display());
            let syntax = syn::parse_file(&text).unwrap_or_else(|e| {
                let at = e.span().start();
                panic!("{shown}:{}:{}: cannot parse as Rust: {e}", at.line, at.column + 1)
            });
            File { shown, module: module_of(&relative), syntax }
        })
        .collect()
}

/// The modules declared `#[cfg(test)] mod name;`: their files, and those below, are test code.
fn test_only_modules(files: &[File]) -> Vec<ModPath> {
    let mut out = Vec::new();
    for file in files {
        for item in &file.syntax.items {
            if let syn::Item::Mod(m) = item {
                if m.content.is_none() && has_cfg_test(&m.attrs) {
                    out.push([file.module.clone(), vec![m.ident.to_string()]].concat());
                }
            }
        }
    }
    out
}

fn attrs_of(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// The name a top-level item defines, if any.
fn defined_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        syn::Item::Mod(i) => &i.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

fn line_of(span: Span) -> usize {
    span.start().line
}

fn is_colons(trees: &[TokenTree], at: usize) -> bool {
    matches!((trees.get(at), trees.get(at + 1)), (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
        if a.as_char() == ':' && b.as_char() == ':' && a.spacing() == proc_macro2::Spacing::Joint)
}

#[derive(Clone, Copy, PartialEq)]
enum Pass {
    /// Reading a scope's `use` items, before its paths.
    Imports,
    /// Following the paths.
    Names,
}

/// Walks one file's code (not its test code) and records the files it names.
struct Names<'a> {
    krate: &'a Crate,
    /// The file walked (an index into `krate`'s files).
    file: usize,
    /// The module being walked: the file's, then inline modules inside it.
    scope: ModPath,
    /// Per scope: the names a `use` made stand for a module (`use crate::git::{self, history}`
    /// makes `git` and `history` modules).
    aliases: Vec<BTreeMap<String, ModPath>>,
    /// Per scope: the modules it declares (`mod name;` or inline).
    children: Vec<BTreeSet<String>>,
    /// The names the file's top-level `use` items bring in (what `Crate::imports` is made of).
    brought: BTreeMap<String, ModPath>,
    /// The modules the file's top-level globs bring in (what `Crate::globs` is made of).
    glob_modules: Vec<ModPath>,
    /// The globs of the walk, with where they are, resolved once the names the code uses are known.
    globs: Vec<(ModPath, Use)>,
    found: Vec<(usize, Use)>,
    /// Walking a `pub use` (of any `pub(…)`).
    in_pub_use: bool,
    /// The names a `pub use` passed on, by their place in `found`.
    passed_on: Vec<(usize, String)>,
    /// The first segment of every path in the file's code, and every identifier in its macro calls.
    used: BTreeSet<String>,
}

impl<'a> Names<'a> {
    /// Ready to walk the items of file `file` (of `module`), its top-level `use` items read.
    fn new(krate: &'a Crate, file: usize, module: &ModPath, items: &[syn::Item]) -> Names<'a> {
        let mut names = Names {
            krate,
            file,
            scope: module.clone(),
            aliases: Vec::new(),
            children: Vec::new(),
            brought: BTreeMap::new(),
            glob_modules: Vec::new(),
            globs: Vec::new(),
            found: Vec::new(),
            in_pub_use: false,
            passed_on: Vec::new(),
            used: BTreeSet::new(),
        };
        names.enter(items);
        names
    }

    /// The module path `segments` (as written) stand for, if they start from a module of this crate.
    fn absolute(&self, segments: &[String]) -> Option<ModPath> {
        let first = segments.first()?;
        let rest = &segments[1..];
        let base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.scope.clone(),
            "super" => {
                let mut base = self.scope.clone();
                base.pop()?;
                let supers = rest.iter().take_while(|s| *s == "super").count();
                for _ in 0..supers {
                    base.pop()?;
                }
                return Some([base, rest[supers..].to_vec()].concat());
            }
            name if self.children.last().is_some_and(|c| c.contains(name)) => {
                return Some([self.scope.clone(), segments.to_vec()].concat());
            }
            name => self.aliases.last()?.get(name)?.clone(),
        };
        Some([base, rest.to_vec()].concat())
    }

    /// Records that `segments` are named on `line`.
    fn name(&mut self, segments: &[String], line: usize) {
        let Some(path) = self.absolute(segments) else { return };
        let mut through = Vec::new();
        if let Some(file) = file_of(self.krate, path, &mut through) {
            self.found.push((file, Use { line, path: segments.join("::"), through }));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize, pass: Pass) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, line, pass);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.use_leaf(prefix, &n.ident.to_string(), None, line, pass),
            syn::UseTree::Rename(r) => {
                self.use_leaf(prefix, &r.ident.to_string(), Some(r.rename.to_string()), line, pass)
            }
            syn::UseTree::Glob(_) => {
                let Some(module) = self.absolute(prefix) else { return };
                match pass {
                    Pass::Imports if self.aliases.len() == 1 => self.glob_modules.push(module),
                    Pass::Imports => {}
                    Pass::Names => {
                        let path = format!("{}::*", prefix.join("::"));
                        self.globs.push((module, Use { line, path, through: Vec::new() }))
                    }
                }
            }
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree, line, pass);
                }
            }
        }
    }

    fn use_leaf(&mut self, prefix: &[String], ident: &str, rename: Option<String>, line: usize, pass: Pass) {
        let segments: Vec<String> = if ident == "self" {
            prefix.to_vec()
        } else {
            prefix.iter().cloned().chain(std::iter::once(ident.to_string())).collect()
        };
        let local = rename.unwrap_or_else(|| segments.last().cloned().unwrap_or_default());
        match pass {
            Pass::Names => {
                if self.in_pub_use {
                    self.passed_on.push((self.found.len(), local));
                }
                self.name(&segments, line)
            }
            Pass::Imports => {
                let Some(path) = self.absolute(&segments) else { return };
                if self.aliases.len() == 1 {
                    self.brought.insert(local.clone(), path.clone());
                }
                if self.krate.modules.contains_key(&path) {
                    self.aliases.last_mut().unwrap().insert(local, path);
                }
            }
        }
    }

    /// `crate :: a :: b` and the like inside a macro call's tokens.
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                // `::std::…` and the like start outside the crate.
                TokenTree::Ident(ident) if i >= 2 && is_colons(&trees, i - 2) => {
                    self.used.insert(ident.to_string());
                }
                TokenTree::Ident(start) => {
                    self.used.insert(start.to_string());
                    let mut segments = vec![start.to_string()];
                    let mut next = i + 1;
                    while is_colons(&trees, next) {
                        let Some(TokenTree::Ident(ident)) = trees.get(next + 2) else { break };
                        segments.push(ident.to_string());
                        next += 3;
                    }
                    if segments.len() > 1 {
                        self.name(&segments, line_of(start.span()));
                        i = next;
                        continue;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// A scope begins: its modules, and the aliases of its `use` items.
    fn enter(&mut self, items: &[syn::Item]) {
        let children = items
            .iter()
            .filter_map(|item| match item {
                syn::Item::Mod(m) => Some(m.ident.to_string()),
                _ => None,
            })
            .collect();
        self.children.push(children);
        self.aliases.push(BTreeMap::new());
        for item in items {
            if let syn::Item::Use(u) = item {
                if !has_cfg_test(&u.attrs) {
                    self.use_tree(&mut Vec::new(), &u.tree, line_of(u.use_token.span), Pass::Imports);
                }
            }
        }
    }

    fn leave(&mut self) {
        self.children.pop();
        self.aliases.pop();
    }

    /// What the walk found, once every path is known: a `pub use` whose name the code never
    /// uses passes it on; a glob leads where the names the code takes from it are defined.
    fn finish(mut self) -> Vec<(usize, Use)> {
        let own = &self.krate.defined[self.file];
        let passed_on: BTreeSet<usize> =
            self.passed_on.iter().filter(|(_, name)| !self.used.contains(name)).map(|(at, _)| *at).collect();
        let mut found: Vec<(usize, Use)> =
            self.found.into_iter().enumerate().filter(|(at, _)| !passed_on.contains(at)).map(|(_, f)| f).collect();
        for (module, place) in std::mem::take(&mut self.globs) {
            for name in &self.used {
                if own.contains(name) || self.brought.contains_key(name) {
                    continue;
                }
                let path = [module.clone(), vec![name.clone()]].concat();
                let mut through = Vec::new();
                if let Some(file) = file_of(self.krate, path, &mut through).filter(|&f| defines(self.krate, f, name)) {
                    found.push((file, Use { through, ..place.clone() }));
                }
            }
        }
        found
    }
}

/// Whether file `file` defines `name` or brings it in.
fn defines(krate: &Crate, file: usize, name: &str) -> bool {
    krate.defined[file].contains(name) || krate.imports[file].contains_key(name)
}

/// The file that defines what `path` names: the file of its longest module prefix, followed
/// through that file's `use` items (and globs) while the next name is one they bring in; the
/// files followed through are pushed on `through`.
fn file_of(krate: &Crate, mut path: ModPath, through: &mut Vec<usize>) -> Option<usize> {
    // A bound on re-exports of re-exports, and on a name that re-exports itself.
    for _ in 0..16 {
        let len = (0..=path.len()).rev().find(|len| krate.modules.contains_key(&path[..*len]))?;
        let file = krate.modules[&path[..len]];
        let Some(name) = path.get(len) else { return Some(file) };
        let next = match krate.imports[file].get(name) {
            Some(target) => Some(target.clone()),
            None if krate.defined[file].contains(name) => None,
            None => {
                krate.globs[file].iter().map(|module| [module.clone(), vec![name.clone()]].concat()).find(|candidate| {
                    file_of(krate, candidate.clone(), &mut Vec::new()).is_some_and(|f| defines(krate, f, name))
                })
            }
        };
        match next {
            Some(target) if target != path[..len + 1] => {
                through.push(file);
                path = [target, path[len + 1..].to_vec()].concat();
            }
            _ => return Some(file),
        }
    }
    None
}

impl<'ast> Visit<'ast> for Names<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !has_cfg_test(attrs_of(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Const(i) => &i.attrs,
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => return syn::visit::visit_impl_item(self, item),
        };
        if !has_cfg_test(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        // `mod name;` only declares; an inline module is a scope of its own.
        let Some((_, items)) = &item.content else { return };
        self.scope.push(item.ident.to_string());
        self.enter(items);
        for item in items {
            self.visit_item(item);
        }
        self.leave();
        self.scope.pop();
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.in_pub_use = !matches!(item.vis, syn::Visibility::Inherited);
        self.use_tree(&mut Vec::new(), &item.tree, line_of(item.use_token.span), Pass::Names);
        self.in_pub_use = false;
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.used.insert(segments[0].clone());
            // A single segment names an item in scope, through the `use` that brought it.
            if segments.len() > 1 {
                self.name(&segments, line_of(path.segments[0].ident.span()));
            }
        }
        syn::visit::visit_path(self, path);
    }

    /// `pub(in crate::check)` says who may use an item, not what it uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.tokens(mac.tokens.clone());
    }
}

/// The files (by index) that the code of `syntax`, file `file` of `module`, names, in order.
fn names_in(krate: &Crate, file: usize, module: &ModPath, syntax: &syn::File) -> Vec<(usize, Use)> {
    let mut names = Names::new(krate, file, module, &syntax.items);
    for item in &syntax.items {
        names.visit_item(item);
    }
    names.finish()
}

/// The crate's modules, what each file's `use` items bring in and what it defines.
fn crate_of(modules: &[ModPath], syntaxes: &[&syn::File]) -> Crate {
    let mut krate = Crate {
        modules: modules.iter().enumerate().map(|(i, m)| (m.clone(), i)).collect(),
        imports: vec![BTreeMap::new(); modules.len()],
        globs: vec![Vec::new(); modules.len()],
        defined: syntaxes
            .iter()
            .map(|s| s.items.iter().filter(|i| !has_cfg_test(attrs_of(i))).filter_map(defined_name).collect())
            .collect(),
    };
    let read: Vec<(BTreeMap<String, ModPath>, Vec<ModPath>)> = syntaxes
        .iter()
        .enumerate()
        .map(|(at, syntax)| {
            let names = Names::new(&krate, at, &modules[at], &syntax.items);
            (names.brought, names.glob_modules)
        })
        .collect();
    for (at, (imports, globs)) in read.into_iter().enumerate() {
        krate.imports[at] = imports;
        krate.globs[at] = globs;
    }
    krate
}

/// The dependency graph between the files of `src/`: per file, the files it names and the first
/// place it names each.
struct Graph {
    files: Vec<File>,
    edges: Vec<BTreeMap<usize, Use>>,
}

fn graph() -> Graph {
    let files = read_files();
    let modules: Vec<ModPath> = files.iter().map(|f| f.module.clone()).collect();
    let syntaxes: Vec<&syn::File> = files.iter().map(|f| &f.syntax).collect();
    let krate = crate_of(&modules, &syntaxes);
    let test_only = test_only_modules(&files);
    let mut edges = vec![BTreeMap::new(); files.len()];
    for (at, file) in files.iter().enumerate() {
        if test_only.iter().any(|t| file.module.starts_with(t)) {
            continue;
        }
        for (to, place) in names_in(&krate, at, &file.module, &file.syntax) {
            if to != at {
                edges[at].entry(to).or_insert(place);
            }
        }
    }
    Graph { files, edges }
}

/// The layers of docs/architecture.md, bottom first: (name, top-level modules).
fn layers() -> Vec<(String, Vec<String>)> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md")).unwrap();
    let section = doc.split("\n## Layers\n").nth(1).expect("docs/architecture.md has a `## Layers` section");
    let section = section.split("\n## ").next().unwrap();
    let mut out = Vec::new();
    for line in section.lines() {
        let Some((number, rest)) = line.split_once(". ") else { continue };
        if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let (name, modules) = rest.split_once(':').expect("a layer line reads `N. name: `module`, …`");
        let modules = modules.split('`').skip(1).step_by(2).map(str::to_string).collect();
        out.push((name.trim().to_string(), modules));
    }
    assert!(out.len() >= 2, "docs/architecture.md's Layers section lists no layers");
    out
}

/// The top-level module a file belongs to (`""` for the crate root).
fn top(module: &ModPath) -> &str {
    module.first().map(String::as_str).unwrap_or("")
}

/// Every dependency that points up the layers, as a message naming the file and line. The
/// crate root (which declares every module) has no layer.
fn upward(
    files: &[(String, ModPath)],
    edges: &[BTreeMap<usize, Use>],
    layers: &[(String, Vec<String>)],
) -> Vec<String> {
    let layer_of: BTreeMap<&str, (usize, &str)> = layers
        .iter()
        .enumerate()
        .flat_map(|(at, (name, modules))| modules.iter().map(move |m| (m.as_str(), (at, name.as_str()))))
        .collect();
    let mut wrong = Vec::new();
    for (from, edges) in edges.iter().enumerate() {
        let (shown, module) = &files[from];
        let Some(&(own, own_name)) = layer_of.get(top(module)) else { continue };
        for (&to, place) in edges {
            let above = |&reached: &usize| layer_of.get(top(&files[reached].1)).is_some_and(|&(their, _)| their > own);
            // The first module above that the path reaches, through a re-export or at its item.
            if let Some(&reached) = place.through.iter().chain(std::iter::once(&to)).find(|r| above(r)) {
                let (target, target_module) = &files[reached];
                let (their, their_name) = layer_of[top(target_module)];
                wrong.push(format!(
                    "{shown}:{}: `{}` ({own_name}, layer {}) uses `{}` ({target}) of `{}` ({their_name}, layer {}): a \
                     layer above",
                    place.line,
                    top(module),
                    own + 1,
                    place.path,
                    top(target_module),
                    their + 1
                ));
            }
        }
    }
    wrong
}

/// Tarjan's strongly connected components of more than one file, each sorted.
fn circles(edges: &[BTreeMap<usize, Use>]) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        edges: &'a [BTreeMap<usize, Use>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn connect(w: &mut Walk, v: usize) {
        w.index[v] = Some(w.next);
        w.low[v] = w.next;
        w.next += 1;
        w.stack.push(v);
        w.on_stack[v] = true;
        for &to in w.edges[v].keys() {
            match w.index[to] {
                None => {
                    connect(w, to);
                    w.low[v] = w.low[v].min(w.low[to]);
                }
                Some(index) if w.on_stack[to] => w.low[v] = w.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(w.low[v]) == w.index[v] {
            let mut component = Vec::new();
            loop {
                let member = w.stack.pop().unwrap();
                w.on_stack[member] = false;
                component.push(member);
                if member == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                w.out.push(component);
            }
        }
    }
    let n = edges.len();
    let mut walk = Walk {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if walk.index[v].is_none() {
            connect(&mut walk, v);
        }
    }
    walk.out
}

/// Each circle, with the places where its files name each other.
fn describe_circles(shown: &[String], edges: &[BTreeMap<usize, Use>]) -> Vec<String> {
    circles(edges)
        .into_iter()
        .map(|circle| {
            let members: BTreeSet<usize> = circle.iter().copied().collect();
            let mut text = format!("a circle of {} files:", circle.len());
            for &from in &circle {
                for (to, place) in edges[from].iter().filter(|(to, _)| members.contains(to)) {
                    text.push_str(&format!(
                        "\n  {}:{}: uses `{}` ({})",
                        shown[from], place.line, place.path, shown[*to]
                    ));
                }
            }
            text
        })
        .collect()
}

#[test]
fn every_module_is_in_one_layer() {
    let layers = layers();
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (layer, modules) in &layers {
        for module in modules {
            if let Some(other) = seen.insert(module, layer) {
                panic!("docs/architecture.md puts `{module}` in two layers: {other} and {layer}");
            }
        }
    }
    let graph = graph();
    let tops: BTreeSet<&str> = graph.files.iter().map(|f| top(&f.module)).filter(|t| !t.is_empty()).collect();
    let missing: Vec<&&str> = tops.iter().filter(|t| !seen.contains_key(**t)).collect();
    assert!(
        missing.is_empty(),
        "modules of src/ that docs/architecture.md's Layers section does not place: {missing:?}"
    );
    let unknown: Vec<&&str> = seen.keys().filter(|m| !tops.contains(**m)).collect();
    assert!(unknown.is_empty(), "docs/architecture.md's Layers section names modules src/ does not have: {unknown:?}");
}

#[test]
fn no_file_uses_a_layer_above_its_own() {
    let graph = graph();
    let files: Vec<(String, ModPath)> = graph.files.iter().map(|f| (f.shown.clone(), f.module.clone())).collect();
    let wrong = upward(&files, &graph.edges, &layers());
    assert!(wrong.is_empty(), "dependencies pointing up the layers of docs/architecture.md:\n{}", wrong.join("\n"));
}

#[test]
fn no_files_form_a_circle() {
    let graph = graph();
    let shown: Vec<String> = graph.files.iter().map(|f| f.shown.clone()).collect();
    let circles = describe_circles(&shown, &graph.edges);
    assert!(circles.is_empty(), "{}", circles.join("\n"));
}

fn module(m: &str) -> ModPath {
    m.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect()
}

#[test]
fn the_reader_follows_uses_paths_re_exports_globs_and_macros_but_not_test_code_or_names_passed_on() {
    let modules: Vec<ModPath> = ["", "a", "a::b", "c", "c::d", "e", "f"].iter().map(|m| module(m)).collect();
    let other = |text: &str| syn::parse_file(text).unwrap();
    // `c` re-exports `d::Thing`; `f` defines `helper` and brings in `Glob` from `e`.
    let (c, d, e) =
        (other("mod d; pub use d::Thing;"), other("pub struct Thing;"), other("pub struct X; pub struct Glob;"));
    let f = other("use crate::e::Glob; pub fn helper() {}");
    let text = r#"
mod b;
use crate::c::{self, Thing};
use super::e::*;
fn f() -> Thing {
    b::go();
    c::d::run();
    let _ = format!("{}", crate::e::X);
    ::std::mem::drop(1);
}
#[cfg(test)]
mod tests {
    use crate::c::d::Y;
}
#[cfg(test)]
fn helper() {
    crate::c::d::z();
}
pub use crate::c::d::Passed;
pub use crate::e::Kept;
fn g() -> Kept {}
use crate::f::*;
fn h() { helper(); let _: Glob; }
pub(in crate::c) fn visible_to_c() {}
"#;
    let a = other(text);
    let b = other("");
    let root = other("");
    let krate = crate_of(&modules, &[&root, &a, &b, &c, &d, &e, &f]);
    let found: Vec<(usize, usize, String)> =
        names_in(&krate, 1, &module("a"), &a).into_iter().map(|(to, u)| (to, u.line, u.path)).collect();
    let expected = [
        (3, 3, "crate::c"),
        (4, 3, "crate::c::Thing"),
        (2, 6, "b::go"),
        (4, 7, "c::d::run"),
        (5, 8, "crate::e::X"),
        (5, 20, "crate::e::Kept"),
        // The globs, for the names the code takes from them: `Glob` from `e`, and from `f` its
        // `helper` and the `Glob` it brings in from `e`.
        (5, 4, "super::e::*"),
        (5, 22, "crate::f::*"),
        (6, 22, "crate::f::*"),
    ];
    let expected: Vec<(usize, usize, String)> = expected.iter().map(|(t, l, p)| (*t, *l, p.to_string())).collect();
    assert_eq!(found, expected);
}

#[test]
fn an_upward_dependency_is_named_with_its_file_and_line_and_a_circle_with_every_step() {
    let files: Vec<(String, ModPath)> =
        [("src/sql/parse.rs", "sql::parse"), ("src/lint/mod.rs", "lint"), ("src/sql/split.rs", "sql::split")]
            .iter()
            .map(|(shown, m)| (shown.to_string(), module(m)))
            .collect();
    let layers = vec![("SQL".to_string(), vec!["sql".to_string()]), ("engine".to_string(), vec!["lint".to_string()])];
    let at = |line, path: &str| Use { line, path: path.to_string(), through: Vec::new() };
    let mut edges = vec![BTreeMap::new(); 3];
    edges[1].insert(0, at(4, "crate::sql::parse"));
    assert!(upward(&files, &edges, &layers).is_empty(), "down the layers");
    // A path through a module of a higher layer reaches up, wherever its item is defined.
    let through_lint = Use { through: vec![1], ..at(3, "crate::lint::parse") };
    edges[2].insert(0, through_lint);
    assert_eq!(
        upward(&files, &edges, &layers),
        ["src/sql/split.rs:3: `sql` (SQL, layer 1) uses `crate::lint::parse` (src/lint/mod.rs) of `lint` (engine, \
          layer 2): a layer above"]
    );
    edges[2].clear();
    edges[2].insert(1, at(9, "crate::lint::lint"));
    assert_eq!(
        upward(&files, &edges, &layers),
        ["src/sql/split.rs:9: `sql` (SQL, layer 1) uses `crate::lint::lint` (src/lint/mod.rs) of `lint` (engine, \
          layer 2): a layer above"]
    );
    let shown: Vec<String> = files.iter().map(|(s, _)| s.clone()).collect();
    assert!(describe_circles(&shown, &edges).is_empty());
    edges[0].insert(2, at(7, "super::split::split"));
    edges[1].insert(2, at(5, "crate::sql::split"));
    assert_eq!(
        describe_circles(&shown, &edges),
        ["a circle of 3 files:\n  src/sql/parse.rs:7: uses `super::split::split` (src/sql/split.rs)\n  \
          src/lint/mod.rs:4: uses `crate::sql::parse` (src/sql/parse.rs)\n  src/lint/mod.rs:5: uses \
          `crate::sql::split` (src/sql/split.rs)\n  src/sql/split.rs:9: uses `crate::lint::lint` (src/lint/mod.rs)"]
    );
}

#[test]
fn test_only_files_are_left_out() {
    let graph = graph();
    let testing = graph.files.iter().position(|f| f.shown == "src/rules/testing.rs").unwrap();
    assert!(graph.edges[testing].is_empty(), "rules/testing.rs is `#[cfg(test)] mod testing;`");
}

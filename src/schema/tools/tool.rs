//! What a migration tool is to Sluice (the `Tool` trait, and what it returns: the migrations in
//! order, the evidence that it runs a directory), and the helpers the tools share. The tools
//! are the other files of this directory; `mod.rs` lists them and picks one.

use super::script::{Script, Wrap};
use super::tree::Tree;
use crate::error::{Error, Result};
use crate::runner::Layout;
use std::cmp::Ordering;
use std::path::{Path, PathBuf};

/// One migration as its tool lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Migration {
    /// The version the runner orders by and records (`001`, `20240101120000`, `1.2`); for tools
    /// that order by a list (Sqitch's plan, Liquibase's changelog), the position in it.
    pub version: String,
    pub name: String,
    /// The file replayed, relative to the migrations directory.
    pub up: PathBuf,
    /// Its rollback, relative to the migrations directory.
    pub down: Option<PathBuf>,
    /// A Flyway repeatable (`R__`): applied after every versioned migration, and again whenever it changes.
    pub repeatable: bool,
}

/// What a tool knows about one project beyond its files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `[migrations] transaction_per_file` in sluice.toml: overrides the tool's default wrap
    /// (per-file opt-outs such as `-- +goose NO TRANSACTION` still apply).
    pub transaction_per_file: Option<bool>,
    /// The PostgreSQL major version (Flyway runs `ALTER TYPE … ADD VALUE` outside a transaction before 12).
    pub postgres_version: u32,
}

/// The migrations of a directory in the order the tool applies them.
#[derive(Debug, Clone, Default)]
pub struct Ordered {
    pub migrations: Vec<Migration>,
    /// Files the tool ignores or refuses, as (file relative to the migrations directory, why).
    pub notices: Vec<(PathBuf, String)>,
    /// Settings read from the tool's configuration (`flyway.conf`, `package.json`), for [`Tool::script`].
    pub settings: Settings,
}

/// Tool settings found while ordering, used to script each file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Flyway `mixed = true`: transactional and non-transactional statements may share a script.
    pub flyway_mixed: bool,
    /// Prisma ≥ 7.4 splits a script into statements (each in autocommit): the version found.
    pub prisma_splits: Option<String>,
    /// Where the settings came from, for `--explain`.
    pub sources: Vec<String>,
}

/// How sure a piece of evidence makes the detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Strength {
    /// File names only fit the tool's pattern.
    Names,
    /// A project manifest names the tool (`go.mod`, `Cargo.toml`, `package.json`, `pom.xml`).
    Manifest,
    /// A file only this tool writes or reads (a journal, a plan, `atlas.sum`, its markers).
    Marker,
}

/// Why a tool is thought to run a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    pub strength: Strength,
    pub reason: String,
}

/// One migration tool.
pub trait Tool: Sync {
    fn layout(&self) -> Layout;
    /// The tool's name as users know it.
    fn name(&self) -> &'static str;
    /// The evidence in `tree` that this tool runs it; `None` when nothing fits.
    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>>;
    /// The migrations in the order the tool applies them.
    fn order(&self, tree: &dyn Tree) -> Result<Ordered>;
    /// How the tool runs one migration file.
    fn script(
        &self,
        migration: &Migration,
        text: &str,
        tree: &dyn Tree,
        options: &Options,
        settings: &Settings,
    ) -> Result<Script>;
    /// One line per rule for the README table: order, splitting, transactions, source.
    fn rules(&self) -> ToolRules;
}

/// What the README says about a tool, kept beside its code.
pub struct ToolRules {
    pub files: &'static str,
    pub order: &'static str,
    pub transactions: &'static str,
    pub source: &'static str,
}

pub(crate) fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

pub(crate) fn is_sql(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "sql")
}

/// Files directly in the migrations directory.
pub(crate) fn top_level(tree: &dyn Tree) -> impl Iterator<Item = &PathBuf> {
    tree.files().iter().filter(|p| p.components().count() == 1)
}

/// The first of `paths` (in their order) whose text is `marked`, the files read on every core:
/// detecting a tool by a marker in its files reads a whole history when no file has one. A read
/// error before the first marked file is returned, as a read in order would.
pub(crate) fn first_marked<'a>(
    tree: &dyn Tree,
    paths: &[&'a PathBuf],
    marked: impl Fn(&str) -> bool + Sync,
) -> Result<Option<&'a PathBuf>> {
    use rayon::prelude::*;
    let first = paths
        .par_iter()
        .map(|&path| Ok((path, tree.peek(path)?.is_some_and(|text| marked(&text)))))
        .find_first(|read: &Result<(&PathBuf, bool)>| !matches!(read, Ok((_, false))));
    first.transpose().map(|found| found.map(|(path, _)| path))
}

/// `0012_add_users` → (`0012`, `add_users`): the leading digits and the rest after `_`.
pub(crate) fn split_version(stem: &str) -> Option<(&str, &str)> {
    let digits = stem.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0).then(|| (&stem[..digits], stem[digits..].trim_start_matches(['_', '-'])))
}

/// Compares digit strings by value without overflow (`10` after `9`, `0010` = `10`).
pub(crate) fn compare_numbers(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// Whether a project manifest near the migrations (`go.mod`, `Cargo.toml`, `package.json`,
/// `pom.xml`, `build.gradle(.kts)`) names `needle`: which file, if one does.
pub(crate) fn manifest_naming(tree: &dyn Tree, manifests: &[&str], needle: &str) -> Result<Option<String>> {
    for manifest in manifests {
        if let Some((dir, text)) = tree.nearby(manifest)? {
            if text.contains(needle) {
                return Ok(Some(crate::source::slash(&dir.join(manifest))));
            }
        }
    }
    Ok(None)
}

/// The notice for a file that the tool skips.
pub(crate) fn ignored(path: &Path, why: impl Into<String>) -> (PathBuf, String) {
    (path.to_path_buf(), why.into())
}

/// A bad tool file (plan, journal, changelog, config): exit 2 naming the file and line.
pub(crate) fn invalid(tree: &dyn Tree, relative: &Path, line: Option<usize>, message: impl Into<String>) -> Error {
    Error::invalid(Path::new(&tree.display(relative)), line, message)
}

/// The transaction around a whole file: the tool's default (`wraps`, explained by `fact`), unless
/// `[migrations] transaction_per_file` says otherwise.
pub(crate) fn file_wrap(options: &Options, wraps: bool, fact: &str) -> Option<Wrap> {
    match options.transaction_per_file {
        Some(true) => {
            Some(Wrap::file("[migrations] transaction_per_file = true: the runner wraps each file in a transaction"))
        }
        Some(false) => None,
        None => wraps.then(|| Wrap::file(fact)),
    }
}

//! Migration tools, one file each: how each finds its migrations, orders them, splits a file into
//! what it sends to PostgreSQL and wraps it in transactions, and where its down files are. Each
//! file cites the tool's documentation or source the rules were checked against.
//!
//! The pipeline every caller uses (`lint`, `check`, `plan`, and `sluice init`): [`resolve`] the
//! tool (the configured layout, or [`detect`] it from marker files), [`Tool::order`] its
//! migrations, then [`Tool::script`] each file and parse it with [`script::parse`].

mod atlas;
mod dbmate;
mod diesel;
mod drizzle;
mod flat;
mod flyway;
mod golang_migrate;
mod goose;
mod liquibase;
mod prisma;
mod refinery;
pub mod script;
mod sqitch;
mod sqlx;
mod tool;
pub mod tree;

pub use script::{Piece, Problem, Script, Sending, Wrap};
pub(crate) use tool::{
    compare_numbers, file_name, file_wrap, first_marked, ignored, invalid, is_sql, manifest_naming, split_version,
    top_level,
};
pub use tool::{Evidence, Migration, Options, Ordered, Settings, Strength, Tool, ToolRules};
pub use tree::{DiskTree, Tree};

use crate::error::{Error, Result};
use crate::runner::Layout;
use std::cmp::Ordering;
use std::path::{Path, PathBuf};

/// Every tool, in the order detection reports them.
pub static TOOLS: &[&dyn Tool] = &[
    &atlas::Atlas,
    &dbmate::Dbmate,
    &diesel::Diesel,
    &drizzle::Drizzle,
    &flyway::Flyway,
    &golang_migrate::GolangMigrate,
    &goose::Goose,
    &liquibase::Liquibase,
    &prisma::Prisma,
    &refinery::Refinery,
    &sqitch::Sqitch,
    &sqlx::Sqlx,
    &flat::Flat,
];

/// The files near a migrations directory (in it or a parent, up to the project root) that the
/// tools read to decide how the history runs (`Tree::nearby`): a change to one changes what
/// the runner does, so `sluice check` reviews it as it reviews a migration.
pub const CONFIG_FILES: &[&str] = &[
    "Cargo.toml",
    "build.gradle",
    "build.gradle.kts",
    "diesel.toml",
    "flyway.conf",
    "flyway.toml",
    "go.mod",
    "liquibase.properties",
    "package.json",
    "pom.xml",
];

/// The tool for a layout (`Auto` has none).
pub fn tool(layout: Layout) -> Option<&'static dyn Tool> {
    TOOLS.iter().copied().find(|t| t.layout() == layout)
}

/// The tool chosen for a directory and why.
#[derive(Clone)]
pub struct Detection {
    pub tool: &'static dyn Tool,
    /// "atlas.sum lists the migration files" / "set by [migrations] layout in sluice.toml".
    pub reason: String,
}

impl std::fmt::Debug for Detection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Detection({}: {})", self.tool.name(), self.reason)
    }
}

impl Detection {
    pub fn layout(&self) -> Layout {
        self.tool.layout()
    }
}

/// The configured layout's tool, or the detected one under `auto`.
pub fn resolve(layout: Layout, tree: &dyn Tree) -> Result<Detection> {
    match tool(layout) {
        Some(tool) => Ok(Detection { tool, reason: "set by [migrations] layout in sluice.toml".into() }),
        None => detect(tree),
    }
}

/// Picks the tool that runs `tree` from its marker files: the tools with the strongest evidence
/// win; two tools with evidence of the same strength are an error listing them (the layout must
/// then be set), because they would replay the history differently. A directory nothing fits
/// is a flat one (files in name order, no transaction).
pub fn detect(tree: &dyn Tree) -> Result<Detection> {
    let mut found: Vec<(&'static dyn Tool, Evidence)> = Vec::new();
    for tool in TOOLS.iter().copied().filter(|t| t.layout() != Layout::Flat) {
        if let Some(evidence) = tool.evidence(tree)? {
            found.push((tool, evidence));
        }
    }
    let Some(strongest) = found.iter().map(|(_, e)| e.strength).max() else {
        let reason = if tree.files().iter().any(|f| is_sql(f)) {
            "no migration tool's marker or naming fits: plain SQL files in file-name order".to_string()
        } else {
            "the directory holds no SQL file".to_string()
        };
        return Ok(Detection { tool: &flat::Flat, reason });
    };
    let mut best: Vec<(&'static dyn Tool, Evidence)> =
        found.into_iter().filter(|(_, e)| e.strength == strongest).collect();
    if best.len() == 1 {
        let (tool, evidence) = best.remove(0);
        return Ok(Detection { tool, reason: evidence.reason });
    }
    let candidates: Vec<String> = best.iter().map(|(t, e)| format!("{} ({})", t.name(), e.reason)).collect();
    let names: Vec<String> = best.iter().map(|(t, _)| format!("\"{}\"", layout_name(t.layout()))).collect();
    Err(Error::Usage(format!(
        "{}: cannot tell which migration tool runs this directory; it fits {}. They replay it differently \
         (order, statement splitting or transactions), so set [migrations] layout = {} in sluice.toml",
        tree.display(Path::new("")),
        candidates.join("; "),
        names.join(" or ")
    )))
}

/// The `layout` value in sluice.toml for a layout.
pub fn layout_name(layout: Layout) -> &'static str {
    match layout {
        Layout::Auto => "auto",
        Layout::Flat => "flat",
        Layout::Flyway => "flyway",
        Layout::Diesel => "diesel",
        Layout::GolangMigrate => "golang-migrate",
        Layout::Goose => "goose",
        Layout::Sqlx => "sqlx",
        Layout::Refinery => "refinery",
        Layout::Prisma => "prisma",
        Layout::Drizzle => "drizzle",
        Layout::Liquibase => "liquibase",
        Layout::Sqitch => "sqitch",
        Layout::Atlas => "atlas",
        Layout::Dbmate => "dbmate",
    }
}

/// The README's table of migration tools, generated from each tool's [`Tool::rules`].
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| layout | files | order | transactions and splitting | checked against |\n|---|---|---|---|---|\n",
    );
    for tool in TOOLS {
        let rules = tool.rules();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            layout_name(tool.layout()),
            rules.files,
            rules.order,
            rules.transactions,
            rules.source
        ));
    }
    out
}

/// A migration file of a rule's documented example, read as its tool would: a file with
/// dbmate's `-- migrate:up` as dbmate runs it (its down section the rollback), any other as one
/// piece the runner wraps or not.
#[cfg(test)]
pub(crate) fn example_migration(
    migration: Migration,
    name: &str,
    sql: &str,
    in_transaction: bool,
) -> crate::lint::MigrationSource {
    if !dbmate::is_dbmate_file(sql) {
        return crate::lint::MigrationSource::whole_text(migration, name, sql, in_transaction);
    }
    let tree = testing::MemTree::new(&[(name, sql)]);
    let script = dbmate::Dbmate
        .script(&migration, sql, &tree, &Options::default(), &Settings::default())
        .expect("dbmate script");
    let down = script.rollback.clone().map(|text| (format!("{name}.down"), text.into()));
    crate::lint::MigrationSource {
        migration,
        display: name.to_string(),
        text: sql.into(),
        script,
        down,
        findings: Vec::new(),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use std::collections::BTreeMap;

    /// A tree in memory: files under the migrations directory, and nearby files by name.
    #[derive(Default)]
    pub struct MemTree {
        pub files: Vec<PathBuf>,
        pub texts: BTreeMap<PathBuf, String>,
        pub nearby: BTreeMap<String, (PathBuf, String)>,
        pub dir: PathBuf,
    }

    impl MemTree {
        pub fn new(files: &[(&str, &str)]) -> MemTree {
            let mut tree = MemTree::default();
            for (path, text) in files {
                tree.files.push(PathBuf::from(path));
                tree.texts.insert(PathBuf::from(path), text.to_string());
            }
            tree.files.sort();
            tree
        }

        pub fn with_nearby(mut self, name: &str, dir: &str, text: &str) -> MemTree {
            self.nearby.insert(name.into(), (PathBuf::from(dir), text.into()));
            self
        }
    }

    impl Tree for MemTree {
        fn files(&self) -> &[PathBuf] {
            &self.files
        }
        fn read(&self, relative: &Path) -> Result<Option<String>> {
            Ok(self.texts.get(relative).cloned())
        }
        fn dir(&self) -> &Path {
            &self.dir
        }
        fn nearby(&self, name: &str) -> Result<Option<(PathBuf, String)>> {
            Ok(self
                .nearby
                .get(name)
                .cloned()
                .or_else(|| self.texts.get(Path::new(name)).map(|t| (self.dir.clone(), t.clone()))))
        }
        fn display(&self, relative: &Path) -> String {
            crate::source::slash(&Path::new("migrations").join(relative))
        }
    }

    /// The versions a tool orders `tree` into.
    pub fn versions(tool: &dyn Tool, tree: &MemTree) -> Vec<String> {
        tool.order(tree).unwrap().migrations.into_iter().map(|m| m.version).collect()
    }

    /// The up files a tool orders `tree` into.
    pub fn ups(tool: &dyn Tool, tree: &MemTree) -> Vec<String> {
        tool.order(tree).unwrap().migrations.into_iter().map(|m| crate::source::slash(&m.up)).collect()
    }

    /// The script of the one file of `tree` named `up`.
    pub fn script_of(tool: &dyn Tool, tree: &MemTree, up: &str) -> Script {
        let ordered = tool.order(tree).unwrap();
        let migration = ordered.migrations.iter().find(|m| m.up == Path::new(up)).expect("ordered").clone();
        tool.script(&migration, &tree.texts[Path::new(up)], tree, &Options::default(), &ordered.settings).unwrap()
    }

    /// The statements of `up` a tool sends, with whether each runs in a transaction.
    pub fn runs(tool: &dyn Tool, tree: &MemTree, up: &str) -> Vec<(String, bool)> {
        let script = script_of(tool, tree, up);
        let file = script::parse(up.into(), tree.texts[Path::new(up)].as_str().into(), &script);
        let transactions = script::transactions(&file, &script);
        file.parsed
            .statements
            .iter()
            .zip(transactions)
            .map(|(s, t)| (file.parsed.statement_text(s).to_string(), t.is_some()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::MemTree;
    use super::*;

    /// A tree that records the nearby files the tools ask for.
    struct Asking {
        inner: MemTree,
        asked: std::sync::Mutex<std::collections::BTreeSet<String>>,
    }

    impl Tree for Asking {
        fn files(&self) -> &[PathBuf] {
            self.inner.files()
        }
        fn read(&self, relative: &Path) -> Result<Option<String>> {
            self.inner.read(relative)
        }
        fn dir(&self) -> &Path {
            self.inner.dir()
        }
        fn nearby(&self, name: &str) -> Result<Option<(PathBuf, String)>> {
            self.asked.lock().unwrap().insert(name.to_string());
            self.inner.nearby(name)
        }
        fn display(&self, relative: &Path) -> String {
            self.inner.display(relative)
        }
    }

    /// `sluice check` reviews a change to a file the tools read beside the migrations: every
    /// such file must be in `CONFIG_FILES`, or a change to it would pass unreviewed.
    #[test]
    fn every_file_a_tool_reads_beside_the_migrations_is_a_config_file() {
        let files = [
            ("1_a.up.sql", "SELECT 1;"),
            ("00001_a.sql", "-- +goose Up\nSELECT 1;"),
            ("V1__a.sql", "SELECT 1;"),
            ("2024-01-01-000000_a/up.sql", "SELECT 1;"),
            ("20240101000000_a/migration.sql", "SELECT 1;"),
            ("c.sql", "--liquibase formatted sql\n--changeset a:1\nSELECT 1;"),
            ("U1__a.sql", "SELECT 1;"),
        ];
        let tree = Asking { inner: MemTree::new(&files), asked: Default::default() };
        for tool in TOOLS {
            let _ = tool.evidence(&tree);
            let _ = tool.order(&tree);
        }
        let asked = tree.asked.into_inner().unwrap();
        assert!(asked.len() >= 5, "{asked:?}");
        for name in &asked {
            assert!(CONFIG_FILES.contains(&name.as_str()), "{name} is read by a tool but is not in CONFIG_FILES");
        }
    }

    #[test]
    fn the_first_marked_file_in_order_is_found_among_many_read_in_parallel() {
        let files: Vec<(String, &str)> = (0..500)
            .map(|i| (format!("{i:04}_m.sql"), if i == 137 || i == 400 { "-- mark\nSELECT 1;" } else { "SELECT 1;" }))
            .collect();
        let files: Vec<(&str, &str)> = files.iter().map(|(path, text)| (path.as_str(), *text)).collect();
        let tree = MemTree::new(&files);
        let paths: Vec<&PathBuf> = tree.files().iter().collect();
        let marked = first_marked(&tree, &paths, |text| text.starts_with("-- mark")).unwrap();
        assert_eq!(marked, Some(&PathBuf::from("0137_m.sql")));
        assert_eq!(first_marked(&tree, &paths, |text| text.contains("DROP")).unwrap(), None);
    }
}

//! Finding a repository's migration directory (and the tool that runs it) and its query
//! directories.
//!
//! Well-known places are tried first, relative to the directory `sluice init` runs in; only
//! when none holds SQL migrations is the tree searched for directories with those names
//! (monorepos: `services/api/db/migrations`). Several candidates are an error that lists
//! them: guessing wrong would lint the wrong history. Which tool runs the directory is what
//! `sluice lint` would detect (`schema::migrations::detect`), unless `--layout` says.

use crate::config::Layout;
use crate::error::{Error, Result};
use crate::schema::migrations;
use crate::schema::tools::{self, DiskTree};
use std::path::{Path, PathBuf};

/// Where migration tools keep their SQL, relative to the project root: `migrations/` (sqlx,
/// refinery, Atlas, goose, golang-migrate, diesel), `db/migrations` (dbmate, goose), Rails-style
/// `db/migrate`, Prisma, Drizzle, Supabase, Flyway's and Liquibase's Maven/Gradle defaults.
/// A Sqitch project is the directory holding `sqitch.plan`, wherever it is.
pub const MIGRATION_DIRS: &[&str] = &[
    "migrations",
    "db/migrations",
    "db/migrate",
    "sql/migrations",
    "database/migrations",
    "prisma/migrations",
    "drizzle",
    "supabase/migrations",
    "db/changelog",
    "src/main/resources/db/migration",
    "src/main/resources/db/changelog",
];

const SQITCH_PLAN: &str = "sqitch.plan";

/// Where applications commonly keep the SQL they run (sqlc, yesql, hand-written query files).
pub const QUERY_DIRS: &[&str] = &["queries", "sql", "db/queries", "sql/queries"];

/// How deep the fallback search looks for migration directories: a Maven module of a module
/// keeps Flyway's scripts 8 levels down (`services/payments/payments-server/src/main/resources/
/// db/migration`).
const SEARCH_DEPTH: usize = 12;

/// A migration directory and what Sluice recognises in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationDir {
    /// Relative to the project root (`.` for the root itself).
    pub path: PathBuf,
    /// The tool that runs it.
    pub layout: Layout,
    /// Why that tool: the marker found, or "set by --layout".
    pub reason: String,
    /// Migrations the tool would apply.
    pub migrations: usize,
}

/// The migration directory: `explicit` when given, else the one candidate found.
pub fn migration_dir(root: &Path, explicit: Option<&Path>, layout: Layout) -> Result<MigrationDir> {
    if let Some(dir) = explicit {
        let relative = relative_to(root, dir);
        if !root.join(&relative).is_dir() {
            return Err(Error::Usage(format!("--migrations {}: no such directory", dir.display())));
        }
        return describe(root, relative, layout);
    }
    let mut well_known: Vec<PathBuf> =
        MIGRATION_DIRS.iter().map(PathBuf::from).filter(|dir| holds_migrations(root, dir)).collect();
    if root.join(SQITCH_PLAN).is_file() {
        well_known.insert(0, PathBuf::new());
    }
    let candidates = if well_known.is_empty() { search(root)? } else { well_known };
    match candidates.as_slice() {
        [] => Err(Error::Usage(format!(
            "no directory of SQL migrations found under {} (looked for {}, a sqitch.plan, and directories \
             with those names below them, up to {SEARCH_DEPTH} levels deep); pass --migrations DIR. If your \
             migrations are not SQL (Rails, Django, Alembic), dump the schema with `pg_dump --schema-only` and \
             point `[migrations] schema_dump` at it.",
            root.display(),
            MIGRATION_DIRS.join(", ")
        ))),
        [one] => describe(root, one.clone(), layout),
        several => {
            let listed = several
                .iter()
                .map(|dir| match describe(root, dir.clone(), layout) {
                    Ok(found) => format!("  {}  ({})", display(&found.path), found.summary()),
                    Err(_) => format!("  {}  (the migration tool is unclear: --layout names it)", display(dir)),
                })
                .collect::<Vec<_>>()
                .join("\n");
            Err(Error::Usage(format!(
                "several migration directories found; pick one with `sluice init --migrations DIR`:\n{listed}"
            )))
        }
    }
}

impl MigrationDir {
    /// `flyway layout, 12 migration(s)`.
    pub fn summary(&self) -> String {
        format!("{} layout, {} migration(s)", self.layout_name(), self.migrations)
    }

    /// The `layout` value in sluice.toml.
    pub fn layout_name(&self) -> &'static str {
        tools::layout_name(self.layout)
    }
}

/// Which tool runs the directory (as `sluice lint` detects it, or `layout` when set) and how
/// many migrations it would apply. An ambiguous directory is the detection's error.
fn describe(root: &Path, path: PathBuf, layout: Layout) -> Result<MigrationDir> {
    let dir = root.join(&path);
    let detection = match layout {
        Layout::Auto => migrations::detect(&dir, root).map_err(|e| match e {
            Error::Usage(message) => Error::Usage(format!("{message} (with `sluice init`: --layout NAME)")),
            other => other,
        })?,
        chosen => tools::resolve(chosen, &DiskTree::open(&dir, root, root)?)?,
    };
    let migrations = detection.tool.order(&DiskTree::open(&dir, root, root)?)?.migrations.len();
    let reason = if layout == Layout::Auto { detection.reason.clone() } else { "set by --layout".to_string() };
    Ok(MigrationDir { path, layout: detection.layout(), reason, migrations })
}

/// Whether `dir` (relative to `root`) holds `.sql` files or is a Sqitch project.
fn holds_migrations(root: &Path, dir: &Path) -> bool {
    let absolute = root.join(dir);
    absolute.join(SQITCH_PLAN).is_file()
        || (absolute.is_dir()
            && migrations::list_files(&absolute)
                .is_ok_and(|files| files.iter().any(|f| f.extension().is_some_and(|e| e == "sql"))))
}

/// Directories below `root` whose path ends like a well-known migration directory and that
/// hold SQL, or that hold a `sqitch.plan`; the outermost of nested matches. Honours
/// `.gitignore`; skips hidden directories and dependency folders.
fn search(root: &Path) -> Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .max_depth(Some(SEARCH_DEPTH))
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .filter_entry(|e| !matches!(e.file_name().to_str(), Some("node_modules" | "target" | "vendor")))
        .build();
    for entry in walker {
        let entry = entry.map_err(|e| Error::Other(format!("{}: {e}", root.display())))?;
        if !entry.file_type().is_some_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else { continue };
        let named_like =
            MIGRATION_DIRS.iter().any(|known| relative.ends_with(known)) || entry.path().join(SQITCH_PLAN).is_file();
        let inside_found = found.iter().any(|outer| relative.starts_with(outer));
        if named_like && !inside_found && holds_migrations(root, relative) {
            found.push(relative.to_path_buf());
        }
    }
    found.sort();
    Ok(found)
}

/// The query directories: `explicit` when given, else the well-known ones holding `.sql` files
/// other than the migrations. Returns them and warnings about directories left out.
pub fn query_dirs(root: &Path, explicit: &[PathBuf], migrations: &Path) -> Result<(Vec<PathBuf>, Vec<String>)> {
    if !explicit.is_empty() {
        let mut dirs = Vec::new();
        for dir in explicit {
            let relative = relative_to(root, dir);
            if !root.join(&relative).is_dir() {
                return Err(Error::Usage(format!("--queries {}: no such directory", dir.display())));
            }
            dirs.push(relative);
        }
        return Ok((dirs, Vec::new()));
    }
    let mut dirs = Vec::new();
    let mut warnings = Vec::new();
    for candidate in QUERY_DIRS.iter().map(PathBuf::from) {
        let absolute = root.join(&candidate);
        let nested = dirs.iter().any(|d: &PathBuf| candidate.starts_with(d));
        if nested || candidate.starts_with(migrations) || !absolute.is_dir() {
            continue;
        }
        let files = crate::queries::sql_files::list(std::slice::from_ref(&absolute))?;
        let (inside, outside): (Vec<&PathBuf>, Vec<&PathBuf>) =
            files.iter().partition(|f| f.starts_with(root.join(migrations)));
        match (inside.is_empty(), outside.is_empty()) {
            (_, true) => {}
            (true, false) => dirs.push(candidate),
            (false, false) => warnings.push(format!(
                "{}/ holds the migrations as well as other SQL, so it is not listed as a query directory \
                 (its migrations would be linted as queries); list the directories of your application's \
                 queries in [queries] dirs",
                display(&candidate)
            )),
        }
    }
    Ok((dirs, warnings))
}

/// `path` relative to `root` when it is inside it (flags may name absolute paths).
fn relative_to(root: &Path, path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() { path.to_path_buf() } else { root.join(path) };
    absolute.strip_prefix(root).map(Path::to_path_buf).unwrap_or(absolute)
}

/// A path as `sluice.toml` and messages show it: with `/`, and `.` for the root itself.
pub fn display(path: &Path) -> String {
    match path.to_string_lossy().replace('\\', "/") {
        empty if empty.is_empty() => ".".to_string(),
        shown => shown,
    }
}

/// A query source `sluice init` found, with what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundSource {
    /// Relative to the root.
    pub path: PathBuf,
    pub files: usize,
    pub queries: usize,
    /// "Go 30, Python 11" for code; the query files' directory for sqlc.
    pub detail: String,
}

/// Directories no one keeps their own queries or configuration in.
const NOT_SOURCES: &[&str] = &["node_modules", "target", "vendor", "dist", "build", "__pycache__"];

/// The sqlc configurations below `root` (three levels deep at most), each with the query files
/// it names and the queries in them.
pub fn sqlc_configs(root: &Path) -> Result<Vec<FoundSource>> {
    let walker = ignore::WalkBuilder::new(root)
        .max_depth(Some(3))
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .filter_entry(|e| !NOT_SOURCES.iter().any(|skip| e.file_name() == *skip))
        .build();
    let mut found = Vec::new();
    for entry in walker {
        let entry = entry.map_err(|e| Error::Other(format!("{}: {e}", root.display())))?;
        let is_config = entry.file_name().to_str().is_some_and(|n| crate::queries::sqlc::CONFIG_FILES.contains(&n));
        if !is_config || !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let config = crate::queries::sqlc::parse(entry.path(), &crate::error::read_text(entry.path())?)?;
        let files = crate::queries::sqlc::files_on_disk(entry.path(), &config.queries)?;
        let mut queries = 0;
        for file in &files {
            let text = crate::error::read_text(file)?;
            let query = crate::queries::Query::whole_file("", text, crate::queries::Source::QueryFile);
            queries += crate::queries::ParsedQuery::parse(query).file().parsed.statements.len();
        }
        let detail = config.queries.iter().map(|q| display(&relative_to(root, q))).collect::<Vec<_>>().join(", ");
        found.push(FoundSource { path: relative_to(root, entry.path()), files: files.len(), queries, detail });
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// The top-level directories of `root` whose code passes SQL to known database calls, each with
/// the queries found and their languages; the migrations directory and what holds it are not
/// application code.
pub fn code_dirs(root: &Path, migrations: &Path) -> Result<Vec<FoundSource>> {
    let mut candidates = Vec::new();
    for entry in std::fs::read_dir(root).map_err(|e| Error::io(root, e))? {
        let entry = entry.map_err(|e| Error::io(root, e))?;
        let name = entry.file_name().to_string_lossy().to_string();
        let relative = PathBuf::from(&name);
        // A directory of migration code is not application code (its SQL is a past migration's).
        let migration_code = crate::queries::code::migration_code::by_path(&relative.join("x")).is_some();
        let skipped = name.starts_with('.')
            || NOT_SOURCES.contains(&name.as_str())
            || migrations.starts_with(&relative)
            || migration_code;
        if !skipped && entry.file_type().is_ok_and(|t| t.is_dir()) {
            candidates.push(relative);
        }
    }
    candidates.sort();
    let mut found = Vec::new();
    for dir in candidates {
        let scanned = crate::queries::code_scan::on_disk(&[root.join(&dir)], &|p| p.display().to_string())?;
        if scanned.queries.is_empty() {
            continue;
        }
        let mut by_language: std::collections::BTreeMap<&str, usize> = Default::default();
        let mut files = std::collections::BTreeSet::new();
        for query in &scanned.queries {
            let language = crate::queries::code::language_of(Path::new(&query.file)).map_or("other", |l| l.name());
            *by_language.entry(language).or_default() += 1;
            files.insert(query.file.clone());
        }
        let detail = by_language.iter().map(|(l, n)| format!("{l} {n}")).collect::<Vec<_>>().join(", ");
        found.push(FoundSource { path: dir, files: files.len(), queries: scanned.queries.len(), detail });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_code_is_not_proposed_as_application_code() {
        let root = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let full = root.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        };
        let query =
            |table: &str| format!("package x\n\nfunc f() {{ db.Exec(\"DELETE FROM {table} WHERE id = $1\", 1) }}\n");
        // listmonk's layout: Go migrations below the application code, and a top-level one.
        write("internal/store/store.go", &query("subscribers"));
        write("internal/migrations/v3.0.0.go", &query("old_views"));
        write("migrate/v1.go", &query("older_views"));
        let found = code_dirs(root.path(), Path::new("db/migrations")).unwrap();
        let found: Vec<(String, usize)> = found.iter().map(|f| (f.path.display().to_string(), f.queries)).collect();
        assert_eq!(found, vec![("internal".to_string(), 1)], "the migrations below internal are not counted");
    }

    /// Issue 37: a Maven multi-module project keeps Flyway's scripts deep down.
    #[test]
    fn a_flyway_directory_deep_in_a_maven_module_is_found() {
        let root = tempfile::tempdir().unwrap();
        let deep = root.path().join("services/payments/payments-server/src/main/resources/db/migration");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("V1__init.sql"), "CREATE TABLE payments (id bigint PRIMARY KEY);\n").unwrap();
        std::fs::write(
            root.path().join("services/payments/payments-server/pom.xml"),
            "<project><artifactId>flyway-core</artifactId></project>",
        )
        .unwrap();
        let found = migration_dir(root.path(), None, Layout::Auto).unwrap();
        assert_eq!(display(&found.path), "services/payments/payments-server/src/main/resources/db/migration");
        assert_eq!(found.layout, Layout::Flyway);
        let empty = tempfile::tempdir().unwrap();
        let message = migration_dir(empty.path(), None, Layout::Auto).unwrap_err().to_string();
        assert!(message.contains("up to 12 levels deep"), "{message}");
    }
}

//! Reading a project's migrations, query files and policies from disk, in parallel.

use super::{MigrationSource, Settings, Sources};
use crate::config::{Layout, Loaded};
use crate::error::{read_text, Error, Result};
use crate::policy::Policies;
use crate::rules::SourceFile;
use crate::schema::migrations::{self, Migration};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// The directory paths in findings are relative to: the root of the repository `cwd` is in,
/// else `cwd` itself.
pub fn display_root(cwd: &Path) -> PathBuf {
    cwd.ancestors().find(|d| d.join(".git").exists()).unwrap_or(cwd).to_path_buf()
}

/// `path` as findings show it: relative to `root` when under it, with `/`.
pub fn display_path(path: &Path, root: &Path) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let shown = absolute.strip_prefix(root).map(Path::to_path_buf).unwrap_or_else(|_| path.to_path_buf());
    shown.to_string_lossy().replace('\\', "/")
}

fn read(path: &Path, root: &Path) -> Result<SourceFile> {
    Ok(SourceFile::parse(display_path(path, root), read_text(path)?))
}

/// Whether the runner wraps this migration in a transaction, honouring the markers runners
/// use: dbmate wraps every file that has a `-- migrate:up` line unless it says
/// `transaction:false`; diesel skips the transaction when a `metadata.toml` beside `up.sql`
/// says `run_in_transaction = false` (`metadata` is that file's text, read from disk or from a
/// git revision by the caller). Otherwise `default` (the configuration or the layout).
pub fn runs_in_transaction(default: bool, up: &Path, text: &str, metadata: Option<&str>) -> bool {
    if let Some(marker) = text.lines().map(str::trim).find(|l| l.starts_with("-- migrate:up")) {
        return !marker.split_whitespace().any(|w| w == "transaction:false");
    }
    if up.file_name().is_some_and(|n| n == "up.sql") {
        let table = metadata.and_then(|m| m.parse::<toml::Table>().ok());
        if let Some(toml::Value::Boolean(wraps)) = table.as_ref().and_then(|t| t.get("run_in_transaction")) {
            return *wraps;
        }
    }
    default
}

/// The `metadata.toml` beside a diesel `up.sql` on disk, when there is one.
fn metadata_beside(up: &Path) -> Option<String> {
    if up.file_name().is_some_and(|n| n == "up.sql") {
        let metadata = up.parent()?.join("metadata.toml");
        return std::fs::read_to_string(metadata).ok();
    }
    None
}

/// Resolves the layout and the runner's transaction mode for a set of migration files.
pub fn layout_and_transaction(loaded: &Loaded, files: &[PathBuf]) -> (Layout, bool) {
    let layout = match loaded.config.migrations.layout {
        Layout::Auto => migrations::detect(files),
        other => other,
    };
    let wraps = loaded
        .config
        .migrations
        .transaction_per_file
        .unwrap_or_else(|| migrations::runner_wraps_in_transaction(layout));
    (layout, wraps)
}

/// Reads everything the configuration names, plus `extra` files (linted as query files when
/// they are neither migrations nor configured queries).
pub fn load(loaded: &Loaded, root: &Path, extra: &[PathBuf]) -> Result<(Sources, Settings)> {
    let dir = loaded.migrations_dir();
    let migrations = load_migrations(loaded, root)?;

    let mut query_paths = migrations::query_files(&loaded.query_dirs())?;
    let migration_paths: Vec<PathBuf> = migrations.iter().map(|m| dir.join(&m.migration.up)).collect();
    for path in extra {
        let is_known = migration_paths.iter().chain(query_paths.iter()).any(|p| same_file(p, path));
        if !is_known && path.extension().is_some_and(|e| e == "sql") {
            query_paths.push(path.clone());
        }
    }
    let queries = query_paths.par_iter().map(|p| read(p, root)).collect::<Result<Vec<_>>>()?;

    let schema_dump =
        loaded.config.migrations.schema_dump.as_ref().map(|p| read(&loaded.resolve(p), root)).transpose()?;
    let policies = Policies::load(&loaded.policies_dir())?;
    let settings =
        Settings { postgres_version: loaded.config.postgres_version, levels: loaded.config.rules.clone(), policies };
    Ok((Sources { schema_dump, migrations, queries }, settings))
}

/// Reads the configured migrations in the order the runner applies them, each parsed.
pub fn load_migrations(loaded: &Loaded, root: &Path) -> Result<Vec<MigrationSource>> {
    let dir = loaded.migrations_dir();
    let files = migrations::list_files(&dir)?;
    let (layout, wraps) = layout_and_transaction(loaded, &files);
    let list: Vec<Migration> = migrations::from_paths(&files, layout);
    list.into_par_iter()
        .map(|migration| {
            let up_path = dir.join(&migration.up);
            let up = read(&up_path, root)?;
            let down = migration.down.as_ref().map(|d| read(&dir.join(d), root)).transpose()?;
            let in_transaction =
                runs_in_transaction(wraps, &up_path, &up.parsed.text, metadata_beside(&up_path).as_deref());
            Ok(MigrationSource { migration, up, down, in_transaction })
        })
        .collect()
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::path::absolute(a), std::path::absolute(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Expands command-line paths (files or directories) to the display paths they select.
pub fn selection(paths: &[PathBuf], root: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for path in paths {
        if !path.exists() {
            return Err(Error::Usage(format!("{}: no such file or directory", path.display())));
        }
        out.push(display_path(path, root));
    }
    Ok(out)
}

/// Whether a file's display path is selected by the command-line paths (a directory selects what is below it).
pub fn is_selected(display: &str, selection: &[String]) -> bool {
    selection.iter().any(|s| {
        display == s || display.starts_with(&format!("{}/", s.trim_end_matches('/'))) || s == "." || s.is_empty()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dbmate_markers_decide_for_their_file() {
        let up = Path::new("db/migrations/20240101_add_index.sql");
        assert!(runs_in_transaction(false, up, "-- migrate:up\nCREATE INDEX i ON t (a);\n-- migrate:down\n", None));
        assert!(!runs_in_transaction(
            true,
            up,
            "-- migrate:up transaction:false\nCREATE INDEX CONCURRENTLY i ON t (a);\n",
            None
        ));
        assert!(runs_in_transaction(true, up, "CREATE TABLE t (a int);", None));
        assert!(!runs_in_transaction(false, up, "CREATE TABLE t (a int);", None));
    }

    #[test]
    fn diesel_metadata_toml_decides_beside_up_sql_only() {
        let up = Path::new("2024-01-01-000000_idx/up.sql");
        assert!(
            runs_in_transaction(true, up, "CREATE INDEX a ON t (x);", None),
            "no metadata.toml: the layout default"
        );
        assert!(!runs_in_transaction(true, up, "SELECT 1;", Some("# diesel\nrun_in_transaction = false\n")));
        assert!(runs_in_transaction(false, up, "SELECT 1;", Some("run_in_transaction = true\n")));
        assert!(runs_in_transaction(true, Path::new("001_x.sql"), "SELECT 1;", Some("run_in_transaction = false")));
    }

    #[test]
    fn metadata_is_read_from_disk_beside_up_sql() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("2024-01-01-000000_add_index");
        std::fs::create_dir_all(&folder).unwrap();
        let up = folder.join("up.sql");
        assert_eq!(metadata_beside(&up), None);
        std::fs::write(folder.join("metadata.toml"), "run_in_transaction = false\n").unwrap();
        assert_eq!(metadata_beside(&up).as_deref(), Some("run_in_transaction = false\n"));
    }
}

//! What a plan comparison compares: the base and head migration histories, in the order the
//! runner applies them, and the query files. From two directories on disk (`sluice plan
//! --base-dir/--head-dir`) or from two git revisions (`sluice plan --base/--head`, `sluice
//! check`), read through git without a checkout.

use super::fixture::MigrationSql;
use crate::config::{Layout, Loaded};
use crate::error::{read_text, Error, Result};
use crate::git::tree::GitTree;
use crate::git::{self, Repo, Side};
use crate::lint::load::tool_options;
use crate::schema::migrations::{self, Loaded as LoadedMigration};
use crate::schema::tools::{self, DiskTree, Tree};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Queries to plan, from any source (a query file; SQL found in application code): the text
/// the head runs, the name findings give it, and what the base side runs instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuerySource {
    /// Relative to the project (or repository) root, with `/`; also names the file in errors.
    pub file: String,
    /// The head side's text.
    pub text: String,
    pub base: BaseText,
}

/// The base side's text of a query source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseText {
    /// The same text on both sides.
    Same,
    /// Another text: its statements are planned on the base fixture, the head's on the head.
    Changed(String),
    /// New on the head: planned on the head only and judged on its own.
    Absent,
}

impl QuerySource {
    /// Reads `path` from disk, reported relative to `root`; the same on both sides.
    pub fn load(root: &Path, path: &Path) -> Result<QuerySource> {
        let text = read_text(path)?;
        Ok(QuerySource { file: git::slash(path.strip_prefix(root).unwrap_or(path)), text, base: BaseText::Same })
    }

    /// A source whose head text is `head` and whose base text is `base` (`None`: new on head).
    pub fn compared(file: String, head: String, base: Option<String>) -> QuerySource {
        let base = match base {
            None => BaseText::Absent,
            Some(b) if b == head => BaseText::Same,
            Some(b) => BaseText::Changed(b),
        };
        QuerySource { file, text: head, base }
    }
}

/// Both sides of a comparison read from git.
#[derive(Debug, Clone)]
pub struct GitSides {
    pub base: Vec<MigrationSql>,
    pub head: Vec<MigrationSql>,
    /// The head side's query files, repository-relative, each with its base text.
    pub queries: Vec<QuerySource>,
    /// The layout used for both sides (detected from the head side under `auto`).
    pub layout: Layout,
}

/// A migration as `sluice plan` applies it: the statements its tool sends, in its order.
fn migration_sql(loaded: LoadedMigration, name: String, path: PathBuf) -> Result<MigrationSql> {
    let (statements, error) = migrations::deployed_statements(&loaded);
    if let Some((message, line)) = error {
        return Err(Error::invalid(&path, Some(line), format!("cannot split the file into statements: {message}")));
    }
    Ok(MigrationSql { name, path, sql: loaded.text.to_string(), deployed: Some(statements) })
}

/// The migrations in `dir` on disk in the order the project's migration tool applies them, each
/// reduced to what the tool sends (down files, down sections and rollback comments are never
/// applied). Each is named by its path relative to `dir`, which for a flat layout is its file name.
pub fn dir_migrations(dir: &Path, config: &Loaded) -> Result<Vec<MigrationSql>> {
    let tree = DiskTree::open_to_load(dir, &config.root, &config.root)?;
    let history = migrations::load(&tree, config.config.migrations.layout, &tool_options(config), None)?;
    history
        .migrations
        .into_iter()
        .map(|m| {
            let name = git::slash(&m.migration.up);
            let path = dir.join(&m.migration.up);
            migration_sql(m, name, path)
        })
        .collect()
}

/// Reads the migrations under the configured migrations directory on both sides and the query
/// files under `query_paths` (directories or files) on both sides, through git: each head query
/// file with its base text, so a changed query is planned as it was on base and as it is on
/// head. Paths are absolute or relative to the repository root; query paths outside the
/// repository are read from disk and count as the same on both sides.
pub fn from_git(repo: &Repo, base: &Side, head: &Side, config: &Loaded, query_paths: &[PathBuf]) -> Result<GitSides> {
    let migrations_dir = config.migrations_dir();
    let prefix = repo.relative(&migrations_dir).ok_or_else(|| {
        Error::Usage(format!(
            "{}: the migrations directory is outside the repository {}; compare directories with --base-dir/--head-dir",
            migrations_dir.display(),
            repo.root().display()
        ))
    })?;
    let base_tree = GitTree::open(repo, *base, &migrations_dir, &config.root)?;
    let head_tree = GitTree::open(repo, *head, &migrations_dir, &config.root)?;
    // The tool is the head side's, unless the head side has no migration left.
    let detection_tree: &dyn Tree = if head_tree.files().is_empty() { &base_tree } else { &head_tree };
    let layout = tools::resolve(config.config.migrations.layout, detection_tree)?.layout();
    let options = tool_options(config);
    let side = |tree: &GitTree| -> Result<Vec<MigrationSql>> {
        migrations::load(tree, layout, &options, None)?
            .migrations
            .into_iter()
            .map(|m| {
                let name = git::slash(&m.migration.up);
                let path = PathBuf::from(git::join_dir(&prefix, &name));
                migration_sql(m, name, path)
            })
            .collect()
    };
    let base_list = side(&base_tree)?;
    let head_list = side(&head_tree)?;

    let mut queries: BTreeMap<String, String> = BTreeMap::new();
    let mut base_texts: BTreeMap<String, String> = BTreeMap::new();
    for path in query_paths {
        let Some(relative) = repo.relative(path) else {
            // Shared queries kept outside the repository are the same on both sides.
            for file in crate::queries::sql_files::list(std::slice::from_ref(path))?
                .into_iter()
                .chain(Some(path.clone()).filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "sql")))
            {
                let q = QuerySource::load(repo.root(), &file)?;
                base_texts.insert(q.file.clone(), q.text.clone());
                queries.insert(q.file, q.text);
            }
            continue;
        };
        // Migrations kept under a query directory are not queries.
        let is_query = |p: &str| p.ends_with(".sql") && (prefix.is_empty() || !under(p, &prefix));
        // A single file: `read_files` only walks directories.
        if relative.ends_with(".sql") {
            if let Some(text) = git::read_file(repo, head, &relative)? {
                queries.insert(relative.clone(), text);
            }
            if let Some(text) = git::read_file(repo, base, &relative)? {
                base_texts.insert(relative, text);
            }
            continue;
        }
        for (side, texts) in [(head, &mut queries), (base, &mut base_texts)] {
            texts.extend(git::read_files(repo, side, path)?.into_iter().filter(|(file, _)| is_query(file)));
        }
    }
    let queries = queries
        .into_iter()
        .map(|(file, text)| {
            let base = base_texts.remove(&file);
            QuerySource::compared(file, text, base)
        })
        .collect();
    Ok(GitSides { base: base_list, head: head_list, queries, layout })
}

fn under(path: &str, dir: &str) -> bool {
    path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit_all(git: &git2::Repository) -> git::Oid {
        let mut index = git.index().unwrap();
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
        index.write().unwrap();
        let tree = git.find_tree(index.write_tree().unwrap()).unwrap();
        let signature = git2::Signature::now("Test", "test@example.com").unwrap();
        git.commit(Some("HEAD"), &signature, &signature, "base", &tree, &[]).unwrap()
    }

    fn write(root: &Path, path: &str, text: &str) {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }

    #[test]
    fn reads_both_sides_in_runner_order_without_down_files_and_marks_new_queries() {
        let dir = tempfile::tempdir().unwrap();
        let git = git2::Repository::init(dir.path()).unwrap();
        write(dir.path(), "db/2024-01-02-000000_b/up.sql", "CREATE INDEX b ON a (x);\n");
        write(dir.path(), "db/2024-01-02-000000_b/down.sql", "DROP INDEX b;\n");
        write(dir.path(), "db/2024-01-01-000000_a/up.sql", "CREATE TABLE a (x int);\n");
        write(dir.path(), "queries/old.sql", "SELECT x FROM a;\n");
        write(dir.path(), "queries/changed.sql", "SELECT x FROM a WHERE x = $1;\n");
        let base = commit_all(&git);
        write(dir.path(), "queries/changed.sql", "SELECT x FROM a WHERE x = $1 OR x > $2;\n");
        // Uncommitted on the head side (the working tree): a new migration and a new query.
        write(dir.path(), "db/2024-01-03-000000_c/up.sql", "DROP INDEX b;\n");
        write(dir.path(), "queries/reports/new.sql", "SELECT count(*) FROM a;\n");
        let repo = git::open(dir.path()).unwrap();
        let mut config = crate::config::Loaded {
            config: crate::config::Config::default(),
            root: repo.root().to_path_buf(),
            file: None,
        };
        config.config.migrations.dir = PathBuf::from("db");
        let sides =
            from_git(&repo, &Side::Rev(base), &Side::WorkTree, &config, &[repo.root().join("queries")]).unwrap();
        assert_eq!(sides.layout, Layout::Diesel);
        let names = |list: &[MigrationSql]| list.iter().map(|m| m.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&sides.base), ["2024-01-01-000000_a/up.sql", "2024-01-02-000000_b/up.sql"]);
        assert_eq!(names(&sides.head)[2], "2024-01-03-000000_c/up.sql");
        assert_eq!(sides.head[2].path, PathBuf::from("db/2024-01-03-000000_c/up.sql"));
        assert_eq!(sides.head[2].sql, "DROP INDEX b;\n");
        let files: Vec<&str> = sides.queries.iter().map(|q| q.file.as_str()).collect();
        assert_eq!(files, ["queries/changed.sql", "queries/old.sql", "queries/reports/new.sql"]);
        assert_eq!(sides.queries[0].text, "SELECT x FROM a WHERE x = $1 OR x > $2;\n");
        assert_eq!(sides.queries[0].base, BaseText::Changed("SELECT x FROM a WHERE x = $1;\n".into()));
        assert_eq!(sides.queries[1].base, BaseText::Same);
        assert_eq!(sides.queries[2].base, BaseText::Absent);
    }
}

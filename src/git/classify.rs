//! What a changed path is to Sluice, from the configured directories.

use super::paths::relative_dir;
use super::{Change, ChangeKind};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// A `.sql` file under the migrations directory, or a goose Go migration there (`.go`):
    /// the tool runs it, so the gate says what it could not check, as `lint` does.
    Migration,
    /// A file holding application queries: a `.sql` file under a query directory or among
    /// sqlc's query paths, a source file under an application code directory.
    Query,
    /// Any file under the policies directory.
    Policy,
    /// Nothing Sluice reviews.
    Other,
}

/// A change with what its path is, and for renames what the old path was: a migration moved
/// out of the migrations directory leaves the history as surely as a deleted one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classified {
    pub change: Change,
    pub kind: FileKind,
    /// The old path's kind, for renames.
    pub from_kind: Option<FileKind>,
}

impl Classified {
    /// Whether Sluice reviews this change at all (either path is not `Other`).
    pub fn is_reviewed(&self) -> bool {
        self.kind != FileKind::Other || self.from_kind.is_some_and(|k| k != FileKind::Other)
    }
}

/// Classifies repository-relative paths. Directories may be given relative to the repository
/// root or absolute (inside the repository); `./` and trailing slashes are ignored.
#[derive(Clone, Debug)]
pub struct Classifier {
    migrations: String,
    queries: Vec<String>,
    policies: String,
    /// Application code directories: their source files hold queries.
    code: Vec<String>,
    /// sqlc's query paths: a file, or a directory whose own `.sql` files sqlc reads.
    sqlc: Vec<String>,
}

impl Classifier {
    pub fn new(repo_root: &Path, migrations_dir: &Path, query_dirs: &[PathBuf], policies_dir: &Path) -> Self {
        Classifier {
            migrations: relative_dir(repo_root, migrations_dir),
            queries: query_dirs.iter().map(|d| relative_dir(repo_root, d)).collect(),
            policies: relative_dir(repo_root, policies_dir),
            code: Vec::new(),
            sqlc: Vec::new(),
        }
    }

    /// Also classifies as queries the source files below `code_dirs` that hold SQL Sluice
    /// reads (`crate::queries::code::language_of`) and the query files of sqlc's `sqlc_paths`.
    pub fn with_query_sources(mut self, repo_root: &Path, code_dirs: &[PathBuf], sqlc_paths: &[PathBuf]) -> Self {
        self.code = code_dirs.iter().map(|d| relative_dir(repo_root, d)).collect();
        self.sqlc = sqlc_paths.iter().map(|d| relative_dir(repo_root, d)).collect();
        self
    }

    /// A file one of the query sources reads.
    fn holds_queries(&self, path: &str, sql: bool) -> bool {
        let sqlc = || {
            let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
            self.sqlc.iter().any(|p| p == path || (p == dir && crate::queries::sqlc::reads(name)))
        };
        (sql && (self.queries.iter().any(|dir| under(path, dir)) || sqlc()))
            || (self.code.iter().any(|dir| under(path, dir))
                && crate::queries::code::language_of(Path::new(path)).is_some())
    }

    /// The kind of a repository-relative `/` path. A directory configured for two purposes
    /// counts first as migrations, then queries, then policies.
    pub fn classify(&self, path: &str) -> FileKind {
        let extension = |want: &str| Path::new(path).extension().is_some_and(|e| e.eq_ignore_ascii_case(want));
        let sql = extension("sql");
        if (sql || extension("go")) && under(path, &self.migrations) {
            FileKind::Migration
        } else if self.holds_queries(path, sql) {
            FileKind::Query
        } else if under(path, &self.policies) {
            FileKind::Policy
        } else {
            FileKind::Other
        }
    }

    pub fn classify_change(&self, change: &Change) -> Classified {
        let from_kind = match &change.kind {
            ChangeKind::Renamed { from } => Some(self.classify(from)),
            _ => None,
        };
        Classified { kind: self.classify(&change.path), from_kind, change: change.clone() }
    }

    pub fn classify_all(&self, changes: &[Change]) -> Vec<Classified> {
        changes.iter().map(|c| self.classify_change(c)).collect()
    }
}

fn under(path: &str, dir: &str) -> bool {
    dir.is_empty() || path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classifier() -> Classifier {
        Classifier::new(
            Path::new("/repo"),
            Path::new("./db/migrations/"),
            &[PathBuf::from("queries"), PathBuf::from("/repo/app/sql")],
            Path::new("policies"),
        )
    }

    #[test]
    fn paths_are_classified_by_directory_and_extension() {
        let c = classifier();
        assert_eq!(c.classify("db/migrations/0001_init.sql"), FileKind::Migration);
        assert_eq!(c.classify("db/migrations/V2__x.SQL"), FileKind::Migration);
        assert_eq!(c.classify("db/migrations/README.md"), FileKind::Other);
        assert_eq!(c.classify("db/migrations_old/0001.sql"), FileKind::Other);
        assert_eq!(c.classify("queries/reports/daily.sql"), FileKind::Query);
        assert_eq!(c.classify("app/sql/find.sql"), FileKind::Query);
        assert_eq!(c.classify("policies/freeze.toml"), FileKind::Policy);
        assert_eq!(c.classify("src/main.rs"), FileKind::Other);
    }

    #[test]
    fn a_migration_moved_out_keeps_its_old_kind() {
        let change =
            Change { kind: ChangeKind::Renamed { from: "db/migrations/3.sql".into() }, path: "attic/3.sql".into() };
        let classified = classifier().classify_change(&change);
        assert_eq!(classified.kind, FileKind::Other);
        assert_eq!(classified.from_kind, Some(FileKind::Migration));
        assert!(classified.is_reviewed());
    }

    #[test]
    fn absolute_dirs_outside_the_repository_match_nothing() {
        let c = Classifier::new(Path::new("/repo"), Path::new("/elsewhere/migrations"), &[], Path::new("policies"));
        assert_eq!(c.classify("elsewhere/migrations/1.sql"), FileKind::Other);
        assert_eq!(c.classify("migrations/1.sql"), FileKind::Other);
    }
}

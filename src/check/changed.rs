//! The stage of `sluice check` that sorts the changed files: migrations, queries, policies, or
//! none of the gate's business.

use super::revisions::Revisions;
use crate::config::Loaded;
use crate::error::{Error, Result};
use crate::finding::Finding;
use crate::git::classify::{Classified, Classifier, FileKind};
use crate::git::{self, ChangeKind};
use crate::lint;
use crate::schema::tools;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Every changed file with what it is to the gate.
pub(super) struct ChangedFiles {
    pub classifier: Classifier,
    pub files: Vec<Classified>,
    /// sqlc's query paths (from the base revision's sqlc configuration), with the configuration.
    pub sqlc_paths: Vec<(std::path::PathBuf, String)>,
    /// The changed files the migration runner reads that are not migrations Sluice lints: any
    /// other file under the migrations directory (a manifest such as `sqitch.plan`, Drizzle's
    /// journal, `atlas.sum` or a Liquibase changelog, a Liquibase XML changeset, a file of an
    /// extension the tool runs) and the tools' configuration files beside it. A change to one is
    /// reviewed as the migrations it makes the runner run.
    pub runner_inputs: Vec<String>,
    /// Submodules where the migrations live (on either side): their files are in no revision of
    /// this repository, so they are `unread-text` errors whatever the change touches.
    pub unread: Vec<Finding>,
}

impl ChangedFiles {
    /// Classifies the changes by the trusted configuration's directories, which must be inside
    /// the repository: `check` reviews what git tracks.
    pub fn classify(revisions: &Revisions, loaded: &Loaded) -> Result<ChangedFiles> {
        ensure_inside(revisions, loaded)?;
        let unread = submodules(revisions, loaded)?;
        if unread.is_empty() {
            ensure_migrations_dir(revisions, loaded)?;
        }
        let repo = &revisions.repo;
        let sqlc_paths = super::sqlc_paths::query_paths(revisions, loaded)?;
        let sqlc: Vec<std::path::PathBuf> = sqlc_paths.iter().map(|(path, _)| path.clone()).collect();
        let classifier =
            Classifier::new(repo.root(), &loaded.migrations_dir(), &loaded.query_dirs(), &loaded.policies_dir())
                .with_query_sources(repo.root(), &loaded.code_dirs(), &sqlc);
        let files = classifier.classify_all(&revisions.changes);
        let runner_inputs = runner_inputs(revisions, loaded, &files);
        Ok(ChangedFiles { classifier, files, sqlc_paths, runner_inputs, unread })
    }

    /// Whether any changed file is one the gate reviews (a migration, a query or a policy, or
    /// another file the migration runner reads).
    pub fn any_reviewed(&self) -> bool {
        self.files.iter().any(|c| c.is_reviewed()) || !self.runner_inputs.is_empty()
    }

    /// Whether a migration or a query file changed, or what the runner runs: what makes the
    /// plans worth comparing.
    pub fn sql_changed(&self) -> bool {
        self.files.iter().any(|c| matches!(c.kind, FileKind::Migration | FileKind::Query))
            || !self.runner_inputs.is_empty()
    }

    /// The query files the change adds or modifies, by repository-relative path.
    pub fn changed_queries(&self) -> BTreeSet<String> {
        self.files
            .iter()
            .filter(|c| c.kind == FileKind::Query && c.change.kind != ChangeKind::Deleted)
            .map(|c| c.change.path.clone())
            .collect()
    }
}

/// The changed paths (either side of a rename) under the migrations directory that are not
/// classified as migrations, and the tools' configuration files in the migrations directory or
/// a parent of it up to the project root.
fn runner_inputs(revisions: &Revisions, loaded: &Loaded, files: &[Classified]) -> Vec<String> {
    let repo = &revisions.repo;
    let Some(migrations) = repo.relative(&loaded.migrations_dir()) else { return Vec::new() };
    let project = repo.relative(&loaded.root).unwrap_or_default();
    let mut config_dirs = vec![migrations.clone()];
    let mut dir = migrations.as_str();
    while dir != project && !dir.is_empty() {
        dir = dir.rsplit_once('/').map_or("", |(parent, _)| parent);
        config_dirs.push(dir.to_string());
    }
    let under =
        |path: &str| migrations.is_empty() || path.strip_prefix(&migrations).is_some_and(|r| r.starts_with('/'));
    let is_config = |path: &str| {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        tools::CONFIG_FILES.contains(&name) && config_dirs.iter().any(|d| d == dir)
    };
    let mut out = Vec::new();
    for file in files.iter().filter(|c| c.kind != FileKind::Migration) {
        let from = match &file.change.kind {
            ChangeKind::Renamed { from } if file.from_kind != Some(FileKind::Migration) => Some(from.as_str()),
            _ => None,
        };
        for path in std::iter::once(file.change.path.as_str()).chain(from) {
            if (under(path) || is_config(path)) && !out.iter().any(|p| p == path) {
                out.push(path.to_string());
            }
        }
    }
    out
}

/// An `unread-text` error for each submodule at or under the migrations directory, on the base
/// revision or the head. A submodule's commit is not a change git lists (`changes` ignores
/// submodules), so they are looked for on every run.
fn submodules(revisions: &Revisions, loaded: &Loaded) -> Result<Vec<Finding>> {
    let dir = loaded.migrations_dir();
    let mut found: Vec<(String, &str)> = Vec::new();
    for (side, name) in [(revisions.base_side(), "the base revision"), (revisions.head, "the head")] {
        for path in git::submodules::under(&revisions.repo, &side, &dir)? {
            match found.iter_mut().find(|(p, _)| *p == path) {
                Some(entry) => entry.1 = "both revisions",
                None => found.push((path, name)),
            }
        }
    }
    Ok(found
        .into_iter()
        .map(|(path, side)| {
            let why = format!(
                "{path} is a git submodule where the migrations live (on {side}): its files are another \
                 repository's, in no revision of this one, and Sluice did not read the migrations in it"
            );
            lint::load::unread_file(&path, why)
        })
        .collect())
}

/// The migrations directory must exist on one side at least, as `lint` requires it on disk:
/// otherwise no changed file is a migration, and a change adding one elsewhere would pass as
/// "nothing to review". A directory the configuration or a flag names is checked earlier
/// (`Gate::load`); this is the default one, `migrations` beside `sluice.toml` or at the root.
fn ensure_migrations_dir(revisions: &Revisions, loaded: &Loaded) -> Result<()> {
    let repo = &revisions.repo;
    let dir = loaded.migrations_dir();
    let Some(relative) = repo.relative(&dir) else { return Ok(()) };
    if git::is_dir(repo, &revisions.base_side(), &relative)? || git::is_dir(repo, &revisions.head, &relative)? {
        return Ok(());
    }
    let why = match &loaded.file {
        None => "no sluice.toml on either revision, so the default".to_string(),
        Some(file) => format!(
            "{} sets no [migrations] dir, so the default",
            repo.relative(file).unwrap_or_else(|| git::slash(file))
        ),
    };
    let mut sql_dirs: Vec<&str> = revisions
        .changes
        .iter()
        .filter(|c| c.path.to_ascii_lowercase().ends_with(".sql"))
        .map(|c| c.path.rsplit_once('/').map_or(".", |(dir, _)| dir))
        .collect();
    sql_dirs.dedup();
    let hint = match sql_dirs.as_slice() {
        [] => String::new(),
        dirs => format!(
            " (the change touches SQL files in {})",
            dirs.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
        ),
    };
    // In a monorepo the configuration is often further down: say where.
    let configs: Vec<String> = git::list_files(repo, &revisions.head, repo.root())?
        .into_iter()
        .filter(|path| path.rsplit('/').next() == Some(crate::config::CONFIG_FILE) && path.contains('/'))
        .take(3)
        .collect();
    let elsewhere = match configs.as_slice() {
        [] => String::new(),
        found => format!(" (or run it in the directory of {}, or pass --config)", found.join(", ")),
    };
    Err(Error::Usage(format!(
        "{}: migrations directory not found on the base revision or the head ({why} `{}`): Sluice cannot tell \
         which changed files the migration runner runs, so it reviews nothing rather than pass the change{hint}; \
         set [migrations] dir in sluice.toml or pass --migrations DIR{elsewhere}",
        if relative.is_empty() { ".".to_string() } else { relative.clone() },
        git::slash(&loaded.config.migrations.dir),
    )))
}

fn ensure_inside(revisions: &Revisions, loaded: &Loaded) -> Result<()> {
    let repo = &revisions.repo;
    // The default query directory beside a configuration kept outside the repository
    // (`--config ../ci/sluice.toml`) is no query source when it does not exist.
    let unused_default = |dir: &PathBuf| loaded.query_dirs_defaulted() && !dir.exists();
    for (what, dir) in std::iter::once(("migrations", loaded.migrations_dir()))
        .chain(loaded.query_dirs().into_iter().filter(|d| !unused_default(d)).map(|d| ("query", d)))
        .chain(loaded.code_dirs().into_iter().map(|d| ("application code", d)))
    {
        if repo.relative(&dir).is_none() {
            return Err(Error::Usage(format!(
                "{}: the {what} directory is outside the repository {}; `sluice check` reviews the files git \
                 tracks (use `sluice lint` for others)",
                dir.display(),
                repo.root().display()
            )));
        }
    }
    Ok(())
}

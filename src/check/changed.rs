//! The stage of `sluice check` that sorts the changed files: migrations, queries, policies, or
//! none of the gate's business.

use super::revisions::Revisions;
use crate::config::Loaded;
use crate::error::{Error, Result};
use crate::git::classify::{Classified, Classifier, FileKind};
use crate::git::ChangeKind;
use std::collections::BTreeSet;

/// Every changed file with what it is to the gate.
pub(super) struct ChangedFiles {
    pub classifier: Classifier,
    pub files: Vec<Classified>,
    /// sqlc's query paths (from the base revision's sqlc configuration), with the configuration.
    pub sqlc_paths: Vec<(std::path::PathBuf, String)>,
}

impl ChangedFiles {
    /// Classifies the changes by the trusted configuration's directories, which must be inside
    /// the repository: `check` reviews what git tracks.
    pub fn classify(revisions: &Revisions, loaded: &Loaded) -> Result<ChangedFiles> {
        ensure_inside(revisions, loaded)?;
        let repo = &revisions.repo;
        let sqlc_paths = super::sqlc_paths::query_paths(revisions, loaded)?;
        let sqlc: Vec<std::path::PathBuf> = sqlc_paths.iter().map(|(path, _)| path.clone()).collect();
        let classifier =
            Classifier::new(repo.root(), &loaded.migrations_dir(), &loaded.query_dirs(), &loaded.policies_dir())
                .with_query_sources(repo.root(), &loaded.code_dirs(), &sqlc);
        let files = classifier.classify_all(&revisions.changes);
        Ok(ChangedFiles { classifier, files, sqlc_paths })
    }

    /// Whether any changed file is one the gate reviews (a migration, a query or a policy).
    pub fn any_reviewed(&self) -> bool {
        self.files.iter().any(|c| c.is_reviewed())
    }

    /// Whether a migration or a query file changed: what makes the plans worth comparing.
    pub fn sql_changed(&self) -> bool {
        self.files.iter().any(|c| matches!(c.kind, FileKind::Migration | FileKind::Query))
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

fn ensure_inside(revisions: &Revisions, loaded: &Loaded) -> Result<()> {
    let repo = &revisions.repo;
    for (what, dir) in std::iter::once(("migrations", loaded.migrations_dir()))
        .chain(loaded.query_dirs().into_iter().map(|d| ("query", d)))
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

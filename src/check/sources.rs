//! The stage of `sluice check` that reads what the lint engine needs: the base side's whole
//! history (what production has run), the migrations the change adds, and the head side's
//! query files.

use super::changed::ChangedFiles;
use super::options::Options;
use super::revisions::Revisions;
use super::sides::Sides;
use crate::config::Loaded;
use crate::error::{read_text, Error, Result};
use crate::finding::Finding;
use crate::git::{self, FileKind, GitTree, Repo, Side};
use crate::lint::{self, MigrationSource, Settings, Sources};
use crate::queries::{ParsedQuery, Query, Source};
use crate::rules::SourceFile;
use crate::schema::migrations::{self, Migration};
use crate::schema::tools::{self, Tree};
use crate::schema::Schema;
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// The lint engine's sources for a change, before the added migrations join the history.
pub(super) struct ChangeSources {
    /// The schema dump, the base history and the head side's query files.
    pub sources: Sources,
    /// How many migrations the base history has.
    pub base_count: usize,
    /// The migrations the change adds, in the order they run.
    pub added: Vec<MigrationSource>,
    /// Their repository-relative paths.
    pub added_paths: BTreeSet<String>,
    /// What the tool skips or refuses among the files this change touches, with the trusted
    /// `[rules]` levels applied.
    pub tool_notices: Vec<Finding>,
    /// How to replay the base history for its tables (through the schema cache).
    replay: Settings,
}

impl ChangeSources {
    /// Parses the base history in parallel (it is most of the work), then the added files and
    /// the head side's query files.
    pub fn load(
        revisions: &Revisions,
        loaded: &Loaded,
        sides: &Sides,
        changed: &ChangedFiles,
        options: &Options,
    ) -> Result<ChangeSources> {
        let added_paths: BTreeSet<String> = sides.added(revisions).into_iter().collect();
        let layout = sides.detection.layout();
        let tool_options = lint::load::tool_options(loaded);
        let base_history = migrations::load(&sides.base_tree, layout, &tool_options, None)?;
        let base_count = base_history.migrations.len();
        let (base_sources, _) = lint::load::sources_of(base_history);
        let is_added = |m: &Migration| added_paths.contains(&sides.head_tree.display(&m.up));
        let head_history = migrations::load(&sides.head_tree, layout, &tool_options, Some(&is_added))?;
        let changed_paths: BTreeSet<&str> = revisions.changes.iter().map(|c| c.path.as_str()).collect();
        let (added, head_notices) = lint::load::sources_of(head_history);
        let touched = head_notices.into_iter().filter(|f| changed_paths.contains(f.file.as_str())).collect();
        let tool_notices = lint::apply_levels(touched, &loaded.config.rules);
        let mut sources = Sources {
            schema_dump: read_schema_dump(&revisions.repo, loaded, &revisions.base_side(), &revisions.head)?,
            migrations: base_sources,
            ..Sources::default()
        };
        sources.queries = read_queries(&revisions.repo, &revisions.head, loaded, changed)?;
        let replay = Settings {
            postgres_version: loaded.config.postgres_version,
            cache: options.cache.clone(),
            ..Settings::default()
        };
        Ok(ChangeSources { sources, base_count, added, added_paths, tool_notices, replay })
    }

    /// The tables the base history builds, for policies that name a table: from the schema
    /// cache when it has the base history (the lint then resumes from the same snapshot).
    pub fn base_tables(&self) -> BTreeSet<String> {
        table_names(&lint::schema_after(&self.sources, &self.replay, self.base_count))
    }
}

/// The tables the base revision's history builds, read and replayed on demand (only when a
/// head policy names a table the base policies do not) when the change has nothing to lint.
pub(super) fn base_tables(revisions: &Revisions, loaded: &Loaded) -> Result<BTreeSet<String>> {
    let repo = &revisions.repo;
    let tree = GitTree::open(repo, revisions.base_side(), &loaded.migrations_dir(), &loaded.root)?;
    let layout = tools::resolve(loaded.config.migrations.layout, &tree)?.layout();
    let history = migrations::load(&tree, layout, &lint::load::tool_options(loaded), None)?;
    let (base_sources, _) = lint::load::sources_of(history);
    let dump = read_schema_dump(repo, loaded, &revisions.base_side(), &revisions.head)?;
    Ok(table_names(&lint::replay(dump.as_ref(), &base_sources, loaded.config.postgres_version)))
}

fn table_names(schema: &Schema) -> BTreeSet<String> {
    schema.tables.keys().cloned().collect()
}

/// The schema dump the history starts from: the base side's (what production had), else the
/// head side's when the change adds it.
fn read_schema_dump(repo: &Repo, loaded: &Loaded, base: &Side, head: &Side) -> Result<Option<SourceFile>> {
    let Some(dump) = &loaded.config.migrations.schema_dump else {
        return Ok(None);
    };
    let full = loaded.resolve(dump);
    let Some(path) = repo.relative(&full) else {
        return Ok(Some(SourceFile::parse(full.display().to_string(), read_text(&full)?)));
    };
    let text = match git::read_file(repo, base, &path)? {
        Some(text) => text,
        None => git::read_file(repo, head, &path)?.ok_or_else(|| {
            Error::Usage(format!("{path}: the schema dump named by [migrations] schema_dump exists on neither side"))
        })?,
    };
    Ok(Some(SourceFile::parse(path, text)))
}

/// Every query file on the head side, parsed in parallel.
fn read_queries(repo: &Repo, head: &Side, loaded: &Loaded, changed: &ChangedFiles) -> Result<Vec<ParsedQuery>> {
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for dir in loaded.query_dirs() {
        for (path, text) in git::read_files(repo, head, &dir)? {
            if changed.classifier.classify(&path) == FileKind::Query {
                files.insert(path, text);
            }
        }
    }
    Ok(files
        .into_par_iter()
        .map(|(path, text)| ParsedQuery::parse(Query::whole_file(path, text, Source::QueryFile)))
        .collect())
}

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
use crate::git::classify::FileKind;
use crate::git::tree::GitTree;
use crate::git::{self, Repo, Side};
use crate::lint::{self, MigrationSource, Settings, Sources};
use crate::queries::changes::{self, QueryChange};
use crate::queries::code::ProjectCalls;
use crate::queries::code_scan::{FileNote, FileScan};
use crate::queries::{code, code_scan, sqlc, ParsedQuery, Query, Source};
use crate::rules::SourceFile;
use crate::schema::migrations::{self, Migration};
use crate::schema::tools::{self, Tree};
use crate::schema::Schema;
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

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
    /// The head side's code files the change does not touch, not read yet.
    unchanged_code: Vec<String>,
    /// The project's own functions that take SQL (`[queries] calls`).
    calls: ProjectCalls,
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
        let (base_sources, base_notices) = lint::load::sources_of(base_history);
        // What the base history holds that Sluice could not read (an LFS pointer): the schema
        // the change is checked against lacks it.
        let base_unread: Vec<Finding> = base_sources
            .iter()
            .flat_map(|m| m.findings.iter().filter(|f| f.rule == crate::rules::UNREAD_TEXT.id).cloned())
            .collect();
        let is_added = |m: &Migration| added_paths.contains(&sides.head_tree.display(&m.up));
        let head_history = migrations::load(&sides.head_tree, layout, &tool_options, Some(&is_added))?;
        let changed_paths: BTreeSet<&str> = revisions.changes.iter().map(|c| c.path.as_str()).collect();
        let (added, head_notices) = lint::load::sources_of(head_history);
        // A notice on a file the change touches, or one the base did not have: a changed
        // manifest or configuration can make the runner run an unchanged file Sluice cannot read.
        let on_base: BTreeSet<(&str, &str)> =
            base_notices.iter().map(|f| (f.file.as_str(), f.message.as_str())).collect();
        let touched = head_notices
            .iter()
            .filter(|f| {
                changed_paths.contains(f.file.as_str()) || !on_base.contains(&(f.file.as_str(), f.message.as_str()))
            })
            .cloned()
            .collect();
        let mut tool_notices = lint::apply_levels(touched, &loaded.config.rules);
        tool_notices.extend(base_unread);
        let mut sources = Sources {
            schema_dump: read_schema_dump(&revisions.repo, loaded, &revisions.base_side(), &revisions.head)?,
            migrations: base_sources,
            ..Sources::default()
        };
        let (queries, query_notes, unchanged_code) = read_queries(revisions, loaded, changed)?;
        sources.queries = queries;
        sources.query_notes = query_notes;
        let replay = Settings {
            postgres_version: loaded.config.postgres_version,
            cache: options.cache.clone(),
            ..Settings::default()
        };
        let calls = project_calls(loaded);
        Ok(ChangeSources { sources, base_count, added, added_paths, tool_notices, replay, unchanged_code, calls })
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

/// The head side's queries: every query file and sqlc's (few, and the affected-query rule reads
/// them all), and the code files the change adds or modifies; the other code files, by path,
/// are read only if an added migration may affect them ([`ChangeSources::add_affected_code`]).
fn read_queries(
    revisions: &Revisions,
    loaded: &Loaded,
    changed: &ChangedFiles,
) -> Result<(Vec<ParsedQuery>, Vec<FileNote>, Vec<String>)> {
    let (repo, head) = (&revisions.repo, &revisions.head);
    let mut files: BTreeMap<String, (String, Source)> = BTreeMap::new();
    for (path, config) in &changed.sqlc_paths {
        let relative = repo.relative(path).unwrap_or_default();
        let listed = if git::is_dir(repo, head, &relative)? {
            // sqlc reads a directory's own files, not its subdirectories'.
            let own = |f: &str| f.rsplit_once('/').map_or("", |(dir, _)| dir) == relative;
            git::list_files(repo, head, path)?
                .into_iter()
                .filter(|f| own(f) && sqlc::reads(f.rsplit('/').next().unwrap_or(f)))
                .collect()
        } else {
            vec![relative.clone()]
        };
        for file in listed {
            if let Some(text) = git::read_file(repo, head, &file)? {
                files.insert(file, (text, Source::Sqlc { config: config.clone() }));
            }
        }
    }
    for dir in loaded.query_dirs() {
        for (path, text) in git::read_files(repo, head, &dir)? {
            if changed.classifier.classify(&path) == FileKind::Query {
                files.entry(path).or_insert((text, Source::QueryFile));
            }
        }
    }
    let mut queries: Vec<Query> =
        files.into_iter().map(|(path, (text, source))| Query::whole_file(path, text, source)).collect();
    let changed_paths = changed.changed_queries();
    let mut unchanged_code = Vec::new();
    let mut changed_code = Vec::new();
    for dir in loaded.code_dirs() {
        for path in git::list_files(repo, head, &dir)? {
            if changed.classifier.classify(&path) != FileKind::Query || path.ends_with(".sql") {
                continue;
            }
            if changed_paths.contains(&path) {
                changed_code.push(path);
            } else {
                unchanged_code.push(path);
            }
        }
    }
    let (code, notes) = scan_code(repo, head, &changed_code, &project_calls(loaded))?;
    queries.extend(code);
    Ok((queries.into_par_iter().map(ParsedQuery::parse).collect(), notes, unchanged_code))
}

fn project_calls(loaded: &Loaded) -> ProjectCalls {
    ProjectCalls::new(loaded.config.queries.calls.iter().cloned())
}

/// The queries of code files on `side`, and their notes. The paths are the repository's: a
/// `migrations` directory on one makes it migration code.
fn scan_code(repo: &Repo, side: &Side, paths: &[String], calls: &ProjectCalls) -> Result<(Vec<Query>, Vec<FileNote>)> {
    let texts: Vec<(String, std::sync::Arc<str>)> = paths
        .iter()
        .filter_map(|path| {
            git::read_file(repo, side, path).transpose().map(|text| text.map(|t| (path.clone(), t.into())))
        })
        .collect::<Result<_>>()?;
    let project = code_scan::Project { migrations: None, calls: calls.clone() };
    let scanned: Vec<FileScan> = code_scan::scan(texts, &go_package_siblings(repo, side, paths)?, &project)?;
    let mut queries = Vec::new();
    let mut notes = Vec::new();
    for (found, note) in scanned {
        queries.extend(found);
        notes.extend(note);
    }
    Ok((queries, notes))
}

/// The other `.go` files of the directories of the Go files among `paths`, with what each shows
/// of its database: a Go file's SQL is its package's database's (the driver is imported once,
/// in the file that opens the connection).
fn go_package_siblings(repo: &Repo, side: &Side, paths: &[String]) -> Result<Vec<(String, Vec<code::Evidence>)>> {
    let directory = |path: &str| path.rsplit_once('/').map_or("", |(dir, _)| dir).to_string();
    let scanned: BTreeSet<&str> = paths.iter().map(String::as_str).collect();
    let dirs: BTreeSet<String> = paths.iter().filter(|p| p.ends_with(".go")).map(|p| directory(p)).collect();
    let mut siblings = Vec::new();
    for dir in dirs {
        for path in git::list_files(repo, side, Path::new(&dir))? {
            if !path.ends_with(".go") || directory(&path) != dir || scanned.contains(path.as_str()) {
                continue;
            }
            if let Some(text) = git::read_file(repo, side, &path)? {
                siblings.push((path.clone(), code_scan::evidence(&path, &text)));
            }
        }
    }
    Ok(siblings)
}

impl ChangeSources {
    /// Reads the unchanged code files that may read a table an added migration changes (those
    /// whose text names one of `tables`), and adds their queries: what the affected-query rule
    /// needs, and no more.
    pub fn add_affected_code(&mut self, revisions: &Revisions, tables: &BTreeSet<String>) -> Result<()> {
        if tables.is_empty() || self.unchanged_code.is_empty() {
            return Ok(());
        }
        let names: Vec<String> =
            tables.iter().map(|t| t.rsplit('.').next().unwrap_or(t).to_ascii_lowercase()).collect();
        let (repo, head) = (&revisions.repo, &revisions.head);
        let mut mentioning = Vec::new();
        for path in std::mem::take(&mut self.unchanged_code) {
            if let Some(text) = git::read_file(repo, head, &path)? {
                let lower = text.to_ascii_lowercase();
                if names.iter().any(|name| lower.contains(name.as_str())) {
                    mentioning.push(path);
                }
            }
        }
        let (queries, notes) = scan_code(repo, head, &mentioning, &self.calls)?;
        self.sources.queries.extend(queries.into_par_iter().map(ParsedQuery::parse).collect::<Vec<_>>());
        self.sources.query_notes.extend(notes);
        Ok(())
    }
}

impl ChangeSources {
    /// The base and head text of every query the change adds, edits or removes, whatever its
    /// source (a query file, sqlc's, SQL in code): the head side's from what was loaded, the
    /// base side's read from the base revision for the changed files only.
    pub fn query_changes(&self, revisions: &Revisions, changed: &ChangedFiles) -> Result<Vec<QueryChange>> {
        let (repo, base) = (&revisions.repo, revisions.base_side());
        let files: BTreeSet<String> = changed
            .files
            .iter()
            .filter(|c| c.kind == FileKind::Query || c.from_kind == Some(FileKind::Query))
            .map(|c| c.change.path.clone())
            .collect();
        let head: Vec<&ParsedQuery> = self.sources.queries.iter().filter(|q| files.contains(&q.query.file)).collect();
        let mut base_queries = Vec::new();
        for file in &files {
            let Some(text) = git::read_file(repo, &base, file)? else { continue };
            let source = head.iter().find(|q| &q.query.file == file).map(|q| q.query.source.clone());
            match source {
                Some(Source::Code(_)) | None if code::language_of(Path::new(file)).is_some() => {
                    base_queries.extend(scan_code(repo, &base, std::slice::from_ref(file), &self.calls)?.0)
                }
                Some(source) => base_queries.push(Query::whole_file(file.clone(), text, source)),
                None => base_queries.push(Query::whole_file(file.clone(), text, Source::QueryFile)),
            }
        }
        let base_parsed: Vec<ParsedQuery> = base_queries.into_par_iter().map(ParsedQuery::parse).collect();
        Ok(changes::changed(&base_parsed, head))
    }
}

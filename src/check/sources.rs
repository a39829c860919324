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
use crate::queries::blob_scan_cache::{BlobEntries, BlobScanCache};
use crate::queries::changes::{self, QueryChange};
use crate::queries::code::ProjectCalls;
use crate::queries::code_scan::{FileNote, FileScan, Sibling};
use crate::queries::scan_cache::Extracted;
use crate::queries::{code, code_scan, sqlc, ParsedQuery, Query, Source};
use crate::rules::SourceFile;
use crate::schema::migrations::{self, Migration};
use crate::schema::tools::{self, Tree};
use crate::schema::Schema;
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A code file on the head side by path, with its blob id (`None`: a symbolic link, or the
/// working tree).
type CodeFile = (String, Option<git::Oid>);

/// A code file that names a table a migration changes: its path, what its extraction found, its
/// text.
type NamedFile = (String, Extracted, std::sync::Arc<str>);

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
    unchanged_code: Vec<CodeFile>,
    /// The project's own functions that take SQL (`[queries] calls`).
    calls: ProjectCalls,
    /// What unchanged code files hold, by blob.
    code_cache: BlobScanCache,
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
        let code_cache = options.code_cache.clone();
        Ok(ChangeSources {
            sources,
            base_count,
            added,
            added_paths,
            tool_notices,
            replay,
            unchanged_code,
            calls,
            code_cache,
        })
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
) -> Result<(Vec<ParsedQuery>, Vec<FileNote>, Vec<CodeFile>)> {
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
        for (path, blob) in git::list_blobs(repo, head, &dir)? {
            if changed.classifier.classify(&path) != FileKind::Query || path.ends_with(".sql") {
                continue;
            }
            if changed_paths.contains(&path) {
                changed_code.push(path);
            } else {
                unchanged_code.push((path, blob));
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
    let siblings = go_package_siblings(repo, side, paths, calls)?;
    let scanned: Vec<FileScan> = code_scan::scan(texts, &siblings, &project)?;
    let mut queries = Vec::new();
    let mut notes = Vec::new();
    for (found, note) in scanned {
        queries.extend(found);
        notes.extend(note);
    }
    Ok((queries, notes))
}

/// The other `.go` files of the directories of the Go files among `paths`, with what each shows
/// of its database and offers its package: a Go file's SQL is its package's database's (the
/// driver is imported once, in the file that opens the connection), and its constants are
/// passed by the package's other files.
fn go_package_siblings(
    repo: &Repo,
    side: &Side,
    paths: &[String],
    calls: &ProjectCalls,
) -> Result<Vec<(String, Sibling)>> {
    go_package_siblings_known(repo, side, paths, calls, &|_| None)
}

/// [`go_package_siblings`], taking what `known` (the code cache) has of a sibling before reading
/// its text.
fn go_package_siblings_known(
    repo: &Repo,
    side: &Side,
    paths: &[String],
    calls: &ProjectCalls,
    known: &dyn Fn(&str) -> Option<Sibling>,
) -> Result<Vec<(String, Sibling)>> {
    let directory = |path: &str| path.rsplit_once('/').map_or("", |(dir, _)| dir).to_string();
    let scanned: BTreeSet<&str> = paths.iter().map(String::as_str).collect();
    let dirs: BTreeSet<String> = paths.iter().filter(|p| p.ends_with(".go")).map(|p| directory(p)).collect();
    let mut siblings = Vec::new();
    for dir in dirs {
        for path in git::list_files(repo, side, Path::new(&dir))? {
            if !path.ends_with(".go") || directory(&path) != dir || scanned.contains(path.as_str()) {
                continue;
            }
            if let Some(sibling) = known(&path) {
                siblings.push((path, sibling));
            } else if let Some(text) = git::read_file(repo, side, &path)? {
                siblings.push((path.clone(), code_scan::sibling(&path, &text, calls)));
            }
        }
    }
    Ok(siblings)
}

impl ChangeSources {
    /// Adds the queries of the unchanged code files that may read a table an added migration
    /// changes (those whose text names one of `tables`): what the affected-query rule needs,
    /// and no more. A file the code cache knows by its blob to hold no query and no note is not
    /// read; one it knows to hold some is read (its text is quoted, and searched for the
    /// tables) but not parsed. The others are read, and with the cache on parsed whatever they
    /// name, so that the next change is served from it.
    pub fn add_affected_code(&mut self, revisions: &Revisions, tables: &BTreeSet<String>) -> Result<()> {
        if tables.is_empty() || self.unchanged_code.is_empty() {
            return Ok(());
        }
        let names: Vec<String> =
            tables.iter().map(|t| t.rsplit('.').next().unwrap_or(t).to_ascii_lowercase()).collect();
        let mentions = |text: &str| {
            let lower = text.to_ascii_lowercase();
            names.iter().any(|name| lower.contains(name.as_str()))
        };
        let (repo, head) = (&revisions.repo, &revisions.head);
        let caching = self.code_cache.is_enabled();
        let calls = self.calls.clone();
        let known = if caching { self.code_cache.load(repo.root(), &calls) } else { BlobEntries::default() };
        let mut kept = BlobEntries::default();
        // (path, blob, what the cache knows of it) of every file to read.
        let mut to_read: Vec<(String, Option<git::Oid>, Option<Extracted>)> = Vec::new();
        let unchanged = std::mem::take(&mut self.unchanged_code);
        let blobs: BTreeMap<&str, git::Oid> =
            unchanged.iter().filter_map(|(path, blob)| blob.map(|id| (path.as_str(), id))).collect();
        for (path, blob) in unchanged.iter().cloned() {
            match blob.and_then(|id| known.get(&path, id.as_bytes()).map(|e| (id, e))) {
                Some((id, extracted)) => {
                    kept.insert(&path, id.as_bytes(), extracted.clone());
                    // A Go file of SQL constants holds no query of its own: its package's calls
                    // make them queries.
                    let constants = extracted.go_package.as_ref().is_some_and(|p| !p.constants.is_empty());
                    if !extracted.is_empty() || constants {
                        to_read.push((path, blob, Some(extracted.clone())));
                    }
                }
                None => to_read.push((path, blob, None)),
            }
        }
        let texts = read_texts(repo, head, &to_read)?;
        let order: Vec<(String, Option<git::Oid>)> =
            to_read.iter().map(|(path, blob, _)| (path.clone(), *blob)).collect();
        let misses = to_read.iter().filter(|(_, blob, known)| blob.is_some() && known.is_none()).count();
        let each: Vec<Result<(Option<NamedFile>, Option<Extracted>)>> = to_read
            .into_par_iter()
            .zip(texts)
            .map(|((path, blob, known), text)| {
                let Some(text) = text else { return Ok((None, None)) };
                let named = mentions(&text);
                let extracted = match known {
                    Some(extracted) => extracted,
                    // Parsed for the cache only: a file Sluice cannot read is reported when a
                    // change makes it matter, as without the cache.
                    None if !named && caching && blob.is_some() => {
                        return Ok((None, code_scan::extract(&path, Path::new(&path), &text, &calls).ok()));
                    }
                    None if !named => return Ok((None, None)),
                    None => code_scan::extract(&path, Path::new(&path), &text, &calls)?,
                };
                let fresh = blob.is_some().then(|| extracted.clone());
                let scan = named.then(|| (path, extracted, text.into()));
                Ok((scan, fresh))
            })
            .collect();
        let mut named = Vec::new();
        for ((path, blob), result) in order.into_iter().zip(each) {
            let (scan, fresh) = result?;
            if let (Some(id), Some(extracted)) = (blob, fresh) {
                kept.insert(&path, id.as_bytes(), extracted);
            }
            named.extend(scan);
        }
        // Judged as `scan_code` judges changed files: a Go file with its package, migration code
        // set aside.
        let paths: Vec<String> = named.iter().map(|(path, _, _)| path.clone()).collect();
        let project = code_scan::Project { migrations: None, calls };
        let mut queries = Vec::new();
        let cached = |path: &str| blobs.get(path).and_then(|id| kept.get(path, id.as_bytes())).map(Sibling::of);
        let siblings = go_package_siblings_known(repo, head, &paths, &project.calls, &cached)?;
        for (found, note) in code_scan::finish(named, &siblings, &project) {
            queries.extend(found);
            self.sources.query_notes.extend(note);
        }
        self.sources.queries.extend(queries.into_par_iter().map(ParsedQuery::parse).collect::<Vec<_>>());
        if caching && (misses > 0 || kept.len() != known.len()) {
            self.code_cache.save(repo.root(), &self.calls, &kept);
        }
        Ok(())
    }
}

/// The texts of `files` on `side`, in their order (`None`: not there); blobs read on every core.
fn read_texts(
    repo: &Repo,
    side: &Side,
    files: &[(String, Option<git::Oid>, Option<Extracted>)],
) -> Result<Vec<Option<String>>> {
    let blobs: Vec<(String, git::Oid)> =
        files.iter().filter_map(|(path, blob, _)| blob.map(|id| (path.clone(), id))).collect();
    let mut texts = git::read_blobs(repo, &blobs)?.into_iter();
    files
        .iter()
        .map(|(path, blob, _)| match blob {
            Some(_) => Ok(texts.next()),
            None => git::read_file(repo, side, path),
        })
        .collect()
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

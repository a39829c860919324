//! Reading a project's migrations, query files and policies from disk, in parallel.

use super::{MigrationSource, Settings, Sources};
use crate::config::Loaded;
use crate::error::{read_text, Error, Result};
use crate::finding::{Finding, Severity};
use crate::policy::index_usage::IndexUsage;
use crate::policy::Policies;
use crate::queries::workload::{self, Workload};
use crate::queries::{code_scan, sql_files, sqlc, ParsedQuery, Source};
use crate::rules::{runner_rejects_migration::META as RUNNER_REJECTS, SourceFile, UNREAD_TEXT};
use crate::schema::migrations::{self, History};
use crate::schema::tools::{DiskTree, Options};
pub use crate::source::{display_path, display_root};
use rayon::prelude::*;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn read(path: &Path, root: &Path) -> Result<SourceFile> {
    Ok(SourceFile::parse(display_path(path, root), read_text(path)?))
}

/// What the migration tool needs from sluice.toml.
pub fn tool_options(loaded: &Loaded) -> Options {
    Options {
        transaction_per_file: loaded.config.migrations.transaction_per_file,
        postgres_version: loaded.config.postgres_version,
    }
}

/// The lint engine's view of a history: each migration as its tool sends it (parsed later, by
/// the engine, as it replays), the tool's refusals as findings, and the files it skips.
pub fn sources_of(history: History) -> (Vec<MigrationSource>, Vec<Finding>) {
    let notices = history
        .notices
        .into_iter()
        .map(|(file, why)| {
            Finding::new(RUNNER_REJECTS.id, Severity::Warning, file, why)
                .help(RUNNER_REJECTS.fix.trim())
                .fact("migration tool", history.detection.tool.name())
        })
        .collect();
    let tool = history.detection.tool.name();
    let migrations = history
        .migrations
        .into_iter()
        .map(|loaded| {
            let display = loaded.display;
            let mut findings: Vec<Finding> = loaded
                .script
                .problems
                .iter()
                .map(|problem| {
                    Finding::new(RUNNER_REJECTS.id, RUNNER_REJECTS.severity, display.clone(), problem.message.clone())
                        .at(problem.line, 1, problem.line, 1)
                        .help(RUNNER_REJECTS.fix.trim())
                        .fact("migration tool", tool)
                })
                .collect();
            findings.extend(loaded.unread.map(|why| unread_file(&display, why)));
            MigrationSource {
                migration: loaded.migration,
                display,
                text: loaded.text,
                script: loaded.script,
                down: loaded.down,
                findings,
            }
        })
        .collect();
    (migrations, notices)
}

/// An `unread-text` error for a whole file (or directory) Sluice could not read: the gate
/// cannot pass what it did not read.
pub fn unread_file(display: &str, why: String) -> Finding {
    Finding::new(UNREAD_TEXT.id, UNREAD_TEXT.severity, display, why).help(
        "Make the migrations readable where the runner reads them: fetch LFS files (`git lfs pull`; \
         `lfs: true` in actions/checkout) or keep migrations out of LFS, and keep them in the repository rather \
         than in a submodule (or point [migrations] dir at a checkout of it and lint it there).",
    )
}

/// "goose (db/migrations/00001_init.sql has a `-- +goose Up` annotation)", for `--explain`.
pub fn describe_tool(history: &History) -> String {
    let mut text = format!("Migration tool: {} ({})", history.detection.tool.name(), history.detection.reason);
    if !history.settings.sources.is_empty() {
        text.push_str(&format!("; read {}", history.settings.sources.join(", ")));
    }
    text.push('.');
    text
}

/// Reads everything the configuration names, plus `extra` files (linted as query files when
/// they are neither migrations nor configured queries).
pub fn load(loaded: &Loaded, root: &Path, extra: &[PathBuf]) -> Result<(Sources, Settings)> {
    load_with(loaded, root, extra, &code_scan::ScanCache::disabled())
}

/// [`load`], skipping the code files `scan_cache` knows hold no query.
pub fn load_with(
    loaded: &Loaded,
    root: &Path,
    extra: &[PathBuf],
    scan_cache: &code_scan::ScanCache,
) -> Result<(Sources, Settings)> {
    loaded.check_named_dirs(&crate::config::disk_dir_problem)?;
    let dir = loaded.migrations_dir();
    let tree = DiskTree::open_to_load(&dir, &loaded.root, root)?;
    let history = migrations::load(&tree, loaded.config.migrations.layout, &tool_options(loaded), None)?;
    let tool = describe_tool(&history);
    let (migrations, notices) = sources_of(history);

    // sqlc's query files first: listed in a query directory too, they are sqlc's.
    let mut query_paths: Vec<(PathBuf, Source)> = sqlc_query_files(loaded, root)?;
    query_paths.extend(sql_files::list(&loaded.query_dirs())?.into_iter().map(|p| (p, Source::QueryFile)));
    // Named files are told apart from the history by a set: `sluice lint migrations/*.sql` names
    // every migration, and comparing each with each was quadratic (6.6 s for 2,500 files).
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let mut known: HashSet<PathBuf> =
        migrations.iter().map(|m| absolute_or_as_is(&dir.join(&m.migration.up))).collect();
    query_paths.retain(|(path, _)| known.insert(absolute_or_as_is(path)));
    for path in extra {
        if path.extension().is_some_and(|e| e == "sql") && known.insert(absolute_or_as_is(path)) {
            query_paths.push((path.clone(), Source::QueryFile));
        }
    }
    let mut queries = query_paths
        .into_par_iter()
        .map(|(path, source)| sql_files::read(&path, display_path(&path, root), source))
        .collect::<Result<Vec<_>>>()?;
    let migrations_dir = loaded.migrations_dir();
    let project = code_scan::Project {
        migrations: Some(&migrations_dir),
        calls: crate::queries::code::ProjectCalls::new(loaded.config.queries.calls.iter().cloned()),
    };
    let code = code_scan::on_disk_cached(&loaded.code_dirs(), &project, &|path| display_path(path, root), scan_cache)?;
    queries.extend(code.queries);
    let mut query_notes = code.notes;
    let workload = read_workload(loaded, root, &mut query_notes)?;
    queries.extend(workload.iter().flat_map(|w| w.queries()));
    // Parsed when a rule first reads them (in parallel then): the query cache spares most.
    let queries = queries.into_iter().map(ParsedQuery::unparsed).collect();

    let schema_dump =
        loaded.config.migrations.schema_dump.as_ref().map(|p| read(&loaded.resolve(p), root)).transpose()?;
    let mut policies = Policies::load(&loaded.policies_dir())?;
    if let Some(path) = loaded.index_usage_file() {
        let shown = display_path(&path, root);
        policies.index_usage = Some(IndexUsage::parse(Path::new(&shown), shown.clone(), &read_text(&path)?)?);
    }
    let settings = Settings {
        postgres_version: loaded.config.postgres_version,
        levels: loaded.config.rules.clone(),
        policies,
        under_review: false,
        max_not_understood_percent: loaded.config.migrations.max_not_understood_percent,
        ..Settings::default()
    };
    Ok((Sources { schema_dump, migrations, queries, query_notes, notices, tool, workload }, settings))
}

/// The workload snapshots `[queries] workload` names, read from disk; what the run read goes
/// to `notes`, under the first snapshot's name.
fn read_workload(loaded: &Loaded, root: &Path, notes: &mut Vec<(String, String)>) -> Result<Option<Workload>> {
    let files: Vec<(PathBuf, String)> = loaded
        .workload_files()
        .into_iter()
        .map(|path| {
            let shown = display_path(&path, root);
            (path, shown)
        })
        .collect();
    if files.is_empty() {
        return Ok(None);
    }
    let reading =
        workload::Reading::now(loaded.snapshot_max_age_days()).with_interval(loaded.config.queries.workload_interval);
    let workload = workload::load(&files, &|path| read_text(path), &reading)?;
    let shown: Vec<String> = files.into_iter().map(|(_, shown)| shown).collect();
    notes.extend(workload.report_notes(&shown).into_iter().map(|note| (shown[0].clone(), note)));
    Ok(Some(workload))
}

/// The query files of the sqlc configurations `[queries] sqlc` names, or of the one at the
/// project's root when it names none.
fn sqlc_query_files(loaded: &Loaded, root: &Path) -> Result<Vec<(PathBuf, Source)>> {
    loaded.check_named_files(&crate::config::disk_file_problem)?;
    let configs = loaded.sqlc_configs().unwrap_or_else(|| sqlc::find_in(&loaded.root).into_iter().collect());
    let mut out = Vec::new();
    for config in configs {
        let parsed = sqlc::parse(&config, &read_text(&config)?)?;
        let source = Source::Sqlc { config: display_path(&config, root) };
        out.extend(sqlc::files_on_disk(&config, &parsed.queries)?.into_iter().map(|file| (file, source.clone())));
    }
    Ok(out)
}

fn absolute_or_as_is(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The files the command-line paths select, by display path: a file by its name, a directory
/// by everything below it. Asked once per file of the history, so it looks names up rather than
/// going through the list: `sluice lint migrations/*.sql` names thousands.
#[derive(Debug, Default)]
pub struct Selection {
    /// `.` (or the project's root) was named.
    everything: bool,
    /// The display paths named, without a trailing `/`.
    named: HashSet<String>,
}

impl Selection {
    /// Expands command-line paths (files or directories) to the display paths they select.
    pub fn of(paths: &[PathBuf], root: &Path) -> Result<Selection> {
        let mut selection = Selection::default();
        for path in paths {
            if !path.exists() {
                return Err(Error::Usage(format!("{}: no such file or directory", path.display())));
            }
            selection.add(&display_path(path, root));
        }
        Ok(selection)
    }

    fn add(&mut self, display: &str) {
        self.everything |= display.is_empty() || display == ".";
        self.named.insert(display.trim_end_matches('/').to_string());
    }

    /// No path was named.
    pub fn is_empty(&self) -> bool {
        self.named.is_empty()
    }

    /// `display` was named itself (not only a directory above it).
    pub fn names(&self, display: &str) -> bool {
        self.named.contains(display)
    }

    /// Whether a file's display path is selected: named, or below a named directory.
    pub fn selects(&self, display: &str) -> bool {
        self.everything
            || self.named.contains(display)
            || display.match_indices('/').any(|(slash, _)| self.named.contains(&display[..slash]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selection(named: &[&str]) -> Selection {
        let mut selection = Selection::default();
        named.iter().for_each(|display| selection.add(display));
        selection
    }

    #[test]
    fn a_directory_selects_what_is_below_it_and_a_file_itself() {
        let named = selection(&["db/migrations/", "queries/q.sql"]);
        assert!(named.selects("db/migrations/0001_a.sql"));
        assert!(named.selects("db/migrations/2024_x/up.sql"));
        assert!(named.selects("queries/q.sql"));
        assert!(!named.selects("queries/q.sql.bak"));
        assert!(!named.selects("db/migrations_old/0001_a.sql"));
        assert!(!named.selects("db/m"));
        assert!(named.names("queries/q.sql") && !named.names("db/migrations/0001_a.sql"));
        assert!(selection(&["."]).selects("anything.sql"));
        // `/` named: every file outside the project's root, whose display path is absolute.
        let root = selection(&["/"]);
        assert!(root.selects("/elsewhere/q.sql") && !root.selects("queries/q.sql"));
        assert!(Selection::default().is_empty() && !named.is_empty());
    }
}

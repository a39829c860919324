//! Reading a project's migrations, query files and policies from disk, in parallel.

use super::{MigrationSource, Settings, Sources};
use crate::config::Loaded;
use crate::error::{read_text, Error, Result};
use crate::finding::{Finding, Severity};
use crate::policy::Policies;
use crate::rules::{runner_rejects_migration::META as RUNNER_REJECTS, SourceFile};
use crate::schema::migrations::{self, History};
use crate::schema::tools::{DiskTree, Options};
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
            let findings = loaded
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
            MigrationSource {
                migration: loaded.migration,
                display,
                text: loaded.text.into(),
                script: loaded.script,
                down: loaded.down.map(|(display, text)| (display, text.into())),
                findings,
            }
        })
        .collect();
    (migrations, notices)
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
    loaded.check_named_dirs(&crate::config::disk_dir_problem)?;
    let dir = loaded.migrations_dir();
    let tree = DiskTree::open(&dir, &loaded.root, root)?;
    let history = migrations::load(&tree, loaded.config.migrations.layout, &tool_options(loaded), None)?;
    let tool = describe_tool(&history);
    let (migrations, notices) = sources_of(history);

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
    let settings = Settings {
        postgres_version: loaded.config.postgres_version,
        levels: loaded.config.rules.clone(),
        policies,
        under_review: false,
        ..Settings::default()
    };
    Ok((Sources { schema_dump, migrations, queries, notices, tool }, settings))
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

//! `sluice queries`: what Sluice reads as queries under some paths — each query with its host
//! position, its source and whether Sluice's SQL parser reads it, and per file what could not be
//! read or was skipped. The command is a thin renderer over [`scan`].
//!
//! Files are found as `lint` finds them: `.gitignore` honoured (inside a repository or not) —
//! except for files the repository tracks, which are the application's code whatever a pattern
//! says (RoboDanny ignores `config.py` and commits `cogs/config.py`) —, or not at all with
//! `no_ignore` (a snapshot exported from git is all tracked files); hidden directories skipped
//! except `.sqlx`, `node_modules` and a Go `vendor` directory (one with a `modules.txt`) skipped,
//! since they hold other people's code. Files are read and extracted on every core.

use super::code::{self, Extraction, HostPosition, Language};
use super::parsed::ParsedQuery;
use super::query::{Query, Source};
use crate::error::{read_bytes, text_from_bytes, Error, Result};
use rayon::prelude::*;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What one file yielded.
#[derive(Debug)]
pub struct FileListing {
    pub path: PathBuf,
    pub language: Language,
    pub extraction: Extraction,
    /// For each query (same order): Sluice's SQL parser reads every statement of it.
    pub parsed: Vec<bool>,
}

#[derive(Debug, Default)]
pub struct Listing {
    /// Files that yielded something, by path.
    pub files: Vec<FileListing>,
    /// Files of a language Sluice reads that were looked at.
    pub scanned: usize,
}

impl Listing {
    pub fn queries(&self) -> usize {
        self.files.iter().map(|f| f.extraction.queries.len()).sum()
    }

    pub fn parsed(&self) -> usize {
        self.files.iter().map(|f| f.parsed.iter().filter(|p| **p).count()).sum()
    }

    pub fn unreadable(&self) -> usize {
        self.files.iter().map(|f| f.extraction.unreadable.len()).sum()
    }

    pub fn skipped(&self) -> usize {
        self.files.iter().map(|f| f.extraction.skipped.len()).sum()
    }

    /// Statements of migration code (see [`code::migration_code`]), not checked.
    pub fn migration(&self) -> usize {
        self.files.iter().map(|f| f.extraction.migration_statements).sum()
    }

    /// Statements of test code (see [`code::test_code`], Rust `#[cfg(test)]` modules), not checked.
    pub fn test(&self) -> usize {
        self.files.iter().map(|f| f.extraction.test_statements).sum()
    }

    /// Statements for another database (MySQL, SQLite code; MyBatis `databaseId`), not checked.
    pub fn other_database(&self) -> usize {
        self.files.iter().map(|f| f.extraction.other_database_statements()).sum()
    }
}

/// Finds the files under `paths` (files or directories) and extracts their SQL; `no_ignore`
/// reads the files `.gitignore` names too; `calls` are the project's own functions that take SQL.
pub fn scan(paths: &[PathBuf], no_ignore: bool, calls: &code::ProjectCalls) -> Result<Listing> {
    let mut candidates = Vec::new();
    for path in paths {
        if path.is_file() {
            candidates.extend(code::language_of(path).map(|language| (path.clone(), language)));
            continue;
        }
        if !path.is_dir() {
            return Err(Error::Usage(format!("{}: no such file or directory", path.display())));
        }
        candidates.extend(tracked_files(path));
        let walker = ignore::WalkBuilder::new(path)
            .hidden(false)
            .require_git(false)
            .git_ignore(!no_ignore)
            .ignore(!no_ignore)
            .filter_entry(|entry| !entry.file_type().is_some_and(|t| t.is_dir()) || wanted_directory(entry.path()))
            .build();
        for entry in walker {
            let entry = entry.map_err(|e| Error::Other(format!("cannot list {}: {e}", path.display())))?;
            if entry.file_type().is_some_and(|t| t.is_file()) {
                if let Some(language) = code::language_of(entry.path()) {
                    candidates.push((entry.into_path(), language));
                }
            }
        }
    }
    candidates.sort();
    candidates.dedup();
    let scanned = candidates.len();
    let files: Vec<Option<FileListing>> = candidates
        .into_par_iter()
        .map(|(path, language)| {
            let bytes = read_bytes(&path)?;
            // Any `.xml` may be a mapper: one that is not is not read further.
            if language == Language::MyBatis && !bytes.windows(7).any(|w| w == b"<mapper") {
                return Ok(None);
            }
            let extraction = match text_from_bytes(&path, bytes) {
                Ok(text) => code::extract_with(&path, &text, calls)?,
                Err(Error::NotUtf8 { line, .. }) => not_utf8(line),
                Err(other) => return Err(other),
            };
            if extraction.is_empty() && extraction.databases.is_empty() && extraction.go_package.is_none() {
                return Ok(None);
            }
            Ok(Some(FileListing { path, language, extraction, parsed: Vec::new() }))
        })
        .collect::<Result<_>>()?;
    let mut files: Vec<FileListing> = files.into_iter().flatten().collect();
    let sides: Vec<_> = files.iter().map(|f| (f.path.as_path(), f.extraction.go_package.as_ref())).collect();
    let starts = |i: usize| files[i].extraction.queries.iter().map(|q| q.map.start()).collect();
    let resolved = code::go_package::resolve(&sides, &starts);
    for (file, resolved) in files.iter_mut().zip(resolved) {
        file.extraction.add_package_queries(resolved.queries, resolved.unreadable);
    }
    let decided = code::other_databases(files.iter().map(|f| (f.path.as_path(), f.extraction.databases.as_slice())));
    for (file, other) in files.iter_mut().zip(decided) {
        let relative = paths.iter().find_map(|p| file.path.strip_prefix(p).ok()).unwrap_or(&file.path);
        let migration = code::migration_code::by_path(relative).or_else(|| file.extraction.migration.clone());
        match (migration, code::test_code::by_path(relative), other) {
            (Some(why), _, _) => file.extraction.set_aside_as_migration(why),
            (None, Some(why), _) => file.extraction.set_aside_as_test(why),
            (None, None, Some(other)) => file.extraction.set_aside(other),
            (None, None, None) => {}
        }
    }
    files.retain(|f| !f.extraction.is_empty());
    files
        .par_iter_mut()
        .for_each(|file| file.parsed = file.extraction.queries.iter().map(|q| parses(&q.sql)).collect());
    Ok(Listing { files, scanned })
}

/// The files under `dir` that its git repository tracks (none outside a repository), skipping
/// the directories the walk skips.
fn tracked_files(dir: &Path) -> Vec<(PathBuf, Language)> {
    let Ok(repository) = git2::Repository::discover(dir) else { return Vec::new() };
    let (Some(workdir), Ok(index)) = (repository.workdir(), repository.index()) else { return Vec::new() };
    let Ok(absolute) = dir.canonicalize() else { return Vec::new() };
    let Ok(workdir) = workdir.canonicalize() else { return Vec::new() };
    let Ok(prefix) = absolute.strip_prefix(&workdir) else { return Vec::new() };
    index
        .iter()
        .filter_map(|entry| {
            let relative = PathBuf::from(String::from_utf8(entry.path).ok()?);
            let inside = relative.strip_prefix(prefix).ok()?;
            let path = dir.join(inside);
            let language = code::language_of(&path)?;
            let skipped = inside
                .parent()
                .is_some_and(|p| p.ancestors().any(|a| !a.as_os_str().is_empty() && !wanted_directory(&dir.join(a))));
            (!skipped && path.is_file()).then_some((path, language))
        })
        .collect()
}

/// A source file that is not UTF-8 is not read, and says so (a test fixture in another encoding
/// does not stop the listing).
fn not_utf8(line: usize) -> Extraction {
    let at = HostPosition { line, column: 1 };
    let reason = "the file is not valid UTF-8 from here on: it is not read".to_string();
    Extraction { unreadable: vec![code::Unreadable { at, source: "file".into(), reason }], ..Extraction::default() }
}

fn wanted_directory(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return true };
    if name == "node_modules" || (name.starts_with('.') && name != ".sqlx" && name != "." && name != "..") {
        return false;
    }
    !(name == "vendor" && path.join("modules.txt").is_file())
}

/// Whether Sluice reads every statement of `sql` as `lint` would: its placeholders read as
/// parameters (`?`, `@id`, `sqlc.arg(id)`, `#{id}`, `%(id)s` — [`ParsedQuery::parse`], what
/// the rules check), then parsed, or understood token by token by the recognizer
/// (`DROP INDEX CONCURRENTLY …`, which sqlparser refuses).
pub fn parses(sql: &str) -> bool {
    let query = ParsedQuery::parse(Query::whole_file(String::new(), sql, Source::QueryFile));
    let parsed = &query.file().parsed;
    parsed.unread.is_empty()
        && !parsed.statements.is_empty()
        && parsed.statements.iter().all(|s| s.too_deep.is_none() && (s.parse_error.is_none() || s.fully_recognized))
}

/// The listing for people: one line per query (`file:line:column`, source, first line of SQL),
/// then what each file could not read or skipped, then the totals.
pub fn write_table(listing: &Listing, out: &mut dyn Write) -> io::Result<()> {
    let mut rows = Vec::new();
    for file in &listing.files {
        for (query, parsed) in file.extraction.queries.iter().zip(&file.parsed) {
            let at = query.map.start();
            let first_line = query.sql.trim().lines().next().unwrap_or("").trim();
            let mut sql: String = first_line.chars().take(100).collect();
            if sql.len() < first_line.len() || query.sql.trim().contains('\n') {
                sql.push('…');
            }
            let location = format!("{}:{}:{}", file.path.display(), at.line, at.column);
            rows.push((location, query.source.as_str(), if *parsed { "" } else { "not parsed: " }, sql));
        }
    }
    let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let source_width = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
    for (location, source, parsed, sql) in &rows {
        writeln!(out, "{location:width$}  {source:source_width$}  {parsed}{sql}")?;
    }
    for file in &listing.files {
        let Extraction { unreadable, skipped, other_database, .. } = &file.extraction;
        if unreadable.is_empty()
            && skipped.is_empty()
            && other_database.is_empty()
            && file.extraction.migration_statements == 0
            && file.extraction.test_statements == 0
        {
            continue;
        }
        let lines =
            |positions: Vec<HostPosition>| positions.iter().map(|p| p.line.to_string()).collect::<Vec<_>>().join(", ");
        let mut notes = Vec::new();
        if !unreadable.is_empty() {
            notes.push(format!(
                "{} unreadable (line {})",
                unreadable.len(),
                lines(unreadable.iter().map(|u| u.at).collect())
            ));
        }
        if !skipped.is_empty() {
            notes.push(format!("{} skipped (line {})", skipped.len(), lines(skipped.iter().map(|s| s.at).collect())));
        }
        for other in other_database {
            notes.push(format!("{} for {} ({}), not checked", other.statements, other.database, other.shown_by));
        }
        if let Some(why) = file.extraction.migration.as_ref().filter(|_| file.extraction.migration_statements > 0) {
            notes.push(format!("{} in migration code ({why}), not checked", file.extraction.migration_statements));
        }
        if file.extraction.test_statements > 0 {
            let why = file.extraction.test.as_deref().unwrap_or("a `#[cfg(test)]` module");
            notes.push(format!("{} in test code ({why}), not checked", file.extraction.test_statements));
        }
        writeln!(out, "{}: {}", file.path.display(), notes.join(", "))?;
        for note in unreadable {
            writeln!(out, "  {}:{} {}: {}", note.at.line, note.at.column, note.source, note.reason)?;
        }
    }
    let files_with_queries = listing.files.iter().filter(|f| !f.extraction.queries.is_empty()).count();
    writeln!(
        out,
        "{} queries in {} files ({} parsed by Sluice), {} unreadable, {} skipped, {} for another database, {} in migration code, {} in test code; {} files scanned",
        listing.queries(),
        files_with_queries,
        listing.parsed(),
        listing.unreadable(),
        listing.skipped(),
        listing.other_database(),
        listing.migration(),
        listing.test(),
        listing.scanned
    )
}

/// The listing as one JSON document: `files` (each with its `queries`, `unreadable` and
/// `skipped`, positions 1-based, and `other_database`: statements for another database, by
/// database and what showed it) and `totals`.
pub fn write_json(listing: &Listing, out: &mut dyn Write) -> io::Result<()> {
    let position = |at: HostPosition| serde_json::json!({ "line": at.line, "column": at.column });
    let files: Vec<serde_json::Value> = listing
        .files
        .iter()
        .map(|file| {
            let queries: Vec<_> = file
                .extraction
                .queries
                .iter()
                .zip(&file.parsed)
                .map(|(q, parsed)| {
                    let at = q.map.start();
                    serde_json::json!({
                        "line": at.line, "column": at.column, "source": q.source, "sql": q.sql, "parsed": parsed,
                    })
                })
                .collect();
            let unreadable: Vec<_> = file
                .extraction
                .unreadable
                .iter()
                .map(|u| serde_json::json!({ "at": position(u.at), "source": u.source, "reason": u.reason }))
                .collect();
            let skipped: Vec<_> = file
                .extraction
                .skipped
                .iter()
                .map(|s| serde_json::json!({ "at": position(s.at), "reason": s.reason }))
                .collect();
            let other_database: Vec<_> = file
                .extraction
                .other_database
                .iter()
                .map(|o| serde_json::json!({ "database": o.database, "shown_by": o.shown_by, "statements": o.statements }))
                .collect();
            serde_json::json!({
                "path": file.path.display().to_string(),
                "language": file.language.name(),
                "queries": queries,
                "unreadable": unreadable,
                "skipped": skipped,
                "other_database": other_database,
                "migration": file.extraction.migration.as_ref().filter(|_| file.extraction.migration_statements > 0)
                    .map(|why| serde_json::json!({ "shown_by": why, "statements": file.extraction.migration_statements })),
                "test": (file.extraction.test_statements > 0).then(|| serde_json::json!({
                    "shown_by": file.extraction.test.as_deref().unwrap_or("a `#[cfg(test)]` module"),
                    "statements": file.extraction.test_statements,
                })),
            })
        })
        .collect();
    let document = serde_json::json!({
        "files": files,
        "totals": {
            "scanned": listing.scanned,
            "queries": listing.queries(),
            "parsed": listing.parsed(),
            "unreadable": listing.unreadable(),
            "skipped": listing.skipped(),
            "other_database": listing.other_database(),
            "migration": listing.migration(),
            "test": listing.test(),
        },
    });
    serde_json::to_writer_pretty(&mut *out, &document)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::parses;

    /// `sluice queries` says "parsed" exactly when lint reads the query: every placeholder
    /// style a source writes is a parameter, not a parse error.
    #[test]
    fn every_placeholder_style_parses_as_lint_reads_it() {
        let styles = [
            "SELECT * FROM users WHERE id = $1",
            "SELECT * FROM users WHERE id = ? AND email = ?",
            "SELECT * FROM users WHERE id = @id",
            "SELECT * FROM users WHERE id = sqlc.arg(id) AND org = sqlc.narg('org')",
            "SELECT * FROM users WHERE id = #{id} AND name = #{name,jdbcType=VARCHAR}",
            "SELECT * FROM users WHERE id = %(id)s AND total > %s",
            "SELECT * FROM users WHERE id = :id",
        ];
        for sql in styles {
            assert!(parses(sql), "{sql}");
        }
        // Read as written, some are not SQL at all: the rewrite is what makes them parse.
        let plain = |sql: &str| crate::sql::parse::parse_file(sql.to_string()).statements[0].parse_error.is_none();
        assert!(!plain(styles[4]) && !plain(styles[5]));
    }

    #[test]
    fn sql_that_is_not_sql_still_does_not_parse() {
        assert!(!parses("SELECT * FROM users WHERE id = ? AND"));
        assert!(!parses("SELEKT 1"));
        assert!(!parses(""));
    }
}

//! SQL in application code: one file per language or format. Each reads a host file with a
//! real parser of its language (tree-sitter grammars; an XML parser for mappers; JSON for
//! sqlx's offline data) and returns the SQL handed to a known database call, with a map from
//! every byte of that SQL back to its line and column in the host file.
//!
//! What cannot be read exactly (identifiers interpolated with `format!`, `fmt.Sprintf`,
//! f-strings, builders appending clauses) is returned as [`Unreadable`], never guessed at:
//! the engine reports it in one note per file and raises no finding on it.
//!
//! [`extract`] reads one file; [`language_of`] says which files it reads. Every extractor is
//! given the whole text and returns what it found in it; none reads another file (a Go constant
//! of another file of the package is reported as not read, never guessed).

mod go;
mod java;
mod kotlin;
mod mybatis;
mod python;
mod rust;
mod sql_like;
mod sqlx_offline;
mod syntax;
#[cfg(test)]
mod testing;
mod typescript;

pub use sql_like::looks_like_sql;

use crate::error::Result;
use std::path::Path;

/// The host languages and formats SQL is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Language {
    Go,
    Rust,
    Java,
    Kotlin,
    TypeScript,
    /// TypeScript with JSX (`.tsx`): its own grammar.
    Tsx,
    /// JavaScript, JSX included.
    JavaScript,
    Python,
    /// A MyBatis XML mapper (any `.xml` file whose root element is `<mapper>`).
    MyBatis,
    /// sqlx's offline data: `.sqlx/query-*.json` (sqlx 0.7 on) or `sqlx-data.json` (before).
    SqlxOffline,
}

impl Language {
    pub fn name(self) -> &'static str {
        match self {
            Language::Go => "Go",
            Language::Rust => "Rust",
            Language::Java => "Java",
            Language::Kotlin => "Kotlin",
            Language::TypeScript => "TypeScript",
            Language::Tsx => "TSX",
            Language::JavaScript => "JavaScript",
            Language::Python => "Python",
            Language::MyBatis => "MyBatis XML",
            Language::SqlxOffline => "sqlx offline data",
        }
    }
}

/// The language of a file by its name, for the files Sluice reads SQL from. An `.xml` file is a
/// candidate mapper: [`extract`] returns nothing for XML that is not one. Declaration files
/// (`.d.ts`) and minified scripts hold no queries.
pub fn language_of(path: &Path) -> Option<Language> {
    let name = path.file_name()?.to_str()?;
    let in_sqlx_dir = path.parent().and_then(Path::file_name).is_some_and(|dir| dir == ".sqlx");
    if (in_sqlx_dir && name.starts_with("query-") && name.ends_with(".json")) || name == "sqlx-data.json" {
        return Some(Language::SqlxOffline);
    }
    if name.ends_with(".d.ts") || name.ends_with(".min.js") {
        return None;
    }
    let extension = name.rsplit_once('.')?.1;
    Some(match extension {
        "go" => Language::Go,
        "rs" => Language::Rust,
        "java" => Language::Java,
        "kt" | "kts" => Language::Kotlin,
        "ts" | "mts" | "cts" => Language::TypeScript,
        "tsx" => Language::Tsx,
        "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
        "py" => Language::Python,
        "xml" => Language::MyBatis,
        _ => return None,
    })
}

/// The SQL at known database calls in `text`, the content of `path` (whose name picks the
/// language; a file of no language Sluice reads yields nothing). Errors only for a mapper or
/// an offline-data file that is not well-formed: a source file the grammar cannot fully read
/// yields what it could and one note per unreadable region that holds SQL.
pub fn extract(path: &Path, text: &str) -> Result<Extraction> {
    let Some(language) = language_of(path) else {
        return Ok(Extraction::default());
    };
    let mut found = match language {
        Language::Go => go::extract(text),
        Language::Rust => rust::extract(text),
        Language::Java => java::extract(text),
        Language::Kotlin => kotlin::extract(text),
        Language::TypeScript | Language::Tsx | Language::JavaScript => typescript::extract(language, text),
        Language::Python => python::extract(text),
        Language::MyBatis => mybatis::extract(path, text)?,
        Language::SqlxOffline => sqlx_offline::extract(path, text)?,
    };
    found.queries.sort_by_key(|q| q.map.start());
    found.unreadable.sort_by_key(|u| u.at);
    found.skipped.sort_by_key(|s| s.at);
    Ok(found)
}

/// What one host file yielded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extraction {
    pub queries: Vec<EmbeddedQuery>,
    /// SQL at a known database call that cannot be read exactly.
    pub unreadable: Vec<Unreadable>,
    /// Query text that is deliberately not SQL (JPQL without `nativeQuery = true`).
    pub skipped: Vec<Skipped>,
}

/// One SQL statement (or several, as the driver sends them) found in a host file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedQuery {
    /// The SQL as the driver receives it, escapes resolved and compile-time concatenations
    /// joined; placeholders as the driver's style writes them (`$1`, `?`, `:name`, `#{x}`);
    /// a host-language interpolation that is a parameter (`${…}` in a Prisma tagged template)
    /// becomes `$n`.
    pub sql: String,
    /// The construct it came from, for findings: `sqlx query!`, `pgx QueryRow`,
    /// `MyBatis select byName`, `Spring @Query(nativeQuery = true)`.
    pub source: String,
    /// Where each byte of `sql` stands in the host file.
    pub map: SourceMap,
}

/// A 1-based line and column (in characters) in the host file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct HostPosition {
    pub line: usize,
    pub column: usize,
}

impl Extraction {
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty() && self.unreadable.is_empty() && self.skipped.is_empty()
    }
}

/// The host positions of a query's text: a list of runs, each a range of the SQL whose bytes
/// stand one for one on the host's text from `start` on (a literal's text between escapes).
/// A byte outside every run (an escape's result, a joined `+`) takes the position of the run
/// before it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceMap {
    runs: Vec<Run>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    sql_start: usize,
    start: HostPosition,
}

impl SourceMap {
    /// Records that the SQL from byte `sql_start` on reads the host text from `start` on,
    /// newlines included (runs are pushed in increasing `sql_start`).
    pub fn push(&mut self, sql_start: usize, start: HostPosition) {
        debug_assert!(self.runs.last().is_none_or(|r| r.sql_start <= sql_start));
        self.runs.push(Run { sql_start, start });
    }

    /// The host position of the query's first byte.
    pub fn start(&self) -> HostPosition {
        self.runs.first().map_or(HostPosition { line: 1, column: 1 }, |run| run.start)
    }

    /// The host position of byte `offset` of `sql` (the text the map was built for).
    pub fn position(&self, sql: &str, offset: usize) -> HostPosition {
        let index = self.runs.partition_point(|r| r.sql_start <= offset);
        let Some(run) = index.checked_sub(1).map(|i| self.runs[i]) else {
            return HostPosition { line: 1, column: 1 };
        };
        let offset = offset.min(sql.len());
        let between = sql.get(run.sql_start..offset).unwrap_or("");
        match between.rfind('\n') {
            None => HostPosition { line: run.start.line, column: run.start.column + between.chars().count() },
            Some(newline) => HostPosition {
                line: run.start.line + between.matches('\n').count(),
                column: between[newline + 1..].chars().count() + 1,
            },
        }
    }
}

/// SQL at a known database call that is built at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub at: HostPosition,
    /// The call, as in [`EmbeddedQuery::source`].
    pub source: String,
    /// Why it cannot be read: "identifier interpolated with fmt.Sprintf".
    pub reason: String,
}

/// Query text that is not SQL, counted so nothing is dropped without a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub at: HostPosition,
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_follow_runs_and_newlines() {
        // `"SELECT 1\n" + "FROM t"` on lines 3 and 4 of a host file, the second at column 9.
        let sql = "SELECT 1\nFROM t";
        let mut map = SourceMap::default();
        map.push(0, HostPosition { line: 3, column: 12 });
        map.push(9, HostPosition { line: 4, column: 9 });
        assert_eq!(map.position(sql, 0), HostPosition { line: 3, column: 12 });
        assert_eq!(map.position(sql, 7), HostPosition { line: 3, column: 19 });
        assert_eq!(map.position(sql, 9), HostPosition { line: 4, column: 9 });
        assert_eq!(map.position(sql, 14), HostPosition { line: 4, column: 14 });
    }

    #[test]
    fn a_multi_line_literal_maps_to_its_real_lines() {
        let sql = "SELECT *\n  FROM t\n WHERE id = $1";
        let mut map = SourceMap::default();
        map.push(0, HostPosition { line: 10, column: 5 });
        let at = map.position(sql, sql.find("id").unwrap());
        assert_eq!(at, HostPosition { line: 12, column: 8 });
    }
}

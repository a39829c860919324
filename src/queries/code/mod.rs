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
//! of another file of the package is joined afterwards, by [`go_package::resolve`]).

mod database;
mod extraction;
mod go;
pub mod go_package;
mod java;
mod kotlin;
mod language;
pub mod migration_code;
mod mybatis;
mod project_calls;
mod python;
mod rust;
mod signs;
mod sql_like;
mod sqlx_offline;
mod syntax;
#[cfg(test)]
mod testing;
mod typescript;

pub use database::{decide as other_databases, evidence as database_evidence, Evidence, OtherDatabase};
pub use extraction::{EmbeddedQuery, Extraction, GoPackageSide, HostPosition, Skipped, SourceMap, Unreadable};
pub use language::Language;
pub use project_calls::ProjectCalls;
pub use sql_like::looks_like_sql;

use crate::error::Result;
use std::path::Path;

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
    extract_with(path, text, &ProjectCalls::default())
}

/// [`extract`], reading the SQL of the project's own wrapper `calls` too (Go, Rust, Java,
/// TypeScript, JavaScript and Python; not Kotlin).
pub fn extract_with(path: &Path, text: &str, calls: &ProjectCalls) -> Result<Extraction> {
    let Some(language) = language_of(path) else {
        return Ok(Extraction::default());
    };
    let mut found = match language {
        Language::Go => go::extract(text, calls),
        Language::Rust => rust::extract(text, calls),
        Language::Java => java::extract(text, calls),
        Language::Kotlin => kotlin::extract(text),
        Language::TypeScript | Language::Tsx | Language::JavaScript => typescript::extract(language, text, calls),
        Language::Python => python::extract(text, calls),
        Language::MyBatis => mybatis::extract(path, text)?,
        Language::SqlxOffline => sqlx_offline::extract(path, text)?,
    };
    found.queries.sort_by_key(|q| q.map.start());
    found.unreadable.sort_by_key(|u| u.at);
    found.skipped.sort_by_key(|s| s.at);
    found.databases = database::evidence(language, text);
    if language == Language::Go {
        found.migration = migration_code::goose(text);
    }
    Ok(found)
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

//! A query parsed for the rules: its placeholders rewritten as `$n` (see
//! [`crate::sql::placeholders`]), and the way back from a position in what the rules read to
//! the file where the query is written.

use super::query::{Place, Query, QueryName};
use crate::finding::{Finding, Snippet};
use crate::sql::parse::Statement;
use crate::sql::placeholders::{self, Rewrite};
use crate::sql::source::SourceFile;
use std::sync::{Arc, OnceLock};

#[derive(Debug)]
pub struct ParsedQuery {
    pub query: Query,
    /// Rewritten and parsed when first asked: a warm `sluice lint` takes most queries'
    /// findings from the query cache (`lint::query_cache`) and never parses them, and the
    /// migration rules that search the queries' text (`drop-column`) need no syntax tree.
    rewritten: OnceLock<(Arc<str>, Rewrite)>,
    file: OnceLock<SourceFile>,
}

impl ParsedQuery {
    /// The query, parsed now.
    pub fn parse(query: Query) -> ParsedQuery {
        let parsed = ParsedQuery::unparsed(query);
        parsed.file();
        parsed
    }

    /// The query, rewritten and parsed when a rule first reads it.
    pub fn unparsed(query: Query) -> ParsedQuery {
        ParsedQuery { query, rewritten: OnceLock::new(), file: OnceLock::new() }
    }

    /// Whether it has been parsed (see [`unparsed`](Self::unparsed)).
    pub fn is_parsed(&self) -> bool {
        self.file.get().is_some()
    }

    fn rewritten(&self) -> &(Arc<str>, Rewrite) {
        self.rewritten.get_or_init(|| {
            let sql = &self.query.sql;
            let rewrite = placeholders::rewrite(sql);
            let text: Arc<str> = if rewrite.is_identity() { Arc::clone(sql) } else { rewrite.text(sql).into() };
            (text, rewrite)
        })
    }

    /// The SQL with every parameter written `$n`: the text the rules read.
    pub fn text(&self) -> &Arc<str> {
        &self.rewritten().0
    }

    /// [`text`](Self::text) parsed, named by the query's file: what the rules check.
    pub fn file(&self) -> &SourceFile {
        self.file.get_or_init(|| SourceFile::parse_shared(self.query.file.clone(), Arc::clone(self.text())))
    }

    fn rewrite(&self) -> &Rewrite {
        &self.rewritten().1
    }

    /// The name a sqlc header gives `statement`, if any.
    pub fn name(&self, statement: &Statement) -> Option<QueryName> {
        QueryName::of(statement)
    }

    /// "sqlc query GetUser", "sqlx query!"; `None` for an unnamed statement of a query file.
    pub fn describe(&self, statement: &Statement) -> Option<String> {
        self.query.describe(self.name(statement).as_ref())
    }

    /// Whether positions in what the rules read are positions in the query's file as they are.
    fn positions_are_the_file(&self) -> bool {
        self.rewrite().is_identity() && self.query.place == Place::WholeFile
    }

    /// The line and column in the query's file of `line`, `column` (1-based, columns in
    /// characters) of what the rules read.
    pub fn host_position(&self, line: usize, column: usize) -> (usize, usize) {
        if self.positions_are_the_file() {
            return (line, column);
        }
        let offset = self.rewrite().original(offset_of(&self.file().parsed.text, line, column));
        match &self.query.place {
            Place::Record { line } => (*line, 1),
            Place::WholeFile => line_column(&self.query.sql, offset),
            Place::Embedded { map, .. } => {
                let at = map.position(&self.query.sql, offset);
                (at.line, at.column)
            }
        }
    }

    /// The host line of a line of what the rules read (a place in a `used by` list).
    pub fn host_line(&self, line: usize, column: usize) -> usize {
        self.host_position(line, column).0
    }

    /// A finding the rules made on `statement` (or elsewhere in the SQL: a directive, text
    /// not read), moved to where the query is written: its position in the host file, the
    /// host's lines as its excerpt, and the query's source named (`sqlc query GetUser`,
    /// `sqlx query! in src/users.rs`).
    pub fn locate(&self, mut finding: Finding, statement: Option<&Statement>) -> Finding {
        if !self.positions_are_the_file() {
            let (line, column) = self.host_position(finding.line, finding.column);
            let (end_line, end_column) = self.host_position(finding.end_line, finding.end_column);
            finding = finding.at(line, column, end_line, end_column);
            let (first, last) = match statement {
                Some(s) => (
                    self.host_line(s.span.line, s.span.column).min(line),
                    self.host_line(s.span.end_line, s.span.end_column).max(end_line),
                ),
                None => (line, end_line),
            };
            if let Some(snippet) = self.host_lines(first, last) {
                finding.snippet = Some(snippet);
            }
        }
        let Some(statement) = statement else { return finding };
        if let Some(what) = self.describe(statement) {
            finding.message = format!("{} (in {what})", finding.message);
            finding = match &self.query.source {
                // The entry names its file and line already.
                crate::queries::Source::Workload(_) => finding.fact("query", what),
                _ => finding.fact("query", format!("{what} in {}", self.query.file)),
            };
            if !matches!(self.query.place, Place::WholeFile) {
                finding = finding.fact("sql", excerpt(self.written(statement)));
            }
        }
        finding
    }

    /// A finding already placed in the query's file, given the file's lines as its excerpt.
    pub fn host_excerpt(&self, mut finding: Finding) -> Finding {
        if self.positions_are_the_file() {
            return finding;
        }
        if let Some(snippet) = self.host_lines(finding.line, finding.end_line) {
            finding.snippet = Some(snippet);
        }
        finding
    }

    /// Lines `first..=last` of the file where the query is written, as an excerpt.
    fn host_lines(&self, first: usize, last: usize) -> Option<Snippet> {
        match &self.query.place {
            Place::WholeFile => lines(&self.query.sql, first, last),
            Place::Embedded { host, .. } => lines(host, first, last),
            // The record's SQL as the rules read it, numbered from the record's line.
            Place::Record { line } => {
                let whole = 0..self.query.sql.len();
                (whole.len() <= 8 * 1024).then(|| Snippet::shared(*line, 1, &self.query.sql, whole))
            }
        }
    }

    /// A statement's text as the application wrote it (placeholders in its style).
    pub fn written(&self, statement: &Statement) -> &str {
        let start = self.rewrite().original(statement.span.start);
        let end = self.rewrite().original(statement.span.end).max(start);
        self.query.sql.get(start..end).unwrap_or_default()
    }

    /// The statement that holds `line` of what the rules read.
    pub fn statement_at(&self, line: usize) -> Option<&Statement> {
        let statements = &self.file().parsed.statements;
        let index = statements.partition_point(|s| s.span.line <= line).checked_sub(1)?;
        let statement = &statements[index];
        (line <= statement.span.end_line).then_some(statement)
    }
}

/// At most this much of a query's SQL in a finding's facts.
const SQL_EXCERPT: usize = 300;

fn excerpt(sql: &str) -> String {
    let collapsed = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(SQL_EXCERPT) {
        Some((cut, _)) => format!("{}…", &collapsed[..cut]),
        None => collapsed,
    }
}

/// The byte offset of a 1-based line and column (in characters) of `text`.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let line_start =
        if line <= 1 { 0 } else { text.match_indices('\n').nth(line - 2).map_or(text.len(), |(at, _)| at + 1) };
    let rest = &text[line_start..];
    let within = rest.char_indices().nth(column.saturating_sub(1)).map_or(rest.len(), |(at, _)| at);
    line_start + within
}

/// The 1-based line and column (in characters) of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..floor_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

fn floor_boundary(text: &str, mut offset: usize) -> usize {
    offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Lines `first..=last` of `text` as an excerpt; `None` when they are too long to show (a
/// minified file).
fn lines(text: &Arc<str>, first: usize, last: usize) -> Option<Snippet> {
    const LONGEST: usize = 8 * 1024;
    let start = offset_of(text, first, 1);
    let end =
        text[start..].match_indices('\n').nth(last.saturating_sub(first)).map_or(text.len(), |(at, _)| start + at);
    (end - start <= LONGEST).then(|| Snippet::shared(first, 1, text, start..end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queries::code::{HostPosition, SourceMap};
    use crate::queries::Source;

    #[test]
    fn a_sqlc_header_names_the_statement_after_it() {
        let query = Query::whole_file(
            "queries/users.sql",
            "-- name: GetUser :one\nSELECT * FROM users WHERE id = @id;\n\n-- name: ListUsers :many\nSELECT * FROM users;",
            Source::Sqlc { config: "sqlc.yaml".into() },
        );
        let parsed = ParsedQuery::parse(query);
        let names: Vec<String> = parsed.file().parsed.statements.iter().filter_map(|s| parsed.describe(s)).collect();
        assert_eq!(names, ["sqlc query GetUser", "sqlc query ListUsers"]);
        assert_eq!(QueryName::of(&parsed.file().parsed.statements[0]).unwrap().command.as_deref(), Some(":one"));
        assert_eq!(
            parsed.file().parsed.statement_text(&parsed.file().parsed.statements[0]),
            "SELECT * FROM users WHERE id = $1"
        );
    }

    #[test]
    fn positions_come_back_to_the_text_as_written() {
        // `?` became `$1` and `$2`: columns after them moved by one each.
        let text = "SELECT 1 FROM t\nWHERE a = ? AND b = ? AND lower(c) = 'x'";
        let parsed = ParsedQuery::parse(Query::whole_file("q.sql", text, Source::QueryFile));
        let rewritten = &parsed.file().parsed.text;
        let column = rewritten.lines().nth(1).unwrap().find("lower").unwrap() + 1;
        let expected = text.lines().nth(1).unwrap().find("lower").unwrap() + 1;
        assert_eq!(parsed.host_position(2, column), (2, expected));
    }

    #[test]
    fn an_embedded_query_maps_to_its_host_lines() {
        let host: Arc<str> =
            "fn main() {\n    let q = sqlx::query!(\"SELECT * FROM t\n        WHERE lower(a) = ?\");\n}\n".into();
        let sql = "SELECT * FROM t\n        WHERE lower(a) = ?";
        let mut map = SourceMap::default();
        map.push(0, HostPosition { line: 2, column: 26 });
        let query = Query {
            file: "src/main.rs".into(),
            sql: sql.into(),
            source: Source::Code("sqlx query!".into()),
            place: Place::Embedded { map, host: Arc::clone(&host), digest: None },
        };
        let parsed = ParsedQuery::parse(query);
        let statement = &parsed.file().parsed.statements[0];
        let finding = Finding::new("r", crate::finding::Severity::Error, "src/main.rs", "m").at(2, 15, 2, 23);
        let finding = parsed.locate(finding, Some(statement));
        assert_eq!((finding.line, finding.column), (3, 15));
        assert_eq!(&host[host.find("WHERE").unwrap()..][..5], "WHERE");
        assert_eq!(finding.message, "m (in sqlx query!)");
        assert!(finding.snippet.unwrap().text().starts_with("    let q = sqlx::query!"));
        let facts: Vec<&str> = finding.facts.iter().map(|f| f.value.as_str()).collect();
        assert_eq!(facts, ["sqlx query! in src/main.rs", "SELECT * FROM t WHERE lower(a) = ?"]);
    }
}

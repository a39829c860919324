//! A query as a source yields it: its SQL, the file that holds it, and where it stands there.

use super::code::SourceMap;
use crate::sql::parse::Statement;
use std::sync::Arc;

/// SQL an application sends, and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The file that holds it, as findings name it (relative to the repository root, `/`).
    pub file: String,
    /// The SQL as written there: placeholders in the application's style.
    pub sql: Arc<str>,
    pub source: Source,
    pub place: Place,
}

/// What wrote the query, for findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A `.sql` file in a query directory.
    QueryFile,
    /// A query file a sqlc configuration names (its path).
    Sqlc { config: String },
    /// A database call in application code: `sqlx query!`, `MyBatis select byName`.
    Code(String),
    /// An entry of production's workload (`[queries] workload`): its record, `queryid` and
    /// traffic.
    Workload(Box<super::workload::origin::Origin>),
}

/// Where the SQL stands in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// The SQL is the whole file.
    WholeFile,
    /// The SQL is read out of the file's text (`host`) where `map` says; `digest` is the host's
    /// [`text_digest`](super::scan_cache::text_digest) when the scan knew it (the query cache
    /// keys the query's findings by it, and need not hash the file again).
    Embedded { map: SourceMap, host: Arc<str>, digest: Option<crate::cache::Key> },
    /// The SQL is a field of the CSV record that starts on `line` (a workload export), as the
    /// source prepared it for the rules: every position in it is that line.
    Record { line: usize },
}

impl Query {
    /// A `.sql` file's text as a query source.
    pub fn whole_file(file: impl Into<String>, text: impl Into<Arc<str>>, source: Source) -> Query {
        Query { file: file.into(), sql: text.into(), source, place: Place::WholeFile }
    }

    /// `sqlc query GetUser`, `sqlx query!`, or nothing for a plain query file's statement
    /// without a name.
    pub fn describe(&self, name: Option<&QueryName>) -> Option<String> {
        match (&self.source, name) {
            (Source::Code(call), _) => Some(call.clone()),
            (Source::Workload(origin), _) => Some(origin.describe()),
            (Source::Sqlc { .. }, Some(name)) => Some(format!("sqlc query {}", name.name)),
            (Source::QueryFile, Some(name)) => Some(format!("query {}", name.name)),
            (Source::Sqlc { .. }, None) => Some("sqlc query".into()),
            (Source::QueryFile, None) => None,
        }
    }
}

/// A query's name, from a sqlc-style header before it: `-- name: GetUser :one`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryName {
    pub name: String,
    /// `:one`, `:many`, `:exec`… as written.
    pub command: Option<String>,
}

impl QueryName {
    /// The name a statement's leading comments give it (the last header wins).
    pub fn of(statement: &Statement) -> Option<QueryName> {
        statement.leading_comments.iter().rev().find_map(|c| QueryName::parse(&c.text))
    }

    fn parse(comment: &str) -> Option<QueryName> {
        let body = comment.strip_prefix("--").or_else(|| comment.strip_prefix("/*")?.strip_suffix("*/"))?;
        let rest = body.trim().strip_prefix("name:")?;
        let mut words = rest.split_whitespace();
        let name = words.next()?.to_string();
        let command = words.next().filter(|c| c.starts_with(':')).map(str::to_string);
        Some(QueryName { name, command })
    }
}

//! Where the queries an application runs come from: one file per source, each yielding
//! statements with their origin, all checked by the same rules.
//!
//! The layer sits between `schema` and `rules`: a source reads files (or a workload export)
//! and knows nothing of rules; the lint engine checks what the sources yield against the
//! replayed schema.
//!
//! - [`sql_files`]: `.sql` files in the query directories (`[queries] dirs`), in any
//!   placeholder style.
//! - [`sqlc`]: the query paths a `sqlc.yaml` / `sqlc.yml` / `sqlc.json` names (versions 1 and 2).
//! - [`code`]: SQL passed to known database calls in application code (Go, Rust, Java/Kotlin,
//!   TypeScript/JavaScript, Python) and in framework files (MyBatis mappers, sqlx offline
//!   data), each read with a real parser of its language.
//!
//! Every source yields [`Query`] values; [`ParsedQuery`] is one parsed for the rules, with
//! its placeholders read as parameters and the way back from a position in what the rules
//! read to the line and column in the file where the query is written.

pub mod changes;
pub mod code;
pub mod code_scan;
mod parsed;
pub mod sql_files;
pub mod sqlc;
pub mod workload;

pub use parsed::{ParsedQuery, QueryName};

use code::SourceMap;
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
    Workload(Box<workload::Origin>),
}

/// Where the SQL stands in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// The SQL is the whole file.
    WholeFile,
    /// The SQL is read out of the file's text (`host`) where `map` says.
    Embedded { map: SourceMap, host: Arc<str> },
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

/// "3 query file(s)", or "2 query file(s), 41 queries in 12 code file(s)": what a run read.
pub fn describe_counts(queries: &[ParsedQuery]) -> String {
    let mut files = std::collections::BTreeSet::new();
    let mut code_files = std::collections::BTreeSet::new();
    let mut in_code = 0;
    let mut in_workload = 0;
    for q in queries {
        match q.query.source {
            Source::Code(_) => {
                in_code += 1;
                code_files.insert(q.query.file.as_str());
            }
            Source::Workload(_) => in_workload += 1,
            _ => {
                files.insert(q.query.file.as_str());
            }
        }
    }
    let mut out = format!("{} query file(s)", files.len());
    if in_code > 0 {
        out.push_str(&format!(", {in_code} queries in {} code file(s)", code_files.len()));
    }
    if in_workload > 0 {
        out.push_str(&format!(", {in_workload} workload entries"));
    }
    out
}

//! Which queries a change changed, whatever their source: each statement of the base side and
//! of the head side keyed by its file and its name (a sqlc header), or its call and its place
//! among the file's statements, and the pairs whose text differs. What `sluice plan` compares:
//! the base text on the base fixture, the head text on the head fixture.

use super::{ParsedQuery, QueryName};
use std::collections::BTreeMap;

/// One query as both sides have it; texts have their parameters written `$n`, ready for
/// `PREPARE` / `EXPLAIN`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryChange {
    pub file: String,
    /// `sqlc query GetUser`, `pgx QueryRow #2`, `statement 3`.
    pub label: String,
    /// `None`: the query is new.
    pub base: Option<String>,
    /// `None`: the change removed it.
    pub head: Option<String>,
    /// Its 1-based line on the head side (the base side's when removed).
    pub line: usize,
}

/// (file, label) → (text, host line) for every statement of `queries`.
fn keyed<'a>(queries: impl IntoIterator<Item = &'a ParsedQuery>) -> BTreeMap<(String, String), (String, usize)> {
    let mut out = BTreeMap::new();
    let mut ordinal: BTreeMap<(String, String), usize> = BTreeMap::new();
    for query in queries {
        for statement in &query.file().parsed.statements {
            let label = match (QueryName::of(statement), query.describe(statement)) {
                (Some(name), Some(what)) if what.contains(&name.name) => what,
                (_, what) => {
                    let what = what.unwrap_or_else(|| "statement".into());
                    let n = ordinal.entry((query.query.file.clone(), what.clone())).or_default();
                    *n += 1;
                    format!("{what} #{n}")
                }
            };
            let text = query.file().parsed.statement_text(statement).trim().to_string();
            let line = query.host_line(statement.span.line, statement.span.column);
            out.insert((query.query.file.clone(), label), (text, line));
        }
    }
    out
}

/// The queries whose text differs between `base` and `head`, the new ones and the removed ones.
pub fn changed<'a>(
    base: impl IntoIterator<Item = &'a ParsedQuery>,
    head: impl IntoIterator<Item = &'a ParsedQuery>,
) -> Vec<QueryChange> {
    let (mut base, head) = (keyed(base), keyed(head));
    let mut out = Vec::new();
    for ((file, label), (text, line)) in head {
        let before = base.remove(&(file.clone(), label.clone()));
        if before.as_ref().is_some_and(|(b, _)| *b == text) {
            continue;
        }
        out.push(QueryChange { file, label, base: before.map(|(b, _)| b), head: Some(text), line });
    }
    for ((file, label), (text, line)) in base {
        out.push(QueryChange { file, label, base: Some(text), head: None, line });
    }
    out.sort_by(|a, b| (&a.file, a.line, &a.label).cmp(&(&b.file, b.line, &b.label)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queries::{Query, Source};

    fn sqlc(text: &str) -> Vec<ParsedQuery> {
        vec![ParsedQuery::parse(Query::whole_file(
            "db/query/users.sql",
            text,
            Source::Sqlc { config: "sqlc.yaml".into() },
        ))]
    }

    #[test]
    fn pairs_queries_by_name_and_keeps_what_changed() {
        let base = sqlc("-- name: A :one\nSELECT 1 FROM t WHERE id = @id;\n-- name: B :many\nSELECT 2;\n-- name: Gone :exec\nDELETE FROM t;");
        let head = sqlc("-- name: B :many\nSELECT 2;\n-- name: A :one\nSELECT 1 FROM t WHERE lower(x) = @x;\n-- name: New :one\nSELECT 3;");
        let found: Vec<(String, Option<String>, Option<String>)> =
            changed(&base, &head).into_iter().map(|c| (c.label, c.base, c.head)).collect();
        assert_eq!(
            found,
            [
                (
                    "sqlc query A".into(),
                    Some("SELECT 1 FROM t WHERE id = $1".into()),
                    Some("SELECT 1 FROM t WHERE lower(x) = $1".into())
                ),
                ("sqlc query Gone".into(), Some("DELETE FROM t".into()), None),
                ("sqlc query New".into(), None, Some("SELECT 3".into())),
            ]
        );
    }
}

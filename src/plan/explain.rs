//! Asking PostgreSQL for plans: the generic plan of each query (what a prepared statement gets
//! whatever its parameters), and with `--analyze` real executions with sample parameters.

use crate::error::{Error, Result};
use crate::plan::scale::{quote_literal, Generator, ScaleSpec};
use crate::plan::server::{pg_message, quote_ident};
use serde_json::Value;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;
use std::path::Path;
use std::time::Duration;
use tokio_postgres::{Client, SimpleQueryMessage};

/// One statement of a query file.
#[derive(Debug, Clone)]
pub struct Query {
    /// The query file, relative to the project root, with `/`.
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    pub text: String,
    /// Parameter values from a `-- sluice:params 42, 'x'` comment above the statement.
    pub params: Option<Vec<String>>,
    /// Column each `$n` is compared with (index n-1), for sample values.
    pub param_columns: Vec<Option<String>>,
    /// Identifiers in the statement, to prefer the tables it reads when choosing sample values.
    pub words: Vec<String>,
    /// What the base side runs in its place ([`super::pairing`]).
    pub on_base: OnBase,
}

/// What the base side runs in place of one head statement.
#[derive(Debug, Clone, Default)]
pub enum OnBase {
    /// The same text.
    #[default]
    Same,
    /// Another text (the base file's statement, with its own lines and parameters).
    Changed(Box<Query>),
    /// Nothing: the statement is new on head.
    New,
}

/// One side's plans and measurements, one entry per query (`None`: not planned on that side).
pub struct Side {
    /// The generic plan, or the server's reason it could not plan it.
    pub plans: Vec<Option<std::result::Result<Value, String>>>,
    pub measured: Vec<Option<std::result::Result<Measured, String>>>,
}

/// A finding placed on a query's statement.
pub fn finding_at(
    rule: &str,
    severity: crate::finding::Severity,
    query: &Query,
    message: String,
) -> crate::finding::Finding {
    crate::finding::Finding::new(rule, severity, query.file.clone(), message)
        .at(query.line, query.column, query.end_line, query.end_column)
        .snippet(query.line, query.text.clone())
}

fn is_plannable(first: Keyword) -> bool {
    matches!(
        first,
        Keyword::SELECT
            | Keyword::WITH
            | Keyword::INSERT
            | Keyword::UPDATE
            | Keyword::DELETE
            | Keyword::VALUES
            | Keyword::TABLE
            | Keyword::MERGE
    )
}

/// The most parameters a PostgreSQL statement can have (the protocol counts them in 16 bits).
const MAX_PARAMETERS: usize = 65_535;

/// Splits a query file into the statements that can be planned.
pub fn load_queries(path: &Path, relative: &str) -> Result<Vec<Query>> {
    parse_queries(path, relative, &crate::error::read_text(path)?)
}

/// [`load_queries`] over text already read (from git, say); `path` names the file in errors.
pub fn parse_queries(path: &Path, relative: &str, text: &str) -> Result<Vec<Query>> {
    let split = crate::sql::split::split(text);
    if let Some(unread) = split.unread.first() {
        return Err(Error::invalid(path, Some(unread.span.line), unread.message()));
    }
    let mut out = Vec::new();
    for statement in &split.statements {
        let tokens: Vec<&Token> =
            statement.tokens.iter().map(|t| &t.token).filter(|t| !matches!(t, Token::Whitespace(_))).collect();
        let first = match tokens.first() {
            Some(Token::Word(w)) => w.keyword,
            _ => Keyword::NoKeyword,
        };
        if !is_plannable(first) {
            continue;
        }
        let params = statement
            .leading_comments
            .iter()
            .find_map(|c| c.text.trim_start_matches("--").trim().strip_prefix("sluice:params").map(str::to_string))
            .map(|list| split_params(&list));
        let mut param_columns: Vec<Option<String>> = Vec::new();
        let mut words = Vec::new();
        for (i, token) in tokens.iter().enumerate() {
            match token {
                Token::Word(w) if w.keyword == Keyword::NoKeyword || w.quote_style.is_some() => {
                    words.push(w.value.clone())
                }
                Token::Placeholder(p) => {
                    let Some(n) = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()).filter(|&n| n >= 1) else {
                        continue;
                    };
                    // A bound before allocating one slot per parameter: `$4000000000` would abort.
                    if n > MAX_PARAMETERS {
                        return Err(Error::invalid(
                            path,
                            Some(statement.span.line),
                            format!("{p}: PostgreSQL allows at most {MAX_PARAMETERS} parameters"),
                        ));
                    }
                    if param_columns.len() < n {
                        param_columns.resize(n, None);
                    }
                    if param_columns[n - 1].is_none() {
                        param_columns[n - 1] = compared_column(&tokens, i);
                    }
                }
                _ => {}
            }
        }
        let span = statement.span;
        out.push(Query {
            file: relative.to_string(),
            line: span.line,
            column: span.column,
            end_line: span.end_line,
            end_column: span.end_column,
            text: text[span.start..span.end].to_string(),
            params,
            param_columns,
            words,
            on_base: Default::default(),
        });
    }
    Ok(out)
}

/// `a = $1`, `t.a BETWEEN $1 AND $2`, `a IN ($1)`, `a = ANY($1)`: the column nearest before the
/// placeholder, looking back over operators and keywords only.
fn compared_column(tokens: &[&Token], at: usize) -> Option<String> {
    let mut i = at;
    let mut steps = 0;
    while i > 0 && steps < 8 {
        i -= 1;
        steps += 1;
        match tokens[i] {
            Token::Word(w) if w.keyword == Keyword::NoKeyword || w.quote_style.is_some() => {
                return Some(w.value.clone())
            }
            Token::Word(w)
                if matches!(
                    w.keyword,
                    Keyword::SELECT
                        | Keyword::WHERE
                        | Keyword::SET
                        | Keyword::VALUES
                        | Keyword::LIMIT
                        | Keyword::OFFSET
                ) =>
            {
                return None
            }
            Token::Comma => return None,
            _ => {}
        }
    }
    None
}

/// `42, 'a, b', NULL` → three literals (commas inside quotes do not split).
fn split_params(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in list.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                current.push(c);
            }
            ',' if !quoted => out.push(std::mem::take(&mut current).trim().to_string()),
            _ => current.push(c),
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_string());
    }
    out
}

async fn simple_rows(
    client: &Client,
    sql: &str,
    timeout: Duration,
) -> std::result::Result<Vec<Vec<Option<String>>>, String> {
    let run = client.simple_query(sql);
    let messages = match tokio::time::timeout(timeout + Duration::from_secs(5), run).await {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => return Err(pg_message(&e)),
        Err(_) => {
            let _ = client.cancel_token().cancel_query(tokio_postgres::NoTls).await;
            return Err(format!("no answer within {} s", timeout.as_secs()));
        }
    };
    Ok(messages
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect())
}

fn parse_plan(rows: Vec<Vec<Option<String>>>) -> std::result::Result<Value, String> {
    let text =
        rows.into_iter().next().and_then(|r| r.into_iter().next().flatten()).ok_or("EXPLAIN returned nothing")?;
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("EXPLAIN output is not JSON: {e}"))?;
    // `[{"Plan": {...}, "Execution Time": ...}]` → the object.
    value.get(0).cloned().ok_or_else(|| "EXPLAIN returned an empty list".to_string())
}

/// Prepares the session for planning: every statement under `timeout`.
pub async fn prepare_session(client: &Client, timeout: Duration) -> Result<()> {
    client
        .batch_execute(&format!(
            "SET statement_timeout = {}; SET lock_timeout = {}",
            timeout.as_millis(),
            timeout.as_millis()
        ))
        .await
        .map_err(|e| Error::Other(pg_message(&e)))
}

/// The generic plan: the one a prepared statement gets whatever its parameters.
/// Errors are the server's words (a query that no longer plans is a finding, not a crash).
pub async fn generic_plan(
    client: &Client,
    query: &Query,
    version_num: u32,
    timeout: Duration,
) -> std::result::Result<Value, String> {
    simple_rows(client, &format!("SET statement_timeout = {}", timeout.as_millis()), timeout).await?;
    if version_num >= 160000 {
        let rows = simple_rows(client, &format!("EXPLAIN (GENERIC_PLAN, FORMAT JSON) {}", query.text), timeout).await?;
        return parse_plan(rows);
    }
    let name = "sluice_q";
    let _ = simple_rows(client, &format!("DEALLOCATE {name}"), timeout).await;
    simple_rows(client, &format!("PREPARE {name} AS {}", query.text), timeout).await?;
    let result = async {
        simple_rows(client, "SET plan_cache_mode = force_generic_plan", timeout).await?;
        let n = param_count(client, name, timeout).await?;
        let args = if n == 0 { String::new() } else { format!("({})", vec!["NULL"; n].join(", ")) };
        parse_plan(simple_rows(client, &format!("EXPLAIN (FORMAT JSON) EXECUTE {name}{args}"), timeout).await?)
    }
    .await;
    let _ = simple_rows(client, &format!("DEALLOCATE {name}; RESET plan_cache_mode"), timeout).await;
    result
}

async fn param_count(client: &Client, name: &str, timeout: Duration) -> std::result::Result<usize, String> {
    let rows = simple_rows(
        client,
        &format!(
            "SELECT coalesce(cardinality(parameter_types), 0) FROM pg_prepared_statements WHERE name = {}",
            quote_literal(name)
        ),
        timeout,
    )
    .await?;
    rows.first()
        .and_then(|r| r.first().cloned().flatten())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| "the prepared statement vanished".to_string())
}

/// What `--analyze` measured for one query on one side.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The plan of the run with the median execution time.
    pub plan: Value,
    pub median_ms: f64,
    pub runs_ms: Vec<f64>,
    pub params: Vec<String>,
}

/// Runs the query `repeat` times under EXPLAIN ANALYZE (inside a transaction that is rolled
/// back, so writes leave no trace) with sample parameters, and keeps the median.
pub async fn analyze(
    client: &Client,
    query: &Query,
    params: &[String],
    repeat: usize,
    timeout: Duration,
) -> std::result::Result<Measured, String> {
    let name = "sluice_a";
    simple_rows(client, &format!("SET statement_timeout = {}", timeout.as_millis()), timeout).await?;
    let _ = simple_rows(client, &format!("DEALLOCATE {name}"), timeout).await;
    simple_rows(client, &format!("PREPARE {name} AS {}", query.text), timeout).await?;
    let n = param_count(client, name, timeout).await?;
    let mut args: Vec<String> = params.iter().take(n).cloned().collect();
    args.resize(n, "NULL".into());
    let call = if n == 0 { name.to_string() } else { format!("{name}({})", args.join(", ")) };
    let mut runs: Vec<(f64, Value)> = Vec::new();
    for _ in 0..repeat.max(1) {
        simple_rows(client, "BEGIN", timeout).await?;
        let result =
            simple_rows(client, &format!("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE {call}"), timeout).await;
        let _ = simple_rows(client, "ROLLBACK", timeout).await;
        let plan = parse_plan(result?)?;
        let ms = plan.get("Execution Time").and_then(Value::as_f64).unwrap_or(0.0);
        runs.push((ms, plan));
    }
    let _ = simple_rows(client, &format!("DEALLOCATE {name}"), timeout).await;
    let runs_ms: Vec<f64> = runs.iter().map(|(ms, _)| *ms).collect();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (median_ms, plan) = runs.swap_remove(runs.len() / 2);
    Ok(Measured { plan, median_ms, runs_ms, params: args })
}

/// Sample parameter values: the `sluice:params` comment, else a typical value of the column each
/// `$n` is compared with, from the scale spec's generator, else a value read from the fixture.
pub async fn sample_params(client: &Client, query: &Query, spec: &ScaleSpec) -> Vec<String> {
    if let Some(params) = &query.params {
        return params.clone();
    }
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for column in &query.param_columns {
        let value = match column {
            // The second parameter on a column is the upper end of a range (`BETWEEN $3 AND $4`).
            Some(column) => sample_for_column(client, query, spec, column, !seen.insert(column.clone())).await,
            None => None,
        };
        out.push(value.unwrap_or_else(|| "NULL".into()));
    }
    out
}

async fn sample_for_column(
    client: &Client,
    query: &Query,
    spec: &ScaleSpec,
    column: &str,
    upper: bool,
) -> Option<String> {
    let mentioned = |table: &str| query.words.iter().any(|w| w == table || table.ends_with(&format!(".{w}")));
    let mut candidates: Vec<(&String, &crate::plan::scale::TableSpec)> =
        spec.tables.iter().filter(|(_, t)| t.columns.contains_key(column)).collect();
    candidates.sort_by_key(|(name, _)| !mentioned(name));
    for (table, t) in &candidates {
        if let Some(v) = typical(spec, table, column, &t.columns[column].generator, 0, upper) {
            return Some(v);
        }
    }
    // No generator for the column: read a value from a table the query mentions.
    for word in &query.words {
        let sql = format!(
            "SELECT {c}::text FROM {t} WHERE {c} IS NOT NULL LIMIT 1",
            c = quote_ident(column),
            t = quote_ident(word)
        );
        if let Ok(Ok(rows)) = tokio::time::timeout(Duration::from_secs(5), client.simple_query(&sql)).await {
            for m in rows {
                if let SimpleQueryMessage::Row(r) = m {
                    if let Some(v) = r.get(0) {
                        return Some(quote_literal(v));
                    }
                }
            }
        }
    }
    None
}

/// A representative value of a generator: the middle of a range, the hottest value of a skew.
/// `upper`: the other end of a range query starting there, 1% of the generator's span wide.
fn typical(
    spec: &ScaleSpec,
    table: &str,
    column: &str,
    generator: &Generator,
    depth: usize,
    upper: bool,
) -> Option<String> {
    let rows = spec.tables.get(table).map(|t| t.rows).unwrap_or(1).max(1);
    Some(match generator {
        Generator::Uniform { low, high } => {
            let width = if upper { ((high - low) / 100).max(1) } else { 0 };
            (low + (high - low) / 2 + width).to_string()
        }
        Generator::Zipf { .. } => "1".into(),
        Generator::References { table: t, column: c } => {
            let target = spec.tables.get(t)?;
            match target.columns.get(c) {
                Some(cspec) if depth < 4 => typical(spec, t, c, &cspec.generator, depth + 1, upper)?,
                // A key column without a generator is filled 1, 2, 3…
                _ => (target.rows.max(1) / 2).max(1).to_string(),
            }
        }
        Generator::Timestamps { from, to } => {
            let a = chrono::DateTime::parse_from_rfc3339(from).ok()?;
            let b = chrono::DateTime::parse_from_rfc3339(to).ok()?;
            let width = if upper { (b - a) / 100 } else { chrono::TimeDelta::zero() };
            quote_literal(&(a + (b - a) / 2 + width).to_rfc3339())
        }
        Generator::OneOf(values) => values.first()?.clone(),
        Generator::Pattern(p) => quote_literal(&p.replace("{n}", &(rows / 2).max(1).to_string())),
        Generator::Sequence(start) => (start + (rows / 2) as i64).to_string(),
        Generator::Constant(v) => v.clone(),
        Generator::Sql(_) => {
            let _ = column;
            return None;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_number_beyond_postgresql_is_an_error_not_an_allocation() {
        let text = "SELECT 1;\nSELECT * FROM t WHERE a = $4000000000;";
        let err = parse_queries(Path::new("q.sql"), "q.sql", text).unwrap_err().to_string();
        assert_eq!(err, "q.sql:2: $4000000000: PostgreSQL allows at most 65535 parameters");
        assert_eq!(parse_queries(Path::new("q.sql"), "q.sql", "SELECT $65535;").unwrap().len(), 1);
    }

    #[test]
    fn finds_the_column_each_parameter_is_compared_with() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("q.sql");
        std::fs::write(
            &path,
            "SET x = 1;\n-- sluice:params 7, 'a, b'\nSELECT * FROM stop_times st WHERE st.route_id = $1 AND departure_time BETWEEN $2 AND $3 AND kind = ANY($4);\nSELECT 1;",
        )
        .expect("write");
        let queries = load_queries(&path, "q.sql").expect("queries");
        assert_eq!(queries.len(), 2, "SET is not planned");
        let q = &queries[0];
        assert_eq!(q.line, 3);
        assert_eq!(q.params.as_deref(), Some(&["7".to_string(), "'a, b'".to_string()][..]));
        let cols: Vec<Option<&str>> = q.param_columns.iter().map(|c| c.as_deref()).collect();
        assert_eq!(cols, vec![Some("route_id"), Some("departure_time"), Some("departure_time"), Some("kind")]);
        assert!(queries[1].params.is_none());
    }

    #[test]
    fn typical_values_come_from_the_generators() {
        let spec = crate::plan::scale::parse(
            Path::new("s.toml"),
            "[tables.trips]\nrows = 100\n[tables.st]\nrows = 10\n[tables.st.columns]\nroute_id = { uniform = [1, 9] }\n\
             trip_id = { references = \"trips.id\" }\nkind = { one_of = [\"a\", \"b\"] }\nat = { timestamps = [\"2025-01-01T00:00:00Z\", \"2025-01-03T00:00:00Z\"] }\n",
        )
        .expect("spec");
        let st = &spec.tables["st"].columns;
        assert_eq!(typical(&spec, "st", "route_id", &st["route_id"].generator, 0, false).as_deref(), Some("5"));
        assert_eq!(typical(&spec, "st", "trip_id", &st["trip_id"].generator, 0, false).as_deref(), Some("50"));
        assert_eq!(typical(&spec, "st", "kind", &st["kind"].generator, 0, false).as_deref(), Some("'a'"));
        assert_eq!(
            typical(&spec, "st", "at", &st["at"].generator, 0, false).as_deref(),
            Some("'2025-01-02T00:00:00+00:00'")
        );
        assert_eq!(
            typical(&spec, "st", "at", &st["at"].generator, 0, true).as_deref(),
            Some("'2025-01-02T00:28:48+00:00'"),
            "the upper end of a range is 1% of the span later"
        );
        assert_eq!(typical(&spec, "st", "route_id", &st["route_id"].generator, 0, true).as_deref(), Some("6"));
    }
}

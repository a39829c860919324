//! The scale spec: how many rows each table gets and how each column's values are drawn.
//! Parsed strictly (unknown keys are errors naming the file and line) because a typo in a
//! generator name would otherwise silently produce a fixture nothing like production.

use crate::error::{line_of_offset, parse_toml, read_text, Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    #[serde(default)]
    tables: BTreeMap<String, Spanned<RawTable>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    rows: u64,
    #[serde(default)]
    columns: BTreeMap<String, Spanned<RawColumn>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawZipf {
    n: u64,
    s: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawColumn {
    uniform: Option<[i64; 2]>,
    zipf: Option<RawZipf>,
    references: Option<String>,
    timestamps: Option<[String; 2]>,
    one_of: Option<Vec<toml::Value>>,
    pattern: Option<String>,
    sequence: Option<i64>,
    constant: Option<toml::Value>,
    sql: Option<String>,
    null_fraction: Option<f64>,
}

/// How one column's values are drawn. `g` below is the row number (1-based) of the row being generated.
#[derive(Debug, Clone, PartialEq)]
pub enum Generator {
    /// Integers uniform over `[low, high]`.
    Uniform { low: i64, high: i64 },
    /// Integers in `[1, n]`, value `k` with weight ∝ 1/k^s: a few hot values.
    Zipf { n: u64, s: f64 },
    /// A key that exists in another table's column.
    References { table: String, column: String },
    /// Timestamps uniform over `[from, to]` (RFC 3339).
    Timestamps { from: String, to: String },
    /// One of the listed values, uniformly; already SQL literals.
    OneOf(Vec<String>),
    /// Text with `{n}` replaced by the row number.
    Pattern(String),
    /// `start`, `start + 1`, … (unique).
    Sequence(i64),
    /// The same value in every row; an SQL literal.
    Constant(String),
    /// A raw SQL expression over `g` (the row number), for correlations the other kinds cannot express.
    Sql(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSpec {
    pub generator: Generator,
    pub null_fraction: f64,
    /// Where it was written, for error messages.
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TableSpec {
    pub rows: u64,
    pub columns: BTreeMap<String, ColumnSpec>,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScaleSpec {
    pub path: PathBuf,
    /// The file's text: part of the fixture cache key.
    pub text: String,
    pub tables: BTreeMap<String, TableSpec>,
}

impl ScaleSpec {
    pub fn load(path: &Path) -> Result<ScaleSpec> {
        let text = read_text(path)?;
        parse(path, &text)
    }

    /// No table named: everything from a statistics snapshot at `path`.
    pub fn empty(path: &Path) -> ScaleSpec {
        ScaleSpec { path: path.to_path_buf(), text: String::new(), tables: BTreeMap::new() }
    }

    pub fn table(&self, name: &str) -> Option<&TableSpec> {
        self.tables.get(name)
    }
}

/// Quotes text as an SQL string literal.
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn literal(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(quote_literal(s)),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) if f.is_finite() => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        toml::Value::Datetime(d) => Some(quote_literal(&d.to_string())),
        _ => None,
    }
}

pub fn parse(path: &Path, text: &str) -> Result<ScaleSpec> {
    let raw: RawSpec = parse_toml(path, text)?;
    let mut tables = BTreeMap::new();
    for (name, table) in raw.tables {
        let line = line_of_offset(text, table.span().start);
        let table = table.into_inner();
        let mut columns = BTreeMap::new();
        for (column, spec) in table.columns {
            let line = line_of_offset(text, spec.span().start);
            let spec = column_spec(path, line, &name, &column, spec.into_inner())?;
            columns.insert(column, spec);
        }
        tables.insert(name, TableSpec { rows: table.rows, columns, line });
    }
    Ok(ScaleSpec { path: path.to_path_buf(), text: text.to_string(), tables })
}

fn column_spec(path: &Path, line: usize, table: &str, column: &str, raw: RawColumn) -> Result<ColumnSpec> {
    let bad = |msg: String| Error::invalid(path, Some(line), format!("tables.{table}.columns.{column}: {msg}"));
    let mut kinds = Vec::new();
    if let Some([low, high]) = raw.uniform {
        if low > high {
            return Err(bad(format!("uniform = [{low}, {high}]: the low bound is above the high bound")));
        }
        kinds.push(Generator::Uniform { low, high });
    }
    if let Some(z) = raw.zipf {
        if z.n == 0 || !(z.s.is_finite() && z.s > 0.0) {
            return Err(bad("zipf needs n ≥ 1 and a positive exponent s (e.g. { n = 100_000, s = 1.1 })".into()));
        }
        kinds.push(Generator::Zipf { n: z.n, s: z.s });
    }
    if let Some(r) = raw.references {
        let Some((t, c)) = r.split_once('.').filter(|(t, c)| !t.is_empty() && !c.is_empty() && !c.contains('.')) else {
            return Err(bad(format!("references = \"{r}\": write it as \"table.column\"")));
        };
        kinds.push(Generator::References { table: t.to_string(), column: c.to_string() });
    }
    if let Some([from, to]) = raw.timestamps {
        let parse = |s: &str| {
            chrono::DateTime::parse_from_rfc3339(s).map_err(|e| {
                bad(format!("timestamps: `{s}` is not an RFC 3339 timestamp like 2025-01-01T00:00:00Z ({e})"))
            })
        };
        if parse(&from)? > parse(&to)? {
            return Err(bad(format!("timestamps = [\"{from}\", \"{to}\"]: the start is after the end")));
        }
        kinds.push(Generator::Timestamps { from, to });
    }
    if let Some(values) = raw.one_of {
        if values.is_empty() {
            return Err(bad("one_of needs at least one value".into()));
        }
        let literals = values
            .iter()
            .map(|v| literal(v).ok_or_else(|| bad(format!("one_of: {v} is not a string, number or boolean"))))
            .collect::<Result<Vec<_>>>()?;
        kinds.push(Generator::OneOf(literals));
    }
    if let Some(p) = raw.pattern {
        kinds.push(Generator::Pattern(p));
    }
    if let Some(start) = raw.sequence {
        kinds.push(Generator::Sequence(start));
    }
    if let Some(v) = raw.constant {
        kinds.push(Generator::Constant(literal(&v).ok_or_else(|| bad(format!("constant: {v} is not a plain value")))?));
    }
    if let Some(sql) = raw.sql {
        if sql.trim().is_empty() {
            return Err(bad("sql is empty".into()));
        }
        kinds.push(Generator::Sql(sql));
    }
    let null_fraction = raw.null_fraction.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&null_fraction) {
        return Err(bad(format!("null_fraction = {null_fraction} is not between 0 and 1")));
    }
    match kinds.len() {
        1 => Ok(ColumnSpec { generator: kinds.remove(0), null_fraction, line }),
        0 => Err(bad(
            "no generator: give one of uniform, zipf, references, timestamps, one_of, pattern, sequence, constant, sql"
                .into(),
        )),
        _ => Err(bad("more than one generator: give exactly one".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<ScaleSpec> {
        parse(Path::new("scale.toml"), text)
    }

    fn error_of(text: &str) -> String {
        parse_str(text).expect_err("must be rejected").to_string()
    }

    #[test]
    fn parses_the_documented_shape() {
        let spec = parse_str(
            r#"
[tables.events]
rows = 2_000_000
[tables.events.columns]
account_id = { uniform = [1, 50_000] }
user_id    = { zipf = { n = 100_000, s = 1.1 } }
trip_id    = { references = "trips.id" }
created_at = { timestamps = ["2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"] }
kind       = { one_of = ["click", "view", "buy"], null_fraction = 0.05 }
email      = { pattern = "user-{n}@example.com" }
"#,
        )
        .expect("valid spec");
        let events = spec.table("events").expect("events");
        assert_eq!(events.rows, 2_000_000);
        assert_eq!(events.columns["account_id"].generator, Generator::Uniform { low: 1, high: 50_000 });
        assert_eq!(events.columns["user_id"].generator, Generator::Zipf { n: 100_000, s: 1.1 });
        assert_eq!(
            events.columns["trip_id"].generator,
            Generator::References { table: "trips".into(), column: "id".into() }
        );
        assert_eq!(events.columns["kind"].null_fraction, 0.05);
        assert_eq!(
            events.columns["kind"].generator,
            Generator::OneOf(vec!["'click'".into(), "'view'".into(), "'buy'".into()])
        );
        assert_eq!(events.columns["email"].line, 10);
    }

    #[test]
    fn unknown_generator_is_an_error_naming_file_line_and_key() {
        let e = error_of("[tables.t]\nrows = 1\n[tables.t.columns]\na = { unifrom = [1, 2] }\n");
        assert!(e.starts_with("scale.toml:4:"), "{e}");
        assert!(e.contains("unifrom"), "{e}");
    }

    #[test]
    fn unknown_table_key_is_an_error() {
        let e = error_of("[tables.t]\nrows = 1\nrow_count = 3\n");
        assert!(e.starts_with("scale.toml:3:"), "{e}");
        assert!(e.contains("row_count"), "{e}");
    }

    #[test]
    fn missing_rows_is_an_error() {
        let e = error_of("[tables.t.columns]\na = { sequence = 1 }\n");
        assert!(e.contains("rows"), "{e}");
    }

    #[test]
    fn reversed_uniform_bounds_name_the_column_and_line() {
        let e = error_of("[tables.t]\nrows = 1\n[tables.t.columns]\n\nb = { uniform = [9, 2] }\n");
        assert!(e.starts_with("scale.toml:5: tables.t.columns.b: uniform = [9, 2]"), "{e}");
    }

    #[test]
    fn two_generators_or_none_are_errors() {
        assert!(error_of("[tables.t]\nrows = 1\n[tables.t.columns]\na = { sequence = 1, pattern = \"x\" }\n")
            .contains("more than one generator"));
        assert!(error_of("[tables.t]\nrows = 1\n[tables.t.columns]\na = { null_fraction = 0.5 }\n")
            .contains("no generator"));
    }

    #[test]
    fn bad_values_are_explained() {
        assert!(error_of("[tables.t]\nrows = 1\n[tables.t.columns]\na = { references = \"trips\" }\n")
            .contains("table.column"));
        assert!(error_of("[tables.t]\nrows = 1\n[tables.t.columns]\na = { timestamps = [\"yesterday\", \"2025-01-01T00:00:00Z\"] }\n")
            .contains("RFC 3339"));
        assert!(error_of("[tables.t]\nrows = 1\n[tables.t.columns]\na = { one_of = [\"x\"], null_fraction = 1.5 }\n")
            .contains("null_fraction"));
        assert!(
            error_of("[tables.t]\nrows = 1\n[tables.t.columns]\na = { zipf = { n = 10, s = 0 } }\n").contains("zipf")
        );
        assert!(error_of("[tables.t]\nrows = -5\n").starts_with("scale.toml:2:"));
    }

    #[test]
    fn quotes_literals() {
        assert_eq!(quote_literal("it's"), "'it''s'");
    }
}

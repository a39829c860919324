//! A production statistics snapshot: what `ANALYZE` found in production, per table (`pg_class`:
//! `reltuples`, `relpages`, `relallvisible`) and per column (the `pg_stats` row), exported
//! read-only with `sluice stats columns | psql --csv`. It drives the fixture: the tables and
//! columns the scale spec does not name are generated from it ([`super::fill`]), or, in
//! statistics mode, its figures are installed as they are ([`super::install`]).
//!
//! Each `pg_stats` row travels as one JSON object (`to_jsonb`): whatever columns the
//! production server's version has, its arrays as JSON arrays, dates and times in ISO 8601
//! whatever the server's `DateStyle`, numbers as numbers.

use crate::error::{read_text, Error, Result};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The export query (`sluice stats columns`).
pub const COLUMNS_QUERY: &str = "\
-- Sluice column-statistics snapshot. Run against production (read-only: catalog and pg_stats
-- only; a role sees the statistics of the tables it may SELECT from):
--   sluice stats columns | psql \"$DATABASE_URL\" --csv > policies/column-stats.csv
-- then set `stats = \"policies/column-stats.csv\"` under [plan] in sluice.toml.
SELECT 'table' AS kind, n.nspname AS schema, c.relname AS table, NULL AS column, NULL AS type,
       c.reltuples::bigint AS reltuples, c.relpages, c.relallvisible, NULL AS stats
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'm', 'i')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
UNION ALL
SELECT 'column', s.schemaname, s.tablename, s.attname, pg_catalog.format_type(a.atttypid, a.atttypmod),
       NULL, NULL, NULL, pg_catalog.to_jsonb(s)::text
FROM pg_catalog.pg_stats s
JOIN pg_catalog.pg_namespace n ON n.nspname = s.schemaname
JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = s.tablename
JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attname = s.attname
WHERE s.schemaname NOT IN ('pg_catalog', 'information_schema')
UNION ALL
SELECT 'extended', e.schemaname, e.tablename, e.statistics_name, NULL, NULL, NULL, NULL,
       pg_catalog.to_jsonb(e)::text
FROM pg_catalog.pg_stats_ext e
WHERE e.schemaname NOT IN ('pg_catalog', 'information_schema')
ORDER BY 2, 3, 1 DESC, 4;
";

/// One column's `pg_stats` row.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStats {
    /// `format_type` in production: the values below are of this type.
    pub type_name: String,
    pub null_frac: f64,
    pub avg_width: i32,
    /// Distinct values: a count when positive, minus a fraction of the rows when negative
    /// (-1: unique).
    pub n_distinct: f64,
    pub most_common_vals: Vec<Value>,
    pub most_common_freqs: Vec<f64>,
    pub histogram_bounds: Vec<Value>,
    pub correlation: Option<f64>,
    /// The whole row, for installing it as it is.
    pub row: Map<String, Value>,
    /// Where it was read.
    pub line: usize,
}

impl ColumnStats {
    /// The distinct non-NULL values in a table of `rows` rows.
    pub fn distinct(&self, rows: f64) -> f64 {
        if self.n_distinct >= 0.0 {
            self.n_distinct
        } else {
            -self.n_distinct * rows
        }
    }

    pub fn is_unique(&self) -> bool {
        self.n_distinct <= -0.999
    }
}

/// One table's figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableStats {
    pub reltuples: f64,
    pub relpages: i32,
    pub relallvisible: i32,
    /// By column name; the rows of the table itself (`inherited = false`).
    pub columns: BTreeMap<String, ColumnStats>,
    /// Rows over the table and its inheritance children or partitions (`inherited = true`).
    pub inherited: BTreeMap<String, ColumnStats>,
    /// `pg_stats_ext` rows, by statistics object name.
    pub extended: BTreeMap<String, Map<String, Value>>,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub path: PathBuf,
    /// The file's text: part of the fixture cache key.
    pub text: String,
    /// By (schema, table).
    pub tables: BTreeMap<(String, String), TableStats>,
}

impl Snapshot {
    pub fn load(path: &Path) -> Result<Snapshot> {
        let text = read_text(path)?;
        parse(path, &text)
    }

    pub fn table(&self, schema: &str, name: &str) -> Option<&TableStats> {
        self.tables.get(&(schema.to_string(), name.to_string()))
    }
}

const HEADER: [&str; 9] =
    ["kind", "schema", "table", "column", "type", "reltuples", "relpages", "relallvisible", "stats"];

fn number<T: std::str::FromStr>(text: &str, what: &str) -> std::result::Result<T, String> {
    text.trim().parse().map_err(|_| format!("{what} `{text}` is not a number"))
}

/// Reads the `psql --csv` output of [`COLUMNS_QUERY`].
pub fn parse(path: &Path, text: &str) -> Result<Snapshot> {
    let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(false).from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| Error::invalid(path, Some(1), format!("cannot read the header: {e}")))?
        .iter()
        .map(|h| h.trim().to_lowercase())
        .collect();
    let position = |name: &str| header.iter().position(|h| h == name);
    let columns: Vec<usize> = HEADER.iter().filter_map(|h| position(h)).collect();
    if columns.len() != HEADER.len() {
        return Err(Error::invalid(
            path,
            Some(1),
            format!(
                "the header must name the columns {} (found `{}`); export the snapshot with `sluice stats columns`",
                HEADER.join(","),
                header.join(",")
            ),
        ));
    }
    let mut tables: BTreeMap<(String, String), TableStats> = BTreeMap::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map(|p| p.line() as usize);
            Error::invalid(path, line, format!("not a CSV record of the snapshot: {e}"))
        })?;
        let line = record.position().map(|p| p.line() as usize).unwrap_or(0);
        let bad = |message: String| Error::invalid(path, Some(line), message);
        let field = |i: usize| record.get(columns[i]).unwrap_or("");
        let key = (field(1).to_string(), field(2).to_string());
        match field(0) {
            "table" => {
                let table = tables.entry(key).or_default();
                table.reltuples = number(field(5), "reltuples").map_err(bad)?;
                table.relpages = number(field(6), "relpages").map_err(bad)?;
                table.relallvisible = number(field(7), "relallvisible").map_err(bad)?;
                table.line = line;
            }
            "column" => {
                let stats = column_stats(field(4), field(8), line).map_err(bad)?;
                let inherited = stats.row.get("inherited").and_then(Value::as_bool).unwrap_or(false);
                let table = tables.entry(key).or_default();
                let name = field(3).to_string();
                if inherited {
                    table.inherited.insert(name, stats);
                } else {
                    table.columns.insert(name, stats);
                }
            }
            "extended" => {
                let Ok(Value::Object(row)) = serde_json::from_str(field(8)) else {
                    return Err(bad(format!("stats of {} is not a JSON object", field(3))));
                };
                tables.entry(key).or_default().extended.insert(field(3).to_string(), row);
            }
            other => return Err(bad(format!("kind `{other}` is none of table, column, extended"))),
        }
    }
    Ok(Snapshot { path: path.to_path_buf(), text: text.to_string(), tables })
}

fn column_stats(type_name: &str, json: &str, line: usize) -> std::result::Result<ColumnStats, String> {
    let Ok(Value::Object(row)) = serde_json::from_str::<Value>(json) else {
        return Err("stats is not a JSON object (the `to_jsonb` of a pg_stats row)".into());
    };
    let float = |key: &str| row.get(key).and_then(Value::as_f64);
    let array = |key: &str| row.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    let null_frac = float("null_frac").ok_or("stats has no null_frac")?;
    let n_distinct = float("n_distinct").ok_or("stats has no n_distinct")?;
    let most_common_freqs: Vec<f64> = array("most_common_freqs").iter().filter_map(Value::as_f64).collect();
    let most_common_vals = array("most_common_vals");
    if most_common_vals.len() != most_common_freqs.len() {
        return Err(format!(
            "most_common_vals has {} values and most_common_freqs {}",
            most_common_vals.len(),
            most_common_freqs.len()
        ));
    }
    if !(0.0..=1.0).contains(&null_frac) || most_common_freqs.iter().any(|f| !(0.0..=1.0).contains(f)) {
        return Err("null_frac and most_common_freqs must be fractions between 0 and 1".into());
    }
    Ok(ColumnStats {
        type_name: type_name.to_string(),
        null_frac,
        avg_width: float("avg_width").unwrap_or(0.0) as i32,
        n_distinct,
        most_common_vals,
        most_common_freqs,
        histogram_bounds: array("histogram_bounds"),
        correlation: float("correlation"),
        row,
        line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "kind,schema,table,column,type,reltuples,relpages,relallvisible,stats\n\
table,public,flights,,,336776,7500,7480,\n\
column,public,flights,carrier,text,,,,\"{\"\"attname\"\": \"\"carrier\"\", \"\"inherited\"\": false, \"\"null_frac\"\": 0, \"\"avg_width\"\": 3, \"\"n_distinct\"\": 16, \"\"most_common_vals\"\": [\"\"UA\"\", \"\"B6\"\"], \"\"most_common_freqs\"\": [0.17, 0.16], \"\"histogram_bounds\"\": null, \"\"correlation\"\": 0.09}\"\n\
column,public,flights,id,integer,,,,\"{\"\"null_frac\"\": 0, \"\"avg_width\"\": 4, \"\"n_distinct\"\": -1, \"\"histogram_bounds\"\": [1, 3368, 336776], \"\"correlation\"\": 1}\"\n";

    #[test]
    fn reads_tables_and_columns_as_psql_writes_them() {
        let s = parse(Path::new("column-stats.csv"), CSV).expect("snapshot");
        let flights = s.table("public", "flights").expect("flights");
        assert_eq!((flights.reltuples, flights.relpages, flights.relallvisible), (336_776.0, 7_500, 7_480));
        let carrier = &flights.columns["carrier"];
        assert_eq!(carrier.most_common_vals, [Value::from("UA"), Value::from("B6")]);
        assert_eq!(carrier.most_common_freqs, [0.17, 0.16]);
        assert_eq!((carrier.avg_width, carrier.line), (3, 3));
        assert!(carrier.histogram_bounds.is_empty());
        let id = &flights.columns["id"];
        assert!(id.is_unique());
        assert_eq!(id.distinct(10.0), 10.0);
        assert_eq!(id.correlation, Some(1.0));
    }

    #[test]
    fn bad_input_names_the_file_and_line() {
        let e = parse(Path::new("s.csv"), "schema,table\npublic,t\n").unwrap_err().to_string();
        assert!(e.starts_with("s.csv:1: the header must name the columns kind,schema,table"), "{e}");
        let bad = CSV.replace("336776,7500", "lots,7500");
        let e = parse(Path::new("s.csv"), &bad).unwrap_err().to_string();
        assert_eq!(e, "s.csv:2: reltuples `lots` is not a number");
        let bad = CSV.replace("[0.17, 0.16]", "[0.17]");
        let e = parse(Path::new("s.csv"), &bad).unwrap_err().to_string();
        assert_eq!(e, "s.csv:3: most_common_vals has 2 values and most_common_freqs 1");
        let bad = format!("{CSV}column,public,flights,x,int,,,,not json\n");
        let e = parse(Path::new("s.csv"), &bad).unwrap_err().to_string();
        assert!(e.starts_with("s.csv:5: stats is not a JSON object"), "{e}");
    }
}

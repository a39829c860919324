//! `policies/tables.toml`: how big each table is in production, so lock and rewrite rules can
//! tell a ten-row lookup table from a hundred-million-row one.
//!
//! ```toml
//! large_table_rows = 100_000   # lock/rewrite findings are errors at or above this (and when unknown)
//! small_table_rows = 1_000     # ...and silent below this
//! stats = "table-stats.csv"    # optional: a snapshot exported with `sluice stats query`
//!
//! [rows]                       # optional: explicit counts, win over the snapshot
//! observations = 120_000_000
//! "audit.events" = 5_000
//! '"Account"' = 10            # names as SQL writes them: quoted, a mixed-case name is kept
//! ```
//!
//! The snapshot is the CSV `psql --csv` prints for the query `sluice stats query` shows:
//! a header with `schema,table,reltuples,relpages`, then one line per table.

use crate::error::{parse_toml, Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const FILE: &str = "tables.toml";
pub const DEFAULT_LARGE_TABLE_ROWS: u64 = 100_000;
pub const DEFAULT_SMALL_TABLE_ROWS: u64 = 1_000;

/// The query whose `psql --csv` output is the statistics snapshot.
pub const STATS_QUERY: &str = "\
-- Sluice table-size snapshot. Run against production (read-only, catalog only):
--   sluice stats query | psql \"$DATABASE_URL\" --csv > policies/table-stats.csv
-- then set `stats = \"table-stats.csv\"` in policies/tables.toml.
SELECT n.nspname AS schema,
       c.relname AS table,
       c.reltuples::bigint AS reltuples,
       c.relpages AS relpages
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'm')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_toast%'
ORDER BY 1, 2;
";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    large_table_rows: Option<u64>,
    small_table_rows: Option<u64>,
    stats: Option<PathBuf>,
    #[serde(default)]
    rows: BTreeMap<toml::Spanned<String>, u64>,
}

/// A table's row count and where Sluice read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows {
    pub rows: u64,
    pub source: String,
    /// The line of an explicit `[rows]` entry (`None` for the snapshot's).
    pub line: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct TablesPolicy {
    pub large_table_rows: u64,
    pub small_table_rows: u64,
    /// By normalized table name (`public.` dropped).
    pub rows: BTreeMap<String, Rows>,
}

impl Default for TablesPolicy {
    fn default() -> Self {
        TablesPolicy {
            large_table_rows: DEFAULT_LARGE_TABLE_ROWS,
            small_table_rows: DEFAULT_SMALL_TABLE_ROWS,
            rows: BTreeMap::new(),
        }
    }
}

impl TablesPolicy {
    /// Parses `tables.toml`; `read` reads the statistics snapshot it names (relative to its directory).
    pub fn parse(path: &Path, text: &str, read: &dyn Fn(&Path) -> Result<String>) -> Result<TablesPolicy> {
        let file: File = parse_toml(path, text)?;
        let line_of = |key: &str| text.lines().position(|l| l.trim_start().starts_with(key)).map(|i| i + 1);
        let large = file.large_table_rows.unwrap_or(DEFAULT_LARGE_TABLE_ROWS);
        let small = file.small_table_rows.unwrap_or(DEFAULT_SMALL_TABLE_ROWS);
        if small > large {
            return Err(Error::invalid(
                path,
                line_of("small_table_rows"),
                format!("small_table_rows ({small}) must not exceed large_table_rows ({large})"),
            ));
        }
        let mut rows = BTreeMap::new();
        if let Some(stats) = &file.stats {
            let stats_path = path.parent().map(|d| d.join(stats)).unwrap_or_else(|| stats.clone());
            let csv = read(&stats_path).map_err(|e| {
                Error::invalid(path, line_of("stats"), format!("cannot read the statistics snapshot: {e}"))
            })?;
            rows = parse_snapshot(&stats_path, &csv)?;
        }
        let shown = path.display().to_string();
        for (name, count) in file.rows {
            let line = crate::error::line_of_offset(text, name.span().start);
            let resolved = super::names::resolve(name.get_ref()).ok_or_else(|| {
                Error::invalid(
                    path,
                    Some(line),
                    format!(
                        "`{}` is not a table name; write it as SQL does (`orders`, `audit.events`, `\"Account\"`)",
                        name.get_ref()
                    ),
                )
            })?;
            rows.insert(resolved, Rows { rows: count, source: shown.clone(), line: Some(line) });
        }
        Ok(TablesPolicy { large_table_rows: large, small_table_rows: small, rows })
    }

    pub fn rows(&self, table: &str) -> Option<&Rows> {
        self.rows.get(table)
    }
}

/// Reads the `psql --csv` output of [`STATS_QUERY`]. Tables never analyzed (`reltuples` = -1)
/// are left out: their size is unknown.
pub fn parse_snapshot(path: &Path, csv: &str) -> Result<BTreeMap<String, Rows>> {
    let mut lines = csv.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(Error::invalid(path, Some(1), "empty statistics snapshot; export it with `sluice stats query`"));
    };
    let header: Vec<String> = split_csv(header).into_iter().map(|h| h.trim().to_lowercase()).collect();
    let column = |name: &str| header.iter().position(|h| h == name);
    let (Some(schema), Some(table), Some(tuples)) = (column("schema"), column("table"), column("reltuples")) else {
        return Err(Error::invalid(
            path,
            Some(1),
            format!("the header must name the columns schema,table,reltuples (found `{}`); export it with `sluice stats query`", header.join(",")),
        ));
    };
    let shown = path.display().to_string();
    let mut rows = BTreeMap::new();
    for (index, line) in lines {
        let fields = split_csv(line);
        let field = |i: usize| {
            fields.get(i).map(String::as_str).ok_or_else(|| {
                Error::invalid(
                    path,
                    Some(index + 1),
                    format!("expected {} fields, found {}", header.len(), fields.len()),
                )
            })
        };
        let Some(count) =
            reltuples(field(tuples)?).map_err(|problem| Error::invalid(path, Some(index + 1), problem))?
        else {
            continue;
        };
        // The catalog's own names: exact, never folded (`Account` is not `account`).
        let (schema, table) = (field(schema)?.trim(), field(table)?.trim());
        let name = if schema == "public" { table.to_string() } else { format!("{schema}.{table}") };
        rows.insert(name, Rows { rows: count, source: shown.clone(), line: None });
    }
    Ok(rows)
}

/// A row count from `reltuples`: `None` for -1, PostgreSQL's "never analyzed" (the size is
/// unknown, so the rules treat the table as large). Anything else that is not a finite,
/// non-negative number is an error: a NaN or a negative count read as zero rows would silence
/// the lock findings on a table of any size.
fn reltuples(text: &str) -> Result<Option<u64>, String> {
    let text = text.trim();
    let count: f64 = text.parse().ok().filter(|c: &f64| c.is_finite()).ok_or_else(|| {
        format!("reltuples `{text}` is not a number of rows; export the snapshot with `sluice stats query`")
    })?;
    if count == -1.0 {
        return Ok(None);
    }
    if count < 0.0 {
        return Err(format!(
            "reltuples `{text}` is negative; PostgreSQL writes -1 for a table never analyzed and no other negative count"
        ));
    }
    Ok(Some(count.round() as u64))
}

/// Splits one CSV line, honouring double quotes (`psql --csv` quotes names with commas).
fn split_csv(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().expect("non-empty").push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => fields.last_mut().expect("non-empty").push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, csv: &str) -> Result<TablesPolicy> {
        let csv = csv.to_string();
        TablesPolicy::parse(Path::new("policies/tables.toml"), text, &move |_| Ok(csv.clone()))
    }

    #[test]
    fn explicit_rows_win_over_the_snapshot() {
        let policy = parse(
            "large_table_rows = 50_000\nstats = \"table-stats.csv\"\n[rows]\nobservations = 12\n\"Public.Sites\" = 7\n",
            "schema,table,reltuples,relpages\npublic,observations,1.2e+07,90000\naudit,events,-1,0\npublic,\"odd,name\",5,1\n",
        )
        .unwrap();
        assert_eq!(policy.large_table_rows, 50_000);
        assert_eq!(policy.small_table_rows, DEFAULT_SMALL_TABLE_ROWS);
        assert_eq!(policy.rows("observations").unwrap().rows, 12);
        assert_eq!(policy.rows("sites").unwrap().rows, 7);
        assert_eq!(policy.rows("odd,name").unwrap().rows, 5);
        assert!(policy.rows("audit.events").is_none(), "never analyzed means unknown");
    }

    #[test]
    fn snapshot_rows_come_from_reltuples() {
        let policy = parse(
            "stats = \"s.csv\"\n",
            "schema,table,reltuples,relpages\npublic,big,2500000,1\nreporting,daily,30,1\n",
        )
        .unwrap();
        assert_eq!(policy.rows("big").unwrap().rows, 2_500_000);
        assert_eq!(policy.rows("reporting.daily").unwrap().rows, 30);
        assert_eq!(policy.rows("big").unwrap().source, "policies/s.csv");
    }

    #[test]
    fn bad_files_say_where_and_what() {
        let err = parse("small_table_rows = 10\nlarge_table_rows = 5\n", "").unwrap_err().to_string();
        assert_eq!(err, "policies/tables.toml:1: small_table_rows (10) must not exceed large_table_rows (5)");
        let err = parse("large_rows = 5\n", "").unwrap_err().to_string();
        assert!(err.contains("tables.toml:1") && err.contains("unknown field `large_rows`"), "{err}");
        let err = parse("stats = \"s.csv\"\n", "relname,n\nx,1\n").unwrap_err().to_string();
        assert!(err.starts_with("policies/s.csv:1: the header must name"), "{err}");
        let err = parse("stats = \"s.csv\"\n", "schema,table,reltuples\npublic,t,many\n").unwrap_err().to_string();
        assert_eq!(
            err,
            "policies/s.csv:2: reltuples `many` is not a number of rows; export the snapshot with `sluice stats query`"
        );
    }

    #[test]
    fn a_count_that_is_not_a_row_count_is_rejected_with_its_line() {
        // NaN read as zero rows silenced every lock finding on the table (issue 16, item 9).
        for (value, problem) in [
            ("NaN", "is not a number of rows"),
            ("inf", "is not a number of rows"),
            ("1e999", "is not a number of rows"),
            ("", "is not a number of rows"),
            ("-5", "is negative"),
            ("-0.5", "is negative"),
        ] {
            let csv = format!("schema,table,reltuples\npublic,ok,10\npublic,t,{value}\n");
            let err = parse("stats = \"s.csv\"\n", &csv).unwrap_err().to_string();
            assert!(err.starts_with(&format!("policies/s.csv:3: reltuples `{value}` {problem}")), "{value}: {err}");
        }
        let policy = parse("stats = \"s.csv\"\n", "schema,table,reltuples\npublic,t,-1\npublic,u,0\n").unwrap();
        assert!(policy.rows("t").is_none(), "-1: never analyzed, size unknown");
        assert_eq!(policy.rows("u").unwrap().rows, 0);
    }
}

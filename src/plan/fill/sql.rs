//! Filling inside PostgreSQL: each column's values as an SQL expression over the row number
//! `g`, for `INSERT … SELECT … FROM generate_series`. Every generator can be written this way
//! (including `sql = "…"` expressions and references to any type of key), so this is the way
//! that always works; [`super::rows`] is the faster one where it applies.

use super::choose::{default_expr, target_rows, Choice, Filled, Shape, Source};
use super::schema::{resolve, Table};
use crate::error::{Error, Result};
use crate::plan::scale::{quote_literal, ColumnSpec, Generator};
use crate::plan::server::quote_ident;
use std::collections::BTreeMap;

/// The INSERT that fills a table, chunk by chunk of `g`.
pub(super) struct SqlPlan {
    columns: Vec<String>,
    exprs: Vec<String>,
    /// Extra FROM items (`CROSS JOIN (SELECT array_agg…) AS ref_1`).
    from: Vec<String>,
    overriding: bool,
}

impl SqlPlan {
    pub(super) fn new(
        spec_path: &std::path::Path,
        key: &str,
        choices: &[Choice<'_>],
        tables: &[Table],
        filled: &BTreeMap<i64, Filled>,
    ) -> Result<SqlPlan> {
        let mut plan = SqlPlan { columns: Vec::new(), exprs: Vec::new(), from: Vec::new(), overriding: false };
        for choice in choices {
            let column = choice.column;
            let expr = match &choice.source {
                Source::Spec(cspec) => {
                    generator_expr(spec_path, key, &column.name, cspec, tables, filled, &mut plan.from)?
                }
                Source::Reference { target, column: c } => reference_expr(target, c, filled, &mut plan.from)
                    .ok_or_else(|| Error::Other(format!("{}: the referenced table has no rows", column.name)))?,
                Source::Default => default_expr(column)
                    .ok_or_else(|| Error::Other(format!("{}: no default value for its type", column.name)))?,
                Source::Statistics { stats, .. } => statistics_expr(stats)
                    .ok_or_else(|| Error::Other(format!("{}: its statistics have no values", column.name)))?,
            };
            plan.overriding |= column.identity_always;
            plan.columns.push(quote_ident(&column.name));
            plan.exprs.push(format!("({expr})::{}", column.type_name));
        }
        Ok(plan)
    }

    /// The statement filling rows `first..=last` of `table`.
    pub(super) fn insert(&self, table: &str, first: u64, last: u64) -> String {
        if self.columns.is_empty() {
            return format!("INSERT INTO {table} SELECT FROM generate_series({first}::bigint, {last}::bigint)");
        }
        format!(
            "INSERT INTO {table} ({}) {}SELECT {} FROM generate_series({first}::bigint, {last}::bigint) AS s(g) {}",
            self.columns.join(", "),
            if self.overriding { "OVERRIDING SYSTEM VALUE " } else { "" },
            self.exprs.join(", "),
            self.from.join(" ")
        )
    }
}

fn generator_expr(
    spec_path: &std::path::Path,
    table: &str,
    column: &str,
    spec: &ColumnSpec,
    tables: &[Table],
    filled: &BTreeMap<i64, Filled>,
    from: &mut Vec<String>,
) -> Result<String> {
    let bad =
        |msg: String| Error::invalid(spec_path, Some(spec.line), format!("tables.{table}.columns.{column}: {msg}"));
    let expr = match &spec.generator {
        // float8 arithmetic is exact for any span below 2^53 and much cheaper than numeric.
        Generator::Uniform { low, high } => {
            format!("({low}::bigint + floor(random() * ({high}::float8 - {low}::float8 + 1))::bigint)")
        }
        Generator::Zipf { n, s } => {
            // Inverse CDF of the continuous power law on [1, n + 1), floored: value k has weight ≈ k^-s.
            if (*s - 1.0).abs() < 1e-9 {
                format!("least({n}, floor(power({n}::float8 + 1, random())))::bigint")
            } else {
                let e = 1.0 - s;
                format!("least({n}, floor(power(1 + random() * (power({n}::float8 + 1, {e}) - 1), 1 / {e}::float8)))::bigint")
            }
        }
        Generator::References { table: t, column: c } => {
            // `choose` checked that the table and column exist and that the table has rows.
            let target =
                resolve(tables, t).ok_or_else(|| bad(format!("references {t}.{c}, but there is no table {t}")))?;
            reference_expr(target, c, filled, from)
                .ok_or_else(|| bad(format!("references {t}.{c}, but {t} gets no rows")))?
        }
        Generator::Timestamps { from: a, to: b } => format!(
            "(timestamptz {a} + random() * (timestamptz {b} - timestamptz {a}))",
            a = quote_literal(a),
            b = quote_literal(b)
        ),
        Generator::OneOf(values) => {
            format!("(ARRAY[{}])[1 + floor(random() * {})::int]", values.join(", "), values.len())
        }
        Generator::Pattern(p) => {
            let parts: Vec<String> = p.split("{n}").map(quote_literal).collect();
            format!("({})", parts.join(" || g || "))
        }
        Generator::Sequence(start) => format!("({start}::bigint + g - 1)"),
        Generator::Constant(v) => v.clone(),
        Generator::Sql(sql) => format!("({sql})"),
    };
    if spec.null_fraction > 0.0 {
        return Ok(format!("CASE WHEN random() < {} THEN NULL ELSE {expr} END", spec.null_fraction));
    }
    Ok(expr)
}

/// Production's values of a column (its common values and histogram bounds), one at random,
/// NULL by its `null_frac`: the SQL path's rougher stand-in for [`super::stats`].
fn statistics_expr(stats: &crate::plan::snapshot::ColumnStats) -> Option<String> {
    let literal = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => quote_literal(s),
        other => quote_literal(&other.to_string()),
    };
    let values: Vec<String> = stats.most_common_vals.iter().chain(&stats.histogram_bounds).map(literal).collect();
    if values.is_empty() {
        return None;
    }
    let pick = format!("(ARRAY[{}])[1 + floor(random() * {})::int]", values.join(", "), values.len());
    Some(if stats.null_frac > 0.0 {
        format!("CASE WHEN random() < {} THEN NULL ELSE {pick} END", stats.null_frac)
    } else {
        pick
    })
}

/// A value that exists in `target.column`: arithmetic when it was filled as a sequence, else a
/// random element of an array of its values (built once per statement). `None` if `target` is empty.
fn reference_expr(
    target: &Table,
    column: &str,
    filled: &BTreeMap<i64, Filled>,
    from: &mut Vec<String>,
) -> Option<String> {
    let f = target_rows(target, filled)?;
    if let Some(Shape::Sequence(start)) = f.shapes.get(column) {
        return Some(format!("({start}::bigint + floor(random() * {})::bigint)", f.rows));
    }
    let alias = format!("ref_{}", from.len() + 1);
    from.push(format!(
        "CROSS JOIN (SELECT array_agg({c}) AS v FROM {t} WHERE {c} IS NOT NULL) AS {alias}",
        c = quote_ident(column),
        t = target.qualified
    ));
    Some(format!("{alias}.v[1 + floor(random() * cardinality({alias}.v))::int]"))
}

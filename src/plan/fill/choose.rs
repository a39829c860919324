//! Which columns of a table get values, and from where: the spec's generator, production's
//! statistics of the column (a snapshot, for what the spec does not name), a key that exists
//! in the referenced table, or a value by type. Both ways of filling ([`super::sql`] inside
//! PostgreSQL, [`super::rows`] in Sluice) work from these choices, so they fill the same columns.

use super::schema::{resolve, Column, Table};
use super::stats::Role;
use crate::error::{Error, Result};
use crate::plan::scale::{quote_literal, ColumnSpec, Generator, ScaleSpec};
use crate::plan::snapshot::{ColumnStats, Snapshot};
use std::collections::BTreeMap;

/// How a filled column's values relate to the row number, so references can be drawn without a lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// `start + g - 1`.
    Sequence(i64),
    Other,
}

/// A table already filled: how many rows, and the shape of each integer column.
pub(super) struct Filled {
    pub(super) rows: u64,
    pub(super) shapes: BTreeMap<String, Shape>,
}

/// Where one column's values come from.
pub(super) enum Source<'a> {
    Spec(&'a ColumnSpec),
    /// A single-column foreign key the spec says nothing about: a key that exists in `target`.
    Reference {
        target: &'a Table,
        column: String,
    },
    /// A value by type, distinct per row ([`default_expr`] lists the types).
    Default,
    /// As production's statistics describe the column.
    Statistics {
        stats: &'a ColumnStats,
        /// Values the columns referencing this one hold often: a key must have them.
        referenced: Vec<serde_json::Value>,
        /// A foreign key's target: the values become keys that exist there.
        key: Option<(&'a Table, String)>,
        role: Role,
    },
}

pub(super) struct Choice<'a> {
    pub(super) column: &'a Column,
    pub(super) source: Source<'a>,
}

impl Choice<'_> {
    /// The shape of the values this choice gives an integer column.
    pub(super) fn shape(&self) -> Shape {
        if !is_integer(&self.column.base_type) {
            return Shape::Other;
        }
        match &self.source {
            Source::Spec(ColumnSpec { generator: Generator::Sequence(start), null_fraction, .. })
                if *null_fraction == 0.0 =>
            {
                Shape::Sequence(*start)
            }
            Source::Default if self.column.base_type != "smallint" => Shape::Sequence(1),
            _ => Shape::Other,
        }
    }
}

pub(super) fn is_integer(t: &str) -> bool {
    matches!(t, "smallint" | "integer" | "bigint")
}

/// The filled table a `references` generator or a foreign key draws from, if it has rows.
pub(super) fn target_rows<'a>(target: &Table, filled: &'a BTreeMap<i64, Filled>) -> Option<&'a Filled> {
    filled.get(&target.oid).filter(|f| f.rows > 0)
}

/// The columns of `table` to fill and where each one's values come from.
pub(super) fn choose<'a>(
    spec: &'a ScaleSpec,
    snapshot: Option<&'a Snapshot>,
    key: &str,
    table: &'a Table,
    tables: &'a [Table],
    filled: &BTreeMap<i64, Filled>,
) -> Result<Vec<Choice<'a>>> {
    let column_stats = |t: &Table, column: &str| -> Option<&'a ColumnStats> {
        snapshot?.table(&t.schema, &t.name)?.columns.get(column)
    };
    let tspec = &spec.tables[key];
    let table_error =
        |message: String| Error::invalid(&spec.path, Some(tspec.line), format!("tables.{key}: {message}"));
    for (name, cspec) in &tspec.columns {
        if !table.columns.iter().any(|c| &c.name == name) {
            return Err(Error::invalid(
                &spec.path,
                Some(cspec.line),
                format!("tables.{key}.columns.{name}: {} has no column {name}", table.qualified),
            ));
        }
    }
    let mut choices = Vec::new();
    for column in table.columns.iter().filter(|c| !c.generated) {
        let source = if let Some(cspec) = tspec.columns.get(&column.name) {
            check_reference(spec, key, &column.name, cspec, tables, filled)?;
            Source::Spec(cspec)
        } else if let Some(stats) = column_stats(table, &column.name) {
            let target = column.references.as_ref().and_then(|(t, c)| {
                tables
                    .iter()
                    .find(|x| &x.qualified == t)
                    .filter(|x| target_rows(x, filled).is_some())
                    .map(|x| (x, c.clone()))
            });
            if column.references.is_some() && target.is_none() && column.not_null {
                return Err(table_error(format!(
                    "column {} must reference a row of {}, which gets no rows",
                    column.name,
                    column.references.as_ref().map(|(t, _)| t.as_str()).unwrap_or_default()
                )));
            }
            // The common values of every column that references this one.
            let referenced = tables
                .iter()
                .flat_map(|t| t.columns.iter().map(move |c| (t, c)))
                .filter(|(_, c)| c.references.as_ref() == Some(&(table.qualified.clone(), column.name.clone())))
                .filter_map(|(t, c)| column_stats(t, &c.name))
                .flat_map(|s| s.most_common_vals.iter().cloned())
                .collect();
            Source::Statistics {
                stats,
                referenced,
                key: target,
                role: role_in_keys(table, &column.name, &|c| {
                    column_stats(table, c).is_some() && !tspec.columns.contains_key(c)
                }),
            }
        } else if let Some((t, c)) = &column.references {
            match tables.iter().find(|x| &x.qualified == t).filter(|target| target_rows(target, filled).is_some()) {
                Some(target) => Source::Reference { target, column: c.clone() },
                None if !column.not_null => continue,
                None => {
                    return Err(table_error(format!(
                    "column {} must reference a row of {t}, which gets no rows; give {t} rows, or give {} a generator",
                    column.name, column.name
                )))
                }
            }
        } else if column.has_default && !column.default_is_sequence {
            continue;
        } else if default_expr(column).is_some() {
            Source::Default
        } else if column.has_default || !(column.primary_key || column.default_is_sequence || column.not_null) {
            continue;
        } else {
            return Err(table_error(format!(
                "column {} ({}) is NOT NULL and Sluice has no default for its type; give it a generator (e.g. {{ sql = \"…\" }})",
                column.name, column.type_name
            )));
        };
        choices.push(Choice { column, source });
    }
    Ok(choices)
}

/// A column's part in the first composite unique key whose first and last columns are both
/// drawn from statistics (`drawn`): its leader, its member, or neither.
fn role_in_keys(table: &Table, column: &str, drawn: &dyn Fn(&str) -> bool) -> Role {
    let keys = table.unique_keys.iter().filter(|k| k.len() >= 2 && drawn(&k[0]) && drawn(&k[k.len() - 1]));
    for (n, key) in keys.enumerate() {
        if key[0] == column {
            return Role::Leader(n);
        }
        if key[key.len() - 1] == column {
            return Role::Member(n);
        }
    }
    Role::Free
}

/// A `references` generator names a table and column that exist and a table that has rows.
fn check_reference(
    spec: &ScaleSpec,
    key: &str,
    column: &str,
    cspec: &ColumnSpec,
    tables: &[Table],
    filled: &BTreeMap<i64, Filled>,
) -> Result<()> {
    let Generator::References { table: t, column: c } = &cspec.generator else {
        return Ok(());
    };
    let bad =
        |msg: String| Error::invalid(&spec.path, Some(cspec.line), format!("tables.{key}.columns.{column}: {msg}"));
    let target = resolve(tables, t).ok_or_else(|| bad(format!("references {t}.{c}, but there is no table {t}")))?;
    if !target.columns.iter().any(|col| &col.name == c) {
        return Err(bad(format!("references {t}.{c}, but {t} has no column {c}")));
    }
    if target_rows(target, filled).is_none() {
        return Err(bad(format!(
            "references {t}.{c}, but {t} gets no rows: give it `rows` in the scale spec (listed before use)"
        )));
    }
    Ok(())
}

/// A value for a column the spec says nothing about, by type: distinct per row, never NULL.
pub(super) fn default_expr(column: &Column) -> Option<String> {
    let t = column.base_type.as_str();
    let base = t.split('(').next().unwrap_or(t).trim();
    let expr = match base {
        "smallint" => "(g % 32767)".into(),
        "integer" | "bigint" => "g".into(),
        "numeric" | "real" | "double precision" => "g".into(),
        "text" | "character varying" | "character" | "citext" | "name" => "('v' || g)".into(),
        "boolean" => "(g % 2 = 0)".into(),
        "date" => "(date '2025-01-01' + (g % 3650)::int)".into(),
        "timestamp without time zone" | "timestamp with time zone" => {
            "(timestamptz '2025-01-01 00:00:00+00' + g * interval '1 second')".into()
        }
        "time without time zone" | "time with time zone" => "(time '00:00' + (g % 86400) * interval '1 second')".into(),
        "interval" => "(g * interval '1 second')".into(),
        "uuid" => "md5(g::text)::uuid".into(),
        "json" | "jsonb" => "'{}'".into(),
        "bytea" => "decode(md5(g::text), 'hex')".into(),
        _ if !column.enum_labels.is_empty() => {
            let labels: Vec<String> = column.enum_labels.iter().map(|l| quote_literal(l)).collect();
            format!("(ARRAY[{}])[1 + (g % {})::int]", labels.join(", "), labels.len())
        }
        _ if base.ends_with("[]") => "'{}'".into(),
        _ => return None,
    };
    Some(expr)
}

//! The schema as the server sees it after the migrations: tables, their columns with types,
//! defaults and single-column foreign keys, and the order tables must be filled in.

use crate::error::{Error, Result};
use crate::plan::scale::{Generator, ScaleSpec};
use crate::plan::server::pg_message;
use std::collections::BTreeSet;
use tokio_postgres::Client;

#[derive(Debug, Clone)]
pub(super) struct Column {
    pub(super) name: String,
    /// `format_type` of the column's type, for the cast.
    pub(super) type_name: String,
    /// The base type of a domain, else the same as `type_name`: what defaults are chosen by.
    pub(super) base_type: String,
    pub(super) not_null: bool,
    pub(super) has_default: bool,
    pub(super) default_is_sequence: bool,
    pub(super) identity_always: bool,
    pub(super) generated: bool,
    pub(super) enum_labels: Vec<String>,
    /// A single-column foreign key: (table, column).
    pub(super) references: Option<(String, String)>,
    pub(super) primary_key: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Table {
    pub(super) oid: i64,
    /// `regclass` text: `name` or `schema.name`, quoted as needed.
    pub(super) qualified: String,
    pub(super) name: String,
    pub(super) schema: String,
    pub(super) columns: Vec<Column>,
    /// Partitioned (rows go to its partitions; COPY cannot FREEZE it).
    pub(super) partitioned: bool,
    /// The columns of each unique index on plain columns (primary key first).
    pub(super) unique_keys: Vec<Vec<String>>,
}

pub(super) async fn load_tables(client: &Client) -> Result<Vec<Table>> {
    let q = |e: tokio_postgres::Error| Error::Other(format!("cannot read the fixture schema: {}", pg_message(&e)));
    let rows = client
        .query(
            "SELECT c.oid::int8, c.oid::regclass::text, c.relname::text, n.nspname::text, c.relkind = 'p' FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition \
               AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' \
             ORDER BY 2",
            &[],
        )
        .await
        .map_err(q)?;
    let mut tables = Vec::new();
    for row in rows {
        let oid: i64 = row.get(0);
        let columns = client
            .query(
                "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), \
                   format_type(CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END, \
                               CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END), \
                   a.attnotnull, a.atthasdef, coalesce(pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%', false), \
                   a.attidentity = 'a', a.attidentity <> '', a.attgenerated <> '', \
                   coalesce((SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = a.atttypid), '{}'), \
                   (SELECT fc.confrelid::regclass::text || '.' || fa.attname FROM pg_constraint fc \
                      JOIN pg_attribute fa ON fa.attrelid = fc.confrelid AND fa.attnum = fc.confkey[1] \
                      WHERE fc.conrelid = a.attrelid AND fc.contype = 'f' AND fc.conkey = ARRAY[a.attnum] LIMIT 1), \
                   EXISTS (SELECT 1 FROM pg_constraint pc WHERE pc.conrelid = a.attrelid AND pc.contype = 'p' AND pc.conkey = ARRAY[a.attnum]) \
                 FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid \
                 LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
                 WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                &[&oid],
            )
            .await
            .map_err(q)?;
        let columns = columns
            .iter()
            .map(|c| {
                let identity: bool = c.get(7);
                Column {
                    name: c.get(0),
                    type_name: c.get(1),
                    base_type: c.get(2),
                    not_null: c.get(3),
                    has_default: c.get::<_, bool>(4) || identity,
                    default_is_sequence: c.get::<_, bool>(5) || identity,
                    identity_always: c.get(6),
                    generated: c.get(8),
                    enum_labels: c.get(9),
                    references: c
                        .get::<_, Option<String>>(10)
                        .and_then(|r| r.rsplit_once('.').map(|(t, c)| (t.to_string(), c.to_string()))),
                    primary_key: c.get(11),
                }
            })
            .collect();
        let keys = client
            .query(
                "SELECT array_agg(a.attname::text ORDER BY k.n) FROM pg_index i \
                 CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n) \
                 JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum \
                 WHERE i.indrelid = $1::int8::oid AND i.indisunique AND i.indexprs IS NULL AND i.indpred IS NULL \
                 GROUP BY i.indexrelid, i.indisprimary ORDER BY i.indisprimary DESC, i.indexrelid",
                &[&oid],
            )
            .await
            .map_err(q)?;
        tables.push(Table {
            oid,
            qualified: row.get(1),
            name: row.get(2),
            schema: row.get(3),
            columns,
            partitioned: row.get(4),
            unique_keys: keys.iter().map(|r| r.get(0)).collect(),
        });
    }
    Ok(tables)
}

/// Which table a spec key (`events` or `schema.events`) names.
pub(super) fn resolve<'a>(tables: &'a [Table], key: &str) -> Option<&'a Table> {
    let unquote = |s: &str| s.trim_matches('"').to_string();
    match key.split_once('.') {
        Some((schema, name)) => tables.iter().find(|t| t.schema == unquote(schema) && t.name == unquote(name)),
        None => {
            let key = unquote(key);
            tables
                .iter()
                .find(|t| t.name == key && t.schema == "public")
                .or_else(|| tables.iter().find(|t| t.name == key))
        }
    }
}

/// The spec key naming `table`, if any.
pub(super) fn resolve_key<'a>(spec: &'a ScaleSpec, tables: &[Table], table: &Table) -> Option<&'a String> {
    spec.tables.keys().find(|key| resolve(tables, key).is_some_and(|t| t.oid == table.oid))
}

/// Fill order: a table after every table it references (foreign keys and `references` generators).
pub(super) fn order(spec: &ScaleSpec, tables: &[Table]) -> Result<Vec<(String, usize)>> {
    let mut resolved = Vec::new();
    for (key, t) in &spec.tables {
        let oid = resolve(tables, key).map(|r| r.oid);
        let index = tables.iter().position(|x| Some(x.oid) == oid).ok_or_else(|| {
            Error::invalid(
                &spec.path,
                Some(t.line),
                format!("tables.{key}: there is no table {key} in the schema the migrations build"),
            )
        })?;
        resolved.push((key.clone(), index));
    }
    let deps = |(key, index): &(String, usize)| -> BTreeSet<i64> {
        let table = &tables[*index];
        let mut d: BTreeSet<i64> = BTreeSet::new();
        // Every foreign key, whether or not its column has a generator: a parent filled after
        // its child could not be truncated alone, and would lose COPY FREEZE.
        for c in &table.columns {
            if let Some((t, _)) = &c.references {
                if let Some(x) = tables.iter().find(|x| &x.qualified == t) {
                    d.insert(x.oid);
                }
            }
        }
        for c in spec.tables[key].columns.values() {
            if let Generator::References { table: t, .. } = &c.generator {
                if let Some(x) = resolve(tables, t) {
                    d.insert(x.oid);
                }
            }
        }
        d.remove(&table.oid);
        d
    };
    let mut out: Vec<(String, usize)> = Vec::new();
    let mut left = resolved;
    while !left.is_empty() {
        let placed: BTreeSet<i64> = out.iter().map(|(_, i)| tables[*i].oid).collect();
        let pending: BTreeSet<i64> = left.iter().map(|(_, i)| tables[*i].oid).collect();
        let ready =
            left.iter().position(|entry| deps(entry).iter().all(|d| placed.contains(d) || !pending.contains(d)));
        match ready {
            Some(i) => out.push(left.remove(i)),
            // A cycle: fill in spec order; a `references` into a table not yet filled then errors clearly.
            None => out.push(left.remove(0)),
        }
    }
    Ok(out)
}

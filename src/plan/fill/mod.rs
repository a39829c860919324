//! Filling the fixture from the scale spec, as fast as the server can take it:
//!
//! 1. read the schema the migrations built and order the tables (a table after those it references);
//! 2. set indexes aside ([`indexes`]): built once after the load instead of row by row;
//! 3. load each table in its own transaction ([`load`]): binary COPY of rows Sluice draws
//!    ([`rows`]) when every column allows it, else `INSERT … SELECT` inside PostgreSQL ([`sql`]);
//! 4. build the indexes, then bring every table to the state of an autovacuumed production
//!    table: all-visible and frozen (`VACUUM (FREEZE, ANALYZE)`; a table COPY wrote frozen has
//!    its visibility map set already and is only ANALYZEd), so Index Only Scans are costed as
//!    production's are.
//!
//! Foreign-key triggers are off for the load when Sluice is superuser: the generators only draw
//! keys that exist.

mod choose;
mod indexes;
mod load;
mod progress;
mod rows;
mod schema;
mod sql;
mod stats;
mod values;

use crate::error::{Error, Result};
use crate::plan::scale::{ScaleSpec, TableSpec};
use crate::plan::server::{pg_message, quote_ident};
use crate::plan::snapshot::Snapshot;
use choose::{Filled, Shape};
use load::Truncate;
use progress::Progress;
use rows::RowGen;
use schema::Table;
use sql::SqlPlan;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tokio_postgres::Client;

/// Fills every table of `spec` in the database `client` is connected to; with a statistics
/// snapshot, also every table the spec does not name (production's `reltuples` rows) and every
/// column it does not name, from production's statistics.
/// `cap`: at most this many rows per table (the filler of a statistics fixture).
pub async fn fill(
    client: &Client,
    spec: &ScaleSpec,
    snapshot: Option<&Snapshot>,
    superuser: bool,
    timeout: Duration,
    cap: Option<u64>,
) -> Result<()> {
    prepare_session(client, superuser, timeout).await?;
    let tables = schema::load_tables(client).await?;
    let mut spec = with_snapshot_tables(spec, snapshot, &tables);
    if let Some(cap) = cap {
        // Half of production's rows at most, so the filler never takes more pages than it.
        spec.tables.values_mut().for_each(|t| t.rows = t.rows.min(cap).min((t.rows / 2).max(1)));
    }
    let spec = &spec;
    let order = schema::order(spec, &tables)?;
    let oids: Vec<i64> = order.iter().map(|(_, i)| tables[*i].oid).collect();
    let progress = Progress::new();
    truncate_all(client, &order, &tables).await?;
    let set_aside = indexes::set_aside(client, &oids).await?;
    let mut filled: BTreeMap<i64, Filled> = BTreeMap::new();
    let mut written_frozen = BTreeSet::new();
    for (position, (key, index)) in order.iter().enumerate() {
        let table = &tables[*index];
        let pending: BTreeSet<i64> = oids[position + 1..].iter().copied().collect();
        let truncate = truncation(client, table, &tables, &pending).await?;
        let (rows, method) =
            fill_table(client, spec, snapshot, key, table, &tables, &filled, truncate, &progress).await?;
        if matches!(method, progress::Method::Copy { frozen: true }) {
            written_frozen.insert(table.oid);
        }
        filled.insert(table.oid, rows);
    }
    indexes::rebuild(client, &set_aside, &progress).await?;
    settle(client, &tables, &written_frozen, &progress).await
}

/// VACUUM (FREEZE, ANALYZE) every table with rows that COPY did not write frozen (filled by
/// INSERT, by a COPY that could not truncate first, or by the migrations), ANALYZE the others.
async fn settle(client: &Client, tables: &[Table], written_frozen: &BTreeSet<i64>, progress: &Progress) -> Result<()> {
    let started = std::time::Instant::now();
    let oids: Vec<i64> = tables.iter().filter(|t| !t.partitioned).map(|t| t.oid).collect();
    let with_rows = client
        .query("SELECT oid::int8 FROM pg_class WHERE oid::int8 = ANY($1) AND pg_relation_size(oid) > 0", &[&oids])
        .await
        .map_err(|e| Error::Other(format!("cannot read the table sizes: {}", pg_message(&e))))?;
    let with_rows: BTreeSet<i64> = with_rows.iter().map(|r| r.get(0)).collect();
    let names = |frozen: bool| -> Vec<&str> {
        tables
            .iter()
            .filter(|t| with_rows.contains(&t.oid) && written_frozen.contains(&t.oid) == frozen)
            .map(|t| t.qualified.as_str())
            .collect()
    };
    for (statement, list) in [("VACUUM (FREEZE, ANALYZE)", names(false)), ("ANALYZE", names(true))] {
        if !list.is_empty() {
            client
                .batch_execute(&format!("{statement} {}", list.join(", ")))
                .await
                .map_err(|e| Error::Other(format!("{statement}: {}", pg_message(&e))))?;
        }
    }
    progress.say(&format!("sluice: fixture: VACUUM and ANALYZE in {:.1} s", started.elapsed().as_secs_f64()));
    Ok(())
}

/// Tables of the database `client` is on whose pages are not all visible (`relallvisible <
/// relpages`): a transaction older than the load kept VACUUM from marking them, so the planner
/// costs their Index Only Scans as heap reads and plans may differ from production's.
pub async fn not_all_visible(client: &Client) -> Result<Vec<String>> {
    let rows = client
        .query(
            "SELECT c.oid::regclass::text, c.relpages, c.relallvisible FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind IN ('r', 'm') AND c.relpages > 0 AND c.relallvisible < c.relpages \
               AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' \
             ORDER BY 1",
            &[],
        )
        .await
        .map_err(|e| Error::Other(format!("cannot read the visibility of the fixture: {}", pg_message(&e))))?;
    Ok(rows
        .iter()
        .map(|r| {
            let (name, pages, visible): (String, i32, i32) = (r.get(0), r.get(1), r.get(2));
            format!(
                "table {name} could not be frozen: {visible} of its {pages} pages are all-visible (a transaction \
                 older than the load held VACUUM back), so its Index Only Scans are costed as heap reads"
            )
        })
        .collect())
}

/// The spec with an entry for every table of the snapshot it does not name that exists in the
/// fixture's schema and had rows in production: `reltuples` rows, every column by the snapshot.
fn with_snapshot_tables(spec: &ScaleSpec, snapshot: Option<&Snapshot>, tables: &[Table]) -> ScaleSpec {
    let mut spec = spec.clone();
    let Some(snapshot) = snapshot else { return spec };
    for table in tables {
        let Some(stats) = snapshot.table(&table.schema, &table.name).filter(|s| s.reltuples >= 1.0) else {
            continue;
        };
        if schema::resolve_key(&spec, tables, table).is_some() {
            continue;
        }
        let key = if table.schema == "public" { table.name.clone() } else { table.qualified.clone() };
        spec.tables.insert(
            key,
            TableSpec { rows: stats.reltuples.round() as u64, columns: BTreeMap::new(), line: stats.line },
        );
    }
    spec
}

async fn prepare_session(client: &Client, superuser: bool, timeout: Duration) -> Result<()> {
    let mut settings = vec![
        format!("SET statement_timeout = {}", timeout.as_millis()),
        // Timestamps for `timestamp` columns are the UTC wall clock, however they are drawn.
        "SET TimeZone = 'UTC'".to_string(),
    ];
    if superuser {
        // Foreign-key triggers off for the load: the generators only draw keys that exist.
        settings.push("SET session_replication_role = replica".into());
    }
    client
        .batch_execute(&settings.join("; "))
        .await
        .map_err(|e| Error::Other(format!("cannot prepare the fill: {}", pg_message(&e))))
}

/// Empties every table of the spec (the migrations may have inserted rows) in one statement;
/// when a table outside the spec references one of them, they keep those rows.
async fn truncate_all(client: &Client, order: &[(String, usize)], tables: &[Table]) -> Result<()> {
    if order.is_empty() {
        return Ok(());
    }
    let list: Vec<&str> = order.iter().map(|(_, i)| tables[*i].qualified.as_str()).collect();
    let _ = client.batch_execute(&format!("TRUNCATE {}", list.join(", "))).await;
    Ok(())
}

/// What to truncate with `table` so its load skips the WAL: every table referencing it (and
/// those referencing them) must be one still to be filled (so empty), or it is loaded without.
async fn truncation(client: &Client, table: &Table, tables: &[Table], pending: &BTreeSet<i64>) -> Result<Truncate> {
    let mut list = vec![table.oid];
    let mut i = 0;
    while i < list.len() {
        let rows = client
            .query(
                "SELECT DISTINCT conrelid::int8 FROM pg_constraint WHERE contype = 'f' AND confrelid = $1::int8::oid AND conrelid <> confrelid",
                &[&list[i]],
            )
            .await
            .map_err(|e| Error::Other(format!("cannot read foreign keys: {}", pg_message(&e))))?;
        for row in rows {
            let referencing: i64 = row.get(0);
            if !pending.contains(&referencing) {
                return Ok(Truncate(None));
            }
            if !list.contains(&referencing) {
                list.push(referencing);
            }
        }
        i += 1;
    }
    let names =
        list.iter().filter_map(|oid| tables.iter().find(|t| t.oid == *oid)).map(|t| t.qualified.clone()).collect();
    Ok(Truncate(Some(names)))
}

#[allow(clippy::too_many_arguments)]
async fn fill_table(
    client: &Client,
    spec: &ScaleSpec,
    snapshot: Option<&Snapshot>,
    key: &str,
    table: &Table,
    tables: &[Table],
    filled: &BTreeMap<i64, Filled>,
    truncate: Truncate,
    progress: &Progress,
) -> Result<(Filled, progress::Method)> {
    let rows = spec.tables[key].rows;
    let line = spec.tables[key].line;
    let choices = choose::choose(spec, snapshot, key, table, tables, filled)?;
    let sql = SqlPlan::new(&spec.path, key, &choices, tables, filled)?;
    // Each table draws its own reproducible stream (FNV-1a of its key).
    let seed = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    let mut rows_gen = if choices.is_empty() { None } else { RowGen::new(&choices, tables, filled, rows, seed) };
    if let Some(gen) = rows_gen.as_mut() {
        let mut values = Vec::new();
        for lookup in gen.lookups() {
            let query = format!(
                "SELECT {c}::{cast} FROM {t} WHERE {c} IS NOT NULL",
                c = quote_ident(&lookup.column),
                cast = if lookup.text { "text" } else { "int8" },
                t = lookup.table
            );
            let found = client.query(&query, &[]).await.map_err(|e| {
                Error::Other(format!("cannot read {}.{}: {}", lookup.table, lookup.column, pg_message(&e)))
            })?;
            values.push(
                found
                    .iter()
                    .map(|r| if lookup.text { values::Value::Text(r.get(0)) } else { values::Value::Int(r.get(0)) })
                    .collect(),
            );
        }
        gen.resolve_lookups(values);
    }
    let bar = progress.table(&table.qualified, rows);
    let method = load::load(client, table, rows, &truncate, rows_gen, &sql, &bar)
        .await
        .map_err(|e| Error::invalid(&spec.path, Some(line), e.to_string()))?;
    bar.finish(method, progress);
    reset_sequences(client, table).await;
    let shapes = choices.iter().map(|c| (c.column.name.clone(), c.shape())).collect::<BTreeMap<String, Shape>>();
    Ok((Filled { rows, shapes }, method))
}

/// Serial and identity columns continue after the generated keys.
async fn reset_sequences(client: &Client, table: &Table) {
    for column in table.columns.iter().filter(|c| c.default_is_sequence) {
        let sql = format!(
            "SELECT setval(s, greatest((SELECT max({c}) FROM {t}), 1)::bigint) FROM pg_get_serial_sequence({tl}, {cl}) AS s WHERE s IS NOT NULL",
            c = quote_ident(&column.name),
            t = table.qualified,
            tl = crate::plan::scale::quote_literal(&table.qualified),
            cl = crate::plan::scale::quote_literal(&column.name)
        );
        let _ = client.batch_execute(&sql).await;
    }
}

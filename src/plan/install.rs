//! A statistics fixture (`[plan] fixture = "statistics"`): the planner sees production's
//! numbers exactly, in seconds, without production's rows.
//!
//! 1. Each table gets a few filler rows drawn from the snapshot ([`super::fill`], at most
//!    [`FILLER_ROWS`]), and its indexes are built on them.
//! 2. Each table and index file is extended to production's page count. The planner reads a
//!    relation's size from its file (`RelationGetNumberOfBlocks`), not from `pg_class`; the
//!    new pages are all zeros, which PostgreSQL reads as empty pages (a sparse file: no disk
//!    is written). A btree only follows links from its metapage, so it never reads them.
//! 3. `pg_class` gets production's `reltuples`, `relpages`, `relallvisible`, and
//!    `pg_statistic` production's rows: null fraction, width, distinct count, the most common
//!    values with their frequencies, the histogram, the correlation. PostgreSQL 15 has no
//!    function to restore statistics (18's `pg_restore_attribute_stats`), and a value list is
//!    of type `anyarray`, which SQL cannot write: each list is made by ANALYZE of a helper
//!    table holding exactly those values (once each for a histogram; each value more often
//!    than the next for a most-common-values list, so ANALYZE keeps them all, in that order),
//!    and copied from the helper's `pg_statistic` row.
//! 4. Autovacuum is off for every table (it is off on Sluice's own server too): an ANALYZE
//!    would replace production's figures with the filler's.
//!
//! This needs the server Sluice starts (it writes into the data directory) as its superuser.

use super::fill;
use super::scale::ScaleSpec;
use super::server::{pg_message, quote_ident, Server};
use super::snapshot::{ColumnStats, Snapshot};
use crate::error::{Error, Result};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;
use tokio_postgres::Client;

/// Filler rows per table: enough for the indexes to be real, few enough to build in a moment.
pub const FILLER_ROWS: u64 = 1_000;

/// PostgreSQL's relation segment: 1 GB of 8 kB pages.
const SEGMENT_PAGES: u64 = 131_072;
const PAGE: u64 = 8_192;

fn failed(what: &str) -> impl FnOnce(tokio_postgres::Error) -> Error + '_ {
    move |e| Error::Other(format!("statistics fixture: {what}: {}", pg_message(&e)))
}

/// Builds the statistics fixture in the database `client` is on (migrations applied).
pub async fn install(
    client: &Client,
    server: &Server,
    spec: &ScaleSpec,
    snapshot: &Snapshot,
    timeout: Duration,
) -> Result<()> {
    let Some(data) = server.data_dir().filter(|_| server.superuser) else {
        return Err(Error::Usage(
            "a statistics fixture writes production's figures into the catalog and extends relation files: it \
             needs the server Sluice starts itself (drop --database-url, or use `--fixture generated`)"
                .into(),
        ));
    };
    fill::fill(client, spec, Some(snapshot), true, timeout, Some(FILLER_ROWS)).await?;
    figures(client, &data, snapshot).await
}

/// Steps 2 to 4 on the database `client` is on: after the fill, and again on the head after
/// its migrations (a CREATE INDEX writes its table's `pg_class` figures; a rewrite drops the
/// statistics).
pub async fn figures(client: &Client, data: &Path, snapshot: &Snapshot) -> Result<()> {
    let started = std::time::Instant::now();
    let relations = client
        .query(
            "SELECT c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text, pg_relation_filepath(c.oid), \
                    coalesce(i.indrelid, 0)::int8, c.reltuples::float8 \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             LEFT JOIN pg_index i ON i.indexrelid = c.oid \
             WHERE c.relkind IN ('r', 'i', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
               AND n.nspname NOT LIKE 'pg\\_toast%' ORDER BY c.relkind DESC",
            &[],
        )
        .await
        .map_err(failed("cannot list the relations"))?;
    let mut installed = 0;
    for row in &relations {
        let (oid, schema, name, kind, file, table_oid): (i64, String, String, String, Option<String>, i64) =
            (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4), row.get(5));
        let filler_tuples: f64 = row.get(6);
        let Some(file) = file else { continue };
        let figures = match snapshot.table(&schema, &name) {
            Some(t) => Some((t.reltuples.max(0.0), t.relpages.max(0) as u64, t.relallvisible.max(0))),
            // An index production does not have (a head migration's): its table's rows, and
            // pages in proportion to the filler's.
            None if kind == "i" => {
                let table = relations.iter().find(|r| r.get::<_, i64>(0) == table_oid);
                let owner = table.and_then(|t| snapshot.table(&t.get::<_, String>(1), &t.get::<_, String>(2)));
                owner.map(|t| {
                    let pages = file_pages(&data.join(&file));
                    let scale = if filler_tuples > 0.0 { t.reltuples / filler_tuples } else { 1.0 };
                    (t.reltuples, ((pages as f64) * scale).ceil() as u64, 0)
                })
            }
            None => None,
        };
        let Some((tuples, pages, all_visible)) = figures else { continue };
        extend(&data.join(&file), pages)?;
        client
            .execute(
                "UPDATE pg_class SET reltuples = $2::float8::float4, relpages = $3::int8::int4, relallvisible = $4 \
                 WHERE oid = $1::int8::oid",
                &[&oid, &tuples, &(pages as i64), &all_visible],
            )
            .await
            .map_err(failed("cannot write pg_class"))?;
        if kind != "i" {
            client
                .batch_execute(&format!(
                    "ALTER TABLE {}.{} SET (autovacuum_enabled = false)",
                    quote_ident(&schema),
                    quote_ident(&name)
                ))
                .await
                .map_err(failed("cannot turn autovacuum off"))?;
            if let Some(t) = snapshot.table(&schema, &name) {
                for (column, stats) in &t.columns {
                    installed += usize::from(install_column(client, oid, column, stats).await?);
                }
            }
        }
    }
    eprintln!(
        "sluice: fixture: production's statistics installed ({installed} columns) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn file_pages(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len() / PAGE).unwrap_or(0)
}

/// Extends a relation's files to `pages` pages of zeros (sparse), segment by segment; never
/// shrinks one. New segment files get the owner of the first.
fn extend(path: &Path, pages: u64) -> Result<()> {
    let owner = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let mut segment = 0u64;
    loop {
        let here = pages.saturating_sub(segment * SEGMENT_PAGES).min(SEGMENT_PAGES);
        if here == 0 {
            break;
        }
        let file = if segment == 0 {
            path.to_path_buf()
        } else {
            path.with_file_name(format!("{}.{segment}", file_name(path)))
        };
        let handle =
            std::fs::OpenOptions::new().create(true).append(true).open(&file).map_err(|e| Error::io(&file, e))?;
        let size = handle.metadata().map_err(|e| Error::io(&file, e))?.len();
        if size < here * PAGE {
            handle.set_len(here * PAGE).map_err(|e| Error::io(&file, e))?;
        }
        if segment > 0 {
            use std::os::unix::fs::MetadataExt;
            let (uid, gid) = (nix::unistd::Uid::from_raw(owner.uid()), nix::unistd::Gid::from_raw(owner.gid()));
            nix::unistd::chown(&file, Some(uid), Some(gid)).map_err(|e| {
                Error::Other(format!("{}: cannot hand the file to the server user: {e}", file.display()))
            })?;
        }
        segment += 1;
    }
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// SQL literal of a snapshot value.
fn literal(value: &Value) -> String {
    match value {
        Value::String(s) => super::scale::quote_literal(s),
        other => super::scale::quote_literal(&other.to_string()),
    }
}

/// Writes production's `pg_statistic` row for one column; `false` when the column is gone or
/// its values cannot be stored.
async fn install_column(client: &Client, table: i64, column: &str, stats: &ColumnStats) -> Result<bool> {
    let found = client
        .query_opt(
            "SELECT a.attnum, format_type(a.atttypid, a.atttypmod), coalesce(co.collname, '') FROM pg_attribute a \
             LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 0 \
             WHERE a.attrelid = $1::int8::oid AND a.attname = $2 AND NOT a.attisdropped",
            &[&table, &column],
        )
        .await
        .map_err(failed("cannot read the columns"))?;
    let Some(found) = found else { return Ok(false) };
    let (attnum, type_name, collation): (i16, String, String) = (found.get(0), found.get(1), found.get(2));
    client
        .execute("DELETE FROM pg_statistic WHERE starelid = $1::int8::oid AND staattnum = $2", &[&table, &attnum])
        .await
        .map_err(failed("cannot clear pg_statistic"))?;
    client
        .execute(
            "INSERT INTO pg_statistic (starelid, staattnum, stainherit, stanullfrac, stawidth, stadistinct, \
               stakind1, stakind2, stakind3, stakind4, stakind5, staop1, staop2, staop3, staop4, staop5, \
               stacoll1, stacoll2, stacoll3, stacoll4, stacoll5) \
             VALUES ($1::int8::oid, $2, false, $3::float8::float4, $4, $5::float8::float4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)",
            &[&table, &attnum, &stats.null_frac, &stats.avg_width, &stats.n_distinct],
        )
        .await
        .map_err(failed("cannot write pg_statistic"))?;
    let helper_type = if collation.is_empty() {
        type_name.clone()
    } else {
        format!("{type_name} COLLATE {}", quote_ident(&collation))
    };
    let mut slot = 1;
    // The most common values, each more often than the next: ANALYZE keeps all, in order.
    if !stats.most_common_vals.is_empty() {
        let n = stats.most_common_vals.len();
        let rows: Vec<String> = stats
            .most_common_vals
            .iter()
            .enumerate()
            .map(|(i, v)| format!("({}::{type_name}, {})", literal(v), n - i + 1))
            .collect();
        let fill = format!(
            "INSERT INTO sluice_values SELECT v FROM (VALUES {}) AS t(v, c), generate_series(1, c)",
            rows.join(", ")
        );
        if copy_slot(client, &helper_type, &fill, 1, table, attnum, slot).await? {
            let freqs: Vec<f32> = stats.most_common_freqs.iter().map(|f| *f as f32).collect();
            set_numbers(client, table, attnum, slot, &freqs).await?;
            slot += 1;
        }
    }
    // The histogram: each bound once, so ANALYZE's histogram is the list itself.
    if stats.histogram_bounds.len() >= 2 {
        let rows: Vec<String> =
            stats.histogram_bounds.iter().map(|v| format!("({}::{type_name})", literal(v))).collect();
        let fill = format!("INSERT INTO sluice_values SELECT v FROM (VALUES {}) AS t(v)", rows.join(", "));
        if copy_slot(client, &helper_type, &fill, 2, table, attnum, slot).await? {
            slot += 1;
        }
    }
    if let Some(correlation) = stats.correlation {
        client
            .execute(
                &format!(
                    "UPDATE pg_statistic SET stakind{slot} = 3, staop{slot} = (SELECT o.oid FROM pg_operator o \
                       JOIN pg_attribute a ON a.attrelid = $1::int8::oid AND a.attnum = $2 \
                       WHERE o.oprname = '<' AND o.oprleft = a.atttypid AND o.oprright = a.atttypid LIMIT 1), \
                     stanumbers{slot} = ARRAY[$3::float8::float4] WHERE starelid = $1::int8::oid AND staattnum = $2"
                ),
                &[&table, &attnum, &correlation],
            )
            .await
            .map_err(failed("cannot write the correlation"))?;
    }
    Ok(true)
}

/// ANALYZE a helper table filled by `fill` and copy its slot of `kind` (1: most common values,
/// 2: histogram) into slot `slot` of the column's row; `false` when ANALYZE made none.
async fn copy_slot(
    client: &Client,
    helper_type: &str,
    fill: &str,
    kind: i16,
    table: i64,
    attnum: i16,
    slot: usize,
) -> Result<bool> {
    let setup = format!(
        "DROP TABLE IF EXISTS sluice_values; CREATE TEMP TABLE sluice_values (v {helper_type}); \
         ALTER TABLE sluice_values ALTER COLUMN v SET STATISTICS 10000; {fill}; ANALYZE sluice_values"
    );
    client.batch_execute(&setup).await.map_err(failed("cannot build a value list"))?;
    let mut copied = 0;
    for source in 1..=5 {
        copied += client
            .execute(
                &format!(
                    "UPDATE pg_statistic t SET stakind{slot} = s.stakind{source}, staop{slot} = s.staop{source}, \
                       stacoll{slot} = s.stacoll{source}, stavalues{slot} = s.stavalues{source} \
                     FROM pg_statistic s WHERE s.starelid = 'sluice_values'::regclass AND s.staattnum = 1 \
                       AND s.stakind{source} = $3 AND t.starelid = $1::int8::oid AND t.staattnum = $2"
                ),
                &[&table, &attnum, &kind],
            )
            .await
            .map_err(failed("cannot copy a value list"))?;
        if copied > 0 {
            break;
        }
    }
    client.batch_execute("DROP TABLE sluice_values").await.map_err(failed("cannot drop the value list"))?;
    Ok(copied > 0)
}

async fn set_numbers(client: &Client, table: i64, attnum: i16, slot: usize, numbers: &[f32]) -> Result<()> {
    client
        .execute(
            &format!("UPDATE pg_statistic SET stanumbers{slot} = $3 WHERE starelid = $1::int8::oid AND staattnum = $2"),
            &[&table, &attnum, &numbers],
        )
        .await
        .map_err(failed("cannot write the frequencies"))?;
    Ok(())
}

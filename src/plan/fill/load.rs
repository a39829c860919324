//! Loading one table, in its own transaction. When the table can be truncated in that
//! transaction (nothing filled references it), PostgreSQL writes no WAL for it (`wal_level =
//! minimal`) and, with COPY, writes its rows already frozen, so neither the index builds nor
//! ANALYZE that read it next have to rewrite every page to set hint bits.

use super::progress::{Method, TableProgress};
use super::rows::RowGen;
use super::schema::Table;
use super::sql::SqlPlan;
use crate::error::{Error, Result};
use crate::plan::server::{pg_message, quote_ident};
use bytes::Bytes;
use futures_util::SinkExt;
use tokio_postgres::Client;

/// Rows per COPY chunk: drawn on a blocking thread while the previous chunk is sent.
const COPY_CHUNK: u64 = 65_536;
/// Rows per INSERT statement on the SQL path.
const INSERT_CHUNK: u64 = 1_000_000;

/// What to truncate first so the load skips the WAL: the table, plus the tables referencing it
/// (all empty, not yet filled). `None`: the table cannot be truncated alone.
pub(super) struct Truncate(pub(super) Option<Vec<String>>);

fn failed(what: String) -> impl FnOnce(tokio_postgres::Error) -> Error {
    move |e| Error::Other(format!("{what}: {}", pg_message(&e)))
}

/// Loads `rows` rows into `table`, by COPY when `rows_gen` is given, else by INSERT.
pub(super) async fn load(
    client: &Client,
    table: &Table,
    rows: u64,
    truncate: &Truncate,
    rows_gen: Option<RowGen>,
    sql: &SqlPlan,
    progress: &TableProgress,
) -> Result<Method> {
    let name = &table.qualified;
    client.batch_execute("BEGIN").await.map_err(failed(format!("cannot start loading {name}")))?;
    let truncated = match &truncate.0 {
        Some(list) => {
            client
                .batch_execute(&format!("TRUNCATE {}", list.join(", ")))
                .await
                .map_err(failed(format!("cannot truncate {name}")))?;
            true
        }
        None => false,
    };
    let method = match rows_gen {
        Some(gen) if rows > 0 => {
            let frozen = truncated && !table.partitioned;
            copy(client, table, rows, gen, frozen, progress).await?;
            Method::Copy { frozen }
        }
        _ => {
            insert(client, table, rows, sql, progress).await?;
            Method::Insert
        }
    };
    client.batch_execute("COMMIT").await.map_err(failed(format!("cannot commit the rows of {name}")))?;
    Ok(method)
}

async fn copy(
    client: &Client,
    table: &Table,
    rows: u64,
    gen: RowGen,
    frozen: bool,
    progress: &TableProgress,
) -> Result<()> {
    let name = &table.qualified;
    let columns: Vec<String> = gen.column_names().iter().map(|c| quote_ident(c)).collect();
    let statement = format!(
        "COPY {name} ({}) FROM STDIN (FORMAT binary{})",
        columns.join(", "),
        if frozen { ", FREEZE" } else { "" }
    );
    let sink =
        client.copy_in::<_, Bytes>(&statement).await.map_err(failed(format!("cannot start COPY into {name}")))?;
    futures_util::pin_mut!(sink);
    let gen = std::sync::Arc::new(gen);
    let draw = |first: u64| {
        let gen = gen.clone();
        let last = (first + COPY_CHUNK - 1).min(rows);
        (last, tokio::task::spawn_blocking(move || gen.chunk(first, last, rows)))
    };
    let mut next = Some(draw(1));
    while let Some((last, chunk)) = next.take() {
        let data = chunk
            .await
            .map_err(|e| Error::Other(format!("drawing the rows of {name} failed: {e}")))?
            .map_err(|e| Error::Other(format!("filling {name}: {e}")))?;
        if last < rows {
            next = Some(draw(last + 1));
        }
        sink.send(Bytes::from(data)).await.map_err(failed(format!("COPY into {name} failed")))?;
        progress.set(last);
    }
    sink.as_mut().finish().await.map_err(failed(format!("COPY into {name} failed")))?;
    Ok(())
}

async fn insert(client: &Client, table: &Table, rows: u64, sql: &SqlPlan, progress: &TableProgress) -> Result<()> {
    let name = &table.qualified;
    // Reproducible draws from random() for the same spec.
    client.batch_execute("SELECT setseed(0.4242)").await.map_err(failed(format!("filling {name}")))?;
    let mut first = 1;
    while first <= rows {
        let last = (first + INSERT_CHUNK - 1).min(rows);
        client.batch_execute(&sql.insert(name, first, last)).await.map_err(failed(format!("filling {name}")))?;
        progress.set(last);
        first = last + 1;
    }
    Ok(())
}

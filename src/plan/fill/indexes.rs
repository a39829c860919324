//! Indexes are built after the rows are in: one sorted build is several times faster than
//! inserting every row into every btree. Secondary indexes are dropped before the load and
//! created again from their definitions; primary keys and unique constraints too, unless a
//! foreign key depends on them (dropping those would mean validating the foreign key again).
//! Anything whose loss would change plans or behaviour (an exclusion constraint, a replica
//! identity or clustering index, per-column statistics targets, partition indexes) stays.

use super::progress::Progress;
use crate::error::{Error, Result};
use crate::plan::server::{pg_message, quote_ident};
use tokio_postgres::Client;

/// An index (or the constraint owning it) set aside for the load.
pub(super) struct SetAside {
    pub(super) name: String,
    pub(super) table: String,
    /// What builds it again.
    create: String,
}

/// Drops the indexes of `tables` (oids) that can be built again after the load.
pub(super) async fn set_aside(client: &Client, tables: &[i64]) -> Result<Vec<SetAside>> {
    let rows = client
        .query(
            "SELECT i.indexrelid::regclass::text, i.indrelid::regclass::text, pg_get_indexdef(i.indexrelid), \
                    c.conname::text, pg_get_constraintdef(c.oid) \
             FROM pg_index i \
             JOIN pg_class t ON t.oid = i.indrelid \
             LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid AND c.contype IN ('p', 'u', 'x') \
             WHERE i.indrelid::int8 = ANY($1) \
               AND t.relkind = 'r' AND NOT t.relispartition \
               AND (c.oid IS NULL OR c.contype IN ('p', 'u')) \
               AND NOT i.indisreplident AND NOT i.indisclustered \
               AND NOT EXISTS (SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' AND f.conindid = i.indexrelid) \
               AND NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid) \
               AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = i.indexrelid AND a.attstattarget >= 0) \
             ORDER BY 2, 1",
            &[&tables],
        )
        .await
        .map_err(|e| Error::Other(format!("cannot list the indexes to build after the load: {}", pg_message(&e))))?;
    let mut out = Vec::new();
    for row in rows {
        let (name, table, index_def): (String, String, String) = (row.get(0), row.get(1), row.get(2));
        let constraint: Option<String> = row.get(3);
        let (drop, create) = match constraint {
            Some(constraint) => {
                let def: String = row.get(4);
                (
                    format!("ALTER TABLE {table} DROP CONSTRAINT {}", quote_ident(&constraint)),
                    format!("ALTER TABLE {table} ADD CONSTRAINT {} {def}", quote_ident(&constraint)),
                )
            }
            None => (format!("DROP INDEX {name}"), index_def),
        };
        client
            .batch_execute(&drop)
            .await
            .map_err(|e| Error::Other(format!("cannot drop index {name} for the load: {}", pg_message(&e))))?;
        out.push(SetAside { name, table, create });
    }
    Ok(out)
}

/// Builds the indexes set aside (each build uses the parallel maintenance workers).
pub(super) async fn rebuild(client: &Client, indexes: &[SetAside], progress: &Progress) -> Result<()> {
    for index in indexes {
        let step = progress.index(&index.name, &index.table);
        client.batch_execute(&index.create).await.map_err(|e| {
            Error::Other(format!(
                "cannot build index {} on {} after the load: {}{}",
                index.name,
                index.table,
                pg_message(&e),
                if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) {
                    "; the generated rows repeat a value the index must keep unique: give those columns a \
                     unique generator (sequence, pattern) in the scale spec"
                } else {
                    ""
                }
            ))
        })?;
        step.finish(progress);
    }
    Ok(())
}

//! Building the fixture: migrations applied, every table filled from the scale spec
//! ([`super::fill`]), then ANALYZE. The filled database is kept as a template keyed by a hash of
//! the schema and the spec.

use crate::error::{Error, Result};
use crate::plan::scale::ScaleSpec;
use crate::plan::server::{pg_message, Server};
use crate::plan::snapshot::Snapshot;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;
use tokio_postgres::Client;

/// Bump when generation changes, so old cached fixtures are not reused.
const FORMAT: &str = "sluice-fixture-v3";
/// How many cached fixtures the ephemeral cluster keeps (least recently used go first).
const KEEP_TEMPLATES: usize = 3;

/// How the fixture's tables get their contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Rows drawn from the scale spec and the statistics snapshot, then ANALYZEd.
    #[default]
    Generated,
    /// Each table built to production's page count with filler rows, then production's
    /// `pg_class` and `pg_statistic` figures installed ([`super::install`]): the planner sees
    /// production's numbers exactly.
    Statistics,
}

/// What a fixture is built from.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub spec: &'a ScaleSpec,
    pub snapshot: Option<&'a Snapshot>,
    pub mode: Mode,
}

/// One migration to apply: a name for messages and the cache key, and its SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationSql {
    pub name: String,
    pub path: PathBuf,
    pub sql: String,
    /// The statements the migration tool sends, as (line, byte range in `sql`): not a down
    /// section, a rollback comment or a marker (see `schema::tools`). `None`: every statement.
    pub deployed: Option<Vec<(usize, std::ops::Range<usize>)>>,
}

impl MigrationSql {
    pub fn load(path: PathBuf) -> Result<MigrationSql> {
        let sql = crate::error::read_text(&path)?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(MigrationSql { name, path, sql, deployed: None })
    }

    /// The statements to apply, as (line, text).
    fn statements(&self) -> Result<Vec<(usize, &str)>> {
        if let Some(deployed) = &self.deployed {
            return Ok(deployed.iter().map(|(line, range)| (*line, &self.sql[range.clone()])).collect());
        }
        let split = crate::sql::split::split(&self.sql);
        if let Some(unread) = split.unterminated() {
            return Err(Error::invalid(&self.path, Some(unread.span.line), unread.message()));
        }
        // Statements sqlparser cannot tokenize are still PostgreSQL's to run.
        Ok(split.statement_spans().into_iter().map(|span| (span.line, &self.sql[span.start..span.end])).collect())
    }
}

/// Applies migrations statement by statement (so `CREATE INDEX CONCURRENTLY` works), naming the
/// file and line of a statement the server rejects.
pub async fn apply_migrations(client: &Client, migrations: &[MigrationSql]) -> Result<()> {
    for m in migrations {
        for (line, text) in m.statements()? {
            client.batch_execute(text).await.map_err(|e| {
                Error::invalid(
                    &m.path,
                    Some(line),
                    format!("the fixture server rejected this statement: {}", pg_message(&e)),
                )
            })?;
        }
    }
    Ok(())
}

/// Tables a migration set touches (created, altered, indexed, written), for a targeted ANALYZE.
pub fn touched_tables(migrations: &[MigrationSql]) -> BTreeSet<String> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::Token;
    let mut out = BTreeSet::new();
    for m in migrations {
        for statement in crate::sql::split::split(&m.sql).statements {
            let tokens: Vec<&Token> =
                statement.tokens.iter().map(|t| &t.token).filter(|t| !matches!(t, Token::Whitespace(_))).collect();
            for (i, token) in tokens.iter().enumerate() {
                let Token::Word(w) = token else { continue };
                if !matches!(w.keyword, Keyword::TABLE | Keyword::ON | Keyword::INTO | Keyword::UPDATE | Keyword::FROM)
                {
                    continue;
                }
                let mut j = i + 1;
                // ALTER TABLE IF EXISTS ONLY x, CREATE INDEX … ON ONLY x
                while let Some(Token::Word(w)) = tokens.get(j) {
                    if matches!(w.keyword, Keyword::IF | Keyword::EXISTS | Keyword::ONLY | Keyword::NOT) {
                        j += 1;
                    } else {
                        break;
                    }
                }
                let mut name = Vec::new();
                while let Some(Token::Word(w)) = tokens.get(j) {
                    name.push(w.value.clone());
                    if matches!(tokens.get(j + 1), Some(Token::Period)) {
                        j += 2;
                    } else {
                        break;
                    }
                }
                if !name.is_empty() {
                    out.insert(name.join("."));
                }
            }
        }
    }
    out
}

/// VACUUM (ANALYZE) the tables among `names` that exist, as autovacuum would after the
/// migration: a table it rewrote or updated is all-visible again, as on the base fixture.
pub async fn vacuum_tables(client: &Client, names: &BTreeSet<String>) -> Result<()> {
    for name in names {
        let row = client
            .query_one(
                "SELECT c.oid::regclass::text FROM pg_class c WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p', 'm')",
                &[name],
            )
            .await;
        if let Ok(row) = row {
            let table: String = row.get(0);
            client
                .batch_execute(&format!("VACUUM (ANALYZE) {table}"))
                .await
                .map_err(|e| Error::Other(pg_message(&e)))?;
        }
    }
    Ok(())
}

pub fn cache_key(version_num: u32, migrations: &[MigrationSql], inputs: Inputs<'_>) -> String {
    let mut hash = Sha256::new();
    hash.update(FORMAT.as_bytes());
    hash.update(version_num.to_le_bytes());
    for m in migrations {
        hash.update((m.name.len() as u64).to_le_bytes());
        hash.update(m.name.as_bytes());
        hash.update((m.sql.len() as u64).to_le_bytes());
        hash.update(m.sql.as_bytes());
    }
    hash.update(inputs.spec.text.as_bytes());
    if let Some(snapshot) = inputs.snapshot {
        hash.update(b"snapshot");
        hash.update(snapshot.text.as_bytes());
    }
    hash.update(format!("{:?}", inputs.mode).as_bytes());
    hex::encode(hash.finalize())[..20].to_string()
}

pub struct Template {
    pub name: String,
    /// Reused from an earlier run.
    pub cached: bool,
    pub build_seconds: f64,
}

/// The filled database for `migrations` + `spec`: reused if cached, else built.
pub async fn template(
    server: &mut Server,
    migrations: &[MigrationSql],
    inputs: Inputs<'_>,
    cache: bool,
    timeout: Duration,
) -> Result<Template> {
    let key = cache_key(server.version_num, migrations, inputs);
    let name = format!("sluice_tpl_{key}");
    let now = chrono::Utc::now().timestamp().to_string();
    if server.database_exists(&name).await? {
        server.comment_database(&name, &now).await?;
        return Ok(Template { name, cached: true, build_seconds: 0.0 });
    }
    let started = std::time::Instant::now();
    let build = format!("sluice_build_{key}_{}", std::process::id());
    server.create_database(&build, None).await?;
    {
        let client = server.connect(&build).await?;
        client
            .batch_execute(&format!("SET statement_timeout = {}", timeout.as_millis()))
            .await
            .map_err(|e| Error::Other(pg_message(&e)))?;
        apply_migrations(&client, migrations).await?;
        match (inputs.mode, inputs.snapshot) {
            (Mode::Statistics, Some(snapshot)) => {
                super::install::install(&client, server, inputs.spec, snapshot, timeout).await?
            }
            _ => super::fill::fill(&client, inputs.spec, inputs.snapshot, server.superuser, timeout, None).await?,
        }
    }
    server.rename_database(&build, &name).await?;
    if cache {
        server.forget(&name);
        server.comment_database(&name, &now).await?;
        evict(server, &name).await?;
    }
    Ok(Template { name, cached: false, build_seconds: started.elapsed().as_secs_f64() })
}

async fn evict(server: &mut Server, current: &str) -> Result<()> {
    let mut templates = server.databases_like("sluice\\_tpl\\_%").await?;
    templates.retain(|(n, _)| n != current);
    templates.sort_by_key(|(_, c)| std::cmp::Reverse(c.as_deref().and_then(|c| c.parse::<i64>().ok()).unwrap_or(0)));
    for (old, _) in templates.into_iter().skip(KEEP_TEMPLATES - 1) {
        server.drop_database(&old).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migration(name: &str, sql: &str) -> MigrationSql {
        MigrationSql { name: name.into(), path: PathBuf::from(name), sql: sql.into(), deployed: None }
    }

    #[test]
    fn touched_tables_finds_created_altered_and_indexed_tables() {
        let m = migration(
            "2.sql",
            "DROP INDEX stop_times_route_idx;\nCREATE INDEX CONCURRENTLY IF NOT EXISTS x ON ONLY public.trips (a);\n\
             ALTER TABLE IF EXISTS stops ADD COLUMN b int;\nUPDATE routes SET a = 1;\nINSERT INTO agencies VALUES (1);",
        );
        let touched = touched_tables(&[m]);
        for t in ["public.trips", "stops", "routes", "agencies"] {
            assert!(touched.contains(t), "{t} missing from {touched:?}");
        }
    }

    #[test]
    fn cache_key_changes_with_schema_and_spec() {
        let spec = crate::plan::scale::parse(std::path::Path::new("s.toml"), "[tables.t]\nrows = 5\n").expect("spec");
        let spec2 = crate::plan::scale::parse(std::path::Path::new("s.toml"), "[tables.t]\nrows = 6\n").expect("spec");
        let inputs = |spec| Inputs { spec, snapshot: None, mode: Mode::Generated };
        let a = cache_key(150000, &[migration("1.sql", "CREATE TABLE t (a int)")], inputs(&spec));
        assert_eq!(a, cache_key(150000, &[migration("1.sql", "CREATE TABLE t (a int)")], inputs(&spec)));
        assert_ne!(a, cache_key(150000, &[migration("1.sql", "CREATE TABLE t (a bigint)")], inputs(&spec)));
        assert_ne!(a, cache_key(150000, &[migration("1.sql", "CREATE TABLE t (a int)")], inputs(&spec2)));
        assert_ne!(a, cache_key(160000, &[migration("1.sql", "CREATE TABLE t (a int)")], inputs(&spec)));
        let statistics = Inputs { mode: Mode::Statistics, ..inputs(&spec) };
        assert_ne!(a, cache_key(150000, &[migration("1.sql", "CREATE TABLE t (a int)")], statistics));
        let snapshot = crate::plan::snapshot::parse(
            std::path::Path::new("s.csv"),
            "kind,schema,table,column,type,reltuples,relpages,relallvisible,stats\n",
        )
        .expect("snapshot");
        let with = Inputs { snapshot: Some(&snapshot), ..inputs(&spec) };
        assert_ne!(a, cache_key(150000, &[migration("1.sql", "CREATE TABLE t (a int)")], with));
    }
}

//! Building the fixture: migrations applied, every table filled from the scale spec inside
//! PostgreSQL (`INSERT … SELECT … FROM generate_series`, no rows over the wire), then ANALYZE.
//! The filled database is kept as a template keyed by a hash of the schema and the spec.
//!
//! Bulk-load speed: all tables are truncated and filled in one transaction (with `wal_level =
//! minimal` the server then skips the WAL for them), foreign-key triggers are off for the load
//! (the generators only produce keys that exist), and secondary indexes are dropped before the
//! load and rebuilt after it, which is several times faster than maintaining them row by row.

use crate::error::{Error, Result};
use crate::plan::scale::{quote_literal, ColumnSpec, Generator, ScaleSpec};
use crate::plan::server::{pg_message, quote_ident, Server};
use indicatif::{ProgressBar, ProgressStyle};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;
use tokio_postgres::Client;

/// Bump when generation changes, so old cached fixtures are not reused.
const FORMAT: &str = "sluice-fixture-v1";
const CHUNK: u64 = 1_000_000;
/// How many cached fixtures the ephemeral cluster keeps (least recently used go first).
const KEEP_TEMPLATES: usize = 3;

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
        if let Some((message, span)) = &split.tokenizer_error {
            return Err(Error::invalid(
                &self.path,
                Some(span.line),
                format!("cannot split the file into statements: {message}"),
            ));
        }
        Ok(split.statements.iter().map(|s| (s.span.line, &self.sql[s.span.start..s.span.end])).collect())
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

/// ANALYZE the tables among `names` that exist.
pub async fn analyze_tables(client: &Client, names: &BTreeSet<String>) -> Result<()> {
    for name in names {
        let row = client
            .query_one(
                "SELECT c.oid::regclass::text FROM pg_class c WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p', 'm')",
                &[name],
            )
            .await;
        if let Ok(row) = row {
            let table: String = row.get(0);
            client.batch_execute(&format!("ANALYZE {table}")).await.map_err(|e| Error::Other(pg_message(&e)))?;
        }
    }
    Ok(())
}

pub fn cache_key(version_num: u32, migrations: &[MigrationSql], spec: &ScaleSpec) -> String {
    let mut hash = Sha256::new();
    hash.update(FORMAT.as_bytes());
    hash.update(version_num.to_le_bytes());
    for m in migrations {
        hash.update((m.name.len() as u64).to_le_bytes());
        hash.update(m.name.as_bytes());
        hash.update((m.sql.len() as u64).to_le_bytes());
        hash.update(m.sql.as_bytes());
    }
    hash.update(spec.text.as_bytes());
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
    spec: &ScaleSpec,
    cache: bool,
    timeout: Duration,
) -> Result<Template> {
    let key = cache_key(server.version_num, migrations, spec);
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
        fill(&client, spec, server.superuser).await?;
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

// ---------------------------------------------------------------------------------------------
// The schema as the server sees it after the migrations.

#[derive(Debug, Clone)]
struct Column {
    name: String,
    /// `format_type` of the column's type, for the cast.
    type_name: String,
    /// The base type of a domain, else the same as `type_name`: what defaults are chosen by.
    base_type: String,
    not_null: bool,
    has_default: bool,
    default_is_sequence: bool,
    identity_always: bool,
    generated: bool,
    enum_labels: Vec<String>,
    /// A single-column foreign key: (table, column).
    references: Option<(String, String)>,
    primary_key: bool,
}

#[derive(Debug, Clone)]
struct Table {
    oid: i64,
    /// `regclass` text: `name` or `schema.name`, quoted as needed.
    qualified: String,
    name: String,
    schema: String,
    columns: Vec<Column>,
}

async fn load_tables(client: &Client) -> Result<Vec<Table>> {
    let q = |e: tokio_postgres::Error| Error::Other(format!("cannot read the fixture schema: {}", pg_message(&e)));
    let rows = client
        .query(
            "SELECT c.oid::int8, c.oid::regclass::text, c.relname::text, n.nspname::text FROM pg_class c \
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
        tables.push(Table { oid, qualified: row.get(1), name: row.get(2), schema: row.get(3), columns });
    }
    Ok(tables)
}

/// Which table a spec key (`events` or `schema.events`) names.
fn resolve<'a>(tables: &'a [Table], key: &str) -> Option<&'a Table> {
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

// ---------------------------------------------------------------------------------------------
// Generation SQL.

/// How a filled column's values relate to the row number, so references can be drawn without a lookup.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// `start + g - 1`.
    Sequence(i64),
    Other,
}

struct Filled {
    rows: u64,
    shapes: BTreeMap<String, Shape>,
}

struct Plan {
    columns: Vec<String>,
    exprs: Vec<String>,
    /// Extra FROM items (`CROSS JOIN (SELECT array_agg…) AS ref_1`).
    from: Vec<String>,
    overriding: bool,
    shapes: BTreeMap<String, Shape>,
}

fn is_integer(t: &str) -> bool {
    matches!(t, "smallint" | "integer" | "bigint")
}

/// A value for a column the spec says nothing about, by type: distinct per row, never NULL.
fn default_expr(column: &Column) -> Option<(String, Shape)> {
    let t = column.base_type.as_str();
    let base = t.split('(').next().unwrap_or(t).trim();
    let expr = match base {
        "smallint" => return Some(("(g % 32767)".into(), Shape::Other)),
        "integer" | "bigint" => return Some(("g".into(), Shape::Sequence(1))),
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
    Some((expr, Shape::Other))
}

fn generator_expr(
    spec_path: &std::path::Path,
    table: &str,
    column: &str,
    spec: &ColumnSpec,
    tables: &[Table],
    filled: &BTreeMap<i64, Filled>,
    from: &mut Vec<String>,
) -> Result<(String, Shape)> {
    let bad =
        |msg: String| Error::invalid(spec_path, Some(spec.line), format!("tables.{table}.columns.{column}: {msg}"));
    let (expr, shape) = match &spec.generator {
        Generator::Uniform { low, high } => {
            (format!("({low}::bigint + floor(random() * ({high}::numeric - {low} + 1))::bigint)"), Shape::Other)
        }
        Generator::Zipf { n, s } => {
            // Inverse CDF of the continuous power law on [1, n + 1), floored: value k has weight ≈ k^-s.
            let expr = if (*s - 1.0).abs() < 1e-9 {
                format!("least({n}, floor(power({n}::float8 + 1, random())))::bigint")
            } else {
                let e = 1.0 - s;
                format!("least({n}, floor(power(1 + random() * (power({n}::float8 + 1, {e}) - 1), 1 / {e}::float8)))::bigint")
            };
            (expr, Shape::Other)
        }
        Generator::References { table: t, column: c } => {
            let target =
                resolve(tables, t).ok_or_else(|| bad(format!("references {t}.{c}, but there is no table {t}")))?;
            if !target.columns.iter().any(|col| &col.name == c) {
                return Err(bad(format!("references {t}.{c}, but {t} has no column {c}")));
            }
            (reference_expr(target, c, filled, from).ok_or_else(|| {
                bad(format!("references {t}.{c}, but {t} gets no rows: give it `rows` in the scale spec (listed before use)"))
            })?, Shape::Other)
        }
        Generator::Timestamps { from: a, to: b } => (
            format!(
                "(timestamptz {a} + random() * (timestamptz {b} - timestamptz {a}))",
                a = quote_literal(a),
                b = quote_literal(b)
            ),
            Shape::Other,
        ),
        Generator::OneOf(values) => {
            (format!("(ARRAY[{}])[1 + floor(random() * {})::int]", values.join(", "), values.len()), Shape::Other)
        }
        Generator::Pattern(p) => {
            let parts: Vec<String> = p.split("{n}").map(quote_literal).collect();
            (format!("({})", parts.join(" || g || ")), Shape::Other)
        }
        Generator::Sequence(start) => (format!("({start}::bigint + g - 1)"), Shape::Sequence(*start)),
        Generator::Constant(v) => (v.clone(), Shape::Other),
        Generator::Sql(sql) => (format!("({sql})"), Shape::Other),
    };
    if spec.null_fraction > 0.0 {
        return Ok((format!("CASE WHEN random() < {} THEN NULL ELSE {expr} END", spec.null_fraction), Shape::Other));
    }
    Ok((expr, shape))
}

/// A value that exists in `target.column`: arithmetic when it was filled as a sequence, else a
/// random element of an array of its values (built once per statement). `None` if `target` is empty.
fn reference_expr(
    target: &Table,
    column: &str,
    filled: &BTreeMap<i64, Filled>,
    from: &mut Vec<String>,
) -> Option<String> {
    let f = filled.get(&target.oid).filter(|f| f.rows > 0)?;
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

fn plan_table(
    spec: &ScaleSpec,
    key: &str,
    table: &Table,
    tables: &[Table],
    filled: &BTreeMap<i64, Filled>,
) -> Result<Plan> {
    let tspec = &spec.tables[key];
    for name in tspec.columns.keys() {
        if !table.columns.iter().any(|c| &c.name == name) {
            let line = tspec.columns[name].line;
            return Err(Error::invalid(
                &spec.path,
                Some(line),
                format!("tables.{key}.columns.{name}: {} has no column {name}", table.qualified),
            ));
        }
    }
    let mut plan =
        Plan { columns: Vec::new(), exprs: Vec::new(), from: Vec::new(), overriding: false, shapes: BTreeMap::new() };
    for column in &table.columns {
        if column.generated {
            continue;
        }
        let (expr, shape) = if let Some(cspec) = tspec.columns.get(&column.name) {
            generator_expr(&spec.path, key, &column.name, cspec, tables, filled, &mut plan.from)?
        } else if let Some((t, c)) = &column.references {
            let target = tables.iter().find(|x| &x.qualified == t);
            match target.and_then(|target| reference_expr(target, c, filled, &mut plan.from)) {
                Some(expr) => (expr, Shape::Other),
                None if !column.not_null => continue,
                None => {
                    return Err(Error::invalid(
                        &spec.path,
                        Some(tspec.line),
                        format!(
                            "tables.{key}: column {} must reference a row of {t}, which gets no rows; give {t} rows, or give {} a generator",
                            column.name, column.name
                        ),
                    ))
                }
            }
        } else if column.has_default && !column.default_is_sequence {
            continue;
        } else if column.primary_key || column.default_is_sequence || column.not_null {
            match default_expr(column) {
                Some(x) => x,
                None if column.has_default => continue,
                None => {
                    return Err(Error::invalid(
                        &spec.path,
                        Some(tspec.line),
                        format!(
                            "tables.{key}: column {} ({}) is NOT NULL and Sluice has no default for its type; give it a generator (e.g. {{ sql = \"…\" }})",
                            column.name, column.type_name
                        ),
                    ))
                }
            }
        } else {
            match default_expr(column) {
                Some(x) => x,
                None => continue,
            }
        };
        plan.overriding |= column.identity_always;
        plan.columns.push(quote_ident(&column.name));
        plan.exprs.push(format!("({expr})::{}", column.type_name));
        let shape = if is_integer(&column.base_type) { shape } else { Shape::Other };
        plan.shapes.insert(column.name.clone(), shape);
    }
    Ok(plan)
}

/// Fill order: a table after every table it references (foreign keys and `references` generators).
fn order(spec: &ScaleSpec, tables: &[Table]) -> Result<Vec<(String, usize)>> {
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
        for c in &table.columns {
            if spec.tables[key].columns.contains_key(&c.name) {
                continue;
            }
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

fn bar(rows: u64, label: &str) -> ProgressBar {
    let bar = ProgressBar::new(rows);
    if let Ok(style) = ProgressStyle::with_template("{prefix:>24} [{bar:30}] {human_pos}/{human_len} rows {elapsed}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(label.to_string());
    bar
}

/// Truncates and fills every table in the spec, rebuilds its indexes, and ANALYZEs.
pub async fn fill(client: &Client, spec: &ScaleSpec, superuser: bool) -> Result<()> {
    let tables = load_tables(client).await?;
    let order = order(spec, &tables)?;
    let err = |what: String| move |e: tokio_postgres::Error| Error::Other(format!("{what}: {}", pg_message(&e)));
    client.batch_execute("BEGIN").await.map_err(err("cannot start the fill".into()))?;
    if superuser {
        // Foreign-key triggers off for the load: the generators only draw keys that exist.
        client.batch_execute("SET LOCAL session_replication_role = replica").await.map_err(err("fill".into()))?;
    }
    let oids: Vec<i64> = order.iter().map(|(_, i)| tables[*i].oid).collect();
    if !oids.is_empty() {
        let list: Vec<&str> = order.iter().map(|(_, i)| tables[*i].qualified.as_str()).collect();
        client.batch_execute("SAVEPOINT sluice_truncate").await.map_err(err("fill".into()))?;
        if client.batch_execute(&format!("TRUNCATE {}", list.join(", "))).await.is_err() {
            // Referenced by a table outside the spec: fill without the WAL-skipping truncate.
            client.batch_execute("ROLLBACK TO SAVEPOINT sluice_truncate").await.map_err(err("fill".into()))?;
        }
    }
    let indexes = client
        .query(
            "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid), i.indrelid::regclass::text FROM pg_index i \
             WHERE i.indrelid::int8 = ANY($1) \
               AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid) \
               AND NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid)",
            &[&oids],
        )
        .await
        .map_err(err("cannot list indexes".into()))?;
    for row in &indexes {
        let name: String = row.get(0);
        client
            .batch_execute(&format!("DROP INDEX {name}"))
            .await
            .map_err(err(format!("cannot drop index {name} for the load")))?;
    }
    let mut filled: BTreeMap<i64, Filled> = BTreeMap::new();
    for (key, index) in &order {
        let table = &tables[*index];
        let rows = spec.tables[key].rows;
        let plan = plan_table(spec, key, table, &tables, &filled)?;
        client.batch_execute("SELECT setseed(0.4242)").await.map_err(err("fill".into()))?;
        let progress = bar(rows, &table.qualified);
        let mut start = 1u64;
        while start <= rows && !plan.columns.is_empty() {
            let end = (start + CHUNK - 1).min(rows);
            let sql = format!(
                "INSERT INTO {} ({}) {}SELECT {} FROM generate_series({start}::bigint, {end}::bigint) AS s(g) {}",
                table.qualified,
                plan.columns.join(", "),
                if plan.overriding { "OVERRIDING SYSTEM VALUE " } else { "" },
                plan.exprs.join(", "),
                plan.from.join(" ")
            );
            client.batch_execute(&sql).await.map_err(|e| {
                Error::invalid(
                    &spec.path,
                    Some(spec.tables[key].line),
                    format!("filling {}: {}", table.qualified, pg_message(&e)),
                )
            })?;
            progress.set_position(end);
            start = end + 1;
        }
        if plan.columns.is_empty() && rows > 0 {
            let sql = format!("INSERT INTO {} SELECT FROM generate_series(1, {rows})", table.qualified);
            client.batch_execute(&sql).await.map_err(err(format!("filling {}", table.qualified)))?;
        }
        progress.finish_and_clear();
        // Serial and identity columns continue after the generated keys.
        for column in table.columns.iter().filter(|c| c.default_is_sequence) {
            let sql = format!(
                "SELECT setval(s, greatest((SELECT max({c}) FROM {t}), 1)::bigint) FROM pg_get_serial_sequence({tl}, {cl}) AS s WHERE s IS NOT NULL",
                c = quote_ident(&column.name),
                t = table.qualified,
                tl = quote_literal(&table.qualified),
                cl = quote_literal(&column.name)
            );
            let _ = client.batch_execute(&sql).await;
        }
        filled.insert(table.oid, Filled { rows, shapes: plan.shapes });
    }
    let spinner = ProgressBar::new_spinner();
    for row in &indexes {
        let name: String = row.get(0);
        spinner.set_message(format!("building index {name}"));
        spinner.enable_steady_tick(Duration::from_millis(120));
        let def: String = row.get(1);
        client.batch_execute(&def).await.map_err(err(format!("cannot rebuild index {name}")))?;
    }
    spinner.finish_and_clear();
    client.batch_execute("COMMIT").await.map_err(err("cannot commit the fill".into()))?;
    client.batch_execute("ANALYZE").await.map_err(err("ANALYZE".into()))?;
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
        let a = cache_key(150000, &[migration("1.sql", "CREATE TABLE t (a int)")], &spec);
        assert_eq!(a, cache_key(150000, &[migration("1.sql", "CREATE TABLE t (a int)")], &spec));
        assert_ne!(a, cache_key(150000, &[migration("1.sql", "CREATE TABLE t (a bigint)")], &spec));
        assert_ne!(a, cache_key(150000, &[migration("1.sql", "CREATE TABLE t (a int)")], &spec2));
        assert_ne!(a, cache_key(160000, &[migration("1.sql", "CREATE TABLE t (a int)")], &spec));
    }
}

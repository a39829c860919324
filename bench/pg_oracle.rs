//! PostgreSQL as the oracle of Sluice's claims (issue 37): replays a migration history statement
//! by statement on a throwaway PostgreSQL, reads `pg_locks`, `relfilenode` and the scan counters
//! after each statement, and holds them against what Sluice's findings claim (their
//! `evidence.claims`: locks, scans, rewrites, index builds and rebuilds):
//!
//! - every claim must be something PostgreSQL did: the lock mode it names is the strongest one
//!   PostgreSQL took on that table, a scanned table was read, a rewritten table and a rebuilt
//!   index got a new relfilenode, a built index exists afterwards;
//! - every write-blocking lock PostgreSQL took on a table that existed before the migration with
//!   no `lock_timeout` in force, every rewrite of such a table and every rebuild of one of its
//!   indexes, and every scan of it by an `ALTER TABLE`, must be claimed by a finding.
//!
//! Finally the schema Sluice replayed is compared with the catalog: every index and constraint
//! name, and the table it belongs to.
//!
//! Each statement runs in a transaction of its own (so its locks are its own), in a session per
//! migration (what Sluice models: settings start afresh with each migration); `SET LOCAL` runs
//! as `SET`, so it lasts for the migration as it does in the tool's transaction. Statements that
//! PostgreSQL refuses in a transaction block (`CREATE INDEX CONCURRENTLY`) run on their own and
//! are counted as not observed.
//!
//! Usage (see `bench/pg_oracle.sh`): `cargo run --release --example pg_oracle -- PROJECT_DIR`,
//! where PROJECT_DIR holds a `sluice.toml`. Exit code 1 when a claim or an observation disagrees.

use sluice::finding::Finding;
use sluice::lint::{self, final_schema};
use sluice::plan::server::{Server, ServerOptions};
use sluice::schema::is_tool_table;
use sluice::sql::ddl::Ddl;
use sluice::sql::parse::Statement;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use tokio_postgres::{Client, SimpleQueryMessage};

const DATABASE: &str = "sluice_oracle";

#[derive(Debug, Clone)]
struct Relation {
    /// As Sluice names relations: `public.` dropped.
    name: String,
    kind: char,
    filenode: i64,
    /// For an index, its table's oid.
    table: i64,
}

type Catalog = HashMap<i64, Relation>;

/// What PostgreSQL did in one statement.
#[derive(Debug, Default)]
struct Observed {
    /// Strongest mode per relation oid.
    locks: HashMap<i64, &'static str>,
    /// Relations whose scan counters moved.
    scanned: BTreeSet<i64>,
    before: Catalog,
    after: Catalog,
    lock_timeout: bool,
    /// The relations the plan of a query statement reads (`EXPLAIN`): with no rows in the
    /// tables, a subquery the plan runs per row of an empty table is never run at all.
    planned: BTreeSet<String>,
}

/// Sluice's lock modes, weakest first, as `pg_locks` spells them.
const MODES: &[(&str, &str)] = &[
    ("AccessShareLock", "ACCESS SHARE"),
    ("RowShareLock", "ROW SHARE"),
    ("RowExclusiveLock", "ROW EXCLUSIVE"),
    ("ShareUpdateExclusiveLock", "SHARE UPDATE EXCLUSIVE"),
    ("ShareLock", "SHARE"),
    ("ShareRowExclusiveLock", "SHARE ROW EXCLUSIVE"),
    ("ExclusiveLock", "EXCLUSIVE"),
    ("AccessExclusiveLock", "ACCESS EXCLUSIVE"),
];

fn strength(mode: &str) -> usize {
    MODES.iter().position(|(pg, ours)| *pg == mode || *ours == mode).unwrap_or(0)
}

fn blocks_writes(mode: &str) -> bool {
    strength(mode) >= strength("ShareLock")
}

/// One claim of a finding, read back from its evidence.
#[derive(Debug, Clone)]
struct Claim {
    rule: String,
    line: usize,
    column: usize,
    table: String,
    lock: Option<String>,
    work: Option<String>,
    index: Option<String>,
    /// Inside a DO block's IF, loop or EXCEPTION handler: it may not run.
    branch: Option<String>,
}

fn claims_of(finding: &Finding) -> Vec<Claim> {
    sluice::rules::claims::of(finding)
        .into_iter()
        .map(|c| Claim {
            rule: finding.rule.clone(),
            line: c["line"].as_u64().unwrap_or(0) as usize,
            column: c["column"].as_u64().unwrap_or(0) as usize,
            table: c["table"].as_str().unwrap_or("").to_string(),
            lock: c["lock"].as_str().map(str::to_string),
            work: c["work"].as_str().map(str::to_string),
            index: c["index"].as_str().map(str::to_string),
            branch: c["branch"].as_str().map(str::to_string),
        })
        .collect()
}

#[derive(Debug, Default)]
struct Tally {
    statements: usize,
    observed: usize,
    not_observed: Vec<String>,
    failed: Vec<String>,
    /// Replayed with aliases added to their subqueries (see `with_subquery_aliases`).
    repaired: Vec<String>,
    claims: BTreeMap<&'static str, usize>,
    confirmed: BTreeMap<&'static str, usize>,
    /// Claims PostgreSQL does not make.
    false_claims: Vec<String>,
    /// What PostgreSQL did that no finding claims.
    unreported: Vec<String>,
    /// Claims on a table Sluice could not name (an index the history never created).
    unresolved: usize,
    /// Claims of a DO block's branch that did not run on the empty database (a loop over no rows).
    branch_not_taken: usize,
    names: Vec<String>,
    names_compared: usize,
    columns_compared: usize,
    /// Columns whose type Sluice's schema leaves `unknown` (it never claims one).
    unknown_types: usize,
}

fn qualified(schema: &str, name: &str) -> String {
    if schema == "public" {
        name.to_string()
    } else {
        format!("{schema}.{name}")
    }
}

async fn rows(client: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    let messages = client.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    messages
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some((0..row.len()).map(|i| row.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect()
}

fn int(cell: &Option<String>) -> i64 {
    cell.as_deref().and_then(|s| s.parse().ok()).unwrap_or(0)
}

const CATALOG: &str = "SELECT c.oid, n.nspname, c.relname, c.relkind, c.relfilenode, coalesce(i.indrelid, 0)
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_index i ON i.indexrelid = c.oid
     WHERE c.relkind IN ('r', 'p', 'm', 'v', 'i', 'I') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
       AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'";

async fn catalog(client: &Client) -> Catalog {
    rows(client, CATALOG)
        .await
        .iter()
        .map(|r| {
            let name = qualified(r[1].as_deref().unwrap_or(""), r[2].as_deref().unwrap_or(""));
            let kind = r[3].as_deref().and_then(|k| k.chars().next()).unwrap_or('?');
            (int(&r[0]), Relation { name, kind, filenode: int(&r[4]), table: int(&r[5]) })
        })
        .collect()
}

async fn scans(client: &Client) -> HashMap<i64, i64> {
    rows(client, "SELECT relid, seq_scan + coalesce(idx_scan, 0) FROM pg_stat_xact_all_tables")
        .await
        .iter()
        .map(|r| (int(&r[0]), int(&r[1])))
        .collect()
}

async fn locks(client: &Client) -> HashMap<i64, &'static str> {
    let mut out: HashMap<i64, &'static str> = HashMap::new();
    let sql = "SELECT relation, mode FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'relation' AND granted";
    for r in rows(client, sql).await {
        let mode = r[1].as_deref().unwrap_or("");
        let Some((pg, _)) = MODES.iter().find(|(pg, _)| *pg == mode) else { continue };
        let held = out.entry(int(&r[0])).or_insert(pg);
        if strength(pg) > strength(held) {
            *held = pg;
        }
    }
    out
}

/// The text PostgreSQL runs for `statement`: `SET LOCAL` as `SET` (see the module docs).
fn runnable(statement: &Statement, text: &str) -> Option<String> {
    match &statement.ddl {
        Ddl::Begin | Ddl::Commit | Ddl::Rollback => None,
        Ddl::Set { local: true, .. } => {
            let lower = text.to_ascii_lowercase();
            let at = lower.find("local").expect("SET LOCAL says LOCAL");
            Some(format!("{}{}", &text[..at], &text[at + "local".len()..]))
        }
        _ => Some(text.to_string()),
    }
}

fn error_text(e: &tokio_postgres::Error) -> (String, String) {
    match e.as_db_error() {
        Some(db) => (db.code().code().to_string(), db.message().to_string()),
        None => (String::new(), e.to_string()),
    }
}

/// `sql` with an alias given to every subquery in FROM that has none: PostgreSQL 15 refuses them
/// (16 accepts them), and a history written for 16 would otherwise stop replaying there. Sluice
/// reports each such statement itself (`runner-rejects-migration` under `postgres_version = 15`).
fn with_subquery_aliases(sql: &str) -> Option<String> {
    use sqlparser::ast::{TableAlias, TableFactor, VisitMut, VisitorMut};
    use std::ops::ControlFlow;
    struct Alias(usize);
    impl VisitorMut for Alias {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if let TableFactor::Derived { alias: alias @ None, .. } = factor {
                self.0 += 1;
                *alias = Some(TableAlias {
                    explicit: true,
                    name: sqlparser::ast::Ident::new(format!("oracle_subquery_{}", self.0)),
                    columns: Vec::new(),
                    at: None,
                });
            }
            ControlFlow::Continue(())
        }
    }
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let mut statements = sqlparser::parser::Parser::parse_sql(&dialect, sql).ok()?;
    let mut alias = Alias(0);
    let _ = statements.visit(&mut alias);
    (alias.0 > 0).then(|| statements.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(";\n"))
}

/// Runs one statement in a transaction of its own and reads what it did; `None` when it could
/// not be observed (it ran outside a transaction block, or failed: `failure` says why).
async fn observe(client: &Client, sql: &str, explain: bool, failure: &mut Option<String>) -> Option<Observed> {
    let lock_timeout = rows(client, "SHOW lock_timeout").await[0][0].as_deref() != Some("0");
    client.batch_execute("BEGIN").await.expect("BEGIN");
    let mut planned = BTreeSet::new();
    if explain {
        client.batch_execute("SAVEPOINT plan").await.expect("SAVEPOINT");
        match client.simple_query(&format!("EXPLAIN (VERBOSE, FORMAT JSON) {sql}")).await {
            Ok(messages) => {
                for message in messages {
                    if let SimpleQueryMessage::Row(row) = message {
                        let plan: serde_json::Value =
                            serde_json::from_str(row.get(0).unwrap_or("null")).unwrap_or_default();
                        relations_in_plan(&plan, &mut planned);
                    }
                }
                client.batch_execute("RELEASE SAVEPOINT plan").await.expect("RELEASE");
            }
            Err(_) => client.batch_execute("ROLLBACK TO SAVEPOINT plan").await.expect("ROLLBACK TO"),
        }
    }
    let before = catalog(client).await;
    let scans_before = scans(client).await;
    match client.batch_execute(sql).await {
        Ok(()) => {}
        Err(e) => {
            client.batch_execute("ROLLBACK").await.expect("ROLLBACK");
            let (code, message) = error_text(&e);
            if message == "subquery in FROM must have an alias" {
                if let Some(repaired) = with_subquery_aliases(sql) {
                    *failure = Some(format!("{message} (PostgreSQL 16 accepts it; replayed with aliases added)"));
                    return Box::pin(observe(client, &repaired, explain, &mut None)).await;
                }
            }
            // 25001: cannot run inside a transaction block.
            if code == "25001" {
                if let Err(e) = client.batch_execute(sql).await {
                    *failure = Some(error_text(&e).1);
                }
            } else {
                *failure = Some(message);
            }
            return None;
        }
    }
    let held = locks(client).await;
    let after = catalog(client).await;
    let scans_after = scans(client).await;
    client.batch_execute("COMMIT").await.expect("COMMIT");
    let scanned = scans_after
        .iter()
        .filter(|(oid, n)| **n > scans_before.get(oid).copied().unwrap_or(0))
        .map(|(oid, _)| *oid)
        .collect();
    Some(Observed { locks: held, scanned, before, after, lock_timeout, planned })
}

fn relations_in_plan(plan: &serde_json::Value, out: &mut BTreeSet<String>) {
    match plan {
        serde_json::Value::Object(map) => {
            if let (Some(name), Some(schema)) = (map.get("Relation Name"), map.get("Schema")) {
                out.insert(qualified(schema.as_str().unwrap_or(""), name.as_str().unwrap_or("")));
            }
            map.values().for_each(|v| relations_in_plan(v, out));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| relations_in_plan(v, out)),
        _ => {}
    }
}

impl Observed {
    fn relation(&self, oid: i64) -> Option<&Relation> {
        self.before.get(&oid).or_else(|| self.after.get(&oid))
    }

    fn oid_of(&self, name: &str) -> Option<i64> {
        let table_kind = |r: &Relation| matches!(r.kind, 'r' | 'p' | 'm' | 'v');
        let find = |c: &Catalog| c.iter().find(|(_, r)| r.name == name && table_kind(r)).map(|(oid, _)| *oid);
        find(&self.before).or_else(|| find(&self.after))
    }

    fn index_oid(&self, catalog: &Catalog, name: &str) -> Option<i64> {
        catalog.iter().find(|(_, r)| r.name == name && matches!(r.kind, 'i' | 'I')).map(|(oid, _)| *oid)
    }

    fn rewritten(&self, oid: i64) -> bool {
        match (self.before.get(&oid), self.after.get(&oid)) {
            (Some(b), Some(a)) => b.filenode != a.filenode && b.filenode != 0,
            _ => false,
        }
    }
}

fn check_claim(claim: &Claim, seen: &Observed, where_: &str, tally: &mut Tally) {
    let kind: &'static str = match (&claim.lock, claim.work.as_deref()) {
        (Some(_), _) => "lock",
        (_, Some("scan")) => "scan",
        (_, Some("rewrite")) => "rewrite",
        (_, Some("build")) => "build",
        (_, Some("rebuild")) => "rebuild",
        _ => "other",
    };
    if claim.table.starts_with("the table of index ") {
        tally.unresolved += 1;
        return;
    }
    *tally.claims.entry(kind).or_default() += 1;
    let Some(oid) = seen.oid_of(&claim.table) else {
        tally
            .false_claims
            .push(format!("{where_}: {} claims {kind} on {}, which PostgreSQL does not have", claim.rule, claim.table));
        return;
    };
    let confirmed = match kind {
        "lock" => {
            let claimed = claim.lock.as_deref().unwrap_or("");
            let took = seen.locks.get(&oid).copied();
            let ok = took.is_some_and(|t| strength(t) == strength(claimed));
            if !ok {
                tally.false_claims.push(format!(
                    "{where_}: {} claims {claimed} on {}, PostgreSQL took {}",
                    claim.rule,
                    claim.table,
                    took.map_or("no lock", |t| MODES[strength(t)].1)
                ));
            }
            ok
        }
        "scan" => {
            let ok = seen.scanned.contains(&oid) || seen.rewritten(oid) || seen.planned.contains(&claim.table);
            if !ok {
                tally
                    .false_claims
                    .push(format!("{where_}: {} claims a scan of {}, PostgreSQL read none", claim.rule, claim.table));
            }
            ok
        }
        "rewrite" => {
            let ok = seen.rewritten(oid);
            if !ok {
                tally.false_claims.push(format!(
                    "{where_}: {} claims a rewrite of {}, its relfilenode did not change",
                    claim.rule, claim.table
                ));
            }
            ok
        }
        "build" | "rebuild" => {
            let ok = match &claim.index {
                Some(index) => {
                    let qualified = sluice::sql::names::beside(&claim.table, index);
                    let after = seen.index_oid(&seen.after, &qualified);
                    let before = seen.index_oid(&seen.before, &qualified);
                    match (kind, before, after) {
                        ("build", before, Some(a)) => before != Some(a),
                        // A rebuilt index is a new file; ALTER COLUMN … TYPE gives an index it
                        // keeps a new oid over the same file.
                        ("rebuild", Some(b), Some(a)) => seen.before[&b].filenode != seen.after[&a].filenode,
                        _ => false,
                    }
                }
                None => seen.after.values().any(|r| matches!(r.kind, 'i' | 'I') && r.table == oid),
            };
            if !ok {
                tally.false_claims.push(format!(
                    "{where_}: {} claims {kind} of index {} on {}, PostgreSQL did not",
                    claim.rule,
                    claim.index.as_deref().unwrap_or("?"),
                    claim.table
                ));
            }
            ok
        }
        _ => false,
    };
    if confirmed {
        *tally.confirmed.entry(kind).or_default() += 1;
    }
}

/// Whether PostgreSQL did anything at all that `claim`'s branch would have done: a loop over an
/// empty table never runs its body.
fn branch_ran(claim: &Claim, seen: &Observed) -> bool {
    claim.branch.is_none()
        || !seen.locks.is_empty() && seen.oid_of(&claim.table).is_some_and(|oid| seen.locks.contains_key(&oid))
}

/// What PostgreSQL did to relations that existed before the migration, that no claim covers.
fn check_unreported(
    claims: &[&Claim],
    seen: &Observed,
    existing: &BTreeSet<i64>,
    statement: &Statement,
    where_: &str,
    tally: &mut Tally,
) {
    let claimed = |table: &str, pred: &dyn Fn(&Claim) -> bool| claims.iter().any(|c| c.table == table && pred(c));
    for (oid, mode) in &seen.locks {
        let Some(relation) = seen.relation(*oid) else { continue };
        // The migration tool's own bookkeeping table blocks no application query.
        if !existing.contains(oid) || !matches!(relation.kind, 'r' | 'p' | 'm' | 'v') || is_tool_table(&relation.name) {
            continue;
        }
        if blocks_writes(mode)
            && !seen.lock_timeout
            && !claimed(&relation.name, &|c| c.lock.as_deref().is_some_and(|l| strength(l) == strength(mode)))
        {
            tally.unreported.push(format!(
                "{where_}: PostgreSQL took {} on {} with no lock_timeout; no finding claims it",
                MODES[strength(mode)].1,
                relation.name
            ));
        }
    }
    for (oid, relation) in &seen.before {
        if !existing.contains(oid) || relation.filenode == 0 {
            continue;
        }
        // ALTER COLUMN … TYPE re-creates an index under a new oid, over its old file when it
        // keeps it: only a new relfilenode is a rebuild (or a rewrite).
        let now = seen.after.get(oid).or_else(|| {
            let created = |(new, r): &(&i64, &Relation)| {
                !seen.before.contains_key(new)
                    && r.name == relation.name
                    && r.kind == relation.kind
                    && r.table == relation.table
            };
            seen.after.iter().find(created).map(|(_, r)| r)
        });
        let Some(now) = now else { continue };
        if now.filenode == relation.filenode {
            continue;
        }
        match relation.kind {
            'r' | 'm' if !claimed(&relation.name, &|c| c.work.as_deref() == Some("rewrite")) => {
                tally.unreported.push(format!("{where_}: PostgreSQL rewrote {}; no finding claims it", relation.name))
            }
            'i' => {
                let Some(table) = seen.relation(relation.table) else { continue };
                let index = sluice::sql::names::split(&relation.name).1;
                let covered = claimed(&table.name, &|c| {
                    c.work.as_deref() == Some("rewrite")
                        || (matches!(c.work.as_deref(), Some("rebuild" | "build"))
                            && c.index.as_deref().is_none_or(|i| i == index))
                });
                if !covered {
                    tally.unreported.push(format!(
                        "{where_}: PostgreSQL rebuilt index {} on {}; no finding claims it",
                        relation.name, table.name
                    ));
                }
            }
            _ => {}
        }
    }
    if matches!(statement.ddl, Ddl::AlterTable { .. }) {
        for oid in &seen.scanned {
            let Some(relation) = seen.relation(*oid) else { continue };
            if !existing.contains(oid) || seen.rewritten(*oid) {
                continue;
            }
            if !claimed(&relation.name, &|c| c.work.is_some())
                && !claims.iter().any(|c| c.work.as_deref() == Some("scan"))
            {
                tally.unreported.push(format!("{where_}: PostgreSQL scanned {}; no finding claims it", relation.name));
            }
        }
    }
}

/// A user type Sluice names as written and PostgreSQL qualified or quoted (`public.mode`).
fn same_enum_or_domain(ours: &str, theirs: &str) -> bool {
    let strip = |t: &str| t.trim_start_matches("public.").trim_matches('"').to_string();
    strip(ours) == strip(theirs)
}

/// The index and constraint names of the replayed schema against the catalog's.
async fn compare_names(client: &Client, sources: &lint::Sources, tally: &mut Tally) {
    let model = final_schema(sources);
    let mut ours: BTreeSet<(String, String)> = BTreeSet::new();
    for index in model.indexes.values() {
        ours.insert((format!("index {}", index.name), index.table.clone()));
    }
    for table in model.tables.values() {
        for c in &table.constraints {
            ours.insert((format!("constraint {}", c.name), table.name.clone()));
        }
    }
    let mut theirs: BTreeSet<(String, String)> = BTreeSet::new();
    let indexes = "SELECT n.nspname, c.relname, tn.nspname, t.relname FROM pg_index i
        JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace tn ON tn.oid = t.relnamespace
        WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%'";
    for r in rows(client, indexes).await {
        let name = qualified(r[0].as_deref().unwrap_or(""), r[1].as_deref().unwrap_or(""));
        if is_tool_table(&qualified(r[2].as_deref().unwrap_or(""), r[3].as_deref().unwrap_or(""))) {
            continue;
        }
        theirs
            .insert((format!("index {name}"), qualified(r[2].as_deref().unwrap_or(""), r[3].as_deref().unwrap_or(""))));
    }
    let constraints = "SELECT co.conname, n.nspname, t.relname FROM pg_constraint co
        JOIN pg_class t ON t.oid = co.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE co.contype IN ('p', 'u', 'f', 'c', 'x') AND n.nspname NOT IN ('pg_catalog', 'information_schema')";
    for r in rows(client, constraints).await {
        let table = qualified(r[1].as_deref().unwrap_or(""), r[2].as_deref().unwrap_or(""));
        if is_tool_table(&table) {
            continue;
        }
        theirs.insert((format!("constraint {}", r[0].as_deref().unwrap_or("")), table));
    }
    tally.names_compared = theirs.len();
    // Column types, compared in a canonical spelling (`int` is `integer`).
    let canonical = |t: &str| {
        let t = sluice::sql::types::parse_type(t);
        format!("{}{:?}{}", t.base, t.modifiers, if t.array { "[]" } else { "" })
    };
    let columns = "SELECT n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p', 'm') AND a.attnum > 0 AND NOT a.attisdropped
          AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%'";
    for r in rows(client, columns).await {
        let table = qualified(r[0].as_deref().unwrap_or(""), r[1].as_deref().unwrap_or(""));
        if is_tool_table(&table) {
            continue;
        }
        let column = r[2].clone().unwrap_or_default();
        let theirs = r[3].clone().unwrap_or_default();
        tally.columns_compared += 1;
        let ours = model.table(&table).and_then(|t| t.column(&column)).map(|c| c.data_type.clone());
        match ours {
            None => tally.names.push(format!("PostgreSQL has column {table}.{column}; Sluice's schema does not")),
            Some(t) if t == sluice::schema::UNKNOWN_TYPE => tally.unknown_types += 1,
            Some(t) if canonical(&t) != canonical(&theirs) && !same_enum_or_domain(&t, &theirs) => {
                tally.names.push(format!("column {table}.{column} is {theirs} on PostgreSQL, {t} in Sluice's schema"))
            }
            Some(_) => {}
        }
    }
    for (name, table) in theirs.difference(&ours) {
        tally.names.push(format!("PostgreSQL has {name} on {table}; Sluice's schema does not"));
    }
    for (name, table) in ours.difference(&theirs) {
        tally.names.push(format!("Sluice's schema has {name} on {table}; PostgreSQL does not"));
    }
}

fn main() {
    let project = PathBuf::from(std::env::args().nth(1).expect("usage: pg_oracle PROJECT_DIR"));
    let project = std::fs::canonicalize(&project).expect("the project directory exists");
    let loaded = sluice::config::load(None, &project, &sluice::lint::rule_level_problem).expect("sluice.toml");
    let (sources, settings) = lint::load::load(&loaded, &project, &[]).expect("the history loads");
    let report = lint::lint(&sources, &settings, &|_| true);
    let mut by_file: HashMap<&str, Vec<Claim>> = HashMap::new();
    for finding in &report.findings {
        by_file.entry(finding.file.as_str()).or_default().extend(claims_of(finding));
    }

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let tally = runtime.block_on(async {
        let mut server = Server::start(&ServerOptions { no_cache: true, ..ServerOptions::default() })
            .await
            .expect("a throwaway PostgreSQL starts");
        server.create_database(DATABASE, None).await.expect("create the database");
        // What the migration tool creates before the first migration, which a history may use.
        if sources.tool.starts_with("Migration tool: diesel") {
            let client = server.connect(DATABASE).await.expect("connect");
            client
                .batch_execute(
                    "CREATE TABLE __diesel_schema_migrations (version varchar(50) PRIMARY KEY NOT NULL, \
                     run_on timestamp NOT NULL DEFAULT current_timestamp)",
                )
                .await
                .expect("diesel's table");
        }
        let mut tally = Tally::default();
        for source in &sources.migrations {
            let parsed = source.parse();
            let file = &parsed.up;
            let claims = by_file.get(source.display.as_str()).map(Vec::as_slice).unwrap_or(&[]);
            let client = server.connect(DATABASE).await.expect("connect");
            let existing: BTreeSet<i64> = catalog(&client).await.into_keys().collect();
            for statement in &file.parsed.statements {
                let text = file.parsed.statement_text(statement);
                let Some(sql) = runnable(statement, text) else { continue };
                tally.statements += 1;
                let span = &statement.span;
                let words: Vec<&str> = text.split_whitespace().take(8).collect();
                let where_ = format!("{}:{}:{} ({} …)", source.display, span.line, span.column, words.join(" "));
                let inside = |c: &&Claim| {
                    (c.line, c.column) >= (span.line, span.column)
                        && (c.line, c.column) <= (span.end_line, span.end_column)
                };
                let mine: Vec<&Claim> = claims.iter().filter(inside).collect();
                let explain = matches!(statement.ddl, Ddl::Insert { .. } | Ddl::CreateTable { from_query: true, .. })
                    && mine.iter().any(|c| c.work.as_deref() == Some("scan"));
                let mut failure = None;
                let Some(seen) = observe(&client, &sql, explain, &mut failure).await else {
                    match failure {
                        Some(why) => tally.failed.push(format!("{where_}: {why}")),
                        None => tally.not_observed.push(where_),
                    }
                    continue;
                };
                tally.observed += 1;
                if let Some(why) = failure {
                    tally.repaired.push(format!("{where_}: {why}"));
                }
                for claim in &mine {
                    if branch_ran(claim, &seen) {
                        check_claim(claim, &seen, &where_, &mut tally);
                    } else {
                        tally.branch_not_taken += 1;
                    }
                }
                check_unreported(&mine, &seen, &existing, statement, &where_, &mut tally);
            }
        }
        let client = server.connect(DATABASE).await.expect("connect");
        compare_names(&client, &sources, &mut tally).await;
        drop(client);
        server.shutdown(false).await.expect("shutdown");
        tally
    });

    println!("history: {}", project.display());
    println!(
        "statements: {} run, {} observed, {} outside a transaction block (not observed), {} failed on PostgreSQL",
        tally.statements,
        tally.observed,
        tally.not_observed.len(),
        tally.failed.len()
    );
    for (kind, n) in &tally.claims {
        println!("  {kind} claims: {n}, confirmed by PostgreSQL: {}", tally.confirmed.get(kind).copied().unwrap_or(0));
    }
    println!("  claims on the table of an index the history never created (not checked): {}", tally.unresolved);
    println!(
        "  claims in a DO block's branch that did not run on the empty database (not checked): {}",
        tally.branch_not_taken
    );
    println!("claims PostgreSQL does not make: {}", tally.false_claims.len());
    for line in &tally.false_claims {
        println!("  {line}");
    }
    println!("what PostgreSQL did that no finding claims: {}", tally.unreported.len());
    for line in &tally.unreported {
        println!("  {line}");
    }
    println!(
        "index and constraint names, column types: {} names and {} columns in the catalog ({} of unknown type in Sluice's schema), {} differences",
        tally.names_compared,
        tally.columns_compared,
        tally.unknown_types,
        tally.names.len()
    );
    for line in &tally.names {
        println!("  {line}");
    }
    for line in &tally.repaired {
        println!("repaired: {line}");
    }
    for line in &tally.failed {
        println!("failed: {line}");
    }
    let disagree = !tally.false_claims.is_empty() || !tally.unreported.is_empty() || !tally.names.is_empty();
    std::process::exit(if disagree { 1 } else { 0 });
}

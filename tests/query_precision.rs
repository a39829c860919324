//! The query rules against PostgreSQL 15's own plans (an ephemeral server Sluice starts): for
//! each query, what Sluice says (`function-on-indexed-column`, `drop-index-in-use`) and whether
//! PostgreSQL can search the index for the predicate. The planner is asked with sequential
//! scans disabled, so an index it can use for a predicate shows in an `Index Cond`; one it
//! cannot use leaves the predicate in a `Filter` (or a Seq Scan).

mod plan_support;

use plan_support::require_postgres;
use sluice::finding::{Finding, Severity};
use sluice::lint::{lint, MigrationSource, Settings, Sources};
use sluice::plan::server::{Server, ServerOptions};
use sluice::queries::{ParsedQuery, Query, Source};
use sluice::schema::migrations::Migration;
use std::path::PathBuf;

/// How pg_dump (and Rails' schema.rb) write an expression index on a varchar column:
/// `upper((name)::text)`.
const SCHEMA: &str = "
CREATE TABLE users (id bigint PRIMARY KEY, name varchar(100), code char(8), email text, tenant_id uuid,
    org_id int, kind text, created_at timestamptz);
CREATE INDEX users_name ON users (name);
CREATE INDEX users_upper_name ON users USING btree (upper((name)::text));
CREATE INDEX users_tenant ON users (tenant_id);
CREATE INDEX users_code ON users (code);
CREATE INDEX users_email ON users (email);
CREATE INDEX users_org_kind_created ON users (org_id, kind, created_at);
";

/// What the planner is kept from, so that an index it can use shows in the plan.
enum Planner {
    /// Sequential scans disabled.
    NoSeqScan,
    /// Sequential scans, hash and merge joins disabled: an index a join can search shows in a
    /// nested loop's inner scan.
    NestedLoops,
}

/// An ephemeral PostgreSQL server with database `name`, `schema` loaded, and a client whose
/// planner is kept as `planner` says.
async fn throwaway(name: &str, schema: &str, planner: Planner) -> (Server, tokio_postgres::Client) {
    let mut server =
        Server::start(&ServerOptions { no_cache: true, ..ServerOptions::default() }).await.expect("server");
    server.create_database(name, None).await.expect("create");
    let client = server.connect(name).await.expect("connect");
    client.batch_execute(schema).await.expect("schema");
    let settings = match planner {
        Planner::NoSeqScan => "SET enable_seqscan = off",
        Planner::NestedLoops => "SET enable_seqscan = off; SET enable_hashjoin = off; SET enable_mergejoin = off",
    };
    client.batch_execute(settings).await.expect("set");
    (server, client)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

/// What Sluice reports on `query` (a query file) after `migrations`, for the query rules.
fn sluice(migrations: &[&str], query: &str) -> Vec<Finding> {
    sluice_as(migrations, query, &Settings::default(), false)
}

/// [`sluice`] with `settings`, each migration in a transaction of its runner's when `in_transaction`.
fn sluice_as(migrations: &[&str], query: &str, settings: &Settings, in_transaction: bool) -> Vec<Finding> {
    let migrations = migrations
        .iter()
        .enumerate()
        .map(|(i, sql)| {
            let name = format!("{:03}.sql", i + 1);
            let migration = Migration {
                version: name.clone(),
                name: name.clone(),
                up: PathBuf::from(&name),
                ..Migration::default()
            };
            MigrationSource::whole_text(migration, name, sql, in_transaction)
        })
        .collect();
    let queries = vec![ParsedQuery::parse(Query::whole_file("queries/q.sql", query, Source::QueryFile))];
    let sources = Sources { migrations, queries, ..Sources::default() };
    lint(&sources, settings, &|_| true)
        .findings
        .into_iter()
        .filter(|f| f.rule == "function-on-indexed-column" || f.rule == "drop-index-in-use")
        .collect()
}

/// The `Index Cond`s of every index scan in the plan PostgreSQL makes for `query` with
/// sequential scans disabled, as (index, condition).
async fn index_conditions(client: &tokio_postgres::Client, query: &str) -> Vec<(String, String)> {
    let messages = client.simple_query(&format!("EXPLAIN (FORMAT JSON) {query}")).await.expect("explain");
    let text = messages
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
        .expect("a plan");
    let plan: serde_json::Value = serde_json::from_str(&text).expect("json");
    let mut out = Vec::new();
    let mut pending = vec![&plan[0]["Plan"]];
    while let Some(node) = pending.pop() {
        if let (Some(index), Some(cond)) = (node["Index Name"].as_str(), node["Index Cond"].as_str()) {
            out.push((index.to_string(), cond.to_string()));
        }
        pending.extend(node["Plans"].as_array().into_iter().flatten());
    }
    out
}

/// Whether PostgreSQL searches `index` with a condition that mentions `what`.
async fn searches(client: &tokio_postgres::Client, query: &str, index: &str, what: &str) -> bool {
    index_conditions(client, query).await.iter().any(|(i, cond)| i == index && cond.contains(what))
}

fn errors(found: &[Finding]) -> Vec<&Finding> {
    found.iter().filter(|f| f.severity == Severity::Error).collect()
}

#[test]
fn query_rules_agree_with_postgresql_plans() {
    require_postgres();
    runtime().block_on(async {
        let (server, client) = throwaway("sluice_test_precision", SCHEMA, Planner::NoSeqScan).await;
        let indexdef: String = client
            .query_one("SELECT pg_get_indexdef('users_upper_name'::regclass)", &[])
            .await
            .expect("indexdef")
            .get(0);
        assert!(indexdef.ends_with("USING btree (upper((name)::text))"), "{indexdef}");

        // 1. The expression index written `upper((name)::text)` serves `upper(name)`.
        let query = "SELECT id FROM users WHERE upper(name) = 'ADA'";
        assert!(searches(&client, query, "users_upper_name", "upper((name)::text)").await);
        assert!(sluice(&[SCHEMA], query).is_empty(), "{:#?}", sluice(&[SCHEMA], query));
        // … and dropping it while the query needs it is `drop-index-in-use`.
        let dropped = sluice(&[SCHEMA, "DROP INDEX users_upper_name;"], query);
        assert!(dropped.iter().any(|f| f.rule == "drop-index-in-use" && f.file == "002.sql"), "{dropped:#?}");
        client.batch_execute("BEGIN; DROP INDEX users_upper_name").await.expect("drop");
        assert!(index_conditions(&client, query).await.is_empty(), "no index serves it once dropped");
        client.batch_execute("ROLLBACK").await.expect("rollback");

        // 2. A cast to the column's own type, or varchar ↔ text, leaves the column as it is.
        for (query, index, cond) in [
            (
                "SELECT id FROM users WHERE tenant_id::uuid = '6f1c1fb7-1c52-4a45-94a9-6cd9a7d0d001'",
                "users_tenant",
                "tenant_id =",
            ),
            ("SELECT id FROM users WHERE name::text = 'ada'", "users_name", "(name)::text ="),
            ("SELECT id FROM users WHERE CAST(name AS varchar) = 'ada'", "users_name", "(name)::text ="),
            ("SELECT id FROM users WHERE code::bpchar = 'c1'", "users_code", "(code)::bpchar ="),
            ("SELECT id FROM users WHERE id::bigint = 5", "users_pkey", "id ="),
        ] {
            assert!(searches(&client, query, index, cond).await, "PostgreSQL: {query}");
            assert!(sluice(&[SCHEMA], query).is_empty(), "{query}: {:#?}", sluice(&[SCHEMA], query));
        }
        // A cast that computes a new value defeats the index: PostgreSQL and Sluice agree.
        for (query, index) in [
            ("SELECT id FROM users WHERE id::int = 5", "users_pkey"),
            ("SELECT id FROM users WHERE name::varchar(50) = 'ada'", "users_name"),
            ("SELECT id FROM users WHERE tenant_id::text = 'x'", "users_tenant"),
            ("SELECT id FROM users WHERE code::text = 'c1'", "users_code"),
        ] {
            assert!(index_conditions(&client, query).await.is_empty(), "PostgreSQL: {query}");
            let found = sluice(&[SCHEMA], query);
            assert!(errors(&found).iter().any(|f| f.message.contains(index)), "{query}: {found:#?}");
        }

        // 3. A function on a non-leading key: the leading columns constrained, the wrap is
        // what keeps the third key out of the index search …
        let constrained =
            "SELECT id FROM users WHERE org_id = 3 AND kind = 'k' AND date_trunc('day', created_at) = '2024-01-01'";
        let bare = "SELECT id FROM users WHERE org_id = 3 AND kind = 'k' AND created_at = '2024-01-01'";
        assert!(!searches(&client, constrained, "users_org_kind_created", "created_at").await);
        assert!(searches(&client, bare, "users_org_kind_created", "created_at =").await);
        let found = sluice(&[SCHEMA], constrained);
        assert_eq!(errors(&found).len(), 1, "{found:#?}");
        assert!(found[0].message.contains("users_org_kind_created"), "{}", found[0].message);
        // … but with the leading column free, the index could not be searched for the bare
        // column either: an Index Cond on created_at alone, and no bound on org_id, reads the
        // whole index (PostgreSQL's documentation, 11.3 Multicolumn Indexes). Not an error:
        // the finding says what keeps the index from serving.
        let free = "SELECT id FROM users WHERE date_trunc('day', created_at) = '2024-01-01'";
        let bare = "SELECT id FROM users WHERE created_at = '2024-01-01'";
        assert!(searches(&client, bare, "users_org_kind_created", "created_at =").await);
        let conditions = index_conditions(&client, bare).await;
        assert!(
            conditions.iter().all(|(i, c)| i != "users_org_kind_created" || !c.contains("org_id")),
            "{conditions:?}"
        );
        let found = sluice(&[SCHEMA], free);
        assert!(errors(&found).is_empty(), "{found:#?}");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].message.contains("does not constrain its leading column(s) org_id, kind"),
            "{}",
            found[0].message
        );

        // 4. The statement inside PREPARE and EXPLAIN is the one analysed.
        let inner = "SELECT id FROM users WHERE lower(email) = 'ada'";
        assert!(index_conditions(&client, inner).await.is_empty());
        for query in [format!("PREPARE by_email AS {inner}"), format!("EXPLAIN {inner}")] {
            let found = sluice(&[SCHEMA], &query);
            assert!(errors(&found).iter().any(|f| f.message.contains("users_email")), "{query}: {found:#?}");
        }

        // 5. A comparison within one row (nakama's `edge_count + 1 <= max_count`) bounds no
        // search: an index on the expression is not searched for it, nor is the bare column's.
        let own_row = "SELECT id FROM users WHERE org_id + 1 <= id";
        client.batch_execute("BEGIN; CREATE INDEX users_org_plus_one ON users ((org_id + 1))").await.expect("index");
        let conditions = index_conditions(&client, own_row).await;
        assert!(conditions.iter().all(|(_, c)| !c.contains("org_id")), "{conditions:?}");
        let bare = index_conditions(&client, "SELECT id FROM users WHERE org_id <= id - 1").await;
        assert!(bare.iter().all(|(_, c)| !c.contains("org_id")), "{bare:?}");
        client.batch_execute("ROLLBACK").await.expect("rollback");
        assert!(sluice(&[SCHEMA], own_row).is_empty(), "{:#?}", sluice(&[SCHEMA], own_row));
        // Against another table's column it is a join a nested loop can probe the index with.
        let joined = "SELECT u.id FROM users u JOIN users v ON u.org_id + 1 = v.id WHERE v.id = 3";
        assert_eq!(errors(&sluice(&[SCHEMA], joined)).len(), 1, "{:#?}", sluice(&[SCHEMA], joined));

        drop(client);
        server.shutdown(false).await.expect("shutdown");
    });
}

/// Runs, as hatchet's and listmonk's tables hold them: timestamptz and timestamp columns, an
/// enum, an index led by a tenant.
const RUNS: &str = "
CREATE TYPE run_state AS ENUM ('on', 'off');
CREATE TABLE runs (id bigint PRIMARY KEY, tenant_id uuid, inserted_at timestamptz, local_at timestamp,
    state run_state, email text, heartbeat_at timestamptz);
CREATE INDEX runs_inserted ON runs (inserted_at);
CREATE INDEX runs_local ON runs (local_at);
CREATE INDEX runs_state ON runs (state);
CREATE INDEX runs_email ON runs (email);
CREATE INDEX runs_tenant_heartbeat ON runs (tenant_id, heartbeat_at);
";

fn fact<'f>(finding: &'f Finding, name: &str) -> Option<&'f str> {
    finding.facts.iter().find(|f| f.name == name).map(|f| f.value.as_str())
}

/// The `CREATE INDEX …;` a help suggests, if it suggests one.
fn suggested_index(finding: &Finding) -> Option<String> {
    let at = finding.help.find("CREATE INDEX")?;
    let end = finding.help[at..].find(';').map(|e| at + e + 1).unwrap_or(finding.help.len());
    Some(finding.help[at..end].to_string())
}

#[test]
fn optional_filters_and_expression_indexes_agree_with_postgresql() {
    require_postgres();
    runtime().block_on(async {
        let (server, client) = throwaway("sluice_test_optional", RUNS, Planner::NoSeqScan).await;

        // 1. An optional filter, `$1 IS NULL OR …`. Planned for the parameter's value (a custom
        // plan: every unnamed statement, and a prepared one while custom plans cost less),
        // PostgreSQL folds the test away: the bare column is an Index Cond, the wrapped one is
        // not. A generic plan searches no index for the filter, wrapped or bare.
        let wrapped = "SELECT id FROM runs WHERE ($1::text IS NULL OR lower(email) = $1)";
        let bare = "SELECT id FROM runs WHERE ($1::text IS NULL OR email = $1)";
        client
            .batch_execute(&format!("PREPARE wrapped(text) AS {wrapped}; PREPARE bare(text) AS {bare};"))
            .await
            .expect("prepare");
        client.batch_execute("SET plan_cache_mode = force_custom_plan").await.expect("custom");
        assert!(searches(&client, "EXECUTE bare('ada')", "runs_email", "email =").await);
        assert!(index_conditions(&client, "EXECUTE wrapped('ada')").await.is_empty());
        client.batch_execute("SET plan_cache_mode = force_generic_plan").await.expect("generic");
        assert!(index_conditions(&client, "EXECUTE bare('ada')").await.is_empty());
        assert!(index_conditions(&client, "EXECUTE wrapped('ada')").await.is_empty());
        client.batch_execute("SET plan_cache_mode = force_custom_plan").await.expect("custom");
        // Sluice: an error (the custom plan is PostgreSQL's usual one), which says the filter is optional …
        let found = sluice(&[RUNS], wrapped);
        assert_eq!(errors(&found).len(), 1, "{found:#?}");
        let finding = errors(&found)[0];
        assert!(finding.message.contains("runs_email"), "{}", finding.message);
        assert!(finding.message.contains("the filter is optional, `$1::TEXT IS NULL OR …`"), "{}", finding.message);
        assert!(finding.message.contains("a generic plan uses no index"), "{}", finding.message);
        assert_eq!(fact(finding, "optional filter"), Some("$1::TEXT IS NULL"));
        // … and the expression index it suggests is one PostgreSQL creates and then uses.
        let create = suggested_index(finding).expect("an expression index suggested");
        client.batch_execute(&create).await.unwrap_or_else(|e| panic!("{create}: {e}"));
        assert!(searches(&client, "EXECUTE wrapped('ada')", "runs_lower_idx", "lower(email) =").await);
        assert!(sluice(&[RUNS, &create], wrapped).is_empty());
        assert!(sluice(&[RUNS], bare).is_empty());

        // hatchet's ListWorkers: a status computed with now() behind an optional filter. In a
        // custom plan the CASE keeps heartbeat_at out of the index search the bare comparison
        // gets; no expression index can hold now().
        let case = "SELECT id FROM runs WHERE tenant_id = $1 AND ($2::text[] IS NULL OR CASE WHEN heartbeat_at IS NULL \
                    OR heartbeat_at <= now() - interval '5 seconds' THEN 'INACTIVE' ELSE 'ACTIVE' END = ANY($2::text[]))";
        let rewritten = "SELECT id FROM runs WHERE tenant_id = $1 AND ($2::text[] IS NULL OR heartbeat_at > now() - interval '5 seconds')";
        client
            .batch_execute(&format!("PREPARE by_case(uuid, text[]) AS {case}; PREPARE by_bound(uuid, text[]) AS {rewritten};"))
            .await
            .expect("prepare");
        let args = "('6f1c1fb7-1c52-4a45-94a9-6cd9a7d0d001', ARRAY['ACTIVE'])";
        assert!(!searches(&client, &format!("EXECUTE by_case{args}"), "runs_tenant_heartbeat", "heartbeat_at").await);
        assert!(searches(&client, &format!("EXECUTE by_bound{args}"), "runs_tenant_heartbeat", "heartbeat_at >").await);
        let found = sluice(&[RUNS], case);
        let on_heartbeat: Vec<&Finding> =
            errors(&found).into_iter().filter(|f| fact(f, "column") == Some("runs.heartbeat_at")).collect();
        assert_eq!(on_heartbeat.len(), 1, "{found:#?}");
        assert!(on_heartbeat[0].message.contains("the filter is optional"), "{}", on_heartbeat[0].message);
        assert!(suggested_index(on_heartbeat[0]).is_none(), "{}", on_heartbeat[0].help);
        assert!(on_heartbeat[0].help.contains("now()"), "{}", on_heartbeat[0].help);
        let expression = fact(on_heartbeat[0], "expression").expect("expression");
        let refused = client.batch_execute(&format!("CREATE INDEX ON runs (({expression}))")).await;
        assert!(format!("{:?}", refused.expect_err(expression)).contains("must be marked IMMUTABLE"));

        // 2. Never an index PostgreSQL refuses. Each expression: PostgreSQL's verdict on the
        // index, and Sluice's help — the index when PostgreSQL takes it (and then plans with it),
        // the bare column against converted bounds when it refuses.
        for (query, fixed) in [
            (
                "SELECT id FROM runs WHERE inserted_at::date = '2024-01-01'",
                "SELECT id FROM runs WHERE inserted_at >= '2024-01-01' AND inserted_at < '2024-01-02'",
            ),
            ("SELECT id FROM runs WHERE state::text = 'on'", "SELECT id FROM runs WHERE state = 'on'"),
            (
                "SELECT id FROM runs WHERE date_trunc('day', inserted_at) = '2024-01-01'",
                "SELECT id FROM runs WHERE inserted_at >= '2024-01-01' AND inserted_at < '2024-01-02'",
            ),
            (
                "SELECT id FROM runs WHERE inserted_at + interval '1 day' > '2024-01-01'",
                "SELECT id FROM runs WHERE inserted_at > timestamptz '2024-01-01' - interval '1 day'",
            ),
        ] {
            let found = sluice(&[RUNS], query);
            assert_eq!(errors(&found).len(), 1, "{query}: {found:#?}");
            let finding = errors(&found)[0];
            assert!(suggested_index(finding).is_none(), "{query}: {}", finding.help);
            assert!(finding.help.contains("PostgreSQL accepts only IMMUTABLE index expressions"), "{}", finding.help);
            let expression = fact(finding, "expression").expect("expression");
            let refused = client.batch_execute(&format!("CREATE INDEX ON runs (({expression}))")).await;
            let error = format!("{:?}", refused.expect_err(expression));
            assert!(error.contains("must be marked IMMUTABLE"), "{expression}: {error}");
            // The fix the help gives: the bare column, searched by its index.
            let column = fact(finding, "column").expect("column").trim_start_matches("runs.").to_string();
            let conditions = index_conditions(&client, fixed).await;
            assert!(conditions.iter().any(|(_, c)| c.contains(&column)), "{fixed}: {conditions:?}");
            assert!(sluice(&[RUNS], fixed).is_empty(), "{fixed}");
        }
        for query in [
            "SELECT id FROM runs WHERE local_at::date = '2024-01-01'",
            "SELECT id FROM runs WHERE date_trunc('day', local_at) = '2024-01-01'",
            "SELECT id FROM runs WHERE (inserted_at AT TIME ZONE 'UTC')::date = '2024-01-01'",
            "SELECT id FROM runs WHERE state::text || email = 'x'",
        ] {
            let found = sluice(&[RUNS], query);
            let Some(finding) = errors(&found).into_iter().next() else { panic!("{query}: {found:#?}") };
            match suggested_index(finding) {
                Some(create) => {
                    client.batch_execute(&create).await.unwrap_or_else(|e| panic!("{create}: {e}"));
                    let conditions = index_conditions(&client, query).await;
                    assert!(!conditions.is_empty(), "{create} serves {query}: {conditions:?}");
                    assert!(sluice(&[RUNS, &create], query).is_empty(), "{create}");
                }
                None => {
                    let expression = fact(finding, "expression").expect("expression");
                    let refused = client.batch_execute(&format!("CREATE INDEX ON runs (({expression}))")).await;
                    assert!(refused.is_err(), "{query}: PostgreSQL takes {expression}, Sluice says {}", finding.help);
                }
            }
        }

        drop(client);
        server.shutdown(false).await.expect("shutdown");
    });
}

/// crates.io's tables as its history had them (rust-lang/crates.io `migrations/`), cut to the
/// columns its queries compare.
/// langfuse's datasets before its composite key.
const DATASETS: &str = "CREATE TABLE datasets (id text NOT NULL, project_id text NOT NULL, name text);
ALTER TABLE datasets ADD CONSTRAINT datasets_pkey PRIMARY KEY (id);";
const DATASETS_NEW_KEY: &str = "ALTER TABLE \"datasets\" DROP CONSTRAINT \"datasets_pkey\",
ADD CONSTRAINT \"datasets_pkey\" PRIMARY KEY (\"id\", \"project_id\");";
const DATASETS_PROJECT_FIRST: &str =
    "ALTER TABLE datasets DROP CONSTRAINT datasets_pkey, ADD CONSTRAINT datasets_pkey PRIMARY KEY (project_id, id);";
const DATASET_BY_ID: &str = "SELECT name FROM datasets WHERE id = 'd1'";

const CRATES: &str = "
CREATE TABLE crates (id serial PRIMARY KEY, name varchar NOT NULL);
ALTER TABLE crates ADD CONSTRAINT packages_name_key UNIQUE (name);
CREATE TABLE versions (id serial PRIMARY KEY, crate_id integer NOT NULL, num varchar NOT NULL);
CREATE INDEX index_version_num ON versions (num);
CREATE UNIQUE INDEX unique_num ON versions (crate_id, num);
CREATE TABLE temp_downloads (name text, version text, downloads integer);
CREATE TABLE teams (id serial PRIMARY KEY, login varchar);
CREATE TABLE users (id serial PRIMARY KEY, gh_login varchar);
CREATE TABLE crate_owners (id serial PRIMARY KEY, crate_id integer NOT NULL, owner_id integer NOT NULL,
    owner_kind integer NOT NULL, deleted boolean NOT NULL DEFAULT false);
CREATE INDEX index_crate_owners_crate_id ON crate_owners (crate_id);
ALTER TABLE crate_owners ADD CONSTRAINT crate_owners_unique_owner_per_crate UNIQUE (owner_id, crate_id, owner_kind);
";

/// `process_log.rs:316` (`save_to_version_downloads`), its join.
const SAVE_DOWNLOADS: &str = "SELECT versions.id, temp_downloads.* FROM temp_downloads \
    LEFT JOIN crates ON crates.name = temp_downloads.name \
    LEFT JOIN versions ON versions.num = temp_downloads.version AND versions.crate_id = crates.id";

/// `krate.rs:232` (`owner_remove`), its CTE, for crate 5.
const OWNER_REMOVE: &str = "SELECT crate_owners.*, CASE WHEN crate_owners.owner_kind = 1 THEN teams.login \
    ELSE users.gh_login END AS login FROM crate_owners \
    LEFT JOIN teams ON crate_owners.owner_id = teams.id AND crate_owners.owner_kind = 1 \
    LEFT JOIN users ON crate_owners.owner_id = users.id AND crate_owners.owner_kind = 0 \
    WHERE crate_owners.crate_id = 5 AND crate_owners.deleted = false";

/// One read of a table in a plan: a Seq Scan (`index` `None`) or a scan of an index, with the
/// terms of its `Index Cond` as (key, operator, other side).
struct Read {
    table: String,
    index: Option<String>,
    /// The index's key names, in order (`pg_attribute` of the index).
    keys: Vec<String>,
    terms: Vec<(String, String, String)>,
}

impl Read {
    /// Whether the scan is searched for `column`: it is among the index's keys, compared in the
    /// condition, and every key before it is compared by equality there.
    fn searches(&self, column: &str) -> bool {
        let Some(at) = self.keys.iter().position(|k| k == column) else { return false };
        let compared = |key: &str, equal: bool| {
            self.terms.iter().any(|(k, op, _)| k == key && (!equal || op == "=" || op == "IS"))
        };
        compared(column, false) && self.keys[..at].iter().all(|k| compared(k, true))
    }

    /// Whether the scan is searched at all: its leading key compared (not the whole index read).
    fn searched(&self) -> bool {
        self.index.is_some() && self.keys.first().is_some_and(|k| self.terms.iter().any(|(t, _, _)| t == k))
    }
}

/// `((num)::text = temp_downloads.version) AND (crate_id = crates.id)` → its terms.
fn condition_terms(cond: &str) -> Vec<(String, String, String)> {
    let flat: String = cond.chars().filter(|c| !matches!(c, '(' | ')')).collect();
    flat.split(" AND ")
        .filter_map(|term| {
            let mut words = term.split_whitespace();
            let key = words.next()?.split("::").next()?.to_string();
            let op = words.next()?.to_string();
            Some((key, op, words.collect::<Vec<_>>().join(" ")))
        })
        .collect()
}

/// Every read of a table in the plan PostgreSQL makes for `query` (sequential scans, hash and
/// merge joins disabled: an index it can search for a join shows in a nested loop's inner scan).
async fn reads(client: &tokio_postgres::Client, query: &str) -> Vec<Read> {
    let messages = client.simple_query(&format!("EXPLAIN (FORMAT JSON) {query}")).await.expect("explain");
    let text = messages
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
        .expect("a plan");
    let plan: serde_json::Value = serde_json::from_str(&text).expect("json");
    let mut out = Vec::new();
    let mut pending = vec![plan[0]["Plan"].clone()];
    while let Some(node) = pending.pop() {
        if node["Node Type"] == "Seq Scan" {
            let table = node["Relation Name"].as_str().expect("relation").to_string();
            out.push(Read { table, index: None, keys: Vec::new(), terms: Vec::new() });
        }
        if let Some(index) = node["Index Name"].as_str() {
            let row = client
                .query_one(
                    "SELECT i.indrelid::regclass::text, array_agg(a.attname::text ORDER BY a.attnum) \
                     FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indexrelid \
                     WHERE i.indexrelid = $1::text::regclass GROUP BY i.indrelid",
                    &[&index],
                )
                .await
                .expect("index keys");
            let terms = node["Index Cond"].as_str().map(condition_terms).unwrap_or_default();
            out.push(Read { table: row.get(0), index: Some(index.to_string()), keys: row.get(1), terms });
        }
        pending.extend(node["Plans"].as_array().into_iter().flatten().cloned());
    }
    out
}

/// Whether PostgreSQL still finds the rows `table.column` is compared with through an index:
/// an index of `table` searched for the column, or, for a join, the other table's index probed
/// with `table.column` from rows of `table` that an index search found.
async fn index_serves(client: &tokio_postgres::Client, query: &str, table: &str, column: &str) -> bool {
    let reads = reads(client, query).await;
    let of_table: Vec<&Read> = reads.iter().filter(|r| r.table == table).collect();
    let searched = of_table.iter().any(|r| r.searches(column));
    let qualified = format!("{table}.{column}");
    let probed = reads.iter().any(|r| r.table != table && r.terms.iter().any(|(_, _, other)| *other == qualified))
        && !of_table.is_empty()
        && of_table.iter().all(|r| r.searched());
    searched || probed
}

fn drop_findings(found: Vec<Finding>) -> Vec<Finding> {
    found.into_iter().filter(|f| f.rule == "drop-index-in-use").collect()
}

#[test]
fn drop_index_in_use_agrees_with_postgresql_plans() {
    require_postgres();
    runtime().block_on(async {
        let (server, client) = throwaway("sluice_test_drops", "", Planner::NestedLoops).await;
        // crates.io's migrations, as it wrote them: the 2014 drop of the unique constraint on
        // `name` (`20141121191309…`), the 2018 index on it (`2018-10-17-203221…`), the 2017
        // owners' key (`20170308191449…`, in diesel's transaction), the 2019 drop (`2019-06-14-195059…`).
        let drop_name_key = "ALTER TABLE crates DROP CONSTRAINT packages_name_key;
CREATE UNIQUE INDEX index_crates_name ON crates (lower(name));";
        let name_ordering = "CREATE INDEX index_crates_name_ordering ON crates (name);";
        let owners_key = "ALTER TABLE crate_owners DROP COLUMN id;
ALTER TABLE crate_owners DROP CONSTRAINT crate_owners_unique_owner_per_crate;
ALTER TABLE crate_owners ADD PRIMARY KEY (crate_id, owner_id, owner_kind);
DROP INDEX index_crate_owners_crate_id;
CREATE UNIQUE INDEX crate_owners_not_deleted ON crate_owners (crate_id, owner_id, owner_kind) WHERE NOT deleted;";
        let drop_num = "DROP INDEX index_version_num;";
        let drop_owner_key = "ALTER TABLE crate_owners DROP CONSTRAINT crate_owners_unique_owner_per_crate;";

        // (migrations, query, the table and column the dropped index led with, whether the
        // migrations run in a transaction each).
        let cases: &[(&[&str], &str, &str, &str, bool)] = &[
            // 1. Restored by a later migration: today's plan searches the 2018 index.
            (&[CRATES, drop_name_key, name_ordering], SAVE_DOWNLOADS, "crates", "name", false),
            // … not restored: nothing serves the join on `name`.
            (&[CRATES, drop_name_key], SAVE_DOWNLOADS, "crates", "name", false),
            // 5. `unique_num (crate_id, num)`, searched by the join's `crate_id = crates.id` first.
            (&[CRATES, drop_num], SAVE_DOWNLOADS, "versions", "num", false),
            // … with crate_id free, or only bounded by a range, it is not searched for num.
            (&[CRATES, drop_num], "SELECT id FROM versions WHERE num = '1.0.0'", "versions", "num", false),
            (&[CRATES, drop_num], "SELECT id FROM versions WHERE crate_id > 5 AND num = '1.0.0'", "versions", "num", false),
            // An equality on crate_id, then a range on num: searched.
            (&[CRATES, drop_num], "SELECT id FROM versions WHERE crate_id = 5 AND num > '1.0.0'", "versions", "num", false),
            // 4. The owners' key, as crates.io changed it in one transaction.
            (&[CRATES, owners_key], OWNER_REMOVE, "crate_owners", "owner_id", true),
            // … and the unique constraint alone dropped: crate_owners found by `crate_id = 5`
            // through index_crate_owners_crate_id, each row probing teams_pkey and users_pkey.
            (&[CRATES, drop_owner_key], OWNER_REMOVE, "crate_owners", "owner_id", false),
            // langfuse's `20240718004923_datasets_tables_add_projectid_composite_key`: the new
            // primary key is added by the dropping ALTER TABLE itself, led by the same column.
            (&[DATASETS, DATASETS_NEW_KEY], DATASET_BY_ID, "datasets", "id", false),
            // … led by another column: `id` is no longer searched (the whole index is read).
            (&[DATASETS, DATASETS_PROJECT_FIRST], DATASET_BY_ID, "datasets", "id", false),
            // Nothing narrows crate_owners: it is read whole to drive the join.
            (
                &[CRATES, drop_owner_key],
                "SELECT teams.login FROM crate_owners JOIN teams ON crate_owners.owner_id = teams.id WHERE crate_owners.deleted = false",
                "crate_owners",
                "owner_id",
                false,
            ),
        ];
        for (migrations, query, table, column, in_transaction) in cases {
            let found = drop_findings(sluice_as(migrations, query, &Settings::default(), *in_transaction));
            client.batch_execute("BEGIN").await.expect("begin");
            for migration in *migrations {
                client.batch_execute(migration).await.unwrap_or_else(|e| panic!("{migration}: {e}"));
            }
            let served = index_serves(&client, query, table, column).await;
            let plan = reads(&client, query).await;
            let shown: Vec<String> =
                plan.iter().map(|r| format!("{} via {:?} {:?}", r.table, r.index, r.terms)).collect();
            client.batch_execute("ROLLBACK").await.expect("rollback");
            // Sluice is silent exactly when PostgreSQL still searches an index for the column.
            assert_eq!(found.is_empty(), served, "{migrations:?}\n{query}\nplan: {shown:#?}\nSluice: {found:#?}");
        }
        // A change under review that restores the index in a later migration: reported, and
        // said — the queries run without one from the drop until that migration has run.
        let settings = Settings { under_review: true, ..Settings::default() };
        let found = drop_findings(sluice_as(&[CRATES, drop_name_key, name_ordering], SAVE_DOWNLOADS, &settings, false));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].message.contains("serves them at the end of the change, but only once"), "{}", found[0].message);
        client.batch_execute("BEGIN").await.expect("begin");
        client.batch_execute(CRATES).await.expect("schema");
        client.batch_execute(drop_name_key).await.expect("drop");
        assert!(!index_serves(&client, SAVE_DOWNLOADS, "crates", "name").await, "between the two migrations");
        client.batch_execute(name_ordering).await.expect("restore");
        assert!(index_serves(&client, SAVE_DOWNLOADS, "crates", "name").await, "after the second");
        client.batch_execute("ROLLBACK").await.expect("rollback");

        drop(client);
        server.shutdown(false).await.expect("shutdown");
    });
}

/// synapse's access tokens and lakekeeper's tables by location: a relation whose rows an
/// index finds without the wrapped column.
const FOUND: &str = "
CREATE TABLE accounts (name text UNIQUE, admin boolean);
CREATE TABLE tokens (id bigint PRIMARY KEY, token text UNIQUE, user_id text, puppet_id text, device_id text);
CREATE INDEX tokens_device ON tokens (user_id, device_id);
CREATE TABLE tabular (id bigint, warehouse_id int, fs_location text);
CREATE INDEX tabular_location ON tabular (warehouse_id, fs_location);
";

#[test]
fn rows_found_through_another_index_agree_with_postgresql() {
    require_postgres();
    runtime().block_on(async {
        let (server, client) = throwaway("sluice_test_found", FOUND, Planner::NoSeqScan).await;

        // 1. The token row is found by its unique key; the join runs from it to accounts through
        // accounts' index, the COALESCE on the probing side. tokens_device plays no part.
        let join = "SELECT a.name FROM accounts a JOIN tokens t ON a.name = COALESCE(t.puppet_id, t.user_id)";
        let by_token = format!("{join} WHERE t.token = 'x'");
        let conditions = index_conditions(&client, &by_token).await;
        assert!(conditions.iter().any(|(i, c)| i == "tokens_token_key" && c.contains("token =")), "{conditions:?}");
        assert!(
            conditions.iter().any(|(i, c)| i == "accounts_name_key" && c.contains("COALESCE(t.puppet_id, t.user_id)")),
            "{conditions:?}"
        );
        assert!(sluice(&[FOUND], &by_token).is_empty(), "{:#?}", sluice(&[FOUND], &by_token));
        // From accounts, the join needs tokens searched by the COALESCE, which tokens_device
        // cannot do; the index on the expression the help suggests can.
        let by_name = format!("{join} WHERE a.name = 'x'");
        let conditions = index_conditions(&client, &by_name).await;
        assert!(conditions.iter().all(|(i, _)| i != "tokens_device"), "{conditions:?}");
        let found = sluice(&[FOUND], &by_name);
        assert_eq!(errors(&found).len(), 1, "{found:#?}");
        assert!(found[0].message.contains("tokens_device"), "{}", found[0].message);
        let create = suggested_index(&found[0]).expect("coalesce() is as immutable as its arguments");
        client.batch_execute(&create).await.unwrap_or_else(|e| panic!("{create}: {e}"));
        let conditions = index_conditions(&client, &by_name).await;
        assert!(
            conditions.iter().any(|(i, c)| i.starts_with("tokens_coalesce") && c.contains("COALESCE")),
            "{conditions:?}"
        );

        // 2. The column compared bare as well: the index is searched through that comparison and
        // the wrapped one filters what it found.
        let located =
            "SELECT id FROM tabular WHERE warehouse_id = 1 AND fs_location = ANY('{a,b}') AND length(fs_location) <= 5";
        let conditions = index_conditions(&client, located).await;
        assert!(
            conditions.iter().any(|(i, c)| i == "tabular_location" && c.contains("fs_location = ANY")),
            "{conditions:?}"
        );
        assert!(sluice(&[FOUND], located).is_empty(), "{:#?}", sluice(&[FOUND], located));
        // `<>` searches nothing: only the wrapper's bound could, and the wrapper hides it.
        let other = "SELECT id FROM tabular WHERE warehouse_id = 1 AND fs_location <> 'a' AND length(fs_location) <= 5";
        let conditions = index_conditions(&client, other).await;
        assert!(conditions.iter().all(|(_, c)| !c.contains("fs_location")), "{conditions:?}");
        assert_eq!(errors(&sluice(&[FOUND], other)).len(), 1, "{:#?}", sluice(&[FOUND], other));

        drop(client);
        server.shutdown(false).await.expect("shutdown");
    });
}

/// lakekeeper's tabulars and view representations, boundary's host dimension view, and an
/// order history: rows another index finds once an index is dropped.
const ELSEWHERE: &str = "
CREATE TABLE tabular (tabular_id bigint PRIMARY KEY, warehouse_id int, typ text, name text, metadata_location text);
CREATE INDEX tabular_typ_tabular_id_idx ON tabular (typ, tabular_id);
CREATE TABLE view_representation (id bigint PRIMARY KEY, view_id int, view_version_id int, sql text);
CREATE INDEX vr_view_id_version_id_idx ON view_representation (view_id, view_version_id);
CREATE TABLE host (public_id text PRIMARY KEY, catalog_id text NOT NULL);
CREATE TABLE host_set (public_id text PRIMARY KEY, catalog_id text NOT NULL);
ALTER TABLE host_set ADD CONSTRAINT host_set_catalog_id_public_id_key UNIQUE (catalog_id, public_id);
CREATE TABLE target (public_id text PRIMARY KEY, name text);
CREATE TABLE target_host_set (target_id text, host_set_id text, PRIMARY KEY (target_id, host_set_id));
CREATE VIEW host_dimension AS SELECT h.public_id AS host_id, hs.public_id AS host_set_id, t.public_id AS target_id
  FROM host h JOIN host_set hs ON h.catalog_id = hs.catalog_id
  JOIN target_host_set ts ON hs.public_id = ts.host_set_id JOIN target t ON ts.target_id = t.public_id;
CREATE TABLE customers (id bigint PRIMARY KEY, email text UNIQUE);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint);
CREATE INDEX orders_customer_id ON orders (customer_id);
CREATE TABLE shipments (id bigint PRIMARY KEY, order_id bigint);
";

/// Whether PostgreSQL finds every row of `table` it reads through an index search (no
/// sequential scan, no whole-index read).
async fn all_searched(client: &tokio_postgres::Client, query: &str, table: &str) -> bool {
    reads(client, query).await.iter().filter(|r| r.table == table).all(Read::searched)
}

/// Whether the plan searches `index` (of `table`).
async fn searches_index(client: &tokio_postgres::Client, query: &str, table: &str, index: &str) -> bool {
    reads(client, query).await.iter().any(|r| r.table == table && r.index.as_deref() == Some(index) && r.searched())
}

#[test]
fn rows_another_index_finds_after_a_drop_agree_with_postgresql() {
    require_postgres();
    runtime().block_on(async {
        let (server, client) = throwaway("sluice_test_elsewhere", "", Planner::NestedLoops).await;
        let drop_typ = "DROP INDEX tabular_typ_tabular_id_idx;";
        let drop_host_set_key = "ALTER TABLE host_set DROP CONSTRAINT host_set_catalog_id_public_id_key;";
        let drop_target_key = "ALTER TABLE target_host_set DROP CONSTRAINT target_host_set_pkey;";
        let add_warehouse = "DROP INDEX vr_view_id_version_id_idx;
ALTER TABLE view_representation ADD COLUMN warehouse_id int;
CREATE INDEX vr_view_id_version_id_idx ON view_representation (warehouse_id, view_id, view_version_id);";
        // What boundary's warehouse functions ask of the view: each relation by its key.
        let consumer = "SELECT * FROM host_dimension WHERE host_id = 'h' AND host_set_id = 's' AND target_id = 't'";
        // (drop, the query, the table, the dropped index, whether the drop's file runs in a
        // transaction, whether the query runs before it: one on a column it adds does not).
        let cases: &[(&str, &str, &str, &str, bool, bool)] = &[
            // The primary key finds the tabular; `typ` filters it.
            (drop_typ, "SELECT name FROM tabular WHERE warehouse_id = 1 AND tabular_id = 2 AND typ = 'view'", "tabular", "tabular_typ_tabular_id_idx", false, true),
            // Nothing else narrows it: the drop leaves the table read whole.
            (drop_typ, "SELECT name FROM tabular WHERE warehouse_id = 1 AND typ = 'view'", "tabular", "tabular_typ_tabular_id_idx", false, true),
            // One alternative of an OR: the dropped index served it neither.
            (drop_typ, "SELECT name FROM tabular WHERE warehouse_id = 1 AND (metadata_location IS NOT NULL OR typ = 'view')", "tabular", "tabular_typ_tabular_id_idx", false, true),
            // A column the transaction adds after the drop, then indexes.
            (add_warehouse, "SELECT sql FROM view_representation WHERE warehouse_id = 1 AND view_id = 2", "view_representation", "vr_view_id_version_id_idx", true, false),
            // The view's joins, as its consumer filters it: host_set by its primary key …
            (drop_host_set_key, consumer, "host_set", "host_set_catalog_id_public_id_key", false, true),
            // … target_host_set only by the key dropped.
            (drop_target_key, consumer, "target_host_set", "target_host_set_pkey", false, true),
            // Driven from the customer's email, the orders are found only through the index dropped.
            (
                "DROP INDEX orders_customer_id;",
                "SELECT s.id FROM customers c JOIN orders o ON o.customer_id = c.id JOIN shipments s ON s.order_id = o.id WHERE c.email = 'x'",
                "orders",
                "orders_customer_id",
                false,
                true,
            ),
        ];
        for (drop, query, table, index, in_transaction, runs_before) in cases {
            let migration = if *in_transaction { format!("BEGIN;\n{drop}\nCOMMIT;") } else { drop.to_string() };
            let found = drop_findings(sluice_as(&[ELSEWHERE, &migration], query, &Settings::default(), false));
            client.batch_execute("BEGIN").await.expect("begin");
            client.batch_execute(ELSEWHERE).await.expect("schema");
            let used = !runs_before || searches_index(&client, query, table, index).await;
            client.batch_execute(drop).await.unwrap_or_else(|e| panic!("{drop}: {e}"));
            let found_otherwise = all_searched(&client, query, table).await;
            let plan: Vec<String> =
                reads(&client, query).await.iter().map(|r| format!("{} via {:?} {:?}", r.table, r.index, r.terms)).collect();
            client.batch_execute("ROLLBACK").await.expect("rollback");
            // Sluice reports exactly the drops that take from PostgreSQL the index search it
            // made for the table and leave it no other.
            let needed = used && !found_otherwise;
            assert_eq!(!found.is_empty(), needed, "{drop}\n{query}\nused before: {used}\nafter: {plan:#?}\nSluice: {found:#?}");
        }

        drop(client);
        server.shutdown(false).await.expect("shutdown");
    });
}

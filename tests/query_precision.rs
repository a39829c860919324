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

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

/// What Sluice reports on `query` (a query file) after `migrations`, for the query rules.
fn sluice(migrations: &[&str], query: &str) -> Vec<Finding> {
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
            MigrationSource::whole_text(migration, name, sql, false)
        })
        .collect();
    let queries = vec![ParsedQuery::parse(Query::whole_file("queries/q.sql", query, Source::QueryFile))];
    let sources = Sources { migrations, queries, ..Sources::default() };
    lint(&sources, &Settings::default(), &|_| true)
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
        let mut server =
            Server::start(&ServerOptions { no_cache: true, ..ServerOptions::default() }).await.expect("server");
        server.create_database("sluice_test_precision", None).await.expect("create");
        let client = server.connect("sluice_test_precision").await.expect("connect");
        client.batch_execute(SCHEMA).await.expect("schema");
        client.batch_execute("SET enable_seqscan = off").await.expect("set");
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
        let mut server =
            Server::start(&ServerOptions { no_cache: true, ..ServerOptions::default() }).await.expect("server");
        server.create_database("sluice_test_optional", None).await.expect("create");
        let client = server.connect("sluice_test_optional").await.expect("connect");
        client.batch_execute(RUNS).await.expect("schema");
        client.batch_execute("SET enable_seqscan = off").await.expect("set");

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
        let mut server =
            Server::start(&ServerOptions { no_cache: true, ..ServerOptions::default() }).await.expect("server");
        server.create_database("sluice_test_found", None).await.expect("create");
        let client = server.connect("sluice_test_found").await.expect("connect");
        client.batch_execute(FOUND).await.expect("schema");
        client.batch_execute("SET enable_seqscan = off").await.expect("set");

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

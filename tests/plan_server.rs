//! The plan library against a real ephemeral PostgreSQL: generated data, plan diffs on real
//! EXPLAIN output, and the --database-url mode that never touches what Sluice did not create.

mod plan_support;

use plan_support::*;
use sluice::plan::diff::{self, HeadFacts, Thresholds};
use sluice::plan::explain;
use sluice::plan::fixture::{self, MigrationSql};
use sluice::plan::server::{Server, ServerOptions};
use std::path::Path;
use std::time::Duration;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

fn throwaway() -> ServerOptions {
    ServerOptions { no_cache: true, ..ServerOptions::default() }
}

fn migrations(dir: &Path) -> Vec<MigrationSql> {
    let mut files: Vec<_> = std::fs::read_dir(dir).expect("dir").map(|e| e.expect("entry").path()).collect();
    files.sort();
    files.into_iter().map(|p| MigrationSql::load(p).expect("migration")).collect()
}

const SPEC: &str = r#"
[tables.customers]
rows = 1_000
[tables.customers.columns]
email  = { pattern = "customer-{n}@example.com" }
region = { one_of = ["north", "south"], null_fraction = 0.0 }

[tables.orders]
rows = 30_000
[tables.orders.columns]
customer_id = { zipf = { n = 1_000, s = 1.2 } }
created_at  = { timestamps = ["2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z"] }
status      = { one_of = ["new", "paid"] }
channel     = { one_of = ["web", "app"], null_fraction = 0.25 }
"#;

#[test]
fn generated_data_follows_the_spec_and_plan_diffs_work_on_real_explain_output() {
    require_postgres();
    runtime().block_on(async {
        let mut server = Server::start(&throwaway()).await.expect("server");
        server.create_database("sluice_test_fill", None).await.expect("create");
        let client = server.connect("sluice_test_fill").await.expect("connect");
        fixture::apply_migrations(&client, &migrations(&fixture("reporting").join("head-safe")))
            .await
            .expect("migrate");
        let spec = sluice::plan::scale::parse(Path::new("scale.toml"), SPEC).expect("spec");
        sluice::plan::fill::fill(&client, &spec, None, server.superuser, Duration::from_secs(600), None)
            .await
            .expect("fill");

        let one = |sql: &'static str| {
            let client = &client;
            async move { client.query_one(sql, &[]).await.expect(sql).get::<_, i64>(0) }
        };
        assert_eq!(one("SELECT count(*) FROM orders").await, 30_000);
        assert_eq!(one("SELECT count(*) FROM customers").await, 1_000);
        // Keys that exist in the other table, skewed towards a few hot customers.
        assert_eq!(
            one(
                "SELECT count(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM customers c WHERE c.id = o.customer_id)"
            )
            .await,
            0
        );
        let hot = one("SELECT count(*) FROM orders WHERE customer_id = 1").await;
        let cold = one("SELECT count(*) FROM orders WHERE customer_id = 500").await;
        assert!(hot > 20 * cold.max(1), "zipf: customer 1 has {hot} orders, customer 500 has {cold}");
        let nulls = one("SELECT count(*) FROM orders WHERE channel IS NULL").await;
        assert!((6_000..9_000).contains(&nulls), "null_fraction 0.25 of 30,000: {nulls}");
        assert_eq!(one("SELECT count(*) FROM customers WHERE email = 'customer-7@example.com'").await, 1);
        assert_eq!(
            one("SELECT count(*) FROM orders WHERE created_at < '2024-01-01' OR created_at > '2025-01-01'").await,
            0
        );
        // Indexes dropped for the load are back, and statistics exist.
        assert_eq!(one("SELECT count(*) FROM pg_indexes WHERE indexname = 'orders_created_at_idx'").await, 1);
        assert!(one("SELECT count(*) FROM pg_stats WHERE tablename = 'orders'").await > 0);

        // Real plans before and after dropping the index the reporting query needs.
        let path = fixture("reporting").join("queries/daily_revenue.sql");
        let query = explain::load_queries(&path, "queries/daily_revenue.sql").expect("queries").remove(0);
        let timeout = Duration::from_secs(10);
        explain::prepare_session(&client, timeout).await.expect("session");
        let base = explain::generic_plan(&client, &query, server.version_num, timeout).await.expect("base plan");
        client.batch_execute("DROP INDEX orders_created_at_idx; ANALYZE orders").await.expect("drop");
        let head = explain::generic_plan(&client, &query, server.version_num, timeout).await.expect("head plan");

        assert!(diff::used_indexes(&base).contains("orders_created_at_idx"), "{base}");
        assert!(diff::scans(&head).iter().any(|s| s.relation == "orders" && s.access() == diff::Access::Seq), "{head}");
        let mut facts = HeadFacts::default();
        facts.relation_rows.insert("orders".into(), 30_000.0);
        facts.relation_rows.insert("customers".into(), 1_000.0);
        facts.missing_indexes.insert("orders_created_at_idx".into());
        let strict = Thresholds { seq_scan_rows: 10_000, ..Thresholds::default() };
        let verdict = diff::compare(&base, &head, &facts, &strict);
        assert!(
            verdict.regressions.iter().any(|r| r.contains("read by Seq Scan on head (30,000 rows)")),
            "{verdict:?}"
        );
        assert!(verdict.head_cost > verdict.base_cost);
        // Below the row threshold, the same change is only a warning.
        let lenient = Thresholds { seq_scan_rows: 1_000_000, ..Thresholds::default() };
        let mut no_missing = facts.clone();
        no_missing.missing_indexes.clear();
        let verdict = diff::compare(&base, &head, &no_missing, &lenient);
        assert!(verdict.regressions.iter().all(|r| !r.contains("Seq Scan")), "{verdict:?}");
        assert!(verdict.cost_increases.iter().any(|r| r.contains("Seq Scan on head")), "{verdict:?}");
        // The same plan twice: nothing to report.
        assert_eq!(diff::compare(&head, &head, &no_missing, &strict).regressions, Vec::<String>::new());
        assert!(diff::compare(&head, &head, &no_missing, &strict).cost_increases.is_empty());

        let tree = diff::render_diff(&base, &head);
        assert!(tree.lines().any(|l| l.starts_with("- ") && l.contains("using orders_created_at_idx")), "{tree}");
        assert!(tree.lines().any(|l| l.starts_with("+ ") && l.contains("Seq Scan on orders o")), "{tree}");
        assert!(
            tree.lines().any(|l| l.starts_with("  ") && l.contains("Seq Scan on customers c")),
            "unchanged nodes stay: {tree}"
        );

        // EXPLAIN ANALYZE with sample values; a write is rolled back.
        let update =
            explain::Query { text: "UPDATE orders SET status = 'x' WHERE customer_id = $1".into(), ..query.clone() };
        let measured = explain::analyze(&client, &update, &["1".into()], 3, timeout).await.expect("analyze");
        assert_eq!(measured.runs_ms.len(), 3);
        assert_eq!(
            one("SELECT count(*) FROM orders WHERE status = 'x'").await,
            0,
            "EXPLAIN ANALYZE writes are rolled back"
        );

        // A statement past the timeout becomes an error message, not a hang.
        let slow = explain::Query { text: "SELECT pg_sleep(5)".into(), ..query.clone() };
        let err = explain::analyze(&client, &slow, &[], 1, Duration::from_millis(300)).await.expect_err("timeout");
        assert!(err.contains("statement timeout"), "{err}");
        drop(client);
        server.shutdown(false).await.expect("shutdown");
    });
}

#[test]
fn database_url_mode_works_only_in_its_own_databases_and_drops_them() {
    require_postgres();
    let rt = runtime();
    // A "user's server": an ephemeral one, with a database Sluice did not create.
    let server = rt.block_on(Server::start(&throwaway())).expect("server");
    let url = server.url("postgres").expect("url");
    rt.block_on(async {
        let admin = server.connect("postgres").await.expect("connect");
        admin.batch_execute("CREATE DATABASE app").await.expect("create app");
        let app = server.connect("app").await.expect("app");
        app.batch_execute("CREATE TABLE orders (id int); INSERT INTO orders VALUES (42)").await.expect("app data");
    });
    let scale = tempfile::tempdir().expect("tempdir");
    let scale_path = scale.path().join("scale.toml");
    write(&scale_path, &SPEC.replace("channel     = { one_of = [\"web\", \"app\"], null_fraction = 0.25 }", ""));
    let out = assert_cmd::Command::cargo_bin("sluice")
        .expect("binary")
        .current_dir(fixture("reporting"))
        .args([
            "plan",
            "--base-dir",
            "base",
            "--head-dir",
            "head-regression",
            "--queries",
            "queries",
            "--format",
            "json",
            "--seq-scan-rows",
            "1000",
        ])
        .arg("--scale")
        .arg(&scale_path)
        .env("SLUICE_DATABASE_URL", &url)
        .output()
        .expect("run");
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}");
    assert_eq!(findings(&doc, "plan-regression").len(), 1, "{doc:#}");
    rt.block_on(async {
        let admin = server.connect("postgres").await.expect("connect");
        let left: i64 = admin
            .query_one("SELECT count(*) FROM pg_database WHERE datname LIKE 'sluice%'", &[])
            .await
            .expect("count")
            .get(0);
        assert_eq!(left, 0, "every sluice_* database is dropped after the run");
        let app = server.connect("app").await.expect("app");
        let rows = app.query("SELECT id FROM orders", &[]).await.expect("orders");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].get::<_, i32>(0), 42, "the user's database is untouched");
    });
    rt.block_on(server.shutdown(false)).expect("shutdown");
}

//! Sluice connects to a PostgreSQL server only when `--database-url` or `SLUICE_DATABASE_URL`
//! names it: the `DATABASE_URL` a CI job sets for the application's own tests is ignored, with a
//! note. On a server it is given, it creates and drops only its own `sluice_*` databases and
//! never writes to another one: the sentinel database below refuses any DDL (an event trigger)
//! and is compared before and after.

mod plan_support;
mod support;

use plan_support::{cache_dir, require_postgres};
use sluice::plan::server::{Server, ServerOptions};
use support::git::{json, notes, TestRepo};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

/// Everything about the sentinel database a write would change: its relations, extensions,
/// functions, event triggers and rows.
const FINGERPRINT: &str = "
SELECT concat_ws(' | ',
  (SELECT string_agg(n.nspname || '.' || c.relname || ':' || c.relkind::text, ',' ORDER BY 1)
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'),
  (SELECT string_agg(extname, ',' ORDER BY 1) FROM pg_extension),
  (SELECT string_agg(proname, ',' ORDER BY 1) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'public'),
  (SELECT string_agg(evtname, ',' ORDER BY 1) FROM pg_event_trigger),
  (SELECT string_agg(id::text || '=' || note, ',' ORDER BY id) FROM app_orders))";

/// The application's database: a table with a row, and an event trigger that makes any DDL in
/// it fail (so a Sluice that wrote here would fail the run, not just change the fingerprint).
const SENTINEL: &str = "
CREATE TABLE app_orders (id int PRIMARY KEY, note text NOT NULL);
INSERT INTO app_orders VALUES (42, 'the application''s data');
CREATE FUNCTION refuse_ddl() RETURNS event_trigger LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'sentinel: % in the application database', tg_tag; END $$;
CREATE EVENT TRIGGER refuse_ddl ON ddl_command_start EXECUTE FUNCTION refuse_ddl();
";

struct Sentinel {
    server: Option<Server>,
    rt: tokio::runtime::Runtime,
}

impl Sentinel {
    fn start() -> Sentinel {
        require_postgres();
        let rt = runtime();
        let server =
            rt.block_on(Server::start(&ServerOptions { no_cache: true, ..ServerOptions::default() })).expect("server");
        rt.block_on(async {
            let admin = server.connect("postgres").await.expect("connect");
            admin.batch_execute("CREATE DATABASE app").await.expect("create app");
            server.connect("app").await.expect("app").batch_execute(SENTINEL).await.expect("sentinel");
        });
        Sentinel { server: Some(server), rt }
    }

    fn server(&self) -> &Server {
        self.server.as_ref().unwrap()
    }

    /// A URL naming the application's database: Sluice must work beside it, never in it.
    fn app_url(&self) -> String {
        self.server().url("app").expect("url")
    }

    fn query(&self, database: &str, sql: &str) -> String {
        self.rt.block_on(async {
            let client = self.server().connect(database).await.expect("connect");
            client
                .query_one(sql, &[])
                .await
                .unwrap_or_else(|e| panic!("{e:?}"))
                .get::<_, Option<String>>(0)
                .unwrap_or_default()
        })
    }

    fn fingerprint(&self) -> String {
        self.query("app", FINGERPRINT)
    }

    fn databases(&self) -> String {
        self.query("postgres", "SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_database")
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = self.rt.block_on(server.shutdown(false));
        }
    }
}

const CONFIG: &str = "[migrations]\ndir = \"db/migrations\"\n\n[queries]\ndirs = [\"queries\"]\n\n[plan]\nscale = \"db/scale.toml\"\nrequired = true\nseq_scan_rows = 500\n";

/// `main`: orders with an index a query needs; the change drops it.
fn plan_repo() -> TestRepo {
    let repo = TestRepo::new();
    repo.write("sluice.toml", CONFIG);
    repo.write("db/scale.toml", "[tables.orders]\nrows = 5_000\n[tables.orders.columns]\ncreated_at = { timestamps = [\"2024-01-01T00:00:00Z\", \"2026-01-01T00:00:00Z\"] }\n");
    repo.write(
        "db/migrations/0001_orders.sql",
        "CREATE TABLE orders (id bigint PRIMARY KEY, created_at timestamptz NOT NULL, total numeric NOT NULL);\nCREATE INDEX orders_created_at_idx ON orders (created_at);\n",
    );
    repo.write("queries/day.sql", "SELECT sum(total) FROM orders WHERE created_at >= $1 AND created_at < $2;\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "db/migrations/0002_drop.sql",
        "SET lock_timeout = '5s';\nDROP INDEX CONCURRENTLY orders_created_at_idx;\n",
    );
    repo.commit("drop the index");
    repo
}

fn plan_notes(report: &serde_json::Value) -> Vec<String> {
    notes(report).into_iter().filter(|n| n.starts_with("Plan comparison:") || n.contains("DATABASE_URL")).collect()
}

#[test]
fn a_generic_database_url_is_ignored_and_the_named_server_is_used_only_for_sluices_own_databases() {
    let sentinel = Sentinel::start();
    let before = (sentinel.fingerprint(), sentinel.databases());
    let repo = plan_repo();
    let cache = cache_dir();

    // DATABASE_URL (the application's): ignored, said so, plans compared on Sluice's own server.
    let report = json(
        repo.check()
            .env("DATABASE_URL", sentinel.app_url())
            .env_remove("SLUICE_DATABASE_URL")
            .env("SLUICE_CACHE_DIR", cache.path()),
        1,
    );
    let seen = plan_notes(&report);
    assert!(seen.iter().any(|n| n.starts_with("DATABASE_URL is set but was ignored")), "{seen:?}");
    let built = seen.iter().find(|n| n.starts_with("Plan comparison: fixture: built")).expect("a fixture was built");
    assert!(built.contains(&cache.path().display().to_string()) && !built.contains("--database-url"), "{built}");
    assert_eq!((sentinel.fingerprint(), sentinel.databases()), before, "the application's server was not touched");

    // SLUICE_DATABASE_URL names the server: Sluice works there, beside the application's database.
    let report = json(
        repo.check()
            .env("SLUICE_DATABASE_URL", sentinel.app_url())
            .env("DATABASE_URL", "postgres://nowhere.invalid/app"),
        1,
    );
    let seen = plan_notes(&report);
    assert!(seen.iter().any(|n| n.contains("on the server at --database-url")), "{seen:?}");
    assert!(!seen.iter().any(|n| n.contains("DATABASE_URL is set but was ignored")), "{seen:?}");
    // The plan regression is folded into the migration that causes it (one finding per root cause),
    // carrying the plans compared on the named server.
    let findings = report["findings"].as_array().unwrap();
    let drop = findings.iter().find(|f| f["rule"] == "drop-index-in-use").expect("the drop is reported");
    assert!(drop["evidence"]["head_plan"].to_string().contains("Seq Scan"), "{drop:#}");
    assert_eq!((sentinel.fingerprint(), sentinel.databases()), before, "only sluice_* databases, all dropped");

    // `sluice plan --keep` shows where it worked: its own sluice_* databases, nothing else.
    let output = assert_cmd::Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(repo.path())
        .env_remove("CI")
        .env_remove("DATABASE_URL")
        .args(["plan", "--format", "json", "--keep", "--database-url"])
        .arg(sentinel.app_url())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let kept: Vec<String> =
        sentinel.databases().split(',').filter(|d| !before.1.split(',').any(|b| b == *d)).map(str::to_string).collect();
    assert!(!kept.is_empty() && kept.iter().all(|d| d.starts_with("sluice_")), "{kept:?}");
    assert_eq!(sentinel.fingerprint(), before.0);
    sentinel.rt.block_on(async {
        let admin = sentinel.server().connect("postgres").await.expect("connect");
        for database in &kept {
            admin.batch_execute(&format!("DROP DATABASE \"{database}\"")).await.expect("drop kept");
        }
    });

    // The same through `sluice plan`'s environment: DATABASE_URL alone is not a target.
    let output = assert_cmd::Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(repo.path())
        .env_remove("CI")
        .env_remove("SLUICE_DATABASE_URL")
        .env("DATABASE_URL", sentinel.app_url())
        .env("SLUICE_CACHE_DIR", cache.path())
        .args(["plan", "--format", "json", "--keep"])
        .output()
        .unwrap();
    let plan = plan_support::json(&output);
    assert!(plan["notes"].to_string().contains("DATABASE_URL is set but was ignored"), "{plan:#}");
    assert_eq!((sentinel.fingerprint(), sentinel.databases()), before);
}

//! Production's workload as evidence, end to end on a real PostgreSQL: a throwaway server with
//! `pg_stat_statements` loaded, the schema from the project's migrations, a workload run through
//! it the way applications run one (an ORM's `upper($1)` over the extended protocol, IN lists of
//! two lengths, a `PREPARE`, `BEGIN`/`COMMIT`, a slow report on several connections at once),
//! exported with `sluice stats workload` and `sluice stats indexes` through `psql --csv`. Then
//! `sluice lint` and `sluice check` on a migration that drops an index the workload uses: the
//! finding names the production query, its rate and the index's scan count; the two snapshots
//! drive `pool-capacity` to an error when the pool cannot carry the measured load.
//!
//! Needs the PostgreSQL server binaries, psql, and the pg_stat_statements extension (Debian's
//! `postgresql-15` ships it; `apt-get install -y postgresql`).

mod plan_support;
mod support;

use assert_cmd::Command;
use plan_support::require_postgres;
use sluice::plan::server::{Server, ServerOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::git::{finding, json, notes, TestRepo};

const SCHEMA: &str = "\
CREATE TABLE users (
    id bigint PRIMARY KEY,
    name text NOT NULL,
    org_id bigint NOT NULL
);
CREATE INDEX users_upper_name ON users (upper(name));
CREATE INDEX users_org ON users (org_id);
";

const DROP: &str = "SET lock_timeout = '5s';\nDROP INDEX CONCURRENTLY users_upper_name;\n";

const CONFIG: &str = "\
[queries]
workload = [\"policies/workload-1.csv\", \"policies/workload-2.csv\"]

[policies]
index_usage = \"policies/index-usage.csv\"
";

/// Two connections per instance, one instance: 1.6 busy connections is the limit.
const POOL: &str = "[pool]\nsize = 2\ninstances = 1\n";

fn psql() -> PathBuf {
    let bin = sluice::plan::server::find_bindir().expect("bindir").join("psql");
    assert!(bin.is_file(), "psql not found beside the server binaries; apt-get install -y postgresql-client");
    bin
}

fn require_pg_stat_statements() {
    let sharedir = std::process::Command::new("pg_config").arg("--sharedir").output().ok();
    let dirs: Vec<PathBuf> = sharedir
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .into_iter()
        .chain(std::fs::read_dir("/usr/share/postgresql").into_iter().flatten().flatten().map(|e| e.path()))
        .collect();
    assert!(
        dirs.iter().any(|d| d.join("extension/pg_stat_statements.control").is_file()),
        "the pg_stat_statements extension is not installed (looked in {dirs:?}); on Debian/Ubuntu: \
         apt-get install -y postgresql (postgresql-15 ships it), elsewhere postgresql-contrib"
    );
}

/// Runs `sluice stats <what>` and pipes the query into `psql --csv` against `url`.
fn export(what: &str, url: &str) -> String {
    let query = Command::cargo_bin("sluice").unwrap().args(["stats", what]).output().unwrap();
    assert!(query.status.success(), "sluice stats {what}: {}", String::from_utf8_lossy(&query.stderr));
    let out = Command::new(psql())
        .args(["-X", "--csv", "-v", "ON_ERROR_STOP=1", url])
        .write_stdin(query.stdout)
        .output()
        .unwrap();
    assert!(out.status.success(), "psql: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The production server, with its application database `app` built from the migration and
/// some rows.
struct Production {
    server: Option<Server>,
    rt: tokio::runtime::Runtime,
}

impl Production {
    fn start() -> Production {
        require_postgres();
        require_pg_stat_statements();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let options = ServerOptions {
            no_cache: true,
            extra_settings: vec!["shared_preload_libraries=pg_stat_statements".into(), "compute_query_id=on".into()],
            ..ServerOptions::default()
        };
        let server = rt.block_on(Server::start(&options)).expect("server");
        rt.block_on(async {
            server.connect("postgres").await.unwrap().batch_execute("CREATE DATABASE app").await.unwrap();
            let app = server.connect("app").await.unwrap();
            app.batch_execute(SCHEMA).await.unwrap();
            app.batch_execute(
                "INSERT INTO users SELECT g, 'user ' || g, g % 50 FROM generate_series(1, 20000) g;
                 ANALYZE users;
                 CREATE EXTENSION pg_stat_statements;",
            )
            .await
            .unwrap();
        });
        Production { server: Some(server), rt }
    }

    fn url(&self) -> String {
        self.server.as_ref().unwrap().url("app").unwrap()
    }

    /// Resets the statistics: what follows is the workload.
    fn reset(&self) {
        self.rt.block_on(async {
            let app = self.server.as_ref().unwrap().connect("app").await.unwrap();
            app.batch_execute("SELECT pg_stat_statements_reset(); SELECT pg_stat_reset();").await.unwrap();
        });
    }

    /// The application's traffic: `rounds` of its everyday queries, and `reports` connections
    /// each running the slow report for `report_for`.
    fn run(&self, rounds: usize, reports: usize, report_for: Duration) {
        let server = self.server.as_ref().unwrap();
        self.rt.block_on(async {
            let app = server.connect("app").await.unwrap();
            for i in 0..rounds {
                // An ORM's find_by: parameters over the extended protocol, LIMIT a constant.
                let name = format!("USER {}", i % 100 + 1);
                app.query("SELECT id, name FROM users WHERE upper(name) = upper($1) LIMIT 1", &[&name]).await.unwrap();
                // IN lists of two lengths.
                app.batch_execute("SELECT id FROM users WHERE id IN (1, 2)").await.unwrap();
                app.batch_execute("SELECT id FROM users WHERE id IN (3, 4, 5)").await.unwrap();
                // A transaction around a prepared statement.
                app.batch_execute(
                    "BEGIN; PREPARE by_org(bigint) AS SELECT count(*) FROM users WHERE org_id = $1; \
                     EXECUTE by_org(7); DEALLOCATE by_org; COMMIT;",
                )
                .await
                .unwrap();
            }
            app.batch_execute("SELECT pg_stat_force_next_flush()").await.unwrap();
            let mut reporters = Vec::new();
            for _ in 0..reports {
                reporters.push(server.connect("app").await.unwrap());
            }
            let until = Instant::now() + report_for;
            let report = |client: tokio_postgres::Client| async move {
                while Instant::now() < until {
                    client
                        .query("SELECT count(*), pg_sleep(0.05) FROM users WHERE org_id = $1", &[&3i64])
                        .await
                        .unwrap();
                }
                // The backend's table and index counters reach the statistics views when it
                // is next idle, right after this.
                client.batch_execute("SELECT pg_stat_force_next_flush()").await.unwrap();
            };
            futures_util::future::join_all(reporters.into_iter().map(report)).await;
        });
    }
}

impl Drop for Production {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = self.rt.block_on(server.shutdown(false));
        }
    }
}

/// The exported snapshots and what they say, read with a CSV reader of their own.
struct Exports {
    first: String,
    second: String,
    indexes: String,
}

fn records(csv: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    reader.records().map(|r| header.iter().cloned().zip(r.unwrap().iter().map(str::to_string)).collect()).collect()
}

fn record_with<'a>(
    rows: &'a [std::collections::HashMap<String, String>],
    text: &str,
) -> &'a std::collections::HashMap<String, String> {
    rows.iter().find(|r| r["query"].contains(text)).unwrap_or_else(|| panic!("no entry with `{text}` in {rows:#?}"))
}

fn timestamp(text: &str) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%#z").unwrap()
}

fn exports() -> Exports {
    let production = Production::start();
    production.reset();
    production.run(30, 0, Duration::ZERO);
    let first = export("workload", &production.url());
    // Between the snapshots: everyday traffic, and the report on four connections for 1.5 s.
    production.run(60, 4, Duration::from_millis(1500));
    let second = export("workload", &production.url());
    let indexes = export("indexes", &production.url());
    Exports { first, second, indexes }
}

fn project(repo: &TestRepo, exports: &Exports) {
    repo.write("sluice.toml", CONFIG);
    repo.write("migrations/001_users.sql", SCHEMA);
    repo.write("policies/workload-1.csv", &exports.first);
    repo.write("policies/workload-2.csv", &exports.second);
    repo.write("policies/index-usage.csv", &exports.indexes);
    repo.write("policies/workload.toml", POOL);
}

#[test]
fn the_workload_names_the_production_query_its_rate_and_the_index_scans() {
    let exports = exports();
    let (first, second) = (records(&exports.first), records(&exports.second));

    // What the export really holds: the ORM's query normalized to `upper($1) LIMIT $2`, the two
    // IN lists as two entries, the PREPARE as its own text, BEGIN and COMMIT.
    let orm = record_with(&second, "upper(name) = upper($1)");
    assert!(orm["query"].contains("LIMIT $2"), "{}", orm["query"]);
    assert!(record_with(&second, "IN ($1, $2)")["queryid"] != record_with(&second, "IN ($1, $2, $3)")["queryid"]);
    assert!(record_with(&second, "PREPARE by_org(bigint) AS")["query"].starts_with("PREPARE"));
    for utility in ["BEGIN", "COMMIT"] {
        assert!(second.iter().any(|r| r["query"] == utility), "no {utility} entry");
    }

    // Read by Sluice: the two IN lists one entry, the PREPARE unwrapped and typed, BEGIN and
    // COMMIT not checked.
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(PathBuf, String)> = [("w1.csv", &exports.first), ("w2.csv", &exports.second)]
        .into_iter()
        .map(|(name, text)| {
            std::fs::write(dir.path().join(name), text).unwrap();
            (dir.path().join(name), name.to_string())
        })
        .collect();
    let workload = sluice::queries::workload::load(
        &files,
        &|p: &Path| Ok(std::fs::read_to_string(p).unwrap()),
        &sluice::queries::workload::Reading::now(30),
    )
    .unwrap();
    let sql: Vec<&str> = workload.entries.iter().map(|e| e.sql.as_str()).collect();
    assert_eq!(sql.iter().filter(|s| s.contains("WHERE id IN")).count(), 1, "{sql:#?}");
    assert!(sql.contains(&"SELECT count(*) FROM users WHERE org_id = ($1::bigint)"), "{sql:#?}");
    let skipped = workload.describe_skipped().unwrap();
    assert!(skipped.contains("BEGIN ×1") && skipped.contains("COMMIT ×1"), "{skipped}");

    // The rate Sluice must name: the ORM query's calls between the snapshots over the time
    // between them, from the exports themselves.
    let calls = |r: &std::collections::HashMap<String, String>| r["calls"].parse::<f64>().unwrap();
    let orm_before = record_with(&first, "upper(name) = upper($1)");
    let seconds =
        (timestamp(&orm["captured_at"]) - timestamp(&orm_before["captured_at"])).num_milliseconds() as f64 / 1000.0;
    let rate = (calls(orm) - calls(orm_before)) / seconds;
    assert_eq!(calls(orm) - calls(orm_before), 60.0);
    let scans: u64 = records(&exports.indexes)
        .iter()
        .find(|r| r["indexrelname"] == "users_upper_name")
        .map(|r| r["idx_scan"].parse().unwrap())
        .unwrap();
    assert!(scans >= 90, "the ORM query ran 90 times through its index: {scans}");

    let repo = TestRepo::new();
    project(&repo, &exports);
    repo.write("migrations/002_drop_name_index.sql", DROP);
    let line = |text: &str| {
        let at = exports.second.find(text).unwrap();
        // The record starts at the line its queryid is on.
        let start = exports.second[..at].rfind(&record_with(&second, text)["queryid"]).unwrap();
        exports.second[..start].matches('\n').count() + 1
    };
    let expected_entry = format!(
        "workload entry at policies/workload-2.csv:{} (queryid {}, {} calls/s,",
        line("upper(name) = upper($1)"),
        orm["queryid"],
        sluice::queries::workload::quantity(rate)
    );

    // `sluice lint`: the ORM-only application's index is in use, and production says so.
    let mut lint = Command::cargo_bin("sluice").unwrap();
    lint.current_dir(repo.path()).arg("lint");
    let report = json(&mut lint, 1);
    let drop = finding(&report, "drop-index-in-use");
    let message = drop["message"].as_str().unwrap();
    assert_eq!(drop["file"], "migrations/002_drop_name_index.sql");
    assert!(message.contains(&expected_entry), "{message}\nexpected: {expected_entry}");
    assert!(message.contains(&format!("production scanned it {scans} times")), "{message}");
    let fact = |name: &str| {
        drop["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .map(|f| f["value"].as_str().unwrap().to_string())
    };
    assert_eq!(fact("production query").unwrap(), "SELECT id, name FROM users WHERE upper(name) = upper($1) LIMIT $2");

    // The report on four connections for 1.5 s of the interval: more than 1.6 busy.
    let pool = finding(&report, "pool-capacity");
    assert_eq!(pool["severity"], "error");
    assert_eq!(pool["file"], "policies/workload-2.csv");
    let message = pool["message"].as_str().unwrap();
    assert!(message.contains("policies/workload-1.csv → policies/workload-2.csv"), "{message}");
    assert!(message.contains("pool's 2 (2 × 1)"), "{message}");
    assert_eq!(pool["line"], line("pg_sleep") as u64, "the slow report holds most connections: {message}");
    assert!(pool["help"].as_str().unwrap().contains("lower bound"));
    assert!(notes(&report).iter().any(|n| n.starts_with("Workload: ")), "{:#?}", notes(&report));

    // `sluice check`: the same evidence, read from the base revision.
    repo.remove("migrations/002_drop_name_index.sql");
    repo.commit("base: the schema and production's snapshots");
    repo.checkout_new_branch("drop-index");
    repo.write("migrations/002_drop_name_index.sql", DROP);
    repo.commit("drop the name index");
    let report = json(repo.check().args(["--base", "main"]), 1);
    let drop = finding(&report, "drop-index-in-use");
    let message = drop["message"].as_str().unwrap();
    assert!(message.contains(&expected_entry) && message.contains(&format!("scanned it {scans} times")), "{message}");
    assert_eq!(finding(&report, "pool-capacity")["severity"], "error");

    // A change that edits a snapshot is told, and the review still reads the base's.
    repo.write("policies/index-usage.csv", &exports.indexes.replace(&format!(",{scans},"), ",0,"));
    repo.commit("pretend the index is unused");
    let report = json(repo.check().args(["--base", "main"]), 1);
    let changed = finding(&report, "gate-config-changed");
    assert_eq!(changed["file"], "policies/index-usage.csv");
    assert!(changed["message"].as_str().unwrap().contains("index-usage snapshot"), "{changed:#}");
    let message = finding(&report, "drop-index-in-use")["message"].as_str().unwrap().to_string();
    assert!(message.contains(&format!("scanned it {scans} times")), "{message}");
}

#[test]
fn bad_snapshots_exit_2_naming_file_and_line() {
    let repo = TestRepo::new();
    let header = "queryid,calls,total_exec_time,mean_exec_time,rows,captured_at,stats_reset,dealloc,database,query\n";
    let row = |calls: &str, reset: &str, at: &str| format!("7,{calls},10,1,1,{at},{reset},0,app,select 1\n");
    repo.write("sluice.toml", CONFIG);
    repo.write("migrations/001_users.sql", SCHEMA);
    repo.write("policies/index-usage.csv", "schemaname,relname,indexrelname,idx_scan,idx_tup_read\n");
    let run = |first: &str, second: &str| {
        repo.write("policies/workload-1.csv", first);
        repo.write("policies/workload-2.csv", second);
        let out = Command::cargo_bin("sluice").unwrap().current_dir(repo.path()).arg("lint").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let good = format!("{header}{}", row("10", "2026-12-01 00:00:00+00", "2026-12-03 10:00:00+00"));

    let missing = run("queryid,calls,query\n7,10,select 1\n", &good);
    assert!(
        missing
            .contains("policies/workload-1.csv:1: the header lacks the columns total_exec_time, mean_exec_time, rows"),
        "{missing}"
    );

    let reset = format!("{header}{}", row("20", "2026-12-03 09:59:00+00", "2026-12-03 10:01:00+00"));
    let err = run(&good, &reset);
    assert!(
        err.contains("policies/workload-2.csv:2: stats_reset")
            && err.contains("reset between the snapshots, or they come from different servers"),
        "{err}"
    );

    let other_server =
        format!("{header}7,20,10,1,1,2026-12-03 10:01:00+00,2026-12-01 00:00:00+00,0,billing,select 1\n");
    let err = run(&good, &other_server);
    assert!(err.contains("policies/workload-2.csv:2: exported from database billing"), "{err}");

    let words =
        format!("{header}{}{}", row("20", "2026-12-01 00:00:00+00", "2026-12-03 10:01:00+00"), row("lots", "x", "y"));
    let err = run(&good, &words);
    assert!(err.contains("policies/workload-2.csv:3: calls `lots` is not a count"), "{err}");
}

//! Fixtures from a production statistics snapshot (issue 39, item 3): a "production" database
//! on a real PostgreSQL, its statistics exported with `sluice stats columns | psql --csv`, and
//! a fixture built from the snapshot alone, whose own ANALYZE must find production's figures.

mod plan_support;

use assert_cmd::Command;
use plan_support::*;
use sluice::plan::server::{Server, ServerOptions};

const SCHEMA: &str = "
CREATE TABLE airports (faa text PRIMARY KEY, name text NOT NULL, tz integer);
CREATE TABLE flights (
    id bigint PRIMARY KEY,
    origin text NOT NULL REFERENCES airports (faa),
    carrier text NOT NULL,
    dep_delay integer,
    distance numeric(8, 1) NOT NULL,
    departed timestamptz NOT NULL,
    UNIQUE (origin, departed)
);
CREATE INDEX flights_carrier_idx ON flights (carrier);
";

/// Skewed carriers, NULL delays, three busy origins among 300 airports, departures in order.
const DATA: &str = "
INSERT INTO airports SELECT 'A' || lpad(g::text, 3, '0'), 'Airport ' || g, -5 - g % 4 FROM generate_series(1, 300) g;
INSERT INTO flights
SELECT g,
       CASE WHEN g % 10 < 4 THEN 'A001' WHEN g % 10 < 7 THEN 'A002' WHEN g % 10 < 9 THEN 'A003'
            ELSE 'A' || lpad((4 + g % 297)::text, 3, '0') END,
       (ARRAY['UA', 'UA', 'UA', 'B6', 'B6', 'DL', 'AA', 'EV', 'MQ', 'US'])[1 + g % 10 * (g % 7) % 10],
       CASE WHEN g % 20 = 0 THEN NULL ELSE (g * 7919) % 120 - 20 END,
       100 + (g * 31) % 2500 + 0.5,
       timestamptz '2013-01-01 05:00+00' + g * interval '97 seconds'
FROM generate_series(1, 60000) g;
ANALYZE;
";

/// `sluice plan` of the project in `dir` from its snapshot alone (no scale spec); its stderr.
fn plan_from_snapshot(dir: &std::path::Path, cache: &std::path::Path, fixture: &str) -> String {
    let out = Command::cargo_bin("sluice")
        .expect("binary")
        .current_dir(dir)
        .env_remove("DATABASE_URL")
        .env_remove("SLUICE_DATABASE_URL")
        .args(["plan", "--base-dir", "base", "--head-dir", "head", "--queries", "queries", "--format", "json"])
        .args(["--stats", "column-stats.csv", "--fixture", fixture, "--cache-dir"])
        .arg(cache)
        .output()
        .expect("plan");
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

#[test]
fn a_fixture_built_from_the_snapshot_alone_has_production_s_statistics() {
    require_postgres();
    let rt = runtime();
    let production =
        rt.block_on(Server::start(&ServerOptions { no_cache: true, ..ServerOptions::default() })).expect("server");
    rt.block_on(async {
        let admin = production.connect("postgres").await.expect("connect");
        admin.batch_execute("CREATE DATABASE prod").await.expect("create");
        let prod = production.connect("prod").await.expect("prod");
        prod.batch_execute(SCHEMA).await.expect("schema");
        prod.batch_execute(DATA).await.expect("data");
    });

    // The export, as a user runs it.
    let query = Command::cargo_bin("sluice").expect("binary").args(["stats", "columns"]).output().expect("run");
    assert!(query.status.success());
    let url = production.url("prod").expect("url");
    let mut psql = std::process::Command::new("psql")
        .args([url.as_str(), "--csv", "-X", "-q", "-v", "ON_ERROR_STOP=1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("this test needs psql (apt-get install -y postgresql-client): {e}"));
    use std::io::Write;
    psql.stdin.take().expect("stdin").write_all(&query.stdout).expect("query");
    let csv = psql.wait_with_output().expect("psql");
    assert!(csv.status.success(), "{}", String::from_utf8_lossy(&csv.stdout));

    let cache = cache_dir();
    let dir = cache.path().join("project");
    write(&dir.join("base/0001_schema.sql"), SCHEMA);
    write(&dir.join("head/0001_schema.sql"), SCHEMA);
    write(&dir.join("queries/carrier.sql"), "SELECT id FROM flights WHERE carrier = $1;\n");
    write(&dir.join("column-stats.csv"), std::str::from_utf8(&csv.stdout).expect("utf8"));
    let stderr = plan_from_snapshot(&dir, cache.path(), "generated");
    assert!(
        stderr.lines().any(|l| l.contains("60,000 rows into flights") && l.contains("binary COPY, frozen")),
        "{stderr}"
    );
    assert!(stderr.lines().any(|l| l.contains("300 rows into airports")), "{stderr}");

    // The fixture's own ANALYZE against production's.
    let stats = "SELECT attname::text, null_frac::float8, n_distinct::float8, coalesce(correlation, 0)::float8, \
                 coalesce((most_common_vals::text::text[])[1], ''), coalesce(most_common_freqs[1], 0)::float8 \
                 FROM pg_stats WHERE tablename = 'flights' ORDER BY attname";
    let read = |server: &Server, db: &str| {
        rt.block_on(async {
            let client = server.connect(db).await.expect("connect");
            let rows = client.query(stats, &[]).await.expect("pg_stats");
            rows.iter()
                .map(|r| {
                    let v: (String, f64, f64, f64, String, f64) =
                        (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5));
                    v
                })
                .collect::<Vec<_>>()
        })
    };
    let real = read(&production, "prod");
    let (fixture_server, template) = rt.block_on(cached_template(cache.path()));
    let made = read(&fixture_server, &template);
    assert_eq!(real.len(), made.len());
    for (r, m) in real.iter().zip(&made) {
        assert_eq!(r.0, m.0);
        assert!((r.1 - m.1).abs() < 0.01, "{}: null_frac {} vs {}", r.0, r.1, m.1);
        let distinct = |d: f64| if d < 0.0 { -d * 60_000.0 } else { d };
        let (rd, md) = (distinct(r.2), distinct(m.2));
        assert!(md >= rd * 0.8 && md <= rd * 1.25, "{}: n_distinct {} vs {}", r.0, r.2, m.2);
        assert!((r.3 - m.3).abs() < 0.15, "{}: correlation {} vs {}", r.0, r.3, m.3);
        if r.5 > 0.05 {
            assert_eq!(r.4, m.4, "{}: the most common value", r.0);
            assert!((r.5 - m.5).abs() < 0.03, "{}: its frequency {} vs {}", r.0, r.5, m.5);
        }
    }
    rt.block_on(async { fixture_server.shutdown(false).await.expect("shutdown") });

    // Statistics mode: production's figures installed, exactly, and the planner uses them.
    let cache = cache_dir();
    let stderr = plan_from_snapshot(&dir, cache.path(), "statistics");
    assert!(stderr.contains("sluice: fixture: production's statistics installed (9 columns)"), "{stderr}");
    let (fixture_server, template) = rt.block_on(cached_template(cache.path()));
    let exact = "SELECT attname::text, null_frac, avg_width, n_distinct, coalesce(most_common_vals::text, ''), \
                 coalesce(most_common_freqs::text, ''), coalesce(histogram_bounds::text, ''), coalesce(correlation, 2) \
                 FROM pg_stats WHERE tablename IN ('flights', 'airports') ORDER BY tablename, attname";
    let sizes = "SELECT relname::text, reltuples::float8, relpages, relallvisible, pg_relation_size(oid) / 8192 FROM pg_class \
                 WHERE relname IN ('flights', 'airports', 'flights_pkey', 'flights_carrier_idx', 'flights_origin_departed_key') ORDER BY 1";
    let plans = [
        "EXPLAIN (FORMAT JSON) SELECT id FROM flights WHERE carrier = 'EV'",
        "EXPLAIN (FORMAT JSON) SELECT count(*) FROM flights WHERE dep_delay > 60",
        "EXPLAIN (FORMAT JSON) SELECT * FROM flights f JOIN airports a ON a.faa = f.origin WHERE a.tz = -6",
        "EXPLAIN (FORMAT JSON) SELECT * FROM flights WHERE origin = 'A001' AND departed > '2013-01-20'",
    ];
    let read_all = |server: &Server, db: &str| {
        rt.block_on(async {
            let client = server.connect(db).await.expect("connect");
            let lines = |messages: Vec<tokio_postgres::SimpleQueryMessage>| -> Vec<String> {
                messages
                    .into_iter()
                    .filter_map(|m| match m {
                        tokio_postgres::SimpleQueryMessage::Row(r) => Some(
                            (0..r.len()).map(|i| r.get(i).unwrap_or("").to_string()).collect::<Vec<_>>().join(" | "),
                        ),
                        _ => None,
                    })
                    .collect()
            };
            let stats = lines(client.simple_query(exact).await.expect("pg_stats"));
            let sizes = lines(client.simple_query(sizes).await.expect("sizes"));
            let mut shapes = Vec::new();
            for sql in plans {
                let text = lines(client.simple_query(sql).await.expect("explain")).concat();
                let plan: serde_json::Value = serde_json::from_str(&text).expect("json");
                shapes.push(shape(&plan[0]["Plan"]));
            }
            (stats, sizes, shapes)
        })
    };
    let (real_stats, real_sizes, real_plans) = read_all(&production, "prod");
    let (made_stats, made_sizes, made_plans) = read_all(&fixture_server, &template);
    assert_eq!(real_stats, made_stats, "pg_stats as production's");
    // reltuples, relpages, relallvisible as production's, and the files as large.
    assert_eq!(real_sizes, made_sizes, "pg_class and the relation sizes as production's");
    assert_eq!(real_plans, made_plans, "the planner's choices on production's statistics");
    rt.block_on(async {
        fixture_server.shutdown(false).await.expect("shutdown");
        production.shutdown(false).await.expect("shutdown");
    });
}

/// A plan's node types, relations, indexes and estimated rows, depth first.
fn shape(node: &serde_json::Value) -> Vec<String> {
    let mut out = vec![format!(
        "{} {} {} rows={}",
        node["Node Type"].as_str().unwrap_or(""),
        node["Relation Name"].as_str().unwrap_or(""),
        node["Index Name"].as_str().unwrap_or(""),
        node["Plan Rows"]
    )];
    for child in node["Plans"].as_array().into_iter().flatten() {
        out.extend(shape(child));
    }
    out
}

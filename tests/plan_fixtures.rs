//! `sluice plan` end to end on the fixtures, against a real ephemeral PostgreSQL at small scale.

mod plan_support;

use assert_cmd::Command;
use plan_support::*;
use std::path::Path;

const TRANSIT_SMALL: &str = r#"
[tables.routes]
rows = 50
[tables.routes.columns]
short_name = { pattern = "R{n}" }
agency     = { one_of = ["metro", "regional"] }

[tables.stops]
rows = 500

[tables.trips]
rows = 2_000
[tables.trips.columns]
route_id     = { references = "routes.id" }
service_date = { timestamps = ["2025-01-01T00:00:00Z", "2025-12-31T00:00:00Z"] }

[tables.stop_times]
rows = 80_000
[tables.stop_times.columns]
trip_id        = { sql = "1 + (g - 1) / 40" }
stop_sequence  = { sql = "1 + (g - 1) % 40" }
route_id       = { zipf = { n = 50, s = 1.1 } }
service_date   = { timestamps = ["2025-01-01T00:00:00Z", "2025-12-31T00:00:00Z"] }
departure_time = { timestamps = ["2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"] }
stop_id        = { uniform = [1, 500] }
"#;

const REPORTING_SMALL: &str = r#"
[tables.customers]
rows = 2_000
[tables.customers.columns]
email  = { pattern = "customer-{n}@example.com" }
region = { one_of = ["north", "south", "east", "west"] }

[tables.orders]
rows = 40_000
[tables.orders.columns]
customer_id = { zipf = { n = 2_000, s = 1.05 } }
created_at  = { timestamps = ["2023-01-01T00:00:00Z", "2026-01-01T00:00:00Z"] }
status      = { one_of = ["new", "paid", "delivered"] }
total       = { sql = "round((random() * 500)::numeric, 2)" }
"#;

fn plan(fixture_dir: &Path, scale: &Path, cache: &Path, head: &str, extra: &[&str]) -> std::process::Output {
    Command::cargo_bin("sluice")
        .expect("binary")
        .current_dir(fixture_dir)
        .env_remove("DATABASE_URL")
        .env_remove("SLUICE_DATABASE_URL")
        .args(["plan", "--base-dir", "base", "--head-dir", head, "--queries", "queries", "--format", "json"])
        .arg("--scale")
        .arg(scale)
        .arg("--cache-dir")
        .arg(cache)
        .args(["--seq-scan-rows", "1000"])
        .args(extra)
        .output()
        .expect("run sluice")
}

fn notes(doc: &serde_json::Value) -> String {
    doc["notes"].as_array().expect("notes").iter().filter_map(|n| n.as_str()).collect::<Vec<_>>().join("\n")
}

#[test]
fn reporting_dropped_index_is_a_plan_regression_and_the_safe_head_passes() {
    require_postgres();
    let cache = cache_dir();
    let scale = cache.path().join("scale.toml");
    write(&scale, REPORTING_SMALL);
    let dir = fixture("reporting");

    let out = plan(&dir, &scale, cache.path(), "head-regression", &[]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(1), "a regression fails the gate: {doc:#}");
    let regressions = findings(&doc, "plan-regression");
    assert_eq!(regressions.len(), 1, "{doc:#}");
    let f = regressions[0];
    assert_eq!(f["file"], "queries/daily_revenue.sql");
    assert_eq!(f["line"], 2, "the statement's line, after the comment");
    let message = f["message"].as_str().expect("message");
    assert!(message.contains("orders_created_at_idx") && message.contains("Seq Scan"), "{message}");
    let help = f["help"].as_str().expect("help");
    assert!(help.lines().any(|l| l.starts_with('-') && l.contains("orders_created_at_idx")), "{help}");
    assert!(help.lines().any(|l| l.starts_with('+') && l.contains("Seq Scan on orders")), "{help}");
    // Both plans are in the evidence, as PostgreSQL returned them.
    assert!(f["evidence"]["base_plan"]["Plan"]["Node Type"].as_str().is_some());
    assert!(f["evidence"]["head_plan"].to_string().contains("\"Seq Scan\""));
    assert!(f["evidence"]["base_plan"].to_string().contains("orders_created_at_idx"));
    assert!(notes(&doc).contains("fixture: built"), "{}", notes(&doc));
    // Rows Sluice can draw are streamed by binary COPY, written frozen (the table was truncated
    // in the loading transaction); an `sql` expression with random() is evaluated by PostgreSQL.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().any(|l| l.starts_with("sluice: fixture: 2,000 rows into customers in")
            && l.contains("s (binary COPY, frozen, ")
            && whole_rows_per_second(l)),
        "{stderr}"
    );
    assert!(
        stderr.lines().any(|l| l.contains("40,000 rows into orders")
            && l.contains("(INSERT … SELECT, ")
            && whole_rows_per_second(l)),
        "{stderr}"
    );
    assert!(stderr.contains("sluice: fixture: index orders_created_at_idx on orders built in"), "{stderr}");
    // The other query (customer_orders) keeps its plan.
    assert!(doc["findings"].as_array().expect("findings").iter().all(|f| f["file"] == "queries/daily_revenue.sql"));

    let out = plan(&dir, &scale, cache.path(), "head-safe", &[]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    assert!(findings(&doc, "plan-regression").is_empty(), "{doc:#}");
    assert!(
        notes(&doc).contains("fixture: reused cached"),
        "the second run on the same base reuses the fixture: {}",
        notes(&doc)
    );

    // The server is stopped after each run and the per-run databases are gone.
    assert!(
        !cache.path().join("pg15/data/postmaster.pid").exists() || !is_running(cache.path()),
        "server left running"
    );
}

/// A progress line ends with its rate in whole rows per second: `(…, 1,234,567 rows/s)`.
fn whole_rows_per_second(line: &str) -> bool {
    let Some(rate) = line.strip_suffix(" rows/s)").and_then(|l| l.rsplit(", ").next()) else {
        return false;
    };
    !rate.is_empty() && rate.chars().all(|c| c.is_ascii_digit() || c == ',')
}

fn is_running(cache: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(cache.join("pg15/data/postmaster.pid")) else {
        return false;
    };
    let pid: i32 = text.lines().next().and_then(|l| l.trim().parse().ok()).unwrap_or(0);
    pid > 0 && Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn transit_moved_index_is_a_plan_regression_and_the_safe_head_passes() {
    require_postgres();
    let cache = cache_dir();
    let scale = cache.path().join("scale.toml");
    write(&scale, TRANSIT_SMALL);
    let dir = fixture("transit-planner");

    let out = plan(&dir, &scale, cache.path(), "head-regression", &[]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}");
    let regressions = findings(&doc, "plan-regression");
    let departures: Vec<_> = regressions.iter().filter(|f| f["file"] == "queries/departures.sql").collect();
    assert_eq!(departures.len(), 1, "{doc:#}");
    let message = departures[0]["message"].as_str().expect("message");
    assert!(message.contains("stop_times_route_date_departure_idx"), "{message}");
    assert!(message.contains("Seq Scan on head"), "{message}");
    assert!(!is_running(cache.path()));

    let out = plan(&dir, &scale, cache.path(), "head-safe", &[]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    assert!(findings(&doc, "plan-regression").is_empty(), "{doc:#}");
}

#[test]
fn analyze_measures_latency_flags_the_incident_query_and_checks_the_pool() {
    require_postgres();
    let cache = cache_dir();
    // One busy service day, so the index prefix (route_id, service_date) fetches many rows.
    let scale = cache.path().join("scale.toml");
    write(
        &scale,
        &TRANSIT_SMALL.replace(
            "service_date   = { timestamps = [\"2025-01-01T00:00:00Z\", \"2025-12-31T00:00:00Z\"] }",
            "service_date   = { constant = \"2025-07-02\" }",
        ),
    );
    // A pool of 2 connections: the head's sequential scans at 1,000,000 req/s cannot fit.
    let workload = cache.path().join("workload.toml");
    write(
        &workload,
        "[pool]\nsize = 1\ninstances = 2\n\n[[queries]]\nfile = \"queries/departures.sql\"\npeak_rps = 1000000\n",
    );
    let dir = fixture("transit-planner");
    let out = plan(
        &dir,
        &scale,
        cache.path(),
        "head-regression",
        &["--analyze", "--repeat", "3", "--workload", workload.to_str().expect("utf8")],
    );
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}");

    let pool = findings(&doc, "pool-capacity");
    assert_eq!(pool.len(), 1, "{doc:#}");
    let ev = &pool[0]["evidence"];
    let head_ms = ev["queries"][0]["head_ms"].as_f64().expect("head latency");
    let base_ms = ev["queries"][0]["base_ms"].as_f64().expect("base latency");
    assert!(head_ms > base_ms, "the seq scan is slower than the index scan: {head_ms} vs {base_ms}");
    assert!(
        (ev["head_busy"].as_f64().expect("busy") - head_ms / 1000.0 * 1_000_000.0).abs() < 1e-6,
        "Little's law: {ev}"
    );
    assert_eq!(ev["pool_total"], 2);
    let message = pool[0]["message"].as_str().expect("message");
    assert!(
        message.contains("at 1000000 req/s this query would hold") && message.contains("the pool has 2"),
        "{message}"
    );

    // A missing index is no regression when the head plan is cheaper without it.
    assert!(findings(&doc, "plan-regression").iter().all(|f| f["file"] != "queries/departures_local.sql"), "{doc:#}");

    // Measured medians are in the evidence of the regression.
    let regression = findings(&doc, "plan-regression");
    let r = regression.iter().find(|f| f["file"] == "queries/departures.sql").expect("regression");
    assert_eq!(r["evidence"]["head_analyze"]["runs_ms"].as_array().map(Vec::len), Some(3));
    assert!(r["message"].as_str().is_some_and(|m| m.contains("median")));

    // The transit incident's query on the safe head: convert_timezone() on the third index column.
    let out = plan(&dir, &scale, cache.path(), "head-safe", &["--analyze", "--repeat", "3"]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "warnings do not fail the gate: {doc:#}");
    let inefficient = findings(&doc, "index-inefficient");
    assert!(
        inefficient.iter().any(|f| f["file"] == "queries/departures_local.sql"
            && f["message"].as_str().is_some_and(|m| m.contains("the filter removes"))),
        "{doc:#}"
    );
    assert!(notes(&doc).contains("pool-capacity not checked") || findings(&doc, "pool-capacity").is_empty());
}

#[test]
fn a_bad_scale_spec_is_exit_2_naming_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scale = dir.path().join("scale.toml");
    write(&scale, "[tables.orders]\nrows = 10\n[tables.orders.columns]\ntotal = { uniform = [5, 1] }\n");
    let out = plan(&fixture("reporting"), &scale, dir.path(), "head-safe", &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("scale.toml:4:") && stderr.contains("tables.orders.columns.total"), "{stderr}");
}

#[test]
fn a_spec_naming_a_missing_column_is_an_error_naming_the_line() {
    require_postgres();
    let cache = cache_dir();
    let scale = cache.path().join("scale.toml");
    write(&scale, "[tables.orders]\nrows = 10\n[tables.orders.columns]\nprice = { uniform = [1, 5] }\n");
    let out = plan(&fixture("reporting"), &scale, cache.path(), "head-safe", &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("scale.toml:4:") && stderr.contains("has no column price"), "{stderr}");
    assert!(!is_running(cache.path()), "the server is stopped on error too");
}

/// Flyway orders by version (V10 after V2) and never applies undo (U…) files; a directory
/// comparison must too, or the fixture would be built from the wrong history.
#[test]
fn directory_mode_orders_migrations_by_the_layout_runner() {
    require_postgres();
    let cache = cache_dir();
    let dir = cache.path().join("project");
    let reporting = fixture("reporting");
    let read = |name: &str| std::fs::read_to_string(reporting.join(name)).expect("fixture");
    for side in ["base", "head"] {
        write(&dir.join(side).join("V1__orders.sql"), &read("base/0001_orders.sql"));
        write(&dir.join(side).join("V2__reporting_index.sql"), &read("base/0002_reporting_index.sql"));
        write(
            &dir.join(side).join("U2__reporting_index.sql"),
            "DROP INDEX orders_created_at_idx;\nDROP INDEX orders_customer_idx;\n",
        );
    }
    // Sorted as text, V10 would run before V2 and fail: the index does not exist yet.
    write(&dir.join("head/V10__drop_unused_indexes.sql"), &read("head-regression/0003_drop_unused_indexes.sql"));
    for query in ["daily_revenue.sql", "customer_orders.sql"] {
        write(&dir.join("queries").join(query), &read(&format!("queries/{query}")));
    }
    let scale = cache.path().join("scale.toml");
    write(&scale, REPORTING_SMALL);
    let out = plan(&dir, &scale, cache.path(), "head", &[]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}");
    let regressions = findings(&doc, "plan-regression");
    assert_eq!(regressions.len(), 1, "{doc:#}");
    assert_eq!(regressions[0]["file"], "queries/daily_revenue.sql");
    assert!(regressions[0]["message"].as_str().expect("message").contains("orders_created_at_idx"), "{doc:#}");
    assert!(notes(&doc).contains("head: 1 new migration(s) applied"), "{}", notes(&doc));
}

#[test]
fn git_revisions_outside_a_repository_are_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scale = dir.path().join("scale.toml");
    write(&scale, REPORTING_SMALL);
    let out = Command::cargo_bin("sluice")
        .expect("binary")
        .current_dir(dir.path())
        .args(["plan", "--base", "main", "--scale"])
        .arg(&scale)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not inside a git repository"), "{stderr}");
}

/// Issue 10's example: a pull request replaces `events (account_id, created_at)` by
/// `events (account_id)`. The head plan still reads events through an index and costs a few
/// times more, not ten: one warning (with the plan diff), not a gate failure.
#[test]
fn an_index_replaced_by_its_prefix_is_a_cost_warning_not_a_regression() {
    require_postgres();
    let cache = cache_dir();
    let dir = cache.path().join("project");
    let schema = "CREATE TABLE accounts (id integer PRIMARY KEY, name text NOT NULL);\n\
                  CREATE TABLE events (\n    id bigint PRIMARY KEY,\n    account_id integer NOT NULL REFERENCES accounts (id),\n    \
                  created_at timestamptz NOT NULL,\n    kind text NOT NULL\n);\n\
                  CREATE INDEX events_account_created_idx ON events (account_id, created_at);\n";
    for side in ["base", "head"] {
        write(&dir.join(side).join("0001_events.sql"), schema);
    }
    write(
        &dir.join("head/0002_narrow_index.sql"),
        "CREATE INDEX events_account_idx ON events (account_id);\nDROP INDEX events_account_created_idx;\n",
    );
    write(
        &dir.join("queries/recent_events.sql"),
        "-- An account's events since a moment.\nSELECT id, kind FROM events WHERE account_id = $1 AND created_at >= $2;\n",
    );
    let scale = cache.path().join("scale.toml");
    write(
        &scale,
        "[tables.accounts]\nrows = 2_000\n\n[tables.events]\nrows = 200_000\n[tables.events.columns]\n\
         account_id = { uniform = [1, 2_000] }\n\
         created_at = { timestamps = [\"2025-01-01T00:00:00Z\", \"2026-01-01T00:00:00Z\"] }\n\
         kind = { one_of = [\"login\", \"purchase\", \"logout\"] }\n",
    );
    let out = plan(&dir, &scale, cache.path(), "head", &[]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "a warning does not fail the gate: {doc:#}");
    assert!(findings(&doc, "plan-regression").is_empty(), "{doc:#}");
    let all = doc["findings"].as_array().expect("findings");
    assert_eq!(all.len(), 1, "one finding per query: {doc:#}");
    let f = &all[0];
    assert_eq!((f["rule"].as_str(), f["severity"].as_str()), (Some("plan-cost-increase"), Some("warning")), "{f:#}");
    assert_eq!((f["file"].as_str(), f["line"].as_u64()), (Some("queries/recent_events.sql"), Some(2)));
    let message = f["message"].as_str().expect("message");
    assert!(
        message.contains("events_account_created_idx, which no longer exists on head")
            && message.contains("the head plan uses events_account_idx"),
        "{message}"
    );
    let (base, head) =
        (f["evidence"]["base_cost"].as_f64().expect("base"), f["evidence"]["head_cost"].as_f64().expect("head"));
    assert!(head > base && head / base < 10.0, "costlier, below the error ratio: {base} -> {head}");
    let help = f["help"].as_str().expect("help");
    assert!(help.lines().any(|l| l.starts_with('-') && l.contains("events_account_created_idx")), "{help}");
    assert!(help.lines().any(|l| l.starts_with('+') && l.contains("events_account_idx")), "{help}");
}

/// Issue 39, item 2: the fixture is in an autovacuumed production table's state. `events` sorts
/// before `users` and its foreign key column has a generator: filled first, `users` could not
/// be truncated alone and lost COPY FREEZE. `orders` is filled by INSERT … SELECT (an `sql`
/// expression with random()), whose rows only VACUUM makes all-visible.
#[test]
fn every_generated_table_is_all_visible_and_parents_load_before_their_children() {
    require_postgres();
    let cache = cache_dir();
    let dir = cache.path().join("project");
    let schema = "CREATE TABLE users (id bigint PRIMARY KEY, name text NOT NULL);\n\
                  CREATE TABLE events (id bigint PRIMARY KEY, user_id bigint NOT NULL REFERENCES users (id), kind text NOT NULL);\n\
                  CREATE INDEX events_user_idx ON events (user_id);\n\
                  CREATE TABLE orders (id bigint PRIMARY KEY, total numeric(12, 2) NOT NULL);\n";
    for side in ["base", "head"] {
        write(&dir.join(side).join("0001_schema.sql"), schema);
    }
    write(&dir.join("queries/user_events.sql"), "SELECT count(*) FROM events WHERE user_id = $1;\n");
    let scale = cache.path().join("scale.toml");
    write(
        &scale,
        "[tables.events]\nrows = 50_000\n[tables.events.columns]\nuser_id = { uniform = [1, 1_000] }\n\
         kind = { one_of = [\"a\", \"b\"] }\n\n[tables.users]\nrows = 1_000\n\n\
         [tables.orders]\nrows = 20_000\n[tables.orders.columns]\ntotal = { sql = \"round((random() * 500)::numeric, 2)\" }\n",
    );
    let out = plan(&dir, &scale, cache.path(), "head", &[]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let users = stderr.lines().position(|l| l.contains("rows into users in")).expect("users loaded");
    let events = stderr.lines().position(|l| l.contains("rows into events in")).expect("events loaded");
    assert!(users < events, "the parent first: {stderr}");
    assert!(
        stderr.lines().any(|l| l.contains("rows into users in") && l.contains("(binary COPY, frozen, ")),
        "{stderr}"
    );
    assert!(stderr.contains("sluice: fixture: VACUUM and ANALYZE in"), "{stderr}");
    assert!(!notes(&doc).contains("could not be frozen"), "{}", notes(&doc));

    // The cached template itself: every page of every table is all-visible.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let (server, template) = cached_template(cache.path()).await;
        let client = server.connect(&template).await.expect("template");
        let rows = client
            .query(
                "SELECT relname::text, relpages, relallvisible FROM pg_class WHERE relname IN ('users', 'events', 'orders') ORDER BY 1",
                &[],
            )
            .await
            .expect("pg_class");
        assert_eq!(rows.len(), 3);
        for row in rows {
            let (name, pages, visible): (String, i32, i32) = (row.get(0), row.get(1), row.get(2));
            assert!(pages > 0 && visible == pages, "{name}: {visible} of {pages} pages all-visible");
        }
        assert!(sluice::plan::fill::not_all_visible(&client).await.expect("visibility").is_empty());
        // A table written after the load and never vacuumed is reported, by name.
        client.batch_execute("CREATE TABLE late AS SELECT g FROM generate_series(1, 10000) g; ANALYZE late").await.expect("late");
        let notes = sluice::plan::fill::not_all_visible(&client).await.expect("visibility");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("table late could not be frozen: 0 of its"), "{notes:?}");
        client.batch_execute("DROP TABLE late").await.expect("drop");
        server.shutdown(false).await.expect("shutdown");
    });
}

/// Issue 39, item 5: verdicts weigh absolute cost. Narrowing `(account_id, kind)` to
/// `(account_id)` multiplies a cheap plan's cost more than tenfold (one row fetched, then a
/// hundred filtered): a warning, not a regression, below `[plan] cost_floor`. Replacing
/// `(user_id)` by `(user_id, created_at)` serves the user query at the same cost: no finding.
#[test]
fn a_cheap_plan_is_no_regression_whatever_the_ratio_and_an_equal_cost_swap_is_no_warning() {
    require_postgres();
    let cache = cache_dir();
    let dir = cache.path().join("project");
    let schema = "CREATE TABLE events (id bigint PRIMARY KEY, account_id integer NOT NULL, user_id integer NOT NULL, \
                  kind integer NOT NULL, created_at timestamptz NOT NULL);\n\
                  CREATE INDEX events_account_kind_idx ON events (account_id, kind);\n\
                  CREATE INDEX events_user_idx ON events (user_id);\n";
    for side in ["base", "head"] {
        write(&dir.join(side).join("0001_events.sql"), schema);
    }
    write(
        &dir.join("head/0002_swap_indexes.sql"),
        "CREATE INDEX events_account_idx ON events (account_id);\nDROP INDEX events_account_kind_idx;\n\
         CREATE INDEX events_user_created_idx ON events (user_id, created_at);\nDROP INDEX events_user_idx;\n",
    );
    write(&dir.join("queries/account_kind.sql"), "SELECT id FROM events WHERE account_id = $1 AND kind = $2;\n");
    write(&dir.join("queries/user_events.sql"), "SELECT id, kind FROM events WHERE user_id = $1;\n");
    let scale = cache.path().join("scale.toml");
    write(
        &scale,
        "[tables.events]\nrows = 200_000\n[tables.events.columns]\naccount_id = { uniform = [1, 2_000] }\n\
         user_id = { uniform = [1, 20_000] }\nkind = { uniform = [1, 100] }\n",
    );
    let out = plan(&dir, &scale, cache.path(), "head", &[]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "no error: {doc:#}");
    let all = doc["findings"].as_array().expect("findings");
    assert_eq!(all.len(), 1, "one warning, on the narrowed index only: {doc:#}");
    let f = &all[0];
    assert_eq!(
        (f["rule"].as_str(), f["file"].as_str()),
        (Some("plan-cost-increase"), Some("queries/account_kind.sql"))
    );
    let (base, head) =
        (f["evidence"]["base_cost"].as_f64().expect("base"), f["evidence"]["head_cost"].as_f64().expect("head"));
    assert!(head > 10.0 * base && head < 1_000.0, "a large ratio on a cheap plan: {base} -> {head}");
    assert!(f["message"].as_str().expect("message").contains("below the cost floor of 1000"), "{f:#}");

    // The same change with the floor lowered under the head's cost is a regression again.
    std::fs::write(dir.join("sluice.toml"), "[plan]\ncost_floor = 10\n").expect("config");
    let out = plan(&dir, &scale, cache.path(), "head", &["--config", "sluice.toml"]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}");
    assert_eq!(findings(&doc, "plan-regression").len(), 1, "{doc:#}");
}

/// Issue 39, item 5: the pool turns a slowdown of a hot query into an error, with production's
/// mean time standing in for a measurement: the head's latency is the mean times the head's
/// cost over the base's, so no query has to run (no --analyze).
#[test]
fn production_mean_times_and_the_cost_ratio_check_the_pool_without_running_queries() {
    require_postgres();
    let cache = cache_dir();
    let scale = cache.path().join("scale.toml");
    write(&scale, REPORTING_SMALL);
    let workload = cache.path().join("workload.toml");
    write(
        &workload,
        "[pool]\nsize = 2\n\n[[queries]]\nfile = \"queries/daily_revenue.sql\"\npeak_rps = 1000\nmean_ms = 1\n\n\
         [[queries]]\nfile = \"queries/customer_orders.sql\"\npeak_rps = 10\n",
    );
    let out = plan(
        &fixture("reporting"),
        &scale,
        cache.path(),
        "head-regression",
        &["--workload", workload.to_str().expect("utf8")],
    );
    let doc = json(&out);
    let pool = findings(&doc, "pool-capacity");
    assert_eq!(pool.len(), 1, "{doc:#}");
    let ev = &pool[0]["evidence"];
    let q = &ev["queries"][0];
    assert_eq!(
        (q["file"].as_str(), q["latency"].as_str()),
        (Some("queries/daily_revenue.sql"), Some("mean × cost ratio"))
    );
    let regression = findings(&doc, "plan-regression");
    let costs = &regression[0]["evidence"];
    let ratio = costs["head_cost"].as_f64().expect("head") / costs["base_cost"].as_f64().expect("base");
    assert!((q["head_ms"].as_f64().expect("head ms") - ratio).abs() < 1e-6, "1 ms × the cost ratio {ratio}: {q}");
    assert_eq!(ev["base_busy"].as_f64(), Some(1.0), "1,000 req/s × production's 1 ms; the other query has no latency");
    assert_eq!(ev["queries"].as_array().map(Vec::len), Some(1));
    assert!(notes(&doc).contains("pool-capacity: no latency for queries/customer_orders.sql"), "{}", notes(&doc));
}

/// A copy of a fixture project to edit, in a directory of its own.
fn copy_of(from: &Path) -> tempfile::TempDir {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for entry in std::fs::read_dir(from).expect("list") {
            let entry = entry.expect("entry");
            let target = to.join(entry.file_name());
            if entry.file_type().expect("type").is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).expect("copy");
            }
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    copy(from, dir.path());
    dir
}

/// Two `pg_stat_statements` exports ten seconds apart, as `sluice stats workload` writes them:
/// the reporting query at 1,000 calls/s × 1 ms, a login query at 100 calls/s × 2 ms, and
/// `BEGIN` (not checked, but it holds connections: 0.1).
const DAILY_REVENUE_RECORDED: &str = "SELECT c.region, sum(o.total) AS revenue, count(*) AS orders FROM orders o \
    JOIN customers c ON c.id = o.customer_id WHERE o.created_at >= $1 AND o.created_at < $2 GROUP BY c.region";

fn workload_snapshot(at: &str, revenue: (u64, f64), login: (u64, f64), begin: (u64, f64)) -> String {
    let header = "queryid,calls,total_exec_time,mean_exec_time,rows,captured_at,stats_reset,dealloc,database,query\n";
    let row = |id: i64, (calls, total): (u64, f64), query: &str| {
        let mean = total / calls as f64;
        format!("{id},{calls},{total},{mean},{calls},{at},2026-12-01 00:00:00+00,0,app,\"{query}\"\n")
    };
    format!(
        "{header}{}{}{}",
        row(-7318, revenue, DAILY_REVENUE_RECORDED),
        row(4411, login, "SELECT id FROM customers WHERE email = $1"),
        row(12, begin, "BEGIN")
    )
}

/// Issue 36, item 4, in `sluice plan`: with two workload snapshots and no `[[queries]]` in
/// workload.toml, `pool-capacity` weighs production's measured rates and mean times, as lint
/// and check do — the planned statement a workload entry matches gets the head's latency (the
/// mean times the cost ratio), every other entry and the unchecked statements hold what
/// production measured.
#[test]
fn plan_weighs_the_pool_with_production_measured_rates() {
    require_postgres();
    let cache = cache_dir();
    let scale = cache.path().join("scale.toml");
    write(&scale, REPORTING_SMALL);
    let project = copy_of(&fixture("reporting"));
    let dir = project.path();
    let config = std::fs::read_to_string(dir.join("sluice.toml")).expect("config");
    write(
        &dir.join("sluice.toml"),
        &config.replace(
            "dirs = [\"queries\"]",
            "dirs = [\"queries\"]\nworkload = [\"policies/workload-1.csv\", \"policies/workload-2.csv\"]",
        ),
    );
    write(
        &dir.join("policies/workload-1.csv"),
        &workload_snapshot("2026-12-03 10:00:00+00", (1_000, 1_000.0), (500, 1_000.0), (2_000, 20.0)),
    );
    write(
        &dir.join("policies/workload-2.csv"),
        &workload_snapshot("2026-12-03 10:00:10+00", (11_000, 11_000.0), (1_500, 3_000.0), (22_000, 1_020.0)),
    );
    write(&dir.join("policies/workload.toml"), "[pool]\nsize = 2\n");

    // The base carries 1.3 connections (1 + 0.2 + 0.1) of the 1.6 allowed; the regression makes
    // the reporting query cost more, and the pool cannot carry it.
    let out = plan(dir, &scale, cache.path(), "head-regression", &[]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}");
    let pool = findings(&doc, "pool-capacity");
    assert_eq!(pool.len(), 1, "{doc:#}");
    assert_eq!(pool[0]["file"], "queries/daily_revenue.sql");
    let message = pool[0]["message"].as_str().expect("message");
    assert!(message.starts_with("at 1 k calls/s (production's, measured) this query would hold"), "{message}");
    let ev = &pool[0]["evidence"];
    let base_busy = ev["base_busy"].as_f64().expect("base busy");
    assert!((base_busy - 1.3).abs() < 1e-9, "production's measured load on base: {ev:#}");
    assert!((ev["other_busy"].as_f64().expect("other") - 0.1).abs() < 1e-9, "BEGIN's share: {ev:#}");
    let queries = ev["queries"].as_array().expect("queries");
    assert_eq!(queries.len(), 2, "{ev:#}");
    let revenue = &queries[0];
    assert!(
        revenue["file"]
            .as_str()
            .unwrap()
            .starts_with("queries/daily_revenue.sql:2 (workload entry at policies/workload-2.csv:2"),
        "{revenue}"
    );
    assert_eq!(revenue["latency"], "mean × cost ratio");
    assert!((revenue["peak_rps"].as_f64().unwrap() - 1_000.0).abs() < 1e-9, "{revenue}");
    let regression = findings(&doc, "plan-regression");
    let costs = &regression[0]["evidence"];
    let ratio = costs["head_cost"].as_f64().expect("head") / costs["base_cost"].as_f64().expect("base");
    assert!((revenue["head_ms"].as_f64().unwrap() - ratio).abs() < 1e-6, "1 ms × the cost ratio {ratio}: {revenue}");
    let login = &queries[1];
    assert_eq!(login["latency"], "production's mean");
    assert_eq!((login["peak_rps"].as_f64(), login["head_ms"].as_f64()), (Some(100.0), Some(2.0)));
    assert!(
        notes(&doc).contains("pool-capacity: rates and mean times from production's workload (policies/workload-1.csv → policies/workload-2.csv"),
        "{}",
        notes(&doc)
    );

    // The safe head leaves the costs as they are: production's 1.3 fits.
    let out = plan(dir, &scale, cache.path(), "head-safe", &[]);
    let doc = json(&out);
    assert!(findings(&doc, "pool-capacity").is_empty(), "{doc:#}");
}

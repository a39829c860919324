//! Changed queries are compared as changed (issue 39, item 1): a query file whose text differs
//! between base and head is planned in its base text on the base fixture and in its head text
//! on the head, in a real git repository against a real ephemeral PostgreSQL.

mod plan_support;
mod support;

use plan_support::*;
use support::git::TestRepo;

const CONFIG: &str = "[migrations]\ndir = \"migrations\"\n\n[queries]\ndirs = [\"queries\"]\n";

/// `sluice plan` from `main` to HEAD in `repo`, as JSON.
fn plan_git(repo: &TestRepo, scale: &str, cache: &std::path::Path) -> (Option<i32>, serde_json::Value) {
    let scale_path = cache.join("scale.toml");
    write(&scale_path, scale);
    let out = assert_cmd::Command::cargo_bin("sluice")
        .expect("binary")
        .current_dir(repo.path())
        .env_remove("DATABASE_URL")
        .env_remove("SLUICE_DATABASE_URL")
        .env_remove("CI")
        .args(["plan", "--base", "main", "--head", "HEAD", "--format", "json", "--seq-scan-rows", "1000"])
        .arg("--scale")
        .arg(&scale_path)
        .arg("--cache-dir")
        .arg(cache)
        .output()
        .expect("run sluice");
    (out.status.code(), json(&out))
}

fn fixture_text(fixture_name: &str, path: &str) -> String {
    std::fs::read_to_string(fixture(fixture_name).join(path)).expect("fixture file")
}

const ORDERS_SCALE: &str = r#"
[tables.customers]
rows = 2_000
[tables.customers.columns]
email  = { pattern = "customer-{n}@example.com" }
region = { one_of = ["north", "south", "east", "west"] }

[tables.orders]
rows = 200_000
[tables.orders.columns]
customer_id = { uniform = [1, 2_000] }
created_at  = { timestamps = ["2023-01-01T00:00:00Z", "2026-01-01T00:00:00Z"] }
status      = { one_of = ["new", "paid", "delivered"] }
total       = { uniform = [1, 500] }
"#;

/// The change no lint rule recognizes: `customer_id = $1` becomes `customer_id = $1 OR total >
/// $2`, and the index scan becomes a Seq Scan of 200,000 rows. Planning the head text on both
/// sides (as before) saw the same Seq Scan twice and reported nothing.
#[test]
fn a_changed_predicate_that_loses_the_index_is_a_plan_regression() {
    require_postgres();
    let cache = cache_dir();
    let repo = TestRepo::new();
    repo.write("sluice.toml", CONFIG);
    repo.write("migrations/0001_orders.sql", &fixture_text("reporting", "base/0001_orders.sql"));
    repo.write("migrations/0002_reporting_index.sql", &fixture_text("reporting", "base/0002_reporting_index.sql"));
    repo.write("queries/customer_orders.sql", "SELECT o.id, o.total FROM orders o WHERE o.customer_id = $1;\n");
    repo.write("queries/unchanged.sql", "SELECT count(*) FROM customers WHERE id = $1;\n");
    repo.commit("base");
    repo.checkout_new_branch("change");
    repo.write(
        "queries/customer_orders.sql",
        "SELECT o.id, o.total FROM orders o WHERE o.customer_id = $1 OR o.total > $2;\n",
    );
    repo.write("queries/new_report.sql", "SELECT status, count(*) FROM orders GROUP BY status;\n");
    repo.commit("widen the customer query");

    let (code, doc) = plan_git(&repo, ORDERS_SCALE, cache.path());
    assert_eq!(code, Some(1), "{doc:#}");
    let regressions = findings(&doc, "plan-regression");
    let changed: Vec<_> = regressions.iter().filter(|f| f["file"] == "queries/customer_orders.sql").collect();
    assert_eq!(changed.len(), 1, "{doc:#}");
    let f = changed[0];
    let message = f["message"].as_str().expect("message");
    assert!(message.contains("orders (o) was read by") && message.contains("Seq Scan on head"), "{message}");
    assert!(f["evidence"]["base_plan"].to_string().contains("orders_customer_idx"), "{f:#}");
    let help = f["help"].as_str().expect("help");
    assert!(help.contains("the query changed: its base text (line 1 on base) was planned on base"), "{help}");
    // The unchanged file plans the same on both sides; the new file is judged on its own.
    assert!(doc["findings"].as_array().expect("findings").iter().all(|f| f["file"] != "queries/unchanged.sql"));
    let expensive = findings(&doc, "plan-expensive");
    assert_eq!(expensive.len(), 1, "{doc:#}");
    assert_eq!(expensive[0]["file"], "queries/new_report.sql");
    assert!(expensive[0]["message"].as_str().is_some_and(|m| m.contains("reads orders by Seq Scan (200,000 rows)")));
    let notes = doc["notes"].to_string();
    assert!(notes.contains("1 changed: the base text planned on base; 1 new: planned on head only"), "{notes}");
}

/// The transit outage itself: the head wraps the indexed departure time in a time-zone
/// conversion. The base text's plan uses all three index columns; the head's only two and a
/// filter, many times the cost.
#[test]
fn the_function_wrapped_departure_query_is_compared_with_its_base_text() {
    require_postgres();
    let cache = cache_dir();
    let repo = TestRepo::new();
    repo.write("sluice.toml", CONFIG);
    for m in ["0001_network.sql", "0002_departures_index.sql"] {
        repo.write(&format!("migrations/{m}"), &fixture_text("transit-planner", &format!("base/{m}")));
    }
    repo.write("queries/departures.sql", &fixture_text("transit-planner", "queries/departures.sql"));
    repo.commit("base");
    repo.checkout_new_branch("local-time");
    repo.write("queries/departures.sql", &fixture_text("transit-planner", "queries/departures_local.sql"));
    repo.commit("show local times");

    let scale = r#"
[tables.routes]
rows = 50
[tables.stops]
rows = 500
[tables.trips]
rows = 2_000
[tables.trips.columns]
route_id = { references = "routes.id" }
[tables.stop_times]
rows = 200_000
[tables.stop_times.columns]
trip_id        = { sql = "1 + (g - 1) / 100" }
stop_sequence  = { sql = "1 + (g - 1) % 100" }
route_id       = { uniform = [1, 5] }
service_date   = { constant = "2025-07-02" }
departure_time = { timestamps = ["2025-07-02T00:00:00Z", "2025-07-03T00:00:00Z"] }
stop_id        = { uniform = [1, 500] }
"#;
    let (code, doc) = plan_git(&repo, scale, cache.path());
    assert_eq!(code, Some(1), "{doc:#}");
    let all = doc["findings"].as_array().expect("findings");
    let f = all.iter().find(|f| f["file"] == "queries/departures.sql").expect("a finding on the changed query");
    assert_eq!(f["rule"], "plan-regression", "{f:#}");
    let (base, head) =
        (f["evidence"]["base_cost"].as_f64().expect("base"), f["evidence"]["head_cost"].as_f64().expect("head"));
    assert!(head > 10.0 * base, "the conversion multiplies the cost: {base} -> {head}");
    let base_text = f["facts"].to_string();
    assert!(base_text.contains("st.departure_time BETWEEN $3 AND $4"), "the base text is a fact: {base_text}");
}

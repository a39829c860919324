//! Every query source end to end: the built binary on the projects under `fixtures/queries/`.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/queries").join(name)
}

/// `sluice lint --format json` in `dir`: the exit code and the findings.
fn lint(dir: &Path) -> (i32, Vec<Value>) {
    let output = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(dir)
        .args(["lint", "--format", "json", "--no-cache"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
    });
    (output.status.code().unwrap(), doc["findings"].as_array().unwrap().clone())
}

/// (file name, line, column, rule) of the findings on query files.
fn on_queries(findings: &[Value], dir: &str) -> Vec<(String, u64, u64, String)> {
    findings
        .iter()
        .filter(|f| f["file"].as_str().unwrap().contains(dir))
        .map(|f| {
            let file = f["file"].as_str().unwrap().rsplit('/').next().unwrap().to_string();
            (file, f["line"].as_u64().unwrap(), f["column"].as_u64().unwrap(), f["rule"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn sqlc_queries_are_read_from_sqlc_yaml_and_named() {
    let (code, findings) = lint(&fixture("sqlc"));
    assert_eq!(code, 1);
    // `@id`, `sqlc.arg(id)`, `sqlc.narg('owner')`, `sqlc.slice('ids')` and `sqlc.embed(accounts)`
    // are parameters and columns, and `upper(owner)` is served by `upper((owner)::text)`: the
    // one finding is the real one.
    let found = on_queries(&findings, "/db/query/");
    assert_eq!(found, [("account.sql".to_string(), 20, 30, "function-on-indexed-column".to_string())], "{findings:#?}");
    let hit = findings.iter().find(|f| f["rule"] == "function-on-indexed-column").unwrap();
    assert!(hit["message"].as_str().unwrap().ends_with("(in sqlc query FindByEmail)"), "{hit}");
    let query = hit["facts"].as_array().unwrap().iter().find(|f| f["name"] == "query").unwrap();
    assert_eq!(query["value"], "sqlc query FindByEmail in fixtures/queries/sqlc/db/query/account.sql");
}

#[test]
fn query_files_in_every_placeholder_style_are_checked() {
    // (Not beside `id = :id`: a row found by its primary key needs no index on placed_at.)
    let (code, findings) = lint(&fixture("sql_files"));
    assert_eq!(code, 1);
    let found = on_queries(&findings, "/queries/");
    let rule = "function-on-indexed-column".to_string();
    assert_eq!(
        found,
        [
            ("jdbc.sql".to_string(), 3, 28, rule.clone()),
            ("psql.sql".to_string(), 3, 48, rule.clone()),
            ("psycopg.sql".to_string(), 3, 59, rule),
        ],
        "{findings:#?}"
    );
}

fn run(dir: &Path, args: &[&str]) -> String {
    let output = Command::cargo_bin("sluice").unwrap().current_dir(dir).args(args).output().unwrap();
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn sql_in_application_code_is_checked_where_it_is_written() {
    let dir = fixture("code");
    let (code, findings) = lint(&dir);
    assert_eq!(code, 1);
    let found = on_queries(&findings, "fixtures/queries/code/app/")
        .into_iter()
        .chain(on_queries(&findings, "fixtures/queries/code/internal/"))
        .collect::<Vec<_>>();
    let rule = "function-on-indexed-column".to_string();
    // The Go constant's third line (the literal starts on the line after `const … = \``) and
    // the second of two concatenated Python literals; `tenant_id::uuid` on a uuid column is
    // the bare column.
    assert_eq!(found, [("riders.py".to_string(), 8, 20, rule.clone()), ("departures.go".to_string(), 16, 8, rule)]);
    let go = findings.iter().find(|f| f["file"].as_str().unwrap().ends_with("departures.go")).unwrap();
    assert!(go["message"].as_str().unwrap().ends_with("(in pgx Query)"), "{go}");
    let facts: Vec<(&str, &str)> = go["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["value"].as_str().unwrap()))
        .collect();
    assert!(facts.contains(&("query", "pgx Query in fixtures/queries/code/internal/store/departures.go")), "{facts:?}");
    assert!(facts
        .iter()
        .any(|(name, sql)| *name == "sql" && sql.starts_with("SELECT trip_id, departure_time FROM stop_times")));

    // Annotations land on the code line.
    let github = run(&dir, &["lint", "--format", "github"]);
    assert!(
        github.contains("::error file=fixtures/queries/code/internal/store/departures.go,line=16,endLine=16,col=8,"),
        "{github}"
    );
    let sarif: Value = serde_json::from_str(&run(&dir, &["lint", "--format", "sarif"])).unwrap();
    let regions: Vec<(String, u64)> = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let location = &r["locations"][0]["physicalLocation"];
            (
                location["artifactLocation"]["uri"].as_str().unwrap().to_string(),
                location["region"]["startLine"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(regions.contains(&("fixtures/queries/code/app/riders.py".to_string(), 8)), "{regions:?}");

    // What is built at run time is said, with its line, and raises nothing.
    let table = run(&dir, &["lint"]);
    assert!(
        table.contains(
            "departures.go: 1 SQL string(s) at database calls are built at run time and were not checked: line 33"
        ),
        "{table}"
    );
    assert!(table.contains("3 queries in 2 code file(s)"), "{table}");
}

/// (file name, line, rule) of `sluice lint --format json ARGS` in `dir`, and the exit code.
fn lint_with(dir: &Path, args: &[&str]) -> (i32, Vec<(String, u64, String)>) {
    let output = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(dir)
        .args(["lint", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)));
    let mut findings: Vec<_> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let file = f["file"].as_str().unwrap().rsplit('/').next().unwrap().to_string();
            (file, f["line"].as_u64().unwrap(), f["rule"].as_str().unwrap().to_string())
        })
        .collect();
    findings.sort();
    (output.status.code().unwrap(), findings)
}

#[test]
fn the_code_scan_cache_serves_unchanged_files_and_never_hides_a_change() {
    let work = tempfile::tempdir().unwrap();
    let app = work.path().join("app");
    let copied = std::process::Command::new("cp").arg("-r").arg(fixture("code")).arg(&app).status().unwrap();
    assert!(copied.success());
    // A file that holds no query (its calls are to no database API): the cache trusts such a
    // file on its metadata alone.
    let departures = std::fs::read_to_string(app.join("internal/store/departures.go")).unwrap();
    let extra = app.join("internal/store/extra.go");
    std::fs::write(&extra, departures.replace(".Query(", ".Qxery(").replace(".Exec(", ".Exxc(")).unwrap();
    let cache = work.path().join("cache");
    let cached = ["--cache-dir", cache.to_str().unwrap()];
    // Old enough that the first run trusts their metadata from then on (the racy window).
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let cold = lint_with(&app, &["--no-cache"]);
    assert_eq!(cold.0, 1);
    assert_eq!(cold.1.iter().filter(|f| f.2 == "function-on-indexed-column").count(), 2, "{cold:?}");
    assert_eq!(lint_with(&app, &cached), cold, "filling the cache");
    assert!(std::fs::read_dir(cache.join("queries")).unwrap().count() > 0);
    assert_eq!(lint_with(&app, &cached), cold, "served from the cache");

    // The Python query no longer wraps the column; the file keeps its size.
    let riders = app.join("app/riders.py");
    let text = std::fs::read_to_string(&riders).unwrap();
    let edited = text.replace("lower(email) = lower(%s)", "email        = lower(%s)");
    assert_eq!((edited.len(), edited != text), (text.len(), true));
    std::fs::write(&riders, edited).unwrap();
    let after = lint_with(&app, &cached);
    assert_eq!(after, lint_with(&app, &["--no-cache"]));
    assert!(!after.1.iter().any(|f| f.0 == "riders.py"), "{after:?}");
    assert!(after.1.iter().any(|f| f.0 == "departures.go"), "{after:?}");
    assert!(!after.1.iter().any(|f| f.0 == "extra.go"), "{after:?}");

    // The file without a query gains one, keeping its size.
    std::fs::write(&extra, &departures).unwrap();
    let after = lint_with(&app, &cached);
    assert_eq!(after, lint_with(&app, &["--no-cache"]));
    assert!(after.1.contains(&("extra.go".to_string(), 16, "function-on-indexed-column".to_string())), "{after:?}");

    // A corrupt cache is read as none.
    for file in std::fs::read_dir(cache.join("queries")).unwrap() {
        std::fs::write(file.unwrap().path(), b"not a cache").unwrap();
    }
    assert_eq!(lint_with(&app, &cached), after);
}

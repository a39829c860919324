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
    let (code, findings) = lint(&fixture("sql_files"));
    assert_eq!(code, 1);
    let found = on_queries(&findings, "/queries/");
    let rule = "function-on-indexed-column".to_string();
    assert_eq!(
        found,
        [
            ("jdbc.sql".to_string(), 3, 28, rule.clone()),
            ("psql.sql".to_string(), 3, 41, rule.clone()),
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

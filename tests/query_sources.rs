//! Every query source end to end: the built binary on the projects under `fixtures/queries/`.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/queries").join(name)
}

/// `sluice lint --format json --no-cache` in `dir`: the exit code and the whole report.
fn lint_doc(dir: &Path) -> (i32, Value) {
    let output = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(dir)
        .args(["lint", "--format", "json", "--no-cache"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
    });
    (output.status.code().unwrap(), doc)
}

/// `sluice lint --format json` in `dir`: the exit code and the findings.
fn lint(dir: &Path) -> (i32, Vec<Value>) {
    let (code, doc) = lint_doc(dir);
    (code, doc["findings"].as_array().unwrap().clone())
}

/// The report's notes.
fn notes(doc: &Value) -> Vec<&str> {
    doc["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect()
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

#[test]
fn other_databases_code_is_counted_never_checked() {
    let dir = fixture("other_database");
    let (_, doc) = lint_doc(&dir);
    let findings: Vec<(String, String)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["file"].as_str().unwrap().ends_with(".sql"))
        .map(|f| (f["file"].as_str().unwrap().to_string(), f["rule"].as_str().unwrap().to_string()))
        .collect();
    // The PostgreSQL package is checked; the package importing both drivers is read as
    // PostgreSQL (it parses, so no finding); nothing of the SQLite or MySQL code is.
    assert_eq!(
        findings,
        vec![(
            "fixtures/queries/other_database/store/db/postgres/memo.go".to_string(),
            "function-on-indexed-column".to_string()
        )]
    );
    let notes = notes(&doc);
    let on = |file: &str| {
        notes.iter().filter(|n| n.starts_with(&format!("fixtures/queries/other_database/{file}:"))).count()
    };
    assert!(
        notes.contains(
            &"fixtures/queries/other_database/store/db/sqlite/memo.go: SQLite code (the package imports modernc.org/sqlite): 4 statement(s) not checked."
        ),
        "{notes:#?}"
    );
    assert!(
        notes.contains(&"fixtures/queries/other_database/client/src/history.rs: SQLite code (the file uses sqlx::sqlite): 2 statement(s) not checked."),
        "{notes:#?}"
    );
    for file in ["store/db/sqlite/memo.go", "store/db/mysql/memo.go", "scripts/export.py", "web/db.ts"] {
        assert_eq!(on(file), 1, "one note for {file}: {notes:#?}");
    }
    // The file that imports the driver holds no SQL: no note.
    assert_eq!(on("store/db/sqlite/functions.go"), 0);

    let listed = run(&dir, &["queries", "--format", "json", "."]);
    let json: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(json["totals"]["queries"], 2, "{listed}");
    assert_eq!(json["totals"]["other_database"], 9, "{listed}");
    let mysql = json["files"].as_array().unwrap().iter().find(|f| f["path"] == "./store/db/mysql/memo.go").unwrap();
    assert_eq!(mysql["other_database"][0]["database"], "MySQL");
    assert_eq!(mysql["other_database"][0]["shown_by"], "the package imports github.com/go-sql-driver/mysql");
    assert!(run(&dir, &["queries", "."])
        .contains("2 queries in 2 files (2 parsed by Sluice), 0 unreadable, 0 skipped, 9 for another database, 0 in migration code"));
}

#[test]
fn migration_code_is_counted_never_checked() {
    let dir = fixture("migration_code");
    let (_, doc) = lint_doc(&dir);
    let files: Vec<&str> = doc["findings"].as_array().unwrap().iter().map(|f| f["file"].as_str().unwrap()).collect();
    // The same predicate in the application's code is a finding; in the migrations it is not.
    assert_eq!(files, ["fixtures/queries/migration_code/internal/store/views.go"]);
    let notes = notes(&doc);
    for note in [
        "fixtures/queries/migration_code/internal/migrations/v3.0.0.go: migration code (in a `migrations` directory): 1 statement(s) not checked.",
        "fixtures/queries/migration_code/db/goose/20240101_add_views.go: migration code (it registers a goose migration with goose.AddMigrationContext): 1 statement(s) not checked.",
    ] {
        assert!(notes.contains(&note), "{notes:#?}");
    }
    let listed: Value = serde_json::from_str(&run(&dir, &["queries", "--format", "json", "."])).unwrap();
    assert_eq!((listed["totals"]["queries"].as_u64(), listed["totals"]["migration"].as_u64()), (Some(1), Some(2)));
}

#[test]
fn test_code_is_counted_never_checked() {
    let dir = fixture("test_code");
    let (_, doc) = lint_doc(&dir);
    let files: Vec<&str> = doc["findings"].as_array().unwrap().iter().map(|f| f["file"].as_str().unwrap()).collect();
    // The same predicate in the application's code is a finding; in a Go test file, a `testdata`
    // directory or a Rust `#[cfg(test)]` module it is not.
    assert_eq!(files, ["fixtures/queries/test_code/internal/store/users.go"]);
    let notes = notes(&doc);
    for note in [
        "fixtures/queries/test_code/internal/store/users_test.go: test code (a Go test file): 1 statement(s) not checked.",
        "fixtures/queries/test_code/internal/store/testdata/seed.go: test code (in a `testdata` directory): 1 statement(s) not checked.",
        "fixtures/queries/test_code/src/db.rs: 1 statement(s) in test code (a `#[cfg(test)]` module) were not checked.",
    ] {
        assert!(notes.contains(&note), "{notes:#?}");
    }
    let listed: Value = serde_json::from_str(&run(&dir, &["queries", "--format", "json", "."])).unwrap();
    assert_eq!((listed["totals"]["queries"].as_u64(), listed["totals"]["test"].as_u64()), (Some(2), Some(3)));
}

#[test]
fn a_project_wrapper_named_in_calls_is_read_and_a_bad_entry_is_exit_2() {
    let dir = fixture("project_calls");
    let (_, doc) = lint_doc(&dir);
    let findings: Vec<(u64, String, String)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["file"].as_str().unwrap().ends_with(".ts"))
        .map(|f| {
            let message = f["message"].as_str().unwrap();
            (f["line"].as_u64().unwrap(), f["rule"].as_str().unwrap().to_string(), message.to_string())
        })
        .collect();
    // prisma's rawQuery is checked where it is written; clickhouse's is not read at all.
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!((findings[0].0, findings[0].1.as_str()), (7, "function-on-indexed-column"));
    assert!(findings[0].2.ends_with("(in prisma.rawQuery (sluice.toml calls))"), "{}", findings[0].2);
    let notes = notes(&doc);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("fixtures/queries/project_calls/src/queries/getPageviews.ts: 1 SQL string(s)")
                && n.contains("line 14 (prisma.rawQuery (sluice.toml calls):")),
        "{notes:#?}"
    );

    // Without the setting the wrapper reads nothing.
    let work = tempfile::tempdir().unwrap();
    let copied = std::process::Command::new("cp").arg("-r").arg(&dir).arg(work.path()).status().unwrap();
    assert!(copied.success());
    let copy = work.path().join("project_calls");
    let config = std::fs::read_to_string(copy.join("sluice.toml")).unwrap();
    std::fs::write(copy.join("sluice.toml"), config.replace("  \"prisma.rawQuery\",\n", "")).unwrap();
    let listed = run(&copy, &["lint", "--format", "json", "--no-cache"]);
    assert!(!listed.contains("sluice.toml calls"), "{listed}");

    // An entry that is not a name is exit 2, naming sluice.toml's line.
    std::fs::write(copy.join("sluice.toml"), config.replace("\"prisma.rawQuery\"", "\"prisma.rawQuery()\"")).unwrap();
    let output = Command::cargo_bin("sluice").unwrap().current_dir(&copy).args(["lint"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("sluice.toml:9: [queries] calls: `prisma.rawQuery()` is not a function or method name"),
        "{stderr}"
    );
}

#[test]
fn a_go_constant_passed_in_another_file_of_its_package_is_checked_where_it_is_written() {
    let work = tempfile::tempdir().unwrap();
    let app = work.path().join("app");
    let copied = std::process::Command::new("cp").arg("-r").arg(fixture("go_package")).arg(&app).status().unwrap();
    assert!(copied.success());
    let (code, findings) = lint(&app);
    assert_eq!(code, 1);
    let on_code = on_queries(&findings, "internal/reports/");
    let rule = "function-on-indexed-column".to_string();
    // The constant's predicate in query.go, named after the call in repository.go; the test
    // file is set aside, and the constant only it passes is no query.
    assert!(on_code.contains(&("query.go".to_string(), 9, 8, rule.clone())), "{on_code:?}");
    let error = findings.iter().find(|f| f["file"].as_str().unwrap().ends_with("query.go")).unwrap();
    assert!(error["message"].as_str().unwrap().ends_with("(in pgx Query in repository.go:14)"), "{error}");
    let listed = run(&app, &["queries", "internal"]);
    assert!(listed.contains("2 queries in 1 files"), "{listed}");
    assert!(listed.contains("query_test.go: 1 in test code (a Go test file), not checked"), "{listed}");

    // Served from the cache, the package is joined again: a call that no longer passes the
    // constant takes its query away although query.go did not change.
    let cache = work.path().join("cache");
    let cached = ["--cache-dir", cache.to_str().unwrap()];
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let cold = lint_with(&app, &["--no-cache"]);
    assert_eq!(lint_with(&app, &cached), cold, "filling the cache");
    assert_eq!(lint_with(&app, &cached), cold, "served from the cache");
    assert!(cold.1.contains(&("query.go".to_string(), 9, rule.clone())), "{cold:?}");
    let repository = app.join("internal/reports/repository.go");
    let text = std::fs::read_to_string(&repository).unwrap();
    std::fs::write(&repository, text.replace("departuresByLocalHour, route", "tripsOnDate, route")).unwrap();
    let after = lint_with(&app, &cached);
    assert_eq!(after, lint_with(&app, &["--no-cache"]));
    assert!(!after.1.contains(&("query.go".to_string(), 9, rule)), "{after:?}");
}

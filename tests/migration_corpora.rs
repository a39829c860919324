//! The migration-safety corpora, linted by the built binary: migrations written the recommended
//! way produce no error or warning, and every unsafe migration is caught by the rule it is named after.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn lint_json(fixture: &str) -> (Value, i32) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(fixture);
    let output =
        Command::cargo_bin("sluice").unwrap().current_dir(&dir).args(["lint", "--format", "json"]).output().unwrap();
    let code = output.status.code().unwrap_or(-1);
    let json: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{fixture}: not JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)));
    (json, code)
}

fn loud(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .map(|f| format!("{}:{} {} {}", f["file"], f["line"], f["rule"], f["message"]))
        .collect()
}

#[test]
fn safe_flat_corpus_has_no_error_or_warning() {
    let (report, code) = lint_json("safe-migrations");
    assert_eq!(loud(&report), Vec::<String>::new());
    assert_eq!(code, 0);
    assert!(report["notes"][0].as_str().unwrap().contains("18 migration(s)"), "{}", report["notes"]);
}

#[test]
fn safe_diesel_corpus_has_no_error_or_warning() {
    let (report, code) = lint_json("safe-migrations-diesel");
    assert_eq!(loud(&report), Vec::<String>::new());
    assert_eq!(code, 0);
}

#[test]
fn every_unsafe_migration_is_caught_by_its_rule() {
    let (report, code) = lint_json("unsafe-migrations");
    assert_eq!(code, 1, "errors fail the gate");
    let findings = report["findings"].as_array().unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/unsafe-migrations/migrations");
    let mut covered = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        let Some(stem) = name.strip_suffix(".up.sql") else {
            continue;
        };
        let rule = stem.split_once('_').unwrap().1.replace('_', "-");
        if rule == "base" {
            continue;
        }
        let hit = findings.iter().any(|f| f["rule"] == rule.as_str() && f["file"].as_str().unwrap().ends_with(&name));
        assert!(
            hit,
            "{name}: no {rule} finding; found {:?}",
            findings.iter().map(|f| (&f["file"], &f["rule"])).collect::<Vec<_>>()
        );
        covered.push(rule);
    }
    for meta in sluice::rules::all() {
        let ours = matches!(meta.category, sluice::rules::Category::MigrationSafety | sluice::rules::Category::Style);
        assert!(!ours || covered.iter().any(|r| r == meta.id), "no unsafe example in the corpus for {}", meta.id);
    }
}

#[test]
fn explain_shows_the_facts_each_finding_used() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/unsafe-migrations");
    let output = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(&dir)
        .args(["lint", "--explain", "migrations/002_create_index_non_concurrently.up.sql"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("facts used: table: orders"), "{text}");
    assert!(text.contains("table rows: unknown"), "{text}");
    // golang-migrate sends the file (SET lock_timeout, CREATE INDEX) as one query string.
    assert!(text.contains("transaction: a file golang-migrate sends as one query string"), "{text}");
    assert!(text.contains("one implicit transaction"), "{text}");
    assert!(text.contains("index: orders_status"), "{text}");
}

#[test]
fn transaction_per_file_makes_concurrent_builds_fail() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::create_dir_all(p.join("migrations")).unwrap();
    std::fs::write(p.join("migrations/001_t.sql"), "CREATE TABLE t (a int);").unwrap();
    std::fs::write(p.join("migrations/002_i.sql"), "SET lock_timeout = '5s';\nCREATE INDEX CONCURRENTLY t_a ON t (a);")
        .unwrap();
    let rules = |config: &str| {
        std::fs::write(p.join("sluice.toml"), config).unwrap();
        let output =
            Command::cargo_bin("sluice").unwrap().current_dir(p).args(["lint", "--format", "json"]).output().unwrap();
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "concurrently-in-transaction")
            .map(|f| f["file"].as_str().unwrap().rsplit('/').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(rules("[migrations]\ntransaction_per_file = true\n"), ["002_i.sql"]);
    assert_eq!(rules("[migrations]\ntransaction_per_file = false\n"), Vec::<String>::new());
}

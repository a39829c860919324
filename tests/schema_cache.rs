//! The schema cache end to end: the built binary on real migration files and a real git
//! repository, each test with a cache directory of its own. A cached run must give the JSON an
//! uncached one gives, and editing a migration must stop the cache from being used past it.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Ten flat migrations: tables, indexes, a rename, columns; the later ones touch earlier tables,
/// so their findings depend on the schema the earlier ones build.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("migrations")).unwrap();
    std::fs::create_dir_all(dir.path().join("queries")).unwrap();
    std::fs::write(
        dir.path().join("sluice.toml"),
        "[migrations]\ndir = \"migrations\"\n[queries]\ndirs = [\"queries\"]\n",
    )
    .unwrap();
    let migrations = [
        "CREATE TABLE users (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, email text NOT NULL);",
        "CREATE TABLE orders (id bigint PRIMARY KEY, user_id bigint NOT NULL, placed_at timestamptz NOT NULL);",
        "CREATE INDEX CONCURRENTLY orders_placed_at ON orders (placed_at);",
        "ALTER TABLE users ADD COLUMN name text;",
        "CREATE TABLE sites (id bigint PRIMARY KEY, name varchar(80));",
        "SET lock_timeout = '2s';\nALTER TABLE orders ADD CONSTRAINT orders_user_fk FOREIGN KEY (user_id) REFERENCES users (id) NOT VALID;",
        "ALTER TABLE sites RENAME TO places;",
        "CREATE INDEX CONCURRENTLY users_email ON users (email);",
        "ALTER TABLE orders ADD COLUMN note text;",
        "DROP INDEX orders_placed_at;\nALTER TABLE places ALTER COLUMN name SET NOT NULL;\nCREATE INDEX places_name ON places (name);",
    ];
    for (i, sql) in migrations.iter().enumerate() {
        std::fs::write(migration(dir.path(), i + 1), format!("{sql}\n")).unwrap();
    }
    std::fs::write(dir.path().join("queries/by_email.sql"), "SELECT id FROM users WHERE lower(email) = $1;\n").unwrap();
    std::fs::write(
        dir.path().join("queries/recent.sql"),
        "SELECT id FROM orders WHERE placed_at > now() - interval '1 day';\n",
    )
    .unwrap();
    dir
}

fn migration(dir: &Path, n: usize) -> PathBuf {
    dir.join(format!("migrations/{n:03}_m.sql"))
}

/// `sluice lint --format json ARGS` in `dir`; the whole JSON document.
fn lint(dir: &Path, args: &[&str]) -> Value {
    let output = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(dir)
        .env_remove("SLUICE_CACHE_DIR")
        .args(["lint", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(matches!(output.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON")
}

/// The `--explain` note about the cache.
fn cache_note(doc: &Value) -> String {
    doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|n| n.starts_with("Schema cache:"))
        .expect("a cache note")
        .to_string()
}

#[test]
fn cached_and_uncached_runs_give_the_same_json() {
    let project = project();
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let dir = project.path();
    for selection in [vec![], vec!["migrations/010_m.sql"], vec!["migrations/009_m.sql"], vec!["queries"]] {
        let uncached = lint(dir, &[&["--no-cache"], selection.as_slice()].concat());
        assert!(uncached["summary"]["total"].as_u64().unwrap() > 0, "{selection:?} has findings to compare");
        let cold = lint(dir, &[&["--cache-dir", cache_dir], selection.as_slice()].concat());
        let warm = lint(dir, &[&["--cache-dir", cache_dir], selection.as_slice()].concat());
        assert_eq!(cold, uncached, "{selection:?}");
        assert_eq!(warm, uncached, "{selection:?}");
    }
    let warm = lint(dir, &["--cache-dir", cache_dir, "--explain", "migrations/010_m.sql"]);
    assert!(cache_note(&warm).contains("the first 9 of 10 migration(s) came from the cache"), "{}", cache_note(&warm));
}

#[test]
fn an_edited_migration_stops_the_cache_from_being_used_past_it() {
    let project = project();
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let dir = project.path();
    let explain = |selected: &str| lint(dir, &["--cache-dir", cache_dir, "--explain", selected]);
    // Snapshots before migration 3 and before migration 10.
    assert!(cache_note(&explain("migrations/003_m.sql")).contains("Stored the schema after the first 2."));
    assert!(cache_note(&explain("migrations/010_m.sql")).contains("Stored the schema after the first 9."));
    assert!(cache_note(&explain("migrations/010_m.sql")).contains("the first 9 of 10"));

    // Editing migration 5 changes the key of every prefix that holds it: the snapshot after 9
    // no longer matches, the one after 2 still does.
    std::fs::write(migration(dir, 5), "CREATE TABLE sites (id bigint PRIMARY KEY, name varchar(80), code text);\n")
        .unwrap();
    let after_edit = explain("migrations/010_m.sql");
    let note = cache_note(&after_edit);
    assert!(note.contains("the first 2 of 10 migration(s) came from the cache; 8 replayed"), "{note}");
    let mut uncached = lint(dir, &["--no-cache", "migrations/010_m.sql"]);
    let mut cached = after_edit.clone();
    for doc in [&mut uncached, &mut cached] {
        doc["notes"] = Value::Null;
    }
    assert_eq!(cached, uncached);

    // Deleting a migration before the snapshot invalidates it too.
    std::fs::remove_file(migration(dir, 2)).unwrap();
    let note = cache_note(&explain("migrations/010_m.sql"));
    assert!(note.contains("no cached schema applied"), "{note}");
}

#[test]
fn an_edit_changes_the_verdict_the_cache_gives() {
    let project = project();
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let dir = project.path();
    let rules = |doc: &Value| -> Vec<String> {
        doc["findings"].as_array().unwrap().iter().map(|f| f["rule"].as_str().unwrap().to_string()).collect()
    };
    // Migration 10 drops orders_placed_at, the index queries/recent.sql needs.
    let before = lint(dir, &["--cache-dir", cache_dir, "migrations/010_m.sql"]);
    assert!(rules(&before).contains(&"drop-index-in-use".to_string()), "{:?}", rules(&before));
    // Without migration 3's index there is nothing in use to drop: a warm cache must not remember it.
    std::fs::write(migration(dir, 3), "SELECT 1;\n").unwrap();
    let after = lint(dir, &["--cache-dir", cache_dir, "migrations/010_m.sql"]);
    assert!(!rules(&after).contains(&"drop-index-in-use".to_string()), "{:?}", rules(&after));
}

#[test]
fn no_cache_writes_nothing_and_concurrent_runs_agree() {
    let project = project();
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let dir = project.path();
    lint(dir, &["--no-cache", "--cache-dir", cache_dir, "migrations/010_m.sql"]);
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0, "--no-cache wrote to the cache");

    let expected = lint(dir, &["--no-cache", "migrations/010_m.sql"]);
    let runs: Vec<std::thread::JoinHandle<Value>> = (0..6)
        .map(|_| {
            let (dir, cache_dir) = (dir.to_path_buf(), cache_dir.to_string());
            std::thread::spawn(move || lint(&dir, &["--cache-dir", &cache_dir, "migrations/010_m.sql"]))
        })
        .collect();
    for run in runs {
        assert_eq!(run.join().unwrap(), expected);
    }
    let files: Vec<String> = std::fs::read_dir(cache.path().join("schema"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(files.iter().all(|name| name.ends_with(".bin")), "no temporary file left: {files:?}");
    // The hint names the snapshot the project's next run reads ahead (`SchemaCache::prefetching_for`).
    assert_eq!(files.len(), 2, "one snapshot and one hint naming it, each written atomically: {files:?}");
}

/// `git ARGS` in `dir`.
fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"])
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[test]
fn check_gives_the_same_json_with_and_without_the_cache() {
    let project = project();
    let dir = project.path();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "base"]);
    git(dir, &["checkout", "-qb", "feature"]);
    std::fs::write(migration(dir, 11), "DROP INDEX users_email;\n").unwrap();
    std::fs::write(migration(dir, 12), "ALTER TABLE orders ALTER COLUMN placed_at TYPE timestamp;\n").unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "change"]);
    let cache = tempfile::tempdir().unwrap();
    let check = |extra: &[&str]| -> Value {
        let output = Command::cargo_bin("sluice")
            .unwrap()
            .current_dir(dir)
            .env_remove("DATABASE_URL")
            .env_remove("SLUICE_CACHE_DIR")
            .args(["check", "--base", "main", "--head", "HEAD", "--format", "json"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).expect("JSON")
    };
    let uncached = check(&["--no-cache"]);
    let rules: Vec<&str> = uncached["findings"].as_array().unwrap().iter().filter_map(|f| f["rule"].as_str()).collect();
    assert!(rules.contains(&"drop-index-non-concurrently") && rules.contains(&"change-column-type"), "{rules:?}");
    let cache_dir = cache.path().to_str().unwrap();
    assert_eq!(check(&["--cache-dir", cache_dir]), uncached, "cold");
    assert!(cache.path().join("schema").read_dir().unwrap().count() > 0, "the base schema was stored");
    assert_eq!(check(&["--cache-dir", cache_dir]), uncached, "warm");
}

/// A diesel history that leans on the schema model (issue 9): a schema and `search_path`, a DO
/// block, the names PostgreSQL generates (a primary key name an ALTER TABLE frees and takes
/// again), and down files.
fn model_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("sluice.toml", "[migrations]\ndir = \"migrations\"\n");
    let migrations = [
        (
            "2024-01-01-000000_app",
            "CREATE SCHEMA app;\nCREATE TABLE app.orders (id bigint PRIMARY KEY, status text);\nCREATE TABLE orders (id bigint);\n",
            "DROP TABLE orders;\nDROP TABLE app.orders;\nDROP SCHEMA app;\n",
        ),
        (
            "2024-01-02-000000_block",
            "DO $$\nBEGIN\n  IF NOT EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'orders_id') THEN\n    CREATE INDEX orders_id ON orders (id);\n  END IF;\nEND $$;\n",
            "DROP INDEX orders_id;\n",
        ),
        (
            "2024-01-03-000000_captcha",
            "CREATE TABLE captcha_answer (id bigint NOT NULL, uuid uuid PRIMARY KEY);\n",
            "DROP TABLE captcha_answer;\n",
        ),
        (
            "2024-01-04-000000_path",
            "SET search_path = app, public;\nCREATE INDEX orders_status ON orders (status);\nALTER TABLE captcha_answer DROP CONSTRAINT captcha_answer_pkey, ADD PRIMARY KEY (id);\n",
            "DROP INDEX app.orders_status;\nALTER TABLE captcha_answer DROP CONSTRAINT captcha_answer_pkey;\n",
        ),
    ];
    for (name, up, down) in migrations {
        write(&format!("migrations/{name}/up.sql"), up);
        write(&format!("migrations/{name}/down.sql"), down);
    }
    dir
}

#[test]
fn a_snapshot_keeps_what_the_schema_model_knows() {
    let project = model_project();
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let dir = project.path();
    let last_up = "migrations/2024-01-04-000000_path/up.sql";
    let last_down = "migrations/2024-01-04-000000_path/down.sql";
    let messages = |doc: &Value| -> Vec<String> {
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| format!("{}: {}", f["rule"].as_str().unwrap(), f["message"].as_str().unwrap()))
            .collect()
    };
    for selection in [vec![], vec![last_up], vec![last_down], vec!["migrations/2024-01-02-000000_block/up.sql"]] {
        let uncached = lint(dir, &[&["--no-cache"], selection.as_slice()].concat());
        let cold = lint(dir, &[&["--cache-dir", cache_dir], selection.as_slice()].concat());
        let warm = lint(dir, &[&["--cache-dir", cache_dir], selection.as_slice()].concat());
        assert_eq!(cold, uncached, "{selection:?}");
        assert_eq!(warm, uncached, "{selection:?}");
    }
    // What the last migration's findings say depends on what the first three built, read back
    // from the snapshot: app.orders through search_path, the freed name taken again.
    let warm = lint(dir, &["--cache-dir", cache_dir, "--explain", last_up]);
    assert!(cache_note(&warm).contains("the first 3 of 4 migration(s) came from the cache"), "{}", cache_note(&warm));
    let found = messages(&warm);
    assert!(
        found.iter().any(|m| m.starts_with("create-index-non-concurrently") && m.contains("app.orders")),
        "{found:#?}"
    );
    assert!(found.iter().any(|m| m.contains("captcha_answer_pkey")), "{found:#?}");
    assert!(!found.iter().any(|m| m.contains("captcha_answer_pkey1")), "{found:#?}");
}

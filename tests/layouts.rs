//! Every migration tool, replayed as it runs: each `fixtures/layouts/<tool>/` project is linted
//! by the built binary with `layout = "auto"`. In every fixture the file that creates `orders`
//! and its `orders_email` index sorts after the file dropping that index by name, or runs before
//! it only by the tool's own order (numeric versions, journal, plan, changelog, atlas.sum), so
//! `drop-index-in-use` on the drop proves the order; the concurrent-index files prove the
//! transaction rules. The same tools read git revisions (`sluice check`).

use assert_cmd::Command;
use git2::{Repository, RepositoryInitOptions, Signature};
use serde_json::Value;
use std::path::Path;

fn fixture(tool: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/layouts").join(tool)
}

fn lint(dir: &Path) -> Value {
    let output = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(dir)
        .args(["lint", "--format", "json", "--explain"])
        .output()
        .unwrap();
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)))
}

/// (file name, line, rule) of the findings of `rules`.
fn found(report: &Value, rules: &[&str]) -> Vec<(String, u64, String)> {
    let mut out: Vec<(String, u64, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| rules.contains(&f["rule"].as_str().unwrap()))
        .map(|f| {
            let file = f["file"].as_str().unwrap();
            let name = file.rsplit('/').take(2).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("/");
            (name, f["line"].as_u64().unwrap(), f["rule"].as_str().unwrap().to_string())
        })
        .collect();
    out.sort();
    out
}

/// The fixture is detected as `tool`, replayed in the tool's order (the drop of `orders_email`
/// finds the query that needs it), read without a statement left unparsed, and its transaction
/// findings are exactly `expected` (file name, line, rule).
fn assert_replays(tool: &str, drop_file: &str, expected: &[(&str, u64, &str)]) {
    let report = lint(&fixture(tool));
    let notes = report["notes"].to_string();
    assert!(notes.contains(&format!("Migration tool: {tool} (")), "{tool}: {notes}");
    let drops = found(&report, &["drop-index-in-use"]);
    assert!(drops.iter().any(|(file, _, _)| file.ends_with(drop_file)), "{tool}: replayed out of order: {drops:?}");
    assert_eq!(found(&report, &["unparsed-statement"]), [], "{tool}: the tool's splitting must be followed");
    let expected: Vec<(String, u64, String)> =
        expected.iter().map(|(f, l, r)| (f.to_string(), *l, r.to_string())).collect();
    assert_eq!(found(&report, &["concurrently-in-transaction", "runner-rejects-migration"]), expected, "{tool}");
}

#[test]
fn goose() {
    assert_replays(
        "goose",
        "10_drop_email_index.sql",
        &[("migrations/12_concurrent_in_transaction.sql", 2, "concurrently-in-transaction")],
    );
}

#[test]
fn sqlx() {
    assert_replays(
        "sqlx",
        "10_drop_email_index.sql",
        &[("migrations/12_concurrent_in_transaction.sql", 1, "concurrently-in-transaction")],
    );
}

#[test]
fn refinery() {
    assert_replays(
        "refinery",
        "V10__drop_email_index.sql",
        &[("migrations/U11__concurrent_in_transaction.sql", 1, "concurrently-in-transaction")],
    );
}

#[test]
fn prisma() {
    // Before Prisma 7.4 (no package.json here), a migration.sql is one query string.
    assert_replays(
        "prisma",
        "20240102000000_drop_email_index/migration.sql",
        &[("20240104000000_concurrent_in_transaction/migration.sql", 2, "concurrently-in-transaction")],
    );
}

#[test]
fn drizzle() {
    assert_replays(
        "drizzle",
        "0000_drop_email_index.sql",
        &[("drizzle/0002_concurrent_in_transaction.sql", 1, "concurrently-in-transaction")],
    );
}

#[test]
fn liquibase() {
    // orders-3 (runInTransaction:false, alone) is fine; orders-4 sends SET and the index as one string.
    assert_replays(
        "liquibase",
        "changes/drop_email_index.sql",
        &[("indexes/1_concurrent.sql", 9, "concurrently-in-transaction")],
    );
}

#[test]
fn sqitch() {
    assert_replays(
        "sqitch",
        "deploy/drop_email_index.sql",
        &[("deploy/concurrent_in_transaction.sql", 2, "concurrently-in-transaction")],
    );
}

#[test]
fn atlas() {
    assert_replays(
        "atlas",
        "20240101000000_drop_email_index.sql",
        &[("migrations/20240105000000_concurrent_in_transaction.sql", 1, "concurrently-in-transaction")],
    );
}

#[test]
fn dbmate() {
    // transaction:false, yet the section is one string: SET and the index share a transaction.
    assert_replays(
        "dbmate",
        "20240102000000_drop_email_index.sql",
        &[("migrations/20240104000000_concurrent_in_transaction.sql", 3, "concurrently-in-transaction")],
    );
}

#[test]
fn flyway() {
    // V11 holds only a concurrent build: Flyway runs it outside a transaction. V12 mixes: refused.
    // db/elsewhere is not a location in flyway.conf: its DROP TABLE never runs.
    assert_replays(
        "flyway",
        "V10__drop_email_index.sql",
        &[("migration/V12__mixed.sql", 2, "runner-rejects-migration")],
    );
}

#[test]
fn diesel() {
    assert_replays(
        "diesel",
        "2017-09-23-182408_drop_email_index/up.sql",
        &[("2017-09-25-000000_concurrent_in_transaction/up.sql", 2, "concurrently-in-transaction")],
    );
}

#[test]
fn golang_migrate() {
    assert_replays(
        "golang-migrate",
        "10_drop_email_index.up.sql",
        &[("migrations/12_concurrent_in_transaction.up.sql", 2, "concurrently-in-transaction")],
    );
}

/// A layout named in sluice.toml wins; an ambiguous directory is an error listing the candidates.
#[test]
fn an_ambiguous_directory_is_an_error_and_a_configured_layout_decides() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    };
    write("sluice.toml", "[migrations]\ndir = \"migrations\"\n");
    write("migrations/V1__orders.sql", "CREATE TABLE orders (id bigint PRIMARY KEY);\n");
    write("migrations/V2__index.sql", "CREATE INDEX CONCURRENTLY orders_id ON orders (id);\n");
    let run = || {
        Command::cargo_bin("sluice")
            .unwrap()
            .current_dir(dir.path())
            .args(["lint", "--format", "json"])
            .output()
            .unwrap()
    };
    let output = run();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("flyway") && stderr.contains("refinery") && stderr.contains("layout = "), "{stderr}");
    // Flyway builds the index outside a transaction; refinery cannot.
    write("sluice.toml", "[migrations]\ndir = \"migrations\"\nlayout = \"flyway\"\n");
    let report: Value = serde_json::from_slice(&run().stdout).unwrap();
    assert_eq!(found(&report, &["concurrently-in-transaction"]), []);
    write("sluice.toml", "[migrations]\ndir = \"migrations\"\nlayout = \"refinery\"\n");
    let report: Value = serde_json::from_slice(&run().stdout).unwrap();
    assert_eq!(found(&report, &["concurrently-in-transaction"]).len(), 1);
    write("sluice.toml", "[migrations]\ndir = \"migrations\"\nlayout = \"liquid\"\n");
    let output = run();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("sluice.toml:3"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Issue 16, item 7: a symlinked migration is replayed, from disk and from a git revision.
#[test]
fn symlinked_migrations_are_followed_on_disk_and_in_git() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = RepositoryInitOptions::new();
    options.initial_head("main");
    let git = Repository::init_opts(dir.path(), &options).unwrap();
    let write = |path: &str, text: &str| {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    };
    write("sluice.toml", "[migrations]\ndir = \"db/migrations\"\n[queries]\ndirs = [\"queries\"]\n");
    write(
        "shared/001_orders.sql",
        "CREATE TABLE orders (id bigint PRIMARY KEY, email text);\nCREATE INDEX orders_email ON orders (email);\n",
    );
    std::fs::create_dir_all(dir.path().join("db/migrations")).unwrap();
    std::os::unix::fs::symlink("../../shared/001_orders.sql", dir.path().join("db/migrations/001_orders.sql")).unwrap();
    write("queries/q.sql", "SELECT id FROM orders WHERE email = $1;\n");
    let commit = |message: &str| {
        let mut index = git.index().unwrap();
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
        index.write().unwrap();
        let tree = git.find_tree(index.write_tree().unwrap()).unwrap();
        let signature = Signature::now("Test", "test@example.com").unwrap();
        let parent = git.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        git.commit(Some("HEAD"), &signature, &signature, message, &tree, &parents).unwrap();
    };
    commit("base: the history is a symbolic link");
    let head = git.head().unwrap().peel_to_commit().unwrap();
    git.branch("feature", &head, true).unwrap();
    git.set_head("refs/heads/feature").unwrap();
    write("db/migrations/002_drop.sql", "DROP INDEX orders_email;\n");
    commit("head: drop the index a query needs");

    let report = lint(dir.path());
    assert!(found(&report, &["drop-index-in-use"]).iter().any(|(f, _, _)| f.ends_with("002_drop.sql")), "{report:#}");
    let output = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(dir.path())
        .args(["check", "--base", "main", "--head", "feature", "--format", "json"])
        .env_remove("CI")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stderr)));
    assert!(
        found(&report, &["drop-index-in-use"]).iter().any(|(f, _, _)| f.ends_with("002_drop.sql")),
        "the base history read through the link: {report:#}"
    );
}

/// `sluice check` replays each side with the tool: a goose migration added on the head side is
/// read as goose runs it (its Down section is not replayed, NO TRANSACTION is honoured).
#[test]
fn check_reads_git_revisions_through_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = RepositoryInitOptions::new();
    options.initial_head("main");
    let git = Repository::init_opts(dir.path(), &options).unwrap();
    let source = fixture("goose");
    let copy = |from: &str, to: &str| {
        let full = dir.path().join(to);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::copy(source.join(from), full).unwrap();
    };
    copy("sluice.toml", "sluice.toml");
    copy("queries/orders_by_email.sql", "queries/orders_by_email.sql");
    copy("migrations/9_orders.sql", "migrations/9_orders.sql");
    let commit = |message: &str| {
        let mut index = git.index().unwrap();
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
        index.write().unwrap();
        let tree = git.find_tree(index.write_tree().unwrap()).unwrap();
        let signature = Signature::now("Test", "test@example.com").unwrap();
        let parent = git.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        git.commit(Some("HEAD"), &signature, &signature, message, &tree, &parents).unwrap();
    };
    commit("base");
    for file in ["10_drop_email_index.sql", "11_concurrent_index.sql", "12_concurrent_in_transaction.sql"] {
        copy(&format!("migrations/{file}"), &format!("migrations/{file}"));
    }
    let output = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(dir.path())
        .args(["check", "--base", "main", "--format", "json"])
        .env_remove("CI")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(
        found(&report, &["concurrently-in-transaction", "drop-index-in-use"]),
        [
            ("migrations/10_drop_email_index.sql".to_string(), 2, "drop-index-in-use".to_string()),
            ("migrations/12_concurrent_in_transaction.sql".to_string(), 2, "concurrently-in-transaction".to_string()),
        ],
        "{report:#}"
    );
}

/// The README's table of migration tools is generated from the tools themselves
/// (`SLUICE_UPDATE_DOCS=1 cargo test --test layouts` rewrites it).
#[test]
fn readme_tool_table_equals_the_tools() {
    const START: &str = "<!-- tools:start -->\n";
    const END: &str = "<!-- tools:end -->";
    let table = sluice::schema::tools::markdown_table();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let start = readme.find(START).expect("README has <!-- tools:start -->") + START.len();
    let end = readme.find(END).expect("README has <!-- tools:end -->");
    if std::env::var_os("SLUICE_UPDATE_DOCS").is_some() {
        std::fs::write(&path, format!("{}{}{}", &readme[..start], table, &readme[end..])).unwrap();
        return;
    }
    assert_eq!(&readme[start..end], table, "stale: run SLUICE_UPDATE_DOCS=1 cargo test --test layouts");
}

/// Issue 9, item 1: diesel versions `20170804200817` and `2017-09-23-182408` are compared as diesel
/// compares them (dashes removed, as text), so the ALTER sees the column the CREATE made.
#[test]
fn diesel_mixed_version_styles_replay_in_diesel_order() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    };
    write("sluice.toml", "[migrations]\ndir = \"migrations\"\n");
    write(
        "migrations/20170804200817_a/up.sql",
        "CREATE TABLE emails (id bigint PRIMARY KEY, created_at timestamp NOT NULL);\n",
    );
    write("migrations/2017-09-23-182408_b/up.sql", "ALTER TABLE emails ALTER COLUMN created_at TYPE timestamptz;\n");
    let report = lint(dir.path());
    let change = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "change-column-type")
        .unwrap_or_else(|| panic!("{report:#}"));
    let message = change["message"].as_str().unwrap();
    assert!(message.contains("timestamp → timestamptz"), "the old type comes from the earlier migration: {message}");
}

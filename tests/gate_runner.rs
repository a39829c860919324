//! What the runner runs, not what Sluice expects (issue 38, item 4) and a gate that never passes
//! what it did not read (issue 37, item 14): each test builds a real git repository the way a
//! pull request would change it, and runs `sluice check` (and `sluice lint` where the two must
//! agree) on it.

mod support;

use assert_cmd::Command;
use serde_json::Value;
use support::git::{finding, found, json, notes, pair, TestRepo};

/// `events` is large: a plain CREATE INDEX on it is an error.
const TABLES: &str = "[rows]\nevents = 50_000_000\n";
const EVENTS: &str = "CREATE TABLE events (id bigint PRIMARY KEY, kind text NOT NULL);\n";
const BLOCKING_INDEX: &str = "SET lock_timeout = '5s';\nCREATE INDEX events_kind ON events (kind);\n";

fn lint(repo: &TestRepo) -> Value {
    let output = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(repo.path())
        .args(["lint", "--format", "json"])
        .output()
        .unwrap();
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)))
}

fn stderr_of(cmd: &mut Command, code: i32) -> String {
    let output = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
    stderr
}

/// A project whose migrations are in `db/migrations`, with `events` large, committed on `main`,
/// HEAD on `feature`.
fn project(config: &str, migrations: &[(&str, &str)]) -> TestRepo {
    let repo = TestRepo::new();
    repo.write("sluice.toml", config);
    repo.write("policies/tables.toml", TABLES);
    for (path, text) in migrations {
        repo.write(path, text);
    }
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo
}

const DB: &str = "[migrations]\ndir = \"db/migrations\"\n";

// --- (a) golang-migrate runs any `N_name.up.<ext>` -------------------------------------------

#[test]
fn a_golang_migrate_up_file_of_any_extension_is_a_migration() {
    for extension in ["SQL", "psql", "txt"] {
        let repo = project(
            &format!("{DB}layout = \"golang-migrate\"\n"),
            &[("db/migrations/1_events.up.sql", EVENTS), ("db/migrations/1_events.down.sql", "DROP TABLE events;\n")],
        );
        let added = format!("db/migrations/2_events_kind.up.{extension}");
        repo.write(&added, BLOCKING_INDEX);
        // Its down file, of the same extension, is its rollback.
        repo.write(&format!("db/migrations/2_events_kind.down.{extension}"), "DROP INDEX CONCURRENTLY events_kind;\n");
        repo.commit("an index, in a file golang-migrate runs");

        let report = json(&mut repo.check(), 1);
        assert_eq!(found(&report), [pair("create-index-non-concurrently", &added)], "{extension}");
        assert!(notes(&report)[0].contains("1 added migration(s)"), "{:?}", notes(&report));
        // lint reads the same files.
        assert_eq!(found(&lint(&repo)), [pair("create-index-non-concurrently", &added)], "{extension}");
    }
}

#[test]
fn golang_migrate_is_detected_from_up_files_of_any_extension() {
    // `.up.sql` names fit sqlx as well; these fit golang-migrate alone.
    let repo = project(DB, &[("db/migrations/1_events.up.psql", EVENTS)]);
    repo.write("db/migrations/2_events_kind.up.txt", BLOCKING_INDEX);
    repo.commit("an index in a .txt");
    let report = json(&mut repo.check(), 1);
    assert_eq!(found(&report), [pair("create-index-non-concurrently", "db/migrations/2_events_kind.up.txt")]);
    assert!(notes(&report)[0].contains("schema built from 1 base migration(s)"), "{:?}", notes(&report));
}

// --- (b) a manifest change is reviewed as the migrations it newly lists -----------------------

#[test]
fn a_sqitch_plan_that_newly_lists_a_merged_script_reviews_it() {
    let plan = "%syntax-version=1.0.0\n%project=events\n\nevents 2024-01-01T00:00:00Z A <a@example.com> # events\n";
    let repo = project(
        "[migrations]\ndir = \"db\"\n",
        &[
            ("db/sqitch.plan", plan),
            ("db/deploy/events.sql", EVENTS),
            // Merged earlier and never listed: sqitch has never run it.
            ("db/deploy/events_kind.sql", BLOCKING_INDEX),
        ],
    );
    repo.write("db/sqitch.plan", &format!("{plan}events_kind 2024-02-01T00:00:00Z A <a@example.com> # kind\n"));
    repo.commit("deploy events_kind");

    let report = json(&mut repo.check(), 1);
    assert_eq!(found(&report), [pair("create-index-non-concurrently", "db/deploy/events_kind.sql")]);
    assert!(!notes(&report).iter().any(|n| n.starts_with("No migration")), "{:?}", notes(&report));
}

#[test]
fn a_drizzle_journal_that_newly_lists_a_merged_file_reviews_it() {
    let journal = |tags: &[&str]| {
        let entries: Vec<String> = tags
            .iter()
            .enumerate()
            .map(|(i, tag)| format!("{{\"idx\": {i}, \"version\": \"7\", \"when\": 1700000000000, \"tag\": \"{tag}\", \"breakpoints\": true}}"))
            .collect();
        format!("{{\"version\": \"7\", \"dialect\": \"postgresql\", \"entries\": [{}]}}\n", entries.join(", "))
    };
    let repo = project(
        "[migrations]\ndir = \"drizzle\"\n",
        &[
            ("drizzle/meta/_journal.json", &journal(&["0000_events"])),
            ("drizzle/0000_events.sql", EVENTS),
            ("drizzle/0001_events_kind.sql", "CREATE INDEX events_kind ON events (kind);\n"),
        ],
    );
    repo.write("drizzle/meta/_journal.json", &journal(&["0000_events", "0001_events_kind"]));
    repo.commit("journal the index");

    let report = json(&mut repo.check(), 1);
    let rules: Vec<(String, String)> =
        found(&report).into_iter().filter(|(_, f)| f.ends_with("0001_events_kind.sql")).collect();
    assert!(rules.contains(&pair("create-index-non-concurrently", "drizzle/0001_events_kind.sql")), "{report:#}");
}

#[test]
fn an_atlas_sum_that_newly_lists_a_merged_file_reviews_it() {
    let repo = project(
        "[migrations]\ndir = \"migrations\"\n",
        &[
            ("migrations/atlas.sum", "h1:base=\n20240101000000_events.sql h1:one=\n"),
            ("migrations/20240101000000_events.sql", EVENTS),
            ("migrations/20240201000000_events_kind.sql", BLOCKING_INDEX),
        ],
    );
    repo.write(
        "migrations/atlas.sum",
        "h1:head=\n20240101000000_events.sql h1:one=\n20240201000000_events_kind.sql h1:two=\n",
    );
    repo.commit("atlas migrate hash");

    let report = json(&mut repo.check(), 1);
    assert_eq!(found(&report), [pair("create-index-non-concurrently", "migrations/20240201000000_events_kind.sql")]);
}

#[test]
fn a_liquibase_master_changelog_that_newly_includes_a_merged_file_reviews_it() {
    let master = |includes: &[&str]| {
        let lines: Vec<String> =
            includes.iter().map(|f| format!("  <include file=\"{f}\" relativeToChangelogFile=\"true\"/>\n")).collect();
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<databaseChangeLog xmlns=\"http://www.liquibase.org/xml/ns/dbchangelog\">\n{}</databaseChangeLog>\n",
            lines.concat()
        )
    };
    let formatted = |id: &str, sql: &str| format!("--liquibase formatted sql\n--changeset ana:{id}\n{sql}");
    let repo = project(
        "[migrations]\ndir = \"db/changelog\"\n",
        &[
            ("db/changelog/db.changelog-master.xml", &master(&["events.sql"])),
            ("db/changelog/events.sql", &formatted("1", EVENTS)),
            ("db/changelog/events_kind.sql", &formatted("2", BLOCKING_INDEX)),
        ],
    );
    repo.write("db/changelog/db.changelog-master.xml", &master(&["events.sql", "events_kind.sql"]));
    repo.commit("include the index");

    let report = json(&mut repo.check(), 1);
    assert_eq!(found(&report), [pair("create-index-non-concurrently", "db/changelog/events_kind.sql")]);
}

#[test]
fn a_tool_configuration_that_makes_the_runner_run_a_merged_file_reviews_it() {
    let repo = project(
        "[migrations]\ndir = \"db\"\n",
        &[
            ("flyway.conf", "flyway.locations=filesystem:db/sql\n"),
            ("db/sql/V1__events.sql", EVENTS),
            // Merged earlier outside Flyway's locations: never run.
            ("db/other/V2__events_kind.sql", BLOCKING_INDEX),
        ],
    );
    repo.write("flyway.conf", "flyway.locations=filesystem:db/sql,filesystem:db/other\n");
    repo.commit("one more location");

    let report = json(&mut repo.check(), 1);
    assert_eq!(found(&report), [pair("create-index-non-concurrently", "db/other/V2__events_kind.sql")]);
}

// --- (c) what Sluice cannot replay gets lint's warning, never silence -------------------------

#[test]
fn an_added_goose_go_migration_detected_from_go_mod_gets_lints_warning() {
    let repo = TestRepo::new();
    repo.write("go.mod", "module example.com/app\n\nrequire github.com/pressly/goose/v3 v3.20.0\n");
    repo.write("sluice.toml", DB);
    repo.write(
        "db/migrations/00001_events.sql",
        "-- +goose Up\nCREATE TABLE events (id bigint PRIMARY KEY);\n-- +goose Down\nDROP TABLE events;\n",
    );
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("db/migrations/00002_backfill.go", "package migrations\n\nfunc init() {}\n");
    repo.commit("a Go migration");

    let report = json(&mut repo.check(), 0);
    let reported = finding(&report, "runner-rejects-migration");
    assert_eq!(
        (reported["file"].as_str(), reported["severity"].as_str()),
        (Some("db/migrations/00002_backfill.go"), Some("warning"))
    );
    let linted = lint(&repo);
    let from_lint = finding(&linted, "runner-rejects-migration");
    assert_eq!(from_lint["message"], reported["message"], "the same words as lint");
}

#[test]
fn an_added_liquibase_xml_changeset_gets_lints_warning() {
    let master = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<databaseChangeLog xmlns=\"http://www.liquibase.org/xml/ns/dbchangelog\">\n  <includeAll path=\"changes/\" relativeToChangelogFile=\"true\"/>\n</databaseChangeLog>\n";
    let repo = project(
        "[migrations]\ndir = \"db/changelog\"\n",
        &[
            ("db/changelog/db.changelog-master.xml", master),
            ("db/changelog/changes/001_events.sql", &format!("--liquibase formatted sql\n--changeset ana:1\n{EVENTS}")),
        ],
    );
    repo.write(
        "db/changelog/changes/002_events_kind.xml",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<databaseChangeLog xmlns=\"http://www.liquibase.org/xml/ns/dbchangelog\">\n  <changeSet id=\"2\" author=\"ana\">\n    <createIndex tableName=\"events\" indexName=\"events_kind\"><column name=\"kind\"/></createIndex>\n  </changeSet>\n</databaseChangeLog>\n",
    );
    repo.commit("an XML changeset");

    let report = json(&mut repo.check(), 0);
    let reported = finding(&report, "runner-rejects-migration");
    assert_eq!(reported["file"], "db/changelog/changes/002_events_kind.xml");
    assert!(reported["message"].as_str().unwrap().contains("Sluice did not check them"), "{reported}");
    let linted = lint(&repo);
    assert_eq!(finding(&linted, "runner-rejects-migration")["message"], reported["message"], "the same words as lint");
}

#[test]
fn a_changelog_that_newly_includes_a_merged_xml_changeset_gets_the_warning_on_it() {
    let master = |includes: &[&str]| {
        let lines: Vec<String> =
            includes.iter().map(|f| format!("  <include file=\"{f}\" relativeToChangelogFile=\"true\"/>\n")).collect();
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<databaseChangeLog xmlns=\"http://www.liquibase.org/xml/ns/dbchangelog\">\n{}</databaseChangeLog>\n",
            lines.concat()
        )
    };
    let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<databaseChangeLog xmlns=\"http://www.liquibase.org/xml/ns/dbchangelog\">\n  <changeSet id=\"2\" author=\"ana\">\n    <dropTable tableName=\"events\"/>\n  </changeSet>\n</databaseChangeLog>\n";
    let repo = project(
        "[migrations]\ndir = \"db/changelog\"\n",
        &[
            ("db/changelog/db.changelog-master.xml", &master(&["events.sql"])),
            ("db/changelog/events.sql", &format!("--liquibase formatted sql\n--changeset ana:1\n{EVENTS}")),
            ("db/changelog/drop_events.xml", xml),
        ],
    );
    repo.write("db/changelog/db.changelog-master.xml", &master(&["events.sql", "drop_events.xml"]));
    repo.commit("include an old XML changeset");

    let report = json(&mut repo.check(), 0);
    assert_eq!(found(&report), [pair("runner-rejects-migration", "db/changelog/drop_events.xml")]);
}

// --- (d) LFS pointers and submodules are unread: errors -------------------------------------

const POINTER: &str = "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n";

#[test]
fn a_git_lfs_pointer_where_a_migration_should_be_is_an_unread_error() {
    let repo = project(DB, &[("db/migrations/0001_events.sql", EVENTS)]);
    repo.write("db/migrations/0002_events_kind.sql", POINTER);
    repo.commit("a migration in LFS");

    let report = json(&mut repo.check(), 1);
    assert_eq!(found(&report), [pair("unread-text", "db/migrations/0002_events_kind.sql")]);
    let message = finding(&report, "unread-text")["message"].as_str().unwrap().to_string();
    assert!(message.contains("is a Git LFS pointer, not the migration"), "{message}");
    assert!(message.contains("12345 bytes"), "{message}");
    // lint, on a checkout without `git lfs pull`, says the same.
    assert_eq!(found(&lint(&repo)), [pair("unread-text", "db/migrations/0002_events_kind.sql")]);
}

#[test]
fn an_lfs_pointer_in_the_base_history_fails_every_review_built_on_it() {
    let repo = project(DB, &[("db/migrations/0001_events.sql", POINTER)]);
    repo.write("db/migrations/0002_events_kind.sql", BLOCKING_INDEX);
    repo.commit("an index on a table the gate cannot see");
    let report = json(&mut repo.check(), 1);
    assert!(found(&report).contains(&pair("unread-text", "db/migrations/0001_events.sql")), "{report:#}");
}

/// Adds a gitlink (a submodule's commit) at `path` to the index and commits it.
fn commit_submodule(repo: &TestRepo, path: &str, message: &str) {
    repo.stage_all();
    let mut index = repo.git.index().unwrap();
    let some_commit = repo.git.head().unwrap().peel_to_commit().unwrap().id();
    index
        .add(&git2::IndexEntry {
            ctime: git2::IndexTime::new(0, 0),
            mtime: git2::IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode: 0o160000,
            uid: 0,
            gid: 0,
            file_size: 0,
            id: some_commit,
            flags: 0,
            flags_extended: 0,
            path: path.as_bytes().to_vec(),
        })
        .unwrap();
    index.write().unwrap();
    let tree = repo.git.find_tree(index.write_tree().unwrap()).unwrap();
    let signature = git2::Signature::now("Test", "test@example.com").unwrap();
    let parent = repo.git.head().unwrap().peel_to_commit().unwrap();
    repo.git.commit(Some("HEAD"), &signature, &signature, message, &tree, &[&parent]).unwrap();
}

#[test]
fn a_submodule_where_the_migrations_live_is_an_unread_error() {
    let repo = project(DB, &[("db/migrations/0001_events.sql", EVENTS)]);
    commit_submodule(&repo, "db/migrations/shared", "vendor the shared migrations");

    for head in [None, Some("HEAD")] {
        let mut check = repo.check();
        if let Some(head) = head {
            check.args(["--head", head]);
        }
        let report = json(&mut check, 1);
        assert_eq!(found(&report), [pair("unread-text", "db/migrations/shared")], "{head:?}");
        let message = finding(&report, "unread-text")["message"].as_str().unwrap().to_string();
        assert!(message.contains("is a git submodule where the migrations live (on the head)"), "{message}");
    }
    // lint, on a checkout where the submodule was never initialized (an empty directory).
    std::fs::create_dir_all(repo.path().join("db/migrations/shared")).unwrap();
    let linted = lint(&repo);
    assert_eq!(found(&linted), [pair("unread-text", "db/migrations/shared")]);
}

// --- issue 37, item 14: a gate that never passes what it did not read -------------------------

#[test]
fn without_sluice_toml_a_change_to_migrations_nowhere_near_the_default_is_exit_2() {
    let repo = TestRepo::new();
    repo.write("policies/tables.toml", TABLES);
    repo.write("db/migrations/0001_events.sql", EVENTS);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("db/migrations/0002_events_kind.sql", BLOCKING_INDEX);
    repo.commit("an index");

    let stderr = stderr_of(&mut repo.check(), 2);
    assert!(stderr.contains("migrations: migrations directory not found on the base revision or the head"), "{stderr}");
    assert!(stderr.contains("no sluice.toml on either revision"), "{stderr}");
    assert!(stderr.contains("the change touches SQL files in db/migrations"), "{stderr}");
    assert!(stderr.contains("set [migrations] dir in sluice.toml or pass --migrations DIR"), "{stderr}");
    // lint refuses the same project the same way.
    let lint = Command::cargo_bin("sluice").unwrap().current_dir(repo.path()).arg("lint").output().unwrap();
    assert_eq!(lint.status.code(), Some(2));

    // Told where they are, it reviews them.
    let report = json(repo.check().args(["--migrations", "db/migrations"]), 1);
    assert_eq!(found(&report), [pair("create-index-non-concurrently", "db/migrations/0002_events_kind.sql")]);
}

#[test]
fn a_sluice_toml_without_a_migrations_dir_that_exists_is_exit_2_naming_it() {
    let repo = TestRepo::new();
    repo.write("sluice.toml", "postgres_version = 16\n");
    repo.write("sql/0001_events.sql", EVENTS);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("sql/0002_events_kind.sql", BLOCKING_INDEX);
    repo.commit("an index");
    let stderr = stderr_of(&mut repo.check(), 2);
    assert!(stderr.contains("sluice.toml sets no [migrations] dir, so the default `migrations`"), "{stderr}");
}

#[test]
fn a_template_placeholder_in_an_added_migration_is_unread_naming_the_engine() {
    let repo = project(DB, &[("db/migrations/0001_events.sql", EVENTS)]);
    repo.write(
        "db/migrations/0002_namespace.sql",
        "CREATE TABLE {{ index .Options \"Namespace\" }}.jobs (id bigint PRIMARY KEY);\nCREATE INDEX events_kind ON events (kind);\n",
    );
    repo.commit("templated SQL");
    let report = json(&mut repo.check(), 1);
    let unread = finding(&report, "unread-text");
    let message = unread["message"].as_str().unwrap();
    assert!(message.contains("template placeholder `{{ index .Options \"Namespace\" }}`"), "{message}");
    assert!(message.contains("Go templates"), "{message}");
    assert_eq!(unread["line"], 1);
}

fn procedures(count: usize) -> String {
    (0..count).map(|i| format!("CREATE PROCEDURE p{i}() LANGUAGE sql AS $$ SELECT 1 $$;\n")).collect()
}

#[test]
fn a_change_sluice_mostly_does_not_understand_cannot_pass() {
    let repo = project(DB, &[("db/migrations/0001_events.sql", EVENTS)]);
    let text = format!("SET lock_timeout = '5s';\n{}", procedures(24));
    repo.write("db/migrations/0002_procedures.sql", &text);
    repo.commit("procedures");

    let report = json(&mut repo.check(), 1);
    let verdict = finding(&report, "history-not-understood");
    assert_eq!(
        (verdict["severity"].as_str(), verdict["file"].as_str(), verdict["line"].as_u64()),
        (Some("error"), Some("db/migrations/0002_procedures.sql"), Some(2))
    );
    let message = verdict["message"].as_str().unwrap();
    assert!(message.contains("24 of the 25 migration statements checked (96.00%) were not understood"), "{message}");
    assert!(message.contains("more than the 25%"), "{message}");
    // lint gives the same verdict on the whole history (26 statements, 24 not understood).
    let linted = lint(&repo);
    assert!(finding(&linted, "history-not-understood")["message"].as_str().unwrap().contains("24 of the 26"));
}

#[test]
fn the_share_not_understood_is_configured_on_the_base_and_cannot_be_lowered_in_rules() {
    let repo =
        project(&format!("{DB}max_not_understood_percent = 100\n"), &[("db/migrations/0001_events.sql", EVENTS)]);
    repo.write("db/migrations/0002_procedures.sql", &format!("SET lock_timeout = '5s';\n{}", procedures(24)));
    repo.commit("procedures");
    let report = json(&mut repo.check(), 0);
    assert!(!found(&report).iter().any(|(rule, _)| rule == "history-not-understood"), "{report:#}");

    // The change lowering the base's limit cannot relax its own review, and says what it would do.
    let strict = project(DB, &[("db/migrations/0001_events.sql", EVENTS)]);
    strict.write("db/migrations/0002_procedures.sql", &format!("SET lock_timeout = '5s';\n{}", procedures(24)));
    strict.write("sluice.toml", &format!("{DB}max_not_understood_percent = 100\n"));
    strict.commit("procedures, and a limit that lets them through");
    let report = json(&mut strict.check(), 1);
    assert!(found(&report).contains(&pair("history-not-understood", "db/migrations/0002_procedures.sql")));
    let changed = finding(&report, "gate-config-changed")["message"].as_str().unwrap().to_string();
    assert!(
        changed.contains("relax `[migrations] max_not_understood_percent` from the default (25) to 100"),
        "{changed}"
    );

    for (text, problem) in [
        (format!("{DB}max_not_understood_percent = 101\n"), "is not a percentage"),
        ("[rules]\n\"history-not-understood\" = \"warning\"\n".to_string(), "is always an error"),
    ] {
        let bad = TestRepo::new();
        bad.write("sluice.toml", &text);
        bad.write("migrations/0001_events.sql", EVENTS);
        let output = Command::cargo_bin("sluice").unwrap().current_dir(bad.path()).arg("lint").output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("sluice.toml") && stderr.contains(problem), "{stderr}");
    }
}

#[test]
fn check_config_takes_an_uncommitted_file_or_one_outside_the_repository() {
    let repo = TestRepo::new();
    repo.write("policies/tables.toml", TABLES);
    repo.write("db/migrations/0001_events.sql", EVENTS);
    repo.write(".gitignore", "ci-sluice.toml\n");
    repo.commit("base, no sluice.toml");
    repo.checkout_new_branch("feature");
    repo.write("db/migrations/0002_events_kind.sql", BLOCKING_INDEX);
    repo.commit("an index");

    // Written by the CI job, never committed (ignored): read from disk for both sides.
    repo.write("ci-sluice.toml", DB);
    for ci in [false, true] {
        let mut check = repo.check();
        check.args(["--config", "ci-sluice.toml"]);
        if ci {
            check.env("CI", "true");
        }
        let report = json(&mut check, 1);
        assert_eq!(
            found(&report),
            [pair("create-index-non-concurrently", "db/migrations/0002_events_kind.sql")],
            "CI={ci}"
        );
    }

    // Outside the repository, named relative to the working directory (`../ci/sluice.toml`).
    let outside = tempfile::tempdir().unwrap();
    let migrations = repo.path().join("db/migrations");
    let policies = repo.path().join("policies");
    std::fs::write(
        outside.path().join("sluice.toml"),
        format!(
            "[migrations]\ndir = {:?}\n\n[policies]\ndir = {:?}\n",
            migrations.display().to_string(),
            policies.display().to_string()
        ),
    )
    .unwrap();
    let name = outside.path().file_name().unwrap().to_str().unwrap();
    let relative = format!("../{name}/sluice.toml");
    assert!(repo.path().join(&relative).is_file(), "both temporary directories are siblings");
    let report = json(repo.check().args(["--config", &relative]), 1);
    assert_eq!(found(&report), [pair("create-index-non-concurrently", "db/migrations/0002_events_kind.sql")]);
}

//! `sluice check` on the queries of every source: SQL in application code and sqlc's query
//! files, changed or affected by an added migration, in throwaway git repositories.

mod support;

use support::git::{finding, found, json, notes, pair, TestRepo};

const CONFIG: &str = "[migrations]\ndir = \"db/migrations\"\n\n[queries]\ndirs = []\ncode = [\"internal\"]\n";

const SCHEMA: &str = "CREATE TABLE riders (id bigint PRIMARY KEY, email text NOT NULL, created_at timestamptz);
CREATE INDEX riders_email ON riders (email);
CREATE TABLE trips (id bigint PRIMARY KEY, day date NOT NULL);
CREATE INDEX trips_day ON trips (day);
";

const RIDERS_GO: &str = "package store

func (s *Store) ByEmail(ctx context.Context, email string) error {
\t_, err := s.pool.Exec(ctx, `SELECT id FROM riders
\t\tWHERE email = $1`, email)
\treturn err
}
";

const TRIPS_GO: &str = "package store

func (s *Store) Today(ctx context.Context) error {
\t_, err := s.pool.Exec(ctx, \"SELECT id FROM trips WHERE day = current_date\")
\treturn err
}
";

fn base_repo() -> TestRepo {
    base_repo_with(&[])
}

/// [`base_repo`] whose base holds `files` too.
fn base_repo_with(files: &[(&str, &str)]) -> TestRepo {
    let repo = TestRepo::new();
    repo.write("sluice.toml", CONFIG);
    repo.write("db/migrations/0010_init.sql", SCHEMA);
    repo.write("internal/store/riders.go", RIDERS_GO);
    repo.write("internal/store/trips.go", TRIPS_GO);
    for (path, text) in files {
        repo.write(path, text);
    }
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo
}

#[test]
fn a_changed_query_in_code_is_linted_on_its_code_line() {
    let repo = base_repo();
    repo.write("internal/store/riders.go", &RIDERS_GO.replace("WHERE email = $1", "WHERE lower(email) = $1"));
    repo.commit("case-insensitive login");
    let report = json(repo.check().env("CI", "true"), 1);
    assert_eq!(found(&report), [pair("function-on-indexed-column", "internal/store/riders.go")]);
    let hit = finding(&report, "function-on-indexed-column");
    assert_eq!((hit["line"].as_u64(), hit["column"].as_u64()), (Some(5), Some(9)));
    assert!(hit["message"].as_str().unwrap().ends_with("(in pgx Exec)"), "{hit}");
    assert!(notes(&report)[0].contains("1 changed query file(s)"), "{:?}", notes(&report));
    assert!(
        notes(&report)
            .iter()
            .any(|n| n
                == "Queries this change adds, edits or removes: pgx Exec #1 at internal/store/riders.go:4 (edited)."),
        "{:?}",
        notes(&report)
    );
}

#[test]
fn an_added_migration_rechecks_the_unchanged_code_that_reads_its_table() {
    let repo = base_repo();
    repo.write("db/migrations/0020_drop.sql", "SET lock_timeout = '5s';\nDROP INDEX CONCURRENTLY trips_day;\n");
    repo.commit("drop an index");
    let report = json(repo.check().env("CI", "true"), 1);
    assert_eq!(found(&report), [pair("drop-index-in-use", "db/migrations/0020_drop.sql")]);
    let message = finding(&report, "drop-index-in-use")["message"].as_str().unwrap();
    assert!(message.contains("pgx Exec at internal/store/trips.go:4"), "{message}");
    assert!(
        notes(&report)
            .iter()
            .any(|n| n == "internal/store/trips.go re-checked: affected by db/migrations/0020_drop.sql."),
        "{:?}",
        notes(&report)
    );
    // riders.go never names `trips`: not read, not re-checked.
    assert!(!notes(&report).iter().any(|n| n.contains("riders.go")), "{:?}", notes(&report));
}

/// Removes the loose object of the blob `path` names at HEAD: a run that reads it fails.
fn remove_blob(repo: &TestRepo, path: &str) {
    let git = repo.open();
    let blob = git.git().revparse_single(&format!("HEAD:{path}")).unwrap().id().to_string();
    std::fs::remove_file(repo.path().join(".git/objects").join(&blob[..2]).join(&blob[2..])).unwrap();
}

#[test]
fn unchanged_code_is_served_by_its_blob_from_the_code_cache() {
    let repo = base_repo_with(&[(
        "internal/store/sum.go",
        "package store\n\n// Sum of trips.\nfunc Sum(a, b int) int { return a + b }\n",
    )]);
    repo.write("db/migrations/0020_drop.sql", "SET lock_timeout = '5s';\nDROP INDEX CONCURRENTLY trips_day;\n");
    repo.commit("drop an index");
    let cache = tempfile::tempdir().unwrap();
    let check = || {
        let mut cmd = repo.check();
        cmd.env("CI", "true").arg("--cache-dir").arg(cache.path());
        cmd
    };
    let cold = json(&mut check(), 1);
    assert_eq!(found(&cold), [pair("drop-index-in-use", "db/migrations/0020_drop.sql")]);
    assert!(std::fs::read_dir(cache.path().join("code-blobs")).unwrap().count() == 1, "the cache is written");
    // sum.go names `trips` but holds no query: the cache knows it by its blob, and the run does
    // not read it (its object gone, a run that did would fail). trips.go is read, not parsed.
    remove_blob(&repo, "internal/store/sum.go");
    let warm = json(&mut check(), 1);
    assert_eq!(warm["findings"], cold["findings"]);
    assert_eq!(notes(&warm), notes(&cold));
    // Without the cache, every unchanged file is read.
    let output = repo.check().env("CI", "true").arg("--no-cache").output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stderr).contains("internal/store/sum.go"));
}

#[test]
fn a_code_file_the_cache_knows_is_read_again_once_its_blob_changes() {
    let repo = base_repo();
    repo.write("db/migrations/0020_drop.sql", "SET lock_timeout = '5s';\nDROP INDEX CONCURRENTLY trips_day;\n");
    repo.commit("drop an index");
    let cache = tempfile::tempdir().unwrap();
    let check = || {
        let mut cmd = repo.check();
        cmd.env("CI", "true").arg("--cache-dir").arg(cache.path());
        cmd
    };
    // riders.go read by its first blob: no query on `trips`.
    assert!(!notes(&json(&mut check(), 1)).iter().any(|n| n.contains("riders.go")));
    // Another change, from a base where riders.go gained a query on trips: unchanged by that
    // change, but another blob, read and parsed.
    let git = |args: &[&str]| {
        assert!(std::process::Command::new("git").args(args).current_dir(repo.path()).status().unwrap().success())
    };
    git(&["checkout", "-q", "main"]);
    let riders =
        RIDERS_GO.replace("SELECT id FROM riders\n\t\tWHERE email = $1", "SELECT id FROM trips WHERE day = $1");
    repo.write("internal/store/riders.go", &riders);
    repo.commit("join trips");
    repo.checkout_new_branch("feature2");
    repo.write("db/migrations/0020_drop.sql", "SET lock_timeout = '5s';\nDROP INDEX CONCURRENTLY trips_day;\n");
    repo.commit("drop an index");
    let report = json(&mut check(), 1);
    let message = finding(&report, "drop-index-in-use")["message"].as_str().unwrap().to_string();
    assert!(message.contains("internal/store/riders.go"), "{message}");
}

#[test]
fn sqlc_query_files_come_from_the_base_revision_sqlc_yaml() {
    let repo = TestRepo::new();
    repo.write("sluice.toml", "[migrations]\ndir = \"db/migrations\"\n");
    repo.write(
        "sqlc.yaml",
        "version: \"2\"\nsql:\n  - engine: postgresql\n    queries: db/query\n    schema: db/migrations\n",
    );
    repo.write("db/migrations/0010_init.sql", SCHEMA);
    repo.write("db/query/riders.sql", "-- name: RiderByEmail :one\nSELECT id FROM riders WHERE email = @email;\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    // The change edits the query and points sqlc.yaml elsewhere: the base's sqlc.yaml is read.
    repo.write(
        "db/query/riders.sql",
        "-- name: RiderByEmail :one\nSELECT id FROM riders WHERE lower(email) = lower(@email);\n",
    );
    repo.write(
        "sqlc.yaml",
        "version: \"2\"\nsql:\n  - engine: postgresql\n    queries: elsewhere\n    schema: db/migrations\n",
    );
    repo.commit("case-insensitive");
    let report = json(repo.check().env("CI", "true"), 1);
    let hit = finding(&report, "function-on-indexed-column");
    assert_eq!(hit["file"], "db/query/riders.sql");
    assert_eq!(hit["line"], 2);
    assert!(hit["message"].as_str().unwrap().ends_with("(in sqlc query RiderByEmail)"), "{hit}");
    // Pointing sqlc away from the queries is an edit of the gate's inputs, and says what it does.
    let changed = finding(&report, "gate-config-changed");
    assert_eq!(changed["file"], "sqlc.yaml");
    assert_eq!(changed["evidence"]["items"][0]["effect"], "relaxes");
    let message = changed["message"].as_str().unwrap();
    assert!(message.contains("this review applied the base revision's version"), "{message}");
    assert!(message.contains("stop reading sqlc's queries in db/query"), "{message}");
    assert!(message.contains("read sqlc's queries in elsewhere"), "{message}");
}

const SQLC_V2: &str =
    "version: \"2\"\nsql:\n  - engine: postgresql\n    queries: db/query\n    schema: db/migrations\n";

/// A repository with `sluice.toml` (`config`), the schema and one sqlc query, not committed.
fn sqlc_repo(config: &str) -> TestRepo {
    let repo = TestRepo::new();
    repo.write("sluice.toml", config);
    repo.write("db/migrations/0010_init.sql", SCHEMA);
    repo.write("db/query/riders.sql", "-- name: RiderByEmail :one\nSELECT id FROM riders WHERE email = @email;\n");
    repo
}

#[test]
fn a_sqlc_configuration_the_change_adds_or_deletes_is_a_gate_input_change() {
    // No sqlc.yaml on the base; the change adds sqlc.json at the root (read once merged).
    let repo = sqlc_repo("[migrations]\ndir = \"db/migrations\"\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("sqlc.json", "{\"version\": \"2\", \"sql\": [{\"engine\": \"postgresql\", \"queries\": \"db/query\"}]}");
    repo.commit("sqlc");
    let report = json(repo.check().env("CI", "true"), 0);
    let changed = finding(&report, "gate-config-changed");
    assert_eq!(changed["file"], "sqlc.json");
    let message = changed["message"].as_str().unwrap();
    assert!(message.contains("added in this change; this review did not apply it"), "{message}");
    assert!(message.contains("read sqlc's queries in db/query"), "{message}");
    assert_eq!(changed["evidence"]["items"][0]["effect"], "tightens");

    // The base names one in [queries] sqlc and the change deletes it: that relaxes the gate,
    // and the review still reads the base's.
    let repo = sqlc_repo("[migrations]\ndir = \"db/migrations\"\n\n[queries]\nsqlc = [\"db/sqlc.yml\"]\n");
    repo.write("db/sqlc.yml", &SQLC_V2.replace("db/query", "query"));
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.remove("db/sqlc.yml");
    repo.write(
        "db/query/riders.sql",
        "-- name: RiderByEmail :one\nSELECT id FROM riders WHERE lower(email) = @email;\n",
    );
    repo.commit("no more sqlc");
    let report = json(repo.check().env("CI", "true"), 1);
    let changed = finding(&report, "gate-config-changed");
    assert_eq!(changed["file"], "db/sqlc.yml");
    let message = changed["message"].as_str().unwrap();
    assert!(message.contains("deleted in this change"), "{message}");
    assert!(message.contains("stop reading sqlc's queries in db/query"), "{message}");
    assert_eq!(finding(&report, "function-on-indexed-column")["file"], "db/query/riders.sql");
}

#[test]
fn an_edit_of_sqlc_yaml_that_changes_no_query_path_says_so() {
    let repo = sqlc_repo("[migrations]\ndir = \"db/migrations\"\n");
    repo.write("sqlc.yaml", SQLC_V2);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("sqlc.yaml", &format!("# generated code settings\n{SQLC_V2}"));
    repo.commit("comment");
    let report = json(repo.check().env("CI", "true"), 0);
    let changed = finding(&report, "gate-config-changed");
    assert_eq!(changed["file"], "sqlc.yaml");
    assert!(changed["message"].as_str().unwrap().contains("it changes nothing the gate reads"), "{changed}");
}

/// `sluice check`'s exit code and standard error.
fn check_fails(repo: &TestRepo) -> (Option<i32>, String) {
    let output = repo.check().env("CI", "true").output().unwrap();
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn a_sqlc_configuration_outside_the_repository_or_missing_on_the_base_is_exit_2() {
    // Outside the repository: no change can edit it, and check reads only what git tracks.
    let outside = tempfile::tempdir().unwrap();
    let config_path = outside.path().join("sqlc.yaml");
    std::fs::write(&config_path, SQLC_V2).unwrap();
    let config = format!(
        "[migrations]\ndir = \"db/migrations\"\n\n[queries]\nsqlc = [\"{}\"]\n",
        config_path.display().to_string().replace('\\', "/")
    );
    let repo = sqlc_repo(&config);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "db/query/riders.sql",
        "-- name: RiderByEmail :one\nSELECT id FROM riders WHERE lower(email) = @email;\n",
    );
    repo.commit("edit");
    let (code, stderr) = check_fails(&repo);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("sluice.toml:5: [queries] sqlc"), "{stderr}");
    assert!(stderr.contains("sqlc.yaml: outside the repository"), "{stderr}");

    // Named, but only the change adds it: not on the base, which the gate reads.
    let repo = sqlc_repo("[migrations]\ndir = \"db/migrations\"\n\n[queries]\nsqlc = [\"sqlc.yaml\"]\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("sqlc.yaml", SQLC_V2);
    repo.commit("add sqlc.yaml");
    let (code, stderr) = check_fails(&repo);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("sluice.toml:5: [queries] sqlc sqlc.yaml: no such file on the base revision"), "{stderr}");
}

#[test]
fn a_sqlc_query_path_the_head_does_not_have_is_exit_2_naming_the_configuration() {
    // The change moves the queries and points sqlc.yaml at them: the base's path is gone.
    let repo = sqlc_repo("[migrations]\ndir = \"db/migrations\"\n");
    repo.write("sqlc.yaml", SQLC_V2);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.rename("db/query/riders.sql", "sql/riders.sql");
    repo.write("sqlc.yaml", &SQLC_V2.replace("db/query", "sql"));
    repo.commit("move the queries");
    let (code, stderr) = check_fails(&repo);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("sqlc.yaml: query path db/query does not exist on the head revision"), "{stderr}");
}

#[test]
fn a_code_directory_that_does_not_exist_or_is_outside_the_repository_is_exit_2() {
    let repo = base_repo();
    repo.write("sluice.toml", &CONFIG.replace("\"internal\"", "\"internal\", \"cmd\""));
    repo.commit("scan cmd too");
    let (code, stderr) = check_fails(&repo);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("[queries] code cmd: no such directory on the head revision"), "{stderr}");

    let outside = tempfile::tempdir().unwrap();
    let dir = outside.path().display().to_string().replace('\\', "/");
    let repo = TestRepo::new();
    repo.write("sluice.toml", &CONFIG.replace("\"internal\"", &format!("\"internal\", \"{dir}\"")));
    repo.write("db/migrations/0010_init.sql", SCHEMA);
    repo.write("internal/store/riders.go", RIDERS_GO);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("internal/store/riders.go", &RIDERS_GO.replace("WHERE email = $1", "WHERE lower(email) = $1"));
    repo.commit("edit");
    let (code, stderr) = check_fails(&repo);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("the application code directory is outside the repository"), "{stderr}");
}

#[test]
fn a_changed_file_of_a_sqlite_package_is_judged_with_the_files_it_did_not_change() {
    let repo = TestRepo::new();
    repo.write("sluice.toml", CONFIG);
    repo.write("db/migrations/0010_init.sql", SCHEMA);
    // memos' layout: the driver is imported in one file, the SQL is in another.
    repo.write("internal/sqlite/functions.go", "package sqlite\n\nimport _ \"modernc.org/sqlite\"\n\nfunc init() {}\n");
    repo.write("internal/sqlite/memo.go", "package sqlite\n\nfunc (d *DB) Memo() {}\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "internal/sqlite/memo.go",
        "package sqlite\n\nfunc (d *DB) Memo(ctx context.Context) error {\n\t_, err := d.db.ExecContext(ctx, \"INSERT OR IGNORE INTO `riders` (`email`) VALUES (lower(?))\")\n\treturn err\n}\n",
    );
    repo.commit("insert a memo");
    let report = json(repo.check().env("CI", "true"), 0);
    assert_eq!(found(&report), Vec::<(String, String)>::new());
    assert!(
        notes(&report).iter().any(|n| n
            == "internal/sqlite/memo.go: SQLite code (the package imports modernc.org/sqlite): 1 statement(s) not checked."),
        "{:?}",
        notes(&report)
    );
}

#[test]
fn a_project_wrapper_named_in_calls_is_checked_in_a_change() {
    let repo = TestRepo::new();
    // The gate's configuration is the base revision's: the wrapper is named there.
    repo.write("sluice.toml", &format!("{CONFIG}calls = [\"store.run\"]\n"));
    repo.write("db/migrations/0010_init.sql", SCHEMA);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "internal/store/run.go",
        "package store\n\nfunc Find(email string) error {\n\treturn store.run(\"SELECT id FROM riders WHERE lower(email) = $1\", email)\n}\n",
    );
    repo.commit("a query through the project's wrapper");
    let report = json(repo.check().env("CI", "true"), 1);
    assert_eq!(found(&report), [pair("function-on-indexed-column", "internal/store/run.go")]);
    let message = finding(&report, "function-on-indexed-column")["message"].as_str().unwrap();
    assert!(message.ends_with("(in store.run (sluice.toml calls))"), "{message}");
}

/// A Go package that keeps its SQL in query.go; repository.go passes the constants.
const QUERY_GO: &str = "package reports

const tripsOnDay = `SELECT id FROM trips WHERE day = $1`
";

const REPOSITORY_GO: &str = "package reports

func (r *Repo) Trips(ctx context.Context, day string) error {
\t_, err := r.pool.Exec(ctx, tripsOnDay, day)
\treturn err
}
";

#[test]
fn a_go_constant_passed_in_another_file_is_checked_when_either_changes_or_a_migration_affects_it() {
    let files = [("internal/reports/query.go", QUERY_GO), ("internal/reports/repository.go", REPOSITORY_GO)];
    // An added migration drops the index the constant's query needs: the unchanged query.go
    // names the table, and its package's unchanged call makes its constant a query.
    let repo = base_repo_with(&files);
    repo.write("db/migrations/0020_drop.sql", "SET lock_timeout = '5s';\nDROP INDEX CONCURRENTLY trips_day;\n");
    repo.commit("drop an index");
    let report = json(repo.check().env("CI", "true"), 1);
    assert_eq!(found(&report), [pair("drop-index-in-use", "db/migrations/0020_drop.sql")]);
    let message = finding(&report, "drop-index-in-use")["message"].as_str().unwrap();
    assert!(message.contains("internal/reports/query.go:3"), "{message}");

    // The constant changes; the call in the file the change leaves alone is read from the base.
    let repo = base_repo_with(&files);
    repo.write("internal/reports/query.go", &QUERY_GO.replace("WHERE day = $1", "WHERE day::text = $1"));
    repo.commit("compare as text");
    let report = json(repo.check().env("CI", "true"), 1);
    assert_eq!(found(&report), [pair("function-on-indexed-column", "internal/reports/query.go")]);
    let hit = finding(&report, "function-on-indexed-column");
    assert_eq!(hit["line"].as_u64(), Some(3));
    assert!(hit["message"].as_str().unwrap().ends_with("(in pgx Exec in repository.go:4)"), "{hit}");
}

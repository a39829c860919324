//! `sluice check` on the queries of every source: SQL in application code and sqlc's query
//! files, changed or affected by an added migration, in throwaway git repositories.

mod git_support;

use git_support::{finding, found, json, notes, pair, TestRepo};

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
    let repo = TestRepo::new();
    repo.write("sluice.toml", CONFIG);
    repo.write("db/migrations/0010_init.sql", SCHEMA);
    repo.write("internal/store/riders.go", RIDERS_GO);
    repo.write("internal/store/trips.go", TRIPS_GO);
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
}

//! `sluice lint` end to end: the built binary on the bundled incident fixtures and on bad input.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name)
}

fn sluice(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("sluice").unwrap();
    cmd.current_dir(dir).env_remove("NO_COLOR");
    cmd
}

/// Runs `lint --format json` in `dir`; returns the exit code and the findings.
fn lint_json(dir: &Path, extra: &[&str]) -> (i32, Vec<Value>, Value) {
    let output = sluice(dir).args(["lint", "--format", "json"]).args(extra).output().unwrap();
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
    });
    (output.status.code().unwrap(), doc["findings"].as_array().unwrap().clone(), doc)
}

fn loud(findings: &[Value]) -> Vec<&Value> {
    findings.iter().filter(|f| f["severity"] == "error" || f["severity"] == "warning").collect()
}

#[test]
fn bird_survey_incident_is_an_error_and_its_safe_variant_passes() {
    let (code, findings, doc) = lint_json(&fixture("bird-survey"), &[]);
    assert_eq!(code, 1);
    let hit = findings.iter().find(|f| f["rule"] == "domain-identity-unique").expect("domain-identity-unique");
    assert_eq!(hit["file"], "fixtures/bird-survey/migrations/003_unique_observations.sql");
    assert_eq!(hit["line"], 4);
    assert_eq!(hit["severity"], "error");
    for key in ["column", "end_line", "message", "help"] {
        assert!(hit.get(key).is_some(), "finding lacks {key}");
    }
    assert_eq!(doc["version"], 1);
    // The constraint is also built the blocking way (ACCESS EXCLUSIVE for the whole index build).
    assert!(findings.iter().any(|f| f["rule"] == "add-unique-constraint-blocking"));
    assert_eq!(doc["summary"]["error"], 2);

    let (code, findings, _) = lint_json(&fixture("bird-survey/safe"), &[]);
    assert_eq!(code, 0, "{findings:#?}");
    assert!(loud(&findings).is_empty(), "{findings:#?}");
}

#[test]
fn transit_incident_is_an_error_and_its_safe_variant_passes() {
    let (code, findings, _) = lint_json(&fixture("transit-planner"), &[]);
    assert_eq!(code, 1);
    let hit = findings.iter().find(|f| f["rule"] == "function-on-indexed-column").expect("function-on-indexed-column");
    assert_eq!(hit["file"], "fixtures/transit-planner/queries/departures_in_window.sql");
    assert_eq!((hit["line"].as_u64(), hit["column"].as_u64()), (Some(6), Some(7)));
    assert!(hit["message"].as_str().unwrap().contains("stop_times_route_date_departure"));

    let (code, findings, _) = lint_json(&fixture("transit-planner/safe"), &[]);
    assert_eq!(code, 0, "{findings:#?}");
    assert!(loud(&findings).is_empty());
}

#[test]
fn reporting_incident_is_an_error_and_its_safe_variant_passes() {
    let (code, findings, _) = lint_json(&fixture("reporting"), &[]);
    assert_eq!(code, 1);
    let hit = findings.iter().find(|f| f["rule"] == "drop-index-in-use").expect("drop-index-in-use");
    assert!(hit["message"].as_str().unwrap().contains("fixtures/reporting/queries/daily_revenue.sql:4"), "{hit}");

    let (code, findings, _) = lint_json(&fixture("reporting/safe"), &[]);
    assert_eq!(code, 0, "{findings:#?}");
    assert!(loud(&findings).is_empty());
}

#[test]
fn paths_limit_what_is_reported_but_not_the_schema() {
    let dir = fixture("transit-planner");
    // The query alone: the schema still comes from the migrations, so the finding is there.
    let (code, findings, _) = lint_json(&dir, &["queries/departures_in_window.sql"]);
    assert_eq!(code, 1);
    assert!(findings.iter().all(|f| f["file"] == "fixtures/transit-planner/queries/departures_in_window.sql"));
    // The other query: nothing to report.
    let (code, findings, _) = lint_json(&dir, &["queries/next_departures.sql"]);
    assert_eq!((code, findings.len()), (0, 0));
    let output = sluice(&dir).args(["lint", "no/such.sql"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no/such.sql: no such file or directory"));
}

#[test]
fn naming_every_file_reports_what_naming_their_directory_reports() {
    let dir = project(&[
        ("sluice.toml", b"[migrations]\ndir = \"db/migrations\"\n[queries]\ndirs = [\"db/queries\"]\n"),
        ("db/migrations/0001_users.sql", b"CREATE TABLE users (id bigint PRIMARY KEY, email text, name text);\n"),
        ("db/migrations/0002_index.sql", b"CREATE INDEX users_email ON users (email);\n"),
        ("db/migrations/0003_drop.sql", b"ALTER TABLE users DROP COLUMN name;\n"),
        ("db/queries/by_email.sql", b"SELECT id FROM users WHERE lower(email) = $1;\n"),
    ]);
    let migrations = ["db/migrations/0001_users.sql", "db/migrations/0002_index.sql", "db/migrations/0003_drop.sql"];
    let (_, by_directory, _) = lint_json(dir.path(), &["db/migrations"]);
    let (_, with_slash, _) = lint_json(dir.path(), &["db/migrations/"]);
    let (_, by_file, _) = lint_json(dir.path(), &migrations);
    // A file named twice, and a directory with a file below it, select it once.
    let (_, twice, _) = lint_json(dir.path(), &[migrations[1], "db/migrations", migrations[1]]);
    assert!(by_directory.len() >= 2 && !loud(&by_directory).is_empty(), "{by_directory:#?}");
    assert!(by_directory.iter().all(|f| f["file"].as_str().unwrap().starts_with("db/migrations/")));
    assert_eq!(by_file, by_directory);
    assert_eq!(with_slash, by_directory);
    assert_eq!(twice, by_directory);
    // `db` selects what is below it at any depth; `db/m` is not a directory above `db/migrations`.
    let (_, everything, _) = lint_json(dir.path(), &[]);
    let (_, by_parent, _) = lint_json(dir.path(), &["db"]);
    assert_eq!(by_parent, everything);
    assert!(everything.iter().any(|f| f["file"] == "db/queries/by_email.sql"), "{everything:#?}");
    let (_, one, _) = lint_json(dir.path(), &[migrations[2]]);
    assert!(!one.is_empty() && one.iter().all(|f| f["file"] == migrations[2]), "{one:#?}");
}

#[test]
fn table_output_has_the_source_line_and_no_colour_when_piped() {
    let output = sluice(&fixture("transit-planner")).arg("lint").output().unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("AND convert_timezone(st.service_timezone, st.departure_time) BETWEEN $3 AND $4"), "{text}");
    assert!(text.contains("^^^^"), "{text}");
    assert!(!text.contains('\u{1b}'), "colour escape in piped output");
    assert!(text.contains("1 error(s)"));
}

/// A throwaway project: (relative path, contents) pairs.
fn project(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, contents) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
    dir
}

fn stderr_of_failure(dir: &Path, args: &[&str]) -> String {
    let output = sluice(dir).args(args).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "stdout: {}", String::from_utf8_lossy(&output.stdout));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn bad_configuration_is_exit_2_naming_file_line_and_problem() {
    let dir = project(&[
        ("sluice.toml", b"postgres_version = 15\n[migrations]\ndirr = \"db\"\n"),
        ("migrations/001.sql", b"SELECT 1;"),
    ]);
    let stderr = stderr_of_failure(dir.path(), &["lint"]);
    assert!(stderr.contains("sluice.toml:3") && stderr.contains("unknown field `dirr`"), "{stderr}");

    let dir = project(&[
        ("sluice.toml", b"[rules]\n\"missing-lock-timeot\" = \"off\"\n"),
        ("migrations/001.sql", b"SELECT 1;"),
    ]);
    let stderr = stderr_of_failure(dir.path(), &["lint"]);
    assert!(stderr.contains("sluice.toml:2") && stderr.contains("unknown rule `missing-lock-timeot`"), "{stderr}");

    let dir = project(&[("sluice.toml", b"postgres_version = \n"), ("migrations/001.sql", b"SELECT 1;")]);
    let stderr = stderr_of_failure(dir.path(), &["lint"]);
    assert!(stderr.contains("sluice.toml:1"), "{stderr}");
}

#[test]
fn bad_input_files_are_exit_2_naming_the_file() {
    let dir = project(&[("migrations/001.sql", b"SELECT 1;\nSELECT '\xff';\n")]);
    let stderr = stderr_of_failure(dir.path(), &["lint"]);
    assert!(stderr.contains("001.sql:2: not valid UTF-8"), "{stderr}");

    let dir =
        project(&[("migrations/001.sql", b"SELECT 1;"), ("policies/identity.toml", b"[[table]]\nname = \"t\"\n")]);
    let stderr = stderr_of_failure(dir.path(), &["lint"]);
    assert!(stderr.contains("identity.toml") && stderr.contains("identity"), "{stderr}");

    let dir = project(&[("other/001.sql", b"SELECT 1;")]);
    let stderr = stderr_of_failure(dir.path(), &["lint"]);
    assert!(stderr.contains("migrations directory not found"), "{stderr}");
}

#[test]
fn flags_override_the_configuration() {
    let dir = project(&[
        (
            "db/001.sql",
            b"CREATE TABLE users (id bigint PRIMARY KEY, email text);\nCREATE INDEX users_email ON users (email);",
        ),
        ("sql/find.sql", b"SELECT id FROM users WHERE lower(email) = $1;"),
    ]);
    let (code, findings, _) = lint_json(dir.path(), &["--migrations", "db", "--queries", "sql"]);
    assert_eq!(code, 1);
    assert_eq!(findings[0]["rule"], "function-on-indexed-column");
    let (code, _, _) = lint_json(dir.path(), &["--migrations", "db", "--queries", "sql", "--fail-on", "never"]);
    assert_eq!(code, 0);
}

#[test]
fn rule_severity_can_be_configured_or_turned_off() {
    let files: &[(&str, &[u8])] = &[
        (
            "migrations/001.sql",
            b"CREATE TABLE users (id bigint PRIMARY KEY, email text);\nCREATE INDEX users_email ON users (email);",
        ),
        ("queries/find.sql", b"SELECT id FROM users WHERE lower(email) = $1;"),
    ];
    let mut with_config = files.to_vec();
    with_config.push(("sluice.toml", b"[rules]\n\"function-on-indexed-column\" = \"warning\"\n"));
    let dir = project(&with_config);
    let (code, findings, _) = lint_json(dir.path(), &[]);
    assert_eq!((code, findings[0]["severity"].as_str()), (0, Some("warning")));
    let (code, _, _) = lint_json(dir.path(), &["--fail-on", "warning"]);
    assert_eq!(code, 1);

    let mut off = files.to_vec();
    off.push(("sluice.toml", b"[rules]\n\"function-on-indexed-column\" = \"off\"\n"));
    let dir = project(&off);
    let (code, findings, _) = lint_json(dir.path(), &[]);
    assert_eq!((code, findings.len()), (0, 0));
}

#[test]
fn rules_command_lists_and_documents() {
    let output =
        sluice(Path::new(env!("CARGO_MANIFEST_DIR"))).args(["rules", "function-on-indexed-column"]).output().unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("## What it does") && text.contains("## Why is this bad") && text.contains("```sql"));
    let output = sluice(Path::new(env!("CARGO_MANIFEST_DIR"))).args(["rules", "no-such-rule"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    // Issue 37: the rule table fits the terminal, like the other tables.
    for width in [80, 120] {
        let output = sluice(Path::new(env!("CARGO_MANIFEST_DIR")))
            .env("COLUMNS", width.to_string())
            .arg("rules")
            .output()
            .unwrap();
        let text = String::from_utf8(output.stdout).unwrap();
        assert!(text.contains("missing-lock-timeout"), "{text}");
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= width, "{widest} columns at COLUMNS={width}:\n{text}");
    }
}

const CREATE_USERS: &[u8] =
    b"CREATE TABLE users (id bigint PRIMARY KEY, email text);\nCREATE INDEX users_email ON users (email);\n";
const DROP_USERS: &[u8] = b"DROP TABLE users;\n";
const LOWER_EMAIL: &[u8] = b"SELECT id FROM users WHERE lower(email) = $1;\n";

/// The query's finding exists only if the up migrations were replayed and the down ones were not.
fn assert_replayed_up_only(dir: &Path) {
    let (code, findings, _) = lint_json(dir, &[]);
    assert_eq!(code, 1, "{findings:#?}");
    assert!(findings.iter().any(|f| f["rule"] == "function-on-indexed-column"), "{findings:#?}");
}

#[test]
fn every_migration_layout_replays_up_migrations_in_order() {
    let folder = project(&[
        ("migrations/2024-01-01-000000_create_users/up.sql", CREATE_USERS),
        ("migrations/2024-01-01-000000_create_users/down.sql", DROP_USERS),
        ("queries/q.sql", LOWER_EMAIL),
    ]);
    assert_replayed_up_only(folder.path());

    let flyway = project(&[
        ("migrations/V1__create_users.sql", b"CREATE TABLE users (id bigint PRIMARY KEY, email text);"),
        ("migrations/V1.1__index_email.sql", b"CREATE INDEX users_email ON users (email);"),
        ("migrations/U1.1__index_email.sql", b"DROP INDEX users_email;"),
        ("queries/q.sql", LOWER_EMAIL),
    ]);
    assert_replayed_up_only(flyway.path());

    // `.up.sql` names fit golang-migrate and sqlx: go.mod says which.
    let golang = project(&[
        ("go.mod", b"module example.com/app\n\nrequire github.com/golang-migrate/migrate/v4 v4.18.1\n"),
        ("migrations/1_create_users.up.sql", CREATE_USERS),
        ("migrations/1_create_users.down.sql", DROP_USERS),
        ("queries/q.sql", LOWER_EMAIL),
    ]);
    assert_replayed_up_only(golang.path());

    let dbmate = project(&[
        ("migrations/20240101000000_create_users.sql", b"-- migrate:up\nCREATE TABLE users (id bigint PRIMARY KEY, email text);\n-- migrate:downgrade notes: not dbmate's down marker, the index below still runs\nCREATE INDEX users_email ON users (email);\n\n-- migrate:down\nDROP TABLE users;\n"),
        ("queries/q.sql", LOWER_EMAIL),
    ]);
    assert_replayed_up_only(dbmate.path());
}

#[test]
fn a_schema_dump_can_start_the_history() {
    let dump = b"SET statement_timeout = 0;
SELECT pg_catalog.set_config('search_path', '', false);
CREATE TABLE public.users (id bigint NOT NULL, email character varying(255) NOT NULL);
ALTER TABLE ONLY public.users ADD CONSTRAINT users_pkey PRIMARY KEY (id);
CREATE INDEX index_users_on_email ON public.users USING btree (email);
";
    let dir = project(&[
        ("sluice.toml", b"[migrations]\ndir = \"db/migrate\"\nschema_dump = \"db/structure.sql\"\n"),
        ("db/structure.sql", dump),
        ("db/migrate/20240101_noop.sql", b"SELECT 1;"),
        ("queries/q.sql", LOWER_EMAIL),
    ]);
    let (code, findings, _) = lint_json(dir.path(), &[]);
    assert_eq!(code, 1);
    let hit = findings.iter().find(|f| f["rule"] == "function-on-indexed-column").expect("schema from the dump");
    assert!(hit["message"].as_str().unwrap().contains("index_users_on_email"));
}

#[test]
fn one_run_can_also_write_other_formats_to_files() {
    let out = tempfile::tempdir().unwrap();
    let sarif = out.path().join("report.sarif");
    let markdown = out.path().join("report.md");
    let output = sluice(&fixture("transit-planner"))
        .args(["lint", "--format", "github"])
        .arg("--output")
        .arg(format!("sarif={}", sarif.display()))
        .arg("--output")
        .arg(format!("markdown={}", markdown.display()))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stdout)
        .contains("::error file=fixtures/transit-planner/queries/departures_in_window.sql"));
    let sarif: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert!(results.iter().any(|r| r["ruleId"] == "function-on-indexed-column"), "{results:#?}");
    assert!(std::fs::read_to_string(&markdown).unwrap().contains("function-on-indexed-column"));

    let output = sluice(&fixture("transit-planner")).args(["lint", "--output", "yaml=x"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown format `yaml`"));
}

#[test]
fn outside_a_repository_paths_are_relative_to_the_working_directory() {
    let dir = project(&[
        ("sluice.toml", b"[migrations]\ndir = \"db\"\n[queries]\ndirs = [\"sql\"]\n"),
        (
            "db/001.sql",
            b"CREATE TABLE users (id bigint PRIMARY KEY, email text);\nCREATE INDEX users_email ON users (email);",
        ),
        ("sql/find.sql", LOWER_EMAIL),
    ]);
    // From a subdirectory, the configuration is found walking up.
    let (code, findings, _) = lint_json(&dir.path().join("sql"), &[]);
    assert_eq!(code, 1);
    assert_eq!(findings[0]["file"], "find.sql");
    let (_, findings, _) = lint_json(dir.path(), &[]);
    assert_eq!(findings[0]["file"], "sql/find.sql");
}

#[test]
fn odd_input_is_reported_never_a_crash() {
    let dir = project(&[
        ("migrations/001_empty.sql", b""),
        ("migrations/002_comments.sql", b"-- only a comment\n/* and /* nested */ one */\n"),
        (
            "migrations/003_unicode.sql",
            "CREATE TABLE \"Ünïcode\" (ä int, \"Mixed Case\" text);\nCREATE INDEX ON \"Ünïcode\" (ä);\n".as_bytes(),
        ),
        (
            "migrations/004_unterminated.sql",
            b"CREATE TABLE t (a int);\nCREATE FUNCTION f() RETURNS int AS $$ SELECT 1; SELECT 2;",
        ),
        ("queries/never_closed.sql", b"/* never closed\nSELECT 1;"),
        (
            "queries/fragments.sql",
            "SELECT * FROM \"Ünïcode\" WHERE ä::text = $1;;;\n;\nALTER TABLE;\nCREATE INDEX;\nDROP INDEX;\n".as_bytes(),
        ),
    ]);
    let (code, findings, _) = lint_json(dir.path(), &[]);
    assert_eq!(code, 1, "{findings:#?}");
    let at = |rule: &str, file: &str| findings.iter().filter(|f| f["rule"] == rule && f["file"] == file).count();
    assert_eq!(at("unread-text", "migrations/004_unterminated.sql"), 1, "the unreadable rest is reported");
    assert_eq!(at("unread-text", "queries/never_closed.sql"), 1);
    assert_eq!(at("unparsed-statement", "queries/fragments.sql"), 3);
    assert_eq!(at("function-on-indexed-column", "queries/fragments.sql"), 1, "quoted and non-ASCII names resolve");
}

#[test]
fn a_down_file_named_on_the_command_line_is_linted_as_a_rollback() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("sluice.toml", "[migrations]\ndir = \"migrations\"\n");
    write("migrations/2024-01-01-000000_orders/up.sql", "CREATE TABLE orders (id bigint PRIMARY KEY, status text);\n");
    write("migrations/2024-01-01-000000_orders/down.sql", "DROP TABLE orders;\n");
    write("migrations/2024-01-02-000000_status_index/up.sql", "CREATE INDEX CONCURRENTLY ON orders (status);\n");
    write("migrations/2024-01-02-000000_status_index/metadata.toml", "run_in_transaction = false\n");
    write("migrations/2024-01-02-000000_status_index/down.sql", "DROP INDEX orders_status_idx;\n");
    let down = "migrations/2024-01-02-000000_status_index/down.sql";
    let (code, findings, _) = lint_json(dir.path(), &[down]);
    assert_eq!(code, 1, "{findings:#?}");
    let drop = findings.iter().find(|f| f["rule"] == "drop-index-non-concurrently").expect("checked as a migration");
    assert_eq!(drop["file"], down);
    assert!(drop["message"].as_str().unwrap().contains("ACCESS EXCLUSIVE lock on orders,"), "{drop:#?}");
    assert!(findings.iter().all(|f| f["file"] == down), "only the named file is reported: {findings:#?}");
}

/// A history whose first two migrations already have findings: what a team adopting Sluice has.
const ADOPTION: &[(&str, &[u8])] = &[
    ("migrations/0001_users.sql", b"CREATE TABLE users (id bigint PRIMARY KEY, email text, name text);\n"),
    ("migrations/0002_email_index.sql", b"CREATE INDEX users_email ON users (email);\n"),
    ("migrations/0003_drop_name.sql", b"SET lock_timeout = '5s';\nALTER TABLE users DROP COLUMN name;\n"),
];

fn rules_and_files(findings: &[Value]) -> Vec<(String, String, String)> {
    loud(findings)
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().into(),
                f["file"].as_str().unwrap().into(),
                f["severity"].as_str().unwrap().into(),
            )
        })
        .collect()
}

#[test]
fn since_lints_from_a_version_on_after_replaying_what_came_before() {
    let dir = project(ADOPTION);
    let (code, findings, _) = lint_json(dir.path(), &[]);
    assert_eq!(code, 1);
    assert!(findings.iter().any(|f| f["file"] == "migrations/0002_email_index.sql"), "{findings:#?}");

    // From 0003 on: 0002's index build is not reported, but the schema still knows users.name.
    let (code, findings, doc) = lint_json(dir.path(), &["--since", "0003"]);
    assert_eq!(code, 1);
    assert_eq!(
        rules_and_files(&findings),
        [("drop-column".into(), "migrations/0003_drop_name.sql".into(), "error".into())]
    );
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("Since 0003: the 2 migration(s) before it were replayed without being reported."),
        "{notes}"
    );
    // The same from sluice.toml; the flag wins over it; padding does not matter.
    std::fs::write(dir.path().join("sluice.toml"), "[migrations]\nsince = \"0003\"\n").unwrap();
    assert_eq!(lint_json(dir.path(), &[]).1, findings);
    let from_2 = lint_json(dir.path(), &["--since", "2"]).1;
    assert!(from_2.iter().any(|f| f["file"] == "migrations/0002_email_index.sql"), "{from_2:#?}");
    assert!(from_2.iter().all(|f| f["file"] != "migrations/0001_users.sql"), "{from_2:#?}");

    // A version no migration has is an error, never a silent "lint nothing".
    let stderr = stderr_of_failure(dir.path(), &["lint", "--since", "0004"]);
    assert!(stderr.contains("--since 0004: no migration has version 0004; versions run from 0001 to 0003"), "{stderr}");
    std::fs::write(dir.path().join("sluice.toml"), "postgres_version = 15\n[migrations]\nsince = \"0009\"\n").unwrap();
    let stderr = stderr_of_failure(dir.path(), &["lint"]);
    assert!(stderr.contains("sluice.toml:3: [migrations] since = \"0009\" matches no migration"), "{stderr}");
}

#[test]
fn a_baseline_turns_recorded_findings_into_info_and_keeps_new_ones() {
    let dir = project(ADOPTION);
    let (code, findings, doc) = lint_json(dir.path(), &["--write-baseline", "sluice-baseline.json"]);
    assert_eq!(code, 0, "everything recorded is info: {findings:#?}");
    assert!(loud(&findings).is_empty());
    assert!(doc["notes"].to_string().contains("to the baseline sluice-baseline.json"), "{doc}");
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("sluice-baseline.json")).unwrap()).unwrap();
    assert_eq!(recorded["version"], 1);
    assert!(recorded["findings"].as_array().unwrap().iter().any(|e| e["rule"] == "create-index-non-concurrently"));

    // Lines shift above the recorded statement and a new migration comes: only the new one counts.
    std::fs::write(
        dir.path().join("migrations/0002_email_index.sql"),
        "-- Look users up by email.\n\nCREATE INDEX users_email\n    ON users (email);\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("migrations/0004_name_index.sql"), "CREATE INDEX users_id ON users (id);\n")
        .unwrap();
    let (code, findings, _) = lint_json(dir.path(), &["--baseline", "sluice-baseline.json"]);
    assert_eq!(code, 1);
    let loud = rules_and_files(&findings);
    assert!(loud.iter().all(|(_, file, _)| file == "migrations/0004_name_index.sql"), "{loud:#?}");
    assert!(loud.contains(&(
        "create-index-non-concurrently".into(),
        "migrations/0004_name_index.sql".into(),
        "error".into()
    )));
    // Recorded findings are one note by default; --show-baselined lists them, as info.
    assert!(findings.iter().all(|f| f["file"] != "migrations/0002_email_index.sql"), "{findings:#?}");
    let (_, findings, _) = lint_json(dir.path(), &["--baseline", "sluice-baseline.json", "--show-baselined"]);
    let old = findings.iter().find(|f| f["file"] == "migrations/0002_email_index.sql").expect("listed");
    assert_eq!((old["severity"].as_str(), old["line"].as_u64()), (Some("info"), Some(3)));

    // An unreadable or malformed baseline is exit 2 naming the file (and the line).
    let stderr = stderr_of_failure(dir.path(), &["lint", "--baseline", "missing.json"]);
    assert!(stderr.contains("missing.json: cannot read"), "{stderr}");
    std::fs::write(dir.path().join("broken.json"), "{\n  \"version\": 1,\n  \"findings\": [\n    {\"rule\": 1}\n]}\n")
        .unwrap();
    let stderr = stderr_of_failure(dir.path(), &["lint", "--baseline", "broken.json"]);
    assert!(stderr.contains("broken.json:4: not a Sluice baseline"), "{stderr}");
}

/// Issue 37: a Prisma project names its tables and columns in mixed case. Policy names resolve
/// as PostgreSQL resolves identifiers, and one that matches no table is an error naming it.
#[test]
fn quoted_mixed_case_names_are_followed_and_policies_apply_to_them() {
    let history: &[u8] = b"CREATE TABLE \"Account\" (\"id\" TEXT NOT NULL, \"name\" TEXT, CONSTRAINT \"Account_pkey\" PRIMARY KEY (\"id\"));\n";
    let change: &[u8] = b"SET lock_timeout = '5s';\nALTER TABLE \"Account\" ADD COLUMN \"isPaused\" BOOLEAN;\nUPDATE \"Account\" SET \"isPaused\" = false WHERE \"isPaused\" IS NULL;\n";
    let files = |tables: &'static [u8]| -> Vec<(&'static str, &'static [u8])> {
        vec![
            ("sluice.toml", b"[migrations]\ndir = \"migrations\"\nlayout = \"flat\"\n".as_slice()),
            ("migrations/001_init.sql", history),
            ("migrations/002_paused.sql", change),
            ("policies/tables.toml", tables),
        ]
    };
    // Of unknown size: the backfill of the column just added is reported, names quoted.
    let dir = project(&files(b"[rows]\n"));
    let (code, findings, _) = lint_json(dir.path(), &[]);
    assert_eq!(code, 1);
    let backfill = findings.iter().find(|f| f["rule"] == "unbatched-backfill").expect("the backfill is seen");
    let message = backfill["message"].as_str().unwrap();
    assert!(message.contains("table \"Account\"") && message.contains("\"isPaused\" was added earlier"), "{message}");
    // Declared tiny, as SQL writes the name: nothing to report.
    let dir = project(&files(b"[rows]\n'\"Account\"' = 10\n"));
    let (code, findings, _) = lint_json(dir.path(), &[]);
    assert!(loud(&findings).is_empty(), "{findings:#?}");
    assert_eq!(code, 0);
    // Written without its quotes, the name is `account`, which no table has.
    let dir = project(&files(b"[rows]\nAccount = 10\n"));
    let stderr = stderr_of_failure(dir.path(), &["lint"]);
    assert!(stderr.contains("policies/tables.toml:2"), "{stderr}");
    assert!(stderr.contains("`account` names no table") && stderr.contains("did you mean `\"Account\"`?"), "{stderr}");
}

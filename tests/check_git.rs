//! `sluice check` end to end: throwaway git repositories built with git2 (a base commit on
//! `main`, a head commit on a branch, uncommitted edits), the built binary run inside them.

mod plan_support;
mod support;

use assert_cmd::Command;
use serde_json::Value;
use support::freeze::{deploy, FREEZE, OVERRIDE};
use support::git::{finding, found, json, notes, pair, TestRepo};

const CONFIG: &str = "[migrations]\ndir = \"db/migrations\"\n\n[queries]\ndirs = [\"queries\"]\n";

const USERS: &str = "CREATE TABLE users (id bigint PRIMARY KEY, email text NOT NULL, created_at timestamptz);
CREATE INDEX users_email ON users (email);
CREATE INDEX users_email_lower ON users ((lower(email)));
CREATE INDEX users_created_at ON users (created_at);
";

const REPORTS: &str =
    "CREATE TABLE daily_reports (id bigint PRIMARY KEY, day date NOT NULL, region text, total numeric);
CREATE INDEX daily_reports_day ON daily_reports (day);
";

const SITES: &str = "-- Sites where birds are counted.
CREATE TABLE sites (
    id bigint PRIMARY KEY,
    name text NOT NULL,
    latitude numeric,
    longitude numeric
);
";

/// `main`: three migrations (versions 0010, 0020, 0030), three queries; HEAD on branch `feature`.
/// `queries/recent.sql` already defeats an index on the base revision (a finding that is not
/// any change's doing).
fn base_repo() -> TestRepo {
    let repo = TestRepo::new();
    repo.write("sluice.toml", CONFIG);
    repo.write("db/migrations/0010_users.sql", USERS);
    repo.write("db/migrations/0020_reports.sql", REPORTS);
    repo.write("db/migrations/0030_sites.sql", SITES);
    repo.write(
        "queries/revenue.sql",
        "SELECT region, sum(total)\nFROM daily_reports\nWHERE day BETWEEN $1 AND $2\nGROUP BY region;\n",
    );
    repo.write("queries/login.sql", "SELECT id\nFROM users\nWHERE lower(email) = lower($1);\n");
    repo.write("queries/recent.sql", "SELECT id\nFROM users\nWHERE created_at::date = $1;\n");
    repo.write("README.md", "# birds\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo
}

/// Dropping the index the revenue query needs, written the lock-safe way so only the
/// check under test fires.
const DROP_REPORT_INDEX: &str = "SET lock_timeout = '5s';\nDROP INDEX CONCURRENTLY daily_reports_day;\n";

#[test]
fn an_added_migration_dropping_an_index_a_query_needs_fails_the_gate() {
    let repo = base_repo();
    repo.write("db/migrations/0040_drop_report_index.sql", DROP_REPORT_INDEX);
    repo.commit("drop an unused index");

    // In CI the head is HEAD and the base the merge base with main.
    let report = json(repo.check().env("CI", "true"), 1);
    assert_eq!(found(&report), [pair("drop-index-in-use", "db/migrations/0040_drop_report_index.sql")]);
    let message = finding(&report, "drop-index-in-use")["message"].as_str().unwrap();
    assert!(message.contains("queries/revenue.sql:3"), "{message}");
    assert!(
        notes(&report)
            .iter()
            .any(|n| n == "queries/revenue.sql re-checked: affected by db/migrations/0040_drop_report_index.sql."),
        "{:?}",
        notes(&report)
    );

    // Locally with a clean tree the working tree is the same change; explicit revisions too.
    assert_eq!(found(&json(&mut repo.check(), 1)), found(&report));
    assert_eq!(found(&json(repo.check().args(["--base", "main", "--head", "feature"]), 1)), found(&report));
    // --fail-on never reports the same findings and passes.
    assert_eq!(found(&json(repo.check().args(["--fail-on", "never"]), 0)), found(&report));
}

#[test]
fn a_restore_in_a_later_migration_of_the_change_still_leaves_a_window() {
    // The index swapped for one led by another column, then the old one restored by the next
    // migration: at the end of the change the query is served, but from the drop until the
    // second migration has built its index it runs without one.
    let repo = base_repo();
    repo.write(
        "db/migrations/0040_swap_report_index.sql",
        "SET lock_timeout = '5s';\nCREATE INDEX CONCURRENTLY daily_reports_region_day ON daily_reports (region, day);\nDROP INDEX CONCURRENTLY daily_reports_day;\n",
    );
    repo.write(
        "db/migrations/0050_restore_day_index.sql",
        "SET lock_timeout = '5s';\nCREATE INDEX CONCURRENTLY daily_reports_day_2 ON daily_reports (day);\n",
    );
    repo.commit("swap the report index, then restore it");
    let report = json(repo.check().env("CI", "true"), 1);
    assert_eq!(found(&report), [pair("drop-index-in-use", "db/migrations/0040_swap_report_index.sql")]);
    let message = finding(&report, "drop-index-in-use")["message"].as_str().unwrap();
    assert!(message.contains("queries/revenue.sql:3"), "{message}");
    assert!(
        message.contains(
            "index daily_reports_day_2 (day) (db/migrations/0050_restore_day_index.sql:2) serves them at the end of \
             the change, but only once that migration has run"
        ),
        "{message}"
    );
    // `lint` of the whole history judges by the schema it ends with: the query is served there.
    let mut lint = Command::cargo_bin("sluice").unwrap();
    lint.current_dir(repo.path()).arg("lint");
    // Exit 1: queries/recent.sql's own error (a cast that defeats an index).
    let linted = json(&mut lint, 1);
    let drops: Vec<&Value> =
        linted["findings"].as_array().unwrap().iter().filter(|f| f["rule"] == "drop-index-in-use").collect();
    assert!(drops.is_empty(), "{drops:#?}");
}

#[test]
fn a_long_history_read_from_git_gives_the_verdict_its_files_give() {
    // 300 migrations: read from the base revision by several threads, and many of them the same
    // text (the same blob) under different names, each read once for both sides.
    let repo = base_repo();
    for i in 0..300 {
        let text = match i % 3 {
            0 => {
                format!("CREATE TABLE t{i} (id bigint PRIMARY KEY, day date);\nCREATE INDEX t{i}_day ON t{i} (day);\n")
            }
            1 => format!("SELECT {i};\n"),
            // The same text again and again: one blob at many paths.
            _ => "SELECT 1;\n".to_string(),
        };
        repo.write(&format!("db/migrations/1{i:03}_m.sql"), &text);
    }
    repo.write("queries/t150.sql", "SELECT id FROM t150 WHERE day = $1;\n");
    repo.commit("a long history");
    repo.checkout_new_branch("drop-index");
    repo.write("db/migrations/2000_drop.sql", "SET lock_timeout = '5s';\nDROP INDEX CONCURRENTLY t150_day;\n");
    repo.commit("drop the index of t150");
    let report = json(repo.check().args(["--base", "feature", "--head", "drop-index"]), 1);
    assert_eq!(found(&report), [pair("drop-index-in-use", "db/migrations/2000_drop.sql")]);
    let message = finding(&report, "drop-index-in-use")["message"].as_str().unwrap();
    assert!(message.contains("queries/t150.sql:1"), "{message}");
    // The same check from the files on disk (the working tree is the head) finds the same.
    assert_eq!(found(&json(repo.check().args(["--base", "feature"]), 1)), found(&report));
}

#[test]
fn an_edited_old_migration_is_reported_not_relinted() {
    let repo = base_repo();
    repo.write("db/migrations/0020_reports.sql", &format!("{REPORTS}DROP INDEX daily_reports_day;\n"));
    repo.commit("edit an applied migration");
    let report = json(&mut repo.check(), 1);
    // The edit would drop an index revenue.sql needs, but it never runs: the edit itself is the finding.
    assert_eq!(found(&report), [pair("migration-edited", "db/migrations/0020_reports.sql")]);
    assert_eq!(finding(&report, "migration-edited")["severity"], "error");
}

#[test]
fn an_added_migration_sorting_before_the_newest_is_out_of_order() {
    let repo = base_repo();
    repo.write(
        "db/migrations/0025_sites_name.sql",
        "SET lock_timeout = '5s';\nCREATE INDEX CONCURRENTLY sites_name ON sites (name);\n",
    );
    repo.commit("late migration");
    let report = json(&mut repo.check(), 1);
    assert_eq!(found(&report), [pair("migration-out-of-order", "db/migrations/0025_sites_name.sql")]);
    let message = finding(&report, "migration-out-of-order")["message"].as_str().unwrap();
    assert!(message.contains("0030"), "{message}");
}

#[test]
fn an_added_migration_reusing_a_version_conflicts() {
    let repo = base_repo();
    repo.write("db/migrations/0030_places.sql", "CREATE TABLE places (id bigint PRIMARY KEY);\n");
    repo.commit("same version");
    let report = json(&mut repo.check(), 1);
    assert_eq!(found(&report), [pair("migration-version-conflict", "db/migrations/0030_places.sql")]);
}

#[test]
fn a_deleted_migration_is_reported() {
    let repo = base_repo();
    repo.remove("db/migrations/0030_sites.sql");
    repo.commit("remove a migration");
    let report = json(&mut repo.check(), 1);
    assert_eq!(found(&report), [pair("migration-deleted", "db/migrations/0030_sites.sql")]);
}

#[test]
fn a_renamed_migration_warns_and_a_renamed_and_edited_one_is_an_edit() {
    let repo = base_repo();
    repo.rename("db/migrations/0030_sites.sql", "db/migrations/0030_places.sql");
    repo.commit("rename");
    let report = json(&mut repo.check(), 0);
    assert_eq!(found(&report), [pair("migration-renamed", "db/migrations/0030_places.sql")]);
    assert_eq!(finding(&report, "migration-renamed")["severity"], "warning");
    json(repo.check().args(["--fail-on", "warning"]), 1);

    // Renamed under the same version and edited in the working tree: the edit will never run.
    repo.write(
        "db/migrations/0030_places.sql",
        &SITES.replace("longitude numeric", "longitude numeric,\n    region text"),
    );
    let report = json(&mut repo.check(), 1);
    let mut got = found(&report);
    got.sort();
    assert_eq!(
        got,
        [
            pair("migration-edited", "db/migrations/0030_places.sql"),
            pair("migration-renamed", "db/migrations/0030_places.sql"),
        ]
    );
}

#[test]
fn a_changed_query_file_is_checked_against_the_head_schema() {
    let repo = base_repo();
    repo.write(
        "queries/revenue.sql",
        "SELECT region, sum(total)\nFROM daily_reports\nWHERE date_trunc('month', day) = $1\nGROUP BY region;\n",
    );
    repo.commit("monthly revenue");
    let report = json(&mut repo.check(), 1);
    assert_eq!(found(&report), [pair("function-on-indexed-column", "queries/revenue.sql")]);
    let f = finding(&report, "function-on-indexed-column");
    assert_eq!(f["line"], 3);
    assert!(!f["message"].as_str().unwrap().contains("affected by"), "{f}");
}

#[test]
fn an_unchanged_query_affected_by_an_added_migration_is_rechecked_and_says_why() {
    let repo = base_repo();
    // Pre-existing on the base revision: recent.sql wraps an indexed column.
    let lint = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(repo.path())
        .args(["lint", "queries/recent.sql", "--format", "json"])
        .output()
        .unwrap();
    let linted: Value = serde_json::from_slice(&lint.stdout).unwrap();
    assert_eq!(found(&linted), [pair("function-on-indexed-column", "queries/recent.sql")]);

    repo.write(
        "db/migrations/0040_drop_lower_email.sql",
        "SET lock_timeout = '5s';\nDROP INDEX CONCURRENTLY users_email_lower;\n",
    );
    repo.commit("drop the expression index");
    let report = json(&mut repo.check(), 1);
    // The migration drops an index login.sql needs: one finding, on the migration, naming the
    // query. Without the expression index login.sql's lower(email) also defeats users_email, but
    // that is the same problem and is not reported a second time on the unchanged query. recent.sql
    // also reads users; its finding predates the change and is not reported either.
    assert_eq!(found(&report), [pair("drop-index-in-use", "db/migrations/0040_drop_lower_email.sql")]);
    let f = finding(&report, "drop-index-in-use");
    assert!(f["message"].as_str().unwrap().contains("queries/login.sql:3"), "{f}");
    let also = f["facts"].as_array().unwrap().iter().find(|fact| fact["name"] == "also seen at").expect("folded");
    assert!(also["value"].as_str().unwrap().starts_with("queries/login.sql:3 (function-on-indexed-column:"), "{also}");
    let notes = notes(&report);
    assert!(notes[0].contains("1 added migration(s), 0 changed query file(s), 2 unchanged query file(s)"), "{notes:?}");
}

#[test]
fn a_problem_only_the_unchanged_query_has_is_reported_on_it_as_affected() {
    let repo = TestRepo::new();
    repo.write("sluice.toml", CONFIG);
    repo.write("db/migrations/0030_sites.sql", SITES);
    repo.write("queries/site_search.sql", "SELECT id\nFROM sites\nWHERE lower(name) = lower($1);\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "db/migrations/0040_sites_name.sql",
        "SET lock_timeout = '5s';\nCREATE INDEX CONCURRENTLY sites_name ON sites (name);\n",
    );
    repo.commit("index site names");
    let report = json(&mut repo.check(), 1);
    // The new index is fine; the query that cannot use it is the problem, and only the query has it.
    assert_eq!(found(&report), [pair("function-on-indexed-column", "queries/site_search.sql")]);
    let message = finding(&report, "function-on-indexed-column")["message"].as_str().unwrap();
    assert!(message.ends_with("(affected by db/migrations/0040_sites_name.sql)"), "{message}");
}

#[test]
fn a_pull_request_without_sql_says_so_in_one_line_and_passes() {
    let repo = base_repo();
    repo.write("README.md", "# birds\n\nNow with owls.\n");
    repo.write("src/app.py", "print('hi')\n");
    repo.commit("docs");
    let report = json(&mut repo.check(), 0);
    assert!(found(&report).is_empty());
    let notes = notes(&report);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].starts_with("No migration, query or policy file changed between "), "{notes:?}");
    assert!(notes[0].ends_with("and the working tree."), "{notes:?}");

    let table = repo.check().output().unwrap();
    assert_eq!(table.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&table.stdout).contains("No migration, query or policy file changed"));
}

#[test]
fn uncommitted_work_is_reviewed_locally_and_ignored_in_ci() {
    let repo = base_repo();
    // Nothing committed on the branch; an untracked migration and an unstaged edit on disk.
    repo.write("db/migrations/0040_drop_report_index.sql", DROP_REPORT_INDEX);
    repo.write("db/migrations/0010_users.sql", &format!("{USERS}-- reviewed\n"));
    let report = json(&mut repo.check(), 1);
    assert_eq!(
        found(&report),
        [
            pair("migration-edited", "db/migrations/0010_users.sql"),
            pair("drop-index-in-use", "db/migrations/0040_drop_report_index.sql"),
        ]
    );
    assert!(notes(&report)[0].contains("the working tree"), "{:?}", notes(&report));

    // In CI the head is the HEAD commit, which is the base: nothing changed.
    let ci = json(repo.check().env("CI", "true"), 0);
    assert!(found(&ci).is_empty());
    assert!(notes(&ci)[0].starts_with("No migration, query or policy file changed"));
}

#[test]
fn the_base_configuration_applies_its_severity_overrides_to_history_findings() {
    let repo = TestRepo::new();
    // No [queries] dirs: this repository has none, and a configured directory must exist.
    repo.write("sluice.toml", "[migrations]\ndir = \"db/migrations\"\n\n[rules]\nmigration-edited = \"warning\"\n");
    repo.write("db/migrations/0010_users.sql", USERS);
    repo.write("db/migrations/0020_reports.sql", REPORTS);
    repo.commit("base with an override");
    repo.checkout_new_branch("feature");
    repo.write("db/migrations/0020_reports.sql", &format!("{REPORTS}-- typo fixed\n"));
    repo.commit("edit");
    let report = json(&mut repo.check(), 0);
    assert_eq!(found(&report), [pair("migration-edited", "db/migrations/0020_reports.sql")]);
    assert_eq!(finding(&report, "migration-edited")["severity"], "warning");
}

#[test]
fn an_invalid_head_configuration_is_an_error_naming_the_file_and_line() {
    let repo = base_repo();
    repo.write("sluice.toml", "[migrations]\ndir = \"db/migrations\"\nlayuot = \"flat\"\n");
    repo.write("db/migrations/0040_x.sql", "CREATE TABLE x (id int);\n");
    let output = repo.check().output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("sluice.toml:3") && stderr.contains("layuot"), "{stderr}");
}

#[test]
fn an_explicit_config_flag_overrides_the_repository_file() {
    let repo = base_repo();
    repo.write("db/migrations/0040_drop_report_index.sql", DROP_REPORT_INDEX);
    let other = tempfile::tempdir().unwrap();
    let config = other.path().join("strict.toml");
    std::fs::write(
        &config,
        format!("{CONFIG}\n[rules]\ndrop-index-in-use = \"warning\"\n")
            .replace("\"db/migrations\"", &format!("{:?}", repo.path().join("db/migrations")))
            .replace("[\"queries\"]", &format!("[{:?}]", repo.path().join("queries"))),
    )
    .unwrap();
    let report = json(repo.check().arg("--config").arg(&config), 0);
    assert_eq!(found(&report), [pair("drop-index-in-use", "db/migrations/0040_drop_report_index.sql")]);
    assert_eq!(finding(&report, "drop-index-in-use")["severity"], "warning");
}

#[test]
fn the_job_summary_gets_the_markdown_report_whatever_the_format() {
    let repo = base_repo();
    repo.write("db/migrations/0020_reports.sql", &format!("{REPORTS}-- edited\n"));
    let summary = repo.path().join("summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let report = json(repo.check().env("GITHUB_STEP_SUMMARY", &summary), 1);
    assert_eq!(found(&report), [pair("migration-edited", "db/migrations/0020_reports.sql")]);
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.starts_with("earlier step\n"), "{text}");
    assert!(text.contains("migration-edited") && text.contains("db/migrations/0020_reports.sql"), "{text}");
}

#[test]
fn a_deploy_inside_a_deny_window_fails_with_the_window_event_reason_end_and_next_open() {
    let repo = base_repo();
    repo.write("policies/freeze.toml", FREEZE);
    repo.commit("freeze calendar");
    repo.checkout_new_branch("feature-2");
    repo.write("db/migrations/0040_drop_report_index.sql", DROP_REPORT_INDEX);
    repo.commit("drop an index");

    // Five days before the count, 12:00 UTC: inside [10 May 00:00 BST, 19 May 00:00 BST).
    let report = json(repo.check().args(["--base", "feature"]).args(deploy("2026-05-12T12:00:00Z")), 1);
    let f = finding(&report, "change-freeze");
    assert_eq!(
        (f["severity"].as_str(), f["file"].as_str(), f["line"].as_u64()),
        (Some("error"), Some("policies/freeze.toml"), Some(8))
    );
    let message = f["message"].as_str().unwrap();
    for part in [
        "deploy of api to production at 2026-05-12T12:00:00Z",
        "window `bird-count-freeze`",
        "Spring Bird Count (`spring-count`)",
        "No production changes before the count",
        "ends 2026-05-18T23:00:00Z",
        "next open 2026-05-18T23:00:00Z",
    ] {
        assert!(message.contains(part), "{part} missing from {message}");
    }
    // The SQL findings are still there: the freeze is one more finding, not a replacement.
    assert!(found(&report).contains(&pair("drop-index-in-use", "db/migrations/0040_drop_report_index.sql")));
    assert!(
        notes(&report)
            .iter()
            .any(|n| n.starts_with("Change freeze: deploying api to production at 2026-05-12T12:00:00Z")
                && n.contains("checked against policies/freeze.toml (as on the base revision (")
                && n.ends_with("): frozen.")),
        "{:?}",
        notes(&report)
    );

    // A pull request without SQL is frozen all the same: the freeze is about deploying.
    let docs = base_repo();
    docs.write("policies/freeze.toml", FREEZE);
    docs.commit("freeze calendar");
    docs.checkout_new_branch("docs");
    docs.write("README.md", "# owls\n");
    let report = json(docs.check().args(["--base", "feature"]).args(deploy("2026-05-12T12:00:00Z")), 1);
    assert_eq!(found(&report), [pair("change-freeze", "policies/freeze.toml")]);

    // After the count, and in another environment, the deploy is open.
    let report = json(
        repo.check().args(["--base", "feature", "--fail-on", "never"]).args(deploy("2026-05-19T09:00:00+02:00")),
        0,
    );
    assert!(!found(&report).iter().any(|(rule, _)| rule == "change-freeze"), "{report:#}");
    assert!(
        notes(&report).iter().any(|n| n.starts_with("Change freeze:") && n.ends_with("): open.")),
        "{:?}",
        notes(&report)
    );
    let staging = json(
        docs.check().args([
            "--base",
            "feature",
            "--env",
            "staging",
            "--service",
            "api",
            "--at",
            "2026-05-12T12:00:00Z",
        ]),
        0,
    );
    assert!(found(&staging).is_empty(), "{staging:#}");
}

#[test]
fn an_override_in_force_opens_the_deploy_and_is_logged() {
    let repo = base_repo();
    repo.write("policies/freeze.toml", FREEZE);
    repo.write("README.md", "# owls\n");
    let elsewhere = tempfile::tempdir().unwrap();
    let overrides = elsewhere.path().join("overrides.toml");
    let audit = elsewhere.path().join("audit.jsonl");
    std::fs::write(&overrides, OVERRIDE).unwrap();
    let report = json(
        repo.check()
            .args(deploy("2026-05-12T12:00:00Z"))
            .arg("--overrides")
            .arg(&overrides)
            .arg("--audit-log")
            .arg(&audit),
        0,
    );
    let f = finding(&report, "change-freeze");
    assert_eq!(f["severity"], "info");
    assert!(f["message"].as_str().unwrap().contains("lifted for api to production by override `ovr-1`"), "{f:#}");
    let log = std::fs::read_to_string(&audit).unwrap();
    assert!(log.contains("\"override\":\"ovr-1\"") && log.contains("\"command\":\"check\""), "{log}");
    // Once it has expired the freeze is back, with a warning about the override.
    let report = json(repo.check().args(deploy("2026-05-12T15:00:00Z")).arg("--overrides").arg(&overrides), 1);
    let mut severities: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "change-freeze")
        .map(|f| f["severity"].as_str().unwrap())
        .collect();
    severities.sort();
    assert_eq!(severities, ["error", "warning"], "{report:#}");
}

#[test]
fn the_calendar_named_in_sluice_toml_or_by_flag_is_used() {
    let repo = base_repo();
    repo.git.set_head("refs/heads/main").unwrap();
    repo.write("sluice.toml", &format!("{CONFIG}\n[freeze]\ncalendar = \"ops/calendar.toml\"\n"));
    repo.write("ops/calendar.toml", FREEZE);
    repo.commit("calendar in ops/");
    repo.checkout_new_branch("deploy");
    let report = json(repo.check().args(deploy("2026-05-12T12:00:00Z")), 1);
    assert_eq!(finding(&report, "change-freeze")["file"], "ops/calendar.toml");
    // --calendar wins over the configuration.
    let open = tempfile::tempdir().unwrap();
    let calendar = open.path().join("empty.toml");
    std::fs::write(&calendar, "timezone = \"UTC\"\n").unwrap();
    let report = json(repo.check().args(deploy("2026-05-12T12:00:00Z")).arg("--calendar").arg(&calendar), 0);
    assert!(found(&report).is_empty(), "{report:#}");
}

#[test]
fn a_deploy_named_without_a_calendar_is_an_error_not_a_pass() {
    let repo = base_repo();
    repo.write("README.md", "changed\n");
    let output = repo.check().args(deploy("2025-12-13T09:00:00-05:00")).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let looked_for = repo.path().join("policies/freeze.toml");
    assert!(stderr.contains(&format!("{}: no change-freeze calendar there", looked_for.display())), "{stderr}");
    assert!(stderr.contains("deploying api to production cannot be checked"), "{stderr}");
    assert!(output.stdout.is_empty(), "no verdict is printed");

    // Half a deployment is a usage error, and so is a time that is not RFC 3339.
    for args in [&["--env", "production"][..], &["--service", "api"], &["--at", "2025-12-13T09:00:00Z"]] {
        let output = repo.check().args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
    }
    let bad = repo.check().args(["--env", "production", "--service", "api", "--at", "tomorrow"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("RFC 3339"));

    // A bad calendar fails closed too, naming the file and line.
    repo.write("policies/freeze.toml", &FREEZE.replace("Europe/London", "Europe/Londres"));
    let output = repo.check().args(deploy("2026-05-12T12:00:00Z")).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown time zone `Europe/Londres`"));

    // Issue 16, case 11: a 300,000-year lead once overflowed into a panic (exit 101).
    repo.write("policies/freeze.toml", &FREEZE.replace("lead = \"P7D\"", "lead = \"P300000Y\""));
    let output = repo.check().args(deploy("2026-05-12T12:00:00Z")).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "policies/freeze.toml:8: [[window]] `bird-count-freeze`: lead: `P300000Y` is longer than 100 years"
        ),
        "{stderr}"
    );

    // Issue 16, case 14: a FIFO as the calendar is refused at once, never waited on.
    std::fs::remove_file(repo.path().join("policies/freeze.toml")).unwrap();
    nix::unistd::mkfifo(&repo.path().join("policies/freeze.toml"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let output =
        repo.check().args(deploy("2026-05-12T12:00:00Z")).timeout(std::time::Duration::from_secs(60)).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("policies/freeze.toml: not a regular file (a FIFO"), "{stderr}");
}

#[test]
fn a_calendar_without_a_named_deploy_is_reported_as_not_checked() {
    let repo = base_repo();
    repo.write("policies/freeze.toml", FREEZE);
    repo.commit("freeze calendar");
    repo.write("README.md", "changed\n");
    let report = json(&mut repo.check(), 0);
    assert!(
        notes(&report).iter().any(|n| n.starts_with("Change freeze not checked: policies/freeze.toml exists")
            && n.contains("--env ENV --service NAME")),
        "{:?}",
        notes(&report)
    );
}

#[test]
fn every_format_renders_the_check_report() {
    let repo = base_repo();
    repo.write("db/migrations/0040_drop_report_index.sql", DROP_REPORT_INDEX);
    for format in ["table", "sarif", "github", "gitlab", "markdown"] {
        let output = repo.check().args(["--format", format]).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{format}: {}", String::from_utf8_lossy(&output.stderr));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("db/migrations/0040_drop_report_index.sql"), "{format}:\n{stdout}");
    }
}

#[test]
fn outside_a_repository_or_with_an_unknown_revision_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::cargo_bin("sluice").unwrap().current_dir(dir.path()).arg("check").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not inside a git repository"));

    let repo = base_repo();
    let output = repo.check().args(["--base", "no-such-branch"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown revision `no-such-branch`"));
}

#[test]
fn a_new_tables_policy_comes_from_the_head_revision_and_a_bad_one_on_disk_is_an_error() {
    let repo = base_repo();
    repo.write(
        "db/migrations/0040_observations.sql",
        "CREATE TABLE observations (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, checklist_id bigint NOT NULL,
  client_observation_id uuid NOT NULL, site_id bigint NOT NULL, species_code text NOT NULL);
CREATE UNIQUE INDEX observations_site_species ON observations (site_id, species_code);
",
    );
    repo.write(
        "policies/identity.toml",
        "[[table]]\nname = \"observations\"\nidentity = [[\"checklist_id\", \"client_observation_id\"]]\nshared = [\"site_id\", \"species_code\"]\n",
    );
    repo.commit("observations with a policy");
    // An uncommitted, broken edit of the policy: CI reviews the commit, not the disk.
    repo.write("policies/identity.toml", "[[table]]\nname = \"observations\"\nidentiy = []\n");
    let report = json(repo.check().env("CI", "true"), 1);
    assert_eq!(
        found(&report),
        [
            pair("domain-identity-unique", "db/migrations/0040_observations.sql"),
            pair("gate-config-changed", "policies/identity.toml")
        ]
    );
    let changed = finding(&report, "gate-config-changed")["message"].as_str().unwrap();
    assert!(
        changed.contains(
            "declare the identity of new table `observations` as (checklist_id, client_observation_id) \
                          (applied in this review: the base has no such table)"
        ),
        "{changed}"
    );
    assert!(
        notes(&report).iter().any(|n| n.starts_with("The policies for `observations` came from the head")),
        "{:?}",
        notes(&report)
    );

    let local = repo.check().output().unwrap();
    assert_eq!(local.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&local.stderr);
    assert!(stderr.contains("policies/identity.toml:") && stderr.contains("identiy"), "{stderr}");
}

#[test]
fn the_nearest_head_side_config_applies_in_a_monorepo_and_repo_points_anywhere_inside() {
    let repo = TestRepo::new();
    repo.write("services/api/sluice.toml", "[migrations]\ndir = \"sql/migrations\"\n");
    repo.write("services/api/sql/migrations/001_reports.sql", REPORTS);
    repo.write("services/api/queries/revenue.sql", "SELECT sum(total) FROM daily_reports WHERE day = $1;\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("services/api/sql/migrations/002_drop.sql", DROP_REPORT_INDEX);

    let expected = [pair("drop-index-in-use", "services/api/sql/migrations/002_drop.sql")];
    let mut inside = repo.check();
    inside.current_dir(repo.path().join("services/api"));
    assert_eq!(found(&json(&mut inside, 1)), expected);

    let elsewhere = tempfile::tempdir().unwrap();
    let mut from_outside = repo.check();
    from_outside.current_dir(elsewhere.path()).arg("--repo").arg(repo.path().join("services/api"));
    assert_eq!(found(&json(&mut from_outside, 1)), expected);

    // From the repository root there is no sluice.toml on the way up, and the default
    // `migrations/` exists on neither side: never "nothing to review" (issue 37, item 14), but
    // exit 2 saying what is missing and where the configuration is.
    let output = repo.check().output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("migrations: migrations directory not found on the base revision or the head"), "{stderr}");
    assert!(stderr.contains("or run it in the directory of services/api/sluice.toml, or pass --config"), "{stderr}");
}

// --- Plan comparison: `[plan] scale` set, a real ephemeral PostgreSQL started by Sluice. -------

const ORDERS: &str = "CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL, region text NOT NULL);
CREATE TABLE orders (
    id bigint PRIMARY KEY,
    customer_id bigint NOT NULL REFERENCES customers (id),
    created_at timestamptz NOT NULL,
    total numeric(12, 2) NOT NULL
);
";

const ORDERS_INDEXES: &str = "CREATE INDEX orders_created_at_idx ON orders (created_at);
CREATE INDEX orders_customer_idx ON orders (customer_id);
";

/// A few thousand rows: enough for the planner to prefer the index, quick to generate.
const SMALL_SCALE: &str = r#"
[tables.customers]
rows = 500
[tables.customers.columns]
email  = { pattern = "customer-{n}@example.com" }
region = { one_of = ["north", "south", "east", "west"] }

[tables.orders]
rows = 5_000
[tables.orders.columns]
customer_id = { uniform = [1, 500] }
created_at  = { timestamps = ["2024-01-01T00:00:00Z", "2026-01-01T00:00:00Z"] }
total       = { sql = "round((random() * 500)::numeric, 2)" }
"#;

const PLAN_CONFIG: &str = "[migrations]\ndir = \"db/migrations\"\n\n[queries]\ndirs = [\"queries\"]\n\n[plan]\nscale = \"db/scale.toml\"\nseq_scan_rows = 500\n";

/// `main`: the orders schema with its indexes, the revenue query, `[plan]` naming the small
/// scale spec (`required` when asked); HEAD on branch `feature`.
fn plan_repo(required: bool) -> TestRepo {
    let repo = TestRepo::new();
    let config = if required { format!("{PLAN_CONFIG}required = true\n") } else { PLAN_CONFIG.to_string() };
    repo.write("sluice.toml", &config);
    repo.write("db/scale.toml", SMALL_SCALE);
    repo.write("db/migrations/0001_orders.sql", ORDERS);
    repo.write("db/migrations/0002_orders_indexes.sql", ORDERS_INDEXES);
    repo.write(
        "queries/daily_revenue.sql",
        "-- One day of revenue by region.\nSELECT c.region, sum(o.total)\nFROM orders o\nJOIN customers c ON c.id = o.customer_id\nWHERE o.created_at >= $1 AND o.created_at < $2\nGROUP BY c.region;\n",
    );
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo
}

/// The pull request of the reporting outage: "clean up unused indexes".
const DROP_CREATED_AT: &str = "SET lock_timeout = '5s';\nDROP INDEX CONCURRENTLY orders_created_at_idx;\n";

fn plan_findings<'a>(report: &'a Value, rule: &str) -> Vec<&'a Value> {
    report["findings"].as_array().unwrap().iter().filter(|f| f["rule"] == rule).collect()
}

#[test]
fn with_a_scale_spec_check_compares_plans_and_reports_the_dropped_index_a_query_needs() {
    plan_support::require_postgres();
    let cache = plan_support::cache_dir();
    let repo = plan_repo(false);
    repo.write("db/migrations/0003_drop_unused_indexes.sql", DROP_CREATED_AT);
    repo.commit("drop unused indexes");

    let report = json(repo.check().env_remove("DATABASE_URL").env("SLUICE_CACHE_DIR", cache.path()), 1);
    // The plan regression on the unchanged query is the problem the migration's drop-index-in-use
    // finding already names: one finding, on the migration, that carries the plan as evidence.
    assert!(plan_findings(&report, "plan-regression").is_empty(), "{report:#}");
    let drops = plan_findings(&report, "drop-index-in-use");
    assert_eq!(drops.len(), 1, "{report:#}");
    let f = drops[0];
    assert_eq!(f["file"].as_str(), Some("db/migrations/0003_drop_unused_indexes.sql"));
    assert!(f["message"].as_str().unwrap().contains("queries/daily_revenue.sql:5"), "{f:#}");
    let also: Vec<&str> = f["facts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["name"] == "also seen at")
        .map(|x| x["value"].as_str().unwrap())
        .collect();
    assert!(
        also.iter().any(|a| a.starts_with("queries/daily_revenue.sql:2 (plan-regression:") && a.contains("Seq Scan")),
        "{also:?}"
    );
    assert!(f["evidence"]["base_plan"].to_string().contains("orders_created_at_idx"), "{f:#}");
    let check_notes = notes(&report);
    assert!(check_notes.iter().any(|n| n.starts_with("Plan comparison: fixture: built")), "{check_notes:?}");
    assert!(
        check_notes
            .iter()
            .any(|n| n == "Plan comparison: head: 1 new migration(s) applied to a copy of the base fixture"),
        "{check_notes:?}"
    );

    // `sluice plan` compares the same revisions through git (default base: the merge base with main)
    // and reuses the fixture the check built.
    let output = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(repo.path())
        .env_remove("CI")
        .env_remove("DATABASE_URL")
        .args(["plan", "--format", "json", "--cache-dir"])
        .arg(cache.path())
        .output()
        .unwrap();
    let plan = plan_support::json(&output);
    assert_eq!(output.status.code(), Some(1), "{plan:#}");
    assert_eq!(plan_support::findings(&plan, "plan-regression").len(), 1, "{plan:#}");
    let plan_notes = plan["notes"].to_string();
    assert!(plan_notes.contains("(base) and the working tree (head): 2 and 3 migration(s)"), "{plan_notes}");
    assert!(plan_notes.contains("fixture: reused cached"), "{plan_notes}");

    // A head that keeps the index passes, and --no-plan skips the comparison with a note.
    let safe = plan_repo(false);
    safe.write("db/migrations/0003_order_note.sql", "ALTER TABLE orders ADD COLUMN note text;\n");
    let report = json(safe.check().env_remove("DATABASE_URL").env("SLUICE_CACHE_DIR", cache.path()), 0);
    assert!(plan_findings(&report, "plan-regression").is_empty(), "{report:#}");
    assert!(notes(&report).iter().any(|n| n.contains("queries planned on base and head")), "{report:#}");
    let report = json(repo.check().arg("--no-plan"), 1);
    assert!(plan_findings(&report, "plan-regression").is_empty(), "{report:#}");
    let f = plan_findings(&report, "drop-index-in-use")[0];
    assert!(f["facts"].as_array().unwrap().iter().all(|x| x["name"] != "also seen at"), "{f:#}");
    assert!(
        notes(&report).iter().any(|n| n == "Plans not compared: --no-plan; run `sluice plan` to compare them."),
        "{:?}",
        notes(&report)
    );
}

/// Issue 39, item 1: a pull request that only edits a query is compared as such: the base text
/// on the base fixture, the head text on the head. The head's OR no index serves reads the
/// orders by Seq Scan; nothing in the migrations changed, no lint rule recognizes it.
#[test]
fn check_compares_a_changed_query_with_its_base_text() {
    plan_support::require_postgres();
    let cache = plan_support::cache_dir();
    let repo = plan_repo(false);
    repo.write(
        "queries/daily_revenue.sql",
        "-- One day of revenue by region.\nSELECT c.region, sum(o.total)\nFROM orders o\nJOIN customers c ON c.id = o.customer_id\nWHERE o.created_at >= $1 OR o.total > $2\nGROUP BY c.region;\n",
    );
    repo.commit("revenue of large orders too");
    let report = json(repo.check().env_remove("DATABASE_URL").env("SLUICE_CACHE_DIR", cache.path()), 1);
    let regressions = plan_findings(&report, "plan-regression");
    assert_eq!(regressions.len(), 1, "{report:#}");
    let f = regressions[0];
    assert_eq!(f["file"].as_str(), Some("queries/daily_revenue.sql"));
    assert!(f["message"].as_str().unwrap().contains("is read by Seq Scan on head"), "{f:#}");
    assert!(f["help"].as_str().unwrap().contains("the query changed: its base text (line 2 on base)"), "{f:#}");
    assert!(
        notes(&report).iter().any(|n| n.contains("(1 changed: the base text planned on base; 0 new")),
        "{:?}",
        notes(&report)
    );
}

#[test]
fn plans_required_without_postgresql_is_an_error_and_optional_plans_say_they_were_skipped() {
    let repo = plan_repo(true);
    repo.write("db/migrations/0003_drop_unused_indexes.sql", DROP_CREATED_AT);
    let unavailable = |cmd: &mut Command| {
        cmd.env_remove("DATABASE_URL").env("SLUICE_PG_BINDIR", "/nonexistent/pg/bin");
    };
    let mut cmd = repo.check();
    unavailable(&mut cmd);
    let output = cmd.output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stdout));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("plans must be compared ([plan] required = true in"), "{stderr}");
    assert!(
        stderr.contains("SLUICE_PG_BINDIR=/nonexistent/pg/bin") && stderr.contains("apt-get install -y postgresql"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "no verdict is printed");
    // --no-plan is the explicit way out, and says so.
    let mut cmd = repo.check();
    unavailable(&mut cmd);
    let report = json(cmd.arg("--no-plan"), 1);
    assert!(notes(&report).iter().any(|n| n.contains("--no-plan (even though [plan] required = true)")), "{report:#}");

    // Dropping `required` in the change itself relaxes nothing: the base's configuration applies.
    repo.write("sluice.toml", PLAN_CONFIG);
    let mut cmd = repo.check();
    unavailable(&mut cmd);
    assert_eq!(cmd.output().unwrap().status.code(), Some(2));

    // Not required on the base: the gate gives its other verdicts and says plans were not compared, and why.
    let repo = plan_repo(false);
    repo.write("db/migrations/0003_drop_unused_indexes.sql", DROP_CREATED_AT);
    let mut cmd = repo.check();
    unavailable(&mut cmd);
    let report = json(&mut cmd, 1);
    assert_eq!(found(&report), [pair("drop-index-in-use", "db/migrations/0003_drop_unused_indexes.sql")]);
    assert!(
        notes(&report)
            .iter()
            .any(|n| n.starts_with("Plans not compared: [plan] scale is set but no PostgreSQL is available")
                && n.contains("required = true")),
        "{:?}",
        notes(&report)
    );
}

/// Issue 37: a goose Go migration is reported by `check` as `lint` reports it, never passed as
/// "nothing to review".
#[test]
fn an_added_goose_go_migration_is_reported_as_not_checked() {
    let repo = TestRepo::new();
    repo.write("sluice.toml", "[migrations]\ndir = \"db/migrations\"\nlayout = \"goose\"\n");
    repo.write(
        "db/migrations/00001_users.sql",
        "-- +goose Up\nCREATE TABLE users (id bigint PRIMARY KEY);\n-- +goose Down\nDROP TABLE users;\n",
    );
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "db/migrations/00002_backfill.go",
        "package migrations\n\nfunc init() { goose.AddMigrationContext(upBackfill, downBackfill) }\n",
    );
    repo.commit("a Go migration");
    let report = json(repo.check().args(["--base", "main"]), 0);
    let reported = finding(&report, "runner-rejects-migration");
    assert_eq!(reported["file"], "db/migrations/00002_backfill.go");
    assert_eq!(reported["severity"], "warning");
    assert!(reported["message"].as_str().unwrap().contains("goose runs this Go migration"), "{reported}");
    let linted = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(repo.path())
        .args(["lint", "--format", "json"])
        .output()
        .unwrap();
    let linted: Value = serde_json::from_slice(&linted.stdout).unwrap();
    let lint_finding =
        linted["findings"].as_array().unwrap().iter().find(|f| f["rule"] == "runner-rejects-migration").unwrap();
    assert_eq!(lint_finding["message"], reported["message"], "the same words as lint");
}

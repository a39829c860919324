//! A pull request cannot loosen its own gate: `sluice check` reads the gate's configuration
//! from the base revision, reports what each edit of it would do, and asks a table's domain
//! reviewers to approve changes to its identity. Real git repositories built in each test.

mod support;

use serde_json::Value;
use support::freeze::{deploy, FREEZE, OVERRIDE};
use support::git::{finding, found, json, notes, pair, TestRepo};

const CONFIG: &str = "[migrations]\ndir = \"db/migrations\"\n\n[queries]\ndirs = [\"queries\"]\n";

const OBSERVATIONS: &str = "CREATE TABLE observations (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    checklist_id bigint NOT NULL,
    client_observation_id uuid NOT NULL,
    site_id bigint NOT NULL,
    observed_window tstzrange NOT NULL,
    species_code text NOT NULL
);
CREATE TABLE sites (id bigint PRIMARY KEY, name text NOT NULL);
";

const IDENTITY: &str = r#"reviewers = ["survey-org/data-stewards"]

[[table]]
name = "observations"
identity = [["checklist_id", "client_observation_id"]]
shared = ["site_id", "observed_window", "species_code"]
reviewers = ["survey-org/survey-domain", "ana"]
reason = "Many participants report the same site, window and species."
"#;

const TABLES: &str = "[rows]\nobservations = 120_000_000\nsites = 40_000_000\n";

/// `main`: the observations schema, its identity (with reviewers) and sizes; HEAD on `feature`.
fn survey_repo() -> TestRepo {
    let repo = TestRepo::new();
    repo.write("sluice.toml", CONFIG);
    repo.write("db/migrations/0001_observations.sql", OBSERVATIONS);
    repo.write("policies/identity.toml", IDENTITY);
    repo.write("policies/tables.toml", TABLES);
    repo.write("queries/by_site.sql", "SELECT id FROM observations WHERE site_id = $1;\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo
}

/// A plain CREATE INDEX on the 120-million-row table: blocks writes for the whole build.
const BLOCKING_INDEX: &str =
    "SET lock_timeout = '5s';\nCREATE INDEX observations_species ON observations (species_code);\n";

/// The bird-survey incident's constraint.
const WRONG_UNIQUE: &str = "SET lock_timeout = '5s';
CREATE UNIQUE INDEX CONCURRENTLY observations_site_window_species ON observations (site_id, observed_window, species_code);
";

/// A uniqueness on the declared identity: right, but still a domain decision.
const IDENTITY_UNIQUE: &str = "SET lock_timeout = '5s';
CREATE UNIQUE INDEX CONCURRENTLY observations_client ON observations (checklist_id, client_observation_id);
";

fn gate_changed<'a>(report: &'a Value, file: &str) -> &'a str {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "gate-config-changed" && f["file"] == file)
        .and_then(|f| f["message"].as_str())
        .unwrap_or_else(|| panic!("no gate-config-changed finding on {file}: {report:#}"))
}

fn of<'a>(report: &'a Value, rule: &str) -> Vec<&'a Value> {
    report["findings"].as_array().unwrap().iter().filter(|f| f["rule"] == rule).collect()
}

// --- sluice.toml and table sizes ------------------------------------------------------------

#[test]
fn turning_a_rule_off_in_the_same_change_does_not_turn_it_off() {
    let repo = survey_repo();
    repo.write("db/migrations/0002_species_index.sql", BLOCKING_INDEX);
    repo.write("sluice.toml", &format!("{CONFIG}\n[rules]\n\"create-index-non-concurrently\" = \"off\"\n"));
    repo.commit("index, and the rule that would catch it off");

    let report = json(&mut repo.check(), 1);
    assert_eq!(
        found(&report),
        [
            pair("create-index-non-concurrently", "db/migrations/0002_species_index.sql"),
            pair("gate-config-changed", "sluice.toml"),
        ]
    );
    let changed = finding(&report, "gate-config-changed");
    assert_eq!((changed["severity"].as_str(), changed["line"].as_u64()), (Some("warning"), Some(8)));
    let message = changed["message"].as_str().unwrap();
    assert!(message.contains("this review applied the base revision's version"), "{message}");
    assert!(
        message.contains("once merged it would relax `create-index-non-concurrently` from error to off"),
        "{message}"
    );
    assert_eq!(changed["evidence"]["items"][0]["effect"], "relaxes");

    // --trust-head-config: today's behaviour for local experiments, and the report says so.
    let trusting = json(repo.check().arg("--trust-head-config"), 0);
    assert_eq!(found(&trusting), [pair("gate-config-changed", "sluice.toml")]);
    assert!(
        gate_changed(&trusting, "sluice.toml").contains("this review applied the head's version (--trust-head-config)")
    );
    assert!(notes(&trusting).iter().any(|n| n.starts_with("--trust-head-config: this review applied the head's")));
}

#[test]
fn shrinking_a_table_or_raising_a_threshold_in_the_same_change_keeps_the_error() {
    let repo = survey_repo();
    repo.write("db/migrations/0002_species_index.sql", BLOCKING_INDEX);
    repo.write(
        "policies/tables.toml",
        "large_table_rows = 500_000_000\n[rows]\nobservations = 10\nsites = 40_000_000\n",
    );
    repo.commit("the table is small now, honest");

    let report = json(&mut repo.check(), 1);
    assert_eq!(finding(&report, "create-index-non-concurrently")["severity"], "error");
    let message = gate_changed(&report, "policies/tables.toml");
    assert!(message.contains("relax `large_table_rows` from 100000 to 500000000"), "{message}");
    assert!(message.contains("change the size of `observations` from 120000000 to 10 rows"), "{message}");
}

// --- identity and domain review -------------------------------------------------------------

#[test]
fn rewriting_the_identity_to_fit_a_wrong_constraint_is_refused_and_needs_the_domain_reviewers() {
    let repo = survey_repo();
    repo.write("db/migrations/0002_unique_observation.sql", WRONG_UNIQUE);
    repo.write(
        "policies/identity.toml",
        &IDENTITY
            .replace(
                "[[\"checklist_id\", \"client_observation_id\"]]",
                "[[\"site_id\", \"observed_window\", \"species_code\"]]",
            )
            .replace("[\"survey-org/survey-domain\", \"ana\"]", "[\"survey-org/survey-domain\", \"ana\", \"mallory\"]"),
    );
    repo.commit("unique observations, and the identity that says so");

    let report = json(&mut repo.check(), 1);
    // The base's declaration keeps judging.
    let identity = finding(&report, "domain-identity-unique");
    assert!(identity["message"].as_str().unwrap().contains("(checklist_id, client_observation_id)"), "{identity:#}");
    let review: Vec<(&str, &str, &str)> = of(&report, "domain-review-required")
        .iter()
        .map(|f| (f["file"].as_str().unwrap(), f["severity"].as_str().unwrap(), f["message"].as_str().unwrap()))
        .collect();
    assert_eq!(review.len(), 2, "{report:#}");
    assert_eq!((review[0].0, review[0].1), ("db/migrations/0002_unique_observation.sql", "error"));
    assert!(review[0].2.contains("adds unique index observations_site_window_species"), "{}", review[0].2);
    assert_eq!((review[1].0, review[1].1), ("policies/identity.toml", "error"));
    assert!(review[1].2.contains("the change edits the identity declaration of `observations`"), "{}", review[1].2);
    // The reviewers are the base's: the head's `mallory` is not one of them.
    for (_, _, message) in &review {
        assert!(message.contains("(survey-org/survey-domain, ana)"), "{message}");
    }
    let changed = gate_changed(&report, "policies/identity.toml");
    assert!(
        changed.contains(
            "change the identity keys of `observations` from (checklist_id, client_observation_id) to (site_id, \
             observed_window, species_code)"
        ),
        "{changed}"
    );
    assert!(changed.contains("change who approves `observations` from survey-org/survey-domain, ana to"), "{changed}");

    let markdown = String::from_utf8(repo.check().args(["--format", "markdown"]).output().unwrap().stdout).unwrap();
    assert!(
        markdown.contains("**Needs review by:** `survey-org/survey-domain` or `ana` (`observations`)"),
        "{markdown}"
    );

    // Mallory named herself in the head: her approval counts for nothing.
    let report = json(repo.check().args(["--approved-by", "mallory"]), 1);
    assert!(of(&report, "domain-review-required").iter().all(|f| f["severity"] == "error"), "{report:#}");

    // A domain reviewer's approval answers the review; the base's identity still rejects the constraint.
    let report = json(repo.check().args(["--approved-by", "survey-org/survey-domain:dana"]), 1);
    for f in of(&report, "domain-review-required") {
        assert_eq!(f["severity"], "info", "{f:#}");
        assert!(f["message"].as_str().unwrap().ends_with("approved by dana (member of survey-org/survey-domain)"));
    }
    assert_eq!(finding(&report, "domain-identity-unique")["severity"], "error");
    let markdown = String::from_utf8(
        repo.check()
            .args(["--format", "markdown", "--approved-by", "survey-org/survey-domain:dana"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(!markdown.contains("Needs review by"), "{markdown}");
}

#[test]
fn approvals_from_a_reviewer_satisfy_the_rule_and_others_do_not() {
    let repo = survey_repo();
    repo.write("db/migrations/0002_unique_client_id.sql", IDENTITY_UNIQUE);
    repo.commit("unique client observation ids");

    let report = json(&mut repo.check(), 1);
    assert_eq!(found(&report), [pair("domain-review-required", "db/migrations/0002_unique_client_id.sql")]);
    let message = finding(&report, "domain-review-required")["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("adds unique index observations_client (checklist_id, client_observation_id) on observations")
    );
    assert!(message.contains("(survey-org/survey-domain, ana); no approval from them"), "{message}");

    let report = json(repo.check().args(["--approved-by", "bob,carol"]), 1);
    let message = finding(&report, "domain-review-required")["message"].as_str().unwrap();
    assert!(message.contains("(approved by bob, carol, none of them a reviewer of this table)"), "{message}");

    // The environment variable, comma-separated, case-insensitive: the action's way of passing them.
    let report = json(repo.check().env("SLUICE_APPROVED_BY", "bob,ANA"), 0);
    let approved = finding(&report, "domain-review-required");
    assert_eq!(approved["severity"], "info");
    assert!(approved["message"].as_str().unwrap().ends_with("; approved by ana"), "{approved:#}");
    assert_eq!(approved["evidence"]["approved_by"], "ana");

    // A team whose members could not be read: fail closed, and say why.
    let report = json(
        repo.check().env("SLUICE_APPROVED_BY", "dana").env("SLUICE_UNRESOLVED_TEAMS", "survey-org/survey-domain"),
        1,
    );
    let message = finding(&report, "domain-review-required")["message"].as_str().unwrap();
    assert!(message.contains("the members of survey-org/survey-domain could not be read"), "{message}");

    // The change cannot silence its own reviewer.
    repo.write(
        "db/migrations/0002_unique_client_id.sql",
        &format!("-- sluice:ignore domain-review-required -- reviewed in the design doc\n{IDENTITY_UNIQUE}"),
    );
    let report = json(&mut repo.check(), 1);
    assert_eq!(finding(&report, "domain-review-required")["severity"], "error");
    assert!(finding(&report, "invalid-suppression")["message"].as_str().unwrap().contains("cannot be silenced"));
}

#[test]
fn a_new_table_brings_its_own_identity_and_size_and_its_declaration_needs_the_default_reviewers() {
    let repo = survey_repo();
    repo.write(
        "db/migrations/0002_checklists.sql",
        "CREATE TABLE checklists (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, observer_id bigint NOT NULL,
  client_checklist_id uuid NOT NULL, site_id bigint NOT NULL);
",
    );
    repo.write(
        "db/migrations/0003_checklists_unique.sql",
        "SET lock_timeout = '5s';\nCREATE UNIQUE INDEX CONCURRENTLY checklists_client ON checklists (observer_id, client_checklist_id);\n",
    );
    repo.write(
        "policies/identity.toml",
        &format!("{IDENTITY}\n[[table]]\nname = \"checklists\"\nidentity = [[\"observer_id\", \"client_checklist_id\"]]\nreviewers = [\"mallory\"]\n"),
    );
    repo.write("policies/tables.toml", &format!("{TABLES}checklists = 50\n"));
    repo.commit("checklists");

    let report = json(&mut repo.check(), 1);
    // Declared by the head, reviewed by the base's default reviewers (not the head's own).
    let review = of(&report, "domain-review-required");
    assert!(!review.is_empty());
    for f in &review {
        assert_eq!(f["severity"], "error");
        assert!(f["message"].as_str().unwrap().contains("(survey-org/data-stewards)"), "{f:#}");
    }
    assert!(!found(&report).iter().any(|(rule, _)| rule == "domain-identity-unique"), "{report:#}");
    let changed = gate_changed(&report, "policies/identity.toml");
    assert!(changed.contains("declare the identity of new table `checklists`"), "{changed}");
    assert!(gate_changed(&report, "policies/tables.toml").contains("size new table `checklists` at 50 rows"));
    assert!(notes(&report).iter().any(|n| n.starts_with("The policies for `checklists` came from the head")));

    let approved = json(repo.check().args(["--approved-by", "survey-org/data-stewards:ed"]), 0);
    assert!(of(&approved, "domain-review-required").iter().all(|f| f["severity"] == "info"), "{approved:#}");

    // The head's declaration judges the new table: a key outside it is still the incident.
    repo.write(
        "db/migrations/0003_checklists_unique.sql",
        "SET lock_timeout = '5s';\nCREATE UNIQUE INDEX CONCURRENTLY checklists_site ON checklists (site_id);\n",
    );
    let report = json(repo.check().args(["--approved-by", "survey-org/data-stewards:ed"]), 1);
    assert_eq!(finding(&report, "domain-identity-unique")["file"], "db/migrations/0003_checklists_unique.sql");
}

#[test]
fn declaring_an_existing_tables_identity_takes_effect_only_once_merged() {
    let repo = survey_repo();
    repo.write(
        "db/migrations/0002_unique_site_name.sql",
        "SET lock_timeout = '5s';\nCREATE UNIQUE INDEX CONCURRENTLY sites_name ON sites (name);\n",
    );
    repo.write(
        "policies/identity.toml",
        &format!("{IDENTITY}\n[[table]]\nname = \"sites\"\nidentity = [[\"name\"]]\n"),
    );
    repo.commit("unique site names");

    let report = json(&mut repo.check(), 1);
    // Undeclared on the base: still the warning for a uniqueness nobody declared.
    assert_eq!(finding(&report, "unique-constraint-on-existing-table")["severity"], "warning");
    let changed = gate_changed(&report, "policies/identity.toml");
    assert!(changed.contains("declare the identity of existing table `sites` as (name)"), "{changed}");
    let review = finding(&report, "domain-review-required");
    assert_eq!((review["file"].as_str(), review["line"].as_u64()), (Some("policies/identity.toml"), Some(10)));
    assert!(review["message"].as_str().unwrap().contains("the change declares the identity of `sites`"));
}

// --- the freeze ----------------------------------------------------------------------------

fn freeze_repo(on_base: &[(&str, &str)]) -> TestRepo {
    let repo = survey_repo();
    repo.git.set_head("refs/heads/main").unwrap();
    for (path, text) in on_base {
        repo.write(path, text);
    }
    repo.commit("freeze files");
    repo.checkout_new_branch("hotfix");
    repo.write("README.md", "# hotfix\n");
    repo
}

#[test]
fn an_override_the_change_adds_for_itself_lifts_nothing_until_it_reaches_the_base() {
    let repo = freeze_repo(&[("policies/freeze.toml", FREEZE)]);
    repo.write("policies/overrides.toml", OVERRIDE);
    repo.commit("let me through");
    let audit = repo.path().join("audit.jsonl");

    let report = json(repo.check().args(deploy("2026-05-12T12:00:00Z")).arg("--audit-log").arg(&audit), 1);
    assert_eq!(finding(&report, "change-freeze")["severity"], "error");
    let changed = gate_changed(&report, "policies/overrides.toml");
    assert!(changed.contains("add override `ovr-1` for bird-count-freeze (ticket INC-7"), "{changed}");
    assert!(changed.contains("not honoured until it is on the base revision"), "{changed}");
    assert!(!audit.exists(), "nothing was lifted, nothing is audited");

    // Merged through its own pull request, it is honoured, and the audit names the commit it came from.
    let merged = freeze_repo(&[("policies/freeze.toml", FREEZE), ("policies/overrides.toml", OVERRIDE)]);
    let base = merged.git.refname_to_id("refs/heads/main").unwrap().to_string();
    let report = json(merged.check().args(deploy("2026-05-12T12:00:00Z")).arg("--audit-log").arg(&audit), 0);
    assert_eq!(finding(&report, "change-freeze")["severity"], "info");
    let log: Value = serde_json::from_str(std::fs::read_to_string(&audit).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(log["override"], "ovr-1");
    assert_eq!(log["override_commit"], base.as_str());
    assert_eq!(log["overrides_file"], "policies/overrides.toml");

    // Extending it in a change does not extend it.
    merged.write("policies/overrides.toml", &OVERRIDE.replace("2026-05-12T14:00:00Z", "2026-05-12T15:00:00Z"));
    let report = json(merged.check().args(deploy("2026-05-12T14:30:00Z")), 1);
    assert!(of(&report, "change-freeze").iter().any(|f| f["severity"] == "error"), "{report:#}");
    assert!(gate_changed(&report, "policies/overrides.toml").contains("change override `ovr-1`"));
}

#[test]
fn the_audit_log_is_kept_outside_the_policies_so_the_next_check_is_clean() {
    let repo = freeze_repo(&[("policies/freeze.toml", FREEZE), ("policies/overrides.toml", OVERRIDE)]);
    let cache = tempfile::tempdir().unwrap();
    let run = |extra: &[&str], code: i32| {
        let mut check = repo.check();
        check.args(deploy("2026-05-12T12:00:00Z")).args(["--fail-on", "warning", "--cache-dir"]).arg(cache.path());
        json(check.args(extra), code)
    };
    // The override lifts the freeze; the decision is logged in the cache directory by default.
    let report = run(&[], 0);
    assert_eq!(finding(&report, "change-freeze")["severity"], "info");
    let log = std::fs::read_to_string(cache.path().join("freeze-audit.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(!repo.path().join("policies/freeze-audit.jsonl").exists());
    // So the next local check sees no edit of the gate's configuration, and still passes.
    let report = run(&[], 0);
    assert!(of(&report, "gate-config-changed").is_empty(), "{report:#}");
    assert_eq!(std::fs::read_to_string(cache.path().join("freeze-audit.jsonl")).unwrap().lines().count(), 2);

    // An audit log asked for inside the policies directory is refused, before anything is decided.
    let inside = repo
        .check()
        .args(deploy("2026-05-12T12:00:00Z"))
        .args(["--audit-log", "policies/audit.jsonl"])
        .output()
        .unwrap();
    assert_eq!(inside.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&inside.stderr);
    assert!(
        stderr.contains("policies/audit.jsonl: the freeze audit log is inside the policies directory")
            && stderr.contains("gate-config-changed"),
        "{stderr}"
    );
    assert!(!repo.path().join("policies/audit.jsonl").exists());
}

#[test]
fn removing_a_window_or_moving_an_imported_event_in_the_change_keeps_the_freeze() {
    let calendar = FREEZE
        .split("[[window]]")
        .nth(1)
        .map(|w| format!("[[calendar]]\nfile = \"count.ics\"\n\n[[window]]{w}"))
        .unwrap();
    let calendar = calendar.replace("event = \"spring-count\"", "event = \"ics-count\"");
    let ics = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:count\r\nSUMMARY:Spring Bird Count\r\nDTSTART:20260517T000000Z\r\nDTEND:20260519T000000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let repo = freeze_repo(&[
        (
            "policies/freeze.toml",
            &calendar.replace(
                "[[calendar]]\nfile = \"count.ics\"",
                "[[calendar]]\nfile = \"count.ics\"\nid_prefix = \"ics-\"",
            ),
        ),
        ("policies/count.ics", ics),
    ]);
    repo.write("policies/count.ics", &ics.replace("20260517", "20260610").replace("20260519", "20260612"));
    let report = json(repo.check().args(deploy("2026-05-12T12:00:00Z")), 1);
    assert_eq!(finding(&report, "change-freeze")["severity"], "error");
    assert!(gate_changed(&report, "policies/count.ics").contains("move event `ics-count`"), "{report:#}");

    repo.write("policies/freeze.toml", "timezone = \"UTC\"\n");
    let report = json(repo.check().args(deploy("2026-05-12T12:00:00Z")), 1);
    assert_eq!(finding(&report, "change-freeze")["severity"], "error");
    assert!(gate_changed(&report, "policies/freeze.toml")
        .contains("remove deny window `bird-count-freeze`: the deploys it blocks would go out"));
}

// --- where the configuration is ------------------------------------------------------------

#[test]
fn a_first_adoption_pull_request_is_reviewed_with_the_defaults() {
    let repo = TestRepo::new();
    repo.write("migrations/0001_observations.sql", OBSERVATIONS);
    repo.commit("before sluice");
    repo.checkout_new_branch("adopt-sluice");
    repo.write("migrations/0002_species_index.sql", BLOCKING_INDEX);
    repo.write("sluice.toml", "[rules]\n\"create-index-non-concurrently\" = \"off\"\n");
    let report = json(&mut repo.check(), 1);
    assert!(found(&report).contains(&pair("create-index-non-concurrently", "migrations/0002_species_index.sql")));
    let changed = gate_changed(&report, "sluice.toml");
    assert!(changed.starts_with("gate configuration added in this change; this review did not apply it"), "{changed}");
    assert!(changed.contains("relax `create-index-non-concurrently` from error to off"), "{changed}");
}

#[test]
fn a_moved_configuration_is_compared_with_itself() {
    let repo = survey_repo();
    repo.rename("sluice.toml", "db/sluice.toml");
    repo.write(
        "db/sluice.toml",
        "[migrations]\ndir = \"migrations\"\n\n[queries]\ndirs = [\"../queries\"]\n\n[policies]\ndir = \"../policies\"\n\n[rules]\n\"create-index-non-concurrently\" = \"warning\"\n",
    );
    repo.write("db/migrations/0002_species_index.sql", BLOCKING_INDEX);
    repo.commit("configuration beside the migrations");
    let mut cmd = repo.check();
    cmd.current_dir(repo.path().join("db"));
    let report = json(&mut cmd, 1);
    assert_eq!(finding(&report, "create-index-non-concurrently")["severity"], "error");
    let changed = gate_changed(&report, "db/sluice.toml");
    assert!(changed.starts_with("gate configuration moved from sluice.toml in this change"), "{changed}");
    assert!(changed.contains("relax `create-index-non-concurrently` from error to warning"), "{changed}");
    // Same directories, resolved from the new place: no location is reported as changed.
    assert!(!changed.contains("directory"), "{changed}");
}

#[test]
fn a_renamed_policies_directory_is_read_where_the_base_keeps_it() {
    let repo = survey_repo();
    repo.rename("policies", "gate-policies");
    repo.write("sluice.toml", &format!("{CONFIG}\n[policies]\ndir = \"gate-policies\"\n"));
    repo.write(
        "gate-policies/identity.toml",
        &IDENTITY.replace(
            "[[\"checklist_id\", \"client_observation_id\"]]",
            "[[\"site_id\", \"observed_window\", \"species_code\"]]",
        ),
    );
    repo.write("db/migrations/0002_unique_observation.sql", WRONG_UNIQUE);
    repo.commit("policies renamed, identity rewritten on the way");

    let report = json(&mut repo.check(), 1);
    assert!(finding(&report, "domain-identity-unique")["message"]
        .as_str()
        .unwrap()
        .contains("(checklist_id, client_observation_id)"));
    assert!(gate_changed(&report, "sluice.toml")
        .contains("read the policies directory from `gate-policies` instead of `policies` (this review read `policies` on both sides)"));
    let identity = gate_changed(&report, "gate-policies/identity.toml");
    assert!(identity.starts_with("gate configuration moved from policies/identity.toml"), "{identity}");
    assert!(identity.contains("change the identity keys of `observations`"), "{identity}");
}

#[test]
fn pointing_the_head_configuration_at_another_migrations_directory_does_not_hide_a_migration() {
    let repo = survey_repo();
    repo.write("sluice.toml", &CONFIG.replace("db/migrations", "db/reviewed"));
    repo.write("db/reviewed/0001_observations.sql", OBSERVATIONS);
    repo.write("db/migrations/0002_species_index.sql", BLOCKING_INDEX);
    repo.commit("review a decoy");
    let report = json(&mut repo.check(), 1);
    assert!(found(&report).contains(&pair("create-index-non-concurrently", "db/migrations/0002_species_index.sql")));
    assert!(gate_changed(&report, "sluice.toml").contains(
        "read the migrations directory from `db/reviewed` instead of `db/migrations` (this review read `db/migrations` on both sides)"
    ));
}

#[test]
fn a_smaller_scale_spec_in_the_change_is_reported_and_not_used() {
    let repo = TestRepo::new();
    // No [queries] dirs: this repository has none, and a configured directory must exist.
    repo.write("sluice.toml", "[migrations]\ndir = \"db/migrations\"\n\n[plan]\nscale = \"db/scale.toml\"\n");
    repo.write("db/scale.toml", "[tables.observations]\nrows = 1_000_000\n");
    repo.write("db/migrations/0001_observations.sql", OBSERVATIONS);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("db/scale.toml", "[tables.observations]\nrows = 10\n");
    let report = json(repo.check().arg("--no-plan"), 0);
    let changed = gate_changed(&report, "db/scale.toml");
    assert!(changed.contains("fill `observations` with 10 rows instead of 1000000"), "{changed}");
    assert_eq!(finding(&report, "gate-config-changed")["evidence"]["items"][0]["effect"], "relaxes");
}

// --- sluice reviewers ----------------------------------------------------------------------

#[test]
fn sluice_reviewers_lists_the_base_revisions_reviewers() {
    let repo = survey_repo();
    repo.write(
        "policies/identity.toml",
        &IDENTITY.replace("\"ana\"]", "\"ana\", \"mallory\", \"mallory-org/friends\"]"),
    );
    let output = assert_cmd::Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(repo.path())
        .env_remove("CI")
        .arg("reviewers")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "ana\nsurvey-org/data-stewards\nsurvey-org/survey-domain\n");
    let teams = assert_cmd::Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(repo.path())
        .env_remove("CI")
        .args(["reviewers", "--teams"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&teams.stdout), "survey-org/data-stewards\nsurvey-org/survey-domain\n");
}

//! The GitHub action's review-collection step (`.github/actions/sluice/approvals.sh`), run as
//! the action runs it: against GitHub API responses served by a fake `gh` on PATH
//! (`tests/data/github/`), with the real `sluice` binary answering which reviewer teams the base
//! revision names. Then `sluice check` consumes what the step wrote to `$GITHUB_ENV`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::git::{finding, json, TestRepo};

const HEAD_SHA: &str = "6dcb09b5b57875f334f61aebed695e2e4193db5e";

const IDENTITY: &str = r#"reviewers = ["survey-org/data-stewards"]

[[table]]
name = "observations"
identity = [["checklist_id", "client_observation_id"]]
reviewers = ["survey-org/survey-domain"]
"#;

/// Answers the calls the script makes from the files in `tests/data/github`, logs each call
/// with the token it came with, and fails like `gh` does for what the token may not read.
const FAKE_GH: &str = r#"#!/usr/bin/env bash
echo "${GH_TOKEN:-none} $*" >> "$FAKE_GH_LOG"
case "$*" in
  "api --paginate repos/survey-org/survey-api/pulls/7/reviews")
    cat "$FAKE_GH_DATA/reviews-page-1.json" "$FAKE_GH_DATA/reviews-page-2.json" ;;
  "api --paginate orgs/survey-org/teams/survey-domain/members")
    if [ "$GH_TOKEN" != "org-reader-token" ]; then echo "gh: Not Found (HTTP 404)" >&2; exit 1; fi
    cat "$FAKE_GH_DATA/survey-domain-members.json" ;;
  "api --paginate orgs/survey-org/teams/data-stewards/members")
    echo "gh: Not Found (HTTP 404)" >&2; exit 1 ;;
  *)
    echo "fake gh: unexpected call: $*" >&2; exit 1 ;;
esac
"#;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/actions/sluice/approvals.sh")
}

struct Run {
    env_file: String,
    log: String,
    stdout: String,
    status: Option<i32>,
}

/// Runs the step in `repo` with the given extra environment.
fn collect(repo: &TestRepo, extra: &[(&str, &str)]) -> Run {
    assert!(
        Command::new("jq").arg("--version").output().is_ok_and(|o| o.status.success()),
        "this test needs jq, as the action's runners have it: `apt-get install -y jq` (`bash .ci/run` installs it)"
    );
    let bin = tempfile::tempdir().unwrap();
    let gh = bin.path().join("gh");
    std::fs::write(&gh, FAKE_GH).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sluice_dir = Path::new(env!("CARGO_BIN_EXE_sluice")).parent().unwrap().to_path_buf();
    let path =
        format!("{}:{}:{}", bin.path().display(), sluice_dir.display(), std::env::var("PATH").unwrap_or_default());
    let env_file = bin.path().join("github_env");
    let log = bin.path().join("gh.log");
    let mut cmd = Command::new("bash");
    cmd.arg(script())
        .current_dir(repo.path())
        .env_clear()
        .env("PATH", path)
        .env("HOME", bin.path())
        .env("GITHUB_ENV", &env_file)
        .env("FAKE_GH_LOG", &log)
        .env("FAKE_GH_DATA", Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/github"))
        .env("GH_TOKEN", "workflow-token")
        .env("REPO", "survey-org/survey-api")
        .env("PR", "7")
        .env("HEAD_SHA", HEAD_SHA);
    for (key, value) in extra {
        cmd.env(key, value);
    }
    let output = cmd.output().unwrap();
    Run {
        env_file: std::fs::read_to_string(&env_file).unwrap_or_default(),
        log: std::fs::read_to_string(&log).unwrap_or_default(),
        stdout: format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)),
        status: output.status.code(),
    }
}

fn env_value<'a>(run: &'a Run, key: &str) -> &'a str {
    run.env_file
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key} not written: {}\n{}", run.env_file, run.stdout))
}

fn survey_repo() -> TestRepo {
    let repo = TestRepo::new();
    repo.write("sluice.toml", "[migrations]\ndir = \"db/migrations\"\n");
    repo.write(
        "db/migrations/0001_observations.sql",
        "CREATE TABLE observations (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, checklist_id bigint NOT NULL,
  client_observation_id uuid NOT NULL, site_id bigint NOT NULL);
CREATE TABLE sites (id bigint PRIMARY KEY, code text NOT NULL, CONSTRAINT sites_code UNIQUE (code));
",
    );
    repo.write(
        "policies/identity.toml",
        &format!("{IDENTITY}\n[[table]]\nname = \"sites\"\nidentity = [[\"code\"]]\n"),
    );
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "db/migrations/0002_unique_client_id.sql",
        "SET lock_timeout = '5s';
CREATE UNIQUE INDEX CONCURRENTLY observations_client ON observations (checklist_id, client_observation_id);
",
    );
    repo.commit("unique client observation ids");
    repo
}

#[test]
fn approvals_follow_githubs_rules_and_teams_expand_only_when_the_token_can_read_them() {
    let repo = survey_repo();
    let run = collect(&repo, &[("TEAM_TOKEN", "org-reader-token")]);
    assert_eq!(run.status, Some(0), "{}", run.stdout);
    // ana: approved the head, a later comment does not withdraw it; bob: changes requested after
    // approving; carol: approved an earlier commit; erin: dismissed; Frank: logins fold case;
    // dana: approved and is a member of survey-org/survey-domain (the members call used the team token).
    assert_eq!(env_value(&run, "SLUICE_APPROVED_BY"), "ana,dana,frank,survey-org/survey-domain:dana");
    assert_eq!(env_value(&run, "SLUICE_UNRESOLVED_TEAMS"), "survey-org/data-stewards");
    assert!(
        run.log.contains("workflow-token api --paginate repos/survey-org/survey-api/pulls/7/reviews"),
        "{}",
        run.log
    );
    assert!(
        run.log.contains("org-reader-token api --paginate orgs/survey-org/teams/survey-domain/members"),
        "{}",
        run.log
    );
    assert!(run
        .stdout
        .contains("::warning title=sluice approvals::cannot read the members of survey-org/data-stewards"));

    // Approvals of earlier commits count only when asked.
    let stale = collect(&repo, &[("TEAM_TOKEN", "org-reader-token"), ("COUNT_STALE", "true")]);
    assert_eq!(env_value(&stale, "SLUICE_APPROVED_BY"), "ana,carol,dana,frank,survey-org/survey-domain:dana");

    // With only the workflow token, teams cannot be expanded: reported, not guessed.
    let workflow_only = collect(&repo, &[]);
    assert_eq!(env_value(&workflow_only, "SLUICE_APPROVED_BY"), "ana,dana,frank");
    assert_eq!(
        env_value(&workflow_only, "SLUICE_UNRESOLVED_TEAMS"),
        "survey-org/data-stewards,survey-org/survey-domain"
    );
}

#[test]
fn the_check_step_turns_the_collected_approvals_into_its_verdict() {
    let repo = survey_repo();
    let with_team = collect(&repo, &[("TEAM_TOKEN", "org-reader-token")]);
    let check = |run: &Run, code: i32| {
        json(
            repo.check()
                .env("SLUICE_APPROVED_BY", env_value(run, "SLUICE_APPROVED_BY"))
                .env("SLUICE_UNRESOLVED_TEAMS", env_value(run, "SLUICE_UNRESOLVED_TEAMS")),
            code,
        )
    };
    let report = check(&with_team, 0);
    let f = finding(&report, "domain-review-required");
    assert_eq!(f["severity"], "info");
    assert!(f["message"].as_str().unwrap().ends_with("approved by dana (member of survey-org/survey-domain)"), "{f:#}");

    // The same pull request when the team could not be read: the rule stays an error and says why.
    let report = check(&collect(&repo, &[]), 1);
    let message = finding(&report, "domain-review-required")["message"].as_str().unwrap().to_string();
    assert!(message.contains("the members of survey-org/survey-domain could not be read"), "{message}");
}

#[test]
fn outside_a_pull_request_nothing_is_collected_and_a_failing_api_stops_the_step() {
    let repo = survey_repo();
    let push = collect(&repo, &[("PR", "")]);
    assert_eq!(push.status, Some(0), "{}", push.stdout);
    assert!(push.env_file.is_empty() && push.log.is_empty(), "{}", push.env_file);

    let wrong = collect(&repo, &[("REPO", "survey-org/other")]);
    assert_eq!(wrong.status, Some(2), "{}", wrong.stdout);
    assert!(wrong.stdout.contains("cannot list the reviews of survey-org/other#7"), "{}", wrong.stdout);
    assert!(wrong.env_file.is_empty(), "nothing is written when the reviews cannot be read");
}

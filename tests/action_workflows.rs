//! The README's GitHub workflow snippets work as written, and the action resolves the base
//! revision on every pull-request event (issue 37): a `pull_request_review` run has no
//! `github.base_ref`, so `origin/${{ github.base_ref }}` was `origin/` there (exit 2).

use std::path::Path;
use std::process::Command;
use yaml_rust2::{Yaml, YamlLoader};

fn repo_file(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// The README's ```yaml blocks that are GitHub workflows (they have `jobs`).
fn readme_workflows() -> Vec<(String, Yaml)> {
    let readme = repo_file("README.md");
    let mut out = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "```yaml" {
            continue;
        }
        let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        let text = block.join("\n");
        let doc =
            YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("README yaml does not parse: {e}\n{text}"));
        if let Some(doc) = doc.into_iter().next().filter(|d| !d["jobs"].is_badvalue()) {
            out.push((text, doc));
        }
    }
    out
}

fn steps_using_the_action(workflow: &Yaml) -> Vec<&Yaml> {
    let mut out = Vec::new();
    for (_, job) in workflow["jobs"].as_hash().into_iter().flatten() {
        for step in job["steps"].as_vec().into_iter().flatten() {
            if step["uses"].as_str().is_some_and(|u| u.contains("/.github/actions/sluice@")) {
                out.push(step);
            }
        }
    }
    out
}

#[test]
fn readme_workflows_resolve_the_base_and_may_read_the_reviews() {
    let workflows = readme_workflows();
    assert!(workflows.len() >= 2, "the minimal and the full workflow");
    for (text, workflow) in &workflows {
        let steps = steps_using_the_action(workflow);
        assert!(!steps.is_empty(), "{text}");
        for step in steps {
            let base = step["with"]["base"].as_str().unwrap_or("");
            assert!(!base.contains("github.base_ref"), "empty on pull_request_review: {base}");
            assert!(base.is_empty() || base.contains("github.event.pull_request.base.ref"), "{base}");
        }
        // The approvals step lists the reviews with the workflow token.
        let permissions = &workflow["permissions"];
        let reviews = permissions["pull-requests"].as_str().unwrap_or("");
        assert!(reviews == "read" || reviews == "write", "pull-requests permission missing:\n{text}");
        // A major tag builds from source: the snippet says so, next to the exact version it pins.
        assert!(text.contains("@v0.1.0"), "{text}");
    }
    assert!(workflows.iter().any(|(t, _)| t.contains("@v0) or a branch builds from")), "the pinning note");
}

/// Runs the action's base step as the runner would: its `run` script under bash, with the
/// step's environment and `$GITHUB_OUTPUT`.
fn resolved_base(input: &str, pr_base_ref: &str) -> String {
    let action = YamlLoader::load_from_str(&repo_file(".github/actions/sluice/action.yml")).unwrap().remove(0);
    let step = action["runs"]["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|s| s["id"].as_str() == Some("base"))
        .expect("a step with id base");
    let output = tempfile::NamedTempFile::new().unwrap();
    let status = Command::new("bash")
        .args(["-euo", "pipefail", "-c", step["run"].as_str().unwrap()])
        .env("INPUT_BASE", input)
        .env("PR_BASE_REF", pr_base_ref)
        .env("GITHUB_OUTPUT", output.path())
        .status()
        .unwrap();
    assert!(status.success());
    let written = std::fs::read_to_string(output.path()).unwrap();
    written.trim().strip_prefix("base=").expect("base=… in GITHUB_OUTPUT").to_string()
}

#[test]
fn the_action_resolves_the_base_on_pull_request_review_events_too() {
    assert_eq!(resolved_base("origin/", "main"), "origin/main", "the old snippet on pull_request_review");
    assert_eq!(resolved_base("", "release-2"), "origin/release-2");
    assert_eq!(resolved_base("origin/main", "develop"), "origin/main", "an explicit base wins");
    assert_eq!(resolved_base("", ""), "", "outside a pull request: sluice's own default");
    // Both steps that need the base read the resolved one.
    let action = repo_file(".github/actions/sluice/action.yml");
    assert_eq!(action.matches("${{ steps.base.outputs.base }}").count(), 2);
    assert!(!action.contains("${{ inputs.base }}\n        INPUT_HEAD"), "the check step reads the resolved base");
}

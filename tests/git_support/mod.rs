//! Throwaway git repositories for the `sluice check` tests: built with git2 (a base commit on
//! `main`, a head commit on a branch, uncommitted edits), the built binary run inside them.
#![allow(dead_code)]

use assert_cmd::Command;
use git2::{Oid, Repository, RepositoryInitOptions, Signature};
use serde_json::Value;
use std::path::Path;

pub struct TestRepo {
    pub dir: tempfile::TempDir,
    pub git: Repository,
}

impl TestRepo {
    pub fn new() -> TestRepo {
        let dir = tempfile::tempdir().unwrap();
        let mut options = RepositoryInitOptions::new();
        options.initial_head("main");
        let git = Repository::init_opts(dir.path(), &options).unwrap();
        TestRepo { dir, git }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, path: &str, text: &str) {
        let full = self.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }

    pub fn remove(&self, path: &str) {
        std::fs::remove_file(self.path().join(path)).unwrap();
    }

    pub fn rename(&self, from: &str, to: &str) {
        std::fs::rename(self.path().join(from), self.path().join(to)).unwrap();
    }

    /// Stages everything like `git add -A` and commits on the current branch.
    pub fn commit(&self, message: &str) -> Oid {
        let mut index = self.git.index().unwrap();
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
        index.update_all(["*"], None).unwrap();
        index.write().unwrap();
        let tree = self.git.find_tree(index.write_tree().unwrap()).unwrap();
        let signature = Signature::now("Test", "test@example.com").unwrap();
        let parent = self.git.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        self.git.commit(Some("HEAD"), &signature, &signature, message, &tree, &parents).unwrap()
    }

    pub fn checkout_new_branch(&self, name: &str) {
        let head = self.git.head().unwrap().peel_to_commit().unwrap();
        self.git.branch(name, &head, true).unwrap();
        self.git.set_head(&format!("refs/heads/{name}")).unwrap();
    }

    /// `sluice check` in the repository, outside CI unless the test sets `CI`.
    pub fn check(&self) -> Command {
        let mut cmd = Command::cargo_bin("sluice").unwrap();
        cmd.current_dir(self.path())
            .arg("check")
            .env_remove("CI")
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("SLUICE_APPROVED_BY")
            .env_remove("SLUICE_UNRESOLVED_TEAMS")
            .env("NO_COLOR", "1");
        cmd
    }
}

/// Runs the command, asserts its exit code, returns the JSON report.
pub fn json(cmd: &mut Command, code: i32) -> Value {
    let output = cmd.args(["--format", "json"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

/// (rule, file) of every finding, in report order.
/// The (rule, file) of every finding that counts for the gate (warnings and errors; info is advice).
pub fn found(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .map(|f| (f["rule"].as_str().unwrap().to_string(), f["file"].as_str().unwrap().to_string()))
        .collect()
}

pub fn pair(rule: &str, file: &str) -> (String, String) {
    (rule.to_string(), file.to_string())
}

pub fn finding<'a>(report: &'a Value, rule: &str) -> &'a Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} finding in {report:#}"))
}

pub fn notes(report: &Value) -> Vec<String> {
    report["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect()
}

/// A deny window from seven days before the Spring Bird Count (17–19 May 2026, London) until it ends.
pub const FREEZE: &str = "[[event]]
id = \"spring-count\"
name = \"Spring Bird Count\"
timezone = \"Europe/London\"
start = \"2026-05-17T00:00\"
end = \"2026-05-19T00:00\"

[[window]]
id = \"bird-count-freeze\"
kind = \"deny\"
event = \"spring-count\"
lead = \"P7D\"
environments = [\"production\"]
reason = \"No production changes before the count.\"
";

/// An override of that window for the `api` service, 11:00–14:00 UTC on 12 May 2026.
pub const OVERRIDE: &str = "[[override]]
id = \"ovr-1\"
windows = [\"bird-count-freeze\"]
services = [\"api\"]
environments = [\"production\"]
requested_by = \"alice\"
approved_by = \"bob\"
reason = \"SEV-1 fix\"
ticket = \"INC-7\"
not_before = \"2026-05-12T11:00:00Z\"
expires_at = \"2026-05-12T14:00:00Z\"
";

/// The `sluice check` arguments that ask whether `api` may deploy to production at `at`.
pub fn deploy(at: &str) -> [&str; 6] {
    ["--env", "production", "--service", "api", "--at", at]
}

//! Throwaway git repositories for the `sluice check` and `sluice::git` tests: built with git2
//! (a base commit on `main`, a head commit on a branch, uncommitted edits), the built binary
//! run inside them.

use assert_cmd::Command;
use git2::{Oid, Repository, RepositoryInitOptions, Signature};
use serde_json::Value;
use std::path::Path;

pub struct TestRepo {
    pub dir: tempfile::TempDir,
    pub git: Repository,
}

impl TestRepo {
    /// An empty repository on `main`.
    pub fn new() -> TestRepo {
        TestRepo::on_branch("main")
    }

    /// An empty repository whose first commit goes on `branch`.
    pub fn on_branch(branch: &str) -> TestRepo {
        let dir = tempfile::tempdir().unwrap();
        let mut options = RepositoryInitOptions::new();
        options.initial_head(branch);
        let git = Repository::init_opts(dir.path(), &options).unwrap();
        TestRepo { dir, git }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, path: &str, text: &str) {
        self.write_bytes(path, text.as_bytes());
    }

    pub fn write_bytes(&self, path: &str, bytes: &[u8]) {
        let full = self.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, bytes).unwrap();
    }

    pub fn remove(&self, path: &str) {
        std::fs::remove_file(self.path().join(path)).unwrap();
    }

    /// `path` (a file, a directory or nothing) replaced by a symbolic link to `target`, as
    /// `ln -sfn` leaves it: a pull request's checkout holds the link itself.
    pub fn symlink(&self, path: &str, target: &str) {
        let full = self.path().join(path);
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&full).unwrap(),
            Ok(_) => std::fs::remove_file(&full).unwrap(),
            Err(_) => std::fs::create_dir_all(full.parent().unwrap()).unwrap(),
        }
        std::os::unix::fs::symlink(target, full).unwrap();
    }

    pub fn rename(&self, from: &str, to: &str) {
        let target = self.path().join(to);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::rename(self.path().join(from), target).unwrap();
    }

    /// Stages everything (additions, edits, removals) like `git add -A`.
    pub fn stage_all(&self) {
        let mut index = self.git.index().unwrap();
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
        index.update_all(["*"], None).unwrap();
        index.write().unwrap();
    }

    /// Stages everything like `git add -A` and commits on the current branch.
    pub fn commit(&self, message: &str) -> Oid {
        self.stage_all();
        let mut index = self.git.index().unwrap();
        let tree = self.git.find_tree(index.write_tree().unwrap()).unwrap();
        let signature = Signature::now("Test", "test@example.com").unwrap();
        let parent = self.git.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        self.git.commit(Some("HEAD"), &signature, &signature, message, &tree, &parents).unwrap()
    }

    /// A branch `name` at commit `at`.
    pub fn branch(&self, name: &str, at: Oid) {
        self.git.branch(name, &self.git.find_commit(at).unwrap(), true).unwrap();
    }

    pub fn checkout_new_branch(&self, name: &str) {
        let head = self.git.head().unwrap().peel_to_commit().unwrap();
        self.git.branch(name, &head, true).unwrap();
        self.git.set_head(&format!("refs/heads/{name}")).unwrap();
    }

    /// The repository as `sluice::git` opens it.
    pub fn open(&self) -> sluice::git::Repo {
        sluice::git::open(self.path()).unwrap()
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

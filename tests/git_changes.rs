//! `sluice::git` against real repositories built with git2 in temporary directories.

mod support;

use git2::Oid;
use sluice::git::{self, history, Change, ChangeKind, Classifier, FileKind, Side};
use std::path::{Path, PathBuf};
use support::git::TestRepo;

fn migration(version: &str, sql: &str) -> String {
    format!("-- migration {version}\n{sql}\n")
}

/// A repository with three migrations and a query on `main`, HEAD on branch `feature`.
fn base_repo() -> (TestRepo, Oid) {
    let repo = TestRepo::on_branch("main");
    repo.write(
        "migrations/0001_sites.sql",
        &migration("0001", "CREATE TABLE sites (id bigint PRIMARY KEY, name text);"),
    );
    repo.write(
        "migrations/0002_sightings.sql",
        &migration("0002", "CREATE TABLE sightings (id bigint PRIMARY KEY, site_id bigint, observed_at timestamptz);"),
    );
    repo.write(
        "migrations/0003_sightings_idx.sql",
        &migration("0003", "CREATE INDEX sightings_site_idx ON sightings (site_id);"),
    );
    repo.write("queries/daily.sql", "SELECT site_id, count(*) FROM sightings WHERE site_id = $1 GROUP BY site_id;\n");
    repo.write("policies/freeze.toml", "[[window]]\nname = \"Spring Bird Count\"\n");
    repo.write("README.md", "# birds\n");
    repo.write(".gitignore", "*.log\nscratch/\n");
    let base = repo.commit("base");
    repo.checkout_new_branch("feature");
    (repo, base)
}

fn classifier(repo: &git::Repo) -> Classifier {
    Classifier::new(repo.root(), Path::new("migrations"), &[PathBuf::from("queries")], Path::new("policies"))
}

fn kinds(repo: &git::Repo, changes: &[Change]) -> Vec<(String, String, FileKind)> {
    classifier(repo)
        .classify_all(changes)
        .into_iter()
        .map(|c| {
            let kind = match &c.change.kind {
                ChangeKind::Added => "added".to_string(),
                ChangeKind::Modified => "modified".to_string(),
                ChangeKind::Deleted => "deleted".to_string(),
                ChangeKind::Renamed { from } => format!("renamed from {from}"),
            };
            (c.change.path, kind, c.kind)
        })
        .collect()
}

fn row(path: &str, kind: &str, file: FileKind) -> (String, String, FileKind) {
    (path.to_string(), kind.to_string(), file)
}

/// Migration discovery stand-in: the version is the file name up to the first `_`.
fn migrations_on(repo: &git::Repo, side: &Side) -> Vec<(String, String)> {
    git::list_files(repo, side, Path::new("migrations"))
        .unwrap()
        .into_iter()
        .filter(|p| p.ends_with(".sql"))
        .map(|p| {
            let name = p.rsplit('/').next().unwrap();
            (name.split('_').next().unwrap().to_string(), p)
        })
        .collect()
}

#[test]
fn committed_changes_between_two_revisions_are_classified() {
    let (repo, base) = base_repo();
    repo.write(
        "migrations/0004_sightings_observed_idx.sql",
        &migration("0004", "CREATE INDEX ON sightings (observed_at);"),
    );
    repo.write(
        "migrations/0001_sites.sql",
        &migration("0001", "CREATE TABLE sites (id bigint PRIMARY KEY, name text NOT NULL);"),
    );
    repo.remove("migrations/0002_sightings.sql");
    repo.rename("queries/daily.sql", "queries/reports/daily.sql");
    repo.write("policies/freeze.toml", "[[window]]\nname = \"Christmas Bird Count\"\n");
    repo.write("src/app.rs", "fn main() {}\n");
    let head = repo.commit("head");

    let opened = repo.open();
    let changes = git::changes(&opened, base, &Side::Rev(head)).unwrap();
    assert_eq!(
        kinds(&opened, &changes),
        vec![
            row("migrations/0001_sites.sql", "modified", FileKind::Migration),
            row("migrations/0002_sightings.sql", "deleted", FileKind::Migration),
            row("migrations/0004_sightings_observed_idx.sql", "added", FileKind::Migration),
            row("policies/freeze.toml", "modified", FileKind::Policy),
            row("queries/reports/daily.sql", "renamed from queries/daily.sql", FileKind::Query),
            row("src/app.rs", "added", FileKind::Other),
        ]
    );
}

#[test]
fn the_working_tree_includes_staged_unstaged_and_untracked_but_not_ignored_files() {
    let (repo, base) = base_repo();
    // Committed on the branch.
    repo.write("migrations/0004_a.sql", &migration("0004", "ALTER TABLE sites ADD COLUMN region text;"));
    repo.commit("committed on the branch");
    // Staged only.
    repo.write("migrations/0005_b.sql", &migration("0005", "ALTER TABLE sites ADD COLUMN country text;"));
    repo.stage_all();
    // Unstaged edit, untracked new file, file moved on disk without `git add`, ignored files.
    repo.write("queries/daily.sql", "SELECT site_id FROM sightings WHERE observed_at > now() - interval '1 day';\n");
    repo.write("queries/weekly.sql", "SELECT count(*) FROM sightings;\n");
    repo.rename("migrations/0003_sightings_idx.sql", "migrations/0003_sightings_site_idx.sql");
    repo.write("migrations/debug.log", "ignored\n");
    repo.write("scratch/try.sql", "SELECT 1;\n");

    let opened = repo.open();
    let head = git::resolve_head(&opened, None, false).unwrap();
    assert_eq!(head, Side::WorkTree);
    let changes = git::changes(&opened, base, &head).unwrap();
    assert_eq!(
        kinds(&opened, &changes),
        vec![
            row(
                "migrations/0003_sightings_site_idx.sql",
                "renamed from migrations/0003_sightings_idx.sql",
                FileKind::Migration
            ),
            row("migrations/0004_a.sql", "added", FileKind::Migration),
            row("migrations/0005_b.sql", "added", FileKind::Migration),
            row("queries/daily.sql", "modified", FileKind::Query),
            row("queries/weekly.sql", "added", FileKind::Query),
        ]
    );

    // The committed head alone (what CI reviews) has only the commit.
    let ci_head = git::resolve_head(&opened, None, true).unwrap();
    assert!(matches!(ci_head, Side::Rev(_)));
    let changes = git::changes(&opened, base, &ci_head).unwrap();
    assert_eq!(kinds(&opened, &changes), vec![row("migrations/0004_a.sql", "added", FileKind::Migration)]);
}

#[test]
fn a_change_without_sql_has_no_reviewed_files() {
    let (repo, base) = base_repo();
    repo.write("README.md", "# birds\n\nNow with docs.\n");
    repo.write("src/lib.rs", "pub fn f() {}\n");
    let head = repo.commit("docs");
    let opened = repo.open();
    let changes = git::changes(&opened, base, &Side::Rev(head)).unwrap();
    assert_eq!(changes.len(), 2);
    assert!(classifier(&opened).classify_all(&changes).iter().all(|c| !c.is_reviewed()));
}

#[test]
fn base_defaults_to_the_merge_base_with_main() {
    let (repo, branch_point) = base_repo();
    repo.write("migrations/0004_feature.sql", &migration("0004", "SELECT 1;"));
    let feature = repo.commit("feature work");
    // main moves on after the branch point: its new migration must not look deleted by the branch.
    repo.git.set_head("refs/heads/main").unwrap();
    repo.git.checkout_head(Some(git2::build::CheckoutBuilder::new().force())).unwrap();
    repo.write("migrations/0005_main.sql", &migration("0005", "SELECT 2;"));
    let main_tip = repo.commit("main moves on");
    repo.git.set_head("refs/heads/feature").unwrap();
    repo.git.checkout_head(Some(git2::build::CheckoutBuilder::new().force())).unwrap();

    let opened = repo.open();
    let head = Side::Rev(feature);
    assert_eq!(git::resolve_base(&opened, None, &head).unwrap(), branch_point);
    assert_eq!(git::resolve_base(&opened, None, &Side::WorkTree).unwrap(), branch_point);
    // An explicit base is also reduced to the merge base.
    assert_eq!(git::resolve_base(&opened, Some("main"), &head).unwrap(), branch_point);
    assert_eq!(git::resolve_base(&opened, Some(&main_tip.to_string()), &head).unwrap(), branch_point);
    let changes = git::changes(&opened, branch_point, &head).unwrap();
    assert_eq!(changes, vec![Change { kind: ChangeKind::Added, path: "migrations/0004_feature.sql".into() }]);
}

#[test]
fn origin_main_is_preferred_and_master_is_the_last_fallback() {
    let repo = TestRepo::on_branch("master");
    repo.write("a.sql", "SELECT 1;\n");
    let first = repo.commit("first");
    repo.write("b.sql", "SELECT 2;\n");
    let second = repo.commit("second");
    let opened = repo.open();
    assert_eq!(git::resolve_base(&opened, None, &Side::WorkTree).unwrap(), second, "falls back to master");

    repo.branch("main", first);
    assert_eq!(git::resolve_base(&opened, None, &Side::WorkTree).unwrap(), first, "main before master");

    repo.git.reference("refs/remotes/origin/main", second, true, "fetched").unwrap();
    assert_eq!(git::resolve_base(&opened, None, &Side::WorkTree).unwrap(), second, "origin/main first");
}

#[test]
fn no_base_branch_is_a_usage_error_naming_what_was_tried() {
    let repo = TestRepo::on_branch("trunk");
    repo.write("a.sql", "SELECT 1;\n");
    repo.commit("first");
    let opened = repo.open();
    let error = git::resolve_base(&opened, None, &Side::WorkTree).unwrap_err();
    assert!(matches!(error, sluice::Error::Usage(_)));
    let text = error.to_string();
    assert!(text.contains("origin/main, main, master") && text.contains("--base"), "{text}");

    let error = git::resolve_base(&opened, Some("no-such-branch"), &Side::WorkTree).unwrap_err();
    assert!(error.to_string().contains("unknown revision `no-such-branch`"), "{error}");
    assert!(git::resolve_base(&opened, Some("trunk"), &Side::WorkTree).is_ok());
}

#[test]
fn open_outside_a_repository_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = git::open(dir.path()).err().expect("not a repository");
    assert!(error.to_string().contains("not inside a git repository"), "{error}");
}

#[test]
fn files_are_read_and_listed_on_each_side() {
    let (repo, base) = base_repo();
    repo.write("queries/daily.sql", "SELECT 2;\n");
    repo.write("migrations/0004_new.sql", "SELECT 4;\n");
    let head = repo.commit("head");
    repo.write("queries/daily.sql", "SELECT 3; -- uncommitted\n");
    repo.write("migrations/0005_untracked.sql", "SELECT 5;\n");
    repo.write("migrations/notes.log", "ignored\n");

    let opened = repo.open();
    let read = |side: &Side, path: &str| git::read_file(&opened, side, path).unwrap();
    assert!(read(&Side::Rev(base), "queries/daily.sql").unwrap().contains("count(*)"));
    assert_eq!(read(&Side::Rev(head), "queries/daily.sql").unwrap(), "SELECT 2;\n");
    assert_eq!(read(&Side::WorkTree, "queries/daily.sql").unwrap(), "SELECT 3; -- uncommitted\n");
    assert_eq!(read(&Side::Rev(base), "migrations/0004_new.sql"), None);
    assert_eq!(read(&Side::WorkTree, "nope/missing.sql"), None);
    assert_eq!(read(&Side::Rev(head), "migrations"), None, "a directory is not a file");

    let list = |side: &Side| git::list_files(&opened, side, Path::new("migrations")).unwrap();
    assert_eq!(
        list(&Side::Rev(base)),
        vec!["migrations/0001_sites.sql", "migrations/0002_sightings.sql", "migrations/0003_sightings_idx.sql"]
    );
    assert_eq!(list(&Side::Rev(head)).len(), 4);
    assert_eq!(
        list(&Side::WorkTree),
        vec![
            "migrations/0001_sites.sql",
            "migrations/0002_sightings.sql",
            "migrations/0003_sightings_idx.sql",
            "migrations/0004_new.sql",
            "migrations/0005_untracked.sql",
        ]
    );
    assert!(git::list_files(&opened, &Side::Rev(base), Path::new("no/such/dir")).unwrap().is_empty());
    assert!(git::list_files(&opened, &Side::WorkTree, Path::new("no/such/dir")).unwrap().is_empty());
    // Reading a whole directory at once agrees with listing and reading file by file.
    for side in [Side::Rev(base), Side::Rev(head), Side::WorkTree] {
        let all = git::read_files(&opened, &side, Path::new("migrations")).unwrap();
        let one_by_one: Vec<(String, String)> =
            list(&side).into_iter().map(|p| (p.clone(), read(&side, &p).unwrap())).collect();
        assert_eq!(all, one_by_one, "{side:?}");
    }
    assert!(git::read_files(&opened, &Side::Rev(base), Path::new("no/such/dir")).unwrap().is_empty());
    // Directories may be given absolute, as the configuration resolves them.
    let absolute = opened.root().join("queries");
    assert_eq!(git::list_files(&opened, &Side::Rev(base), &absolute).unwrap(), vec!["queries/daily.sql"]);
}

#[test]
fn invalid_utf8_is_an_error_naming_the_file_and_line() {
    let (repo, _) = base_repo();
    repo.write_bytes("queries/bad.sql", b"SELECT 1;\nSELECT '\xff';\n");
    let head = repo.commit("latin-1 file");
    let opened = repo.open();
    for side in [Side::Rev(head), Side::WorkTree] {
        let error = git::read_file(&opened, &side, "queries/bad.sql").unwrap_err().to_string();
        assert!(error.contains("queries/bad.sql:2") && error.contains("UTF-8"), "{error}");
    }
}

#[cfg(unix)]
#[test]
fn a_mode_only_change_is_not_a_change() {
    use std::os::unix::fs::PermissionsExt;
    let (repo, base) = base_repo();
    let path = repo.path().join("migrations/0001_sites.sql");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let head = repo.commit("chmod");
    let opened = repo.open();
    assert_ne!(repo.git.find_commit(head).unwrap().tree_id(), repo.git.find_commit(base).unwrap().tree_id());
    assert!(git::changes(&opened, base, &Side::Rev(head)).unwrap().is_empty());
}

#[test]
fn history_findings_from_a_real_pull_request() {
    let (repo, base) = base_repo();
    // Edits an old migration, deletes one, adds one out of order (0002a sorts before 0003)…
    repo.write("migrations/0001_sites.sql", &migration("0001", "CREATE TABLE sites (id bigint PRIMARY KEY);"));
    repo.remove("migrations/0003_sightings_idx.sql");
    repo.write("migrations/0002.5_backfill.sql", &migration("0002.5", "UPDATE sightings SET site_id = 1;"));
    // …and adds two migrations with one version.
    repo.write("migrations/0004_a.sql", &migration("0004", "SELECT 1;"));
    repo.write("migrations/0004_b.sql", &migration("0004", "SELECT 2;"));
    let head = repo.commit("a bad pull request");

    let opened = repo.open();
    let head = Side::Rev(head);
    let base_side = Side::Rev(base);
    let changes = git::changes(&opened, base, &head).unwrap();
    let mut found = history::findings(&migrations_on(&opened, &base_side), &migrations_on(&opened, &head), &changes);
    found.sort_by(|a, b| (&a.file, &a.rule).cmp(&(&b.file, &b.rule)));
    let got: Vec<(&str, &str)> = found.iter().map(|f| (f.rule.as_str(), f.file.as_str())).collect();
    assert_eq!(
        got,
        vec![
            ("migration-edited", "migrations/0001_sites.sql"),
            ("migration-out-of-order", "migrations/0002.5_backfill.sql"),
            ("migration-deleted", "migrations/0003_sightings_idx.sql"),
            ("migration-version-conflict", "migrations/0004_a.sql"),
            ("migration-version-conflict", "migrations/0004_b.sql"),
        ]
    );
}

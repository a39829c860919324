//! A project's migrations in the order its migration tool applies them. The tools themselves —
//! detection, order, statement splitting, transactions, down files — live one file each in
//! [`super::tools`]; this module is the entry point the rest of Sluice (and `sluice init`) calls.

use super::tools::{self, script, DiskTree, Options, Script, Tree};
use crate::error::Result;
use crate::runner::Layout;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use super::tools::{Detection, Migration};

/// Which migration tool runs `dir`, and why: the marker files it found (see [`tools::detect`]).
/// An ambiguous directory is an error listing the candidates. `project_root` bounds the search
/// for project files such as `go.mod` or `flyway.conf` (the directory of sluice.toml).
pub fn detect(dir: &Path, project_root: &Path) -> Result<Detection> {
    tools::detect(&DiskTree::open(dir, project_root, project_root)?)
}

/// The files under `dir`, relative to it, sorted (symlinks followed; see [`tools::tree::list_files`]).
pub fn list_files(dir: &Path) -> Result<Vec<PathBuf>> {
    tools::tree::list_files(dir)
}

/// One migration of a history, read and scripted: what the tool sends and how.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub migration: Migration,
    /// How findings name the up file.
    pub display: String,
    /// The up file's text, shared with the findings that quote it. Made on the reading thread:
    /// copying 2.5 MB of texts into shared ones afterwards was a millisecond of Lemmy's serial start.
    pub text: Arc<str>,
    pub script: Script,
    /// The down file's (display path, text), or the file's own rollback section.
    pub down: Option<(String, Arc<str>)>,
    /// Why the file's content could not be read at all (a Git LFS pointer stands where the
    /// migration should be); its text is then empty.
    pub unread: Option<String>,
}

/// A migration history as its tool runs it.
#[derive(Debug, Clone)]
pub struct History {
    pub detection: Detection,
    pub migrations: Vec<Loaded>,
    /// Files the tool ignores or refuses, as (display path, why).
    pub notices: Vec<(String, String)>,
    /// What the tool's own configuration said (for `--explain`).
    pub settings: tools::Settings,
}

/// Orders and reads the history in `tree`: the configured layout's tool, or the detected one.
/// `only` limits which migrations are read (all are ordered): `sluice check` reads the base
/// side whole and only the added files of the head side.
pub fn load(
    tree: &dyn Tree,
    layout: Layout,
    options: &Options,
    only: Option<&(dyn Fn(&Migration) -> bool + Sync)>,
) -> Result<History> {
    let detection = tools::resolve(layout, tree)?;
    let tool = detection.tool;
    let ordered = tool.order(tree)?;
    let settings = ordered.settings;
    let migrations = ordered
        .migrations
        .into_par_iter()
        .filter(|m| only.is_none_or(|keep| keep(m)))
        .map(|migration| {
            let text = tree.read(&migration.up)?.unwrap_or_default();
            let unread = lfs_pointer(&text).then(|| lfs_message(&tree.display(&migration.up), &text));
            let text = if unread.is_some() { String::new() } else { text };
            let script = tool.script(&migration, &text, tree, options, &settings)?;
            let down = match &migration.down {
                Some(down) => tree.read(down)?.map(|t| (tree.display(down), t.into())),
                None => script.rollback.clone().map(|t| (tree.display(&migration.up), t.into())),
            };
            Ok(Loaded { display: tree.display(&migration.up), migration, text: text.into(), script, down, unread })
        })
        .collect::<Result<Vec<_>>>()?;
    let notices = ordered.notices.into_iter().map(|(path, why)| (tree.display(&path), why)).collect();
    Ok(History { detection, migrations, notices, settings })
}

/// Whether a file is a Git LFS pointer (the Git LFS specification, `docs/spec.md`: a pointer's
/// first line is `version https://git-lfs.github.com/spec/v1`; pre-release clients wrote
/// `https://hawser.github.com/spec/v1`). git stores the pointer, not the file: a checkout without
/// `git lfs pull` (or `lfs: true` in actions/checkout) and every revision read through git hold it.
pub fn lfs_pointer(text: &str) -> bool {
    let first = text.lines().next().unwrap_or("").trim_end();
    text.len() < 1024
        && matches!(first, "version https://git-lfs.github.com/spec/v1" | "version https://hawser.github.com/spec/v1")
}

fn lfs_message(display: &str, text: &str) -> String {
    let size = text.lines().find_map(|l| l.strip_prefix("size ")).map(str::trim);
    let size = size.map(|s| format!(" of {s} bytes")).unwrap_or_default();
    format!(
        "{display} is a Git LFS pointer, not the migration: the file{size} it stands for is in LFS storage, and \
         Sluice did not read it (fetch it with `git lfs pull`, or keep migrations out of LFS: the runner needs them \
         as text too)"
    )
}

/// The migrations in `dir` in replay order (ordering only: no file is read but the tool's own).
pub fn discover(dir: &Path, layout: Layout) -> Result<Vec<Migration>> {
    let tree = DiskTree::open(dir, dir, dir)?;
    let detection = tools::resolve(layout, &tree)?;
    Ok(detection.tool.order(&tree)?.migrations)
}

/// The statements a loaded migration sends, as (line, byte range in its text): what `sluice
/// plan` applies. A piece the tokenizer could not read to the end comes back as its error.
pub fn deployed_statements(loaded: &Loaded) -> script::Deployed {
    script::deployed_statements(&loaded.text, &loaded.script)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, files: &[(&str, &str)]) {
        for (path, text) in files {
            let full = root.join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        }
    }

    #[test]
    fn detect_says_which_tool_and_why() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[("db/atlas.sum", "h1:x=\n1_a.sql h1:y=\n"), ("db/1_a.sql", "SELECT 1;")]);
        let detection = detect(&dir.path().join("db"), dir.path()).unwrap();
        assert_eq!(detection.layout(), Layout::Atlas);
        assert!(detection.reason.contains("atlas.sum"), "{}", detection.reason);
    }

    #[test]
    fn an_ambiguous_directory_lists_the_candidates() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[("m/1_users.up.sql", "CREATE TABLE users (id int);"), ("m/1_users.down.sql", "DROP TABLE users;")],
        );
        let error = detect(&dir.path().join("m"), dir.path()).unwrap_err();
        assert!(matches!(error, crate::error::Error::Usage(_)), "exit code 2");
        let message = error.to_string();
        assert!(
            message.contains("golang-migrate") && message.contains("sqlx") && message.contains("layout ="),
            "{message}"
        );
        write(dir.path(), &[("go.mod", "module x\nrequire github.com/golang-migrate/migrate/v4 v4.17.0\n")]);
        let detection = detect(&dir.path().join("m"), dir.path()).unwrap();
        assert_eq!(detection.layout(), Layout::GolangMigrate);
        assert!(detection.reason.contains("go.mod"), "{}", detection.reason);
    }

    #[test]
    fn a_plain_directory_is_flat_and_markers_beat_names() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[("m/001_a.sql", "SELECT 1;"), ("m/002_b.sql", "SELECT 2;")]);
        assert_eq!(detect(&dir.path().join("m"), dir.path()).unwrap().layout(), Layout::Flat);
        write(dir.path(), &[("m/003_c.sql", "-- +goose Up\nSELECT 3;\n")]);
        assert_eq!(detect(&dir.path().join("m"), dir.path()).unwrap().layout(), Layout::Goose);
        write(dir.path(), &[("m/004_d.sql", "-- migrate:up\nSELECT 4;\n-- migrate:down\n")]);
        let error = detect(&dir.path().join("m"), dir.path()).unwrap_err().to_string();
        assert!(error.contains("goose") && error.contains("dbmate"), "{error}");
    }
}

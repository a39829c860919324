//! Finding migrations on disk and putting them in the order the runner applies them.
//! Layouts: flat `*.sql` (file-name order), Flyway `V<version>__name.sql`,
//! diesel/dbmate-style folders `<version>_name/up.sql` (+ `down.sql`), and
//! golang-migrate `<version>_name.up.sql` / `.down.sql`. Down files are never replayed.

use crate::config::Layout;
use crate::error::{Error, Result};
use std::cmp::Ordering;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    /// The version the runner orders by and records (`001`, `20240101120000`, `1.2`).
    pub version: String,
    pub name: String,
    /// The file replayed, relative to the migrations directory.
    pub up: PathBuf,
    /// Its rollback, relative to the migrations directory.
    pub down: Option<PathBuf>,
}

/// Guesses the layout from the files present (relative paths under the migrations directory).
pub fn detect(files: &[PathBuf]) -> Layout {
    let name = |p: &PathBuf| p.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
    if files.iter().any(|p| p.components().count() == 2 && name(p) == "up.sql") {
        Layout::Folder
    } else if files.iter().any(|p| p.components().count() == 1 && flyway_version(&name(p)).is_some()) {
        Layout::Flyway
    } else if files.iter().any(|p| p.components().count() == 1 && name(p).ends_with(".up.sql")) {
        Layout::GolangMigrate
    } else {
        Layout::Flat
    }
}

/// Whether the layout's usual runner wraps each file in a transaction
/// (diesel and Flyway do; golang-migrate, dbmate without markers and psql-style runners do not).
pub fn runner_wraps_in_transaction(layout: Layout) -> bool {
    matches!(layout, Layout::Folder | Layout::Flyway)
}

fn flyway_version(file: &str) -> Option<(String, String)> {
    let rest = file.strip_prefix('V')?.strip_suffix(".sql")?;
    let (version, name) = rest.split_once("__")?;
    (!version.is_empty() && version.chars().all(|c| c.is_ascii_digit() || c == '.' || c == '_'))
        .then(|| (version.replace('_', "."), name.to_string()))
}

/// `0012_add_users` → (`0012`, `add_users`); a name without a leading number is its own version.
fn leading_version(stem: &str) -> (String, String) {
    let digits: String = stem.chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    let digits = digits.trim_end_matches('-').to_string();
    if digits.is_empty() {
        return (stem.to_string(), stem.to_string());
    }
    let name = stem[digits.len()..].trim_start_matches(['_', '-']).to_string();
    (digits, name)
}

/// Compares versions numerically part by part (`1.10` after `1.9`, `10` after `9`).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let parts = |v: &str| -> Vec<u128> {
        v.split(|c: char| !c.is_ascii_digit())
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().unwrap_or(u128::MAX))
            .collect()
    };
    parts(a).cmp(&parts(b)).then_with(|| a.cmp(b))
}

/// Orders the migration files of one layout. `files` are relative to the migrations directory.
pub fn from_paths(files: &[PathBuf], layout: Layout) -> Vec<Migration> {
    let layout = if layout == Layout::Auto { detect(files) } else { layout };
    let file_name = |p: &Path| p.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
    let top_level = files.iter().filter(|p| p.components().count() == 1);
    let mut migrations: Vec<Migration> = match layout {
        Layout::Folder => files
            .iter()
            .filter(|p| p.components().count() == 2 && file_name(p) == "up.sql")
            .map(|up| {
                let folder = up.parent().map(file_name).unwrap_or_default();
                let (version, name) = leading_version(&folder);
                let down = up.with_file_name("down.sql");
                Migration { version, name, up: up.clone(), down: files.contains(&down).then_some(down) }
            })
            .collect(),
        Layout::Flyway => top_level
            .filter_map(|p| {
                let (version, name) = flyway_version(&file_name(p))?;
                let undo = PathBuf::from(format!("U{}__{}.sql", &file_name(p)[1..].split("__").next()?, name));
                Some(Migration { version, name, up: p.clone(), down: files.contains(&undo).then_some(undo) })
            })
            .collect(),
        Layout::GolangMigrate => top_level
            .filter_map(|p| {
                let stem = file_name(p).strip_suffix(".up.sql")?.to_string();
                let (version, name) = leading_version(&stem);
                let down = PathBuf::from(format!("{stem}.down.sql"));
                Some(Migration { version, name, up: p.clone(), down: files.contains(&down).then_some(down) })
            })
            .collect(),
        Layout::Flat | Layout::Auto => top_level
            .filter(|p| {
                let n = file_name(p);
                n.ends_with(".sql") && !n.ends_with(".down.sql")
            })
            .map(|p| {
                let n = file_name(p);
                let stem = n.strip_suffix(".up.sql").or_else(|| n.strip_suffix(".sql")).unwrap_or(&n);
                let (version, name) = leading_version(stem);
                Migration { version, name, up: p.clone(), down: None }
            })
            .collect(),
    };
    match layout {
        Layout::Flat | Layout::Auto => migrations.sort_by(|a, b| a.up.cmp(&b.up)),
        _ => migrations.sort_by(|a, b| compare_versions(&a.version, &b.version).then_with(|| a.up.cmp(&b.up))),
    }
    migrations
}

/// The files under `dir` (two levels deep: folder layouts), relative to it, sorted.
pub fn list_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{}: migrations directory not found; set [migrations] dir in sluice.toml or pass --migrations DIR",
            dir.display()
        )));
    }
    let mut files = Vec::new();
    for entry in walk(dir, 2)? {
        if let Ok(relative) = entry.strip_prefix(dir) {
            files.push(relative.to_path_buf());
        }
    }
    files.sort();
    Ok(files)
}

fn walk(dir: &Path, depth: usize) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(dir).max_depth(Some(depth)).hidden(true).git_ignore(true).build();
    for entry in walker {
        let entry = entry.map_err(|e| Error::Other(format!("{}: {e}", dir.display())))?;
        if entry.file_type().is_some_and(|t| t.is_file()) {
            out.push(entry.into_path());
        }
    }
    Ok(out)
}

/// The migrations in `dir`, in replay order.
pub fn discover(dir: &Path, layout: Layout) -> Result<Vec<Migration>> {
    Ok(from_paths(&list_files(dir)?, layout))
}

/// Every `.sql` file under the query directories that exist, sorted.
pub fn query_files(dirs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        files.extend(walk(dir, usize::MAX)?.into_iter().filter(|p| p.extension().is_some_and(|e| e == "sql")));
    }
    files.sort();
    files.dedup();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(names: &[&str]) -> Vec<PathBuf> {
        names.iter().map(PathBuf::from).collect()
    }

    fn versions(names: &[&str], layout: Layout) -> Vec<String> {
        from_paths(&paths(names), layout).into_iter().map(|m| m.version).collect()
    }

    #[test]
    fn detects_and_orders_each_layout() {
        assert_eq!(detect(&paths(&["V1__a.sql", "V1.1__b.sql"])), Layout::Flyway);
        assert_eq!(versions(&["V1_10__c.sql", "V1.2__b.sql", "V1__a.sql"], Layout::Auto), ["1", "1.2", "1.10"]);
        assert_eq!(detect(&paths(&["2024-01-01-000000_a/up.sql", "2024-01-01-000000_a/down.sql"])), Layout::Folder);
        let folder = from_paths(
            &paths(&["2024-01-02-000000_b/up.sql", "2024-01-01-000000_a/up.sql", "2024-01-01-000000_a/down.sql"]),
            Layout::Auto,
        );
        assert_eq!(folder[0].name, "a");
        assert_eq!(folder[0].down, Some(PathBuf::from("2024-01-01-000000_a/down.sql")));
        assert_eq!(versions(&["10_b.up.sql", "9_a.up.sql", "9_a.down.sql"], Layout::Auto), ["9", "10"]);
        assert_eq!(versions(&["002_b.sql", "001_a.sql", "readme.txt"], Layout::Auto), ["001", "002"]);
    }
}
